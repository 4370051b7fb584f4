//! A cycle as a session store began it: a value the runtime keeps as a local of the cycle, hands
//! to every step (through [`StepContext::open_cycle`](crate::StepContext::open_cycle)) and gives to
//! the session save by value (docs/CONTRACT.md, "Sessions and the runtime").
//!
//! Layer 4, with the executor: the executor carries the value without knowing what a store holds
//! in it; the store that began it (and the stores opened for the same session, which join it)
//! read it back by its type.

use std::any::Any;
use std::time::Instant;

/// A cycle in progress on a session store, from
/// [`SessionStore::begin_cycle`](crate::session::SessionStore::begin_cycle): when it started, and
/// what the store holds open for it (PostgreSQL's: the cycle's transaction, begun by its first
/// write, and what its first read kept for a later step). Nothing else holds a cycle's state:
/// the stores of the session join what the value holds when a step hands it to them, the save
/// takes it by value and commits what it holds, and dropping it releases that (a transaction is
/// rolled back).
///
/// ```
/// use planlock::session::CycleGuard;
/// // A store that holds nothing for a cycle.
/// let none = CycleGuard::none();
/// assert!(none.held::<u32>().is_none());
/// // A store that holds a value of its own type, read back by that type.
/// let guard = CycleGuard::holding(7u32);
/// assert_eq!(guard.held::<u32>(), Some(&7));
/// assert_eq!(guard.into_held::<u32>(), Some(7));
/// ```
#[must_use = "a cycle's writes are rolled back when its guard is dropped"]
pub struct CycleGuard {
    started: Instant,
    held: Option<Box<dyn Any + Send + Sync>>,
    /// What the runtime attached for the cycle's steps (its account with the session's token
    /// budget), read back by its type.
    attached: Option<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for CycleGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CycleGuard")
            .field("started", &self.started)
            .field("holds", &self.held.is_some())
            .field("attached", &self.attached.is_some())
            .finish()
    }
}

/// Runs its function when dropped: what [`CycleGuard::ending`] holds.
struct OnDrop(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(end) = self.0.take() {
            end();
        }
    }
}

impl CycleGuard {
    /// The cycle of a store that holds nothing open for it, starting now.
    pub fn none() -> CycleGuard {
        CycleGuard { started: Instant::now(), held: None, attached: None }
    }

    /// A cycle starting now for which the store holds `value`: dropped with the guard, or taken
    /// back by the save ([`into_held`](Self::into_held)).
    pub fn holding<T: Any + Send + Sync>(value: T) -> CycleGuard {
        CycleGuard { started: Instant::now(), held: Some(Box::new(value)), attached: None }
    }

    /// A cycle starting now that runs `end` when it ends (saved or dropped).
    pub fn ending(end: impl FnOnce() + Send + Sync + 'static) -> CycleGuard {
        CycleGuard::holding(OnDrop(Some(Box::new(end))))
    }

    /// The cycle with `value` attached by the runtime for its steps (the cycle's
    /// [`CycleBudget`](crate::budget::CycleBudget)), read back by its type with
    /// [`attached`](Self::attached); it replaces what was attached.
    pub fn attach<T: Any + Send + Sync>(mut self, value: T) -> CycleGuard {
        self.attached = Some(Box::new(value));
        self
    }

    /// What the runtime attached, if it is a `T`.
    pub fn attached<T: Any>(&self) -> Option<&T> {
        self.attached.as_ref()?.downcast_ref()
    }

    /// When the cycle began.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// What the store holds for the cycle, if it is a `T`.
    pub fn held<T: Any>(&self) -> Option<&T> {
        self.held.as_ref()?.downcast_ref()
    }

    /// What the store holds for the cycle, taken out, if it is a `T` (otherwise it is dropped
    /// with the guard).
    pub fn into_held<T: Any>(self) -> Option<T> {
        self.held?.downcast().ok().map(|held| *held)
    }
}
