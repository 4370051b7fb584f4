//! A session's cycle on its database (CONTRACT §13: a cycle's store writes and its session save
//! are durable together where they share a database).
//!
//! A [`PgSession`] is a session of the database: its key, and the database. The session store
//! ([`PgSessionStore`](crate::session::postgres::PgSessionStore)) begins each cycle as a
//! [`PgCycle`] inside the cycle's [`CycleGuard`](crate::session::CycleGuard), which the runtime
//! keeps as a local of the cycle and hands to its steps; a
//! [`PgStore`](crate::store::postgres::PgStore) of the same session on the same pool joins the
//! cycle it is handed. The cycle's store writes are kept in it ([`super::writes`]) and sent by
//! the end of the cycle, with its compare-and-set and COMMIT, in one round trip. A read the
//! cycle makes early for a later step (the memory search reads the decision context ahead, and
//! which of the cycle's keys are written) is kept in it, typed. The end of the cycle takes the
//! guard by value; dropped, the guard sends nothing.
//! Nothing else holds a cycle: no slot, no open flag.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::Mutex;

use super::PgDatabase;
use super::writes::PendingWrite;
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
    /// Their stored vectors, read with them by a store that ranks by meaning.
    pub(crate) vectors: Option<KeptVectors>,
}

/// The active decisions' stored vectors, and the namespace's embedder, as a cycle's memory
/// search read them for a load that orders by meaning.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KeptVectors {
    /// The namespace's embedder: model and dimension (none before its first vector).
    pub(crate) embedder: Option<(String, i32)>,
    /// Each vector by its decision's id (`None`: not of the embedder's length).
    pub(crate) stored: Vec<(String, Option<Vec<u8>>)>,
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
    /// What the cycle's memory search read for its decision load.
    reads: Option<KeptDecisions>,
    /// The idempotency keys whose writes the cycle knows of: what the write under each returned
    /// (read from the database, or kept for the save), `None` for one not written.
    known: HashMap<String, Option<String>>,
    /// The writes kept for the session save, in the order they were made.
    pending: Vec<PendingWrite>,
    /// The cycle's token reservation, made at its start and sent with its first read.
    reservation: Option<Reservation>,
}

/// The token reservation a cycle makes at its start (CONTRACT §20), sent with the cycle's first
/// read (its memory search's batch), or alone when its first model call comes first.
#[derive(Debug)]
pub(crate) struct Reservation {
    /// The reservation's id, the session's key, the worker holding its lease, the tokens.
    pub(crate) id: uuid::Uuid,
    pub(crate) key: String,
    pub(crate) owner: uuid::Uuid,
    pub(crate) tokens: i64,
    /// What the database answered: the refusal's rows (none: reserved). `None` until sent, or
    /// after a batch that failed (nothing reserved then: it rolled back).
    pub(crate) answer: Option<Vec<tokio_postgres::Row>>,
}

impl Reservation {
    /// The statement: a row naming the budget that refuses, or none.
    pub(crate) const SQL: &'static str =
        "SELECT prefix, tokens, left_tokens, reserved, resets_at FROM planlock_budget_reserve($1, $2, $3, $4)";

    /// The statement with its parameters.
    pub(crate) fn query(&self) -> super::Query<'_> {
        use tokio_postgres::types::Type;
        super::Query::typed(
            Self::SQL,
            &[
                (&self.id as _, Type::UUID),
                (&self.key as _, Type::TEXT),
                (&self.owner as _, Type::UUID),
                (&self.tokens as _, Type::INT8),
            ],
        )
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("pending", &self.pending).finish_non_exhaustive()
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

    /// The writes kept for the end of the cycle: what it sends and commits (or drops, and
    /// nothing is sent).
    pub(crate) fn into_pending(self) -> Vec<PendingWrite> {
        self.inner.into_inner().pending
    }

    /// Whether the cycle knows if the write under `key` was made.
    pub(crate) async fn knows(&self, key: &str) -> bool {
        self.inner.lock().await.known.contains_key(key)
    }

    /// Learns which of `keys` are written: `written` holds those that are, with what each
    /// returned.
    pub(crate) async fn learn(&self, keys: &[String], written: impl IntoIterator<Item = (String, String)>) {
        let mut inner = self.inner.lock().await;
        for key in keys {
            inner.known.entry(key.clone()).or_insert(None);
        }
        for (key, result) in written {
            inner.known.insert(key, Some(result));
        }
    }

    /// Keeps `write` under `key` for the save, and gives the result the step goes on with:
    /// `expected`, or what the key's write returned if it was made before (then nothing is
    /// kept). The caller has made the cycle know the key ([`learn`](Self::learn)).
    pub(crate) async fn defer(&self, key: &str, expected: String, write: PendingWrite) -> String {
        let mut inner = self.inner.lock().await;
        if let Some(Some(done)) = inner.known.get(key) {
            return done.clone();
        }
        inner.known.insert(key.to_owned(), Some(expected.clone()));
        inner.pending.push(write);
        expected
    }

    /// Keeps `write`, which has no idempotency key (it is idempotent itself: the settlement of
    /// the cycle's token reservations), for the save: sent last, after the cycle's store writes.
    pub(crate) async fn keep_write(&self, write: PendingWrite) {
        self.inner.lock().await.pending.push(write);
    }

    /// Keeps the cycle's token reservation, to go with its first read.
    pub(crate) async fn reserve_ahead(&self, reservation: Reservation) {
        self.inner.lock().await.reservation = Some(reservation);
    }

    /// The cycle's token reservation, taken out to read its answer.
    pub(crate) async fn take_reservation(&self) -> Option<Reservation> {
        self.inner.lock().await.reservation.take()
    }

    /// The cycle's token reservation if it is not sent yet, taken out to send with a read: give
    /// it back with its answer ([`answered`](Self::answered)) whatever the read's fate.
    pub(crate) async fn reservation_to_send(&self) -> Option<Reservation> {
        let mut inner = self.inner.lock().await;
        match &inner.reservation {
            Some(r) if r.answer.is_none() => inner.reservation.take(),
            _ => None,
        }
    }

    /// The reservation taken out to send, back with what the database answered (`None`: its
    /// batch failed, and nothing was reserved).
    pub(crate) async fn answered(&self, mut reservation: Reservation, answer: Option<Vec<tokio_postgres::Row>>) {
        reservation.answer = answer;
        self.inner.lock().await.reservation = Some(reservation);
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
