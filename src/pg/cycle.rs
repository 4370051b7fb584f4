//! A session's cycle on its database, as one value (CONTRACT §13: a cycle's store writes and its
//! session save are durable together where they share a database).
//!
//! A [`PgSession`] (the session's key and its [`SessionCycle`]) is made with the session store
//! that takes the session's lease ([`PgSessionStore`](crate::session::postgres::PgSessionStore))
//! and shared, not looked up, with the stores opened for that session
//! ([`PgStore::of_session`](crate::store::postgres::PgStore::of_session)).
//! The runtime opens a cycle ([`open`](SessionCycle::open), through the session store) and ends
//! it: the session save commits what the cycle wrote, or the cycle's guard is dropped and
//! everything it wrote is rolled back. In between, the cycle's first write begins its
//! transaction and every later write joins it; a read the cycle makes early for a later step (the
//! memory search reads the decision context ahead) is kept here, typed, and taken once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use super::{Conn, PgDatabase, PgError, Pooled};
use crate::contract::schema::{Anchor, Decision};

/// One session of the database as the stores opened for it share it: its key (their
/// namespace) and its cycle, whose transaction their writes join while the runtime has it open.
/// Made by [`PgSessionStore`](crate::session::postgres::PgSessionStore) (its
/// [`session`](crate::session::postgres::PgSessionStore::session)), given to
/// [`StrategyResolver::resolve_for_session`](crate::store::bundle::StrategyResolver::resolve_for_session).
///
/// ```no_run
/// use planlock::pg::PgDatabase;
/// use planlock::session::postgres::PgSessionStore;
/// use planlock::store::bundle::{BundleManifest, StrategyResolver};
/// let db = PgDatabase::connect("postgres://planlock@db.internal/planlock")?;
/// let store = PgSessionStore::open(&db, "tenant-7/conversation-42")?;
/// let manifest = BundleManifest::default_shared_bundle();
/// let storage = StrategyResolver::default().resolve_for_session(&manifest, store.session())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PgSession {
    db: PgDatabase,
    key: Arc<str>,
    cycle: Arc<SessionCycle>,
}

impl PgSession {
    /// Session `key` of `db`, with a cycle of its own.
    pub(crate) fn new(db: &PgDatabase, key: &str) -> PgSession {
        PgSession { db: db.clone(), key: key.into(), cycle: Arc::default() }
    }

    /// The database.
    pub fn database(&self) -> &PgDatabase {
        &self.db
    }

    /// The session key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The session's cycle.
    pub(crate) fn cycle(&self) -> &Arc<SessionCycle> {
        &self.cycle
    }
}

/// The active decisions of a namespace and their links, as a cycle's memory search read them for
/// the cycle's decision load.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KeptDecisions {
    /// The active decisions, in the order they were stored.
    pub(crate) decisions: Vec<Decision>,
    /// Their links, in the order they were made.
    pub(crate) links: Vec<Anchor>,
}

/// One session's cycle in progress on its database (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct SessionCycle {
    /// Whether a cycle is open: its writes join its transaction.
    open: AtomicBool,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The cycle's transaction, begun by its first write.
    tx: Option<OpenTransaction>,
    /// What the cycle's memory search read for its decision load.
    reads: Option<KeptDecisions>,
}

/// A cycle's open transaction: its connection, and its place among the cycles holding one
/// ([`PgDatabase::cycle_place`]), given back after the connection (rolled back unless committed).
pub(crate) struct OpenTransaction {
    conn: Pooled,
    _place: tokio::sync::OwnedSemaphorePermit,
}

impl std::ops::Deref for OpenTransaction {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl std::ops::DerefMut for OpenTransaction {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.conn
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("in_transaction", &self.tx.is_some()).finish_non_exhaustive()
    }
}

impl SessionCycle {
    /// Opens a cycle: its writes join one transaction from now on. Anything an earlier cycle
    /// left (one whose end could not clear it) is dropped first: its transaction rolled back.
    pub(crate) async fn open(&self) {
        *self.inner.lock().await = Inner::default();
        self.open.store(true, Ordering::Release);
    }

    /// Whether a cycle is open.
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Ends the cycle (without a save, or after it): what it wrote and did not commit is rolled
    /// back (its connection goes back to the pool through a rollback), what it kept is
    /// forgotten. Should a write still hold the state (a dropped cycle's), the next
    /// [`open`](Self::open) clears it: nothing a closed cycle holds is ever committed.
    pub(crate) fn end(&self) {
        self.open.store(false, Ordering::Release);
        if let Ok(mut inner) = self.inner.try_lock() {
            *inner = Inner::default();
        }
    }

    /// The cycle's transaction, begun now if this is its first write (`BEGIN` on a connection of
    /// `db`, once the cycle has a place among those holding one); `None` when no cycle is open
    /// or the pool holds none open (a write then commits alone). Held, the transaction is this
    /// caller's until the guard drops.
    pub(crate) async fn transaction(&self, db: &PgDatabase) -> Result<Option<MappedMutexGuard<'_, Conn>>, PgError> {
        if !self.is_open() {
            return Ok(None);
        }
        let mut inner = self.inner.lock().await;
        if inner.tx.is_none() {
            let Some(place) = db.cycle_place().await else { return Ok(None) };
            let mut conn = db.connection().await?;
            // Sent with the cycle's first statements.
            conn.begin("BEGIN");
            inner.tx = Some(OpenTransaction { conn, _place: place });
            // The cycle writes now: what its reads kept belongs to before.
            inner.reads = None;
        }
        Ok(Some(MutexGuard::map(inner, |inner| &mut **inner.tx.as_mut().expect("begun above"))))
    }

    /// The cycle's transaction, if its writes began one: taken out, to be committed by the save
    /// (or dropped: rolled back). The cycle stays open until [`end`](Self::end).
    pub(crate) async fn take_transaction(&self) -> Option<OpenTransaction> {
        let mut inner = self.inner.lock().await;
        inner.reads = None;
        inner.tx.take()
    }

    /// Keeps `reads` for the open cycle's decision load (nothing kept outside a cycle).
    pub(crate) async fn keep(&self, reads: KeptDecisions) {
        if self.is_open() {
            self.inner.lock().await.reads = Some(reads);
        }
    }

    /// What the open cycle's search kept, taken out.
    pub(crate) async fn take_kept(&self) -> Option<KeptDecisions> {
        if !self.is_open() {
            return None;
        }
        self.inner.lock().await.reads.take()
    }
}
