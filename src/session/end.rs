//! [`EndOfCycle`]: how a cycle ends, as one value the runtime builds and its store applies
//! ([`SessionStore::end_cycle`](super::SessionStore::end_cycle)) — what the cycle leaves (the
//! session's new state, the record of its pause, a pause given up, or nothing), the bundle pin
//! and the plan document due with it, what became of the pause it acted on, and the cycle's history entry. PostgreSQL
//! sends it with the cycle's writes in one batch (one transaction); files apply it in one
//! crash-safe order, written once in the file store.

use super::{ApprovalEvent, BundlePinV1, CycleEntry, InterventionRecord, PlanDocument, SessionUpdate};

/// A finished cycle's history entry as it goes with the end of its cycle: the entry, and how
/// many of the session's entries to keep with it (the newest `keep`; 0 keeps nothing).
pub type HistoryEntry = (CycleEntry, usize);

/// What a cycle leaves behind.
#[derive(Debug, Clone, PartialEq)]
pub enum Leaves {
    /// A completed cycle: the session's new state (its reserved id, if any, has done its work);
    /// the record of the pause it resumed, if any, removed.
    Session(SessionUpdate),
    /// A paused cycle: the record of its pause, replacing any other; the session stays as it
    /// was.
    Pause(InterventionRecord),
    /// A pause given up (abandoned, rejected, or its resumed cycle failed): its record removed;
    /// the session stays as it was and the same cycle number runs next.
    Unpaused,
    /// A cycle that failed: the session and any pause stay as they were (only its history entry
    /// is kept).
    AsItWas,
}

/// How a cycle ends, as one value the runtime builds and its store applies
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
    /// What the cycle leaves: the session saved, its pause recorded or given up, or nothing.
    pub leaves: Leaves,
    /// The bundle pin to save with it (a new or upgraded one), so a session never exists
    /// without its pin.
    pub pin: Option<BundlePinV1>,
    /// The plan the session runs, to keep with it while the session keeps none
    /// ([`PlanDocument`]).
    pub plan: Option<PlanDocument>,
    /// What became of the pause the cycle acted on or gave up (consumed, stale, superseded,
    /// abandoned): logged once, with the pause's `paused` notice before it if that is not logged
    /// yet, before the pause's record is removed or replaced.
    pub outcome: Option<ApprovalEvent>,
    /// The cycle's history entry, kept with it.
    pub entry: Option<HistoryEntry>,
}

impl EndOfCycle {
    /// A completed cycle's end: `update` saved.
    pub fn saving(update: SessionUpdate) -> EndOfCycle {
        EndOfCycle::leaving(Leaves::Session(update))
    }

    /// A paused cycle's end: `record` saved.
    pub fn pausing(record: InterventionRecord) -> EndOfCycle {
        EndOfCycle::leaving(Leaves::Pause(record))
    }

    /// The end of a paused cycle given up: its record removed.
    ///
    /// ```
    /// use planlock::session::{EndOfCycle, Leaves};
    /// assert_eq!(EndOfCycle::unpausing().leaves, Leaves::Unpaused);
    /// ```
    pub fn unpausing() -> EndOfCycle {
        EndOfCycle::leaving(Leaves::Unpaused)
    }

    /// A failed cycle's end: nothing changes but the history.
    pub fn failing() -> EndOfCycle {
        EndOfCycle::leaving(Leaves::AsItWas)
    }

    fn leaving(leaves: Leaves) -> EndOfCycle {
        EndOfCycle { leaves, pin: None, plan: None, outcome: None, entry: None }
    }

    /// This end, saving `pin` with it.
    pub fn with_pin(self, pin: Option<BundlePinV1>) -> EndOfCycle {
        EndOfCycle { pin, ..self }
    }

    /// This end, keeping the session's `plan` with it.
    pub fn with_plan(self, plan: Option<PlanDocument>) -> EndOfCycle {
        EndOfCycle { plan, ..self }
    }

    /// This end, logging `outcome` (what became of the pause it ends) with it.
    pub fn with_outcome(self, outcome: Option<ApprovalEvent>) -> EndOfCycle {
        EndOfCycle { outcome, ..self }
    }

    /// This end, keeping `entry` in the session's history with it.
    pub fn with_entry(self, entry: Option<HistoryEntry>) -> EndOfCycle {
        EndOfCycle { entry, ..self }
    }
}
