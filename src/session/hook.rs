//! [`BeforeSave`]: a session store wrapped so that a check runs before each session save.

use std::fmt;

use super::{CycleGuard, EndOfCycle, Leaves, SessionError, SessionState, SessionStore, SessionUpdate, StoreFuture};

/// `inner`, with `check` run before each session save: an `Err` from it is the save's error and
/// nothing is written. Every other call goes straight to `inner`. Wrapping rather than
/// re-implementing keeps the store's atomicity and locking, so a test or a demo can fail or
/// count saves and still save exactly as the real store does.
///
/// ```
/// use planlock::block_on as wait;
/// use planlock::session::{BeforeSave, EndOfCycle, FileSessionStore, SessionError, SessionStore, SessionUpdate};
///
/// let dir = tempfile::tempdir()?;
/// let store = BeforeSave::new(FileSessionStore::open(dir.path())?, |_: &SessionUpdate| {
///     Err(SessionError::Io { file: "session_state.json".into(), op: "write", source: std::io::Error::other("disk full") })
/// });
/// let update = SessionUpdate {
///     session_id: uuid::Uuid::new_v4(),
///     memory_ref: None,
///     repo_scan_version: None,
///     last_execution_plan_hash: planlock::hash::Digest::of(b"plan"),
///     hash_parts: None,
///     cycle: 1,
/// };
/// assert!(wait(store.end_cycle(EndOfCycle::saving(update), wait(store.begin_cycle())?)).is_err());
/// assert!(wait(store.records().load())?.is_none(), "a refused save writes nothing");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BeforeSave<S, F> {
    inner: S,
    check: F,
}

impl<S, F> BeforeSave<S, F>
where
    S: SessionStore,
    F: Fn(&SessionUpdate) -> Result<(), SessionError> + Send + Sync,
{
    /// Wraps `inner` so that `check` runs before each of its session saves.
    pub fn new(inner: S, check: F) -> Self {
        BeforeSave { inner, check }
    }

    /// The wrapped store.
    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: fmt::Debug, F> fmt::Debug for BeforeSave<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BeforeSave").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl<S, F> SessionStore for BeforeSave<S, F>
where
    S: SessionStore,
    F: Fn(&SessionUpdate) -> Result<(), SessionError> + Send + Sync,
{
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
        if let Leaves::Session(update) = &end.leaves
            && let Err(e) = (self.check)(update)
        {
            // Refused: the cycle's guard is dropped, so what it wrote is rolled back.
            return Box::pin(std::future::ready(Err(e)));
        }
        self.inner.end_cycle(end, cycle)
    }
    crate::forward_session_store!(this => this.inner;
        claim, begin_cycle, save_reserved, records);
}
