//! [`PgSessionStore`]: a session in PostgreSQL, keyed by a session key the caller chooses, for
//! many workers on many machines (docs/CONTRACT.md, "More than one machine").
//!
//! One row of `planlock_sessions` holds the session state, the record of a paused cycle, the
//! reserved id and the bundle pin (each the JSON the file store writes, read back as strictly),
//! a `row_version` and a lease (`lease_owner`, `lease_until`).
//!
//! - Opening the store takes the lease: refused ("session in use") while another worker's lease
//!   runs; taken over once it has run out.
//! - Every write is one `UPDATE … WHERE row_version = $seen AND lease_owner = $me`: a worker whose
//!   lease was taken over (it stalled past it) finds no row to update, writes nothing, and gets
//!   [`SessionError::Fenced`] (FailFast). Each write also extends the lease.
//! - Dropping the store gives the lease back, so the next worker need not wait for it to run out.
//! - The store keeps one connection of the pool while it is open, with its statements prepared
//!   once, so a save is one round trip (a connection the server dropped is replaced on the next
//!   call).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use postgres::types::Type;
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::{
    ApprovalEvent, ApprovalLog, BundlePinV1, InterventionRecord, PauseRef, Recorded, ReservedSession, ReviewDecision,
    SaveFuture, SessionError, SessionRecords, SessionState, SessionStore, SessionUpdate,
};
use crate::pg::cycle::CycleSlot;
use crate::pg::{Param, PgDatabase};

/// How long a lease runs unless configured otherwise; every write extends it.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The longest session key accepted, in bytes.
pub const MAX_SESSION_KEY_BYTES: usize = 256;

/// The columns of a session row a store reads and writes as JSON.
#[derive(Debug, Clone, Copy)]
enum Column {
    State,
    Intervention,
    Reserved,
    Pin,
}

impl Column {
    fn name(self) -> &'static str {
        match self {
            Column::State => "state",
            Column::Intervention => "intervention",
            Column::Reserved => "reserved",
            Column::Pin => "pin",
        }
    }
    fn what(self) -> &'static str {
        match self {
            Column::State => "session state",
            Column::Intervention => "intervention record",
            Column::Reserved => "reserved session id",
            Column::Pin => "bundle pin",
        }
    }
}

/// A session held in PostgreSQL under a lease; see the [module docs](self).
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
    /// Shared with a save in flight on the thread pool ([`SessionStore::save_async`]).
    shared: Arc<Shared>,
}

/// The store's state; [`PgSessionStore`] dereferences to it.
#[doc(hidden)]
pub struct Shared {
    db: PgDatabase,
    key: String,
    owner: Uuid,
    lease: Duration,
    /// Whether a runtime has claimed this store.
    claimed: std::sync::atomic::AtomicBool,
    /// The session's records as any process reads and decides on them.
    records: PgRecords,
    /// The `row_version` this worker last read or wrote (what its next write expects): under a
    /// lock held through the write, so a write's check and its new version go together.
    inner: Mutex<Inner>,
}

/// How a write of the session store meets the cycle's open transaction (see
/// [`PgStore`](crate::store::postgres::PgStore)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InCycle {
    /// On a connection of its own, committed alone.
    Alone,
    /// In the cycle's transaction if one is open, left open (the bundle pin, before the save).
    Join,
    /// In the cycle's transaction if one is open, which it then commits (the session save, and
    /// the record of a paused cycle with the writes of the steps before the pause).
    Commit,
}

struct Inner {
    seen: i64,
}

impl std::fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSessionStore")
            .field("db", &self.db)
            .field("key", &self.key)
            .field("owner", &self.owner)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl PgSessionStore {
    /// The session `key`, its lease taken for [`DEFAULT_LEASE`].
    pub fn open(db: &PgDatabase, key: &str) -> Result<PgSessionStore, SessionError> {
        PgSessionStore::open_with_lease(db, key, DEFAULT_LEASE)
    }

    /// The session `key`, its lease taken for `lease` (extended by every write). Creates the row
    /// if there is none; a new row holds no session (Cold Start).
    pub fn open_with_lease(db: &PgDatabase, key: &str, lease: Duration) -> Result<PgSessionStore, SessionError> {
        check_key(key)?;
        let inner = Inner { seen: 0 };
        let store = PgSessionStore {
            shared: Arc::new(Shared {
                db: db.clone(),
                key: key.to_owned(),
                owner: Uuid::new_v4(),
                lease,
                claimed: std::sync::atomic::AtomicBool::new(false),
                records: PgRecords { db: db.clone(), key: key.to_owned() },
                inner: Mutex::new(inner),
            }),
        };
        let lease_secs = lease.as_secs_f64();
        let taken = store.query_opt(
            "taking the lease",
            "INSERT INTO planlock_sessions AS s (session_key, lease_owner, lease_until)
             VALUES ($1, $2, now() + make_interval(secs => $3))
             ON CONFLICT (session_key) DO UPDATE
               SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
               WHERE s.lease_owner IS NULL OR s.lease_until < now()
             RETURNING row_version",
            &[(&store.key, Type::TEXT), (&store.owner, Type::UUID), (&lease_secs, Type::FLOAT8)],
        )?;
        match taken {
            Some(row) => {
                store.lock()?.seen = row.get(0);
                store.db.cycles().register(&store.key);
                Ok(store)
            }
            None => {
                let holder = store.query_opt(
                    "reading the lease",
                    "SELECT lease_owner, GREATEST(EXTRACT(EPOCH FROM lease_until - now())::float8, 0)
                     FROM planlock_sessions WHERE session_key = $1",
                    &[(&store.key, Type::TEXT)],
                )?;
                let (owner, seconds_left) = holder
                    .map(|row| (row.get::<_, Option<Uuid>>(0).unwrap_or_default(), row.get::<_, f64>(1)))
                    .unwrap_or_default();
                Err(SessionError::LeaseHeld { key: store.key.clone(), owner, seconds_left })
            }
        }
    }

    /// The session key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// This worker's id, as the lease names it.
    pub fn owner(&self) -> Uuid {
        self.owner
    }

    /// Extends the lease without writing anything else; [`SessionError::Fenced`] if it was taken
    /// over. A cycle longer than the lease should renew it.
    pub fn renew(&self) -> Result<(), SessionError> {
        self.write("renewing the lease", "lease_owner = lease_owner", &[], InCycle::Alone)
    }
}

impl Shared {
    fn save(&self, update: SessionUpdate) -> Result<SessionState, SessionError> {
        let state = update.into_state();
        let text = serde_json::to_string(&state).map_err(|e| SessionError::Database {
            key: self.key.clone(),
            reason: format!("cannot write the session state: {e}"),
        })?;
        // The session exists now: its reserved id has done its work (one statement, so both or neither).
        self.write("saving the session", "state = $5, reserved = NULL", &[(&text, Type::TEXT)], InCycle::Commit)?;
        Ok(state)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, SessionError> {
        let poisoned =
            || SessionError::Database { key: self.key.clone(), reason: "the store's lock is poisoned".into() };
        self.inner.lock().map_err(|_| poisoned())
    }

    fn database(&self, doing: &'static str, e: &postgres::Error) -> SessionError {
        let reason = format!("PostgreSQL at {}: {doing}: {}", self.db.target(), crate::pg::reason(e));
        SessionError::Database { key: self.key.clone(), reason }
    }

    /// Runs `sql` and returns its row, if any.
    fn query_opt(
        &self,
        doing: &'static str,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<postgres::Row>, SessionError> {
        let mut inner = self.lock()?;
        self.query_locked(&mut inner, doing, sql, params, InCycle::Alone)
    }

    /// Runs `sql` on a connection from the pool, given back right after: a session holds no
    /// connection between its operations, so a worker drives as many sessions as it likes on a
    /// few connections (its pool's size bounds the operations at once, not the sessions). The
    /// statement is prepared once per connection (with the parameters' types given) and then
    /// bound and run in one round trip and one implicit transaction.
    fn query_locked(
        &self,
        _inner: &mut Inner,
        doing: &'static str,
        sql: &str,
        params: &[Param<'_>],
        in_cycle: InCycle,
    ) -> Result<Option<postgres::Row>, SessionError> {
        crate::pg::off_runtime(|| {
            if in_cycle == InCycle::Commit {
                self.db.cycles().forget_reads(&self.key);
            }
            let open = match in_cycle {
                InCycle::Alone => None,
                InCycle::Join | InCycle::Commit => match self.db.cycles().take(&self.key) {
                    CycleSlot::Open(cycle) => Some(cycle),
                    CycleSlot::Idle { .. } | CycleSlot::Unregistered => None,
                },
            };
            let Some(mut cycle) = open else {
                let mut conn = self
                    .db
                    .connection()
                    .map_err(|e| SessionError::Database { key: self.key.clone(), reason: e.to_string() })?;
                return conn.query_typed_opt(sql, params).map_err(|e| self.database(doing, &e));
            };
            // The cycle's writes are in this transaction: the compare-and-set decides for them
            // too. Not this worker's row any more (fenced), or a failure: dropped, the cycle is
            // rolled back and none of its writes happen.
            let Some(row) = cycle.conn().query_typed_opt(sql, params).map_err(|e| self.database(doing, &e))? else {
                return Ok(None);
            };
            if in_cycle == InCycle::Commit {
                cycle.commit().map_err(|e| self.database(doing, &e))?;
            } else {
                self.db.cycles().put(&self.key, cycle);
            }
            Ok(Some(row))
        })
    }

    /// Reads one JSON column, strictly.
    fn read<T: DeserializeOwned>(&self, column: Column) -> Result<Option<T>, SessionError> {
        let sql = format!("SELECT {} FROM planlock_sessions WHERE session_key = $1", column.name());
        let row = self.query_opt("reading the session", &sql, &[(&self.key, Type::TEXT)])?;
        let Some(text) = row.and_then(|r| r.get::<_, Option<String>>(0)) else { return Ok(None) };
        serde_json::from_str(&text).map(Some).map_err(|e| SessionError::CorruptRow {
            key: self.key.clone(),
            what: column.what(),
            problem: e.to_string(),
        })
    }

    /// One compare-and-set write: `set` (SQL assignments whose parameters start at `$4`), only
    /// if the row is still at the version this worker saw and its lease is still this worker's.
    fn write(
        &self,
        doing: &'static str,
        set: &str,
        params: &[Param<'_>],
        in_cycle: InCycle,
    ) -> Result<(), SessionError> {
        let mut inner = self.lock()?;
        let sql = format!(
            "UPDATE planlock_sessions
             SET {set}, row_version = row_version + 1, lease_until = now() + make_interval(secs => $4::float8),
                 updated_at = now()
             WHERE session_key = $1 AND row_version = $2 AND lease_owner = $3
             RETURNING row_version"
        );
        let (seen, lease) = (inner.seen, self.lease.as_secs_f64());
        let mut all: Vec<Param<'_>> =
            vec![(&self.key, Type::TEXT), (&seen, Type::INT8), (&self.owner, Type::UUID), (&lease, Type::FLOAT8)];
        all.extend_from_slice(params);
        match self.query_locked(&mut inner, doing, &sql, &all, in_cycle)? {
            Some(row) => {
                inner.seen = row.get(0);
                Ok(())
            }
            None => Err(SessionError::Fenced { key: self.key.clone() }),
        }
    }

    fn write_json<T: Serialize>(
        &self,
        doing: &'static str,
        column: Column,
        value: Option<&T>,
        in_cycle: InCycle,
    ) -> Result<(), SessionError> {
        let text = value.map(serde_json::to_string).transpose().map_err(|e| SessionError::Database {
            key: self.key.clone(),
            reason: format!("cannot write the {}: {e}", column.what()),
        })?;
        self.write(doing, &format!("{} = $5", column.name()), &[(&text, Type::TEXT)], in_cycle)
    }
}

impl std::ops::Deref for PgSessionStore {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Drop for PgSessionStore {
    fn drop(&mut self) {
        let shared = self.shared.clone();
        crate::pg::off_runtime(move || shared.db.cycles().unregister(&shared.key));
        // Gives the lease back (a no-op when it is not this worker's); if this fails the lease
        // simply runs out.
        let _ = self.query_opt(
            "giving the lease back",
            "UPDATE planlock_sessions SET lease_owner = NULL, lease_until = NULL
             WHERE session_key = $1 AND lease_owner = $2 RETURNING 1",
            &[(&self.key, Type::TEXT), (&self.owner, Type::UUID)],
        );
    }
}

/// The records of a session in the database, read without its lease (a worker may hold it):
/// what `status`, `memory search` and `decisions` read; see [`SessionRecords`].
///
/// ```no_run
/// use planlock::pg::PgDatabase;
/// use planlock::session::SessionRecords;
/// use planlock::session::postgres::PgRecords;
/// let db = PgDatabase::connect("postgres://planlock@db.internal/planlock")?;
/// let paused = PgRecords::new(&db, "tenant-7/conversation-42")?.load_intervention()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PgRecords {
    db: PgDatabase,
    key: String,
}

impl PgRecords {
    /// The records of session `key` (1 to 256 bytes).
    pub fn new(db: &PgDatabase, key: &str) -> Result<PgRecords, SessionError> {
        check_key(key)?;
        Ok(PgRecords { db: db.clone(), key: key.to_owned() })
    }

    /// Runs `sql` on a connection of the pool: its rows.
    fn query(&self, doing: &'static str, sql: &str, params: &[Param<'_>]) -> Result<Vec<postgres::Row>, SessionError> {
        let failed = |reason: String| SessionError::Database { key: self.key.clone(), reason };
        crate::pg::off_runtime(|| {
            let mut conn = self.db.connection().map_err(|e| failed(e.to_string()))?;
            conn.query_typed(sql, params)
                .map_err(|e| failed(format!("PostgreSQL at {}: {doing}: {}", self.db.target(), crate::pg::reason(&e))))
        })
    }

    /// Reads one JSON column of the key's row, strictly; `None` without a row or a value.
    fn read<T: DeserializeOwned>(&self, column: Column) -> Result<Option<T>, SessionError> {
        let sql = format!("SELECT {} FROM planlock_sessions WHERE session_key = $1", column.name());
        let rows = self.query("reading the session", &sql, &[(&self.key, Type::TEXT)])?;
        let Some(text) = rows.first().and_then(|r| r.get::<_, Option<String>>(0)) else { return Ok(None) };
        self.parse(column.what(), &text).map(Some)
    }

    /// A stored JSON text, read strictly.
    fn parse<T: DeserializeOwned>(&self, what: &'static str, text: &str) -> Result<T, SessionError> {
        serde_json::from_str(text).map_err(|e| SessionError::CorruptRow {
            key: self.key.clone(),
            what,
            problem: crate::text::printable(&e.to_string()).into_owned(),
        })
    }

    /// Inserts `event` into the approval log as `kind` unless the pause has one of that kind
    /// (the unique indexes decide, in one statement): whether it was inserted.
    fn insert_event(&self, event: &ApprovalEvent, kind: &str) -> Result<bool, SessionError> {
        let pause = serde_json::to_string(event.pause()).unwrap_or_default();
        let text = serde_json::to_string(event).unwrap_or_default();
        let sql = format!(
            "INSERT INTO planlock_approval_log (session_key, pause, kind, event) VALUES ($1, $2, $3, $4)
             ON CONFLICT (session_key, pause) WHERE kind = '{kind}' DO NOTHING RETURNING 1"
        );
        let params: [Param<'_>; 4] =
            [(&self.key, Type::TEXT), (&pause, Type::TEXT), (&kind, Type::TEXT), (&text, Type::TEXT)];
        Ok(!self.query("appending to the approval log", &sql, &params)?.is_empty())
    }
}

/// The most approval log events read back for one session (its latest).
const MAX_LOG_EVENTS: i64 = 10_000;

impl SessionRecords for PgRecords {
    fn load(&self) -> Result<Option<SessionState>, SessionError> {
        self.read(Column::State)
    }
    fn load_intervention(&self) -> Result<Option<InterventionRecord>, SessionError> {
        self.read(Column::Intervention)
    }
    fn load_reserved(&self) -> Result<Option<ReservedSession>, SessionError> {
        self.read(Column::Reserved)
    }
    fn load_pin(&self) -> Result<Option<BundlePinV1>, SessionError> {
        self.read(Column::Pin)
    }
    fn decision_on(&self, pause: &PauseRef) -> Result<Option<ReviewDecision>, SessionError> {
        let pause = serde_json::to_string(pause).unwrap_or_default();
        let rows = self.query(
            "reading the decision",
            "SELECT event FROM planlock_approval_log WHERE session_key = $1 AND pause = $2 AND kind = 'decided'",
            &[(&self.key, Type::TEXT), (&pause, Type::TEXT)],
        )?;
        match rows.first().map(|r| self.parse::<ApprovalEvent>("approval log event", &r.get::<_, String>(0))) {
            Some(Ok(ApprovalEvent::Decided { decision })) => Ok(Some(decision)),
            Some(Ok(_)) | None => Ok(None),
            Some(Err(e)) => Err(e),
        }
    }
    fn record_decision(&self, decision: &ReviewDecision) -> Result<Recorded, SessionError> {
        if self.insert_event(&ApprovalEvent::Decided { decision: decision.clone() }, "decided")? {
            return Ok(Recorded::New);
        }
        match self.decision_on(&decision.pause)? {
            Some(existing) if existing.same_as(decision) => Ok(Recorded::Again),
            Some(existing) => {
                let by = crate::text::printable(&existing.by).into_owned();
                Err(SessionError::AlreadyDecided { verdict: existing.verdict, by })
            }
            None => Err(SessionError::AlreadyDecided { verdict: decision.verdict, by: "another decider".into() }),
        }
    }
    fn log_outcome(&self, outcome: &ApprovalEvent) -> Result<bool, SessionError> {
        self.insert_event(outcome, "outcome")
    }
    fn approval_log(&self) -> Result<ApprovalLog, SessionError> {
        let rows = self.query(
            "reading the approval log",
            "SELECT event FROM (SELECT seq, event FROM planlock_approval_log WHERE session_key = $1
             ORDER BY seq DESC LIMIT $2) latest ORDER BY seq",
            &[(&self.key, Type::TEXT), (&MAX_LOG_EVENTS, Type::INT8)],
        )?;
        Ok(ApprovalLog::parse(rows.iter().map(|r| r.get::<_, String>(0))))
    }
}

/// A key is 1 to 256 bytes.
fn check_key(key: &str) -> Result<(), SessionError> {
    if key.is_empty() {
        return Err(SessionError::InvalidKey { problem: "is empty".into() });
    }
    if key.len() > MAX_SESSION_KEY_BYTES {
        return Err(SessionError::InvalidKey { problem: format!("is {} bytes long", key.len()) });
    }
    Ok(())
}

impl SessionStore for PgSessionStore {
    fn claim(&self) -> Result<(), SessionError> {
        if self.claimed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(SessionError::Claimed { place: format!("session key {}", crate::text::printable(&self.key)) });
        }
        Ok(())
    }
    fn load(&self) -> Result<Option<SessionState>, SessionError> {
        self.read(Column::State)
    }

    fn save(&self, update: SessionUpdate) -> Result<SessionState, SessionError> {
        self.shared.save(update)
    }

    /// The save on the blocking thread pool: an async caller's thread is not held while the
    /// server makes the commit durable.
    fn discard_cycle(&self) {
        let shared = self.shared.clone();
        crate::pg::off_runtime(move || shared.db.cycles().discard(&shared.key));
    }

    fn save_async(&self, update: SessionUpdate) -> SaveFuture<'_> {
        let shared = self.shared.clone();
        Box::pin(blocking::unblock(move || shared.save(update)))
    }

    fn load_intervention(&self) -> Result<Option<InterventionRecord>, SessionError> {
        self.read(Column::Intervention)
    }

    fn save_intervention(&self, record: &InterventionRecord) -> Result<(), SessionError> {
        // The record lists the steps before the pause as completed, and a resume does not run
        // them again: their writes become durable with it, in the cycle's transaction.
        self.write_json("saving the intervention record", Column::Intervention, Some(record), InCycle::Commit)
    }

    fn remove_intervention(&self) -> Result<(), SessionError> {
        self.write_json::<InterventionRecord>(
            "removing the intervention record",
            Column::Intervention,
            None,
            InCycle::Alone,
        )
    }

    fn load_reserved(&self) -> Result<Option<ReservedSession>, SessionError> {
        self.read(Column::Reserved)
    }

    fn save_reserved(&self, reserved: &ReservedSession) -> Result<(), SessionError> {
        self.write_json("reserving the session id", Column::Reserved, Some(reserved), InCycle::Alone)
    }

    fn load_pin(&self) -> Result<Option<BundlePinV1>, SessionError> {
        self.read(Column::Pin)
    }

    fn save_pin(&self, pin: &BundlePinV1) -> Result<(), SessionError> {
        self.write_json("saving the bundle pin", Column::Pin, Some(pin), InCycle::Join)
    }

    fn records(&self) -> &dyn SessionRecords {
        &self.records
    }
}

/// Every paused session of `db` (at most `max`): its key, and its record with the decision on
/// it (or why they cannot be read). Two statements: the sessions with a record, through a
/// partial index, then the decisions logged for those sessions.
#[allow(clippy::type_complexity, reason = "the inbox's listing, one private use")]
pub(crate) fn paused_sessions(
    db: &PgDatabase,
    max: usize,
) -> Result<Vec<(String, Result<(InterventionRecord, Option<ReviewDecision>), SessionError>)>, SessionError> {
    let limit = i64::try_from(max).unwrap_or(i64::MAX);
    let failed = |reason: String| SessionError::Database { key: "(every session)".into(), reason };
    let (rows, decided) = crate::pg::off_runtime(|| {
        let mut conn = db.connection().map_err(|e| failed(e.to_string()))?;
        let failed = |e: postgres::Error| {
            failed(format!("PostgreSQL at {}: listing paused sessions: {}", db.target(), crate::pg::reason(&e)))
        };
        let rows = conn
            .query_typed(
                "SELECT session_key, intervention FROM planlock_sessions WHERE intervention IS NOT NULL LIMIT $1",
                &[(&limit, Type::INT8)],
            )
            .map_err(failed)?;
        let keys: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let decided = conn
            .query_typed(
                "SELECT session_key, pause, event FROM planlock_approval_log
                 WHERE kind = 'decided' AND session_key = ANY($1)",
                &[(&keys, Type::TEXT_ARRAY)],
            )
            .map_err(failed)?;
        Ok((rows, decided))
    })?;
    let decisions: std::collections::HashMap<(String, String), String> =
        decided.iter().map(|r| ((r.get(0), r.get(1)), r.get(2))).collect();
    Ok(rows
        .iter()
        .map(|row| {
            let key: String = row.get(0);
            let records = PgRecords { db: db.clone(), key: key.clone() };
            let read = records.parse::<InterventionRecord>("intervention record", &row.get::<_, String>(1)).and_then(
                |record| {
                    let pause = serde_json::to_string(&PauseRef::of(&record)).unwrap_or_default();
                    let decision = match decisions.get(&(key.clone(), pause)) {
                        Some(text) => match records.parse::<ApprovalEvent>("approval log event", text)? {
                            ApprovalEvent::Decided { decision } => Some(decision),
                            _ => None,
                        },
                        None => None,
                    };
                    Ok((record, decision))
                },
            );
            (key, read)
        })
        .collect())
}
