//! [`EndOfCycle`]: how a completed or paused cycle ends, as one value the runtime builds and its
//! store applies ([`SessionStore::end_cycle`](super::SessionStore::end_cycle)) — the session's
//! new state or the record of its pause, the bundle pin due with it, and the cycle's history
//! entry. PostgreSQL sends it with the cycle's writes in one batch (one transaction); files apply
//! it in one crash-safe order, written once in the file store.

use super::{BundlePinV1, CycleEntry, InterventionRecord, SessionUpdate};

/// A finished cycle's history entry as it goes with the end of its cycle: the entry, and how
/// many of the session's entries to keep with it (see
/// [`SessionStore::record_cycle`](super::SessionStore::record_cycle)).
pub type HistoryEntry = (CycleEntry, usize);

/// What a cycle leaves behind: the session saved, or its pause recorded.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaves {
    /// A completed cycle: the session's new state (its reserved id, if any, has done its work).
    Session(SessionUpdate),
    /// A paused cycle: the record of its pause, replacing any other; the session stays as it
    /// was.
    Pause(InterventionRecord),
}

/// How a completed or paused cycle ends, as one value the runtime builds and its store applies
/// ([`SessionStore::end_cycle`](super::SessionStore::end_cycle)): PostgreSQL sends it with the
/// cycle's writes in one batch, files apply it in one crash-safe order.
///
/// ```
/// use planlock::session::{EndOfCycle, FileSessionStore, SessionStore, SessionUpdate};
/// let root = tempfile::tempdir()?;
/// let store = FileSessionStore::open(root.path())?;
/// let update = SessionUpdate::new(uuid::Uuid::new_v4(), planlock::hash::Digest::of(b"plan"), 1);
/// let cycle = planlock::block_on(store.begin_cycle())?;
/// let saved = planlock::block_on(store.end_cycle(EndOfCycle::saving(update), cycle))?;
/// assert_eq!(saved.map(|s| s.cycle), Some(1), "a completed cycle's end gives back what it saved");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use = "an end of a cycle does nothing until a store applies it"]
pub struct EndOfCycle {
    /// The session saved, or the pause recorded.
    pub leaves: Leaves,
    /// The bundle pin to save with it (a new or upgraded one), so a session never exists
    /// without its pin.
    pub pin: Option<BundlePinV1>,
    /// The cycle's history entry, kept with it.
    pub entry: Option<HistoryEntry>,
}

impl EndOfCycle {
    /// A completed cycle's end: `update` saved.
    pub fn saving(update: SessionUpdate) -> EndOfCycle {
        EndOfCycle { leaves: Leaves::Session(update), pin: None, entry: None }
    }

    /// A paused cycle's end: `record` saved.
    pub fn pausing(record: InterventionRecord) -> EndOfCycle {
        EndOfCycle { leaves: Leaves::Pause(record), pin: None, entry: None }
    }

    /// This end, saving `pin` with it.
    pub fn with_pin(self, pin: Option<BundlePinV1>) -> EndOfCycle {
        EndOfCycle { pin, ..self }
    }

    /// This end, keeping `entry` in the session's history with it.
    pub fn with_entry(self, entry: Option<HistoryEntry>) -> EndOfCycle {
        EndOfCycle { entry, ..self }
    }
}
