//! [`PgStore`]: memories and decisions in PostgreSQL, shared by many workers (docs/CONTRACT.md,
//! "More than one machine"). The same ports and the same conformance suite as the SQLite store;
//! each store works in a namespace (by default a session key: what one session root's SQLite
//! database holds).
//!
//! Memories are searched with `tsvector` and `ts_rank` over `summary` and `keywords` (the
//! `simple` configuration: no stemming, any language), every word of the input joined with `|`
//! (the words hold only letters and digits, so no operator of the input reaches the query).
//! One active version per decision root is a partial unique index. Every write is one
//! transaction; keyed writes are recorded in `planlock_writes` and never happen twice.
//!
//! A call made in a cycle of the store's session (the cycle its session store began, handed to
//! the store with the call: [`Call::cycle`]) joins that cycle: its writes join the cycle's one
//! transaction, which the session save commits (CONTRACT §13) or the cycle's end rolls back; and
//! its memory search reads the decision context ahead for the cycle's decision load, kept in the
//! cycle, typed, so the two retrievals are one read-only transaction. A call outside such a
//! cycle writes in a transaction of its own.
//!
//! Every call is a future on planlock's I/O runtime: a wait for a connection or the server holds
//! no thread.

use super::write::{self, Answer, Change, End, Read, WriteRows};
use super::{
    Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Scope,
    StoreError, query_words,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::contract::value::PositiveInt;
use crate::hash::IdempotencyKey;
use crate::pg::cycle::{KeptDecisions, PgCycle};
use crate::pg::{Conn, PgDatabase, Pooled, Query, Then, reason};

/// Memories and decisions of one namespace in a shared PostgreSQL database. Clones share the
/// pool.
#[derive(Debug, Clone)]
pub struct PgStore {
    db: PgDatabase,
    namespace: String,
}

impl PgStore {
    /// The store of `namespace` (a session key, a tenant: whatever the memories belong to). A
    /// call in a cycle of the session whose key is `namespace`, begun on `db`'s pool, joins the
    /// cycle; any other write commits alone.
    pub fn new(db: &PgDatabase, namespace: impl Into<String>) -> PgStore {
        PgStore { db: db.clone(), namespace: namespace.into() }
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

    /// Runs the write `f` in the call's cycle's transaction (left open for the session save), or
    /// in one of its own outside a cycle. A failed statement aborts the cycle's transaction:
    /// the cycle fails, and its end rolls back all of its writes.
    async fn write<T>(
        &self,
        call: &Call<'_>,
        doing: &'static str,
        f: impl AsyncFnOnce(&mut Conn, &str) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if let Some(cycle) = self.cycle(call) {
            let tx = cycle.transaction().await.map_err(|e| StoreError::Backend(e.to_string()))?;
            if let Some(mut tx) = tx {
                return f(&mut tx, &self.namespace).await;
            }
        }
        self.alone(doing, Begin::default(), f).await
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

impl MemoryRepositoryPort for PgStore {
    /// The server stops the search at the call's deadline (`statement_timeout`).
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query).join(" | ");
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let in_cycle = self.cycle(call);
        let begin = Begin { deadline: call.deadline(), custom_plans: true };
        let (items, ahead) = self
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
                // the cycle's RetrieveDecisionContext step: the search, the read-ahead and the
                // commit go in one round trip. A namespace with more than MAX_READ_AHEAD active
                // decisions keeps nothing.
                let ahead = ActiveQueries::new(Which::Ahead);
                let mut batch = vec![search];
                if in_cycle.is_some() {
                    batch.extend(ahead.queries(&namespace));
                }
                let rows = match tx.pipeline(&batch, Then::Commit).await {
                    Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) => {
                        return Err(StoreError::Backend("the search was stopped at the step's deadline".into()));
                    }
                    rows => rows.map_err(backend("searching memories"))?,
                };
                let items: Vec<MemoryItem> = rows[0].iter().map(item).collect();
                let ahead = match in_cycle {
                    Some(_) => ahead.kept(&rows[1], &rows[2]),
                    None => None,
                };
                Ok((items, ahead))
            })
            .await?;
        if let (Some(cycle), Some(ahead)) = (in_cycle, ahead) {
            cycle.keep(ahead).await;
        }
        Ok(items)
    }

    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let key = call.key()?.to_string();
        let (session_ref, summary) = (memory.session_ref.to_owned(), memory.summary.to_owned());
        let keywords = memory.keywords.join(" ");
        self.write(call, "storing a memory", async |tx: &mut Conn, namespace: &str| {
            let id = format!("mem-{}", &key[..16]);
            // A memory's key is its own unique column: a put again under it finds it there.
            let inserted = tx
                .query_opt(
                    "INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (namespace, idem_key) DO NOTHING RETURNING id",
                    &[&namespace, &id, &key, &session_ref, &summary, &keywords, &super::now()],
                )
                .await
                .map_err(backend("storing a memory"))?;
            match inserted {
                Some(row) => Ok(row.get(0)),
                None => tx
                    .query_opt(
                        "SELECT id FROM planlock_memories WHERE namespace = $1 AND idem_key = $2",
                        &[&namespace, &key.as_str()],
                    )
                    .await
                    .map_err(backend("storing a memory"))?
                    .map(|row| row.get(0))
                    .ok_or_else(|| StoreError::Backend("storing a memory: its key was taken, its row is gone".into())),
            }
        })
        .await
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
    /// read.
    async fn load(
        &self,
        call: &Call<'_>,
        _input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        if let Some(cycle) = self.cycle(call)
            && let Some(kept) = cycle.take_kept().await
        {
            return Ok(DecisionContext::in_scope(&kept.decisions, &kept.links, current_domain));
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
        Ok(active.map(|a| DecisionContext::in_scope(&a.decisions, &a.links, current_domain)).unwrap_or_default())
    }
}

impl DecisionWritePort for PgStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        let (doing, key) = ("storing a decision", call.key()?);
        self.write(call, doing, async |tx: &mut Conn, namespace: &str| {
            write::persist_decision(&mut Rows { tx, namespace, doing }, decision, key).await
        })
        .await
    }

    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        let (doing, key) = ("storing evidence", call.key()?);
        self.write(call, doing, async |tx: &mut Conn, namespace: &str| {
            write::persist_evidence(&mut Rows { tx, namespace, doing }, evidence, key).await
        })
        .await
    }

    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        let (doing, key) = ("linking", call.key()?);
        self.write(call, doing, async |tx: &mut Conn, namespace: &str| {
            write::link(&mut Rows { tx, namespace, doing }, anchor, key).await
        })
        .await
    }
}

/// The decision rows of a namespace, in the write's transaction. Each phase of a write is one
/// batch: the key's claim and the reads; the changes and the key's record.
struct Rows<'a> {
    tx: &'a mut Conn,
    namespace: &'a str,
    doing: &'static str,
}

/// The statement of a [`Read`], for `namespace`.
fn read_query<'q>(namespace: &'q &'q str, read: &'q Read<'q>) -> Query<'q> {
    let sql = match read {
        Read::Decision(_) => {
            concat!("SELECT ", decision_columns!(), " FROM planlock_decisions WHERE namespace = $1 AND id = $2")
        }
        Read::ActiveVersions(_) => concat!(
            "SELECT ",
            decision_columns!(),
            " FROM planlock_decisions WHERE namespace = $1 AND root_id = $2 AND is_active FOR UPDATE"
        ),
        Read::Evidence(_) => "SELECT summary, source FROM planlock_evidence WHERE namespace = $1 AND id = $2",
        Read::Exists(End::Decision, _) => "SELECT 1 FROM planlock_decisions WHERE namespace = $1 AND id = $2",
        Read::Exists(End::Evidence, _) => "SELECT 1 FROM planlock_evidence WHERE namespace = $1 AND id = $2",
    };
    let id = match read {
        Read::Decision(id) | Read::ActiveVersions(id) | Read::Evidence(id) | Read::Exists(_, id) => id,
    };
    Query::new(sql, &[namespace, id])
}

/// What the rows of a [`Read`]'s statement answer.
fn answer(read: &Read<'_>, rows: &[tokio_postgres::Row]) -> Answer {
    match read {
        Read::Decision(_) => Answer::Decision(rows.first().map(decision_row)),
        Read::ActiveVersions(_) => Answer::ActiveVersions(rows.iter().map(decision_row).collect()),
        Read::Evidence(_) => Answer::Evidence(rows.first().map(|r| (r.get(0), r.get(1)))),
        Read::Exists(..) => Answer::Exists(!rows.is_empty()),
    }
}

/// The values of a [`Change`]'s statement that are not in it as they are.
#[derive(Default)]
struct ChangeValues<'c> {
    version: i64,
    kind: &'static str,
    domain: Option<&'c str>,
}

impl<'c> ChangeValues<'c> {
    fn of(change: &Change<'c>) -> ChangeValues<'c> {
        match change {
            Change::InsertDecision(d) => {
                let (kind, domain) = Scope::of(&d.scope).columns();
                ChangeValues { version: i64::try_from(d.version.get()).unwrap_or(i64::MAX), kind, domain }
            }
            _ => ChangeValues::default(),
        }
    }
}

/// The statement of a [`Change`], for `namespace`; each returns a row when it changed one.
fn change_query<'q>(
    namespace: &'q &'q str,
    change: &'q Change<'q>,
    values: &'q ChangeValues<'q>,
    now: &'q String,
) -> Query<'q> {
    match change {
        Change::Deactivate(id) => Query::new(
            "UPDATE planlock_decisions SET is_active = false WHERE namespace = $1 AND id = $2 AND is_active RETURNING 1",
            &[namespace, id],
        ),
        Change::InsertDecision(d) => Query::new(
            "INSERT INTO planlock_decisions
               (namespace, id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, $10) RETURNING 1",
            &[
                namespace,
                &d.id,
                &d.root_id,
                &values.version,
                &d.text,
                &d.strength,
                &values.kind,
                &values.domain,
                &d.previous_version_id,
                now,
            ],
        ),
        Change::InsertEvidence(e) => Query::new(
            "INSERT INTO planlock_evidence (namespace, id, summary, source) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING RETURNING 1",
            &[namespace, &e.id, &e.summary, &e.source],
        ),
        Change::InsertLink(a) => Query::new(
            "INSERT INTO planlock_decision_evidence (namespace, decision_id, evidence_id) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING RETURNING 1",
            &[namespace, &a.decision_id, &a.evidence_id],
        ),
    }
}

impl WriteRows for Rows<'_> {
    /// The key's claim (`planlock_claim_write`: its lock and what it returned) and the reads,
    /// in one round trip: two workers writing one key at once take turns, one writes and the
    /// other finds its result.
    async fn read(
        &mut self,
        key: Option<&IdempotencyKey>,
        reads: &[Read<'_>],
    ) -> Result<(Option<String>, Vec<Answer>), StoreError> {
        let (namespace, key) = (self.namespace, key.map(ToString::to_string));
        let mut batch = Vec::with_capacity(reads.len() + 1);
        if let Some(key) = &key {
            batch.push(Query::new("SELECT planlock_claim_write($1, $2)", &[&namespace, key]));
        }
        batch.extend(reads.iter().map(|read| read_query(&namespace, read)));
        let mut rows = self.tx.pipeline(&batch, Then::Stay).await.map_err(backend(self.doing))?.into_iter();
        if key.is_some() {
            let claimed = rows.next().unwrap_or_default();
            if let Some(done) = claimed.first().and_then(|row| row.get::<_, Option<String>>(0)) {
                return Ok((Some(done), Vec::new()));
            }
        }
        Ok((None, reads.iter().zip(rows).map(|(read, rows)| answer(read, &rows)).collect()))
    }

    /// The changes and the key's record, in one round trip.
    async fn apply(
        &mut self,
        changes: &[Change<'_>],
        key: &IdempotencyKey,
        result: &str,
    ) -> Result<Vec<bool>, StoreError> {
        let (namespace, key, now) = (self.namespace, key.to_string(), super::now());
        let values: Vec<ChangeValues<'_>> = changes.iter().map(ChangeValues::of).collect();
        let mut batch: Vec<Query<'_>> = changes
            .iter()
            .zip(&values)
            .map(|(change, values)| change_query(&namespace, change, values, &now))
            .collect();
        batch.push(Query::new(
            "INSERT INTO planlock_writes (namespace, idem_key, result) VALUES ($1, $2, $3)",
            &[&namespace, &key, &result],
        ));
        let rows = self.tx.pipeline(&batch, Then::Stay).await.map_err(backend(self.doing))?;
        Ok(rows.iter().take(changes.len()).map(|rows| !rows.is_empty()).collect())
    }
}
