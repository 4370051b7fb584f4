//! [`TestContext`]: a step's context without a plan or an executor, for a handler's unit tests
//! (feature `testing`).

use std::sync::Arc;
use std::time::Instant;

use uuid::Uuid;

use super::{StepContext, StepNotes};
use crate::contract::plan::{PlanMetadata, StepDefinition};
use crate::contract::steps::{Step, StepPayload};
use crate::exec::ledger::Ledger;
use crate::exec::report::TokenUsage;
use crate::hash::Digest;

/// What a [`StepContext`] borrows, owned: for calling one handler by itself, as a unit test does,
/// without a plan or an executor.
///
/// ```
/// # #[cfg(feature = "testing")]
/// # fn main() -> Result<(), planlock::HandlerError> {
/// use planlock::handler::TestContext;
/// use planlock::{Handler, HandlerError, StepContext, steps::*, schema::*, AnyObject};
///
/// struct Echo;
/// impl Handler<LLMCall> for Echo {
///     async fn call(&self, cx: &StepContext<'_>, _: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
///         let prompt = cx.ledger().get::<PromptAssemble>().map(|r| r.prompt.clone()).unwrap_or_default();
///         Ok(LlmCallResult { response: format!("echo: {prompt}") })
///     }
/// }
///
/// let payload = LlmCallPayload { prompt: "p".into(), config: AnyObject::new() };
/// let test = TestContext::new("llm", payload.clone()).with_step::<PromptAssemble>(
///     "prompt",
///     PromptAssemblePayload { template: "hi".into(), vars: AnyObject::new() },
///     PromptAssembleResult { prompt: "hi".into() },
/// );
/// let result = planlock::block_on(Echo.call(&test.context(), &payload))?;
/// assert_eq!(result.response, "echo: hi");
/// assert!(test.context().result_by_id("prompt").is_some());
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "testing"))]
/// # fn main() {}
/// ```
#[derive(Debug, Clone)]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub struct TestContext {
    step: StepDefinition,
    earlier: Vec<StepDefinition>,
    metadata: PlanMetadata,
    ledger: Ledger,
    session_id: Uuid,
    plan_hash: Digest,
    cycle: u64,
    deadline: Option<Instant>,
    notes: Arc<StepNotes>,
    record_content: bool,
}

impl TestContext {
    /// The context of step `id` with this payload: no earlier steps, metadata
    /// `("profiles/test", "test")`, a nil session id, the digest of nothing as plan hash, cycle 1.
    pub fn new(id: impl Into<String>, payload: impl Into<StepPayload>) -> TestContext {
        TestContext {
            step: StepDefinition::new(id, payload),
            earlier: Vec::new(),
            metadata: PlanMetadata::new("profiles/test", "test"),
            ledger: Ledger::default(),
            session_id: Uuid::nil(),
            plan_hash: Digest::of(b""),
            cycle: 1,
            deadline: None,
            notes: Arc::default(),
            record_content: false,
        }
    }

    /// Adds an earlier step of type `T` and the result it produced.
    pub fn with_step<T: Step>(mut self, id: impl Into<String>, payload: T::Payload, result: T::Result) -> Self {
        self.earlier.push(StepDefinition::new(id, T::wrap(payload)));
        self.ledger.record(T::wrap_result(result));
        self
    }

    /// Sets the plan metadata (timeouts, topK, …).
    pub fn metadata(mut self, metadata: PlanMetadata) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the session the step runs in: its id, plan hash and cycle number.
    pub fn session(mut self, session_id: Uuid, plan_hash: Digest, cycle: u64) -> Self {
        (self.session_id, self.plan_hash, self.cycle) = (session_id, plan_hash, cycle);
        self
    }

    /// Sets the step's deadline (none by default).
    pub fn deadline(mut self, at: Instant) -> Self {
        self.deadline = Some(at);
        self
    }

    /// Turns content recording on ([`StepContext::records_content`]; off by default).
    pub fn record_content(mut self, on: bool) -> Self {
        self.record_content = on;
        self
    }

    /// The tokens handlers recorded through this context's
    /// [`StepContext::record_usage`], summed, leaving none recorded.
    pub fn take_usage(&self) -> Option<TokenUsage> {
        self.notes.take_usage()
    }

    /// What the handler gave to [`StepContext::warn`], leaving none recorded.
    pub fn take_warnings(&self) -> Vec<String> {
        self.notes.take_warnings()
    }

    /// The context to hand to the handler.
    pub fn context(&self) -> StepContext<'_> {
        StepContext {
            step: &self.step,
            steps: &self.earlier,
            metadata: &self.metadata,
            ledger: &self.ledger,
            session_id: self.session_id,
            plan_hash: &self.plan_hash,
            cycle: self.cycle,
            deadline: self.deadline,
            notes: &self.notes,
            record_content: self.record_content,
            in_session: None,
        }
    }
}
