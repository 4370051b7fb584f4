//! A cycle's store writes, sent with its session save (CONTRACT §13: "a cycle's writes all come
//! after its last model call: they travel with the session save and its COMMIT").
//!
//! Each keyed write is one statement: a call of one of the schema's write functions (`v8.sql`),
//! which claims the key, checks, changes and records it in the caller's transaction. A write made
//! in a session's cycle is not sent when its step runs: it is kept in the cycle as a
//! [`PendingWrite`], and the step goes on with the result the write will return. The session save
//! sends the cycle's writes after its compare-and-set and before its COMMIT, in one round trip;
//! the first write that fails is named by its index in that batch, and its failure is its
//! step's. The server rolls back all of the cycle then, its save included.
//!
//! The result a step goes on with is the write's own (`expected`), unless the key's write was
//! made before (a cycle run again after a pause that kept some of its writes was abandoned):
//! the cycle reads which of its keys are written, once, before its first write is kept, and a
//! written key's step gets what it returned, sending nothing. The function raises (PLW01) if the
//! key turns out written with another result by the time the batch runs, so a result the cycle
//! went on with is never one the database does not hold.

use tokio_postgres::types::ToSql;

use super::Query;

/// One keyed write of a cycle, kept until its session save sends it.
pub(crate) struct PendingWrite {
    /// The step that made it (none for a program's own call in a cycle): its failure is this
    /// step's.
    pub(crate) step_id: Option<String>,
    /// What it does, for its failure's message ("storing a decision").
    pub(crate) doing: &'static str,
    /// The statement: `SELECT planlock_…(…, $n)`, the last parameter the result the step went on
    /// with.
    pub(crate) sql: &'static str,
    /// Its parameters, the expected result last.
    pub(crate) params: Vec<Box<dyn ToSql + Send + Sync>>,
}

impl std::fmt::Debug for PendingWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingWrite").field("step_id", &self.step_id).field("doing", &self.doing).finish()
    }
}

impl PendingWrite {
    /// The statement to send.
    pub(crate) fn query(&self) -> Query<'_> {
        let params: Vec<&(dyn ToSql + Sync)> = self.params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect();
        Query::new(self.sql, &params)
    }
}

/// How a caller makes its own failure of a write the server refused, by kind: the write
/// contradicts what is stored (the write functions' `PLC01`, `PLW01`, or a broken uniqueness
/// rule), names something not stored (`PLN01`), or the database failed. The session store makes
/// a [`WriteFailure`](crate::session::WriteFailure) with it, a store its `StoreError`.
pub(crate) struct Kinds<T> {
    pub(crate) conflict: fn(String) -> T,
    pub(crate) not_found: fn(String) -> T,
    pub(crate) backend: fn(String) -> T,
}

/// What the server's error `e` says of a write that was `doing` something, made by `kinds`.
pub(crate) fn failure_of<T>(e: &tokio_postgres::Error, doing: &str, kinds: Kinds<T>) -> T {
    if let Some(db) = e.as_db_error() {
        match db.code().code() {
            "PLC01" | "PLW01" => return (kinds.conflict)(db.message().to_owned()),
            "PLN01" => return (kinds.not_found)(db.message().to_owned()),
            _ if *db.code() == tokio_postgres::error::SqlState::UNIQUE_VIOLATION => {
                return (kinds.conflict)(format!("{doing}: {}", super::reason(e)));
            }
            _ => {}
        }
    }
    (kinds.backend)(format!("{doing}: {}", super::reason(e)))
}
