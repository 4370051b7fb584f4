//! Sessions in a PostgreSQL database: each session a key (a tenant or conversation id, 1 to
//! 256 bytes) of planlock's tables, shared by many workers; a session's cycles hold a lease.

use std::sync::Arc;
use std::time::Duration;

use crate::exec::budget::{BudgetState, TokenBudget, check_budget};
use crate::session::postgres::{self as access, PgBudget, budgets, remove_budget, set_budget};

use super::{
    AccessBook, Backend, BackendError, BackendFuture, BudgetBook, DatabaseError, DeliveryClaim, DeliveryOutcome,
    Glance, Glances, Listed, Logged, OpenedSession, Outbox, PausedSession, Wake, Watch,
};
use crate::contract::registry::Failure;
use crate::exec::SessionAt;
use crate::pg::{Heard, PgDatabase, PgError, PgOptions, PgSession};
use crate::session::Timestamp;
use crate::session::postgres::{DEFAULT_LEASE, MAX_SESSION_KEY_BYTES, PgRecords, PgSessionStore};
use crate::session::{SessionError, SessionRecords, SessionStore};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::store::provider::ResolvedStore;
use tokio_postgres::types::Type;

/// Sessions in a PostgreSQL database: each session a key (a tenant or conversation id, 1 to 256
/// bytes) of planlock's tables, shared by many workers; a session's cycles hold a lease.
#[derive(Debug, Clone)]
pub struct PgBackend {
    db: PgDatabase,
}

impl PgBackend {
    /// The sessions of `db`.
    pub fn new(db: PgDatabase) -> PgBackend {
        PgBackend { db }
    }

    /// The sessions of the database at `url`, in `tenant` if one is given (CONTRACT §20: it sees
    /// only that tenant's): connected and migrated now, with a connection pool of its own that
    /// its clones share and that closes when the last is dropped (a program that wants one pool
    /// for many uses keeps one backend: the CLI holds one per command, the console one).
    pub async fn connect(url: &str, tenant: Option<&str>) -> Result<PgBackend, BackendError> {
        PgBackend::connect_scoped(url, tenant, false).await
    }

    /// Every tenant's sessions, read only, as a role that bypasses row-level security
    /// ([`PgOptions::all_tenants`]): what `--all-tenants` asks for.
    pub async fn connect_all_tenants(url: &str) -> Result<PgBackend, BackendError> {
        PgBackend::connect_scoped(url, None, true).await
    }

    /// [`connect`](Self::connect) as [`backend::connect`](fn@super::connect) makes a database's
    /// backend.
    pub(super) fn connect_url<'a>(url: &'a str, tenant: Option<&'a str>) -> BackendFuture<'a, Arc<dyn Backend>> {
        Box::pin(async move { Ok(Arc::new(PgBackend::connect(url, tenant).await?) as Arc<dyn Backend>) })
    }

    async fn connect_scoped(url: &str, tenant: Option<&str>, all_tenants: bool) -> Result<PgBackend, BackendError> {
        let options = PgOptions { tenant: tenant.map(str::to_owned), all_tenants, ..PgOptions::default() };
        Ok(PgBackend { db: PgDatabase::connect_async(url, options).await? })
    }

    /// The database.
    pub fn database(&self) -> &PgDatabase {
        &self.db
    }
}

/// `key`, if it can be a session key.
fn key(key: &str) -> Result<&str, BackendError> {
    match key.is_empty() || key.len() > MAX_SESSION_KEY_BYTES {
        true => Err(BackendError::Key { len: key.len(), max: MAX_SESSION_KEY_BYTES }),
        false => Ok(key),
    }
}

impl OpenedSession for PgSessionStore {
    fn resolve(&self, resolver: &StrategyResolver, manifest: &BundleManifest) -> Result<ResolvedStore, BundleError> {
        resolver.resolve_for_session(manifest, self.session())
    }

    fn into_session_store(self: Box<Self>) -> Box<dyn SessionStore> {
        self
    }

    fn budget(&self) -> Arc<dyn TokenBudget> {
        Arc::new(PgBudget::of(self))
    }
}

impl Backend for PgBackend {
    fn describe(&self, name: &str) -> String {
        format!("session `{}`", crate::text::printable(name))
    }

    fn is_session_name(&self, name: &str) -> bool {
        key(name).is_ok()
    }

    fn lists_by_reading_each(&self) -> bool {
        false
    }

    fn default_bundle(&self) -> BundleManifest {
        BundleManifest::default_shared_bundle()
    }

    fn budgets(&self) -> Option<&dyn BudgetBook> {
        Some(self)
    }

    fn outbox(&self) -> Option<&dyn Outbox> {
        Some(self)
    }

    fn access(&self) -> Option<&dyn AccessBook> {
        Some(self)
    }

    // `LISTEN planlock_decided`: schema 18's trigger notifies with each decision's commit, its
    // payload only the approval log row's `seq` (a notification is seen by every listener of the
    // database, whatever its tenant: it names no session). The row is read back in this
    // backend's tenant: another tenant's decision finds none and wakes nothing. A payload that
    // is no number, too many lookups at once, a lookup that fails, or a lost connection wakes
    // every session instead.
    fn watch_decisions(&self, wake: Wake) -> BackendFuture<'_, Option<Watch>> {
        Box::pin(async move {
            let (db, in_flight) = (self.db.clone(), Arc::new(std::sync::atomic::AtomicUsize::new(0)));
            let listening = self
                .db
                .listen("planlock_decided", move |heard| {
                    use std::sync::atomic::Ordering::SeqCst;
                    let seq = match heard {
                        Heard::Payload(payload) => payload.parse::<i64>().ok(),
                        Heard::Lost => None,
                    };
                    let Some(seq) = seq else { return wake.all() };
                    if in_flight.fetch_add(1, SeqCst) >= MAX_LOOKUPS {
                        in_flight.fetch_sub(1, SeqCst);
                        return wake.all();
                    }
                    let (db, wake, in_flight) = (db.clone(), wake.clone(), in_flight.clone());
                    tokio::spawn(async move {
                        match decided_session(&db, seq).await {
                            Ok(Some(key)) => wake.session(&key),
                            Ok(None) => {}
                            Err(_) => wake.all(),
                        }
                        in_flight.fetch_sub(1, SeqCst);
                    });
                })
                .await?;
            Ok(Some(Watch::new(listening)))
        })
    }

    fn sessions(&self, max: usize) -> BackendFuture<'_, Vec<Listed>> {
        Box::pin(async move {
            let limit = i64::try_from(max).unwrap_or(i64::MAX);
            let rows = self
                .query(
                    "listing the sessions",
                    "SELECT session_key FROM planlock_sessions WHERE planlock_mine(tenant) ORDER BY session_key LIMIT $1",
                    &[(&limit, Type::INT8)],
                )
                .await?;
            let mut sessions = Vec::with_capacity(rows.len());
            for row in rows {
                let name: String = row.get(0);
                let records = PgRecords::new(&self.db, &name)?;
                sessions.push((name, Box::new(records) as Box<dyn SessionRecords>));
            }
            Ok(sessions)
        })
    }

    fn open<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn OpenedSession>> {
        Box::pin(async move {
            let store = PgSessionStore::open_async(&self.db, key(name)?, DEFAULT_LEASE).await?;
            Ok(Box::new(store) as Box<dyn OpenedSession>)
        })
    }

    fn records<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn SessionRecords>> {
        Box::pin(async move {
            let records = PgRecords::new(&self.db, key(name)?)?;
            if !records.exists().await? {
                return Err(BackendError::Unknown(crate::text::printable(name).into_owned()));
            }
            Ok(Box::new(records) as Box<dyn SessionRecords>)
        })
    }

    fn stores_to_read<'a>(
        &'a self,
        name: &'a str,
        resolver: &'a StrategyResolver,
        manifest: &'a BundleManifest,
    ) -> BackendFuture<'a, ResolvedStore> {
        Box::pin(async move {
            // A session of its own, whose cycle is never opened: nothing joins a worker's.
            let session = PgSession::new(&self.db, key(name)?);
            Ok(resolver.resolve_to_read(manifest, SessionAt::Database(&session))?)
        })
    }

    fn recent_events(&self, since: Timestamp, max: usize) -> BackendFuture<'_, Vec<Logged>> {
        Box::pin(async move {
            let (since, limit) = (since.to_string(), i64::try_from(max).unwrap_or(i64::MAX));
            let rows = self
                .query(
                    "reading the recent notifications",
                    "SELECT session_key, event FROM planlock_approval_log
                     WHERE planlock_mine(tenant) AND logged_at >= $1::text::timestamptz
                     ORDER BY seq LIMIT $2",
                    &[(&since, Type::TEXT), (&limit, Type::INT8)],
                )
                .await?;
            // An event that cannot be read sends nothing (the session's log shows it as unreadable).
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let event = serde_json::from_str(&r.get::<_, String>(1)).ok()?;
                    Some(Logged { session: r.get(0), event })
                })
                .collect())
        })
    }

    fn paused(&self, max: usize) -> BackendFuture<'_, Vec<PausedSession>> {
        Box::pin(async move { Ok(crate::session::postgres::paused_sessions(&self.db, max).await?) })
    }

    fn glances<'a>(
        &'a self,
        status: Option<&'a str>,
        words: &'a [String],
        offset: usize,
        limit: usize,
        _max: usize,
    ) -> BackendFuture<'a, Glances> {
        Box::pin(async move {
            let (rows, total) = crate::session::postgres::session_page(&self.db, status, words, offset, limit).await?;
            let sessions = rows
                .into_iter()
                .map(|row| {
                    // Each row's records read as strictly as the runtime reads them; a stored key
                    // no session could have is a row that is not valid.
                    let records = PgRecords::new(&self.db, &row.key).map_err(|e| SessionError::CorruptRow {
                        key: crate::text::printable(&row.key).into_owned(),
                        what: "session key",
                        problem: e.to_string(),
                    });
                    let read = records.and_then(|records| {
                        Ok(Glance {
                            state: row.state.map(|t| records.parse("session state", &t)).transpose()?,
                            paused: row.intervention.map(|t| records.parse("intervention record", &t)).transpose()?,
                            last: row.entry.map(|t| records.parse("cycle history entry", &t)).transpose()?,
                        })
                    });
                    (row.key, read)
                })
                .collect();
            Ok(Glances { sessions, paged_total: Some(total) })
        })
    }
}

impl AccessBook for PgBackend {
    fn installed_access(&self) -> BackendFuture<'_, Option<crate::session::InstalledAccess>> {
        Box::pin(async move { Ok(access::installed_access(&self.db).await?) })
    }

    fn install_access<'a>(&'a self, text: &'a str) -> BackendFuture<'a, ()> {
        Box::pin(async move { Ok(access::install_access(&self.db, text).await?) })
    }

    fn uninstall_access(&self) -> BackendFuture<'_, bool> {
        Box::pin(async move { Ok(access::uninstall_access(&self.db).await?) })
    }
}

impl BudgetBook for PgBackend {
    fn budgets(&self) -> BackendFuture<'_, Vec<BudgetState>> {
        Box::pin(async move { Ok(budgets(&self.db).await?) })
    }

    fn set_budget<'a>(&'a self, prefix: &'a str, tokens: u64, period: Duration) -> BackendFuture<'a, ()> {
        Box::pin(async move {
            check_budget(prefix, tokens, period.as_secs()).map_err(BackendError::BudgetSettings)?;
            Ok(set_budget(&self.db, prefix, tokens, period).await?)
        })
    }

    fn remove_budget<'a>(&'a self, prefix: &'a str) -> BackendFuture<'a, bool> {
        Box::pin(async move { Ok(remove_budget(&self.db, prefix).await?) })
    }
}

impl Outbox for PgBackend {
    fn claim_delivery<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        hook: &'a str,
        hold: std::time::Duration,
    ) -> BackendFuture<'a, Option<DeliveryClaim>> {
        Box::pin(async move {
            let owner = uuid::Uuid::new_v4();
            let hold = hold.as_secs_f64();
            let rows = self
                .query(
                    "claiming a delivery",
                    "INSERT INTO planlock_deliveries AS d (session_key, event_id, hook, lease_owner, lease_until)
                     VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))
                     ON CONFLICT (session_key, event_id, hook, tenant) DO UPDATE
                       SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
                       WHERE NOT d.done AND d.next_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
                     RETURNING attempts",
                    &[
                        (&session, Type::TEXT),
                        (&id, Type::TEXT),
                        (&hook, Type::TEXT),
                        (&owner, Type::UUID),
                        (&hold, Type::FLOAT8),
                    ],
                )
                .await?;
            let attempts = |row: &tokio_postgres::Row| u32::try_from(row.get::<_, i32>(0)).unwrap_or(0);
            Ok(rows.first().map(|row| DeliveryClaim::held_by(session, id, hook, attempts(row), owner)))
        })
    }

    fn finish_delivery(&self, claim: DeliveryClaim, outcome: DeliveryOutcome) -> BackendFuture<'_, ()> {
        Box::pin(async move {
            let Some(owner) = claim.token() else { return Err(BackendError::ForeignClaim(claim.id)) };
            let (next, done) = match outcome {
                DeliveryOutcome::Delivered | DeliveryOutcome::GivenUp => (Timestamp::now().to_string(), true),
                DeliveryOutcome::RetryAt(at) => (at.to_string(), false),
            };
            self.query(
                "finishing a delivery",
                "UPDATE planlock_deliveries SET attempts = attempts + 1, next_at = $4::text::timestamptz, done = $5,
                   lease_owner = NULL, lease_until = NULL
                 WHERE planlock_mine(tenant) AND session_key = $1 AND event_id = $2 AND hook = $3 AND lease_owner = $6",
                &[
                    (&claim.session, Type::TEXT),
                    (&claim.id, Type::TEXT),
                    (&claim.hook, Type::TEXT),
                    (&next, Type::TEXT),
                    (&done, Type::BOOL),
                    (&owner, Type::UUID),
                ],
            )
            .await
            .map(drop)
        })
    }
}

impl PgBackend {
    /// Runs `sql` on a connection of the pool: its rows.
    async fn query(
        &self,
        doing: &'static str,
        sql: &str,
        params: &[crate::pg::Param<'_>],
    ) -> Result<Vec<tokio_postgres::Row>, BackendError> {
        let failed = |reason: String| crate::session::SessionError::Database { key: "(every session)".into(), reason };
        let mut conn = self.db.connection().await.map_err(|e| failed(e.to_string()))?;
        let rows = conn.query_typed(sql, params).await;
        Ok(rows
            .map_err(|e| failed(format!("PostgreSQL at {}: {doing}: {}", self.db.target(), crate::pg::reason(&e))))?)
    }
}

impl From<PgBackend> for std::sync::Arc<dyn Backend> {
    fn from(backend: PgBackend) -> Self {
        std::sync::Arc::new(backend)
    }
}

/// PostgreSQL's error, as a backend's database error.
impl DatabaseError for PgError {
    fn code(&self) -> &'static str {
        Failure::code(self)
    }
    fn is_usage(&self) -> bool {
        matches!(self, PgError::Url { .. })
    }
}

impl From<PgError> for BackendError {
    fn from(e: PgError) -> BackendError {
        BackendError::Database(Box::new(e))
    }
}

/// The most decisions a watch looks up at once; past it, a notification wakes every session.
const MAX_LOOKUPS: usize = 64;

/// The session of the approval log's row `seq`, if it is this database's tenant's.
async fn decided_session(db: &PgDatabase, seq: i64) -> Result<Option<String>, PgError> {
    let mut conn = db.connection().await?;
    let row = conn
        .query_typed_opt(
            "SELECT session_key FROM planlock_approval_log WHERE planlock_mine(tenant) AND seq = $1",
            &[(&seq, Type::INT8)],
        )
        .await
        .map_err(db.failed("reading a decision's session"))?;
    Ok(row.map(|row| row.get(0)))
}
