//! [`Call`]: what every operation of the storage ports is given besides its own arguments — the
//! step's idempotency key, its deadline, the cycle it runs in, and where its warnings go — so
//! that a port has one method per operation and a new piece of context is one field here, not
//! a new method on every port, wrapper and backend.
//!
//! Layer 5, with the stores.

use std::sync::Mutex;
use std::time::Instant;

use super::StoreError;
use crate::exec::handler::{CycleGuard, MAX_STEP_WARNINGS, StepContext};
use crate::hash::IdempotencyKey;

/// The context of one storage operation: the step's idempotency key, its deadline, the cycle it
/// runs in, and where its warnings go. Every method of the storage ports takes one, so a port has
/// one method per operation.
///
/// The storage handlers make it from their step ([`Call::of_step`]); a program that calls a
/// store itself starts from [`Call::new`] and adds what it has.
///
/// ```
/// use planlock::store::{Call, MemoryRepositoryPort, NewMemory, memory::InMemoryStore};
/// use planlock::IdempotencyKey;
/// let store = InMemoryStore::new();
/// // A write needs its idempotency key: the same key again stores nothing new.
/// let key = IdempotencyKey::derive(uuid::Uuid::nil(), &planlock::Digest::of(b"plan"), 1, "remember");
/// let memory = NewMemory { session_ref: "s", summary: "rotate the signing key", keywords: &[] };
/// let first = planlock::block_on(store.put(&Call::new().keyed(key), memory))?;
/// assert_eq!(planlock::block_on(store.put(&Call::new().keyed(key), memory))?, first);
/// // A read needs nothing; what it passed over is a warning of the call.
/// let call = Call::new();
/// assert_eq!(planlock::block_on(store.search(&call, "signing", 5))?.len(), 1);
/// assert!(call.warnings().is_empty());
/// # Ok::<(), planlock::store::StoreError>(())
/// ```
#[derive(Debug)]
pub struct Call<'a> {
    key: Option<IdempotencyKey>,
    deadline: Option<Instant>,
    cycle: Option<&'a CycleGuard>,
    warnings: Warnings<'a>,
}

/// Where a call's warnings go.
#[derive(Debug)]
enum Warnings<'a> {
    /// To the step that made the call, as its handler's warnings.
    Step(StepContext<'a>),
    /// Kept in the call, for its caller to read ([`Call::warnings`]).
    Kept(Mutex<Vec<String>>),
}

impl Default for Call<'_> {
    fn default() -> Self {
        Call::new()
    }
}

impl<'a> Call<'a> {
    /// A call with no key (so no write), no deadline, no cycle; its warnings kept in it.
    pub fn new() -> Call<'a> {
        Call { key: None, deadline: None, cycle: None, warnings: Warnings::Kept(Mutex::default()) }
    }

    /// The call of the step `cx`: its idempotency key, its deadline, its cycle as the session
    /// store began it, and its warnings, which go on the step's record.
    pub fn of_step(cx: &StepContext<'a>) -> Call<'a> {
        Call {
            key: Some(cx.idempotency_key()),
            deadline: cx.deadline(),
            cycle: cx.open_cycle(),
            warnings: Warnings::Step(*cx),
        }
    }

    /// This call under idempotency key `key`: a write made twice under one key happens once.
    pub fn keyed(mut self, key: IdempotencyKey) -> Call<'a> {
        self.key = Some(key);
        self
    }

    /// This call, stopped when `deadline` passes.
    pub fn until(mut self, deadline: Instant) -> Call<'a> {
        self.deadline = Some(deadline);
        self
    }

    /// This call in `cycle`: a store of the session that began it joins what it holds.
    pub fn in_cycle(mut self, cycle: &'a CycleGuard) -> Call<'a> {
        self.cycle = Some(cycle);
        self
    }

    /// The idempotency key a write is made under; a write without one is refused (nothing
    /// written).
    pub fn key(&self) -> Result<&IdempotencyKey, StoreError> {
        self.key.as_ref().ok_or_else(|| {
            StoreError::Refused(
                "a storage write needs its step's idempotency key; make its call with Call::of_step or Call::keyed"
                    .into(),
            )
        })
    }

    /// When the call must be done by: a store whose queries can be stopped stops them then (the
    /// SQLite stores with a progress handler, PostgreSQL's with `statement_timeout`), one that
    /// waits for an embedder waits no longer. `None`: no limit.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The cycle the call is made in, as its session store began it.
    pub fn cycle(&self) -> Option<&'a CycleGuard> {
        self.cycle
    }

    /// The id of the step that made the call, if a step did: a store that sends the write later
    /// names it in the write's failure. `None` for a program's own call.
    ///
    /// ```
    /// use planlock::store::Call;
    /// assert_eq!(Call::new().step_id(), None);
    /// ```
    pub fn step_id(&self) -> Option<&'a str> {
        match &self.warnings {
            Warnings::Step(cx) => Some(cx.step_id()),
            Warnings::Kept(_) => None,
        }
    }

    /// The idempotency keys of the call's step and of the steps after it (for a program's own
    /// call, its key): what a store that sends a cycle's writes late (PostgreSQL's, with the end
    /// of the cycle) reads ahead, to know which of them were made already.
    ///
    /// ```
    /// use planlock::store::Call;
    /// assert!(Call::new().keys_ahead().is_empty(), "a call without a key has none ahead");
    /// ```
    pub fn keys_ahead(&self) -> Vec<String> {
        match &self.warnings {
            Warnings::Step(cx) => cx.keys_from_here().iter().map(ToString::to_string).collect(),
            Warnings::Kept(_) => self.key.iter().map(ToString::to_string).collect(),
        }
    }

    /// Records a warning: on the step's record for a step's call (at most
    /// [`MAX_STEP_WARNINGS`] a step), else in the call.
    pub fn warn(&self, message: impl Into<String>) {
        match &self.warnings {
            Warnings::Step(cx) => cx.warn(message),
            Warnings::Kept(kept) => {
                let mut kept = kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if kept.len() < MAX_STEP_WARNINGS {
                    kept.push(message.into());
                }
            }
        }
    }

    /// One warning that a read passed over `count` stored entries (`what`) it could not read —
    /// a row deleted under its vector, a damaged or degenerate vector — and went on without
    /// them: one bad row never fails a read. Nothing when `count` is 0.
    pub fn passed_over(&self, count: usize, what: &str) {
        if count > 0 {
            self.warn(format!(
                "{count} stored {what} could not be read (a deleted row, a damaged or degenerate vector) and were left out"
            ));
        }
    }

    /// The warnings kept in the call (none for a step's call: its warnings are the step's).
    pub fn warnings(&self) -> Vec<String> {
        match &self.warnings {
            Warnings::Step(_) => Vec::new(),
            Warnings::Kept(kept) => kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone(),
        }
    }
}
