//! Token budgets (CONTRACT §20): a model call reserves its estimate before it is sent, the
//! cycle's save settles each reservation to the tokens the server reported, and a cycle that
//! fails gives back what it reserved. Concurrency cannot overspend a budget, because the
//! reservation is one conditional update where the budget is kept (a database row, a locked
//! file): two workers never both get the last tokens.
//!
//! - [`TokenBudget`] is the port: where a session's budgets are kept. The session stores'
//!   layer has the two places (`PgBudget` in PostgreSQL, `FileBudget` beside file sessions).
//! - [`CycleBudget`] is one cycle's account: the runtime opens it with the cycle and keeps it in
//!   the cycle's [`CycleGuard`]; a handler reserves through
//!   [`StepContext::reserve_tokens`](crate::StepContext::reserve_tokens), which gives a
//!   [`TokenHold`] to report the call's usage on.
//! - [`BudgetError::Exhausted`] is `budget-exhausted` (CycleFail): the call is refused before it
//!   is sent, with what was left and when the period resets.
//!
//! Layer 4, with the executor.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

use crate::contract::registry::{Failure, FailureKind};
use crate::exec::open_cycle::CycleGuard;

/// What a [`TokenBudget`] method returns: a boxed future, so that budgets are objects.
pub type BudgetFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BudgetError>> + Send + 'a>>;

/// One model call's request to its session's budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenAsk<'a> {
    /// The reservation's id: new for each call.
    pub id: Uuid,
    /// The estimate: the request's input tokens, estimated, plus its `max_tokens`.
    pub tokens: u64,
    /// The cycle's number.
    pub cycle: u64,
    /// The step that calls the model; empty for the cycle's own reservation, made at its start
    /// for all its model calls ([`TokenBudget::reserve_ahead`]).
    pub step_id: &'a str,
}

impl TokenAsk<'_> {
    /// The refusal of this ask by the budget `scope` (its limit, what is left and reserved, when
    /// its period ends): what every place answers.
    pub fn refused(&self, scope: String, limit: u64, left: u64, reserved: u64, resets_at: i64) -> BudgetError {
        BudgetError::Exhausted {
            scope,
            asked: self.tokens,
            for_cycle: self.step_id.is_empty(),
            left,
            limit,
            reserved,
            resets_at,
        }
    }
}

/// What becomes of one reservation when its cycle ends: the tokens it held, and those the call
/// used (what the server reported; `0` for a call that was never answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// The reservation's id.
    pub id: Uuid,
    /// The tokens reserved.
    pub reserved: u64,
    /// The tokens to charge.
    pub used: u64,
}

/// Where a session's token budgets are kept, and the operations a cycle needs of them.
///
/// An implementation is made for one session (it knows the session's key, its tenant and who
/// holds its lease or lock), and must make [`reserve`](Self::reserve) one atomic step: the check
/// and the reservation together, so that concurrent cycles cannot both take the last tokens.
/// A reservation whose holder died (a killed worker) is given back once the session's lease
/// or lock is free, by whoever reserves next.
///
/// ```
/// use planlock::budget::{BudgetFuture, Charge, TokenAsk, TokenBudget};
/// use planlock::session::CycleGuard;
///
/// /// A budget that has no limit (what a runtime without budgets behaves as).
/// #[derive(Debug)]
/// struct Unlimited;
/// impl TokenBudget for Unlimited {
///     fn reserve<'a>(&'a self, _ask: TokenAsk<'a>) -> BudgetFuture<'a, ()> {
///         Box::pin(async { Ok(()) })
///     }
///     fn settle<'a>(&'a self, _charges: &'a [Charge], _cycle: Option<&'a CycleGuard>) -> BudgetFuture<'a, ()> {
///         Box::pin(async { Ok(()) })
///     }
/// }
/// ```
pub trait TokenBudget: fmt::Debug + Send + Sync {
    /// Reserves `ask.tokens` from every budget that covers the session, or none of them:
    /// [`BudgetError::Exhausted`] naming the first that cannot cover it.
    fn reserve<'a>(&'a self, ask: TokenAsk<'a>) -> BudgetFuture<'a, ()>;

    /// Ends reservations: each gives back what it reserved and charges what it used (only once,
    /// however often it is settled). With the cycle's guard, at the save of a completed or
    /// paused cycle: a place that can makes it part of that save (PostgreSQL: a statement of the
    /// save's batch, committed with it). Without, now and alone (a failed cycle).
    fn settle<'a>(&'a self, charges: &'a [Charge], cycle: Option<&'a CycleGuard>) -> BudgetFuture<'a, ()>;

    /// Reserves a cycle's estimate at its start (CONTRACT §20: a cycle reserves once). By
    /// default now, as [`reserve`](Self::reserve). A place that can sends it with the cycle's
    /// first round trip instead (PostgreSQL: the read batch of the cycle's memory search), and
    /// answers [`confirm`](Self::confirm) with what that round trip said.
    fn reserve_ahead<'a>(&'a self, ask: TokenAsk<'a>, cycle: &'a CycleGuard) -> BudgetFuture<'a, ()> {
        let _ = cycle;
        self.reserve(ask)
    }

    /// The answer to the reservation [`reserve_ahead`](Self::reserve_ahead) made for `ask`,
    /// asked before the cycle's first model call is sent: sent now if it has not been. By
    /// default, `reserve_ahead` answered already.
    fn confirm<'a>(&'a self, ask: TokenAsk<'a>, cycle: &'a CycleGuard) -> BudgetFuture<'a, ()> {
        let _ = (ask, cycle);
        Box::pin(async { Ok(()) })
    }
}

/// A budget as it stands: what `planlock budget show` prints.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetState {
    /// The sessions it covers: those whose key starts with this (`""`: every session).
    pub prefix: String,
    /// Tokens per period.
    pub tokens: u64,
    /// The period, in seconds.
    pub period_secs: u64,
    /// Tokens charged this period.
    pub used: u64,
    /// Tokens held by calls in flight.
    pub reserved: u64,
    /// When this period ends, RFC 3339 UTC.
    pub resets_at: String,
}

impl BudgetState {
    /// What is left this period: the tokens less what is used and reserved.
    pub fn left(&self) -> u64 {
        self.tokens.saturating_sub(self.used).saturating_sub(self.reserved)
    }
}

/// The most one model call is charged, in tokens (2^40): a server's absurd count is clamped to
/// it, so a budget's sums stay far inside a 64-bit integer (PostgreSQL's `bigint`).
pub const MAX_CHARGE: u64 = 1 << 40;

/// The longest budget prefix accepted, in bytes (a session key's length).
pub const MAX_PREFIX_BYTES: usize = 256;

/// Checks a budget's settings before they are kept: at least one token (a budget of none would
/// refuse every call: remove the sessions' model steps, or the budget, instead), a prefix of at
/// most [`MAX_PREFIX_BYTES`] and a period of at least a second and at most a year.
pub fn check_budget(prefix: &str, tokens: u64, period_secs: u64) -> Result<(), String> {
    if tokens == 0 {
        return Err("a budget of 0 tokens would refuse every model call; give at least 1 (or remove the budget)".into());
    }
    if tokens > i64::MAX as u64 {
        return Err(format!("a budget is at most {} tokens", i64::MAX));
    }
    if prefix.len() > MAX_PREFIX_BYTES {
        return Err(format!("the prefix is {} bytes long; at most {MAX_PREFIX_BYTES}", prefix.len()));
    }
    if !(1..=366 * 86_400).contains(&period_secs) {
        return Err(format!("the period is {period_secs} s; give one of 1 s to 366 days"));
    }
    Ok(())
}

/// Why a budget refused a call or could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The budget cannot cover the call: it was not sent.
    #[error(
        "the token budget {} cannot cover {}: {asked} tokens at most, and {left} of {limit} are \
         left this period ({reserved} reserved by calls in flight); it resets at {}. Wait for the reset, raise the \
         budget (`planlock budget set`), or ask for fewer tokens (`max_tokens`)",
        scope_name(.scope), if *.for_cycle { "this cycle's model calls, nothing of which was sent" } else { "this model call" },
        rfc3339(*.resets_at)
    )]
    Exhausted {
        /// The budget: the session-key prefix it covers (`""`: every session of the tenant).
        scope: String,
        /// What was asked for.
        asked: u64,
        /// Whether it was the cycle's reservation, made at its start for all its model calls
        /// (else one call's, made on its own).
        for_cycle: bool,
        /// What was left: the limit less what was used and what is reserved.
        left: u64,
        /// The budget's tokens per period.
        limit: u64,
        /// What calls in flight held.
        reserved: u64,
        /// When the period ends, in seconds since the Unix epoch.
        resets_at: i64,
    },
    /// The place the budgets are kept could not be read or written; nothing was sent.
    #[error("the token budgets at {place} could not be {doing}: {reason}; the model call was not sent")]
    Unavailable {
        /// The budgets' place (a database target or a file), shown without secrets.
        place: String,
        /// `read` or `written`.
        doing: &'static str,
        /// What failed.
        reason: String,
    },
}

fn scope_name(scope: &str) -> String {
    if scope.is_empty() { "for every session".to_owned() } else { format!("for sessions `{scope}…`") }
}

/// `seconds` since the Unix epoch as RFC 3339 UTC.
pub(crate) fn rfc3339(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| format!("{seconds} s after the Unix epoch"))
}

impl Failure for BudgetError {
    /// CycleFail: the next cycle may find the budget reset or raised.
    fn kind(&self) -> FailureKind {
        FailureKind::CycleFail
    }
    /// `budget-exhausted` or `budget-unavailable`.
    fn code(&self) -> &'static str {
        match self {
            BudgetError::Exhausted { .. } => "budget-exhausted",
            BudgetError::Unavailable { .. } => "budget-unavailable",
        }
    }
}

/// When the period of `period_secs` seconds that holds `now` (seconds since the Unix epoch)
/// began: periods are aligned to the epoch (a day's budget resets at midnight UTC). The one rule
/// both places follow.
///
/// ```
/// use planlock::budget::period_start;
/// assert_eq!(period_start(90_061, 86_400), 86_400); // a day after the epoch, plus an hour and a minute
/// assert_eq!(period_start(59, 60), 0);
/// ```
pub fn period_start(now: i64, period_secs: u64) -> i64 {
    let period = i64::try_from(period_secs.max(1)).unwrap_or(i64::MAX);
    now.div_euclid(period).saturating_mul(period)
}

/// One cycle's account with its session's budget: what the cycle reserved at its start, what
/// its model calls drew from it or reserved on their own, and what each used. Opened by the
/// runtime with the cycle, beside the cycle's [`CycleGuard`], and handed with it to the cycle's
/// steps; cloning shares it.
///
/// ```
/// use std::sync::Arc;
/// use planlock::budget::{BudgetFuture, Charge, CycleBudget, TokenAsk, TokenBudget};
/// use planlock::session::CycleGuard;
/// # #[derive(Debug)]
/// # struct Unlimited;
/// # impl TokenBudget for Unlimited {
/// #     fn reserve<'a>(&'a self, _: TokenAsk<'a>) -> BudgetFuture<'a, ()> { Box::pin(async { Ok(()) }) }
/// #     fn settle<'a>(&'a self, _: &'a [Charge], _: Option<&'a CycleGuard>) -> BudgetFuture<'a, ()> {
/// #         Box::pin(async { Ok(()) })
/// #     }
/// # }
/// let guard = CycleGuard::none();
/// let account = CycleBudget::new(Arc::new(Unlimited), 1);
/// planlock::block_on(account.reserve_ahead(1000, &guard)); // the cycle's estimate, once
/// let hold = planlock::block_on(account.reserve(600, "llm", Some(&guard)))?; // drawn from it
/// hold.answered(Some(142)); // what the server reported
/// assert_eq!((account.charges()[0].reserved, account.charges()[0].used), (1000, 142));
/// # Ok::<(), planlock::budget::BudgetError>(())
/// ```
#[derive(Clone)]
pub struct CycleBudget {
    budget: Arc<dyn TokenBudget>,
    cycle: u64,
    account: Arc<Mutex<Account>>,
}

impl fmt::Debug for CycleBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CycleBudget").field("budget", &self.budget).field("cycle", &self.cycle).finish()
    }
}

/// The reservations of a cycle.
#[derive(Debug, Default)]
struct Account {
    /// Each reservation: the cycle's own (made at its start, first) and those calls made alone.
    holds: Vec<Held>,
    /// The cycle's own reservation, while its calls draw from it.
    ahead: Option<Ahead>,
}

/// A reservation of the cycle: its id, what it holds, and what its calls used once answered.
#[derive(Debug, Clone, Copy)]
struct Held {
    id: Uuid,
    reserved: u64,
    used: Option<u64>,
}

/// The cycle's own reservation: what its calls drew from it, and whether its place said yes.
#[derive(Debug)]
struct Ahead {
    id: Uuid,
    tokens: u64,
    drawn: u64,
    answer: Answer,
}

#[derive(Debug)]
enum Answer {
    /// Asked; the place has not said (PostgreSQL: it goes with the cycle's first round trip).
    Awaited,
    Held,
    Refused(BudgetError),
}

impl CycleBudget {
    /// Cycle `cycle`'s account with `budget`.
    pub fn new(budget: Arc<dyn TokenBudget>, cycle: u64) -> CycleBudget {
        CycleBudget { budget, cycle, account: Arc::default() }
    }

    fn account(&self) -> std::sync::MutexGuard<'_, Account> {
        self.account.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves the cycle's estimate, `tokens` (its steps' [`Handler::tokens_ahead`](crate::Handler::tokens_ahead)),
    /// once, at its start: the model calls of the cycle then draw from it. A refusal is kept, and
    /// is the answer to the first call (which is then not sent); nothing else of the cycle waits
    /// on it.
    pub async fn reserve_ahead(&self, tokens: u64, cycle: &CycleGuard) {
        if tokens == 0 {
            return;
        }
        let id = Uuid::new_v4();
        let ask = TokenAsk { id, tokens, cycle: self.cycle, step_id: "" };
        let answer = match self.budget.reserve_ahead(ask, cycle).await {
            Ok(()) => Answer::Awaited,
            Err(refused) => {
                crate::telemetry::budget_reserved(Some(refused.code()));
                Answer::Refused(refused)
            }
        };
        let mut account = self.account();
        if matches!(answer, Answer::Awaited) {
            account.holds.push(Held { id, reserved: tokens, used: None });
        }
        account.ahead = Some(Ahead { id, tokens, drawn: 0, answer });
    }

    /// Reserves `tokens` for a model call of step `step_id` in `cycle` (this account's): drawn
    /// from what the cycle reserved at its start while that covers it (asking nothing of the
    /// budget, once its place has said yes), else reserved on its own. The hold reports what the
    /// call used.
    pub async fn reserve(
        &self,
        tokens: u64,
        step_id: &str,
        cycle: Option<&CycleGuard>,
    ) -> Result<TokenHold<'_>, BudgetError> {
        if let Some(hold) = self.draw(tokens, cycle).await? {
            return Ok(hold);
        }
        let id = Uuid::new_v4();
        let refused = self.budget.reserve(TokenAsk { id, tokens, cycle: self.cycle, step_id }).await;
        crate::telemetry::budget_reserved(refused.as_ref().err().map(Failure::code));
        refused?;
        self.account().holds.push(Held { id, reserved: tokens, used: None });
        Ok(TokenHold { cycle: Some(self), id, drawn: tokens })
    }

    /// `tokens` drawn from the cycle's own reservation, if it has one that covers them (its
    /// answer awaited first); its refusal is the call's.
    async fn draw(&self, tokens: u64, cycle: Option<&CycleGuard>) -> Result<Option<TokenHold<'_>>, BudgetError> {
        let awaited = match &self.account().ahead {
            None => return Ok(None),
            Some(ahead) => match &ahead.answer {
                Answer::Refused(refused) => return Err(refused.clone()),
                Answer::Awaited => Some((ahead.id, ahead.tokens)),
                Answer::Held => None,
            },
        };
        if let Some((id, tokens)) = awaited {
            // Only the cycle's guard can say what became of it.
            let Some(cycle) = cycle else { return Ok(None) };
            let answer = self.budget.confirm(TokenAsk { id, tokens, cycle: self.cycle, step_id: "" }, cycle).await;
            crate::telemetry::budget_reserved(answer.as_ref().err().map(Failure::code));
            let mut account = self.account();
            if let Err(refused) = answer {
                // Refused: it holds nothing to settle.
                account.holds.retain(|h| h.id != id);
                if let Some(ahead) = &mut account.ahead {
                    ahead.answer = Answer::Refused(refused.clone());
                }
                return Err(refused);
            }
            if let Some(ahead) = &mut account.ahead {
                ahead.answer = Answer::Held;
            }
        }
        let mut account = self.account();
        let Some(ahead) = account.ahead.as_mut().filter(|a| a.tokens - a.drawn >= tokens) else { return Ok(None) };
        ahead.drawn += tokens;
        Ok(Some(TokenHold { cycle: Some(self), id: ahead.id, drawn: tokens }))
    }

    /// What each reservation is charged: what its calls used, as the server reported it (the
    /// whole draw when an answered call reported nothing), or `0` for calls never answered.
    pub fn charges(&self) -> Vec<Charge> {
        let account = self.account();
        account.holds.iter().map(|h| Charge { id: h.id, reserved: h.reserved, used: h.used.unwrap_or(0) }).collect()
    }

    /// Settles the cycle's reservations: with the guard, as part of its save; without, now. A
    /// budget that cannot be written is left to give back what it holds when the session's lease
    /// or lock ends (so it never overspends); the failure is logged, and the cycle goes on.
    pub async fn settle(&self, cycle: Option<&CycleGuard>) {
        let charges = self.charges();
        if charges.is_empty() {
            return;
        }
        if let Err(e) = self.budget.settle(&charges, cycle).await {
            tracing::warn!(error = %e, "the cycle's token reservations were not settled; they are given back when the session's lease or lock ends");
        }
    }

    /// A call drawn from reservation `id`, `drawn` tokens, was answered, using `used` (none
    /// reported: all it drew).
    fn answered(&self, id: Uuid, drawn: u64, used: Option<u64>) {
        let mut account = self.account();
        if let Some(held) = account.holds.iter_mut().find(|h| h.id == id) {
            held.used = Some(held.used.unwrap_or(0).saturating_add(used.unwrap_or(drawn)));
        }
    }
}

/// A model call's reservation, from [`StepContext::reserve_tokens`](crate::StepContext::reserve_tokens):
/// say what the call used once it is answered. A hold of a cycle without a budget does nothing.
#[derive(Debug)]
#[must_use = "report what the call used with `answered`"]
pub struct TokenHold<'a> {
    cycle: Option<&'a CycleBudget>,
    id: Uuid,
    drawn: u64,
}

impl TokenHold<'_> {
    /// A hold on no budget.
    pub(crate) fn none() -> TokenHold<'static> {
        TokenHold { cycle: None, id: Uuid::nil(), drawn: 0 }
    }

    /// The call was answered: it used `tokens` (the server's `usage`, input and output), or,
    /// when the server reported none, everything it reserved.
    pub fn answered(self, tokens: Option<u64>) {
        if let Some(cycle) = self.cycle {
            // A count no call can have (a server's 2^63 - 1) is charged as the most one can.
            cycle.answered(self.id, self.drawn, tokens.map(|t| t.min(MAX_CHARGE)));
        }
    }
}
