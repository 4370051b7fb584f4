//! [`PgStore`]: memories and decisions in PostgreSQL, shared by many workers (docs/CONTRACT.md,
//! "More than one machine"). The same ports and the same conformance suite as the SQLite store;
//! each store works in a namespace (by default a session key: what one session root's SQLite
//! database holds).
//!
//! Memories are searched with `tsvector` and `ts_rank` over `summary` and `keywords` (the
//! `simple` configuration: no stemming, any language), every word of the input joined with `|`
//! (the words hold only letters and digits, so no operator of the input reaches the query).
//! One active version per decision root is a partial unique index. Every write is one
//! transaction; keyed writes are recorded in `planlock_writes` and never happen twice. While a
//! [`PgSessionStore`](crate::session::postgres::PgSessionStore) of the namespace is open on the
//! same [`PgDatabase`], a cycle's writes are one transaction instead, left open from the first
//! write and committed by the session save, so the cycle's writes and its session are durable
//! together or not at all (CONTRACT §13); a cycle that ends without a save rolls them back. In
//! that cycle the memory search reads the decision context too, for the cycle's
//! `RetrieveDecisionContext`: the two retrievals are one read-only transaction.
//!
//! Calls block, so each runs on the `blocking` crate's pool and is awaited; the wait for a
//! connection (or for a place among the open cycles) comes first and holds no thread.

use super::write::{self, End, WriteRows};
use super::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Scope,
    StoreError, query_words,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::contract::value::PositiveInt;
use crate::hash::IdempotencyKey;
use crate::pg::cycle::{CycleSlot, Peek};
use crate::pg::{Conn, PgConnection, PgDatabase, reason};

/// Memories and decisions of one namespace in a shared PostgreSQL database. Clones share the
/// pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: PgDatabase,
    namespace: String,
}

impl PgStore {
    /// The store of `namespace` (a session key, a tenant: whatever the memories belong to).
    pub fn new(db: &PgDatabase, namespace: impl Into<String>) -> PgStore {
        PgStore { db: db.clone(), namespace: namespace.into() }
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// Runs `f` with a pooled connection on a thread where blocking is allowed.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PgConnection, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (db, namespace) = (self.db.clone(), self.namespace.clone());
        // Waited for here, holding no thread (see `PgDatabase::permit`).
        let permit = db.permit().await;
        blocking::unblock(move || {
            let mut conn = db.connection().map_err(|e| StoreError::Backend(e.to_string()))?;
            let out = f(&mut conn, &namespace);
            drop((conn, permit));
            out
        })
        .await
    }

    /// Runs `f` in one transaction, committed when it returns `Ok`, begun as `begin` says.
    async fn transaction<T: Send + 'static>(
        &self,
        doing: &'static str,
        begin: Begin,
        f: impl FnOnce(&mut Conn, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.with(move |conn, namespace| alone(conn, &begin.sql(), doing, |c| f(c, namespace))).await
    }

    /// Runs the write `f` in the cycle's transaction when the namespace's session store is open
    /// on this database (left open for the session save), else in one of its own.
    async fn write<T: Send + 'static>(
        &self,
        doing: &'static str,
        f: impl FnOnce(&mut Conn, &str) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (db, namespace) = (self.db.clone(), self.namespace.clone());
        // The first write of a cycle waits for its place here, holding no thread
        // (`pg::cycle`); a write alone waits for a connection permit the same way.
        let cycles = db.cycles().clone();
        let (place, permit) = match cycles.peek(&namespace) {
            Peek::Open => (cycles.place(&db).await, None),
            Peek::Alone => (None, db.permit().await),
            Peek::Join => (None, None),
        };
        blocking::unblock(move || {
            let mut cycle = match cycles.take(&namespace) {
                CycleSlot::Open(cycle) => cycle,
                CycleSlot::Idle { generation } => {
                    // Its session store was opened since the look above (no place was taken
                    // then): the place is waited for on this thread.
                    let place = match place {
                        Some(place) => Some(place),
                        None => pollster::block_on(cycles.place(&db)),
                    };
                    let Some(place) = place else {
                        return Err(StoreError::Backend(format!("{doing}: the database's pool holds no cycles")));
                    };
                    cycles
                        .begin(&namespace, place, generation, || {
                            db.connection().map_err(|e| StoreError::Backend(e.to_string())).map_err(Opening::Store)
                        })
                        .map_err(|e| e.into_store(doing))?
                }
                // Not this store's session in a cycle: a transaction of its own.
                CycleSlot::Unregistered => {
                    let mut conn = db.connection().map_err(|e| StoreError::Backend(e.to_string()))?;
                    let out = alone(&mut conn, "BEGIN", doing, |c| f(c, &namespace));
                    drop((conn, permit));
                    return out;
                }
            };
            // A failed statement aborts the transaction: dropped, the cycle's writes are rolled
            // back with it, and the cycle fails.
            let out = f(cycle.conn(), &namespace)?;
            cycles.put(&namespace, cycle);
            Ok(out)
        })
        .await
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
    /// The SQL, computed on the thread that runs it: the wait for a thread counts against the
    /// deadline.
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

/// Why a cycle's transaction could not be opened.
enum Opening {
    Store(StoreError),
    Begin(postgres::Error),
}

impl From<postgres::Error> for Opening {
    fn from(e: postgres::Error) -> Opening {
        Opening::Begin(e)
    }
}

impl Opening {
    fn into_store(self, doing: &'static str) -> StoreError {
        match self {
            Opening::Store(e) => e,
            Opening::Begin(e) => backend(doing)(e),
        }
    }
}

/// `f` between `begin` (`BEGIN` and any `SET LOCAL`, one round trip) and `COMMIT`, rolled back
/// when it fails.
fn alone<T>(
    conn: &mut Conn,
    begin: &str,
    doing: &'static str,
    f: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.batch_execute(begin).map_err(backend(doing))?;
    match f(conn) {
        Ok(out) => {
            conn.batch_execute("COMMIT").map_err(backend(doing))?;
            Ok(out)
        }
        Err(e) => {
            let _ = conn.batch_execute("ROLLBACK");
            Err(e)
        }
    }
}

/// A PostgreSQL failure, naming the operation; a broken uniqueness rule is a conflict.
fn backend(doing: &'static str) -> impl Fn(postgres::Error) -> StoreError {
    move |e| match e.code() {
        Some(code) if *code == postgres::error::SqlState::UNIQUE_VIOLATION => {
            StoreError::Conflict(format!("{doing}: {}", reason(&e)))
        }
        _ => StoreError::Backend(format!("{doing}: {}", reason(&e))),
    }
}

fn item(row: &postgres::Row) -> MemoryItem {
    MemoryItem { id: row.get(0), summary: row.get(1), timestamp: row.get(2) }
}

impl MemoryRepositoryPort for PgStore {
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        self.search_within(query, top_k, None).await
    }

    async fn search_within(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query).join(" | ");
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let cycles = self.db.cycles().clone();
        let begin = Begin { deadline, custom_plans: true };
        self.transaction("searching memories", begin, move |tx, namespace| {
            let rows = if words.is_empty() {
                tx.query(
                    "SELECT id, summary, created_at FROM planlock_memories WHERE namespace = $1 ORDER BY seq DESC LIMIT $2",
                    &[&namespace, &limit],
                )
            } else {
                tx.query(
                    "SELECT id, summary, created_at FROM planlock_memories, to_tsquery('simple', $2) q
                     WHERE namespace = $1 AND search @@ q
                     ORDER BY ts_rank(search, q) DESC, seq DESC LIMIT $3",
                    &[&namespace, &words, &limit],
                )
            };
            let items = match rows {
                Err(e) if e.code() == Some(&postgres::error::SqlState::QUERY_CANCELED) => {
                    return Err(StoreError::Backend("the search was stopped at the step's deadline".into()));
                }
                rows => rows.map_err(backend("searching memories"))?.iter().map(item).collect(),
            };
            // In a worker's cycle (its session store open on this database), the decision
            // context is read in this transaction too and kept for the cycle's
            // RetrieveDecisionContext step: one read-only commit for both retrieval steps.
            // A namespace with more than MAX_READ_AHEAD of them keeps nothing.
            if cycles.is_registered(namespace)
                && let Some(active) = ActiveDecisions::read(tx, namespace, Which::Ahead)?
            {
                cycles.keep_reads(namespace, Box::new(active));
            }
            Ok(items)
        })
        .await
    }

    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let key = memory.key.to_string();
        let (session_ref, summary) = (memory.session_ref.to_owned(), memory.summary.to_owned());
        let keywords = memory.keywords.join(" ");
        self.write("storing a memory", move |tx, namespace| {
            let id = format!("mem-{}", &key[..16]);
            // A memory's key is its own unique column: a put again under it finds it there.
            let inserted = tx
                .query_opt(
                    "INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (namespace, idem_key) DO NOTHING RETURNING id",
                    &[&namespace, &id, &key, &session_ref, &summary, &keywords, &super::now()],
                )
                .map_err(backend("storing a memory"))?;
            match inserted {
                Some(row) => Ok(row.get(0)),
                None => tx
                    .query_one(
                        "SELECT id FROM planlock_memories WHERE namespace = $1 AND idem_key = $2",
                        &[&namespace, &key],
                    )
                    .map(|row| row.get(0))
                    .map_err(backend("storing a memory")),
            }
        })
        .await
    }
}

/// What the write under `key` returned, if it happened, once the key's lock is this
/// transaction's: keyed writes of the same key from two workers at once take turns, so one
/// writes and the other finds its result (`planlock_claim_write`, one round trip).
fn written(tx: &mut Conn, namespace: &str, key: &str) -> Result<Option<String>, StoreError> {
    tx.query_one("SELECT planlock_claim_write($1, $2)", &[&namespace, &key])
        .map(|row| row.get(0))
        .map_err(backend("reading the idempotency keys"))
}

fn record_write(tx: &mut Conn, namespace: &str, key: &str, result: &str) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO planlock_writes (namespace, idem_key, result) VALUES ($1, $2, $3)",
        &[&namespace, &key, &result],
    )
    .map(drop)
    .map_err(backend("recording the idempotency key"))
}

const DECISION_COLUMNS: &str =
    "id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id";

fn decision_row(r: &postgres::Row) -> Decision {
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

/// The most active decisions, and the most of their links, a worker's memory search reads ahead
/// for its cycle's decision load. A namespace with more keeps nothing: the load reads for
/// itself, for its domain only, as it would outside a cycle.
pub const MAX_READ_AHEAD: i64 = 1_000;

/// Active decisions of a namespace (in the order they were stored) and their links (in the
/// order they were made), from which [`DecisionContext::in_scope`] takes a load's context.
struct ActiveDecisions {
    decisions: Vec<Decision>,
    links: Vec<Anchor>,
}

/// Which active decisions to read.
#[derive(Clone, Copy)]
enum Which<'a> {
    /// Every scope, for a load whose domain is not known yet: at most [`MAX_READ_AHEAD`].
    Ahead,
    /// Those a load for this domain (or none) can return: global, axis and the domain's.
    For(Option<&'a str>),
}

impl ActiveDecisions {
    /// Reads them, in the caller's transaction (so the links match the decisions); `None` when
    /// reading ahead finds more than [`MAX_READ_AHEAD`].
    fn read(conn: &mut Conn, namespace: &str, which: Which<'_>) -> Result<Option<ActiveDecisions>, StoreError> {
        // The SQL narrows by scope only to read less; `DecisionContext::in_scope` is the rule.
        let (scope, domain, limit) = match which {
            Which::Ahead => ("$2::text IS NULL", None, MAX_READ_AHEAD + 1),
            Which::For(domain) => (
                "(d.scope_kind IN ('global', 'axis') OR (d.scope_kind = 'domain' AND d.scope_domain = $2))",
                domain,
                i64::MAX,
            ),
        };
        let sql = format!(
            "SELECT {DECISION_COLUMNS} FROM planlock_decisions d
             WHERE d.namespace = $1 AND d.is_active AND {scope} ORDER BY d.seq LIMIT $3"
        );
        let decisions: Vec<Decision> = conn
            .query(&sql, &[&namespace, &domain, &limit])
            .map_err(backend("loading decisions"))?
            .iter()
            .map(decision_row)
            .collect();
        let sql = format!(
            "SELECT de.decision_id, de.evidence_id FROM planlock_decision_evidence de
             JOIN planlock_decisions d ON d.namespace = de.namespace AND d.id = de.decision_id
             WHERE de.namespace = $1 AND d.is_active AND {scope} ORDER BY de.seq LIMIT $3"
        );
        let links: Vec<Anchor> = conn
            .query(&sql, &[&namespace, &domain, &limit])
            .map_err(backend("loading anchors"))?
            .iter()
            .map(|r| Anchor { decision_id: r.get(0), evidence_id: r.get(1) })
            .collect();
        if i64::try_from(decisions.len().max(links.len())).unwrap_or(i64::MAX) >= limit {
            return Ok(None);
        }
        Ok(Some(ActiveDecisions { decisions, links }))
    }

    fn in_scope(&self, current_domain: Option<&str>) -> DecisionContext {
        DecisionContext::in_scope(&self.decisions, &self.links, current_domain)
    }
}

impl DecisionContextProviderPort for PgStore {
    /// In a worker's cycle, the decisions its memory search read in the same transaction (see
    /// [`MemoryRepositoryPort::search_within`] on this type); otherwise one transaction of its
    /// own for both reads: one commit, and anchors that match the decisions read.
    async fn load(&self, _input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        let kept =
            self.db.cycles().take_reads(&self.namespace).and_then(|kept| kept.downcast::<ActiveDecisions>().ok());
        if let Some(active) = kept {
            return Ok(active.in_scope(current_domain));
        }
        let domain = current_domain.map(str::to_owned);
        self.transaction("loading decisions", Begin::default(), move |conn, namespace| {
            let active = ActiveDecisions::read(conn, namespace, Which::For(domain.as_deref()))?;
            Ok(active.map(|active| active.in_scope(domain.as_deref())).unwrap_or_default())
        })
        .await
    }
}

impl DecisionWritePort for PgStore {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (decision, key) = (decision.clone(), *key);
        let doing = "storing a decision";
        self.write(doing, move |tx, namespace| {
            write::persist_decision(&mut Rows { tx, namespace, doing }, &decision, &key)
        })
        .await
    }

    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (evidence, key) = (evidence.clone(), *key);
        let doing = "storing evidence";
        self.write(doing, move |tx, namespace| {
            write::persist_evidence(&mut Rows { tx, namespace, doing }, &evidence, &key)
        })
        .await
    }

    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (anchor, key) = (anchor.clone(), *key);
        let doing = "linking";
        self.write(doing, move |tx, namespace| write::link(&mut Rows { tx, namespace, doing }, &anchor, &key)).await
    }
}

/// The decision rows of a namespace, in the write's transaction.
struct Rows<'a> {
    tx: &'a mut Conn,
    namespace: &'a str,
    doing: &'static str,
}

impl WriteRows for Rows<'_> {
    fn written(&mut self, key: &IdempotencyKey) -> Result<Option<String>, StoreError> {
        written(self.tx, self.namespace, &key.to_string())
    }

    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> Result<(), StoreError> {
        record_write(self.tx, self.namespace, &key.to_string(), result)
    }

    fn decision(&mut self, id: &str) -> Result<Option<Decision>, StoreError> {
        let select = format!("SELECT {DECISION_COLUMNS} FROM planlock_decisions WHERE namespace = $1 AND id = $2");
        let row = self.tx.query_opt(&select, &[&self.namespace, &id]).map_err(backend(self.doing))?;
        Ok(row.as_ref().map(decision_row))
    }

    fn active_versions(&mut self, root_id: &str) -> Result<Vec<Decision>, StoreError> {
        let sql = format!(
            "SELECT {DECISION_COLUMNS} FROM planlock_decisions WHERE namespace = $1 AND root_id = $2 AND is_active FOR UPDATE"
        );
        let rows = self.tx.query(&sql, &[&self.namespace, &root_id]).map_err(backend(self.doing))?;
        Ok(rows.iter().map(decision_row).collect())
    }

    fn deactivate(&mut self, id: &str) -> Result<bool, StoreError> {
        self.tx
            .execute(
                "UPDATE planlock_decisions SET is_active = false WHERE namespace = $1 AND id = $2 AND is_active",
                &[&self.namespace, &id],
            )
            .map(|changed| changed == 1)
            .map_err(backend(self.doing))
    }

    fn insert_decision(&mut self, decision: &Decision) -> Result<(), StoreError> {
        let (kind, domain) = Scope::of(&decision.scope).columns();
        let version = i64::try_from(decision.version.get()).unwrap_or(i64::MAX);
        self.tx
            .execute(
                "INSERT INTO planlock_decisions
                   (namespace, id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, $10)",
                &[
                    &self.namespace,
                    &decision.id,
                    &decision.root_id,
                    &version,
                    &decision.text,
                    &decision.strength,
                    &kind,
                    &domain,
                    &decision.previous_version_id,
                    &super::now(),
                ],
            )
            .map(drop)
            .map_err(backend(self.doing))
    }

    fn insert_evidence(&mut self, evidence: &Evidence) -> Result<bool, StoreError> {
        self.tx
            .execute(
                "INSERT INTO planlock_evidence (namespace, id, summary, source) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&self.namespace, &evidence.id, &evidence.summary, &evidence.source],
            )
            .map(|inserted| inserted == 1)
            .map_err(backend(self.doing))
    }

    fn evidence(&mut self, id: &str) -> Result<Option<(String, String)>, StoreError> {
        let row = self
            .tx
            .query_opt(
                "SELECT summary, source FROM planlock_evidence WHERE namespace = $1 AND id = $2",
                &[&self.namespace, &id],
            )
            .map_err(backend(self.doing))?;
        Ok(row.map(|r| (r.get(0), r.get(1))))
    }

    fn exists(&mut self, end: End, id: &str) -> Result<bool, StoreError> {
        let table = match end {
            End::Decision => "planlock_decisions",
            End::Evidence => "planlock_evidence",
        };
        self.tx
            .query_opt(&format!("SELECT 1 FROM {table} WHERE namespace = $1 AND id = $2"), &[&self.namespace, &id])
            .map(|row| row.is_some())
            .map_err(backend(self.doing))
    }

    fn insert_link(&mut self, anchor: &Anchor) -> Result<(), StoreError> {
        self.tx
            .execute(
                "INSERT INTO planlock_decision_evidence (namespace, decision_id, evidence_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&self.namespace, &anchor.decision_id, &anchor.evidence_id],
            )
            .map(drop)
            .map_err(backend(self.doing))
    }
}
