//! Sessions in a PostgreSQL database: each session a key (a tenant or conversation id, 1 to
//! 256 bytes) of planlock's tables, shared by many workers; a session's cycles hold a lease.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use super::{Backend, BackendError, BackendFuture, Glance, Glances, OpenedSession, PausedSession};
use crate::pg::{PgDatabase, PgOptions, PgSession};
use crate::session::postgres::{DEFAULT_LEASE, MAX_SESSION_KEY_BYTES, PgRecords, PgSessionStore};
use crate::session::{SessionRecords, SessionStore};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::store::provider::{ProviderPlace, ResolvedStore};

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

    /// The sessions of the database at `url`: connected (and migrated) once per process, so that
    /// every backend of one URL shares one connection pool.
    pub async fn connect(url: &str) -> Result<PgBackend, BackendError> {
        static POOLS: OnceLock<Mutex<HashMap<String, PgDatabase>>> = OnceLock::new();
        let pools = POOLS.get_or_init(Mutex::default);
        if let Some(db) = pools.lock().unwrap_or_else(|p| p.into_inner()).get(url) {
            return Ok(PgBackend { db: db.clone() });
        }
        let db = PgDatabase::connect_async(url, PgOptions::default()).await?;
        // Two first calls at once may both connect: the first kept is the one every later call gets.
        let db = pools.lock().unwrap_or_else(|p| p.into_inner()).entry(url.to_owned()).or_insert(db).clone();
        Ok(PgBackend { db })
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
    fn session_store(&self) -> &dyn SessionStore {
        self
    }

    fn resolve(&self, resolver: &StrategyResolver, manifest: &BundleManifest) -> Result<ResolvedStore, BundleError> {
        resolver.resolve_for_session(manifest, self.session())
    }

    fn into_session_store(self: Box<Self>) -> Box<dyn SessionStore> {
        self
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
            Ok(resolver.resolve_to_read(manifest, ProviderPlace::Session(&session))?)
        })
    }

    fn paused(&self, max: usize) -> BackendFuture<'_, Vec<PausedSession>> {
        Box::pin(async move { Ok(crate::session::postgres::paused_sessions(&self.db, max).await?) })
    }

    fn glances<'a>(
        &'a self,
        status: Option<&'a str>,
        offset: usize,
        limit: usize,
        _max: usize,
    ) -> BackendFuture<'a, Glances> {
        Box::pin(async move {
            let (rows, total) = crate::session::postgres::session_page(&self.db, status, offset, limit).await?;
            let sessions = rows
                .into_iter()
                .map(|row| {
                    // Each row's records read as strictly as the runtime reads them.
                    let records = PgRecords::new(&self.db, &row.key);
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

impl From<PgBackend> for std::sync::Arc<dyn Backend> {
    fn from(backend: PgBackend) -> Self {
        std::sync::Arc::new(backend)
    }
}
