//! The PostgreSQL database that many workers on many machines share (docs/CONTRACT.md, "More
//! than one machine"): [`PgDatabase`] connects, pools connections and applies the schema's
//! migrations; the session store (`session::postgres`) and the storage ports
//! (`store::postgres`) use it.
//!
//! Layer 3 (below the executor, whose cycle guard holds a cycle's kept writes, and the stores
//! that use it): it knows SQL and connections, and of the contract only how a failure is
//! classified.
//!
//! - The client is `tokio-postgres`, its connections driven by planlock's I/O runtime
//!   (`crate::io`): every call is a future awaited from any executor, and a wait (for a
//!   connection, for the server) holds no thread. Connections are pooled by planlock's own async
//!   pool, each keeping its statements prepared (`src/pg/conn.rs`).
//! - Migrations are applied on first use, in one transaction under an advisory lock (two workers
//!   starting at once apply them once), recorded in `planlock_schema_migrations`. A database whose
//!   schema is newer than this library knows is refused: an older worker must not write to it.
//! - No error names the password: connection failures name the host, port, database and user.

use std::fmt;
use std::time::Duration;

use std::sync::Arc;

use tokio_postgres::Config;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

use crate::contract::registry::{Failure, FailureKind};

mod conn;
pub(crate) mod cycle;
mod listen;
mod tenant;
pub use cycle::PgSession;
pub use tenant::MAX_TENANT_BYTES;
pub(crate) mod writes;
pub(crate) use listen::Heard;

pub(crate) use conn::{Conn, Param, Pooled, Query, Then};

/// How long connecting may take unless configured otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this library writes and reads.
pub const SCHEMA_VERSION: i32 = 19;

/// Any number, the same everywhere: the advisory lock migrations run under.
const MIGRATION_LOCK: i64 = 0x706c_616e_6c6f_636b; // "planlock"

/// The migrations, in order. Each runs once, in the transaction that records it.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("pg/v1.sql")),
    (2, include_str!("pg/v2.sql")),
    (3, include_str!("pg/v3.sql")),
    (4, include_str!("pg/v4.sql")),
    (5, include_str!("pg/v5.sql")),
    (6, include_str!("pg/v6.sql")),
    (7, include_str!("pg/v7.sql")),
    (8, include_str!("pg/v8.sql")),
    (9, include_str!("pg/v9.sql")),
    (10, include_str!("pg/v10.sql")),
    (11, include_str!("pg/v11.sql")),
    (12, include_str!("pg/v12.sql")),
    (13, include_str!("pg/v13.sql")),
    (14, include_str!("pg/v14.sql")),
    (15, include_str!("pg/v15.sql")),
    (16, include_str!("pg/v16.sql")),
    (17, include_str!("pg/v17.sql")),
    (18, include_str!("pg/v18.sql")),
    (19, include_str!("pg/v19.sql")),
];

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
    /// The pgvector tier cannot be installed or used here.
    #[error("PostgreSQL at {target}: the pgvector tier: {reason}")]
    Pgvector {
        /// Where.
        target: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The tenant cannot be used: not a tenant's name, or a role that would see every tenant.
    #[error("the tenant `{tenant}` cannot be used: {reason}")]
    Tenant {
        /// The tenant, printable.
        tenant: String,
        /// Why, and what to do.
        reason: String,
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
            PgError::Pgvector { .. } => "pg-pgvector",
            PgError::Tenant { .. } => "pg-tenant",
        }
    }

    /// FailFast: without its database a runtime cannot know its sessions' state.
    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// How to connect.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// How long opening one connection may take.
    pub connect_timeout: Duration,
    /// The most connections the pool keeps open.
    pub max_connections: u32,
    /// The tenant every statement works in (CONTRACT §20): row-level security shows and lets
    /// write only its rows. 1 to 64 letters, digits, `.`, `_` or `-`. `None`: the tenant `''`
    /// of a database of one tenant.
    pub tenant: Option<String>,
    /// Without a tenant, as a role that bypasses row-level security (a superuser, BYPASSRLS):
    /// read every tenant's rows, in read-only transactions (the CLI's `--all-tenants`). Such a
    /// role without a tenant is refused once the database holds another tenant than `''`,
    /// unless it asks for this.
    pub all_tenants: bool,
    /// How many statements each connection keeps prepared by name (256). `0`: none; every
    /// statement is sent unnamed, which a pooler in transaction mode needs (PgBouncer before
    /// 1.21, or without `max_prepared_statements`: it hands each transaction another server
    /// connection), at the cost of the server parsing and planning each. The URL's
    /// `statement_cache_capacity=N` wins.
    pub statement_cache_capacity: usize,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_connections: 4,
            tenant: None,
            all_tenants: false,
            statement_cache_capacity: conn::STATEMENT_CACHE,
        }
    }
}

impl PgOptions {
    /// These options, in tenant `tenant`.
    ///
    /// ```no_run
    /// use planlock::pg::{PgDatabase, PgOptions};
    /// let acme = PgDatabase::connect_with("postgres://planlock@db/planlock", PgOptions::default().tenant("acme"))?;
    /// # Ok::<(), planlock::pg::PgError>(())
    /// ```
    pub fn tenant(self, tenant: impl Into<String>) -> PgOptions {
        PgOptions { tenant: Some(tenant.into()), ..self }
    }
}

/// The URL without planlock's own parameter `statement_cache_capacity` (as sqlx names it; the
/// driver knows no such option), and its value: in a URL's query (`?statement_cache_capacity=0`)
/// or as a `key=value` word of a connection string.
fn statement_cache(url: &str) -> Result<(String, Option<usize>), PgError> {
    const KEY: &str = "statement_cache_capacity";
    if !url.contains(KEY) {
        return Ok((url.to_owned(), None));
    }
    let mut found = None;
    let mut keep = |pair: &str| match pair.strip_prefix(KEY).and_then(|rest| rest.strip_prefix('=')) {
        Some(value) => {
            found = Some(value.trim().parse::<usize>().map_err(|_| PgError::Url {
                reason: format!("{KEY} is `{value}`: give a whole number of statements (0: none kept prepared)"),
            }));
            false
        }
        None => true,
    };
    let url = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            Some((base, query)) => {
                let kept: Vec<&str> = query.split('&').filter(|pair| keep(pair)).collect();
                if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
            }
            None => url.to_owned(),
        }
    } else {
        url.split_whitespace().filter(|word| keep(word)).collect::<Vec<_>>().join(" ")
    };
    Ok((url, found.transpose()?))
}

/// A PostgreSQL database with planlock's schema: a connection pool, migrated on connect. Clones
/// share the pool.
#[derive(Clone)]
pub struct PgDatabase {
    pool: Arc<conn::Pool>,
    target: Arc<str>,
}

impl fmt::Debug for PgDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgDatabase").field("target", &self.target).finish_non_exhaustive()
    }
}

impl PgDatabase {
    /// Connects to `url` (`postgres://user:password@host:port/db` or `host=… dbname=…`),
    /// applies the migrations this library has and the database lacks, and keeps a pool.
    pub fn connect(url: &str) -> Result<PgDatabase, PgError> {
        PgDatabase::connect_with(url, PgOptions::default())
    }

    /// [`connect`](Self::connect) with options.
    pub fn connect_with(url: &str, options: PgOptions) -> Result<PgDatabase, PgError> {
        crate::io::block_on(PgDatabase::connect_async(url, options))
    }

    /// [`connect_with`](Self::connect_with), awaited.
    pub async fn connect_async(url: &str, options: PgOptions) -> Result<PgDatabase, PgError> {
        let (url, cache) = statement_cache(url)?;
        let cache = cache.unwrap_or(options.statement_cache_capacity);
        let mut config: Config =
            url.parse().map_err(|e: tokio_postgres::Error| PgError::Url { reason: e.to_string() })?;
        // A `connect_timeout` in the URL wins.
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("planlock");
        }
        let target = describe(&config);
        let timeout = config.get_connect_timeout().copied().unwrap_or(options.connect_timeout);
        // One connection first, for a precise error and the migrations.
        let trips = Arc::default();
        // A tenant is set for the connection as it opens (`-c planlock.tenant=…`, no round trip)
        // and in every transaction's BEGIN (`Conn::begin`).
        let tenant = options.tenant.as_deref().map(tenant::checked).transpose()?;
        if let Some(tenant) = &tenant {
            let options = format!("{} -c planlock.tenant={tenant}", config.get_options().unwrap_or_default());
            config.options(options.trim());
        }
        let mut first = conn::connect(&config, timeout, &target, &trips, tenant.as_ref(), cache).await?;
        migrate(&mut first, &target).await?;
        let read_only = match &tenant {
            Some(tenant) => {
                tenant::refuse_bypass(&mut first, &target, tenant).await?;
                false
            }
            None => tenant::refuse_crossing(&mut first, &target, options.all_tenants).await?,
        };
        let size = options.max_connections.max(1) as usize;
        let mut pool = conn::Pool::new(config, timeout, target.clone(), size, trips, tenant, cache);
        pool.read_only = read_only;
        first.read_only = read_only;
        Ok(PgDatabase { pool: Arc::new(pool), target: Arc::from(target) })
    }

    /// Where the database is: host, port, database and user (never the password).
    pub fn target(&self) -> &str {
        &self.target
    }

    /// How many round trips to the server this database's connections have made (a pipelined
    /// batch of statements is one): what a cycle costs the server beyond its statements.
    pub fn round_trips(&self) -> u64 {
        self.pool.round_trips()
    }

    /// Whether `other` shares this database's pool (is a clone of it): a store joins a cycle
    /// only on the pool the cycle began on.
    pub(crate) fn same_pool(&self, other: &PgDatabase) -> bool {
        Arc::ptr_eq(&self.pool, &other.pool)
    }

    /// A connection from the pool, once one is free (the wait holds no thread).
    pub(crate) async fn connection(&self) -> Result<Pooled, PgError> {
        self.pool.get().await
    }

    /// A failed statement, as an error naming what was being done.
    pub(crate) fn failed(&self, doing: &'static str) -> impl Fn(tokio_postgres::Error) -> PgError + '_ {
        move |e| PgError::Query { target: self.target.to_string(), doing, reason: reason(&e) }
    }

    /// The schema version the database has.
    pub fn schema_version(&self) -> Result<i32, PgError> {
        crate::io::block_on(async {
            let mut conn = self.connection().await?;
            let row = conn
                .query_opt("SELECT COALESCE(max(version), 0) FROM planlock_schema_migrations", &[])
                .await
                .map_err(self.failed("reading the schema version"))?;
            Ok(row.map_or(0, |row| row.get(0)))
        })
    }
}

/// What the server or the client said, without the connection string.
pub(crate) fn reason(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        // A named statement missing, or another client's: a pooler in transaction mode.
        Some(db) if [SqlState::INVALID_SQL_STATEMENT_NAME, SqlState::DUPLICATE_PSTATEMENT].contains(db.code()) => {
            format!(
                "{} ({}); behind a pooler in transaction mode, add `statement_cache_capacity=0` to the URL",
                db.message(),
                db.code().code()
            )
        }
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
async fn migrate(conn: &mut Conn, target: &str) -> Result<(), PgError> {
    let failed =
        |doing| move |e: tokio_postgres::Error| PgError::Query { target: target.to_owned(), doing, reason: reason(&e) };
    conn.begin("BEGIN");
    conn.query("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(failed("locking for the migration"))?;
    // Created only where missing: a role that may only use the tables (an administrator
    // migrated them) has no right to create one, even one that exists.
    let exists = conn
        .query_opt("SELECT to_regclass('planlock_schema_migrations') IS NOT NULL", &[])
        .await
        .map_err(failed("looking for the migrations table"))?
        .is_some_and(|row| row.get::<_, bool>(0));
    if !exists {
        conn.batch_execute(
            "CREATE TABLE IF NOT EXISTS planlock_schema_migrations (
                 version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(failed("creating the migrations table"))?;
    }
    let found: i32 = conn
        .query_opt("SELECT COALESCE(max(version), 0) FROM planlock_schema_migrations", &[])
        .await
        .map_err(failed("reading the schema version"))?
        .map_or(0, |row| row.get(0));
    if found > SCHEMA_VERSION {
        let _ = conn.rollback().await;
        return Err(PgError::SchemaTooNew { target: target.to_owned(), found, known: SCHEMA_VERSION });
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        conn.batch_execute(sql).await.map_err(failed("applying a migration"))?;
        conn.query("INSERT INTO planlock_schema_migrations (version) VALUES ($1)", &[version])
            .await
            .map_err(failed("recording a migration"))?;
    }
    conn.commit().await.map_err(failed("committing the migration"))
}

/// `words` as `ILIKE` patterns, each matching a text that holds the word (`%`, `_` and `\\`
/// taken as themselves): the session search of the console's pages.
pub(crate) fn like_patterns(words: &[String]) -> Vec<String> {
    let escape = |word: &String| {
        let mut pattern = String::from("%");
        for c in word.chars() {
            if matches!(c, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern + "%"
    };
    words.iter().map(escape).collect()
}

#[cfg(test)]
mod tests {
    use super::statement_cache;

    #[test]
    fn the_statement_cache_is_read_from_either_form_and_taken_out() {
        let url = "postgres://u@h/db?statement_cache_capacity=0&sslmode=disable";
        assert_eq!(statement_cache(url).unwrap(), ("postgres://u@h/db?sslmode=disable".into(), Some(0)));
        let url = "postgres://u@h/db?statement_cache_capacity=12";
        assert_eq!(statement_cache(url).unwrap(), ("postgres://u@h/db".into(), Some(12)));
        let url = "host=h  user=u statement_cache_capacity=0 dbname=db";
        assert_eq!(statement_cache(url).unwrap(), ("host=h user=u dbname=db".into(), Some(0)));
        let untouched = "host=h password='a  b'";
        assert_eq!(statement_cache(untouched).unwrap(), (untouched.into(), None));
        let refused = statement_cache("postgres://h/db?statement_cache_capacity=-1").unwrap_err();
        assert!(refused.to_string().contains("give a whole number"), "{refused}");
    }
}
