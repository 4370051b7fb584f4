//! [`PgBudget`]: a session's token budgets in its database (CONTRACT §20; the statements are
//! `v11.sql`'s), and the budgets of a tenant as a person sets and reads them.
//!
//! - A reservation is one statement on a connection of its own, committed at once: every
//!   budget covering the session locked in one order, checked, and reserved from, or none.
//! - The settlement of a completed or paused cycle is one more statement of its save's batch,
//!   committed with the save (so a save that fails settles nothing, and the runtime settles it
//!   alone); a failed cycle's is sent alone. It marks the reservation's own rows with what the
//!   call used and touches no budget, so a save never waits on one; the next reservation under
//!   the budget folds it in.
//! - A reservation commits without waiting for the WAL flush (it holds the budgets' rows until
//!   its commit, and every reservation of the tenant waits for them): a server crash may lose
//!   the last reservations, whose calls then go uncharged (their cycles cannot save either).
//! - A reservation names the worker holding the session's lease: once that lease is given up or
//!   runs out (a killed worker), the next reservation of a session under the same budget
//!   releases it.

use std::time::Duration;

use tokio_postgres::types::Type;
use uuid::Uuid;

use super::PgSessionStore;
use crate::exec::budget::{BudgetError, BudgetFuture, BudgetState, Charge, TokenAsk, TokenBudget, rfc3339};
use crate::pg::cycle::{PgCycle, Reservation};
use crate::pg::writes::PendingWrite;
use crate::pg::{PgDatabase, PgError, Then};
use crate::session::CycleGuard;

/// The settlement of reservations: ids, and what each used.
const SETTLE: &str = "SELECT planlock_budget_settle($1::uuid[], $2::int8[])";

/// One session's token budgets in its database: made from the session's store (its key and the
/// worker holding its lease), given to [`RuntimeBuilder::budget`](crate::runtime::RuntimeBuilder::budget).
///
/// ```no_run
/// use std::sync::Arc;
/// use planlock::pg::PgDatabase;
/// use planlock::session::postgres::{PgBudget, PgSessionStore};
/// let db = PgDatabase::connect("postgres://planlock@db.internal/planlock")?;
/// let store = PgSessionStore::open(&db, "team-a/conversation-42")?;
/// let budget = Arc::new(PgBudget::of(&store));
/// // Runtime::builder(policy_root, plan, store).budget(budget) …
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct PgBudget {
    db: PgDatabase,
    key: String,
    owner: Uuid,
}

impl PgBudget {
    /// The budgets of `store`'s session, reserved from under its lease.
    pub fn of(store: &PgSessionStore) -> PgBudget {
        PgBudget { db: store.database_of().clone(), key: store.key().to_owned(), owner: store.owner() }
    }

    fn unavailable(&self, doing: &'static str, reason: String) -> BudgetError {
        BudgetError::Unavailable { place: format!("PostgreSQL at {}", self.db.target()), doing, reason }
    }

    /// Settles `charges` now, on a connection of its own.
    async fn settle_alone(&self, charges: &[Charge]) -> Result<(), BudgetError> {
        let (ids, used) = columns(charges);
        let mut conn = self.db.connection().await.map_err(|e| self.unavailable("written", e.to_string()))?;
        conn.query_typed(SETTLE, &[(&ids, Type::UUID_ARRAY), (&used, Type::INT8_ARRAY)])
            .await
            .map_err(|e| self.unavailable("written", crate::pg::reason(&e)))?;
        Ok(())
    }
}

/// The settlement's two arrays.
fn columns(charges: &[Charge]) -> (Vec<Uuid>, Vec<i64>) {
    let ids = charges.iter().map(|c| c.id).collect();
    let used = charges.iter().map(|c| i64::try_from(c.used).unwrap_or(i64::MAX)).collect();
    (ids, used)
}

impl PgBudget {
    /// `ask` as the cycle's reservation.
    fn reservation(&self, ask: &TokenAsk<'_>) -> Reservation {
        let tokens = i64::try_from(ask.tokens).unwrap_or(i64::MAX);
        Reservation { id: ask.id, key: self.key.clone(), owner: self.owner, tokens, answer: None }
    }

    /// Sends `reservation` alone, now: its refusal's rows (none: reserved).
    async fn send(&self, reservation: &Reservation) -> Result<Vec<tokio_postgres::Row>, BudgetError> {
        let mut conn = self.db.connection().await.map_err(|e| self.unavailable("read", e.to_string()))?;
        // Committed without waiting for the WAL flush: the budgets' rows are locked until the
        // commit, and every reservation of the tenant waits for them (a flush each would put
        // them in single file behind the disk). A server crash may lose the last reservations,
        // whose calls then go uncharged; their cycles cannot save either.
        conn.begin("BEGIN; SET LOCAL synchronous_commit = off");
        let rows = conn
            .pipeline(&[reservation.query()], Then::Commit)
            .await
            .map_err(|e| self.unavailable("read", crate::pg::reason(&e)))?;
        Ok(rows.into_iter().next().unwrap_or_default())
    }

    /// The cycle of this session `cycle` holds, if any; a cycle of another session or database
    /// is refused (never reserved or settled outside it).
    fn joined<'a>(&self, cycle: Option<&'a CycleGuard>) -> Result<Option<&'a PgCycle>, BudgetError> {
        let Some(cycle) = cycle else { return Ok(None) };
        cycle.held().pg_of(&self.db, &self.key).map_err(|_| {
            self.unavailable(
                "used",
                "the cycle it was handed is another session's: use each session's own budget".into(),
            )
        })
    }
}

/// What a reservation's answer says: reserved, or refused by the budget its row names.
fn answer(refused: &[tokio_postgres::Row], ask: &TokenAsk<'_>) -> Result<(), BudgetError> {
    let Some(row) = refused.first() else { return Ok(()) };
    let count = |i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    Err(ask.refused(row.get(0), count(1), count(2), count(3), row.get::<_, f64>(4) as i64))
}

impl TokenBudget for PgBudget {
    fn reserve<'a>(&'a self, ask: TokenAsk<'a>) -> BudgetFuture<'a, ()> {
        Box::pin(async move { answer(&self.send(&self.reservation(&ask)).await?, &ask) })
    }

    /// In a cycle of this session, kept in the cycle to go with its first read (the memory
    /// search's batch): the reservation costs no round trip of its own.
    fn reserve_ahead<'a>(&'a self, ask: TokenAsk<'a>, cycle: &'a CycleGuard) -> BudgetFuture<'a, ()> {
        Box::pin(async move {
            match self.joined(Some(cycle))? {
                Some(joined) => {
                    joined.reserve_ahead(self.reservation(&ask)).await;
                    Ok(())
                }
                None => self.reserve(ask).await,
            }
        })
    }

    fn confirm<'a>(&'a self, ask: TokenAsk<'a>, cycle: &'a CycleGuard) -> BudgetFuture<'a, ()> {
        Box::pin(async move {
            // Not joined: `reserve_ahead` reserved it at once.
            let Some(joined) = self.joined(Some(cycle))? else { return Ok(()) };
            match joined.take_reservation().await.filter(|r| r.id == ask.id) {
                Some(Reservation { answer: Some(rows), .. }) => answer(&rows, &ask),
                // Not sent yet (no read came first), or its batch failed: sent now.
                Some(reservation) => answer(&self.send(&reservation).await?, &ask),
                // The cycle holds no word of it: never assumed made, it is made now (were it made
                // already, its id would be refused, not reserved twice).
                None => self.reserve(ask).await,
            }
        })
    }

    fn settle<'a>(&'a self, charges: &'a [Charge], cycle: Option<&'a CycleGuard>) -> BudgetFuture<'a, ()> {
        Box::pin(async move {
            match self.joined(cycle)? {
                Some(cycle) => {
                    let (ids, used) = columns(charges);
                    let write = PendingWrite {
                        step_id: None,
                        doing: "settling the token budget",
                        sql: SETTLE,
                        params: vec![Box::new(ids), Box::new(used)],
                    };
                    cycle.keep_write(write).await;
                    Ok(())
                }
                None => self.settle_alone(charges).await,
            }
        })
    }
}

/// The budgets of `db`'s tenant (its connection's), by prefix.
pub async fn budgets(db: &PgDatabase) -> Result<Vec<BudgetState>, PgError> {
    let mut conn = db.connection().await?;
    // As a reservation would see them: a budget whose period is over shows the new period's.
    // The settled reservations not yet folded in, counted as folded.
    let sql = "SELECT x.prefix, x.tokens, x.period_secs,
                      CASE WHEN x.period_start < planlock_period_start(x.period_secs) THEN 0
                           ELSE greatest(x.used + coalesce(f.charged, 0)::int8, 0) END,
                      CASE WHEN x.period_start < planlock_period_start(x.period_secs) THEN 0
                           ELSE greatest(x.reserved - coalesce(f.back, 0)::int8, 0) END,
                      extract(epoch FROM planlock_period_start(x.period_secs))::float8 + x.period_secs
               FROM planlock_budgets x LEFT JOIN (
                   SELECT h.tenant, h.prefix, h.period_start,
                          sum(greatest(coalesce(h.used, 0), 0)
                              - CASE WHEN h.state = 'recharged' THEN h.tokens ELSE 0 END) AS charged,
                          sum(CASE WHEN h.state = 'settled' THEN h.tokens ELSE 0 END) AS back
                   FROM planlock_budget_holds h
                   WHERE planlock_mine(h.tenant) AND h.state IN ('settled', 'late', 'recharged')
                   GROUP BY h.tenant, h.prefix, h.period_start) f
                 ON f.tenant = x.tenant AND f.prefix = x.prefix AND f.period_start = x.period_start
               WHERE planlock_mine(x.tenant)
               ORDER BY x.prefix";
    let rows = conn.query_typed(sql, &[]).await.map_err(db.failed("reading the token budgets"))?;
    let count = |row: &tokio_postgres::Row, i: usize| u64::try_from(row.get::<_, i64>(i)).unwrap_or(0);
    Ok(rows
        .iter()
        .map(|row| BudgetState {
            prefix: row.get(0),
            tokens: count(row, 1),
            period_secs: count(row, 2),
            used: count(row, 3),
            reserved: count(row, 4),
            resets_at: rfc3339(row.get::<_, f64>(5) as i64),
        })
        .collect())
}

/// Sets the budget of the sessions whose key starts with `prefix` (`""`: all of them) in `db`'s
/// tenant: `tokens` per `period`. What this period used and holds is kept; another period
/// starts now, aligned to itself (`1d`: since midnight UTC).
pub async fn set_budget(db: &PgDatabase, prefix: &str, tokens: u64, period: Duration) -> Result<(), PgError> {
    let (tokens, secs) = (i64::try_from(tokens).unwrap_or(i64::MAX), i64::try_from(period.as_secs()).unwrap_or(1));
    // A new period starts now, aligned to itself; the reservations in flight move with it, so
    // that their settlement finds the budget they were made from.
    let sql = "WITH old AS (SELECT period_start FROM planlock_budgets WHERE planlock_mine(tenant) AND prefix = $1 FOR UPDATE),
                    kept AS (
                      INSERT INTO planlock_budgets AS b (prefix, tokens, period_secs, period_start)
                      VALUES ($1, $2, $3, planlock_period_start($3))
                      ON CONFLICT (prefix, tenant) DO UPDATE SET tokens = EXCLUDED.tokens,
                        period_secs = EXCLUDED.period_secs,
                        period_start = CASE WHEN b.period_secs = EXCLUDED.period_secs THEN b.period_start
                                            ELSE EXCLUDED.period_start END
                      RETURNING period_start)
               UPDATE planlock_budget_holds h SET period_start = (SELECT period_start FROM kept)
               WHERE planlock_mine(h.tenant) AND h.prefix = $1 AND h.state NOT IN ('released', 'charged') AND h.period_start = (SELECT period_start FROM old)";
    let mut conn = db.connection().await?;
    let params = [(&prefix as _, Type::TEXT), (&tokens as _, Type::INT8), (&secs as _, Type::INT8)];
    conn.query_typed(sql, &params).await.map_err(db.failed("setting a token budget"))?;
    Ok(())
}

/// Removes the budget of `prefix` from `db`'s tenant; whether there was one.
pub async fn remove_budget(db: &PgDatabase, prefix: &str) -> Result<bool, PgError> {
    let mut conn = db.connection().await?;
    let sql = "WITH gone AS (DELETE FROM planlock_budgets WHERE planlock_mine(tenant) AND prefix = $1 RETURNING 1),
                    holds AS (DELETE FROM planlock_budget_holds WHERE planlock_mine(tenant) AND prefix = $1)
               SELECT count(*) FROM gone";
    let rows = conn.query_typed(sql, &[(&prefix, Type::TEXT)]).await.map_err(db.failed("removing a token budget"))?;
    Ok(rows.first().is_some_and(|r| r.get::<_, i64>(0) > 0))
}
