//! Connections and their pool, on planlock's I/O runtime (`crate::io`).
//!
//! - A [`Conn`] keeps every statement it has run prepared (a bounded cache keyed by the SQL
//!   text): the server parses and plans planlock's few dozen statements once per connection,
//!   which was most of its CPU per cycle. With a cache of 0 (`statement_cache_capacity=0` in the
//!   URL: behind a pooler in transaction mode, which hands each transaction another server
//!   connection, where a named statement is missing or another client's) every statement is
//!   sent unnamed, parsed and planned each time, its parameters' types given.
//! - Every statement goes through [`Conn::pipeline`]: the statements of a batch (and a deferred
//!   `BEGIN`, and a `COMMIT` after them) are sent before any answer is awaited, so a batch is one
//!   round trip to the server (tokio-postgres queues them in order on the connection). Each
//!   batch is counted ([`PgDatabase::round_trips`](super::PgDatabase::round_trips)).
//! - The [`Pool`] hands out connections to async callers: a wait for one is on a fair semaphore
//!   (first come, first served) and holds no thread. A connection comes back when its holder
//!   drops it; one left inside a transaction is rolled back first, on the I/O runtime, and one
//!   the server closed is dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{join_all, join3};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Error, NoTls, Row, Statement};

use super::{PgError, reason};

/// The most statements one connection keeps prepared by default (planlock has a few dozen
/// texts); past it the cache starts again.
pub(crate) const STATEMENT_CACHE: usize = 256;

/// A statement parameter with its type.
pub(crate) type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// One statement of a [`Conn::pipeline`]: its SQL, its parameters, and their types (none: the
/// server infers them).
pub(crate) struct Query<'a> {
    sql: &'a str,
    types: Vec<Type>,
    params: Vec<&'a (dyn ToSql + Sync)>,
}

impl<'a> Query<'a> {
    /// Each parameter with its type: as given, or the first of [`SENT_TYPES`] it accepts.
    fn typed_params(&self) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
        self.params
            .iter()
            .enumerate()
            .map(|(i, p)| (*p, self.types.get(i).cloned().unwrap_or_else(|| type_of(*p))))
            .collect()
    }

    /// `sql` with `params`, their types inferred by the server.
    pub(crate) fn new(sql: &'a str, params: &[&'a (dyn ToSql + Sync)]) -> Query<'a> {
        Query { sql, types: Vec::new(), params: params.to_vec() }
    }

    /// `sql` with `params` of the given types.
    pub(crate) fn typed(sql: &'a str, params: &[Param<'a>]) -> Query<'a> {
        let types = params.iter().map(|(_, t)| t.clone()).collect();
        Query { sql, types, params: params.iter().map(|(v, _)| *v).collect() }
    }
}

/// The types planlock's statements take, in the order a parameter of unknown type is tried
/// against them ([`type_of`]).
const SENT_TYPES: [Type; 19] = [
    Type::TEXT,
    Type::INT8,
    Type::INT4,
    Type::INT2,
    Type::FLOAT8,
    Type::FLOAT4,
    Type::BOOL,
    Type::UUID,
    Type::BYTEA,
    Type::JSONB,
    Type::TIMESTAMPTZ,
    Type::TEXT_ARRAY,
    Type::INT8_ARRAY,
    Type::INT4_ARRAY,
    Type::UUID_ARRAY,
    Type::FLOAT4_ARRAY,
    Type::FLOAT8_ARRAY,
    Type::BYTEA_ARRAY,
    Type::BOOL_ARRAY,
];

/// The type a parameter is sent as when its statement did not say: the first of [`SENT_TYPES`]
/// the value accepts (`String` is `text`, `i64` is `int8`, `Vec<String>` is `text[]`), which
/// the server casts where a statement needs another. What lets every statement go unnamed.
fn type_of(param: &(dyn ToSql + Sync)) -> Type {
    let mut scratch = bytes::BytesMut::new();
    SENT_TYPES
        .iter()
        .find(|ty| {
            scratch.clear();
            !matches!(param.to_sql_checked(ty, &mut scratch), Err(e) if e.is::<tokio_postgres::types::WrongType>())
        })
        .cloned()
        .unwrap_or(Type::UNKNOWN)
}

/// How a batch ends its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    /// It stays open (or there is none).
    Stay,
    /// `COMMIT` goes with the batch: if a statement failed, the server rolls back instead.
    Commit,
}

/// A connection and the statements it has prepared.
pub(crate) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
    /// Whether a transaction was begun and not ended: such a connection is rolled back before
    /// it serves anyone else.
    pub(crate) in_transaction: bool,
    /// A `BEGIN` (with its `SET LOCAL`s) not sent yet: it goes with the next batch.
    begin: Option<String>,
    /// The round trips of the database's connections.
    trips: Arc<AtomicU64>,
    /// The tenant every transaction is begun in (`SET LOCAL planlock.tenant`), if any.
    tenant: Option<Arc<str>>,
    /// Every transaction is read only (a role that sees every tenant, asked to: `--all-tenants`).
    pub(crate) read_only: bool,
    /// How many statements are kept prepared by name; 0: every statement is sent unnamed.
    cache: usize,
}

impl Conn {
    /// What begins a transaction here besides `begin`: the tenant, and read-only.
    fn scoped(&self, begin: &str) -> String {
        let mut sql = begin.to_owned();
        if self.read_only {
            // Every tenant's rows, read only (`planlock_mine`, schema 16).
            sql.push_str("; SET TRANSACTION READ ONLY; SET LOCAL planlock.all_tenants = 'on'");
        }
        if let Some(tenant) = &self.tenant {
            sql.push_str(&format!("; SET LOCAL planlock.tenant = '{tenant}'"));
        }
        sql
    }

    /// The statement of `sql`, prepared on this connection the first time (with `types` for
    /// its parameters; empty: the server infers them).
    async fn statement(&mut self, sql: &str, types: &[Type]) -> Result<Statement, Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        self.trips.fetch_add(1, Ordering::Relaxed);
        let statement = self.client.prepare_typed(sql, types).await?;
        if self.prepared.len() >= self.cache {
            self.prepared.clear();
        }
        self.prepared.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Runs `queries` in order, in one round trip: each is sent before any answer is awaited,
    /// after a deferred `BEGIN` and before a `COMMIT` if `then` says so. Their rows, in order, or
    /// the first failure. In a transaction a failed statement aborts it: the statements after it
    /// fail too, and a `COMMIT` sent with them rolls back. Outside one each statement commits
    /// alone: batch only reads there.
    pub(crate) async fn pipeline(&mut self, queries: &[Query<'_>], then: Then) -> Result<Vec<Vec<Row>>, Error> {
        self.pipeline_at(queries, then).await.map_err(|(_, e)| e)
    }

    /// [`pipeline`](Self::pipeline), its failure with the index of the query that failed first
    /// (`None`: the `BEGIN`, the `COMMIT`, or preparing a statement).
    pub(crate) async fn pipeline_at(
        &mut self,
        queries: &[Query<'_>],
        then: Then,
    ) -> Result<Vec<Vec<Row>>, (Option<usize>, Error)> {
        let mut statements = Vec::with_capacity(queries.len());
        if self.cache > 0 {
            for query in queries {
                statements.push(self.statement(query.sql, &query.types).await.map_err(|e| (None, e))?);
            }
        }
        // A batch outside a transaction carries its tenant too (CONTRACT §20, amended): it is
        // sent in one of its own, begun with `SET LOCAL planlock.tenant` and committed with it,
        // in the same round trip. A pooler that drops the connection's startup options, or
        // hands it to another client, leaves no statement without its tenant.
        let own = self.begin.is_none() && !self.in_transaction && !queries.is_empty();
        let scoped = self.tenant.is_some() || self.read_only;
        let begin = match self.begin.take() {
            Some(begin) => Some(begin),
            None if own && scoped => {
                self.in_transaction = true;
                Some(self.scoped("BEGIN"))
            }
            None => None,
        };
        let commit = (then == Then::Commit || (own && scoped)) && self.in_transaction;
        if queries.is_empty() && !commit && begin.is_none() {
            return Ok(Vec::new());
        }
        if queries.is_empty() && commit && begin.is_some() {
            // A transaction that never ran a statement: nothing to commit.
            self.in_transaction = false;
            return Ok(Vec::new());
        }
        self.trips.fetch_add(1, Ordering::Relaxed);
        let client = &self.client;
        let begun = async {
            match &begin {
                Some(sql) => client.batch_execute(sql).await,
                None => Ok(()),
            }
        };
        let ran = async {
            if self.cache > 0 {
                join_all(statements.iter().zip(queries).map(|(s, q)| client.query(s, &q.params))).await
            } else {
                let typed: Vec<_> = queries.iter().map(Query::typed_params).collect();
                join_all(queries.iter().zip(&typed).map(|(q, params)| client.query_typed(q.sql, params))).await
            }
        };
        let committed = async {
            match commit {
                true => client.batch_execute("COMMIT").await,
                false => Ok(()),
            }
        };
        let (begun, ran, committed) = join3(begun, ran, committed).await;
        if commit {
            self.in_transaction = false;
        }
        begun.map_err(|e| (None, e))?;
        let mut rows = Vec::with_capacity(ran.len());
        for (at, ran) in ran.into_iter().enumerate() {
            rows.push(ran.map_err(|e| (Some(at), e))?);
        }
        committed.map_err(|e| (None, e))?;
        Ok(rows)
    }

    /// Runs `sql`, returning its rows.
    pub(crate) async fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        Ok(self.pipeline(&[Query::new(sql, params)], Then::Stay).await?.pop().unwrap_or_default())
    }

    /// Runs `sql`, returning its row, if any.
    pub(crate) async fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }

    /// Runs `sql` with parameters of the given types, returning its rows.
    pub(crate) async fn query_typed(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, Error> {
        Ok(self.pipeline(&[Query::typed(sql, params)], Then::Stay).await?.pop().unwrap_or_default())
    }

    /// [`query_typed`](Self::query_typed) for one row at most.
    pub(crate) async fn query_typed_opt(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, Error> {
        Ok(self.query_typed(sql, params).await?.into_iter().next())
    }

    /// Runs `sql`, text of one or more statements without parameters, in one round trip (with a
    /// deferred `BEGIN`, if any).
    pub(crate) async fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        match self.begin.take() {
            Some(begin) => self.client.batch_execute(&format!("{begin}; {sql}")).await,
            None => self.client.batch_execute(sql).await,
        }
    }

    /// Begins a transaction with `begin` (`BEGIN` and any `SET LOCAL`s), sent with the next
    /// batch: no round trip of its own. The connection's tenant is set in it (CONTRACT §20: per
    /// transaction, in the batch that begins it; a checked name, see `crate::pg::tenant`).
    pub(crate) fn begin(&mut self, begin: &str) {
        self.in_transaction = true;
        self.begin = Some(self.scoped(begin));
    }

    /// Commits the transaction (nothing to send if it ran no statement).
    pub(crate) async fn commit(&mut self) -> Result<(), Error> {
        self.pipeline(&[], Then::Commit).await.map(drop)
    }

    /// Rolls the transaction back.
    pub(crate) async fn rollback(&mut self) -> Result<(), Error> {
        self.in_transaction = false;
        if self.begin.take().is_some() {
            return Ok(());
        }
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.client.batch_execute("ROLLBACK").await
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Opens one connection within `timeout` in all (the client's own `connect_timeout` bounds only
/// opening the socket; a server that accepts and never answers would hold it forever). The
/// connection's task runs on the I/O runtime.
pub(crate) async fn connect(
    config: &Config,
    timeout: Duration,
    target: &str,
    trips: &Arc<AtomicU64>,
    tenant: Option<&Arc<str>>,
    cache: usize,
) -> Result<Conn, PgError> {
    let failed = |reason: String| PgError::Connect { target: target.to_owned(), reason };
    let runtime = crate::io::runtime().map_err(failed)?;
    let config = config.clone();
    let attempt = runtime.spawn(async move {
        let (client, connection) =
            tokio::time::timeout(timeout, config.connect(NoTls)).await.map_err(|_| None)?.map_err(Some)?;
        // The connection's messages are read and written by this task, as long as the client lives.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok::<_, Option<Error>>(client)
    });
    match attempt.await {
        Ok(Ok(client)) => {
            let (prepared, begin, tenant) = (HashMap::new(), None, tenant.cloned());
            Ok(Conn {
                client,
                prepared,
                in_transaction: false,
                begin,
                trips: trips.clone(),
                tenant,
                read_only: false,
                cache,
            })
        }
        Ok(Err(Some(e))) => Err(failed(reason(&e))),
        Ok(Err(None)) => Err(failed(format!("no answer within {} ms (connect timeout)", timeout.as_millis()))),
        Err(e) => Err(failed(format!("the connecting task ended: {e}"))),
    }
}

/// The connections of one database.
pub(crate) struct Pool {
    config: Config,
    timeout: Duration,
    target: String,
    idle: Mutex<Vec<Conn>>,
    permits: Arc<Semaphore>,
    /// The round trips of its connections.
    trips: Arc<AtomicU64>,
    /// The tenant of its connections.
    tenant: Option<Arc<str>>,
    /// Whether its connections' transactions are all read only.
    pub(crate) read_only: bool,
    /// How many statements each connection keeps prepared (0: none, all sent unnamed).
    cache: usize,
}

impl Pool {
    /// How its connections are made (the configuration, the connect timeout): what a listening
    /// connection of its own is made with.
    pub(crate) fn recipe(&self) -> (&Config, Duration) {
        (&self.config, self.timeout)
    }

    /// A pool of at most `size` connections made with `config`, each opened within `timeout`,
    /// each beginning its transactions in `tenant`.
    pub(crate) fn new(
        config: Config,
        timeout: Duration,
        target: String,
        size: usize,
        trips: Arc<AtomicU64>,
        tenant: Option<Arc<str>>,
        cache: usize,
    ) -> Pool {
        let permits = Arc::new(Semaphore::new(size.max(1)));
        Pool { config, timeout, target, idle: Mutex::default(), permits, trips, tenant, read_only: false, cache }
    }

    /// The round trips its connections have made to the server.
    pub(crate) fn round_trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    /// A connection, once one is free (a fair wait that holds no thread); an idle one, or a new one.
    pub(crate) async fn get(self: &Arc<Self>) -> Result<Pooled, PgError> {
        let permit = self.permits.clone().acquire_owned().await.map_err(|e| PgError::Connect {
            target: self.target.clone(),
            reason: format!("the pool is closed: {e}"),
        })?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(conn) if !conn.is_closed() => conn,
            _ => {
                let mut conn =
                    connect(&self.config, self.timeout, &self.target, &self.trips, self.tenant.as_ref(), self.cache)
                        .await?;
                conn.read_only = self.read_only;
                conn
            }
        };
        Ok(Pooled { conn: Some(conn), pool: self.clone(), permit: Some(permit) })
    }
}

/// A connection of the [`Pool`], given back when dropped.
pub(crate) struct Pooled {
    conn: Option<Conn>,
    pool: Arc<Pool>,
    /// Given back with the connection (after it, for a connection that must be rolled back).
    permit: Option<OwnedSemaphorePermit>,
}

impl std::ops::Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("a pooled connection until dropped")
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a pooled connection until dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else { return };
        if conn.is_closed() {
            return;
        }
        if !conn.in_transaction {
            self.pool.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            return;
        }
        // Left inside a transaction (its holder gave up: a cycle that failed or was dropped):
        // rolled back on the I/O runtime, then given back with its permit, so the pool never
        // has more connections out than it holds. Without the runtime, it is closed (the server
        // rolls back).
        let (pool, permit) = (self.pool.clone(), self.permit.take());
        if let Ok(runtime) = crate::io::runtime() {
            runtime.spawn(async move {
                if conn.rollback().await.is_ok() {
                    pool.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
                }
                drop(permit);
            });
        }
    }
}
