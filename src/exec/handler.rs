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

use uuid::Uuid;

use crate::contract::plan::{PlanMetadata, StepDefinition};
use crate::contract::registry::StepType;
use crate::contract::steps::{Step, StepPayload, StepResult};
use crate::exec::ledger::Ledger;
use crate::hash::{Digest, IdempotencyKey};

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
    /// A key stable for this step of this plan in this session: a write handler can use it to
    /// make a re-run after an intervention or a crash harmless.
    pub fn idempotency_key(&self) -> IdempotencyKey {
        IdempotencyKey::derive(self.session_id, self.plan_hash, &self.step.id)
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

    pub(crate) fn set(&self) -> &L {
        &self.list
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Nil {}
    impl<T, H, R> Sealed for super::Entry<T, H, R> {}
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
}

impl HandlerSet for Nil {
    fn handles(&self, _: StepType) -> bool {
        false
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
}
