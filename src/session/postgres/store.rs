//! The [`PgSessionStore`] itself: its lease, its cycles and their end in one round trip.

use std::time::Duration;

use serde::Serialize;
use tokio_postgres::types::Type;
use uuid::Uuid;

use super::{PgRecords, records};
use crate::exec::Held;
use crate::pg::PgSession;
use crate::pg::cycle::PgCycle;
use crate::pg::writes::PendingWrite;
use crate::pg::{Param, PgDatabase, Pooled, Query, Then};
use crate::session::WriteFailure;
use crate::session::{
    ApprovalEvent, CycleEntry, CycleGuard, EndOfCycle, HistoryEntry, Leaves, OpenError, ReservedSession, SessionError,
    SessionRecords, SessionState, SessionStore, StoreFuture,
};

/// How long a lease runs unless configured otherwise; every write extends it.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The longest session key accepted, in bytes.
pub const MAX_SESSION_KEY_BYTES: usize = 256;

/// The columns of a session row a store reads and writes as JSON.
#[derive(Debug, Clone, Copy)]
pub(super) enum Column {
    State,
    Intervention,
    Reserved,
    Pin,
    Plan,
}

impl Column {
    pub(super) fn name(self) -> &'static str {
        match self {
            Column::State => "state",
            Column::Intervention => "intervention",
            Column::Reserved => "reserved",
            Column::Pin => "pin",
            Column::Plan => "plan",
        }
    }
    /// The longest text read from it: what the file store reads of the same record.
    pub(super) fn cap(self) -> u64 {
        match self {
            Column::Intervention => crate::session::MAX_INTERVENTION_FILE_BYTES,
            Column::Plan => crate::session::MAX_PLAN_FILE_BYTES,
            Column::State | Column::Reserved | Column::Pin => crate::session::MAX_SESSION_FILE_BYTES,
        }
    }
    pub(super) fn what(self) -> &'static str {
        match self {
            Column::State => "session state",
            Column::Intervention => "intervention record",
            Column::Reserved => "reserved session id",
            Column::Pin => "bundle pin",
            Column::Plan => "plan",
        }
    }
}

/// A session held in PostgreSQL under a lease; see the [module docs](super).
///
/// ```no_run
/// use planlock::pg::PgDatabase;
/// use planlock::session::postgres::PgSessionStore;
///
/// let db = PgDatabase::connect("postgres://planlock@db.internal/planlock")?;
/// let store = PgSessionStore::open(&db, "tenant-7/conversation-42")?; // takes the lease
/// // Runtime::builder(policy_root, plan, store) … as with the file store.
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PgSessionStore {
    records: PgRecords,
    owner: Uuid,
    lease: Duration,
    /// Whether a runtime has claimed this store.
    claimed: std::sync::atomic::AtomicBool,
    /// The session's database and key, for the stores opened for it.
    session: PgSession,
    /// The `row_version` this worker last read or wrote (what its next write expects): held
    /// through a write, so a write's check and its new version go together.
    seen: tokio::sync::Mutex<i64>,
    /// Whether this store took the lease (and gives it back when dropped).
    holds_lease: bool,
}

/// How a write of the session store meets the cycle.
enum InCycle {
    /// On a connection of its own, committed alone.
    Alone,
    /// In the cycle's transaction if its writes began one, which it then commits (the session
    /// save, and the record of a paused cycle with the writes of the steps before the pause).
    Commit(Box<PgCycle>),
}

impl std::fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessionStore")
            .field("db", &self.records.db)
            .field("key", &self.records.key)
            .field("owner", &self.owner)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl PgSessionStore {
    /// The session `key`, its lease taken for [`DEFAULT_LEASE`].
    pub fn open(db: &PgDatabase, key: &str) -> Result<PgSessionStore, OpenError> {
        PgSessionStore::open_with_lease(db, key, DEFAULT_LEASE)
    }

    /// The session `key`, its lease taken for `lease` (extended by every write). Creates the row
    /// if there is none; a new row holds no session (Cold Start).
    pub fn open_with_lease(db: &PgDatabase, key: &str, lease: Duration) -> Result<PgSessionStore, OpenError> {
        crate::io::block_on(PgSessionStore::open_async(db, key, lease))
    }

    /// [`open_with_lease`](Self::open_with_lease), awaited.
    pub async fn open_async(db: &PgDatabase, key: &str, lease: Duration) -> Result<PgSessionStore, OpenError> {
        let records = PgRecords::new(db, key)?;
        let mut store = PgSessionStore {
            records,
            owner: Uuid::new_v4(),
            lease,
            claimed: std::sync::atomic::AtomicBool::new(false),
            session: PgSession::new(db, key),
            seen: tokio::sync::Mutex::new(0),
            holds_lease: false,
        };
        let lease_secs = lease.as_secs_f64();
        let mut conn = store.connection().await?;
        let taken = conn
            .query_typed_opt(
                "INSERT INTO planlock_sessions AS s (session_key, lease_owner, lease_until)
                 VALUES ($1, $2, now() + make_interval(secs => $3))
                 ON CONFLICT (session_key, tenant) DO UPDATE
                   SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
                   WHERE s.lease_owner IS NULL OR s.lease_until < now()
                 RETURNING row_version",
                &[(&store.records.key, Type::TEXT), (&store.owner, Type::UUID), (&lease_secs, Type::FLOAT8)],
            )
            .await
            .map_err(|e| store.database("taking the lease", &e))?;
        if let Some(row) = taken {
            *store.seen.get_mut() = row.get(0);
            drop(conn);
            store.holds_lease = true;
            return Ok(store);
        }
        let holder = conn
            .query_typed_opt(
                "SELECT lease_owner, GREATEST(EXTRACT(EPOCH FROM lease_until - now())::float8, 0)
                 FROM planlock_sessions WHERE planlock_mine(tenant) AND session_key = $1",
                &[(&store.records.key, Type::TEXT)],
            )
            .await
            .map_err(|e| store.database("reading the lease", &e))?;
        let (owner, seconds_left) = holder
            .map(|row| (row.get::<_, Option<Uuid>>(0).unwrap_or_default(), row.get::<_, f64>(1)))
            .unwrap_or_default();
        Err(OpenError::LeaseHeld { key: store.records.key.clone(), owner, seconds_left })
    }

    /// The session key.
    pub fn key(&self) -> &str {
        &self.records.key
    }

    /// This worker's id, as the lease names it.
    pub fn owner(&self) -> Uuid {
        self.owner
    }

    /// The database.
    pub fn database_of(&self) -> &PgDatabase {
        &self.records.db
    }

    /// The session's database and key, for the stores opened for it
    /// ([`StrategyResolver::resolve_for_session`](crate::store::bundle::StrategyResolver::resolve_for_session)).
    pub fn session(&self) -> &PgSession {
        &self.session
    }

    /// Extends the lease without writing anything else; [`SessionError::Fenced`] if it was taken
    /// over. A cycle longer than the lease should renew it.
    pub fn renew(&self) -> Result<(), SessionError> {
        crate::io::block_on(self.write("renewing the lease", "lease_owner = lease_owner", &[], InCycle::Alone))
    }

    async fn connection(&self) -> Result<Pooled, SessionError> {
        let key = self.records.key.clone();
        self.records.db.connection().await.map_err(|e| SessionError::Database { key, reason: e.to_string() })
    }

    /// The refusal of a cycle another session's store began.
    fn foreign(&self) -> SessionError {
        SessionError::ForeignCycle { place: format!("session key {}", crate::text::printable(&self.records.key)) }
    }

    fn database(&self, doing: &'static str, e: &tokio_postgres::Error) -> SessionError {
        let reason = format!("PostgreSQL at {}: {doing}: {}", self.records.db.target(), crate::pg::reason(e));
        SessionError::Database { key: self.records.key.clone(), reason }
    }

    /// One compare-and-set write: `set` (SQL assignments whose parameters start at `$5`), only
    /// if the row is still at the version this worker saw and its lease is still this worker's;
    /// otherwise the statement raises (`planlock_fenced`): [`SessionError::Fenced`].
    async fn write(
        &self,
        doing: &'static str,
        set: &str,
        params: &[Param<'_>],
        in_cycle: InCycle,
    ) -> Result<(), SessionError> {
        self.write_with(doing, set, params, in_cycle, Ending::default()).await
    }

    /// [`write`](Self::write), with what ends a cycle in the same batch: the pause's outcome
    /// before it, the cycle's history entry (and how many to keep) after it; in the cycle's
    /// transaction, committed or rolled back with it.
    async fn write_with(
        &self,
        doing: &'static str,
        set: &str,
        params: &[Param<'_>],
        in_cycle: InCycle,
        Ending { outcome, entry }: Ending,
    ) -> Result<(), SessionError> {
        let mut seen = self.seen.lock().await;
        let outcome = outcome
            .map(|o| Ok::<_, SessionError>((self.json("approval event", o.pause())?, self.json("approval event", &o)?)))
            .transpose()?;
        let history = entry.filter(|(_, keep)| *keep > 0).map(|(entry, keep)| HistoryRow::of(&entry, keep));
        // With the cycle's history entry, the compare-and-set keeps its outcome on the row (for
        // the sessions page): one update of the row, where the entry's own statement made two.
        let last = match &history {
            Some(_) => {
                let n = params.len() + 4;
                format!(", last_outcome = ${}, last_class = ${}, last_cycle_at = now()", n + 1, n + 2)
            }
            None => String::new(),
        };
        let sql = format!(
            "WITH written AS (
               UPDATE planlock_sessions
               SET {set}{last}, row_version = row_version + 1, lease_until = now() + make_interval(secs => $4::float8),
                   updated_at = now()
               WHERE planlock_mine(tenant) AND session_key = $1 AND row_version = $2 AND lease_owner = $3
               RETURNING row_version)
             SELECT COALESCE((SELECT row_version FROM written), planlock_fenced($1))"
        );
        let (version, lease) = (*seen, self.lease.as_secs_f64());
        let mut all: Vec<Param<'_>> = vec![
            (&self.records.key, Type::TEXT),
            (&version, Type::INT8),
            (&self.owner, Type::UUID),
            (&lease, Type::FLOAT8),
        ];
        all.extend_from_slice(params);
        if let Some(row) = &history {
            all.extend([(&row.end as _, Type::TEXT), (&row.class as _, Type::TEXT)]);
        }
        let history_params = history.as_ref().map(|row| row.params(&self.records.key, &self.owner));
        // The writes the cycle kept for its end.
        let pending = match in_cycle {
            InCycle::Commit(cycle) => cycle.into_pending(),
            InCycle::Alone => Vec::new(),
        };
        // The pause's outcome first, while its record is on the row (its notice is made from
        // it). Then the compare-and-set: a fenced worker stops there (the transaction, outcome
        // and all, rolled back), and holds the row while the cycle's writes run. Then the
        // writes, in the order they were made, then the history.
        let mut query = Vec::with_capacity(pending.len() + 4);
        let (notice, logged): ([Param<'_>; 2], [Param<'_>; 3]);
        if let Some((pause, event)) = &outcome {
            notice = [(&self.records.key, Type::TEXT), (pause, Type::TEXT)];
            logged = [(&self.records.key, Type::TEXT), (pause, Type::TEXT), (event, Type::TEXT)];
            query.push(Query::typed(records::PAUSED_NOTICE_SQL, &notice));
            query.push(Query::typed(records::OUTCOME_SQL, &logged));
        }
        let cas = query.len();
        query.push(Query::typed(&sql, &all));
        query.extend(pending.iter().map(PendingWrite::query));
        if let Some(params) = &history_params {
            query.push(Query::typed(HISTORY_AFTER_SAVE, params));
        }
        let failed = |(at, e): (Option<usize>, tokio_postgres::Error)| {
            let write = at.and_then(|at| at.checked_sub(cas + 1)).and_then(|at| pending.get(at));
            match (write, e.code().map(|c| c.code())) {
                (_, Some("PLF01")) => SessionError::Fenced { key: self.records.key.clone() },
                (Some(write), _) => SessionError::StepWrite {
                    key: self.records.key.clone(),
                    step_id: write.step_id.clone(),
                    source: crate::pg::writes::failure_of(
                        &e,
                        write.doing,
                        crate::pg::writes::Kinds {
                            conflict: WriteFailure::Conflict,
                            not_found: WriteFailure::NotFound,
                            backend: WriteFailure::Backend,
                        },
                    ),
                },
                (None, _) => self.database(doing, &e),
            }
        };
        // What the cycle wrote is in the batch: the compare-and-set decides for it too, and the
        // COMMIT goes with it. Not this worker's row any more (fenced), or a write or anything
        // else failed: the server rolls the transaction back, and none of the cycle's writes
        // happen.
        let mut conn = self.connection().await?;
        let rows = match query.len() {
            1 => conn.pipeline_at(&query, Then::Stay).await.map_err(failed)?,
            _ => {
                conn.begin("BEGIN");
                conn.pipeline_at(&query, Then::Commit).await.map_err(failed)?
            }
        };
        // The compare-and-set's row.
        match rows.get(cas).and_then(|rows| rows.first()) {
            Some(row) => {
                *seen = row.get(0);
                Ok(())
            }
            None => Err(SessionError::Fenced { key: self.records.key.clone() }),
        }
    }

    /// `value` as the JSON a column holds, or why it cannot be (`what` it is).
    fn json<T: Serialize + ?Sized>(&self, what: &str, value: &T) -> Result<String, SessionError> {
        serde_json::to_string(value).map_err(|e| SessionError::Database {
            key: self.records.key.clone(),
            reason: format!("cannot write the {what}: {e}"),
        })
    }

    async fn write_json<T: Serialize + Sync>(
        &self,
        doing: &'static str,
        column: Column,
        value: Option<&T>,
        in_cycle: InCycle,
    ) -> Result<(), SessionError> {
        let text = value.map(|value| self.json(column.what(), value)).transpose()?;
        self.write(doing, &format!("{} = $5", column.name()), &[(&text, Type::TEXT)], in_cycle).await
    }
}

/// What goes with a write that ends a cycle ([`PgSessionStore::write_with`]).
#[derive(Default)]
struct Ending {
    /// The pause's outcome, logged before the write (with the pause's notice, if not logged).
    outcome: Option<ApprovalEvent>,
    /// The cycle's history entry, added after it.
    entry: Option<HistoryEntry>,
}

/// The history entry sent with a save, after its compare-and-set (which checked the lease and
/// kept the outcome on the session's row, in the same transaction): the entry, and the rows
/// before the newest `keep - 1` dropped. Its parameters: the session key, the cycle, how it
/// ended, the entry, the owner (`$5`, unused: the compare-and-set checked the lease), how many
/// before it to keep, the failure's class.
const HISTORY_AFTER_SAVE: &str = "WITH added AS (
       INSERT INTO planlock_cycle_history (session_key, cycle, outcome, entry, failure_class)
       VALUES ($1, $2, $3, $4, $7) RETURNING seq),
     dropped AS (
       DELETE FROM planlock_cycle_history
       WHERE planlock_mine(tenant) AND session_key = $1 AND seq <= (
         SELECT seq FROM planlock_cycle_history WHERE planlock_mine(tenant) AND session_key = $1
         ORDER BY seq DESC OFFSET $6 LIMIT 1))
     SELECT seq FROM added";

/// The values of [`HISTORY_AFTER_SAVE`] for one entry.
struct HistoryRow {
    text: String,
    cycle: i64,
    end: &'static str,
    before: i64,
    class: Option<&'static str>,
}

impl HistoryRow {
    fn of(entry: &CycleEntry, keep: usize) -> HistoryRow {
        HistoryRow {
            text: String::from_utf8(entry.to_line()).unwrap_or_default(),
            cycle: i64::try_from(entry.cycle).unwrap_or(i64::MAX),
            end: entry.end.as_str(),
            before: i64::try_from(keep.saturating_sub(1)).unwrap_or(i64::MAX),
            class: entry.failure.as_ref().map(|f| f.class.as_str()),
        }
    }

    fn params<'a>(&'a self, key: &'a String, owner: &'a Uuid) -> [Param<'a>; 7] {
        [
            (key, Type::TEXT),
            (&self.cycle, Type::INT8),
            (&self.end, Type::TEXT),
            (&self.text, Type::TEXT),
            (owner, Type::UUID),
            (&self.before, Type::INT8),
            (&self.class, Type::TEXT),
        ]
    }
}

impl Drop for PgSessionStore {
    fn drop(&mut self) {
        if !self.holds_lease {
            return;
        }
        // Gives the lease back (a no-op when it is not this worker's); if this fails the lease
        // simply runs out. Dropped inside async code (a task that owned the runtime), it is
        // given back on planlock's I/O runtime without waiting: blocking the task's thread on
        // the pool would stop the tasks that hold its connections (a deadlock on one thread).
        let (db, key, owner) = (self.records.db.clone(), self.records.key.clone(), self.owner);
        let give_back = async move {
            let mut conn = db.connection().await.ok()?;
            let sql = "UPDATE planlock_sessions SET lease_owner = NULL, lease_until = NULL
                       WHERE planlock_mine(tenant) AND session_key = $1 AND lease_owner = $2 RETURNING 1";
            conn.query_typed_opt(sql, &[(&key, Type::TEXT), (&owner, Type::UUID)]).await.ok()
        };
        match (tokio::runtime::Handle::try_current(), crate::io::runtime()) {
            (Ok(_), Ok(io)) => drop(io.spawn(give_back)),
            _ => drop(crate::io::block_on(give_back)),
        }
    }
}

/// A key is 1 to 256 bytes.
pub(super) fn check_key(key: &str) -> Result<(), OpenError> {
    if key.is_empty() {
        return Err(OpenError::InvalidKey { problem: "is empty".into() });
    }
    if key.len() > MAX_SESSION_KEY_BYTES {
        return Err(OpenError::InvalidKey { problem: format!("is {} bytes long", key.len()) });
    }
    Ok(())
}

impl SessionStore for PgSessionStore {
    fn claim(&self) -> Result<(), OpenError> {
        if self.claimed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            let place = format!("session key {}", crate::text::printable(&self.records.key));
            return Err(OpenError::Claimed { place });
        }
        Ok(())
    }
    fn begin_cycle(&self) -> StoreFuture<'_, CycleGuard> {
        crate::session::store::ready(Ok(CycleGuard::holding(Held::pg(PgCycle::new(&self.session)))))
    }
    // The end of a cycle is one batch: the pause's outcome (its `paused` notice first, made from
    // the record still on the row), then the compare-and-set, which writes the state (the
    // reserved id and any pause's record cleared), the pause's record or its removal, and the
    // pin due with it; then the cycle's writes, the history entry and the COMMIT.
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
        Box::pin(async move {
            let EndOfCycle { leaves, pin, plan, outcome, entry } = end;
            let pin = pin.map(|pin| self.json("bundle pin", &pin)).transpose()?;
            let plan = plan.map(|plan| self.json("plan", &plan)).transpose()?;
            // The pin and the plan are in every end's statement (kept as they were when none is
            // due), so a cycle that pins and one that does not share one prepared statement.
            let (doing, text, saved, set) = match leaves {
                Leaves::Session(update) => {
                    let state = update.into_state();
                    let text = self.json("session state", &state)?;
                    let set = "state = $7, reserved = NULL, intervention = NULL, pin = COALESCE($5, pin), plan = COALESCE($6, plan)";
                    ("saving the session", Some(text), Some(state), set)
                }
                Leaves::Pause(record) => {
                    // The record alone: its `paused` event is made from it when it is logged
                    // (schema 7).
                    let text = self.json("intervention record", &record)?;
                    let set = "intervention = $7, pin = COALESCE($5, pin), plan = COALESCE($6, plan)";
                    ("saving the intervention record", Some(text), None, set)
                }
                Leaves::Unpaused => {
                    let set = "intervention = NULL, pin = COALESCE($5, pin), plan = COALESCE($6, plan)";
                    ("removing the intervention record", None, None, set)
                }
                Leaves::AsItWas => {
                    ("recording the cycle", None, None, "pin = COALESCE($5, pin), plan = COALESCE($6, plan)")
                }
            };
            let params: Vec<Param<'_>> = match &text {
                Some(text) => vec![(&pin, Type::TEXT), (&plan, Type::TEXT), (text, Type::TEXT)],
                None => vec![(&pin, Type::TEXT), (&plan, Type::TEXT)],
            };
            // A cycle of another session is refused (and dropped: rolled back), never written
            // alone.
            let in_cycle =
                match cycle.into_held().into_pg_of(&self.records.db, &self.records.key).map_err(|_| self.foreign())? {
                    Some(cycle) => InCycle::Commit(cycle),
                    None => InCycle::Alone,
                };
            self.write_with(doing, set, &params, in_cycle, Ending { outcome, entry }).await?;
            Ok(saved)
        })
    }
    fn save_reserved<'a>(&'a self, reserved: &'a ReservedSession) -> StoreFuture<'a, ()> {
        Box::pin(self.write_json("reserving the session id", Column::Reserved, Some(reserved), InCycle::Alone))
    }
    fn records(&self) -> &dyn SessionRecords {
        &self.records
    }
}
