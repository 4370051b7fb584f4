//! Connections and their pool, on planlock's I/O runtime (`crate::io`).
//!
//! - A [`Conn`] keeps every statement it has run prepared (a bounded cache keyed by the SQL
//!   text): the server parses and plans planlock's few dozen statements once per connection,
//!   which was most of its CPU per cycle. Statements sent without waiting for each other's answer
//!   share round trips (tokio-postgres pipelines them).
//! - The [`Pool`] hands out connections to async callers: a wait for one is on a fair semaphore
//!   (first come, first served) and holds no thread. A connection comes back when its holder
//!   drops it; one left inside a transaction is rolled back first, on the I/O runtime, and one
//!   the server closed is dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config, Error, NoTls, Row, Statement};

use super::{PgError, reason};

/// The most statements one connection keeps prepared (planlock has a few dozen texts); past it
/// the cache starts again.
const MAX_PREPARED: usize = 256;

/// A statement parameter with its type.
pub(crate) type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// A connection and the statements it has prepared.
pub(crate) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
    /// Whether a transaction was begun and not ended: such a connection is rolled back before
    /// it serves anyone else.
    pub(crate) in_transaction: bool,
}

impl Conn {
    /// The statement of `sql`, prepared on this connection the first time (with `types` for
    /// its parameters; empty: the server infers them).
    async fn statement(&mut self, sql: &str, types: &[Type]) -> Result<Statement, Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare_typed(sql, types).await?;
        if self.prepared.len() >= MAX_PREPARED {
            self.prepared.clear();
        }
        self.prepared.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Runs `sql`, returning its rows.
    pub(crate) async fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        let statement = self.statement(sql, &[]).await?;
        self.client.query(&statement, params).await
    }

    /// Runs `sql`, returning its row, if any (an error if more than one).
    pub(crate) async fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error> {
        let statement = self.statement(sql, &[]).await?;
        self.client.query_opt(&statement, params).await
    }

    /// Runs `sql`, returning its one row.
    pub(crate) async fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error> {
        let statement = self.statement(sql, &[]).await?;
        self.client.query_one(&statement, params).await
    }

    /// Runs `sql`, returning how many rows it changed.
    pub(crate) async fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        let statement = self.statement(sql, &[]).await?;
        self.client.execute(&statement, params).await
    }

    /// Runs `sql` with parameters of the given types, returning its rows.
    pub(crate) async fn query_typed(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, Error> {
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.statement(sql, &types).await?;
        let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|(v, _)| *v).collect();
        self.client.query(&statement, &values).await
    }

    /// [`query_typed`](Self::query_typed) for one row at most.
    pub(crate) async fn query_typed_opt(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, Error> {
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.statement(sql, &types).await?;
        let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|(v, _)| *v).collect();
        self.client.query_opt(&statement, &values).await
    }

    /// Runs `sql`, text of one or more statements without parameters, in one round trip.
    pub(crate) async fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.client.batch_execute(sql).await
    }

    /// Begins a transaction with `begin` (`BEGIN` and any `SET LOCAL`s, one round trip).
    pub(crate) async fn begin(&mut self, begin: &str) -> Result<(), Error> {
        self.in_transaction = true;
        self.client.batch_execute(begin).await
    }

    /// Commits the transaction.
    pub(crate) async fn commit(&mut self) -> Result<(), Error> {
        let done = self.client.batch_execute("COMMIT").await;
        self.in_transaction = false;
        done
    }

    /// Rolls the transaction back.
    pub(crate) async fn rollback(&mut self) -> Result<(), Error> {
        let done = self.client.batch_execute("ROLLBACK").await;
        self.in_transaction = false;
        done
    }

    fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

/// Opens one connection within `timeout` in all (the client's own `connect_timeout` bounds only
/// opening the socket; a server that accepts and never answers would hold it forever). The
/// connection's task runs on the I/O runtime.
pub(crate) async fn connect(config: &Config, timeout: Duration, target: &str) -> Result<Conn, PgError> {
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
        Ok(Ok(client)) => Ok(Conn { client, prepared: HashMap::new(), in_transaction: false }),
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
}

impl Pool {
    /// A pool of at most `size` connections made with `config`, each opened within `timeout`.
    pub(crate) fn new(config: Config, timeout: Duration, target: String, size: usize) -> Pool {
        Pool { config, timeout, target, idle: Mutex::default(), permits: Arc::new(Semaphore::new(size.max(1))) }
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
            _ => connect(&self.config, self.timeout, &self.target).await?,
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
