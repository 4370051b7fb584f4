//! Step handlers: one typed, async [`Handler<T>`] per step type, collected in [`Handlers`].
//!
//! A handler receives its step's typed payload and a read-only [`StepContext`] (metadata, the
//! ledger of earlier results, the session and an idempotency key) and returns the step's typed
//! result. The executor never looks inside either.
//!
//! [`Handlers`] is a list built at compile time, so a cycle calls each handler directly: no boxed
//! future, no allocation per step, and a cycle's future is `Send` whenever the handlers' are.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;
use std::future::{Future, ready};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use crate::contract::plan::{ExecutionPlan, PlanMetadata, StepDefinition};
use crate::contract::registry::StepType;
use crate::contract::steps::{Step, StepPayload, StepResult};
use crate::exec::budget::{BudgetError, CycleBudget, TokenHold};
use crate::exec::ledger::Ledger;
pub use crate::exec::open_cycle::CycleGuard;
use crate::exec::report::TokenUsage;
use crate::hash::{Digest, IdempotencyKey};

#[cfg(feature = "testing")]
mod test_context;
#[cfg(feature = "testing")]
pub use test_context::TestContext;

/// A handler failed. How the failure propagates is decided by the registry, never by the
/// handler (docs/CONTRACT.md, "Execution").
#[derive(Debug, Clone)]
pub struct HandlerError {
    message: Cow<'static, str>,
    source: Option<Arc<dyn StdError + Send + Sync>>,
}

impl HandlerError {
    /// A failure described by `message`.
    pub fn new(message: impl Into<Cow<'static, str>>) -> HandlerError {
        HandlerError { message: message.into(), source: None }
    }

    /// A failure caused by `source`, described by `message`.
    pub fn with_source(message: impl Into<Cow<'static, str>>, source: impl StdError + Send + Sync + 'static) -> Self {
        HandlerError { message: message.into(), source: Some(Arc::new(source)) }
    }

    /// `"handler-error"`.
    pub fn code(&self) -> &'static str {
        "handler-error"
    }

    /// The description.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

/// A budget's refusal as a handler's failure: the executor makes it the step's
/// ([`StepFailure::Budget`](crate::executor::StepFailure::Budget)), `budget-exhausted` whatever the
/// step type's class.
impl From<BudgetError> for HandlerError {
    fn from(e: BudgetError) -> HandlerError {
        HandlerError::with_source("the token budget refused the model call", e)
    }
}

impl StdError for HandlerError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn StdError + 'static))
    }
}

/// What a handler may read while its step runs; all of it read-only.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    pub(crate) step: &'a StepDefinition,
    pub(crate) steps: &'a [StepDefinition],
    pub(crate) metadata: &'a PlanMetadata,
    pub(crate) ledger: &'a Ledger,
    pub(crate) session_id: Uuid,
    pub(crate) plan_hash: &'a Digest,
    pub(crate) cycle: u64,
    pub(crate) deadline: Option<Instant>,
    pub(crate) notes: &'a StepNotes,
    pub(crate) record_content: bool,
    pub(crate) in_session: Option<InSession<'a>>,
}

/// A session's cycle as the runtime hands it to its steps: the guard its session store began,
/// and the cycle's account with the session's token budget, if it has one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InSession<'a> {
    pub(crate) guard: &'a CycleGuard,
    pub(crate) budget: Option<&'a CycleBudget>,
}

/// What a step's handler leaves for the step's record: the tokens its model reported, and its
/// warnings.
#[derive(Debug, Default)]
pub(crate) struct StepNotes {
    usage: std::sync::Mutex<Option<TokenUsage>>,
    warnings: std::sync::Mutex<Vec<String>>,
}

/// The most warnings one step records; past it, the handler's later ones are dropped (a warning
/// says what was passed over, once, not once per row).
pub const MAX_STEP_WARNINGS: usize = 16;

impl StepNotes {
    fn add(&self, usage: TokenUsage) {
        let mut slot = self.usage.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *slot = Some(slot.map_or(usage, |before| before + usage));
    }
    fn warn(&self, message: String) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if warnings.len() < MAX_STEP_WARNINGS {
            warnings.push(message);
        }
    }
    /// The tokens recorded, leaving none.
    pub(crate) fn take_usage(&self) -> Option<TokenUsage> {
        self.usage.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
    /// The warnings recorded, leaving none.
    pub(crate) fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }
}

impl<'a> StepContext<'a> {
    /// The step's id: the tracing key.
    pub fn step_id(&self) -> &'a str {
        &self.step.id
    }
    /// The step's type.
    pub fn step_type(&self) -> StepType {
        self.step.step_type()
    }
    /// The plan metadata.
    pub fn metadata(&self) -> &'a PlanMetadata {
        self.metadata
    }
    /// The results of the steps completed so far in this cycle.
    pub fn ledger(&self) -> &'a Ledger {
        self.ledger
    }
    /// The result of an earlier step, by its id.
    pub fn result_by_id(&self, id: &str) -> Option<&'a StepResult> {
        let step = self.steps.iter().find(|s| s.id == id)?;
        self.ledger.by_type(step.step_type())
    }
    /// The session this cycle belongs to.
    pub fn session_id(&self) -> Uuid {
        self.session_id
    }
    /// The plan hash the cycle runs under.
    pub fn plan_hash(&self) -> &'a Digest {
        self.plan_hash
    }
    /// The cycle's number: the session's completed cycles + 1.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
    /// A key stable for this step of this cycle of this plan in this session: a write handler
    /// uses it so that a re-run of the cycle (after an intervention, a failure or a crash) never
    /// writes twice, while the next cycle writes anew.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        IdempotencyKey::derive(self.session_id, self.plan_hash, self.cycle, &self.step.id)
    }
    /// The idempotency keys of this step and of every step after it in the plan, in order: what
    /// a store that sends a cycle's writes late reads ahead, to know which are written
    /// ([`Call::keys_ahead`](crate::store::Call::keys_ahead)).
    ///
    /// ```
    /// # #[cfg(feature = "testing")] {
    /// use planlock::handler::TestContext;
    /// use planlock::{AnyObject, schema::*};
    /// use planlock::steps::PromptAssemble;
    /// let payload = LlmCallPayload { prompt: "p".into(), config: AnyObject::new() };
    /// let test = TestContext::new("llm", payload).with_step::<PromptAssemble>(
    ///     "prompt",
    ///     PromptAssemblePayload { template: "hi".into(), vars: AnyObject::new() },
    ///     PromptAssembleResult { prompt: "hi".into() },
    /// );
    /// let cx = test.context();
    /// assert_eq!(cx.keys_from_here(), [cx.idempotency_key()], "no step after it is known: its own key only");
    /// # }
    /// ```
    pub fn keys_from_here(&self) -> Vec<IdempotencyKey> {
        // A context whose steps do not list this one (a `TestContext` lists the earlier ones):
        // no step after it is known, only its own key.
        let Some(here) = self.steps.iter().position(|s| s.id == self.step.id) else {
            return vec![self.idempotency_key()];
        };
        self.steps[here..]
            .iter()
            .map(|s| IdempotencyKey::derive(self.session_id, self.plan_hash, self.cycle, &s.id))
            .collect()
    }
    /// When the step's deadline passes, if it has one (`metadata.timeouts`, or the default of
    /// its step type; docs/CONTRACT.md, "Execution"). The executor fails a result that comes
    /// later; a handler that does blocking work (a query, a render) gives it this limit, so
    /// that no work outlives its step.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
    /// Whether content recording is on (the runtime's `record_content`, CONTRACT §16): a handler
    /// puts prompts, answers and texts on its spans only then.
    pub fn records_content(&self) -> bool {
        self.record_content
    }
    /// The cycle as its session store began it, when the step runs in a session's cycle (a
    /// [`Runtime`](crate::runtime::Runtime)'s): a storage handler hands it to its store
    /// ([`store::Call::of_step`](crate::store::Call::of_step)) so the store's writes join what
    /// the session store holds for the cycle (PostgreSQL's: one transaction with the end of the
    /// cycle). `None` for a cycle run by an [`Executor`](crate::Executor) alone.
    pub fn open_cycle(&self) -> Option<&'a CycleGuard> {
        self.in_session.map(|s| s.guard)
    }
    /// Reserves `tokens` from the session's token budget before a model call (CONTRACT §20): the
    /// request's input, estimated, plus its `max_tokens`. Refused
    /// ([`BudgetError::Exhausted`], `budget-exhausted`) when the budget cannot cover it: then do
    /// not send the call (`?` makes the refusal the step's failure). Once the call is answered,
    /// say what it used on the hold ([`TokenHold::answered`]); the cycle's save settles it. A
    /// cycle without a budget (no runtime, or a runtime given none) reserves nothing.
    ///
    /// ```
    /// use planlock::{Handler, HandlerError, StepContext, steps::LLMCall, schema::*};
    ///
    /// struct Model;
    /// impl Handler<LLMCall> for Model {
    ///     async fn call(&self, cx: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
    ///         let hold = cx.reserve_tokens(p.prompt.len() as u64 + 256).await?;
    ///         let response = format!("echo: {}", p.prompt); // the model call
    ///         hold.answered(Some(42)); // the tokens the server reported
    ///         Ok(LlmCallResult { response })
    ///     }
    /// }
    /// ```
    pub async fn reserve_tokens(&self, tokens: u64) -> Result<TokenHold<'a>, BudgetError> {
        match self.in_session.and_then(|s| s.budget) {
            Some(budget) => budget.reserve(tokens, &self.step.id, self.open_cycle()).await,
            None => Ok(TokenHold::none()),
        }
    }
    /// Records tokens a model reported using for this step: they appear in the step's
    /// [`StepRecord::usage`](crate::executor::StepRecord::usage) and in
    /// [`CycleReport::usage`](crate::CycleReport::usage). A handler that calls a model twice
    /// records twice; the figures add up.
    pub fn record_usage(&self, usage: TokenUsage) {
        self.notes.add(usage);
    }
    /// Records a warning on the step (a [`Warning`](crate::executor::Warning) by
    /// [`WarnedBy::Handler`](crate::executor::WarnedBy::Handler) in its record): something the
    /// handler passed over and went on without, such as a stored row it could not read. At most
    /// [`MAX_STEP_WARNINGS`] per step are kept.
    pub fn warn(&self, message: impl Into<String>) {
        self.notes.warn(message.into());
    }
}

/// Handles the steps of type `T`.
///
/// ```
/// use planlock::{Handler, HandlerError, StepContext, steps::LLMCall, schema::*};
///
/// struct Echo;
/// impl Handler<LLMCall> for Echo {
///     async fn call(&self, _cx: &StepContext<'_>, payload: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
///         Ok(LlmCallResult { response: format!("echo: {}", payload.prompt) })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a handler for `{T}` steps",
    label = "this does not implement `Handler<{T}>`",
    note = "implement `planlock::Handler<{T}>`: `async fn call(&self, cx: &StepContext<'_>, payload: &<{T} as Step>::Payload) -> Result<<{T} as Step>::Result, HandlerError>`"
)]
pub trait Handler<T: Step>: Send + Sync + 'static {
    /// Runs the step: the payload as the plan has it, the context read-only.
    fn call(
        &self,
        cx: &StepContext<'_>,
        payload: &T::Payload,
    ) -> impl Future<Output = Result<T::Result, HandlerError>> + Send;

    /// What the step's model calls may cost, in tokens, estimated from the plan alone, before
    /// its cycle runs: a cycle with a token budget reserves the sum over its steps once, at its
    /// start (CONTRACT §20), and each call the handler then reserves
    /// ([`StepContext::reserve_tokens`]) is drawn from it without asking the budget again. A
    /// call that needs more than is left is reserved on its own. `0` (the default): the step
    /// calls no model, or cannot say; its calls are reserved one by one.
    ///
    /// ```
    /// use planlock::{ExecutionPlan, Handler, HandlerError, StepContext, steps::LLMCall, schema::*};
    ///
    /// struct Model;
    /// impl Handler<LLMCall> for Model {
    ///     async fn call(&self, cx: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
    ///         let hold = cx.reserve_tokens(p.prompt.len() as u64 + 256).await?; // drawn from the cycle's
    ///         hold.answered(Some(42));
    ///         Ok(LlmCallResult { response: format!("echo: {}", p.prompt) })
    ///     }
    ///     fn tokens_ahead(&self, _plan: &ExecutionPlan, p: &LlmCallPayload) -> u64 {
    ///         p.prompt.len() as u64 + 256
    ///     }
    /// }
    /// ```
    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &T::Payload) -> u64 {
        let _ = (plan, payload);
        0
    }
}

/// What an async closure handler ([`async_handler_fn`]) receives: copies of its step's payload
/// and context, owned, so that its future can be `Send + 'static` (a future that borrows the
/// context cannot be proven `Send` for an `AsyncFn` closure on stable Rust).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandlerInput<T: Step> {
    /// The step's payload.
    pub payload: T::Payload,
    /// The step's id.
    pub step_id: String,
    /// The session the cycle belongs to.
    pub session_id: Uuid,
    /// The plan hash the cycle runs under.
    pub plan_hash: Digest,
    /// The cycle's number.
    pub cycle: u64,
    /// The step's idempotency key ([`StepContext::idempotency_key`]).
    pub idempotency_key: IdempotencyKey,
    /// The plan metadata.
    pub metadata: PlanMetadata,
    /// The results of the steps completed so far in this cycle.
    pub ledger: Ledger,
}

/// An async closure as a handler; see [`async_handler_fn`].
pub struct AsyncFnHandler<T, F> {
    f: F,
    step: PhantomData<fn() -> T>,
}

impl<T, F> fmt::Debug for AsyncFnHandler<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AsyncFnHandler")
    }
}

/// Makes a handler of an async closure, which receives its own copy of the step's payload and
/// context ([`HandlerInput`]).
///
/// Work that blocks the thread (a file or database call, heavy computation) should run where
/// blocking is allowed — `tokio::task::spawn_blocking` under tokio, or a thread of its own — and
/// be awaited. Either way the step's deadline bounds the call: a result that arrives after it is
/// a timeout, even from a handler that never yielded.
///
/// ```
/// use planlock::handler::{async_handler_fn, HandlerInput};
/// use planlock::{steps::LLMCall, schema::*};
/// let model = async_handler_fn(|input: HandlerInput<LLMCall>| async move {
///     Ok(LlmCallResult { response: format!("echo: {}", input.payload.prompt) })
/// });
/// # let _ = model;
/// ```
pub fn async_handler_fn<T, F, Fut>(f: F) -> AsyncFnHandler<T, F>
where
    T: Step,
    F: Fn(HandlerInput<T>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T::Result, HandlerError>> + Send + 'static,
{
    AsyncFnHandler { f, step: PhantomData }
}

impl<T, F, Fut> Handler<T> for AsyncFnHandler<T, F>
where
    T: Step,
    F: Fn(HandlerInput<T>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T::Result, HandlerError>> + Send + 'static,
{
    fn call(
        &self,
        cx: &StepContext<'_>,
        payload: &T::Payload,
    ) -> impl Future<Output = Result<T::Result, HandlerError>> + Send {
        (self.f)(HandlerInput {
            payload: payload.clone(),
            step_id: cx.step.id.clone(),
            session_id: cx.session_id,
            plan_hash: *cx.plan_hash,
            cycle: cx.cycle,
            idempotency_key: cx.idempotency_key(),
            metadata: cx.metadata.clone(),
            ledger: cx.ledger.clone(),
        })
    }
}

/// A synchronous function as a handler; see [`handler_fn`].
pub struct FnHandler<T, F> {
    f: F,
    step: PhantomData<fn() -> T>,
}

impl<T, F> fmt::Debug for FnHandler<T, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FnHandler")
    }
}

/// Makes a handler of a synchronous function.
///
/// ```
/// use planlock::{handler_fn, steps::SummarizeMemory, schema::*};
/// let summarize = handler_fn::<SummarizeMemory, _>(|_cx, p| {
///     Ok(SummarizeMemoryResult { summary: p.response.chars().take(40).collect(), keywords: vec![] })
/// });
/// ```
pub fn handler_fn<T, F>(f: F) -> FnHandler<T, F>
where
    T: Step,
    F: Fn(&StepContext<'_>, &T::Payload) -> Result<T::Result, HandlerError> + Send + Sync + 'static,
{
    FnHandler { f, step: PhantomData }
}

impl<T, F> Handler<T> for FnHandler<T, F>
where
    T: Step,
    F: Fn(&StepContext<'_>, &T::Payload) -> Result<T::Result, HandlerError> + Send + Sync + 'static,
{
    fn call(
        &self,
        cx: &StepContext<'_>,
        payload: &T::Payload,
    ) -> impl Future<Output = Result<T::Result, HandlerError>> + Send {
        ready((self.f)(cx, payload))
    }
}

impl<T: Step, H: Handler<T>> Handler<T> for Arc<H> {
    fn call(
        &self,
        cx: &StepContext<'_>,
        payload: &T::Payload,
    ) -> impl Future<Output = Result<T::Result, HandlerError>> + Send {
        H::call(self, cx, payload)
    }

    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &T::Payload) -> u64 {
        H::tokens_ahead(self, plan, payload)
    }
}

/// The handlers of an executor: a list built with [`Handlers::on`].
///
/// ```
/// use planlock::{Handlers, handler_fn, steps::*, schema::*};
/// let handlers = Handlers::new()
///     .on::<PromptAssemble>(handler_fn(|_, p: &PromptAssemblePayload| Ok(PromptAssembleResult { prompt: p.template.clone() })))
///     .on::<LLMCall>(handler_fn(|_, p: &LlmCallPayload| Ok(LlmCallResult { response: p.prompt.clone() })));
/// assert_eq!(handlers.step_types(), [planlock::StepType::PromptAssemble, planlock::StepType::LLMCall]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Handlers<L = Nil> {
    list: L,
}

/// The empty handler list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nil;

/// A handler for `T` in front of the `Rest` of the list.
#[derive(Debug, Clone)]
pub struct Entry<T, H, Rest> {
    handler: H,
    rest: Rest,
    step: PhantomData<fn() -> T>,
}

impl Handlers<Nil> {
    /// No handlers yet.
    pub fn new() -> Self {
        Handlers { list: Nil }
    }
}

impl<L: HandlerSet> Handlers<L> {
    /// Registers `handler` for the steps of type `T`. Registering a type again replaces the
    /// earlier handler.
    pub fn on<T: Step>(self, handler: impl Handler<T>) -> Handlers<Entry<T, impl Handler<T>, L>> {
        Handlers { list: Entry { handler, rest: self.list, step: PhantomData } }
    }

    /// The step types with a handler, in canonical order.
    pub fn step_types(&self) -> Vec<StepType> {
        StepType::ALL.into_iter().filter(|t| self.list.handles(*t)).collect()
    }

    /// The same handlers behind one nameable type, [`Handlers<Boxed>`](Boxed), so a set can be
    /// kept in a struct field or returned from a function whose type must be written out. Each
    /// step's call then costs one allocation (its future is boxed).
    ///
    /// ```
    /// use planlock::handler::{Boxed, Handlers};
    /// use planlock::{handler_fn, steps::*, schema::*};
    ///
    /// struct App {
    ///     handlers: Handlers<Boxed>,
    /// }
    /// let app = App {
    ///     handlers: Handlers::new()
    ///         .on::<LLMCall>(handler_fn(|_, p: &LlmCallPayload| Ok(LlmCallResult { response: p.prompt.clone() })))
    ///         .boxed(),
    /// };
    /// assert_eq!(app.handlers.step_types(), [planlock::StepType::LLMCall]);
    /// ```
    pub fn boxed(self) -> Handlers<Boxed> {
        Handlers { list: Boxed(Box::new(self.list)) }
    }

    /// [`on`](Self::on) with the handler's type kept nameable, for the runtime's own list.
    pub(crate) fn on_named<T: Step, H: Handler<T>>(self, handler: H) -> Handlers<Entry<T, H, L>> {
        Handlers { list: Entry { handler, rest: self.list, step: PhantomData } }
    }

    pub(crate) fn set(&self) -> &L {
        &self.list
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Nil {}
    impl<T, H, R> Sealed for super::Entry<T, H, R> {}
    impl Sealed for super::Boxed {}
}

/// A list of handlers the executor can dispatch to; implemented by [`Nil`] and [`Entry`].
pub trait HandlerSet: sealed::Sealed + Send + Sync + 'static {
    /// Whether a handler for `ty` is in the list.
    fn handles(&self, ty: StepType) -> bool;

    /// Runs the handler for the payload's type.
    fn dispatch<'a>(
        &'a self,
        cx: &'a StepContext<'a>,
        payload: &'a StepPayload,
    ) -> impl Future<Output = Result<StepResult, HandlerError>> + Send + 'a;

    /// What the handler for the payload's type estimates its step's model calls cost
    /// ([`Handler::tokens_ahead`]).
    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &StepPayload) -> u64;
}

impl HandlerSet for Nil {
    fn handles(&self, _: StepType) -> bool {
        false
    }

    fn tokens_ahead(&self, _: &ExecutionPlan, _: &StepPayload) -> u64 {
        0
    }

    fn dispatch<'a>(
        &'a self,
        _: &'a StepContext<'a>,
        payload: &'a StepPayload,
    ) -> impl Future<Output = Result<StepResult, HandlerError>> + Send + 'a {
        // The executor refuses a plan with an unhandled step before it runs; this stays a
        // failure, not a panic, should that check ever be bypassed.
        let ty = payload.step_type();
        ready(Err(HandlerError::new(format!("no handler is registered for `{ty}`"))))
    }
}

impl<T: Step, H: Handler<T>, R: HandlerSet> HandlerSet for Entry<T, H, R> {
    fn handles(&self, ty: StepType) -> bool {
        ty == T::TYPE || self.rest.handles(ty)
    }

    async fn dispatch<'a>(
        &'a self,
        cx: &'a StepContext<'a>,
        payload: &'a StepPayload,
    ) -> Result<StepResult, HandlerError> {
        match T::unwrap(payload) {
            Some(p) => self.handler.call(cx, p).await.map(T::wrap_result),
            None => self.rest.dispatch(cx, payload).await,
        }
    }

    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &StepPayload) -> u64 {
        match T::unwrap(payload) {
            Some(p) => self.handler.tokens_ahead(plan, p),
            None => self.rest.tokens_ahead(plan, payload),
        }
    }
}

/// A handler list behind one nameable type; see [`Handlers::boxed`].
pub struct Boxed(Box<dyn DynHandlerSet>);

impl fmt::Debug for Boxed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Boxed")
    }
}

/// A boxed call's future.
type BoxedCall<'a> = std::pin::Pin<Box<dyn Future<Output = Result<StepResult, HandlerError>> + Send + 'a>>;

/// [`HandlerSet`] as a trait object: the same two questions, the future boxed.
trait DynHandlerSet: Send + Sync + 'static {
    fn handles(&self, ty: StepType) -> bool;
    fn dispatch_boxed<'a>(&'a self, cx: &'a StepContext<'a>, payload: &'a StepPayload) -> BoxedCall<'a>;
    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &StepPayload) -> u64;
}

impl<L: HandlerSet> DynHandlerSet for L {
    fn handles(&self, ty: StepType) -> bool {
        HandlerSet::handles(self, ty)
    }
    fn dispatch_boxed<'a>(&'a self, cx: &'a StepContext<'a>, payload: &'a StepPayload) -> BoxedCall<'a> {
        Box::pin(self.dispatch(cx, payload))
    }
    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &StepPayload) -> u64 {
        HandlerSet::tokens_ahead(self, plan, payload)
    }
}

impl HandlerSet for Boxed {
    fn handles(&self, ty: StepType) -> bool {
        self.0.handles(ty)
    }

    fn dispatch<'a>(
        &'a self,
        cx: &'a StepContext<'a>,
        payload: &'a StepPayload,
    ) -> impl Future<Output = Result<StepResult, HandlerError>> + Send + 'a {
        self.0.dispatch_boxed(cx, payload)
    }

    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &StepPayload) -> u64 {
        self.0.tokens_ahead(plan, payload)
    }
}
