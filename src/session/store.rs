//! [`SessionStore`]: where a session lives, as the one runtime that owns it uses it. Every call is
//! a future (the file store's finish at once; PostgreSQL's wait on the server, holding no
//! thread), and a cycle is a value the runtime begins on the store ([`SessionStore::begin_cycle`]),
//! hands to the cycle's steps, and ends: with [`SessionStore::end_cycle`], which takes it by value
//! with the [`EndOfCycle`] and makes the cycle's writes durable with it where they share a
//! database, or by dropping it, which rolls them back.

use std::future::Future;
use std::pin::Pin;

#[doc(no_inline)]
pub use crate::exec::handler::CycleGuard;

use super::{EndOfCycle, OpenError, ReservedSession, SessionError, SessionRecords, SessionState};

/// What a [`SessionStore`] call returns: a future of its result.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, SessionError>> + Send + 'a>>;

/// A future ready at once with `result`: the calls of a store that does its work in place (a
/// few KiB of local I/O and its fsyncs, as the file store's).
pub(crate) fn ready<'a, T: Send + 'a>(result: Result<T, SessionError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(result))
}

/// Where sessions live: the session state and the record of a paused cycle. The runtime
/// computes plan hashes; a store only stores and compares. A [`Runtime`](crate::runtime::Runtime)
/// takes its store by value and [claims](Self::claim) it at boot, so no one else can write to it
/// while it runs, even through a wrapper that forwards to a shared store.
pub trait SessionStore: Send + Sync {
    /// Claims the session for the one runtime that will use it. Granted once per opened store: a
    /// second claim (a second runtime booting on the same store, directly or through a wrapper
    /// that forwards every call) is refused with `session-in-use`. A store that wraps another
    /// forwards this call, so exclusive use cannot be lost by wrapping.
    fn claim(&self) -> Result<(), OpenError>;
    /// Begins a cycle: the value the runtime keeps while the cycle runs and hands to its steps.
    /// A store whose stores' writes can be durable with the end of the cycle (PostgreSQL's)
    /// keeps those writes in it until the value is given to [`end_cycle`](Self::end_cycle)
    /// (sent with it), or dropped (never sent). By default, nothing is held.
    fn begin_cycle(&self) -> StoreFuture<'_, CycleGuard> {
        Box::pin(std::future::ready(Ok(CycleGuard::none())))
    }
    /// Ends a cycle with `end`, atomically and durably where the store can (one transaction,
    /// with what `cycle` wrote) and otherwise in one crash-safe order: its bundle pin first (a
    /// session never exists without its pin); then the session's state (filling `updatedAt`;
    /// the reserved id removed); the pause's outcome, logged once (its `paused` notice first,
    /// if not logged yet) before the pause's record is replaced ([`Leaves::Pause`]) or removed
    /// ([`Leaves::Session`], [`Leaves::Unpaused`]); and its history entry, right after the
    /// state or else last. Returns the state saved, or `None` when the session was not saved.
    /// A `cycle` another store began is refused ([`SessionError::ForeignCycle`]), never written
    /// alone.
    ///
    /// [`Leaves::Pause`]: super::Leaves::Pause
    /// [`Leaves::Session`]: super::Leaves::Session
    /// [`Leaves::Unpaused`]: super::Leaves::Unpaused
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>>;
    /// Reserves the id of a new session before its first cycle runs, atomically and durably, so
    /// that a crashed first cycle runs again under the same id (and so the same idempotency
    /// keys). Removed by the first session save.
    fn save_reserved<'a>(&'a self, reserved: &'a ReservedSession) -> StoreFuture<'a, ()>;
    /// The session's records as any process reads and decides on them ([`SessionRecords`]):
    /// the saved session, the pause's record, the reserved id and the pin are read there (by
    /// the runtime at boot as by any reader), and the runtime reads a person's decision and
    /// writes the approval log through it.
    fn records(&self) -> &dyn SessionRecords;
}

/// Writes the [`SessionStore`] methods a wrapper store does not
/// change, each only forwarding to the inner store (`$inner`, an expression of `$this`, the
/// wrapper): a wrapper writes the methods it changes and lists the others, and a method added to
/// the trait is forwarded here once. Forwarding [`claim`](crate::session::SessionStore::claim)
/// keeps the inner store's exclusive use.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use planlock::session::{CycleGuard, EndOfCycle, FileSessionStore, SessionState, SessionStore, StoreFuture};
///
/// /// Counts the cycles the store it wraps ended.
/// struct CountSaves<S> { inner: S, saves: AtomicUsize }
///
/// impl<S: SessionStore> SessionStore for CountSaves<S> {
///     fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
///         self.saves.fetch_add(1, Ordering::Relaxed);
///         self.inner.end_cycle(end, cycle)
///     }
///     planlock::forward_session_store!(this => this.inner;
///         claim, begin_cycle, save_reserved, records);
/// }
///
/// let dir = tempfile::tempdir()?;
/// let store = CountSaves { inner: FileSessionStore::open(dir.path())?, saves: AtomicUsize::new(0) };
/// assert!(planlock::block_on(store.records().load())?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[macro_export]
macro_rules! forward_session_store {
    ($this:ident => $inner:expr; $($method:ident),* $(,)?) => {
        $($crate::forward_session_store!(@ $method $this $inner);)*
    };
    (@ claim $this:ident $inner:expr) => {
        fn claim(&self) -> Result<(), $crate::session::OpenError> { let $this = self; $inner.claim() }
    };
    (@ begin_cycle $this:ident $inner:expr) => {
        fn begin_cycle(&self) -> $crate::session::StoreFuture<'_, $crate::session::CycleGuard> { let $this = self; $inner.begin_cycle() }
    };
    (@ save_reserved $this:ident $inner:expr) => {
        fn save_reserved<'a>(&'a self, reserved: &'a $crate::session::ReservedSession) -> $crate::session::StoreFuture<'a, ()> { let $this = self; $inner.save_reserved(reserved) }
    };
    (@ end_cycle $this:ident $inner:expr) => {
        fn end_cycle(&self, end: $crate::session::EndOfCycle, cycle: $crate::session::CycleGuard) -> $crate::session::StoreFuture<'_, Option<$crate::session::SessionState>> { let $this = self; $inner.end_cycle(end, cycle) }
    };
    (@ records $this:ident $inner:expr) => {
        fn records(&self) -> &dyn $crate::session::SessionRecords { let $this = self; $inner.records() }
    };
}

/// A boxed store is a store, so one program can boot a runtime on whichever store a
/// configuration names (`Box<dyn SessionStore>`, as an opened session of a
/// [`Backend`](crate::backend::Backend) gives).
impl<S: SessionStore + ?Sized> SessionStore for Box<S> {
    crate::forward_session_store!(this => (**this);
        claim, begin_cycle, end_cycle, save_reserved, records);
}
