//! [`PgStore`]: memories and decisions in PostgreSQL, shared by many workers (docs/CONTRACT.md,
//! "More than one machine"). The same ports and the same conformance suite as the SQLite store;
//! each store works in a namespace (by default a session key: what one session root's SQLite
//! database holds).
//!
//! Memories are searched with `tsvector` and `ts_rank` over `summary` and `keywords` (the
//! `simple` configuration: no stemming, any language), every word of the input joined with `|`
//! (the words hold only letters and digits, so no operator of the input reaches the query).
//! One active version per decision root is a partial unique index. Every keyed write is one
//! statement, a write function of the schema (`v8.sql`: it claims the key, checks, changes and
//! records it, the rules of `store::write`), and never happens twice under its key.
//!
//! A call made in a cycle of the store's session (the cycle its session store began, handed to
//! the store with the call: [`Call::cycle`]) joins that cycle: its writes are kept in the cycle
//! and travel with the session save and its COMMIT, in one round trip (CONTRACT §13; see
//! `crate::pg::writes`), or go with the record of a pause; and its memory search reads ahead,
//! in the same read-only transaction, the decision context for the cycle's decision load and
//! which of the cycle's keys are written. A call outside such a cycle writes in a transaction of
//! its own: `BEGIN`, the statement and `COMMIT`, one round trip.
//!
//! With an embedder ([`PgStore::by_meaning`]: the provider `postgres-semantic`) the store also
//! ranks by meaning, exactly, fused with the words (see `meaning`'s docs and docs/CONTRACT.md,
//! "Retrieval by meaning").
//!
//! Every call is a future on planlock's I/O runtime: a wait for a connection or the server holds
//! no thread.

mod meaning;
pub mod pgvector;

use std::sync::Arc;

pub use meaning::MAX_EXACT_VECTORS;

use super::{
    Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Scope,
    StoreError, query_words,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::contract::value::PositiveInt;
use crate::embed::Embedder;
use crate::pg::cycle::{KeptDecisions, PgCycle};
use crate::pg::writes::PendingWrite;
use crate::pg::{Conn, PgDatabase, Pooled, Query, Then, WriteFailure, reason};

/// Memories and decisions of one namespace in a shared PostgreSQL database. Clones share the
/// pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: PgDatabase,
    namespace: String,
    /// With an embedder: ranks by meaning too.
    meaning: Option<Arc<meaning::Meaning>>,
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
    /// namespace is then pinned; a search ranks the namespace's newest [`MAX_EXACT_VECTORS`]
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
    /// `postgres-pgvector`; see [`pgvector`]): `ef_search` candidates per scan
    /// (default [`DEFAULT_EF_SEARCH`](crate::store::postgres::pgvector::DEFAULT_EF_SEARCH)), iterative scans
    /// in strict order. The database needs the tier ([`PgDatabase::install_pgvector`]); a search
    /// without it fails, saying so. No effect on a store that does not rank by meaning.
    pub fn pgvector(self, ef_search: u32) -> PgStore {
        let meaning = self.meaning.as_ref().map(|m| Arc::new(m.with_hnsw(ef_search)));
        PgStore { meaning, ..self }
    }

    /// Ranks at most the newest `vectors` of the namespace by meaning (default
    /// [`MAX_EXACT_VECTORS`]): what the store holds in memory is at most `vectors` × the
    /// embedder's dimension × 4 bytes. Older memories are found by their words only, and a
    /// search says so on its call. No effect on a store that does not rank by meaning.
    pub fn max_exact_vectors(self, vectors: usize) -> PgStore {
        let meaning = self.meaning.as_ref().map(|m| Arc::new(m.with_cap(vectors)));
        PgStore { meaning, ..self }
    }

    /// The cycle of this store's session that `call` is made in, if it is.
    fn cycle<'a>(&self, call: &Call<'a>) -> Option<&'a PgCycle> {
        call.cycle()?.held::<PgCycle>().filter(|cycle| cycle.is_of(&self.db, &self.namespace))
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// A connection of the pool, once one is free.
    async fn connection(&self) -> Result<Pooled, StoreError> {
        self.db.connection().await.map_err(|e| StoreError::Backend(e.to_string()))
    }

    /// Runs `f` in a transaction of its own, begun as `begin` says and committed when `f`
    /// returns `Ok` (dropped, the connection goes back through a rollback).
    async fn alone<T>(
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
    async fn write(&self, call: &Call<'_>, write: KeyedWrite) -> Result<String, StoreError> {
        let key = call.key()?.to_string();
        if let Some(cycle) = self.cycle(call) {
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
        let rows = rows.map_err(|e| StoreError::from(WriteFailure::of(&e, doing)))?;
        rows.first()
            .and_then(|rows| rows.first())
            .and_then(|row| row.get::<_, Option<String>>(0))
            .ok_or_else(|| StoreError::Backend(format!("{doing}: its key was taken, its row is gone")))
    }
}

/// Which of a namespace's keys (`$2`) are written, and what each write returned.
const WRITTEN: &str = "SELECT idem_key, result FROM planlock_writes WHERE namespace = $1 AND idem_key = ANY($2)";

/// One keyed write: a call of its write function (schema 8) with the write's own values, between
/// the namespace and key it is made under and the result a cycle goes on with.
struct KeyedWrite {
    doing: &'static str,
    /// `SELECT planlock_…($1 namespace, $2 key, …, $n expected)`.
    sql: &'static str,
    /// The write's own values, `$3` on.
    values: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    /// What the write returns unless its key was written before.
    expected: String,
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

impl From<WriteFailure> for StoreError {
    fn from(failure: WriteFailure) -> StoreError {
        match failure {
            WriteFailure::Conflict(m) => StoreError::Conflict(m),
            WriteFailure::NotFound(m) => StoreError::NotFound(m),
            WriteFailure::Backend(m) => StoreError::Backend(m),
        }
    }
}

/// How a read transaction begins (one round trip: `BEGIN` and its `SET LOCAL`s).
#[derive(Debug, Clone, Copy, Default)]
struct Begin {
    /// The server stops a statement still running then (so a query does not go on after its
    /// step failed).
    deadline: Option<std::time::Instant>,
    /// Each statement planned for its own parameters. The memory search needs it: a prepared
    /// statement's generic plan cannot know how many rows one namespace has, and for the
    /// search it intersects the namespace with a full-text scan of every namespace's memories
    /// (measured: 4.1 ms instead of 0.2 ms over 44,000 memories in 2,200 namespaces).
    custom_plans: bool,
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
        sql
    }
}

/// A PostgreSQL failure, naming the operation; a broken uniqueness rule is a conflict.
fn backend(doing: &'static str) -> impl Fn(tokio_postgres::Error) -> StoreError {
    move |e| match e.code() {
        Some(code) if *code == tokio_postgres::error::SqlState::UNIQUE_VIOLATION => {
            StoreError::Conflict(format!("{doing}: {}", reason(&e)))
        }
        _ => StoreError::Backend(format!("{doing}: {}", reason(&e))),
    }
}

fn item(row: &tokio_postgres::Row) -> MemoryItem {
    MemoryItem { id: row.get(0), summary: row.get(1), timestamp: row.get(2) }
}

impl PgStore {
    /// The best `top_k` memories of a fused ranking (ids, best first) that can be read: those
    /// the word ranking read already, the others in one round trip. An id whose memory is gone
    /// is passed over (said on the call).
    async fn read_ranked(
        &self,
        call: &Call<'_>,
        fused: Vec<String>,
        read: Vec<MemoryItem>,
        top_k: u64,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        let mut known: std::collections::HashMap<String, MemoryItem> =
            read.into_iter().map(|m| (m.id.clone(), m)).collect();
        let missing: Vec<&String> = fused.iter().filter(|id| !known.contains_key(*id)).collect();
        if !missing.is_empty() {
            let mut conn = self.connection().await?;
            let rows = conn
                .query(
                    "SELECT id, summary, created_at FROM planlock_memories WHERE namespace = $1 AND id = ANY($2)",
                    &[&self.namespace, &missing],
                )
                .await
                .map_err(backend("reading the memories found by meaning"))?;
            known.extend(rows.iter().map(item).map(|m| (m.id.clone(), m)));
        }
        let n = usize::try_from(top_k).unwrap_or(usize::MAX);
        let mut found = Vec::with_capacity(n.min(fused.len()));
        let mut gone = 0;
        for id in fused {
            if found.len() == n {
                break;
            }
            match known.remove(&id) {
                Some(m) => found.push(m),
                None => gone += 1,
            }
        }
        call.passed_over(gone, "memories");
        Ok(found)
    }
}

impl MemoryRepositoryPort for PgStore {
    /// The server stops the search at the call's deadline (`statement_timeout`). By meaning
    /// too: see [`PgStore::by_meaning`].
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query);
        // Without words, the most recent, as every memory provider does.
        let meaning = self.meaning.as_deref().filter(|_| !words.is_empty());
        let query_vector = match meaning {
            Some(m) => Some(m.embed_query(&words, call.deadline()).await?),
            None => None,
        };
        let reads = match (meaning, &query_vector) {
            (Some(m), Some(query)) => Some(m.reads(query)),
            _ => None,
        };
        let words = words.join(" | ");
        // By meaning, the word ranking gives its best CANDIDATES for the fusion.
        let limit = match meaning {
            Some(_) => i64::try_from(crate::store::meaning::CANDIDATES).unwrap_or(i64::MAX),
            None => i64::try_from(top_k).unwrap_or(i64::MAX),
        };
        let in_cycle = self.cycle(call);
        let begin = Begin { deadline: call.deadline(), custom_plans: true };
        // The keys of the cycle's later steps: which are written is read with the search.
        let keys = in_cycle.map(|_| call.keys_ahead()).unwrap_or_default();
        let (items, ahead, written, read) = self
            .alone("searching memories", begin, async |tx: &mut Conn, namespace: &str| {
                let search = if words.is_empty() {
                    Query::new(
                        "SELECT id, summary, created_at FROM planlock_memories WHERE namespace = $1 ORDER BY seq DESC LIMIT $2",
                        &[&namespace, &limit],
                    )
                } else {
                    Query::new(
                        "SELECT id, summary, created_at FROM planlock_memories, to_tsquery('simple', $2) q
                         WHERE namespace = $1 AND search @@ q
                         ORDER BY ts_rank(search, q) DESC, seq DESC LIMIT $3",
                        &[&namespace, &words, &limit],
                    )
                };
                // In a session's cycle, the decision context is read in this transaction too, for
                // the cycle's RetrieveDecisionContext step, and which of the cycle's keys are
                // written, for its writes: the search, the reads ahead and the commit go in one
                // round trip. A namespace with more than MAX_READ_AHEAD active decisions keeps
                // no decisions.
                let ahead = ActiveQueries::new(Which::Ahead);
                // Only the search needs its plan made for its parameters (see `Begin`): the
                // statements after it use their cached plans.
                let mut batch = vec![search, Query::new("SET LOCAL plan_cache_mode = auto", &[])];
                if in_cycle.is_some() {
                    batch.extend(ahead.queries(&namespace));
                    batch.push(Query::new(WRITTEN, &[&namespace, &keys]));
                }
                // By meaning, the namespace's embedder and the vector ranking's reads (the vectors
                // written since the last search, or the pgvector tier's nearest): last.
                if let Some(reads) = &reads {
                    batch.extend(reads.queries(&namespace));
                }
                let mut rows = match tx.pipeline(&batch, Then::Commit).await {
                    Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) => {
                        return Err(StoreError::Backend("the search was stopped at the step's deadline".into()));
                    }
                    Err(e) if meaning.is_some_and(|m| m.is_hnsw()) => return Err(meaning::hnsw_failure(e)),
                    rows => rows.map_err(backend("searching memories"))?,
                };
                let read = reads.as_ref().map(|reads| reads.take(&mut rows));
                let items: Vec<MemoryItem> = rows[0].iter().map(item).collect();
                let (ahead, written) = match in_cycle {
                    Some(_) => {
                        let written = rows[4].iter().map(|row| (row.get(0), row.get(1))).collect::<Vec<_>>();
                        (ahead.kept(&rows[2], &rows[3]), written)
                    }
                    None => (None, Vec::new()),
                };
                Ok((items, ahead, written, read))
            })
            .await?;
        if let Some(cycle) = in_cycle {
            cycle.learn(&keys, written).await;
            if let Some(ahead) = ahead {
                cycle.keep(ahead).await;
            }
        }
        match (meaning, query_vector, read) {
            (Some(m), Some(query), Some(read)) => {
                let fused = m.rank(self, call, &query, &items, read).await?;
                self.read_ranked(call, fused, items, top_k).await
            }
            _ => Ok(items),
        }
    }

    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        // A memory's id is made from its key: what a put again under the key finds.
        let id = format!("mem-{}", &call.key()?.to_string()[..16]);
        let mut write = KeyedWrite {
            doing: "storing a memory",
            sql: "SELECT planlock_put_memory($1, $2, $3, $4, $5, $6, $7, $8)",
            values: vec![
                Box::new(id.clone()),
                Box::new(memory.session_ref.to_owned()),
                Box::new(memory.summary.to_owned()),
                Box::new(memory.keywords.join(" ")),
                Box::new(super::now()),
            ],
            expected: id,
        };
        // By meaning, with its vector (embedded within the call's deadline).
        if let Some(m) = &self.meaning {
            let text = crate::store::meaning::memory_text(memory.summary, memory.keywords);
            m.memory_write(&mut write, text, call.deadline()).await?;
        }
        self.write(call, write).await
    }
}

/// The columns a decision is read from, in [`decision_row`]'s order.
macro_rules! decision_columns {
    () => {
        "id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id"
    };
}
const DECISION_COLUMNS: &str = decision_columns!();

fn decision_row(r: &tokio_postgres::Row) -> Decision {
    let scope = match (r.get::<_, &str>(5), r.get::<_, Option<&str>>(6)) {
        ("domain", Some(name)) => format!("domain:{name}"),
        (kind, _) => kind.to_owned(),
    };
    let version: i64 = r.get(2);
    Decision {
        id: r.get(0),
        root_id: r.get(1),
        version: PositiveInt::new(u64::try_from(version).unwrap_or(0)).unwrap_or(PositiveInt::MIN),
        text: r.get(3),
        strength: r.get(4),
        scope,
        is_active: r.get(7),
        previous_version_id: r.get(8),
    }
}

/// The most active decisions, and the most of their links, a cycle's memory search reads ahead
/// for its decision load. A namespace with more keeps nothing: the load reads for itself, for
/// its domain only, as it would outside a cycle.
pub const MAX_READ_AHEAD: i64 = 1_000;

/// Which active decisions to read.
#[derive(Clone, Copy)]
enum Which<'a> {
    /// Every scope, for a load whose domain is not known yet: at most [`MAX_READ_AHEAD`].
    Ahead,
    /// Those a load for this domain (or none) can return: global, axis and the domain's.
    For(Option<&'a str>),
}

/// The two statements that read a namespace's active decisions (in the order they were stored)
/// and their links (in the order they were made), sent in one batch of the caller's transaction
/// so the links match the decisions.
struct ActiveQueries<'a> {
    decisions: String,
    links: String,
    domain: Option<&'a str>,
    limit: i64,
}

impl<'a> ActiveQueries<'a> {
    fn new(which: Which<'a>) -> ActiveQueries<'a> {
        // The SQL narrows by scope only to read less; `DecisionContext::in_scope` is the rule.
        let (scope, domain, limit) = match which {
            Which::Ahead => ("$2::text IS NULL", None, MAX_READ_AHEAD + 1),
            Which::For(domain) => (
                "(d.scope_kind IN ('global', 'axis') OR (d.scope_kind = 'domain' AND d.scope_domain = $2))",
                domain,
                i64::MAX,
            ),
        };
        let decisions = format!(
            "SELECT {DECISION_COLUMNS} FROM planlock_decisions d
             WHERE d.namespace = $1 AND d.is_active AND {scope} ORDER BY d.seq LIMIT $3"
        );
        let links = format!(
            "SELECT de.decision_id, de.evidence_id FROM planlock_decision_evidence de
             JOIN planlock_decisions d ON d.namespace = de.namespace AND d.id = de.decision_id
             WHERE de.namespace = $1 AND d.is_active AND {scope} ORDER BY de.seq LIMIT $3"
        );
        ActiveQueries { decisions, links, domain, limit }
    }

    /// The decisions' statement and the links', for `namespace`.
    fn queries<'q>(&'q self, namespace: &'q &'q str) -> [Query<'q>; 2] {
        let params: [&'q (dyn tokio_postgres::types::ToSql + Sync); 3] = [namespace, &self.domain, &self.limit];
        [Query::new(&self.decisions, &params), Query::new(&self.links, &params)]
    }

    /// What the two statements read; `None` when reading ahead found more than
    /// [`MAX_READ_AHEAD`].
    fn kept(&self, decisions: &[tokio_postgres::Row], links: &[tokio_postgres::Row]) -> Option<KeptDecisions> {
        if i64::try_from(decisions.len().max(links.len())).unwrap_or(i64::MAX) >= self.limit {
            return None;
        }
        let decisions = decisions.iter().map(decision_row).collect();
        let links = links.iter().map(|r| Anchor { decision_id: r.get(0), evidence_id: r.get(1) }).collect();
        Some(KeptDecisions { decisions, links })
    }
}

impl DecisionContextProviderPort for PgStore {
    /// In a cycle of the store's session, the decisions its memory search read in the same
    /// transaction (see [`MemoryRepositoryPort::search`] on this type); otherwise one
    /// transaction of its own for both reads: one commit, and anchors that match the decisions
    /// read. By meaning, the context ordered as [`PgStore::by_meaning`] says.
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        if let Some(cycle) = self.cycle(call)
            && let Some(kept) = cycle.take_kept().await
        {
            let mut context = DecisionContext::in_scope(&kept.decisions, &kept.links, current_domain);
            if let Some(m) = &self.meaning {
                m.order(self, call, &mut context.decisions, input).await?;
            }
            return Ok(context);
        }
        let active = self
            .alone(
                "loading decisions",
                Begin { deadline: call.deadline(), custom_plans: false },
                async |conn: &mut Conn, namespace: &str| {
                    let reads = ActiveQueries::new(Which::For(current_domain));
                    let rows = conn.pipeline(&reads.queries(&namespace), Then::Commit).await;
                    let rows = rows.map_err(backend("loading decisions"))?;
                    Ok(reads.kept(&rows[0], &rows[1]))
                },
            )
            .await?;
        let mut context =
            active.map(|a| DecisionContext::in_scope(&a.decisions, &a.links, current_domain)).unwrap_or_default();
        if let Some(m) = &self.meaning {
            m.order(self, call, &mut context.decisions, input).await?;
        }
        Ok(context)
    }
}

impl DecisionWritePort for PgStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        let (kind, domain) = Scope::of(&decision.scope).columns();
        let mut write = KeyedWrite {
            doing: "storing a decision",
            sql: "SELECT planlock_persist_decision($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            values: vec![
                Box::new(decision.id.clone()),
                Box::new(decision.root_id.clone()),
                Box::new(i64::try_from(decision.version.get()).unwrap_or(i64::MAX)),
                Box::new(decision.text.clone()),
                Box::new(decision.strength.clone()),
                Box::new(kind),
                Box::new(domain.map(str::to_owned)),
                Box::new(decision.previous_version_id.clone()),
                Box::new(super::now()),
            ],
            expected: decision.id.clone(),
        };
        // By meaning, with its vector (embedded within the call's deadline).
        if let Some(m) = &self.meaning {
            m.decision_write(&mut write, decision.text.clone(), call.deadline()).await?;
        }
        self.write(call, write).await
    }

    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        let write = KeyedWrite {
            doing: "storing evidence",
            sql: "SELECT planlock_persist_evidence($1, $2, $3, $4, $5, $6)",
            values: vec![
                Box::new(evidence.id.clone()),
                Box::new(evidence.summary.clone()),
                Box::new(evidence.source.clone()),
            ],
            expected: evidence.id.clone(),
        };
        self.write(call, write).await
    }

    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        let write = KeyedWrite {
            doing: "linking",
            sql: "SELECT planlock_link($1, $2, $3, $4, $5)",
            values: vec![Box::new(anchor.decision_id.clone()), Box::new(anchor.evidence_id.clone())],
            expected: "linked".to_owned(),
        };
        self.write(call, write).await
    }
}
