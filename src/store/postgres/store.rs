//! The [`PgStore`] itself: its namespace, its pool, how it joins a cycle and how a read begins.

use std::sync::Arc;

use super::meaning;
use crate::embed::Embedder;
use crate::pg::cycle::PgCycle;
use crate::pg::writes::PendingWrite;
use crate::pg::{Conn, PgDatabase, Pooled, Then, reason};
use crate::store::{Call, StoreError};

/// Memories and decisions of one namespace in a shared PostgreSQL database. Clones share the
/// pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: PgDatabase,
    pub(super) namespace: String,
    /// With an embedder: ranks by meaning too.
    pub(super) meaning: Option<Arc<meaning::Meaning>>,
}

/// The id of the provider that ranks by meaning on PostgreSQL: memories and decisions
/// (`PgStore::by_meaning`).
pub const SEMANTIC_PROVIDER: &str = "postgres-semantic";

/// The id of the provider that ranks by meaning with the pgvector tier's HNSW index
/// (`PgStore::by_meaning(…).pgvector(…)`), for databases where it is installed.
pub const PGVECTOR_PROVIDER: &str = "postgres-pgvector";

impl PgStore {
    /// The store of `namespace` (a session key, a tenant: whatever the memories belong to). A
    /// call in a cycle of the session whose key is `namespace`, begun on `db`'s pool, joins the
    /// cycle; any other write commits alone.
    pub fn new(db: &PgDatabase, namespace: impl Into<String>) -> PgStore {
        PgStore { db: db.clone(), namespace: namespace.into(), meaning: None }
    }

    /// The store ranking by meaning and words together (the provider `postgres-semantic`):
    /// each memory and decision is written with its vector from `embedder`, to which the
    /// namespace is then pinned; a search ranks the namespace's newest [`MAX_EXACT_VECTORS`](super::MAX_EXACT_VECTORS)
    /// vectors exactly and fuses that ranking with the words'.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// use planlock::embed::DemoEmbedder;
    /// use planlock::pg::PgDatabase;
    /// use planlock::store::postgres::PgStore;
    /// let db = PgDatabase::connect("postgres://planlock@localhost/planlock")?;
    /// let store = PgStore::new(&db, "session-1").by_meaning(Arc::new(DemoEmbedder::new()));
    /// # Ok::<(), planlock::pg::PgError>(())
    /// ```
    pub fn by_meaning(self, embedder: Arc<dyn Embedder>) -> PgStore {
        PgStore { meaning: Some(Arc::new(meaning::Meaning::new(embedder))), ..self }
    }

    /// Ranks by meaning with the pgvector tier's HNSW index instead of exactly (the provider
    /// `postgres-pgvector`; see [`pgvector`](super::pgvector)): `ef_search` candidates per scan
    /// (default [`DEFAULT_EF_SEARCH`](crate::store::postgres::pgvector::DEFAULT_EF_SEARCH)), iterative scans
    /// in strict order. The database needs the tier ([`PgDatabase::install_pgvector`]); a search
    /// without it fails, saying so. No effect on a store that does not rank by meaning.
    pub fn pgvector(self, ef_search: u32) -> PgStore {
        let meaning = self.meaning.as_ref().map(|m| Arc::new(m.with_hnsw(ef_search)));
        PgStore { meaning, ..self }
    }

    /// Ranks at most the newest `vectors` of the namespace by meaning (default
    /// [`MAX_EXACT_VECTORS`](super::MAX_EXACT_VECTORS)): what the store holds in memory is at most `vectors` × the
    /// embedder's dimension × 4 bytes. Older memories are found by their words only, and a
    /// search says so on its call. No effect on a store that does not rank by meaning.
    pub fn max_exact_vectors(self, vectors: usize) -> PgStore {
        let meaning = self.meaning.as_ref().map(|m| Arc::new(m.with_cap(vectors)));
        PgStore { meaning, ..self }
    }

    /// The cycle of this store's session that `call` is made in, if it is; a cycle of another
    /// session or database is refused (its writes would not commit with it).
    pub(super) fn cycle<'a>(&self, call: &Call<'a>) -> Result<Option<&'a PgCycle>, StoreError> {
        let Some(cycle) = call.cycle() else { return Ok(None) };
        cycle.held().pg_of(&self.db, &self.namespace).map_err(|_| {
            StoreError::Backend(format!(
                "the memory store of namespace {} was handed another session's cycle; it reads and writes only in its own session's cycles",
                crate::text::printable(&self.namespace)
            ))
        })
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A connection of the pool, once one is free.
    pub(super) async fn connection(&self) -> Result<Pooled, StoreError> {
        self.db.connection().await.map_err(|e| StoreError::Backend(e.to_string()))
    }

    /// Runs `f` in a transaction of its own, begun as `begin` says and committed when `f`
    /// returns `Ok` (dropped, the connection goes back through a rollback).
    pub(super) async fn alone<T>(
        &self,
        doing: &'static str,
        begin: Begin,
        f: impl AsyncFnOnce(&mut Conn, &str) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.connection().await?;
        // Sent with the first statements; the commit goes with the last where `f` sends it.
        conn.begin(&begin.sql());
        let out = f(&mut conn, &self.namespace).await?;
        conn.commit().await.map_err(backend(doing))?;
        Ok(out)
    }

    /// Makes `write` under the call's key. In a cycle of the store's session it is kept for the
    /// session save, which sends it ([`crate::pg::writes`]), and the step goes on with its result,
    /// or with what an earlier write under the key returned (the cycle reads which of its keys
    /// are written once, if its search did not). Outside such a cycle it is sent alone, with
    /// its `BEGIN` and `COMMIT`: one round trip.
    pub(super) async fn write(&self, call: &Call<'_>, write: KeyedWrite) -> Result<String, StoreError> {
        let key = call.key()?.to_string();
        if let Some(cycle) = self.cycle(call)? {
            if !cycle.knows(&key).await {
                let mut keys = call.keys_ahead();
                if !keys.contains(&key) {
                    keys.push(key.clone());
                }
                let mut conn = self.connection().await?;
                let rows = conn.query(WRITTEN, &[&self.namespace, &keys]).await;
                let rows = rows.map_err(backend("reading which of the cycle's writes were made"))?;
                cycle.learn(&keys, rows.iter().map(|row| (row.get(0), row.get(1)))).await;
            }
            let expected = write.expected.clone();
            let pending = write.pending(&self.namespace, &key, call.step_id(), Some(expected.clone()));
            return Ok(cycle.defer(&key, expected, pending).await);
        }
        let doing = write.doing;
        let pending = write.pending(&self.namespace, &key, call.step_id(), None);
        let mut conn = self.connection().await?;
        conn.begin("BEGIN");
        let rows = conn.pipeline(&[pending.query()], Then::Commit).await;
        let kinds = crate::pg::writes::Kinds {
            conflict: StoreError::Conflict,
            not_found: StoreError::NotFound,
            backend: StoreError::Backend,
        };
        let rows = rows.map_err(|e| crate::pg::writes::failure_of(&e, doing, kinds))?;
        rows.first()
            .and_then(|rows| rows.first())
            .and_then(|row| row.get::<_, Option<String>>(0))
            .ok_or_else(|| StoreError::Backend(format!("{doing}: its key was taken, its row is gone")))
    }
}

/// Which of a namespace's keys (`$2`) are written, and what each write returned.
pub(super) const WRITTEN: &str = "SELECT idem_key, result FROM planlock_writes WHERE planlock_mine(tenant) AND namespace = $1 AND idem_key = ANY($2)";

/// One keyed write: a call of its write function (schema 8) with the write's own values, between
/// the namespace and key it is made under and the result a cycle goes on with.
pub(super) struct KeyedWrite {
    pub(super) doing: &'static str,
    /// `SELECT planlock_…($1 namespace, $2 key, …, $n expected)`.
    pub(super) sql: &'static str,
    /// The write's own values, `$3` on.
    pub(super) values: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    /// What the write returns unless its key was written before.
    pub(super) expected: String,
}

impl KeyedWrite {
    /// The statement under `key` in `namespace`, for `step`; `expected` given (sent with the
    /// save), the function refuses another result.
    fn pending(self, namespace: &str, key: &str, step: Option<&str>, expected: Option<String>) -> PendingWrite {
        let mut params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>> =
            vec![Box::new(namespace.to_owned()), Box::new(key.to_owned())];
        params.extend(self.values);
        params.push(Box::new(expected));
        PendingWrite { step_id: step.map(str::to_owned), doing: self.doing, sql: self.sql, params }
    }
}

/// How a read transaction begins (one round trip: `BEGIN` and its `SET LOCAL`s).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Begin {
    /// The server stops a statement still running then (so a query does not go on after its
    /// step failed).
    pub(super) deadline: Option<std::time::Instant>,
    /// Each statement planned for its own parameters. The memory search needs it: a prepared
    /// statement's generic plan cannot know how many rows one namespace has, and for the
    /// search it intersects the namespace with a full-text scan of every namespace's memories
    /// (measured: 4.1 ms instead of 0.2 ms over 44,000 memories in 2,200 namespaces).
    pub(super) custom_plans: bool,
    /// Committed without waiting for the WAL flush: the transaction carries the cycle's token
    /// reservation, as every reservation is committed (`PgBudget`).
    pub(super) async_commit: bool,
}

impl Begin {
    fn sql(self) -> String {
        let mut sql = String::from("BEGIN");
        if let Some(deadline) = self.deadline {
            let left = deadline.saturating_duration_since(std::time::Instant::now()).as_millis().max(1);
            sql.push_str(&format!("; SET LOCAL statement_timeout = {left}"));
        }
        if self.custom_plans {
            sql.push_str("; SET LOCAL plan_cache_mode = force_custom_plan");
        }
        if self.async_commit {
            sql.push_str("; SET LOCAL synchronous_commit = off");
        }
        sql
    }
}

/// A PostgreSQL failure, naming the operation; a broken uniqueness rule is a conflict.
pub(super) fn backend(doing: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| match e.code() {
        Some(code) if *code == tokio_postgres::error::SqlState::UNIQUE_VIOLATION => {
            StoreError::Conflict(format!("{doing}: {}", reason(&e)))
        }
        _ => StoreError::Backend(format!("{doing}: {}", reason(&e))),
    }
}
