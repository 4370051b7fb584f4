//! The flat executor, the Core Engine of D-007: it runs the steps of a [`ValidPlan`] in order and
//! owns nothing else (docs/CONTRACT.md, "Execution").
//!
//! For each step it runs the pre-validators, hands the payload to the registered handler (within
//! the step's deadline, if the metadata sets one), checks the result against the contract, runs
//! the post-validators and records the result in the [`Ledger`]. It never rewrites a payload,
//! never wires one step's result into another's payload, never reorders, inserts, skips or
//! branches, and never reads a payload's meaning.
//!
//! Failures are classified by the registry, never by the handler: a CycleFail step ends the
//! cycle with an error and leaves the executor usable; a FailFast one halts it, and every later
//! call is refused with [`ExecError::Halted`] naming the original failure. A validator's Block
//! pauses the cycle as a [`PausedCycle`] that can only be resumed or abandoned.

use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::sync::OnceLock;
use std::task::Poll;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;
use uuid::Uuid;

use crate::contract::plan::{PlanMetadata, StepDefinition, ValidatorSignature};
use crate::contract::problem::Problem;
use crate::contract::registry::{Failure, FailureKind, StepClass, StepType};
use crate::contract::steps::{StepPayload, StepResult};
use crate::exec::handler::{HandlerError, HandlerSet, Handlers, Nil, StepContext, UsageSlot};
use crate::exec::ledger::Ledger;
use crate::exec::validator::{Override, Registered, StepView, Validator, Verdict};
use crate::hash::{Digest, plan_digest};
use crate::validate::{ValidPlan, check_result};

pub use crate::exec::report::{
    CycleReport, Intervention, OverrideRecord, Phase, StepRecord, StepStatus, TokenUsage, Warning,
};

/// The session a cycle runs in: its id, the plan hash and the cycle number. Only the runtime
/// makes one for a real session (from what it booted and computed itself); a cycle run by an
/// [`Executor`] alone gets a throw-away one ([`Executor::run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleSession {
    pub(crate) session_id: Uuid,
    pub(crate) plan_hash: Digest,
    pub(crate) cycle: u64,
}

impl CycleSession {
    /// A throw-away session for cycles of `plan` outside any runtime: a new id, the digest of the
    /// plan alone as its hash, cycle 1. (A session's real identity and hash are the runtime's,
    /// and never leave it.) Compute it once and run many cycles with
    /// [`Executor::run_with`], when hashing the plan per cycle would cost too much.
    pub fn for_plan(plan: &ValidPlan) -> CycleSession {
        CycleSession { session_id: Uuid::new_v4(), plan_hash: plan_digest(plan.plan()), cycle: 1 }
    }

    /// The session id (a UUID v4 created at cold start).
    pub fn session_id(&self) -> Uuid {
        self.session_id
    }

    /// The plan hash the cycle runs under (docs/CONTRACT.md, "Plan hash").
    pub fn plan_hash(&self) -> Digest {
        self.plan_hash
    }

    /// The cycle's number: the session's completed cycles + 1.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }
}

/// Why a step failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StepFailure {
    /// The handler returned an error.
    #[error("{0}")]
    Handler(#[from] HandlerError),
    /// The step did not finish within its deadline.
    #[error("timed out after {limit_ms} ms ({key})")]
    TimedOut {
        /// The deadline.
        limit_ms: u64,
        /// Where the deadline comes from: `metadata.timeouts.llmMs`, `metadata.timeouts.ioMs`,
        /// or the step type's default ([`DEFAULT_PROMPT_DEADLINE`]).
        key: &'static str,
    },
    /// The handler panicked; the message is what the panic said.
    #[error("the handler panicked: {0}")]
    Panicked(String),
    /// The handler's result breaks the step's result contract.
    #[error("the result breaks the contract: {}", join(.0))]
    ResultContract(Vec<Problem>),
}

fn join(problems: &[Problem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// An execution failure, with its failure class.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// A step failed; `kind` comes from the registry.
    #[error("step `{step_id}` ({step_type}) failed [{kind}]: {cause}")]
    StepFailed {
        /// The step's id.
        step_id: String,
        /// The step's type.
        step_type: StepType,
        /// How the failure propagates.
        kind: FailureKind,
        /// What went wrong.
        cause: StepFailure,
    },
    /// The plan has a step no handler is registered for; nothing ran.
    #[error(
        "no handler is registered for step `{step_id}` ({step_type}); register one with `Handlers::on::<{step_type}>(..)`; no step ran"
    )]
    MissingHandler {
        /// The step's id.
        step_id: String,
        /// The step's type.
        step_type: StepType,
    },
    /// The plan names a validator the runtime does not have; nothing ran.
    #[error("the plan's `{list}` names validator `{id}`, which this runtime does not have; no step ran")]
    UnknownValidator {
        /// The validator id.
        id: String,
        /// `validators` or `postValidators`.
        list: &'static str,
    },
    /// The plan pins a validator to another version or configuration than the runtime's.
    #[error(
        "validator `{id}`: the plan pins {field} `{plan}` but the runtime has `{runtime}`; the run would not be reproducible; no step ran"
    )]
    ValidatorMismatch {
        /// The validator id.
        id: String,
        /// `version` or `config_hash`.
        field: &'static str,
        /// The plan's value.
        plan: String,
        /// The runtime's value.
        runtime: String,
    },
    /// A resume found a different plan or plan hash than the paused cycle's.
    #[error("resume refused: {what} differs from the paused cycle's; a paused cycle resumes only under its own plan")]
    PlanChanged {
        /// What differs.
        what: &'static str,
    },
    /// A validator panicked: a gate that cannot decide is never passed.
    #[error("validator `{validator_id}` panicked at step `{step_id}`: {message}; the cycle stops (FailFast)")]
    ValidatorPanicked {
        /// The validator.
        validator_id: String,
        /// The step it was judging.
        step_id: String,
        /// What the panic said.
        message: String,
    },
    /// An override that names no pending intervention.
    #[error(
        "override refused: it names validator `{validator_id}` at step `{step_id}`, but the pending intervention is validator `{pending_validator}` at step `{pending_step}`"
    )]
    OverrideRefused {
        /// The override's validator.
        validator_id: String,
        /// The override's step.
        step_id: String,
        /// The pending intervention's validator.
        pending_validator: String,
        /// The pending intervention's step.
        pending_step: String,
    },
    /// An earlier FailFast failure halted this executor.
    #[error("the runtime is halted by an earlier FailFast failure: {original}")]
    Halted {
        /// The failure that halted it.
        original: Box<ExecError>,
    },
}

impl Failure for ExecError {
    /// The failure class.
    fn kind(&self) -> FailureKind {
        match self {
            ExecError::StepFailed { kind, .. } => *kind,
            ExecError::MissingHandler { .. } | ExecError::OverrideRefused { .. } => FailureKind::CycleFail,
            ExecError::UnknownValidator { .. }
            | ExecError::ValidatorMismatch { .. }
            | ExecError::PlanChanged { .. }
            | ExecError::ValidatorPanicked { .. }
            | ExecError::Halted { .. } => FailureKind::FailFast,
        }
    }

    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            ExecError::StepFailed { cause: StepFailure::Handler(_), .. } => "step-failed",
            ExecError::StepFailed { cause: StepFailure::TimedOut { .. }, .. } => "step-timed-out",
            ExecError::StepFailed { cause: StepFailure::ResultContract(_), .. } => "result-contract",
            ExecError::StepFailed { cause: StepFailure::Panicked(_), .. } => "step-panicked",
            ExecError::ValidatorPanicked { .. } => "validator-panicked",
            ExecError::OverrideRefused { .. } => "override-refused",
            ExecError::MissingHandler { .. } => "missing-handler",
            ExecError::UnknownValidator { .. } => "unknown-validator",
            ExecError::ValidatorMismatch { .. } => "validator-mismatch",
            ExecError::PlanChanged { .. } => "plan-changed",
            ExecError::Halted { .. } => "halted",
        }
    }
}

/// A cycle that ran to the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// What happened.
    pub report: CycleReport,
    /// Every step's result.
    pub ledger: Ledger,
}

/// How a cycle ended, when it did not fail.
#[derive(Debug)]
#[must_use = "a paused cycle must be resumed or abandoned"]
#[allow(clippy::large_enum_variant, reason = "one per cycle, moved a few times; boxing buys nothing")]
pub enum CycleOutcome {
    /// Every step ran.
    Completed(Completed),
    /// A validator blocked a step; the cycle waits for the caller.
    InterventionRequired(PausedCycle),
}

impl CycleOutcome {
    /// The completed cycle, if it completed.
    pub fn completed(self) -> Option<Completed> {
        match self {
            CycleOutcome::Completed(c) => Some(c),
            CycleOutcome::InterventionRequired(_) => None,
        }
    }
}

/// A cycle in progress: its session, the next step to run, what it has recorded so far, and the
/// override it may still use. A paused cycle keeps it whole, so a resume goes on from here.
#[derive(Debug)]
struct Cycle {
    session: CycleSession,
    next: usize,
    ledger: Ledger,
    report: CycleReport,
    over: Option<Override>,
}

impl Cycle {
    fn new(session: CycleSession) -> Cycle {
        Cycle { session, next: 0, ledger: Ledger::default(), report: CycleReport::default(), over: None }
    }
}

/// A paused cycle as the runtime restores it from its durable record: the step to re-run, the
/// results of the steps before it, and the override for the re-run.
#[derive(Debug)]
pub(crate) struct RestoredCycle {
    pub(crate) session: CycleSession,
    pub(crate) next: usize,
    pub(crate) ledger: Ledger,
    pub(crate) over: Option<Override>,
    /// The Block that paused the cycle: the resumed cycle's report keeps it, as a cycle resumed
    /// in the same process does.
    pub(crate) paused_by: Intervention,
}

/// A validator's Block as [`Executor::judge`] found it.
struct Block {
    validator_id: String,
    phase: Phase,
    reason: String,
}

/// A cycle paused by a validator's Block (docs/CONTRACT.md, "Execution"). It can only
/// be resumed ([`Executor::resume`]) or abandoned ([`PausedCycle::abandon`]).
#[derive(Debug)]
#[must_use = "a paused cycle must be resumed or abandoned"]
pub struct PausedCycle {
    cycle: Cycle,
    plan_digest: Digest,
    intervention: Intervention,
}

impl PausedCycle {
    /// The Block that paused the cycle.
    pub fn intervention(&self) -> &Intervention {
        &self.intervention
    }

    /// The results of the steps completed before the blocked one.
    pub fn ledger(&self) -> &Ledger {
        &self.cycle.ledger
    }

    /// Gives up the cycle; returns what happened.
    pub fn abandon(self) -> CycleReport {
        self.cycle.report
    }

    /// The report so far.
    pub fn report(&self) -> &CycleReport {
        &self.cycle.report
    }

    /// Refuses an override that does not name this pause's validator and step.
    pub fn check_override(&self, over: &Override) -> Result<(), ExecError> {
        let pending = &self.intervention;
        if over.validator_id == pending.validator_id && over.step_id == pending.step_id {
            return Ok(());
        }
        Err(ExecError::OverrideRefused {
            validator_id: over.validator_id.clone(),
            step_id: over.step_id.clone(),
            pending_validator: pending.validator_id.clone(),
            pending_step: pending.step_id.clone(),
        })
    }
}

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
    validators: Vec<Registered>,
    record_content: bool,
    halted: OnceLock<ExecError>,
}

struct Resolved<'e> {
    pre: Vec<&'e Registered>,
    post: Vec<&'e Registered>,
}

impl<L: HandlerSet> Executor<L> {
    /// An executor with these handlers and no validators.
    pub fn new(handlers: Handlers<L>) -> Self {
        Executor { handlers, validators: Vec::new(), record_content: false, halted: OnceLock::new() }
    }

    /// An executor from the runtime's parts.
    pub(crate) fn with_parts(handlers: Handlers<L>, validators: Vec<Registered>, record_content: bool) -> Self {
        Executor { handlers, validators, record_content, halted: OnceLock::new() }
    }

    /// Whether this executor can run `plan`: a handler for every step, every validator the plan
    /// names registered with the same version and configuration.
    pub(crate) fn check(&self, plan: &ValidPlan) -> Result<(), ExecError> {
        self.preflight(plan).map(drop)
    }

    /// Registers a validator by id, version and configuration. A plan uses it by naming the
    /// same three facts (see [`Executor::validator_signature`]).
    pub fn with_validator(
        mut self,
        id: impl Into<String>,
        version: impl Into<String>,
        config: &Value,
        validator: impl Validator,
    ) -> Self {
        Registered::new(id, version, config, validator).add_to(&mut self.validators);
        self
    }

    /// Records payloads and results in the step spans (off by default: they may hold user data).
    pub fn record_content(mut self, on: bool) -> Self {
        self.record_content = on;
        self
    }

    /// The signature a plan must carry to use the registered validator `id`.
    pub fn validator_signature(&self, id: &str) -> Option<ValidatorSignature> {
        self.validators.iter().find(|v| v.id == id).map(Registered::signature)
    }

    /// The failure that halted this executor, if one did.
    pub fn halted(&self) -> Option<&ExecError> {
        self.halted.get()
    }

    /// Runs one cycle of `plan` outside any session, under a throw-away session of its own (a new
    /// id, the plan's own digest, cycle 1). A session's cycles are run by its
    /// [`Runtime`](crate::runtime::Runtime), which alone knows its identity and hash.
    pub async fn run(&self, plan: &ValidPlan) -> Result<CycleOutcome, ExecError> {
        self.run_with(plan, CycleSession::for_plan(plan)).await
    }

    /// [`run`](Self::run) from synchronous code.
    pub fn run_blocking(&self, plan: &ValidPlan) -> Result<CycleOutcome, ExecError> {
        pollster::block_on(self.run(plan))
    }

    /// Runs one cycle of `plan` under `session`: a throw-away one from [`CycleSession::for_plan`],
    /// or, inside the runtime, the session it computed.
    pub async fn run_with(&self, plan: &ValidPlan, session: CycleSession) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        let resolved = self.preflight(plan)?;
        self.run_steps(plan, &resolved, Cycle::new(session)).await
    }

    /// Resumes a paused cycle of `plan`: the plan must be the paused cycle's (else FailFast). The
    /// blocked step runs again from its start — pre-validators, handler, post-validators — with
    /// nothing kept of the blocked attempt; the results of earlier steps stay. `over` must name
    /// the pending intervention's validator and step (else it is refused, see
    /// [`PausedCycle::check_override`]); it lets that Block pass in this re-run only and is
    /// recorded in the report.
    pub async fn resume(
        &self,
        paused: PausedCycle,
        plan: &ValidPlan,
        over: Option<Override>,
    ) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        if let Some(o) = &over {
            paused.check_override(o)?;
        }
        if plan_digest(plan.plan()) != paused.plan_digest {
            return Err(self.fail(ExecError::PlanChanged { what: "the plan" }));
        }
        let resolved = self.preflight(plan)?;
        let mut cycle = paused.cycle;
        cycle.over = over;
        self.run_steps(plan, &resolved, cycle).await
    }

    /// [`resume`](Self::resume) from synchronous code.
    pub fn resume_blocking(
        &self,
        paused: PausedCycle,
        plan: &ValidPlan,
        over: Option<Override>,
    ) -> Result<CycleOutcome, ExecError> {
        pollster::block_on(self.resume(paused, plan, over))
    }

    /// Resumes a cycle the runtime restored from its durable record.
    pub(crate) async fn resume_restored(
        &self,
        plan: &ValidPlan,
        restored: RestoredCycle,
    ) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        let resolved = self.preflight(plan)?;
        let RestoredCycle { session, next, ledger, over, paused_by } = restored;
        let report = CycleReport { interventions: vec![paused_by], ..CycleReport::default() };
        let cycle = Cycle { session, next, ledger, report, over };
        self.run_steps(plan, &resolved, cycle).await
    }

    fn refuse_if_halted(&self) -> Result<(), ExecError> {
        match self.halted.get() {
            Some(original) => Err(ExecError::Halted { original: Box::new(original.clone()) }),
            None => Ok(()),
        }
    }

    /// Halts the executor on a FailFast error; returns the error.
    fn fail(&self, err: ExecError) -> ExecError {
        if err.kind() == FailureKind::FailFast {
            let _ = self.halted.set(err.clone());
        }
        err
    }

    /// Everything the plan needs must be here before the first step runs.
    fn preflight(&self, plan: &ValidPlan) -> Result<Resolved<'_>, ExecError> {
        for step in plan.steps() {
            if !self.handlers.set().handles(step.step_type()) {
                return Err(
                    self.fail(ExecError::MissingHandler { step_id: step.id.clone(), step_type: step.step_type() })
                );
            }
        }
        let pre = self.resolve(&plan.plan().validators, "validators").map_err(|e| self.fail(e))?;
        let post = self.resolve(&plan.plan().post_validators, "postValidators").map_err(|e| self.fail(e))?;
        Ok(Resolved { pre, post })
    }

    fn resolve(&self, sigs: &[ValidatorSignature], list: &'static str) -> Result<Vec<&Registered>, ExecError> {
        sigs.iter()
            .map(|sig| {
                let v = self
                    .validators
                    .iter()
                    .find(|v| v.id == sig.id)
                    .ok_or_else(|| ExecError::UnknownValidator { id: sig.id.clone(), list })?;
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
                Ok(v)
            })
            .collect()
    }

    async fn run_steps(
        &self,
        plan: &ValidPlan,
        validators: &Resolved<'_>,
        mut cycle: Cycle,
    ) -> Result<CycleOutcome, ExecError> {
        let steps = plan.steps();
        let metadata = plan.metadata();
        let cycle_span = tracing::info_span!(
            "invoke_workflow",
            gen_ai.operation.name = "invoke_workflow",
            planlock.session_id = %cycle.session.session_id,
            planlock.plan_hash = %cycle.session.plan_hash,
            planlock.steps = steps.len(),
            planlock.resumed_at = cycle.next,
        );
        cycle.report.steps.reserve(steps.len().saturating_sub(cycle.next));
        // One clock read per step: a step ends where the next one starts.
        let mut started = Instant::now();
        while let Some(step) = steps.get(cycle.next) {
            let index = cycle.next;
            let span = step_span(&cycle_span, step);
            let mut warnings = Vec::new();
            let view = StepView {
                id: &step.id,
                step_type: step.step_type(),
                payload: &step.payload,
                metadata,
                ledger: &cycle.ledger,
            };
            let verdicts = validators.pre.iter().map(|v| (*v, Phase::Before, guard(|| v.validator.before(&view))));
            if !validators.pre.is_empty()
                && let Some(block) =
                    self.judge(verdicts, step, &span, &mut warnings, &mut cycle.over, &mut cycle.report)?
            {
                let record = blocked(index, step, warnings, started, None);
                return Ok(self.pause(plan, cycle, step, block, record));
            }
            // The handler's deadline counts from its call: from the step's start when no
            // pre-validator ran before it (saving a clock read), else from now.
            let call_start = if validators.pre.is_empty() { started } else { Instant::now() };
            let limit = deadline(step.step_type(), metadata);
            let usage = UsageSlot::default();
            let cx = StepContext {
                step,
                steps,
                metadata,
                ledger: &cycle.ledger,
                session_id: cycle.session.session_id,
                plan_hash: &cycle.session.plan_hash,
                cycle: cycle.session.cycle,
                deadline: limit.map(|(d, _)| call_start + d),
                usage: &usage,
            };
            // With no subscriber listening, entering and leaving the span on every poll is pure cost.
            let outcome = if span.is_disabled() {
                self.call(&cx, metadata, call_start, limit).await
            } else {
                self.call(&cx, metadata, call_start, limit).instrument(span.clone()).await
            };
            let (result, returned_at) = match outcome {
                Ok(result) => result,
                Err(cause) => {
                    span.record("planlock.outcome", "failed");
                    let kind = step.step_type().failure_kind();
                    let err =
                        ExecError::StepFailed { step_id: step.id.clone(), step_type: step.step_type(), kind, cause };
                    tracing::warn!(parent: &cycle_span, error = %err, "cycle failed");
                    return Err(self.fail(err));
                }
            };
            if self.record_content {
                span.record("planlock.result", tracing::field::display(json_of(&result)));
            }
            let verdicts =
                validators.post.iter().map(|v| (*v, Phase::After, guard(|| v.validator.after(&view, &result))));
            if !validators.post.is_empty()
                && let Some(block) =
                    self.judge(verdicts, step, &span, &mut warnings, &mut cycle.over, &mut cycle.report)?
            {
                // Nothing of the blocked attempt is kept but the tokens it cost: its result is
                // dropped here.
                let record = blocked(index, step, warnings, started, usage.take());
                return Ok(self.pause(plan, cycle, step, block, record));
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
            span.record("planlock.outcome", "completed");
            span.record("planlock.duration_ms", duration.as_secs_f64() * 1e3);
            cycle.report.steps.push(StepRecord {
                index,
                step_type: step.step_type(),
                status: StepStatus::Completed,
                duration,
                warnings,
                usage: usage.take(),
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
        if self.record_content {
            tracing::Span::current().record("planlock.payload", tracing::field::display(json_of(&step.payload)));
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

    /// Applies the verdicts: records warnings, honours the cycle's override once, returns the
    /// first Block that stands.
    fn judge<'v>(
        &self,
        verdicts: impl Iterator<Item = (&'v Registered, Phase, Result<Verdict, String>)>,
        step: &StepDefinition,
        span: &tracing::Span,
        warnings: &mut Vec<Warning>,
        over: &mut Option<Override>,
        report: &mut CycleReport,
    ) -> Result<Option<Block>, ExecError> {
        for (v, phase, verdict) in verdicts {
            let _guard = tracing::info_span!(
                parent: span,
                "apply_guardrail",
                gen_ai.operation.name = "apply_guardrail",
                planlock.validator = %v.id,
                planlock.step_id = %step.id,
            )
            .entered();
            let verdict = verdict.map_err(|message| {
                let err =
                    ExecError::ValidatorPanicked { validator_id: v.id.clone(), step_id: step.id.clone(), message };
                self.fail(err)
            })?;
            match verdict {
                Verdict::Allow => {}
                Verdict::Warn(message) => {
                    tracing::info!(validator = %v.id, %message, "validator warning");
                    warnings.push(Warning { validator_id: v.id.clone(), phase, message });
                }
                Verdict::Block(reason) => {
                    if let Some(o) = over.take_if(|o| o.validator_id == v.id && o.step_id == step.id) {
                        report.overrides.push(OverrideRecord {
                            step_id: step.id.clone(),
                            validator_id: o.validator_id,
                            reason,
                            justification: o.justification,
                        });
                        continue;
                    }
                    tracing::warn!(validator = %v.id, %reason, "validator blocked the step");
                    return Ok(Some(Block { validator_id: v.id.clone(), phase, reason }));
                }
            }
        }
        Ok(None)
    }

    /// Pauses `cycle` at `step`, which `block` stopped; `record` is the step's, from [`blocked`].
    fn pause(
        &self,
        plan: &ValidPlan,
        mut cycle: Cycle,
        step: &StepDefinition,
        block: Block,
        record: StepRecord,
    ) -> CycleOutcome {
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
        // Only a paused cycle needs the digest: the resume compares it with the plan it is given.
        CycleOutcome::InterventionRequired(PausedCycle { cycle, plan_digest: plan_digest(plan.plan()), intervention })
    }
}

fn json_of<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// `PromptAssemble`'s deadline: the plan sets none for a computation, but a template is input
/// from outside (CONTRACT §11), so its render stops here at the latest.
pub const DEFAULT_PROMPT_DEADLINE: Duration = Duration::from_secs(10);

/// The step's deadline and where it comes from: the metadata's by the step's class, else the
/// step type's default; none when neither sets one.
fn deadline(ty: StepType, metadata: &PlanMetadata) -> Option<(Duration, &'static str)> {
    if ty == StepType::PromptAssemble {
        return Some((DEFAULT_PROMPT_DEADLINE, "the default PromptAssemble deadline"));
    }
    let timeouts = metadata.timeouts.as_ref()?;
    let (limit, key) = match ty.class() {
        StepClass::Llm => (timeouts.llm_ms, "metadata.timeouts.llmMs"),
        StepClass::Io => (timeouts.io_ms, "metadata.timeouts.ioMs"),
        StepClass::Compute => return None,
    };
    limit.map(|ms| (Duration::from_millis(ms.get()), key))
}

/// How a guarded handler call ended.
enum Called<T> {
    /// It returned in time (when, if a deadline made the clock be read).
    Done(T, Option<Instant>),
    /// It panicked, saying this.
    Panicked(String),
    /// Its deadline passed first, or its result came after it.
    Late,
}

/// Polls a handler's future to its end, catching a panic and keeping the deadline, which runs
/// from `deadline.0` for `deadline.1` and bounds the call only (not the validators before it). A result that
/// arrives after it is late even when the handler never yielded, so a blocking handler cannot
/// outrun its deadline; one that yields is stopped by a timer on a helper thread (armed only if
/// the first poll is pending), which works under any async runtime and under `block_on`.
async fn guarded_call<F: Future>(fut: F, deadline: Option<(Instant, Duration)>) -> Called<F::Output> {
    let started = deadline;
    let mut fut = pin!(fut);
    let mut timer: Option<futures_timer::Delay> = None;
    poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Err(payload) => return Poll::Ready(Called::Panicked(panic_message(payload.as_ref()))),
            Ok(Poll::Ready(out)) => {
                let Some((at, limit)) = started else { return Poll::Ready(Called::Done(out, None)) };
                let now = Instant::now();
                let late = now.duration_since(at) > limit;
                return Poll::Ready(if late { Called::Late } else { Called::Done(out, Some(now)) });
            }
            Ok(Poll::Pending) => {}
        }
        let Some((at, limit)) = started else { return Poll::Pending };
        let timer = timer.get_or_insert_with(|| futures_timer::Delay::new(limit.saturating_sub(at.elapsed())));
        if Pin::new(timer).poll(cx).is_ready() {
            return Poll::Ready(Called::Late);
        }
        Poll::Pending
    })
    .await
}

/// Runs a validator, catching a panic: `Err` holds what it said.
fn guard(judge: impl FnOnce() -> Verdict) -> Result<Verdict, String> {
    std::panic::catch_unwind(AssertUnwindSafe(judge)).map_err(|payload| panic_message(payload.as_ref()))
}

/// What a panic said, when it said it with a string.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with a non-string payload".to_owned(),
    }
}

/// The record of step `index`, blocked after `started`: its warnings, and the tokens its
/// attempt cost if a post-validator blocked it.
fn blocked(
    index: usize,
    step: &StepDefinition,
    warnings: Vec<Warning>,
    started: Instant,
    usage: Option<TokenUsage>,
) -> StepRecord {
    StepRecord {
        index,
        step_type: step.step_type(),
        status: StepStatus::Blocked,
        duration: started.elapsed(),
        warnings,
        usage,
    }
}

/// The step's span, named after the OpenTelemetry GenAI operation where one fits.
fn step_span(parent: &tracing::Span, step: &StepDefinition) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                parent: parent,
                $name,
                gen_ai.operation.name = $name,
                gen_ai.request.model = tracing::field::Empty,
                gen_ai.response.model = tracing::field::Empty,
                gen_ai.usage.input_tokens = tracing::field::Empty,
                gen_ai.usage.output_tokens = tracing::field::Empty,
                planlock.step_id = %step.id,
                planlock.step_type = step.step_type().wire_name(),
                planlock.outcome = tracing::field::Empty,
                planlock.duration_ms = tracing::field::Empty,
                planlock.payload = tracing::field::Empty,
                planlock.result = tracing::field::Empty,
            )
        };
    }
    let span = match step.step_type() {
        StepType::LLMCall => span!("chat"),
        StepType::RetrieveMemory | StepType::RetrieveDecisionContext => span!("search_memory"),
        StepType::PersistMemory | StepType::PersistDecision | StepType::PersistEvidence => span!("upsert_memory"),
        _ => span!("execute_step"),
    };
    // The model the plan asks for, when it names one (`config.model`).
    if let StepPayload::LLMCall(p) = &step.payload
        && !span.is_disabled()
        && let Some(model) = p.config.get("model").and_then(|m| m.as_str())
    {
        span.record("gen_ai.request.model", model);
    }
    span
}
