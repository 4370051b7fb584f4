//! The flat executor, the Core Engine of D-007: it runs the steps of a [`ValidPlan`] in order and
//! owns nothing else (CONTRACT §4).
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
use std::pin::{Pin, pin};
use std::sync::OnceLock;
use std::task::Poll;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tracing::Instrument;
use uuid::Uuid;

use crate::contract::plan::{PlanMetadata, StepDefinition, ValidatorSignature};
use crate::contract::registry::{FailureKind, StepClass, StepType};
use crate::contract::steps::StepResult;
use crate::exec::handler::{HandlerError, HandlerSet, Handlers, Nil, StepContext};
use crate::exec::ledger::Ledger;
use crate::hash::{CanonicalError, Digest, plan_digest};
use crate::validate::{ValidPlan, check_result};

use crate::contract::problem::Problem;
use crate::exec::validator::{Override, Registered, StepView, Validator, Verdict};

/// The session a cycle runs in: its id and the plan hash the runtime computed for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleSession {
    /// The session id (a UUID v4 created at cold start).
    pub session_id: Uuid,
    /// The plan hash (CONTRACT §5).
    pub plan_hash: Digest,
}

/// Why a step failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StepFailure {
    /// The handler returned an error.
    #[error("{0}")]
    Handler(#[from] HandlerError),
    /// The step did not finish within its deadline.
    #[error("timed out after {limit_ms} ms (metadata.timeouts.{key})")]
    TimedOut {
        /// The deadline.
        limit_ms: u64,
        /// `llmMs` or `ioMs`.
        key: &'static str,
    },
    /// The handler's result breaks the step's result contract.
    #[error("the result breaks the contract: {}", join(.0))]
    ResultContract(Vec<Problem>),
}

fn join(problems: &[Problem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

/// An execution failure, with its failure class.
#[derive(Debug, Clone, thiserror::Error)]
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
    /// The plan could not be written as canonical JSON to compute its digest.
    #[error("cannot compute the plan digest: {0}")]
    Digest(String),
    /// An earlier FailFast failure halted this executor.
    #[error("the runtime is halted by an earlier FailFast failure: {original}")]
    Halted {
        /// The failure that halted it.
        original: Box<ExecError>,
    },
}

impl ExecError {
    /// The failure class.
    pub fn kind(&self) -> FailureKind {
        match self {
            ExecError::StepFailed { kind, .. } => *kind,
            ExecError::MissingHandler { .. } => FailureKind::CycleFail,
            ExecError::UnknownValidator { .. }
            | ExecError::ValidatorMismatch { .. }
            | ExecError::PlanChanged { .. }
            | ExecError::Digest(_)
            | ExecError::Halted { .. } => FailureKind::FailFast,
        }
    }

    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ExecError::StepFailed { cause: StepFailure::Handler(_), .. } => "step-failed",
            ExecError::StepFailed { cause: StepFailure::TimedOut { .. }, .. } => "step-timed-out",
            ExecError::StepFailed { cause: StepFailure::ResultContract(_), .. } => "result-contract",
            ExecError::MissingHandler { .. } => "missing-handler",
            ExecError::UnknownValidator { .. } => "unknown-validator",
            ExecError::ValidatorMismatch { .. } => "validator-mismatch",
            ExecError::PlanChanged { .. } => "plan-changed",
            ExecError::Digest(_) => "plan-digest",
            ExecError::Halted { .. } => "halted",
        }
    }
}

impl From<CanonicalError> for ExecError {
    fn from(e: CanonicalError) -> Self {
        ExecError::Digest(e.to_string())
    }
}

/// When a validator ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Phase {
    /// Before the step (a pre-validator).
    Before,
    /// After the step, on its result (a post-validator).
    After,
}

/// A validator's Warn, recorded in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The validator.
    pub validator_id: String,
    /// Before or after the step.
    pub phase: Phase,
    /// Its message.
    pub message: String,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StepStatus {
    /// It ran and its result is in the ledger.
    Completed,
    /// A validator blocked it; the cycle is paused.
    Blocked,
}

/// One step of the cycle report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepRecord {
    /// The step's position in the plan.
    pub index: usize,
    /// The step's type.
    pub step_type: StepType,
    /// How it ended.
    pub status: StepStatus,
    /// How long it took, validators included.
    pub duration: Duration,
    /// The validators' warnings.
    pub warnings: Vec<Warning>,
}

/// A validator's Block that paused the cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intervention {
    /// The blocked step's position in the plan.
    pub step_index: usize,
    /// The blocked step's id.
    pub step_id: String,
    /// The blocked step's type.
    pub step_type: StepType,
    /// The validator that blocked it.
    pub validator_id: String,
    /// Before or after the step.
    pub phase: Phase,
    /// The validator's reason.
    pub reason: String,
}

/// An override that let a Block pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverrideRecord {
    /// The step whose Block was overridden.
    pub step_id: String,
    /// The validator.
    pub validator_id: String,
    /// The reason it gave.
    pub reason: String,
    /// The caller's justification.
    pub justification: String,
}

/// What happened in a cycle: every step with its status, duration and warnings, the
/// interventions and the overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CycleReport {
    /// The steps that ran, in order (a resumed step appears once per attempt).
    pub steps: Vec<StepRecord>,
    /// Every Block that paused this cycle.
    pub interventions: Vec<Intervention>,
    /// Every override used.
    pub overrides: Vec<OverrideRecord>,
}

impl CycleReport {
    /// Every warning, with the index of its step.
    pub fn warnings(&self) -> impl Iterator<Item = (usize, &Warning)> {
        self.steps.iter().flat_map(|s| s.warnings.iter().map(move |w| (s.index, w)))
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

/// A cycle paused by a validator's Block (D-021 §3). It can only be resumed
/// ([`Executor::resume`]) or abandoned ([`PausedCycle::abandon`]).
#[derive(Debug)]
#[must_use = "a paused cycle must be resumed or abandoned"]
pub struct PausedCycle {
    session: CycleSession,
    plan_digest: Digest,
    next: usize,
    ledger: Ledger,
    report: CycleReport,
    intervention: Intervention,
}

impl PausedCycle {
    /// The Block that paused the cycle.
    pub fn intervention(&self) -> &Intervention {
        &self.intervention
    }

    /// The results of the steps completed before the blocked one.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Gives up the cycle; returns what happened.
    pub fn abandon(self) -> CycleReport {
        self.report
    }
}

/// The flat executor. Build it with its [`Handlers`], register validators, then run cycles.
///
/// ```
/// use planlock::{Executor, Handlers, CycleSession, Digest, handler_fn, steps::*, schema::*, AnyObject, PlanBuilder};
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
/// let session = CycleSession { session_id: uuid::Uuid::new_v4(), plan_hash: Digest::of(plan.to_json().as_bytes()) };
/// let done = executor.run_blocking(&plan, session)?.completed().unwrap();
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

    /// Registers a validator by id, version and configuration. A plan uses it by naming the
    /// same three facts (see [`Executor::validator_signature`]).
    pub fn with_validator(
        mut self,
        id: impl Into<String>,
        version: impl Into<String>,
        config: &Value,
        validator: impl Validator,
    ) -> Result<Self, CanonicalError> {
        let registered = Registered::new(id, version, config, validator)?;
        self.validators.retain(|v| v.id != registered.id);
        self.validators.push(registered);
        Ok(self)
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

    /// Runs one cycle of `plan`.
    pub async fn run(&self, plan: &ValidPlan, session: CycleSession) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        let resolved = self.preflight(plan)?;
        self.run_steps(plan, &resolved, session, 0, Ledger::default(), CycleReport::default(), None).await
    }

    /// [`run`](Self::run) from synchronous code.
    pub fn run_blocking(&self, plan: &ValidPlan, session: CycleSession) -> Result<CycleOutcome, ExecError> {
        pollster::block_on(self.run(plan, session))
    }

    /// Resumes a paused cycle: the plan and its hash must be the paused cycle's (else FailFast).
    /// The blocked step runs again from its start — pre-validators, handler, post-validators —
    /// with nothing kept of the blocked attempt; the results of earlier steps stay. `over`
    /// lets one validator's Block pass once, and is recorded in the report.
    pub async fn resume(
        &self,
        paused: PausedCycle,
        plan: &ValidPlan,
        plan_hash: Digest,
        over: Option<Override>,
    ) -> Result<CycleOutcome, ExecError> {
        self.refuse_if_halted()?;
        if plan_hash != paused.session.plan_hash {
            return Err(self.fail(ExecError::PlanChanged { what: "the plan hash" }));
        }
        let digest = plan_digest(plan.plan()).map_err(|e| self.fail(e.into()))?;
        if digest != paused.plan_digest {
            return Err(self.fail(ExecError::PlanChanged { what: "the plan" }));
        }
        let resolved = self.preflight(plan)?;
        let PausedCycle { session, next, ledger, report, .. } = paused;
        self.run_steps(plan, &resolved, session, next, ledger, report, over).await
    }

    /// [`resume`](Self::resume) from synchronous code.
    pub fn resume_blocking(
        &self,
        paused: PausedCycle,
        plan: &ValidPlan,
        plan_hash: Digest,
        over: Option<Override>,
    ) -> Result<CycleOutcome, ExecError> {
        pollster::block_on(self.resume(paused, plan, plan_hash, over))
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

    #[allow(clippy::too_many_arguments)]
    async fn run_steps(
        &self,
        plan: &ValidPlan,
        validators: &Resolved<'_>,
        session: CycleSession,
        start: usize,
        mut ledger: Ledger,
        mut report: CycleReport,
        mut over: Option<Override>,
    ) -> Result<CycleOutcome, ExecError> {
        let steps = plan.steps();
        let metadata = plan.metadata();
        let cycle_span = tracing::info_span!(
            "invoke_workflow",
            gen_ai.operation.name = "invoke_workflow",
            planlock.session_id = %session.session_id,
            planlock.plan_hash = %session.plan_hash,
            planlock.steps = steps.len(),
            planlock.resumed_at = start,
        );
        report.steps.reserve(steps.len().saturating_sub(start));
        // One clock read per step: a step ends where the next one starts.
        let mut started = Instant::now();
        for (index, step) in steps.iter().enumerate().skip(start) {
            let span = step_span(&cycle_span, step);
            let mut warnings = Vec::new();
            let view = StepView {
                id: &step.id,
                step_type: step.step_type(),
                payload: &step.payload,
                metadata,
                ledger: &ledger,
            };
            let verdicts = validators.pre.iter().map(|v| (*v, Phase::Before, v.validator.before(&view)));
            if !validators.pre.is_empty()
                && let Some(block) = self.judge(verdicts, (step, &span), &mut warnings, &mut over, &mut report)
            {
                return self.pause(plan, session, (index, step), ledger, report, block, warnings, started);
            }
            let cx = StepContext {
                step,
                steps,
                metadata,
                ledger: &ledger,
                session_id: session.session_id,
                plan_hash: &session.plan_hash,
            };
            // With no subscriber listening, entering and leaving the span on every poll is pure cost.
            let outcome = if span.is_disabled() {
                self.call(&cx, metadata, started).await
            } else {
                self.call(&cx, metadata, started).instrument(span.clone()).await
            };
            let result = match outcome {
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
            let view = StepView { ledger: &ledger, ..view };
            let verdicts = validators.post.iter().map(|v| (*v, Phase::After, v.validator.after(&view, &result)));
            if !validators.post.is_empty()
                && let Some(block) = self.judge(verdicts, (step, &span), &mut warnings, &mut over, &mut report)
            {
                // Nothing of the blocked attempt is kept: its result is dropped here.
                return self.pause(plan, session, (index, step), ledger, report, block, warnings, started);
            }
            ledger.record(result);
            let finished = Instant::now();
            let duration = finished.duration_since(started);
            started = finished;
            span.record("planlock.outcome", "completed");
            span.record("planlock.duration_ms", duration.as_secs_f64() * 1e3);
            report.steps.push(StepRecord {
                index,
                step_type: step.step_type(),
                status: StepStatus::Completed,
                duration,
                warnings,
            });
        }
        Ok(CycleOutcome::Completed(Completed { report, ledger }))
    }

    /// Runs the handler within the step's deadline and checks its result.
    async fn call(
        &self,
        cx: &StepContext<'_>,
        metadata: &PlanMetadata,
        started: Instant,
    ) -> Result<StepResult, StepFailure> {
        let step = cx.step;
        if self.record_content {
            tracing::Span::current().record("planlock.payload", tracing::field::display(json_of(&step.payload)));
        }
        let result = match deadline(step.step_type(), metadata) {
            None => self.handlers.set().dispatch(cx, &step.payload).await?,
            Some((limit, key)) => {
                match with_deadline(self.handlers.set().dispatch(cx, &step.payload), limit, started).await {
                    Some(r) => r?,
                    None => return Err(StepFailure::TimedOut { limit_ms: limit.as_millis() as u64, key }),
                }
            }
        };
        let problems = check_result(&step.payload, &result, metadata);
        if problems.is_empty() { Ok(result) } else { Err(StepFailure::ResultContract(problems)) }
    }

    /// Applies the verdicts: records warnings, honours an override once, returns the first
    /// Block that stands.
    fn judge<'v>(
        &self,
        verdicts: impl Iterator<Item = (&'v Registered, Phase, Verdict)>,
        (step, span): (&StepDefinition, &tracing::Span),
        warnings: &mut Vec<Warning>,
        over: &mut Option<Override>,
        report: &mut CycleReport,
    ) -> Option<(String, Phase, String)> {
        for (v, phase, verdict) in verdicts {
            let _guard = tracing::info_span!(
                parent: span,
                "apply_guardrail",
                gen_ai.operation.name = "apply_guardrail",
                planlock.validator = %v.id,
                planlock.step_id = %step.id,
            )
            .entered();
            match verdict {
                Verdict::Allow => {}
                Verdict::Warn(message) => {
                    tracing::info!(validator = %v.id, %message, "validator warning");
                    warnings.push(Warning { validator_id: v.id.clone(), phase, message });
                }
                Verdict::Block(reason) => {
                    if over.as_ref().is_some_and(|o| o.validator_id == v.id) {
                        if let Some(o) = over.take() {
                            report.overrides.push(OverrideRecord {
                                step_id: step.id.clone(),
                                validator_id: o.validator_id,
                                reason,
                                justification: o.justification,
                            });
                        }
                        continue;
                    }
                    tracing::warn!(validator = %v.id, %reason, "validator blocked the step");
                    return Some((v.id.clone(), phase, reason));
                }
            }
        }
        None
    }

    #[allow(clippy::too_many_arguments)]
    fn pause(
        &self,
        plan: &ValidPlan,
        session: CycleSession,
        (index, step): (usize, &StepDefinition),
        ledger: Ledger,
        mut report: CycleReport,
        (validator_id, phase, reason): (String, Phase, String),
        warnings: Vec<Warning>,
        started: Instant,
    ) -> Result<CycleOutcome, ExecError> {
        // Only a paused cycle needs the digest: the resume compares it with the plan it is given.
        let plan_digest = plan_digest(plan.plan()).map_err(|e| self.fail(e.into()))?;
        report.steps.push(StepRecord {
            index,
            step_type: step.step_type(),
            status: StepStatus::Blocked,
            duration: started.elapsed(),
            warnings,
        });
        let intervention = Intervention {
            step_index: index,
            step_id: step.id.clone(),
            step_type: step.step_type(),
            validator_id,
            phase,
            reason,
        };
        report.interventions.push(intervention.clone());
        Ok(CycleOutcome::InterventionRequired(PausedCycle {
            session,
            plan_digest,
            next: index,
            ledger,
            report,
            intervention,
        }))
    }
}

fn json_of<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The step's deadline from the metadata, by its class; none when the metadata sets none.
fn deadline(ty: StepType, metadata: &PlanMetadata) -> Option<(Duration, &'static str)> {
    let timeouts = metadata.timeouts.as_ref()?;
    let (limit, key) = match ty.class() {
        StepClass::Llm => (timeouts.llm_ms, "llmMs"),
        StepClass::Io => (timeouts.io_ms, "ioMs"),
        StepClass::Compute => return None,
    };
    limit.map(|ms| (Duration::from_millis(ms.get()), key))
}

/// Polls `fut` until it finishes or `limit` after `started` passes (`None`). The timer runs on a helper thread,
/// so this works under any async runtime and under `block_on`; it is armed only when the step
/// does not finish on its first poll, so a ready handler never touches it.
async fn with_deadline<F: Future>(fut: F, limit: Duration, started: Instant) -> Option<F::Output> {
    let mut fut = pin!(fut);
    let mut timer: Option<futures_timer::Delay> = None;
    poll_fn(|cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        let timer = timer.get_or_insert_with(|| futures_timer::Delay::new(limit.saturating_sub(started.elapsed())));
        if Pin::new(timer).poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}

/// The step's span, named after the OpenTelemetry GenAI operation where one fits.
fn step_span(parent: &tracing::Span, step: &StepDefinition) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(
                parent: parent,
                $name,
                gen_ai.operation.name = $name,
                planlock.step_id = %step.id,
                planlock.step_type = step.step_type().wire_name(),
                planlock.outcome = tracing::field::Empty,
                planlock.duration_ms = tracing::field::Empty,
                planlock.payload = tracing::field::Empty,
                planlock.result = tracing::field::Empty,
            )
        };
    }
    match step.step_type() {
        StepType::LLMCall => span!("chat"),
        StepType::RetrieveMemory | StepType::RetrieveDecisionContext => span!("search_memory"),
        StepType::PersistMemory | StepType::PersistDecision | StepType::PersistEvidence => span!("upsert_memory"),
        _ => span!("execute_step"),
    }
}
