//! A session's cycle on its database (CONTRACT §13: a cycle's store writes and its session save
//! are durable together where they share a database).
//!
//! A [`PgSession`] is a session of the database: its key, and the database. The session store
//! ([`PgSessionStore`](crate::session::postgres::PgSessionStore)) begins each cycle as a
//! [`PgCycle`] inside the cycle's [`CycleGuard`](crate::session::CycleGuard), which the runtime
//! keeps as a local of the cycle and hands to its steps; a
//! [`PgStore`](crate::store::postgres::PgStore) of the same session on the same pool joins the
//! cycle it is handed. The cycle's first write begins its transaction
//! and every later write joins it; a read the cycle makes early for a later step (the memory
//! search reads the decision context ahead) is kept in it, typed, and taken once. The session
//! save takes the guard by value and commits the transaction; dropped, the guard rolls it back.
//! Nothing else holds a cycle: no slot, no open flag.

use std::sync::Arc;

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use super::{Conn, PgDatabase, PgError, Pooled};
use crate::contract::schema::{Anchor, Decision};

/// One session of the database: its key (the namespace of the stores opened for it) and the
/// database. Made by [`PgSessionStore`](crate::session::postgres::PgSessionStore) (its
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
}

impl PgSession {
    /// Session `key` of `db`.
    pub(crate) fn new(db: &PgDatabase, key: &str) -> PgSession {
        PgSession { db: db.clone(), key: key.into() }
    }

    /// The database.
    pub fn database(&self) -> &PgDatabase {
        &self.db
    }

    /// The session key.
    pub fn key(&self) -> &str {
        &self.key
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

/// One session's cycle in progress on its database, held in the cycle's
/// [`CycleGuard`](crate::session::CycleGuard) (see the module docs).
#[derive(Debug)]
pub(crate) struct PgCycle {
    session: PgSession,
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

impl PgCycle {
    /// A cycle of `session`, holding nothing yet.
    pub(crate) fn new(session: &PgSession) -> PgCycle {
        PgCycle { session: session.clone(), inner: Mutex::default() }
    }

    /// Whether this is a cycle of session `key` on `db`'s pool: what a store of that session
    /// joins. A cycle of another session or pool is not joined (the store's writes then commit
    /// alone).
    pub(crate) fn is_of(&self, db: &PgDatabase, key: &str) -> bool {
        &*self.session.key == key && self.session.db.same_pool(db)
    }

    /// The cycle's transaction, begun now if this is its first write (`BEGIN` on a connection of
    /// the pool, once the cycle has a place among those holding one); `None` when the pool holds
    /// none open (a write then commits alone). Held, the transaction is this caller's until the
    /// guard drops.
    pub(crate) async fn transaction(&self) -> Result<Option<MappedMutexGuard<'_, Conn>>, PgError> {
        let mut inner = self.inner.lock().await;
        if inner.tx.is_none() {
            let db = &self.session.db;
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

    /// The cycle's transaction, if its writes began one: what the save commits (or drops:
    /// rolled back).
    pub(crate) fn into_transaction(self) -> Option<OpenTransaction> {
        self.inner.into_inner().tx
    }

    /// Keeps `reads` for the cycle's decision load.
    pub(crate) async fn keep(&self, reads: KeptDecisions) {
        self.inner.lock().await.reads = Some(reads);
    }

    /// What the cycle's search kept, taken out.
    pub(crate) async fn take_kept(&self) -> Option<KeptDecisions> {
        self.inner.lock().await.reads.take()
    }
}
