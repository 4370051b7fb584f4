//! A cycle as a session store began it: a value the runtime keeps as a local of the cycle, hands
//! to every step (through [`StepContext::open_cycle`](crate::StepContext::open_cycle)) and gives to
//! the end of the cycle by value (docs/CONTRACT.md, "Sessions and the runtime").
//!
//! Layer 4, with the executor. The value is typed: what a backend holds for a cycle is one case
//! of `backend_cases::Held` (PostgreSQL's cycle; files hold nothing); the cycle's account with its
//! token budget goes beside it (`handler::InSession`). A store reads back only its own backend's
//! case, and refuses a cycle of another session or database instead of writing outside it.

use std::time::Instant;

use super::backend_cases::{Held, OnDrop};

/// A cycle in progress on a session store, from
/// [`SessionStore::begin_cycle`](crate::session::SessionStore::begin_cycle): when it started,
/// what its backend holds for it (PostgreSQL's: the cycle's writes, kept to be sent with its
/// end, and what its first read kept for a later step). Nothing else holds a cycle's state: the
/// stores of the session join what the value holds when a step hands it to them,
/// [`SessionStore::end_cycle`](crate::session::SessionStore::end_cycle) takes it by value and
/// commits what it holds, and dropping it releases that (nothing kept is sent).
///
/// A store that holds nothing for a cycle (files, or a store of your own) begins it with
/// [`CycleGuard::none`]: its writes commit on their own, as they always do.
///
/// ```
/// use planlock::session::CycleGuard;
/// let cycle = CycleGuard::none();
/// assert!(!cycle.holds());
/// assert!(cycle.started().elapsed().as_secs() < 60);
/// ```
#[must_use = "a cycle's kept writes are dropped with its guard"]
pub struct CycleGuard {
    started: Instant,
    held: Held,
}

impl std::fmt::Debug for CycleGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleGuard").field("started", &self.started).field("holds", &self.holds()).finish()
    }
}

impl CycleGuard {
    /// The cycle of a store that holds nothing open for it, starting now.
    pub fn none() -> CycleGuard {
        CycleGuard { started: Instant::now(), held: Held::Nothing }
    }

    /// A cycle starting now that runs `end` when it ends (saved or dropped): for a store of your
    /// own that holds nothing open for a cycle but must know when it is over.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use std::sync::Arc;
    /// use planlock::session::CycleGuard;
    /// let ended = Arc::new(AtomicBool::new(false));
    /// let flag = ended.clone();
    /// let cycle = CycleGuard::ending(move || flag.store(true, Ordering::SeqCst));
    /// drop(cycle);
    /// assert!(ended.load(Ordering::SeqCst));
    /// ```
    pub fn ending(end: impl FnOnce() + Send + Sync + 'static) -> CycleGuard {
        CycleGuard { started: Instant::now(), held: Held::Ending(OnDrop(Some(Box::new(end)))) }
    }

    /// A cycle starting now, its backend holding `held`.
    pub(crate) fn holding(held: Held) -> CycleGuard {
        CycleGuard { started: Instant::now(), held }
    }

    /// What its backend holds for the cycle.
    pub(crate) fn held(&self) -> &Held {
        &self.held
    }

    /// What its backend holds for the cycle, taken out (the cycle ends with it).
    pub(crate) fn into_held(self) -> Held {
        self.held
    }

    /// When the cycle began.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Whether its backend holds anything for the cycle (writes kept for its end): `false` for a
    /// store whose writes commit on their own (a store of another backend refuses a cycle that
    /// holds something).
    pub fn holds(&self) -> bool {
        self.held.holds()
    }
}
