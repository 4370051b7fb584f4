//! A pooled connection that keeps its statements prepared.
//!
//! A statement sent as text is parsed, analysed and planned by the server every time; at a few
//! dozen statements a cycle that was most of PostgreSQL's CPU per cycle. [`Conn`] prepares each
//! SQL text once per connection and runs it by name after that (one round trip, as before: bind
//! and execute), so the server parses it once and can keep its plan. The texts are planlock's
//! own, a few dozen at most; the cache is bounded all the same.

use std::collections::HashMap;

use postgres::types::{ToSql, Type};
use postgres::{Client, Config, Error, Row, Statement};

/// The most statements one connection keeps prepared (planlock has a few dozen texts); past it
/// the cache starts again.
const MAX_PREPARED: usize = 256;

/// A statement parameter with its type.
pub(crate) type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// A connection and the statements it has prepared.
pub(crate) struct Conn {
    client: Client,
    prepared: HashMap<String, Statement>,
}

impl Conn {
    /// The statement of `sql`, prepared on this connection the first time (with `types` for
    /// its parameters; empty: the server infers them).
    fn statement(&mut self, sql: &str, types: &[Type]) -> Result<Statement, Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare_typed(sql, types)?;
        if self.prepared.len() >= MAX_PREPARED {
            self.prepared.clear();
        }
        self.prepared.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    /// Runs `sql`, returning its rows.
    pub(crate) fn query(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, Error> {
        let statement = self.statement(sql, &[])?;
        self.client.query(&statement, params)
    }

    /// Runs `sql`, returning its row, if any (an error if more than one).
    pub(crate) fn query_opt(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, Error> {
        let statement = self.statement(sql, &[])?;
        self.client.query_opt(&statement, params)
    }

    /// Runs `sql`, returning its one row.
    pub(crate) fn query_one(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, Error> {
        let statement = self.statement(sql, &[])?;
        self.client.query_one(&statement, params)
    }

    /// Runs `sql`, returning how many rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, Error> {
        let statement = self.statement(sql, &[])?;
        self.client.execute(&statement, params)
    }

    /// Runs `sql` with parameters of the given types, returning its row, if any.
    pub(crate) fn query_typed_opt(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, Error> {
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.statement(sql, &types)?;
        let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|(v, _)| *v).collect();
        self.client.query_opt(&statement, &values)
    }

    /// [`query_typed_opt`](Self::query_typed_opt) for a statement of any number of rows.
    pub(crate) fn query_typed(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, Error> {
        let types: Vec<Type> = params.iter().map(|(_, t)| t.clone()).collect();
        let statement = self.statement(sql, &types)?;
        let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|(v, _)| *v).collect();
        self.client.query(&statement, &values)
    }

    /// Runs `sql`, text of one or more statements without parameters, in one round trip.
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<(), Error> {
        self.client.batch_execute(sql)
    }
}

/// Opens the pool's connections ([`r2d2::ManageConnection`]).
#[derive(Debug)]
pub(crate) struct Manager {
    config: Config,
}

impl Manager {
    /// Connections made with `config`.
    pub(crate) fn new(config: Config) -> Manager {
        Manager { config }
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Error;

    fn connect(&self) -> Result<Conn, Error> {
        Ok(Conn { client: self.config.connect(postgres::NoTls)?, prepared: HashMap::new() })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Error> {
        conn.client.simple_query("").map(drop)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.client.is_closed()
    }
}
