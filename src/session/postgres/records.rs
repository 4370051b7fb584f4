//! [`PgRecords`]: a session's records in the database, read and decided on without its lease;
//! and the paused sessions the inbox lists.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use tokio_postgres::types::Type;

use super::{Column, check_key};
use crate::pg::{Param, PgDatabase, Query, Then};
use crate::session::OpenError;
use crate::session::{
    ApprovalEvent, ApprovalLog, BundlePinV1, Decisions, History, InterventionRecord, PauseRef, Recorded,
    ReservedSession, ReviewDecision, SessionError, SessionRecords, SessionSnapshot, SessionState, StoreFuture,
};

/// The most approval log events read back for one session (its latest).
const MAX_LOG_EVENTS: i64 = 10_000;

/// The records of a session in the database, read without its lease (a worker may hold it):
/// what `status`, `memory search` and `decisions` read, and where a person's decision goes;
/// see [`SessionRecords`]. Its calls wait for the server on planlock's I/O runtime.
///
/// ```no_run
/// use planlock::pg::PgDatabase;
/// use planlock::session::SessionRecords;
/// use planlock::session::postgres::PgRecords;
/// let db = PgDatabase::connect("postgres://planlock@db.internal/planlock")?;
/// let records = PgRecords::new(&db, "tenant-7/conversation-42")?;
/// let paused = planlock::block_on(records.load_intervention())?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PgRecords {
    pub(crate) db: PgDatabase,
    pub(crate) key: String,
}

impl PgRecords {
    /// The records of session `key` (1 to 256 bytes).
    pub fn new(db: &PgDatabase, key: &str) -> Result<PgRecords, OpenError> {
        check_key(key)?;
        Ok(PgRecords { db: db.clone(), key: key.to_owned() })
    }

    /// Runs `sql` on a connection of the pool: its rows.
    async fn query(
        &self,
        doing: &'static str,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<tokio_postgres::Row>, SessionError> {
        let failed = |reason: String| SessionError::Database { key: self.key.clone(), reason };
        let mut conn = self.db.connection().await.map_err(|e| failed(e.to_string()))?;
        conn.query_typed(sql, params)
            .await
            .map_err(|e| failed(format!("PostgreSQL at {}: {doing}: {}", self.db.target(), crate::pg::reason(&e))))
    }

    /// Whether the database has a row for the key (a session that was opened once).
    pub(crate) async fn exists(&self) -> Result<bool, SessionError> {
        let sql = "SELECT 1 FROM planlock_sessions WHERE planlock_mine(tenant) AND session_key = $1";
        Ok(!self.query("looking for the session", sql, &[(&self.key, Type::TEXT)]).await?.is_empty())
    }

    /// Reads one JSON column of the key's row, strictly; `None` without a row or a value.
    pub(super) async fn read<T: DeserializeOwned>(&self, column: Column) -> Result<Option<T>, SessionError> {
        let rows = self.read_columns(&[column]).await?;
        match rows.first() {
            Some(row) => self.cell(row, 0, column),
            None => Ok(None),
        }
    }

    /// The key's row with `columns` (each as [`cell`](Self::cell) reads it), in one statement;
    /// none without a row.
    async fn read_columns(&self, columns: &[Column]) -> Result<Vec<tokio_postgres::Row>, SessionError> {
        // A text longer than the file store would read of the same record is not sent: it is
        // refused, as a file that large is (each column's cap a parameter, from $2).
        let cells: Vec<String> = (columns.iter().enumerate())
            .map(|(i, c)| {
                format!("CASE WHEN octet_length({0}) <= ${1} THEN {0} END, octet_length({0})", c.name(), i + 2)
            })
            .collect();
        let sql = format!(
            "SELECT {} FROM planlock_sessions WHERE planlock_mine(tenant) AND session_key = $1",
            cells.join(", ")
        );
        let caps: Vec<i64> = columns.iter().map(|c| i64::try_from(c.cap()).unwrap_or(i64::MAX)).collect();
        let mut params: Vec<Param<'_>> = vec![(&self.key, Type::TEXT)];
        params.extend(caps.iter().map(|cap| (cap as _, Type::INT8)));
        self.query("reading the session", &sql, &params).await
    }

    /// The `i`-th column read by [`read_columns`](Self::read_columns), parsed strictly.
    fn cell<T: DeserializeOwned>(
        &self,
        row: &tokio_postgres::Row,
        i: usize,
        column: Column,
    ) -> Result<Option<T>, SessionError> {
        match (row.get::<_, Option<String>>(2 * i), row.get::<_, Option<i32>>(2 * i + 1)) {
            (Some(text), _) => self.parse(column.what(), &text).map(Some),
            (None, Some(len)) => Err(SessionError::CorruptRow {
                key: self.key.clone(),
                what: column.what(),
                problem: format!("it is {len} bytes long; at most {} are read", column.cap()),
            }),
            (None, None) => Ok(None),
        }
    }

    /// The session's five records, in one statement.
    async fn snapshot_now(&self) -> Result<SessionSnapshot, SessionError> {
        use Column::{Intervention, Pin, Plan, Reserved, State};
        let rows = self.read_columns(&[State, Intervention, Reserved, Pin, Plan]).await?;
        let Some(row) = rows.first() else { return Ok(SessionSnapshot::default()) };
        Ok(SessionSnapshot {
            state: self.cell(row, 0, State)?,
            intervention: self.cell(row, 1, Intervention)?,
            reserved: self.cell(row, 2, Reserved)?,
            pin: self.cell(row, 3, Pin)?,
            plan: self.cell(row, 4, Plan)?,
        })
    }

    /// A stored JSON text, read strictly.
    pub(crate) fn parse<T: DeserializeOwned>(&self, what: &'static str, text: &str) -> Result<T, SessionError> {
        serde_json::from_str(text).map_err(|e| SessionError::CorruptRow {
            key: self.key.clone(),
            what,
            problem: crate::text::printable(&e.to_string()).into_owned(),
        })
    }

    /// Inserts `event` into the approval log as `kind` unless the pause has one of that kind
    /// (the unique indexes decide, in one statement): whether it was inserted.
    async fn insert_event(&self, event: &ApprovalEvent, kind: &str) -> Result<bool, SessionError> {
        let pause = serde_json::to_string(event.pause()).unwrap_or_default();
        let text = serde_json::to_string(event).unwrap_or_default();
        let sql = format!(
            "INSERT INTO planlock_approval_log (session_key, pause, kind, event) VALUES ($1, $2, $3, $4)
             ON CONFLICT (session_key, pause, tenant) WHERE kind = '{kind}' DO NOTHING RETURNING 1"
        );
        let params: [Param<'_>; 4] =
            [(&self.key, Type::TEXT), (&pause, Type::TEXT), (&kind, Type::TEXT), (&text, Type::TEXT)];
        Ok(!self.query("appending to the approval log", &sql, &params).await?.is_empty())
    }

    /// Records `decision` by [`ApprovalLog::tally`], in one transaction that holds the pause's
    /// advisory lock (deciders of one pause take turns: no approval counted twice or lost): the
    /// pause's events read, the new ones inserted, committed. The unique indexes (one decision
    /// a pause, one approval a person) hold even without the lock.
    async fn record(&self, decision: &ReviewDecision, required: usize) -> Result<Recorded, SessionError> {
        let pause = serde_json::to_string(&decision.pause).unwrap_or_default();
        let failed = |e: tokio_postgres::Error| SessionError::Database {
            key: self.key.clone(),
            reason: format!("PostgreSQL at {}: recording a decision: {}", self.db.target(), crate::pg::reason(&e)),
        };
        let mut conn = self
            .db
            .connection()
            .await
            .map_err(|e| SessionError::Database { key: self.key.clone(), reason: e.to_string() })?;
        conn.begin("BEGIN");
        let read = [
            Query::typed(
                "SELECT pg_advisory_xact_lock(hashtextextended(planlock_tenant() || $1 || $2, 7))",
                &[(&self.key, Type::TEXT), (&pause, Type::TEXT)],
            ),
            Query::typed(
                "SELECT event FROM planlock_approval_log WHERE planlock_mine(tenant) AND session_key = $1 AND pause = $2 ORDER BY seq",
                &[(&self.key, Type::TEXT), (&pause, Type::TEXT)],
            ),
        ];
        let rows = conn.pipeline(&read, Then::Stay).await.map_err(failed)?;
        let log = ApprovalLog::parse(rows[1].iter().map(|r| r.get::<_, String>(0)));
        let (recorded, events) = log.tally(decision, required)?;
        // One vote a person per pause and digest (the index's second wall): an edit restarts
        // the count on its own digest, where the same person approves again.
        let texts: Vec<(String, &str, Option<String>)> = events
            .iter()
            .map(|event| {
                let (kind, voter) = match event {
                    ApprovalEvent::Voted { decision, .. } => match decision.approves() {
                        Some(digest) if decision.edit.is_some() || digest_edited(&log, decision) => {
                            ("vote", Some(format!("{} {digest}", decision.by)))
                        }
                        _ => ("vote", Some(decision.by.clone())),
                    },
                    _ => ("decided", None),
                };
                (serde_json::to_string(event).unwrap_or_default(), kind, voter)
            })
            .collect();
        let writes: Vec<Query<'_>> = texts
            .iter()
            .map(|(text, kind, voter)| {
                Query::typed(
                    "INSERT INTO planlock_approval_log (session_key, pause, kind, event, voter) VALUES ($1, $2, $3, $4, $5)",
                    &[
                        (&self.key, Type::TEXT),
                        (&pause, Type::TEXT),
                        (kind, Type::TEXT),
                        (text, Type::TEXT),
                        (voter, Type::TEXT),
                    ],
                )
            })
            .collect();
        conn.pipeline(&writes, Then::Commit).await.map_err(failed)?;
        Ok(recorded)
    }

    /// The newest [`MAX_LOG_EVENTS`] events of the log of kinds `kinds` (an SQL condition), oldest
    /// first.
    async fn log_of(&self, what: &'static str, kinds: &'static str) -> Result<ApprovalLog, SessionError> {
        let sql = format!(
            "SELECT event FROM (SELECT seq, event FROM planlock_approval_log WHERE planlock_mine(tenant) AND session_key = $1 AND {kinds}
             ORDER BY seq DESC LIMIT $2) latest ORDER BY seq"
        );
        let doing = if what == "notices" { "reading the notices" } else { "reading the approval log" };
        let rows = self.query(doing, &sql, &[(&self.key, Type::TEXT), (&MAX_LOG_EVENTS, Type::INT8)]).await?;
        Ok(ApprovalLog::parse(rows.iter().map(|r| r.get::<_, String>(0))))
    }
}

/// Logs the `paused` notice of the pause `$2` (a `PauseRef`'s JSON) of session `$1`, made from
/// the record still on the session's row, unless it is logged already: sent before the pause's
/// outcome ([`OUTCOME_SQL`]), so every pause's making is logged before its end.
pub(super) const PAUSED_NOTICE_SQL: &str = "INSERT INTO planlock_approval_log (session_key, pause, kind, event)
     SELECT session_key, $2, 'paused', planlock_paused_event(intervention) FROM planlock_sessions
     WHERE planlock_mine(tenant) AND session_key = $1 AND intervention IS NOT NULL
       AND (planlock_paused_event(intervention)::jsonb -> 'pause') = $2::jsonb
     ON CONFLICT (session_key, pause, tenant) WHERE kind = 'paused' DO NOTHING";

/// Logs the outcome `$3` of the pause `$2` of session `$1` once: a row when it was logged now.
pub(super) const OUTCOME_SQL: &str =
    "INSERT INTO planlock_approval_log (session_key, pause, kind, event) VALUES ($1, $2, 'outcome', $3)
     ON CONFLICT (session_key, pause, tenant) WHERE kind = 'outcome' DO NOTHING RETURNING 1";

impl SessionRecords for PgRecords {
    fn snapshot(&self) -> StoreFuture<'_, SessionSnapshot> {
        Box::pin(self.snapshot_now())
    }
    fn load(&self) -> StoreFuture<'_, Option<SessionState>> {
        Box::pin(self.read(Column::State))
    }
    fn load_intervention(&self) -> StoreFuture<'_, Option<InterventionRecord>> {
        Box::pin(self.read(Column::Intervention))
    }
    fn load_reserved(&self) -> StoreFuture<'_, Option<ReservedSession>> {
        Box::pin(self.read(Column::Reserved))
    }
    fn load_pin(&self) -> StoreFuture<'_, Option<BundlePinV1>> {
        Box::pin(self.read(Column::Pin))
    }
    fn load_plan(&self) -> StoreFuture<'_, Option<crate::session::PlanDocument>> {
        Box::pin(self.read(Column::Plan))
    }
    fn decisions_on<'a>(&'a self, pause: &'a PauseRef) -> StoreFuture<'a, Decisions> {
        Box::pin(async move {
            let text = serde_json::to_string(pause).unwrap_or_default();
            let rows = self
                .query(
                    "reading the decisions",
                    "SELECT event FROM planlock_approval_log
                     WHERE planlock_mine(tenant) AND session_key = $1 AND pause = $2 AND kind IN ('decided', 'vote') ORDER BY seq",
                    &[(&self.key, Type::TEXT), (&text, Type::TEXT)],
                )
                .await?;
            Ok(ApprovalLog::parse(rows.iter().map(|r| r.get::<_, String>(0))).decisions_on(pause))
        })
    }
    fn record_decision<'a>(&'a self, decision: &'a ReviewDecision, required: usize) -> StoreFuture<'a, Recorded> {
        Box::pin(self.record(decision, required))
    }
    /// The pause's `paused` notice, made from its record on the session's row (the outcome is
    /// logged before the record is removed or replaced), is logged first, in the same round trip
    /// (unless a sender logged it already).
    fn log_outcome<'a>(&'a self, outcome: &'a ApprovalEvent) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let pause = serde_json::to_string(outcome.pause()).unwrap_or_default();
            let text = serde_json::to_string(outcome).unwrap_or_default();
            let failed = |e: tokio_postgres::Error| SessionError::Database {
                key: self.key.clone(),
                reason: format!("PostgreSQL at {}: logging an outcome: {}", self.db.target(), crate::pg::reason(&e)),
            };
            let mut conn = self
                .db
                .connection()
                .await
                .map_err(|e| SessionError::Database { key: self.key.clone(), reason: e.to_string() })?;
            let notice: [Param<'_>; 2] = [(&self.key, Type::TEXT), (&pause, Type::TEXT)];
            let logged: [Param<'_>; 3] = [(&self.key, Type::TEXT), (&pause, Type::TEXT), (&text, Type::TEXT)];
            let batch = [Query::typed(PAUSED_NOTICE_SQL, &notice), Query::typed(OUTCOME_SQL, &logged)];
            let rows = conn.pipeline(&batch, Then::Stay).await.map_err(failed)?;
            Ok(rows.last().is_some_and(|rows| !rows.is_empty()))
        })
    }
    fn log_notice<'a>(&'a self, notice: &'a ApprovalEvent) -> StoreFuture<'a, bool> {
        Box::pin(self.insert_event(notice, notice.name()))
    }
    fn notices(&self) -> StoreFuture<'_, ApprovalLog> {
        Box::pin(self.log_of("notices", "kind IN ('paused', 'expiryNoticed')"))
    }
    fn approval_log(&self) -> StoreFuture<'_, ApprovalLog> {
        Box::pin(self.log_of("approval log", "kind IN ('decided', 'outcome', 'vote')"))
    }
    fn installed_access(&self) -> StoreFuture<'_, Option<crate::session::InstalledAccess>> {
        Box::pin(async move {
            super::installed_access(&self.db)
                .await
                .map_err(|e| SessionError::Database { key: self.key.clone(), reason: e.to_string() })
        })
    }
    fn history(&self, limit: usize) -> StoreFuture<'_, History> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = self
                .query(
                    "reading the cycle history",
                    "SELECT entry FROM planlock_cycle_history WHERE planlock_mine(tenant) AND session_key = $1 ORDER BY seq DESC LIMIT $2",
                    &[(&self.key, Type::TEXT), (&limit, Type::INT8)],
                )
                .await?;
            let entries: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            // Newest first already: parsed oldest first, as a file's lines are.
            Ok(History::of_lines(entries.iter().rev().map(String::as_str), entries.len()))
        })
    }
}

/// A paused session's record and what is decided on it, or why they cannot be read.
pub(crate) type PausedSession = (String, Result<(InterventionRecord, Decisions), SessionError>);

/// Every paused session of `db` (at most `max`): its key, and its record with the decision on
/// it (or why they cannot be read). Two statements: the sessions with a record, through a
/// partial index, then the decisions logged for those sessions.
pub(crate) async fn paused_sessions(db: &PgDatabase, max: usize) -> Result<Vec<PausedSession>, SessionError> {
    let limit = i64::try_from(max).unwrap_or(i64::MAX);
    let failed = |reason: String| SessionError::Database { key: "(every session)".into(), reason };
    let (rows, decided) = async {
        let mut conn = db.connection().await.map_err(|e| failed(e.to_string()))?;
        let failed = |e: tokio_postgres::Error| {
            failed(format!("PostgreSQL at {}: listing paused sessions: {}", db.target(), crate::pg::reason(&e)))
        };
        let rows = conn
            .query_typed(
                "SELECT session_key, intervention FROM planlock_sessions WHERE planlock_mine(tenant) AND intervention IS NOT NULL LIMIT $1",
                &[(&limit, Type::INT8)],
            )
            .await
            .map_err(failed)?;
        let keys: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let decided = conn
            .query_typed(
                "SELECT session_key, pause, event FROM planlock_approval_log
                 WHERE planlock_mine(tenant) AND kind IN ('decided', 'vote') AND session_key = ANY($1) ORDER BY seq",
                &[(&keys, Type::TEXT_ARRAY)],
            )
            .await
            .map_err(failed)?;
        Ok::<_, SessionError>((rows, decided))
    }
    .await?;
    let mut events: HashMap<(String, String), Vec<String>> = HashMap::new();
    for r in &decided {
        events.entry((r.get(0), r.get(1))).or_default().push(r.get(2));
    }
    Ok(rows
        .iter()
        .map(|row| {
            let key: String = row.get(0);
            let records = PgRecords { db: db.clone(), key: key.clone() };
            let read = records.parse::<InterventionRecord>("intervention record", &row.get::<_, String>(1)).and_then(
                |record| {
                    let pause = PauseRef::of(&record);
                    let text = serde_json::to_string(&pause).unwrap_or_default();
                    let lines = events.get(&(key.clone(), text)).map(Vec::as_slice).unwrap_or_default();
                    for line in lines {
                        // An event that cannot be read is corrupt, as the record would be.
                        records.parse::<ApprovalEvent>("approval log event", line)?;
                    }
                    Ok((record, ApprovalLog::parse(lines).decisions_on(&pause)))
                },
            );
            (key, read)
        })
        .collect())
}

/// A page of `db`'s sessions for the overview, in one statement: each session's status computed
/// by the server (paused or expired from its record, halted from its last history row's class),
/// ordered paused, expired, halted, ready, then most recently active first; filtered to
/// `status` (its name); `offset` and `limit`. The rows' records, and how many matched in all.
pub(crate) async fn session_page(
    db: &PgDatabase,
    status: Option<&str>,
    words: &[String],
    offset: usize,
    limit: usize,
) -> Result<(Vec<OverviewRow>, usize), SessionError> {
    let patterns = crate::pg::like_patterns(words);
    let (offset, limit) = (i64::try_from(offset).unwrap_or(i64::MAX), i64::try_from(limit).unwrap_or(i64::MAX));
    let failed = |reason: String| SessionError::Database { key: "(every session)".into(), reason };
    let mut conn = db.connection().await.map_err(|e| failed(e.to_string()))?;
    // The order comes from the sessions' rows alone (their last cycle's outcome is kept there);
    // the records' texts are read for the page's rows only. The count is its own aggregate (a
    // second scan of the rows, cheaper than keeping them), so the page is the top of a bounded
    // sort (a window count over every row would sort them all).
    // Statuses as ranks in their order (paused, expired, halted, ready), from columns alone: a
    // pause's expiry is kept beside its record (schema 7), so no record is parsed to order them.
    let sql = "WITH page AS (
           SELECT session_key,
                  CASE WHEN intervention IS NULL THEN (CASE WHEN last_class = 'FailFast' THEN 2 ELSE 3 END)
                       WHEN pause_expires_at < now() THEN 1
                       ELSE 0 END AS rank,
                  GREATEST(updated_at, last_cycle_at) AS active
           FROM planlock_sessions
           WHERE planlock_mine(tenant) AND (state IS NOT NULL OR intervention IS NOT NULL OR last_cycle_at IS NOT NULL)
             AND (cardinality($4::text[]) = 0 OR session_key ILIKE ALL($4::text[]))),
         matching AS {kept} (
           SELECT * FROM page
           WHERE $1::text IS NULL OR rank = array_position(ARRAY['paused', 'expired', 'halted', 'ready'], $1) - 1),
         chosen AS (SELECT session_key, rank, active FROM matching ORDER BY rank, active DESC, session_key OFFSET $2 LIMIT $3)
         SELECT c.session_key, s.state, s.intervention,
                (SELECT entry FROM planlock_cycle_history
                 WHERE planlock_mine(tenant) AND session_key = c.session_key ORDER BY seq DESC LIMIT 1),
                (SELECT count(*) FROM matching)
         FROM chosen c JOIN planlock_sessions s ON s.session_key = c.session_key AND planlock_mine(s.tenant)
         ORDER BY c.rank, c.active DESC, c.session_key";
    // A search's matches are kept for the count (its `ILIKE` runs once a row); without one, the
    // rows are scanned twice, which costs less than keeping them.
    let sql = sql.replace("{kept}", if words.is_empty() { "NOT MATERIALIZED" } else { "MATERIALIZED" });
    let rows = conn
        .query_typed(
            &sql,
            &[(&status, Type::TEXT), (&offset, Type::INT8), (&limit, Type::INT8), (&patterns, Type::TEXT_ARRAY)],
        )
        .await
        .map_err(|e| failed(format!("PostgreSQL at {}: listing sessions: {}", db.target(), crate::pg::reason(&e))))?;
    let total = rows.first().map_or(0, |r| r.get::<_, i64>(4).max(0) as usize);
    Ok((
        rows.iter()
            .map(|r| OverviewRow { key: r.get(0), state: r.get(1), intervention: r.get(2), entry: r.get(3) })
            .collect(),
        total,
    ))
}

/// One session's row of the overview: its key and the texts of its records.
pub(crate) struct OverviewRow {
    pub(crate) key: String,
    pub(crate) state: Option<String>,
    pub(crate) intervention: Option<String>,
    pub(crate) entry: Option<String>,
}

/// Whether `decision` approves an edit of its pause (one `log` holds): its vote is then kept
/// apart from the same person's vote on what the pause showed before.
fn digest_edited(log: &ApprovalLog, decision: &ReviewDecision) -> bool {
    log.latest_edit(&decision.pause).is_some_and(|edit| Some(edit.digest) == decision.approves())
}
