//! The flat executor, the Core Engine of D-007: it runs the steps of a [`ValidPlan`] in order and
//! owns nothing else (docs/CONTRACT.md, "Execution").
//!
//! For each step it runs the pre-validators, hands the payload to the registered handler (within
//! the step's deadline, if the metadata sets one), checks the result against the contract, runs
//! the post-validators and records the result in the [`Ledger`](crate::exec::ledger::Ledger). It never rewrites a payload,
//! never wires one step's result into another's payload, never reorders, inserts, skips or
//! branches, and never reads a payload's meaning.
//!
//! Failures are classified by the registry, never by the handler: a CycleFail step ends the
//! cycle with an error and leaves the executor usable; a FailFast one halts it, and every later
//! call is refused with [`ExecError::Halted`] naming the original failure. A validator's Block
//! pauses the cycle as a [`PausedCycle`] that can only be resumed or abandoned.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;

use crate::contract::plan::{PlanMetadata, StepDefinition, ValidatorSignature};
use crate::contract::registry::{Failure, FailureKind};
use crate::contract::steps::StepResult;
use crate::exec::handler::{HandlerSet, Handlers, InSession, Nil, StepContext, StepNotes};
use crate::exec::validator::{Override, Registered, StepView, Validator, Verdict};
use crate::validate::{ValidPlan, check_result};

use crate::exec::cycle::{Block, Cycle};
pub use crate::exec::cycle::{Completed, CycleOutcome, CycleSession, PausedCycle};
pub(crate) use crate::exec::cycle::{RestoredCycle, override_fits};
use crate::exec::failure::ValidatorPanic;
pub use crate::exec::failure::{ExecError, StepFailure};
pub use crate::exec::guard::DEFAULT_PROMPT_DEADLINE;
use crate::exec::guard::{Called, deadline, guard, guarded_call};
pub use crate::exec::report::{
    CycleReport, Intervention, OverrideRecord, Phase, StaleApproval, StepRecord, StepStatus, TokenUsage, WarnedBy,
    Warning,
};
pub use crate::exec::shown::{MAX_SHOWN_BYTES, Shown};
use crate::exec::spans;

/// The flat executor. Build it with its [`Handlers`], register validators, then run cycles. A
/// session's cycles are run by its [`Runtime`](crate::runtime::Runtime), which owns an executor
/// of its own; an executor alone runs cycles outside any session.
///
/// ```
/// use planlock::{Executor, Handlers, handler_fn, steps::*, schema::*, AnyObject, PlanBuilder};
///
/// let handlers = Handlers::new()
///     .on::<ContextSelect>(handler_fn(|_, p: &ContextSelectPayload| Ok(ContextSelectResult { selected_context: vec![] })))
///     .on::<PromptAssemble>(handler_fn(|_, p: &PromptAssemblePayload| Ok(PromptAssembleResult { prompt: p.template.clone() })))
///     .on::<LLMCall>(handler_fn(|cx, _: &LlmCallPayload| {
///         let prompt = &cx.ledger().get::<PromptAssemble>().unwrap().prompt; // read-only
///         Ok(LlmCallResult { response: format!("echo {prompt}") })
///     }))
///     .on::<PersistSession>(handler_fn(|_, _: &PersistSessionPayload| Ok(PersistSessionResult { status: "ok".into() })));
/// let executor = Executor::new(handlers);
///
/// let plan = PlanBuilder::new("profiles/default", "chat")
///     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec![] })
///     .prompt_assemble("prompt", PromptAssemblePayload { template: "hello".into(), vars: AnyObject::new() })
///     .llm_call("llm", LlmCallPayload { prompt: "hello".into(), config: AnyObject::new() })
///     .persist_session("save", PersistSessionPayload { session_ref: "s".into(), meta: AnyObject::new() })
///     .build()?;
/// // Outside a runtime, the cycle runs under a throw-away session of its own.
/// let done = executor.run_blocking(&plan)?.completed().unwrap();
/// assert_eq!(done.ledger.get::<LLMCall>().unwrap().response, "echo hello");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Executor<L = Nil> {
    handlers: Handlers<L>,
    options: ExecOptions,
    /// Set by a FailFast failure, when this executor keeps its own halt (run alone). Inside a
    /// runtime it does not: the runtime holds the one halt of its session.
    halted: Option<OnceLock<ExecError>>,
}

/// How an executor runs besides its handlers: the registered validators and whether spans record
/// content. The runtime's builder collects one and hands it over, so both builders set the same
/// thing.
#[derive(Debug, Default)]
pub(crate) struct ExecOptions {
    validators: Vec<Registered>,
    record_content: bool,
}

/// The option setters of a builder holding `options: ExecOptions` (the executor, the runtime's
/// builder): one definition, so both say and do the same.
macro_rules! option_setters {
    ($validator:ident, $doc:literal) => {
        #[doc = $doc]
        pub fn $validator(
            mut self,
            id: impl Into<String>,
            version: impl Into<String>,
            config: &serde_json::Value,
            validator: impl $crate::exec::validator::Validator,
        ) -> Self {
            self.options.add_validator(id, version, config, validator);
            self
        }

        /// Records payloads and results in the step spans, prompts and answers on the model-call
        /// spans, and (in a runtime) the steps' results in the session's cycle history (off by
        /// default: they may hold user data; CONTRACT §16).
        pub fn record_content(mut self, on: bool) -> Self {
            self.options.set_record_content(on);
            self
        }
    };
}
pub(crate) use option_setters;

impl ExecOptions {
    /// Registers a validator (a second one with the same id replaces the first).
    pub(crate) fn add_validator(
        &mut self,
        id: impl Into<String>,
        version: impl Into<String>,
        config: &Value,
        validator: impl Validator,
    ) {
        Registered::new(id, version, config, validator).add_to(&mut self.validators);
    }

    /// Whether step spans record payloads and results.
    pub(crate) fn set_record_content(&mut self, on: bool) {
        self.record_content = on;
    }

    /// Whether content is recorded (see [`set_record_content`](Self::set_record_content)).
    pub(crate) fn records_content(&self) -> bool {
        self.record_content
    }
}

/// What [`Executor::check`] found a plan needs: its validators, by their place among the
/// registered ones. The runtime checks its plan once, at boot, and runs every cycle with this.
#[derive(Debug, Clone, Default)]
pub(crate) struct Checked {
    pre: Vec<usize>,
    post: Vec<usize>,
}

struct Resolved<'e> {
    pre: Vec<&'e Registered>,
    post: Vec<&'e Registered>,
}

impl<L: HandlerSet> Executor<L> {
    /// An executor with these handlers and no validators.
    pub fn new(handlers: Handlers<L>) -> Self {
        Executor { handlers, options: ExecOptions::default(), halted: Some(OnceLock::new()) }
    }

    /// A runtime's executor: these handlers and options (the runtime's builder collected them),
    /// and no halt of its own (the runtime halts).
    pub(crate) fn in_runtime(handlers: Handlers<L>, options: ExecOptions) -> Self {
        Executor { handlers, options, halted: None }
    }

    /// Whether this executor can run `plan`: a handler for every step, every validator the plan
    /// names registered with the same version and configuration. What it found runs the plan's
    /// cycles ([`run_checked`](Self::run_checked)) without checking again.
    pub(crate) fn check(&self, plan: &ValidPlan) -> Result<Checked, ExecError> {
        for step in plan.steps() {
            if !self.handlers.set().handles(step.step_type()) {
                return Err(
                    self.fail(ExecError::MissingHandler { step_id: step.id.clone(), step_type: step.step_type() })
                );
            }
        }
        let pre = self.resolve(&plan.plan().validators, "validators").map_err(|e| self.fail(e))?;
        let post = self.resolve(&plan.plan().post_validators, "postValidators").map_err(|e| self.fail(e))?;
        Ok(Checked { pre, post })
    }

    /// What the model calls of `plan`'s steps from index `from` on may cost, as their handlers
    /// estimate it from the plan ([`Handler::tokens_ahead`](crate::Handler::tokens_ahead)): what
    /// a cycle with a token budget reserves at its start.
    pub(crate) fn tokens_ahead(&self, plan: &ValidPlan, from: usize) -> u64 {
        let steps = plan.steps().get(from..).unwrap_or_default();
        steps
            .iter()
            .fold(0u64, |sum, step| sum.saturating_add(self.handlers.set().tokens_ahead(plan.plan(), &step.payload)))
    }

    /// The validators `checked` names.
    fn resolved(&self, checked: &Checked) -> Resolved<'_> {
        let of = |at: &[usize]| at.iter().map(|&i| &self.options.validators[i]).collect();
        Resolved { pre: of(&checked.pre), post: of(&checked.post) }
    }

    option_setters!(
        with_validator,
        "Registers a validator by id, version and configuration. A plan uses it by naming the same three facts (see [`Executor::validator_signature`])."
    );

    /// The signature a plan must carry to use the registered validator `id`.
    pub fn validator_signature(&self, id: &str) -> Option<ValidatorSignature> {
        self.options.validators.iter().find(|v| v.id == id).map(Registered::signature)
    }

    /// The failure that halted this executor, if one did.
    pub fn halted(&self) -> Option<&ExecError> {
        self.halted.as_ref()?.get()
    }

    /// Runs one cycle of `plan` outside any session, under a throw-away session of its own (a new
    /// id, the plan's own digest, cycle 1). A session's cycles are run by its
    /// [`Runtime`](crate::runtime::Runtime), which alone knows its identity and hash.
    pub async fn run(&self, plan: &ValidPlan) -> Result<CycleOutcome, ExecError> {
        self.run_with(plan, CycleSession::for_plan(plan)).await
    }

    /// [`run`](Self::run) from synchronous code.
    pub fn run_blocking(&self, plan: &ValidPlan) -> Result<CycleOutcome, ExecError> {
        crate::io::block_on(self.run(plan))
    }

    /// Runs one cycle of `plan` under `session`: a throw-away one from [`CycleSession::for_plan`],
    /// or, inside the runtime, the session it computed.
    pub async fn run_with(&self, plan: &ValidPlan, session: CycleSession) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        let checked = self.check(plan)?;
        self.run_checked(plan, &checked, session, None).await
    }

    /// Runs one cycle of `plan`, which [`check`](Self::check) found runnable as `checked`.
    pub(crate) async fn run_checked(
        &self,
        plan: &ValidPlan,
        checked: &Checked,
        session: CycleSession,
        open: Option<InSession<'_>>,
    ) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        self.run_steps(plan, &self.resolved(checked), Cycle::new(session), open).await
    }

    /// Resumes a cycle the runtime restored from its durable record, of `plan`, which
    /// [`check`](Self::check) found runnable as `checked`.
    pub(crate) async fn resume_restored(
        &self,
        plan: &ValidPlan,
        checked: &Checked,
        restored: RestoredCycle,
        open: Option<InSession<'_>>,
    ) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        let resolved = self.resolved(checked);
        let RestoredCycle { session, next, ledger, over, paused_by, trace } = restored;
        let report = CycleReport { interventions: vec![paused_by], ..CycleReport::default() };
        let cycle = Cycle { session, next, ledger, report, over, trace };
        self.run_steps(plan, &resolved, cycle, open).await
    }

    fn refuse_if_halted(&self) -> Result<(), ExecError> {
        match self.halted() {
            Some(original) => Err(ExecError::Halted { original: Box::new(original.clone()) }),
            None => Ok(()),
        }
    }

    /// Halts the executor on a FailFast error, if it keeps its own halt; returns the error.
    fn fail(&self, err: ExecError) -> ExecError {
        if let Some(halted) = &self.halted
            && err.kind() == FailureKind::FailFast
        {
            let _ = halted.set(err.clone());
        }
        err
    }

    /// The place of each validator of `sigs` among the registered ones.
    fn resolve(&self, sigs: &[ValidatorSignature], list: &'static str) -> Result<Vec<usize>, ExecError> {
        sigs.iter()
            .map(|sig| {
                let at = self
                    .options
                    .validators
                    .iter()
                    .position(|v| v.id == sig.id)
                    .ok_or_else(|| ExecError::UnknownValidator { id: sig.id.clone(), list })?;
                let v = &self.options.validators[at];
                if v.version != sig.version {
                    return Err(ExecError::ValidatorMismatch {
                        id: sig.id.clone(),
                        field: "version",
                        plan: sig.version.clone(),
                        runtime: v.version.clone(),
                    });
                }
                let runtime_hash = v.config_hash.to_string();
                if runtime_hash != sig.config_hash {
                    return Err(ExecError::ValidatorMismatch {
                        id: sig.id.clone(),
                        field: "config_hash",
                        plan: sig.config_hash.clone(),
                        runtime: runtime_hash,
                    });
                }
                Ok(at)
            })
            .collect()
    }

    async fn run_steps(
        &self,
        plan: &ValidPlan,
        validators: &Resolved<'_>,
        mut cycle: Cycle,
        open: Option<InSession<'_>>,
    ) -> Result<CycleOutcome, ExecError> {
        let trace = cycle.trace.take();
        let span = spans::cycle_span(plan.metadata(), &cycle, plan.steps().len(), trace);
        let started = Instant::now();
        let mut result = self.steps(plan, validators, cycle, open, &span).await;
        spans::cycle_ended(&span, started, &mut result);
        result
    }

    async fn steps(
        &self,
        plan: &ValidPlan,
        validators: &Resolved<'_>,
        mut cycle: Cycle,
        open: Option<InSession<'_>>,
        cycle_span: &tracing::Span,
    ) -> Result<CycleOutcome, ExecError> {
        let steps = plan.steps();
        let metadata = plan.metadata();
        cycle.report.steps.reserve(steps.len().saturating_sub(cycle.next));
        // One clock read per step: a step ends where the next one starts.
        let mut started = Instant::now();
        while let Some(planned) = steps.get(cycle.next) {
            let index = cycle.next;
            // An approved edit (CONTRACT §22): the re-run of its step runs the edited payload,
            // which the validator's Block passes only while it has the approved digest. One that
            // cannot be read leaves the plan's payload, which the approval does not pass.
            let edited = match cycle.over.as_ref().and_then(|o| o.edited(planned)) {
                Some(Ok(step)) => Some(step),
                Some(Err(message)) => {
                    tracing::warn!(step = %planned.id, %message, "approved edit not read");
                    None
                }
                None => None,
            };
            let step = edited.as_ref().unwrap_or(planned);
            let span = spans::step_span(cycle_span, index, step);
            let mut warnings = Vec::new();
            let view = StepView {
                id: &step.id,
                step_type: step.step_type(),
                payload: &step.payload,
                metadata,
                ledger: &cycle.ledger,
            };
            let verdicts = validators.pre.iter().map(|v| (*v, Phase::Before, guard(|| v.validator.before(&view))));
            if !validators.pre.is_empty() {
                let shown = || Shown::before(step, steps, &cycle.ledger);
                match self.judge(verdicts, step, &span, &mut warnings, &mut cycle.over, &mut cycle.report, shown) {
                    Ok(None) => {}
                    Ok(Some(block)) => {
                        let record = attempt(index, step, StepStatus::Blocked, warnings, started, None);
                        return Ok(self.pause(cycle, step, block, record));
                    }
                    Err(panic) => {
                        let record = attempt(index, step, StepStatus::Failed, warnings, started, None);
                        let err = self.end(cycle.report, record, |report| panic.into_error(step, report));
                        spans::failed(&span, &err);
                        return Err(err);
                    }
                }
            }
            // The handler's deadline counts from its call: from the step's start when no
            // pre-validator ran before it (saving a clock read), else from now.
            let call_start = if validators.pre.is_empty() { started } else { Instant::now() };
            let limit = deadline(step.step_type(), metadata);
            let notes = StepNotes::default();
            let cx = StepContext {
                step,
                steps,
                metadata,
                ledger: &cycle.ledger,
                session_id: cycle.session.session_id,
                plan_hash: &cycle.session.plan_hash,
                cycle: cycle.session.cycle,
                deadline: limit.map(|(d, _)| call_start + d),
                notes: &notes,
                record_content: self.options.record_content,
                in_session: open,
            };
            // With no subscriber listening, entering and leaving the span on every poll is pure cost.
            let outcome = if span.is_disabled() {
                self.call(&cx, metadata, call_start, limit).await
            } else {
                self.call(&cx, metadata, call_start, limit).instrument(span.clone()).await
            };
            for message in notes.take_warnings() {
                tracing::warn!(parent: &span, %message, "step warning");
                warnings.push(Warning { by: WarnedBy::Handler, message });
            }
            let (result, returned_at) = match outcome {
                Ok(result) => result,
                Err(cause) => {
                    let kind = cause.kind_for(step.step_type());
                    let record = attempt(index, step, StepStatus::Failed, warnings, started, notes.take_usage());
                    let err = self.end(cycle.report, record, |report| ExecError::StepFailed {
                        step_id: step.id.clone(),
                        step_type: step.step_type(),
                        kind,
                        cause,
                        report,
                    });
                    spans::failed(&span, &err);
                    tracing::warn!(parent: cycle_span, error = %err, "cycle failed");
                    return Err(err);
                }
            };
            if self.options.record_content {
                span.record(crate::telemetry::names::RESULT, tracing::field::display(json_of(&result)));
                spans::cycle_content(cycle_span, &result);
            }
            let verdicts =
                validators.post.iter().map(|v| (*v, Phase::After, guard(|| v.validator.after(&view, &result))));
            if !validators.post.is_empty() {
                let shown = || Shown::after(&result);
                match self.judge(verdicts, step, &span, &mut warnings, &mut cycle.over, &mut cycle.report, shown) {
                    Ok(None) => {}
                    Ok(Some(block)) => {
                        // Nothing of the blocked attempt is kept but the tokens it cost: its
                        // result is dropped here.
                        let record = attempt(index, step, StepStatus::Blocked, warnings, started, notes.take_usage());
                        return Ok(self.pause(cycle, step, block, record));
                    }
                    Err(panic) => {
                        let record = attempt(index, step, StepStatus::Failed, warnings, started, notes.take_usage());
                        let err = self.end(cycle.report, record, |report| panic.into_error(step, report));
                        spans::failed(&span, &err);
                        return Err(err);
                    }
                }
            }
            cycle.ledger.record(result);
            // The deadline check read the clock when the handler returned; with no
            // post-validator since, that is when the step ended.
            let finished = match returned_at {
                Some(at) if validators.post.is_empty() => at,
                _ => Instant::now(),
            };
            let duration = finished.duration_since(started);
            started = finished;
            span.record(crate::telemetry::names::OUTCOME, "completed");
            cycle.report.steps.push(StepRecord {
                index,
                id: step.id.clone(),
                step_type: step.step_type(),
                status: StepStatus::Completed,
                duration,
                warnings,
                usage: notes.take_usage(),
            });
            cycle.next += 1;
            // An override is for the re-run of the step it was given for, and no other.
            cycle.over = None;
        }
        Ok(CycleOutcome::Completed(Completed { report: cycle.report, ledger: cycle.ledger }))
    }

    /// Runs the handler within the step's deadline, guarded against a panic, and checks its
    /// result.
    /// Returns the result, and when the handler returned if the deadline check read the clock.
    async fn call(
        &self,
        cx: &StepContext<'_>,
        metadata: &PlanMetadata,
        start: Instant,
        limit: Option<(Duration, &'static str)>,
    ) -> Result<(StepResult, Option<Instant>), StepFailure> {
        let step = cx.step;
        if self.options.record_content {
            tracing::Span::current()
                .record(crate::telemetry::names::PAYLOAD, tracing::field::display(json_of(&step.payload)));
        }
        let deadline = limit.map(|(d, _)| (start, d));
        let (result, returned_at) = match guarded_call(self.handlers.set().dispatch(cx, &step.payload), deadline).await
        {
            Called::Done(result, returned_at) => (result?, returned_at),
            Called::Panicked(message) => return Err(StepFailure::Panicked(message)),
            Called::Late => {
                let (limit, key) = limit.unwrap_or((Duration::ZERO, "?"));
                return Err(StepFailure::TimedOut { limit_ms: limit.as_millis() as u64, key });
            }
        };
        let problems = check_result(&step.payload, &result, metadata);
        if problems.is_empty() { Ok((result, returned_at)) } else { Err(StepFailure::ResultContract(problems)) }
    }

    /// Applies the verdicts: records warnings, honours the cycle's override once (while what
    /// `shown` gives has the approved digest), returns the first Block that stands with what it
    /// blocked.
    #[allow(clippy::too_many_arguments, reason = "the judged step's whole context, private")]
    fn judge<'v>(
        &self,
        verdicts: impl Iterator<Item = (&'v Registered, Phase, Result<Verdict, String>)>,
        step: &StepDefinition,
        span: &tracing::Span,
        warnings: &mut Vec<Warning>,
        over: &mut Option<Override>,
        report: &mut CycleReport,
        shown: impl Fn() -> Shown,
    ) -> Result<Option<Block>, ValidatorPanic> {
        for (v, phase, verdict) in verdicts {
            let verdict = match verdict {
                Ok(verdict) => verdict,
                Err(message) => {
                    let panic = ValidatorPanic { validator_id: v.id.clone(), message };
                    let failed = spans::guardrail_span(span, &v.id, step, "error");
                    crate::telemetry::failed(&failed, "validator-panicked", &panic.message);
                    return Err(panic);
                }
            };
            // An Allow or a Warn is an event on the step; a Block gets a span of its own.
            let said = match &verdict {
                Verdict::Allow => "allow",
                Verdict::Warn(_) => "warn",
                Verdict::Block(_) => "block",
            };
            if said != "block" {
                spans::guardrail_event(span, &v.id, said);
            }
            match verdict {
                Verdict::Allow => {}
                Verdict::Warn(message) => {
                    tracing::info!(validator = %v.id, %message, "validator warning");
                    warnings.push(Warning { by: WarnedBy::Validator { validator_id: v.id.clone(), phase }, message });
                }
                Verdict::Block(reason) => {
                    if let Some(o) = over.take_if(|o| o.validator_id == v.id && o.step_id == step.id) {
                        // Bound to what was approved: it applies only to the same thing again.
                        let met = o.shown_digest.map(|approved| (approved, shown().digest));
                        match met {
                            Some((approved, met)) if approved != met => {
                                tracing::warn!(validator = %v.id, %approved, %met, "approval-stale");
                                let validator_id = o.validator_id;
                                report.stale.push(StaleApproval {
                                    step_id: step.id.clone(),
                                    validator_id,
                                    approved,
                                    met,
                                });
                            }
                            _ => {
                                // The Block a person approved: an event on the step.
                                spans::guardrail_event(span, &v.id, "approved");
                                report.overrides.push(OverrideRecord { approved: o, reason });
                                continue;
                            }
                        }
                    }
                    let _block = spans::guardrail_span(span, &v.id, step, "block").entered();
                    tracing::warn!(validator = %v.id, %reason, "validator blocked the step");
                    span.record(crate::telemetry::names::OUTCOME, "blocked");
                    return Ok(Some(Block { validator_id: v.id.clone(), phase, reason, shown: shown() }));
                }
            }
        }
        Ok(None)
    }

    /// Ends the cycle with the error `make` builds around its report, which gets the failed
    /// step's `record` last; a FailFast error halts the executor.
    fn end(
        &self,
        mut report: CycleReport,
        record: StepRecord,
        make: impl FnOnce(Box<CycleReport>) -> ExecError,
    ) -> ExecError {
        report.steps.push(record);
        self.fail(make(Box::new(report)))
    }

    /// Pauses `cycle` at `step`, which `block` stopped; `record` is the step's, from [`attempt`].
    fn pause(&self, mut cycle: Cycle, step: &StepDefinition, block: Block, record: StepRecord) -> CycleOutcome {
        cycle.report.steps.push(record);
        let intervention = Intervention {
            step_index: cycle.next,
            step_id: step.id.clone(),
            step_type: step.step_type(),
            validator_id: block.validator_id,
            phase: block.phase,
            reason: block.reason,
        };
        cycle.report.interventions.push(intervention.clone());
        CycleOutcome::InterventionRequired(PausedCycle { cycle, intervention, shown: block.shown, trace: None })
    }
}

fn json_of<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The record of an attempt at step `index` that did not complete (blocked or failed), started
/// at `started`: its warnings, and the tokens it cost if its handler ran.
fn attempt(
    index: usize,
    step: &StepDefinition,
    status: StepStatus,
    warnings: Vec<Warning>,
    started: Instant,
    usage: Option<TokenUsage>,
) -> StepRecord {
    let id = step.id.clone();
    StepRecord { index, id, step_type: step.step_type(), status, duration: started.elapsed(), warnings, usage }
}
