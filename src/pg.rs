//! The PostgreSQL database that many workers on many machines share (docs/CONTRACT.md, "More
//! than one machine"): [`PgDatabase`] connects, pools connections and applies the schema's
//! migrations; the session store (`session::postgres`) and the storage ports
//! (`store::postgres`) use it.
//!
//! Layer 4 (beside the executor, below the stores that use it): it knows SQL and connections,
//! and of the contract only how a failure is classified.
//!
//! - The client is `postgres`, the synchronous face of `tokio-postgres` (same project): the
//!   session store's calls are synchronous and the storage ports run blocking work on the
//!   `blocking` crate's pool, as the SQLite store does, so planlock needs no async runtime of its
//!   own and works under any executor. Connections are pooled by `r2d2`, each keeping its
//!   statements prepared (`src/pg/conn.rs`).
//! - Migrations are applied on first use, in one transaction under an advisory lock (two workers
//!   starting at once apply them once), recorded in `planlock_schema_migrations`. A database whose
//!   schema is newer than this library knows is refused: an older worker must not write to it.
//! - No error names the password: connection failures name the host, port, database and user.

use std::fmt;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config, NoTls};

use crate::contract::registry::{Failure, FailureKind};

mod conn;
pub(crate) mod cycle;

pub(crate) use conn::{Conn, Param};

/// How long connecting may take unless configured otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this library writes and reads.
pub const SCHEMA_VERSION: i32 = 3;

/// Any number, the same everywhere: the advisory lock migrations run under.
const MIGRATION_LOCK: i64 = 0x706c_616e_6c6f_636b; // "planlock"

/// The migrations, in order. Each runs once, in the transaction that records it.
const MIGRATIONS: &[(i32, &str)] =
    &[(1, include_str!("pg/v1.sql")), (2, include_str!("pg/v2.sql")), (3, include_str!("pg/v3.sql"))];

/// A pooled connection.
pub(crate) type PgConnection = r2d2::PooledConnection<conn::Manager>;

/// Why the database cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The connection string does not parse.
    #[error("the database URL is not a PostgreSQL connection string: {reason}")]
    Url {
        /// What the parser said (it never echoes the password).
        reason: String,
    },
    /// No connection could be made.
    #[error("cannot connect to PostgreSQL at {target}: {reason}")]
    Connect {
        /// Host, port, database and user, never the password.
        target: String,
        /// Why.
        reason: String,
    },
    /// The database's schema is newer than this library.
    #[error(
        "the database at {target} has planlock schema version {found}, newer than this library's {known}; upgrade planlock before using it"
    )]
    SchemaTooNew {
        /// Where.
        target: String,
        /// What the database has.
        found: i32,
        /// What this library knows.
        known: i32,
    },
    /// A statement failed.
    #[error("PostgreSQL at {target}: {doing}: {reason}")]
    Query {
        /// Where.
        target: String,
        /// What was being done.
        doing: &'static str,
        /// What the server said.
        reason: String,
    },
}

impl Failure for PgError {
    fn code(&self) -> &'static str {
        match self {
            PgError::Url { .. } => "pg-url",
            PgError::Connect { .. } => "pg-connect",
            PgError::SchemaTooNew { .. } => "pg-schema-too-new",
            PgError::Query { .. } => "pg-query",
        }
    }

    /// FailFast: without its database a runtime cannot know its sessions' state.
    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// How to connect.
#[derive(Debug, Clone, Copy)]
pub struct PgOptions {
    /// How long opening one connection may take.
    pub connect_timeout: Duration,
    /// The most connections the pool keeps open.
    pub max_connections: u32,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions { connect_timeout: DEFAULT_CONNECT_TIMEOUT, max_connections: 4 }
    }
}

/// A PostgreSQL database with planlock's schema: a connection pool, migrated on connect. Clones
/// share the pool.
#[derive(Clone)]
pub struct PgDatabase {
    pool: r2d2::Pool<conn::Manager>,
    target: String,
    cycles: std::sync::Arc<cycle::CycleTransactions>,
    /// One permit per pooled connection: async callers wait here, holding no thread, instead of
    /// in the pool on a blocking thread (a thousand waiting there would take every thread the
    /// connections' holders need to finish).
    permits: std::sync::Arc<tokio::sync::Semaphore>,
}

impl fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgDatabase").field("target", &self.target).finish_non_exhaustive()
    }
}

/// Runs `f`, a call of the synchronous `postgres` client, where that client can run: on this
/// thread, or, when this thread drives a tokio runtime (the client blocks on a runtime of its
/// own, and tokio refuses to nest one), on a thread of its own for the call. So planlock's
/// synchronous store calls work from async code on any executor.
pub(crate) fn off_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(value) => value,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

impl PgDatabase {
    /// Connects to `url` (`postgres://user:password@host:port/db` or `host=… dbname=…`),
    /// applies the migrations this library has and the database lacks, and keeps a pool.
    pub fn connect(url: &str) -> Result<PgDatabase, PgError> {
        PgDatabase::connect_with(url, PgOptions::default())
    }

    /// [`connect`](Self::connect) with options.
    pub fn connect_with(url: &str, options: PgOptions) -> Result<PgDatabase, PgError> {
        let mut config: Config = url.parse().map_err(|e: postgres::Error| PgError::Url { reason: e.to_string() })?;
        // A `connect_timeout` in the URL wins.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("planlock");
        }
        let target = describe(&config);
        // One connection first, for a precise error and the migrations.
        let timeout = config.get_connect_timeout().copied().unwrap_or(options.connect_timeout);
        let mut client = connect_within(&config, timeout, &target)?;
        migrate(&mut client, &target)?;
        drop(client);
        // No test query on each checkout (a round trip per use): a connection the server dropped
        // fails its statement, and the pool discards it when it comes back closed.
        let pool = r2d2::Pool::builder()
            .max_size(options.max_connections.max(1))
            .min_idle(Some(0))
            .test_on_check_out(false)
            .connection_timeout(config.get_connect_timeout().copied().unwrap_or(options.connect_timeout))
            .build_unchecked(conn::Manager::new(config));
        let size = options.max_connections.max(1) as usize;
        let cycles = std::sync::Arc::new(cycle::CycleTransactions::new(size));
        let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(size));
        Ok(PgDatabase { pool, target, cycles, permits })
    }

    /// Where the database is: host, port, database and user (never the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The registry of the cycles held open on this pool ([`cycle`]).
    pub(crate) fn cycles(&self) -> &std::sync::Arc<cycle::CycleTransactions> {
        &self.cycles
    }

    /// A permit to take a connection from the pool (first come, first served), waited for
    /// without holding a thread; the pool has a connection for each permit given out.
    pub(crate) async fn permit(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        self.permits.clone().acquire_owned().await.ok()
    }

    /// A connection from the pool.
    pub(crate) fn connection(&self) -> Result<PgConnection, PgError> {
        self.pool.get().map_err(|e| PgError::Connect { target: self.target.clone(), reason: e.to_string() })
    }

    /// A failed statement, as an error naming what was being done.
    pub(crate) fn failed(&self, doing: &'static str) -> impl Fn(postgres::Error) -> PgError + '_ {
        move |e| PgError::Query { target: self.target.clone(), doing, reason: reason(&e) }
    }

    /// The schema version the database has.
    pub fn schema_version(&self) -> Result<i32, PgError> {
        let mut conn = self.connection()?;
        let row = conn
            .query_one("SELECT COALESCE(max(version), 0) FROM planlock_schema_migrations", &[])
            .map_err(self.failed("reading the schema version"))?;
        Ok(row.get(0))
    }
}

/// Connects, giving up after `timeout` in all: the client's own `connect_timeout` bounds only
/// opening the socket, and a server that accepts and never answers would hold it forever. The
/// attempt runs on its own thread; one that is given up ends when the socket does.
fn connect_within(config: &Config, timeout: Duration, target: &str) -> Result<Client, PgError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let attempt = config.clone();
    std::thread::Builder::new()
        .name("planlock-pg-connect".into())
        .spawn(move || {
            let _ = tx.send(attempt.connect(NoTls));
        })
        .map_err(|e| PgError::Connect { target: target.to_owned(), reason: format!("cannot start a thread: {e}") })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(PgError::Connect { target: target.to_owned(), reason: reason(&e) }),
        Err(_) => Err(PgError::Connect {
            target: target.to_owned(),
            reason: format!("no answer within {} ms (connect timeout)", timeout.as_millis()),
        }),
    }
}

/// What the server or the client said, without the connection string.
pub(crate) fn reason(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        }
    }
}

/// `host:port/dbname as user`, for messages.
fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().or(config.get_user()).unwrap_or("postgres");
    let user = config.get_user().unwrap_or("(default user)");
    format!("{host}:{port}/{db} as {user}")
}

/// Applies the migrations the database lacks, in one transaction under an advisory lock.
fn migrate(client: &mut Client, target: &str) -> Result<(), PgError> {
    let failed =
        |doing| move |e: postgres::Error| PgError::Query { target: target.to_owned(), doing, reason: reason(&e) };
    let mut tx = client.transaction().map_err(failed("starting the migration"))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(failed("locking for the migration"))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS planlock_schema_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .map_err(failed("creating the migrations table"))?;
    let found: i32 = tx
        .query_one("SELECT COALESCE(max(version), 0) FROM planlock_schema_migrations", &[])
        .map_err(failed("reading the schema version"))?
        .get(0);
    if found > SCHEMA_VERSION {
        return Err(PgError::SchemaTooNew { target: target.to_owned(), found, known: SCHEMA_VERSION });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.batch_execute(sql).map_err(failed("applying a migration"))?;
        tx.execute("INSERT INTO planlock_schema_migrations (version) VALUES ($1)", &[version])
            .map_err(failed("recording a migration"))?;
    }
    tx.commit().map_err(failed("committing the migration"))
}
