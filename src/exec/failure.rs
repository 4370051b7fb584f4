//! Why a step or a cycle failed ([`StepFailure`], [`ExecError`]), each with its stable code and
//! the class the registry gives it.
//!
//! Layer 4, with the executor.

use crate::contract::problem::Problem;
use crate::contract::registry::{Failure, FailureKind, StepType};
use crate::exec::budget::BudgetError;
use crate::exec::handler::HandlerError;
use crate::exec::report::CycleReport;
#[cfg(doc)]
use crate::exec::report::StepStatus;

/// Why a step failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StepFailure {
    /// The handler returned an error.
    #[error("{0}")]
    Handler(HandlerError),
    /// The session's token budget refused the step's model call, which was not sent (CONTRACT
    /// §20): CycleFail whatever the step type's class, with the budget's code.
    #[error("{0}")]
    Budget(BudgetError),
    /// The step did not finish within its deadline.
    #[error("timed out after {limit_ms} ms ({key})")]
    TimedOut {
        /// The deadline.
        limit_ms: u64,
        /// Where the deadline comes from: `metadata.timeouts.llmMs`, `metadata.timeouts.ioMs`,
        /// or the step type's default ([`DEFAULT_PROMPT_DEADLINE`](crate::exec::executor::DEFAULT_PROMPT_DEADLINE)).
        key: &'static str,
    },
    /// The handler panicked; the message is what the panic said.
    #[error("the handler panicked: {0}")]
    Panicked(String),
    /// The handler's result breaks the step's result contract.
    #[error("the result breaks the contract: {}", join(.0))]
    ResultContract(Vec<Problem>),
}

impl From<HandlerError> for StepFailure {
    /// The handler's failure; a budget's refusal it passed on is the step's budget failure.
    fn from(e: HandlerError) -> StepFailure {
        let refusal = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<BudgetError>());
        match refusal {
            Some(refusal) => StepFailure::Budget(refusal.clone()),
            None => StepFailure::Handler(e),
        }
    }
}

impl StepFailure {
    /// How the failure of a step of type `step_type` propagates: the registry's class, but a
    /// budget's refusal is its own (CycleFail: the next cycle may find the budget reset).
    pub fn kind_for(&self, step_type: StepType) -> FailureKind {
        match self {
            StepFailure::Budget(e) => e.kind(),
            _ => step_type.failure_kind(),
        }
    }
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
        /// What the cycle did up to here: its completed steps, then this one
        /// ([`StepStatus::Failed`]).
        report: Box<CycleReport>,
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
    /// A validator panicked: a gate that cannot decide is never passed.
    #[error("validator `{validator_id}` panicked at step `{step_id}`: {message}; the cycle stops (FailFast)")]
    ValidatorPanicked {
        /// The validator.
        validator_id: String,
        /// The step it was judging.
        step_id: String,
        /// What the panic said.
        message: String,
        /// What the cycle did up to here: its completed steps, then the judged one
        /// ([`StepStatus::Failed`]).
        report: Box<CycleReport>,
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

impl ExecError {
    /// What the failed cycle did before it stopped, when it stopped at a step: every step that
    /// completed and the failed one, with their durations, warnings and tokens. `None` when no
    /// step ran in this call (refused before the first step, or halted).
    pub fn report(&self) -> Option<&CycleReport> {
        match self {
            ExecError::StepFailed { report, .. } | ExecError::ValidatorPanicked { report, .. } => Some(report),
            _ => None,
        }
    }
}

impl Failure for ExecError {
    /// The failure class.
    fn kind(&self) -> FailureKind {
        match self {
            ExecError::StepFailed { kind, .. } => *kind,
            ExecError::MissingHandler { .. } | ExecError::OverrideRefused { .. } => FailureKind::CycleFail,
            ExecError::UnknownValidator { .. }
            | ExecError::ValidatorMismatch { .. }
            | ExecError::ValidatorPanicked { .. }
            | ExecError::Halted { .. } => FailureKind::FailFast,
        }
    }

    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            ExecError::StepFailed { cause: StepFailure::Handler(_), .. } => "step-failed",
            ExecError::StepFailed { cause: StepFailure::Budget(e), .. } => e.code(),
            ExecError::StepFailed { cause: StepFailure::TimedOut { .. }, .. } => "step-timed-out",
            ExecError::StepFailed { cause: StepFailure::ResultContract(_), .. } => "result-contract",
            ExecError::StepFailed { cause: StepFailure::Panicked(_), .. } => "step-panicked",
            ExecError::ValidatorPanicked { .. } => "validator-panicked",
            ExecError::OverrideRefused { .. } => "override-refused",
            ExecError::MissingHandler { .. } => "missing-handler",
            ExecError::UnknownValidator { .. } => "unknown-validator",
            ExecError::ValidatorMismatch { .. } => "validator-mismatch",
            ExecError::Halted { .. } => "halted",
        }
    }
}

/// A validator that panicked judging a step (a gate that cannot decide is never passed): what
/// the executor's judging returns, made the cycle's error with its report.
pub(crate) struct ValidatorPanic {
    pub(crate) validator_id: String,
    pub(crate) message: String,
}

impl ValidatorPanic {
    pub(crate) fn into_error(
        self,
        step: &crate::contract::plan::StepDefinition,
        report: Box<CycleReport>,
    ) -> ExecError {
        let ValidatorPanic { validator_id, message } = self;
        ExecError::ValidatorPanicked { validator_id, step_id: step.id.clone(), message, report }
    }
}
