//! [`BudgetBook`]: the token budgets kept where sessions live (CONTRACT §20), as an operator
//! sets and reads them — a capability a [`Backend`](super::Backend) has or says it has not
//! ([`Backend::budgets`](super::Backend::budgets)).

use std::time::Duration;

use super::BackendFuture;
use crate::exec::budget::BudgetState;

/// The budgets of a place where sessions live: files beside the session roots, or the
/// tenant's rows in the database.
///
/// ```
/// # planlock::block_on(async {
/// let dir = tempfile::tempdir()?;
/// let sessions = planlock::backend::connect(dir.path().to_str().unwrap(), None).await?;
/// let book = sessions.budgets().expect("files keep budgets");
/// book.set_budget("support-", 3_000, std::time::Duration::from_secs(3_600)).await?;
/// assert_eq!(book.budgets().await?[0].prefix, "support-");
/// assert!(book.remove_budget("support-").await?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait BudgetBook: Send + Sync {
    /// The token budgets here, by prefix, as a model call would find them now.
    fn budgets(&self) -> BackendFuture<'_, Vec<BudgetState>>;

    /// Sets the budget of the sessions whose name or key starts with `prefix` (`""`: all of
    /// them): `tokens` per `period` (1 s to 366 days). What this period used and holds is kept.
    fn set_budget<'a>(&'a self, prefix: &'a str, tokens: u64, period: Duration) -> BackendFuture<'a, ()>;

    /// Removes the budget of `prefix`; whether there was one.
    fn remove_budget<'a>(&'a self, prefix: &'a str) -> BackendFuture<'a, bool>;
}
