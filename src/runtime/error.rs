//! What stops a runtime: a boot failure ([`BootError`]) and a cycle's ([`RuntimeError`]), each
//! with its stable code and class. A fact both can meet — a changed plan hash, a paused cycle's
//! record that does not fit — is one struct ([`HashMismatch`], [`RecordMismatch`]) both nest.

use std::fmt;

use std::sync::Arc;

use uuid::Uuid;

use crate::contract::problem::Rejection;
use crate::contract::registry::{Failure, FailureKind, StepType};
use crate::exec::executor::{CycleReport, ExecError, StepFailure, StepStatus};
use crate::exec::handler::HandlerError;
use crate::hash::Digest;
use crate::hash::profile::ProfileError;
use crate::review::DecideError;
use crate::session::{INTERVENTION_FILE, SessionError, WriteFailure};
use crate::store::StoreError;
use crate::store::bundle::BundleError;
use crate::text::printable;
use crate::validate::ValidPlan;

/// What was saved under a plan hash that no longer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Saved {
    /// The session's state (its file or row), found at boot.
    Session,
    /// The record of a paused cycle, found when it was to be resumed.
    PausedCycle {
        /// The paused cycle's number.
        cycle: u64,
    },
}

/// The plan and policy no longer hash to what a session or its paused cycle was saved under
/// (`plan-hash-mismatch`, FailFast): resuming would mix two policies in one session.
///
/// ```
/// # use planlock::runtime::{HashMismatch, Saved};
/// # use planlock::{Digest, Failure};
/// let e = HashMismatch {
///     saved: Saved::Session,
///     session_id: uuid::Uuid::nil(),
///     stored: Digest::of(b"old"),
///     current: Digest::of(b"new"),
///     what: "the policy file `rules.yaml` changed".into(),
/// };
/// assert_eq!(e.code(), "plan-hash-mismatch");
/// assert!(e.to_string().contains("remove the session file to start over"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
pub struct HashMismatch {
    /// What was saved under the old hash.
    pub saved: Saved,
    /// The session's id.
    pub session_id: Uuid,
    /// The hash it was saved under.
    pub stored: Digest,
    /// The hash of the plan and policy now.
    pub current: Digest,
    /// What changed, as far as the stored per-part digests tell.
    pub what: String,
}

impl fmt::Display for HashMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let HashMismatch { session_id, stored, current, what, .. } = self;
        match self.saved {
            Saved::Session => write!(
                f,
                "session {session_id} was saved under plan hash {stored}, but the plan and policy now hash to {current} ({what}); refusing to resume a contaminated session (no automatic re-initialisation: remove the session file to start over)"
            ),
            Saved::PausedCycle { cycle } => write!(
                f,
                "resume refused: cycle {cycle} of session {session_id} paused under plan hash {stored}, but the plan and policy now hash to {current} ({what}); restore the plan and policy it paused under, or abandon the cycle"
            ),
        }
    }
}

impl Failure for HashMismatch {
    fn code(&self) -> &'static str {
        "plan-hash-mismatch"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The record of a paused cycle does not fit the session, plan or cycle it would resume
/// (`intervention-mismatch`, FailFast). The record is left as it was.
///
/// ```
/// # use planlock::runtime::RecordMismatch;
/// # use planlock::Failure;
/// let e = RecordMismatch { what: "the plan has no step `remember`".into() };
/// assert_eq!(e.code(), "intervention-mismatch");
/// assert!(e.to_string().starts_with("the paused cycle's record (ops/runtime/intervention.json) does not fit"));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the paused cycle's record ({INTERVENTION_FILE}) does not fit: {what}; it was not changed: abandon the cycle, or restore the plan and policy it paused under"
)]
pub struct RecordMismatch {
    /// What does not fit, printable (the record is input, CONTRACT §11).
    pub what: String,
}

impl RecordMismatch {
    /// The mismatch `what`, with control characters escaped.
    pub(super) fn new(what: &str) -> Self {
        RecordMismatch { what: printable(what).into_owned() }
    }
}

impl Failure for RecordMismatch {
    fn code(&self) -> &'static str {
        "intervention-mismatch"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// A boot failure: the runtime does not start. Its class is [`Failure::kind`]: FailFast, except
/// a plan rejected as CycleFail and a step with no handler (`missing-handler`), which endanger no
/// data (another plan may run).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BootError {
    /// The plan was rejected (the version gate is part of it).
    #[error(transparent)]
    Plan(#[from] Rejection),
    /// The policy profile cannot be loaded.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The session store failed or holds a bad file.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session cannot be claimed for this runtime: another runtime claimed its store.
    #[error(transparent)]
    Open(#[from] crate::session::OpenError),
    /// The saved session belongs to another plan or policy.
    #[error(transparent)]
    HashMismatch(Box<HashMismatch>),
    /// A paused cycle's record does not belong to this session, plan or cycle.
    #[error(transparent)]
    InterventionMismatch(RecordMismatch),
    /// The caller registered a `PersistSession` handler: the runtime saves the session itself.
    #[error(
        "a `PersistSession` handler was registered, but the runtime saves the session itself at the end of each cycle; remove it from the handlers"
    )]
    PersistSessionHandler,
    /// The bundle cannot be used: its manifest, or a provider id without an implementation.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The session is pinned to other providers than the bundle names now.
    #[error(
        "the session is pinned to strategy `{pinned_strategy}` and memory provider `{pinned_memory}`, but bundle `{bundle}` now names `{strategy}` and `{memory}`; refusing to switch providers under an existing session"
    )]
    PinMismatch {
        /// The bundle's id.
        bundle: String,
        /// The pinned strategy.
        pinned_strategy: String,
        /// The pinned memory provider.
        pinned_memory: String,
        /// The manifest's strategy.
        strategy: String,
        /// The manifest's memory provider.
        memory: String,
    },
    /// The session's vectors were made by another embedder than the one given now.
    #[error(
        "the session is pinned to the embedder {pinned}, but it is given {current}; its stored vectors would mean something else: use the pinned model, or start a new session"
    )]
    EmbedderMismatch {
        /// The pinned model and dimension.
        pinned: String,
        /// The given model and dimension.
        current: String,
    },
    /// The embedder's vectors have no dimension or more than [`MAX_DIMENSION`](crate::embed::MAX_DIMENSION):
    /// a session is not pinned to them.
    #[error(
        "the embedder `{model}` makes vectors of {dimension} dimensions; a session is pinned only to an embedder of 1 to {max} dimensions (embed::MAX_DIMENSION)"
    )]
    EmbedderDimension {
        /// The embedder's model.
        model: String,
        /// Its dimension.
        dimension: usize,
        /// The largest accepted.
        max: usize,
    },
    /// The handlers or validators cannot run this plan (a step without a handler, a validator
    /// the plan names that was not registered, or another version or configuration of it).
    #[error(transparent)]
    Exec(#[from] ExecError),
}

impl Failure for BootError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            BootError::Plan(r) => r.problems().first().map_or("plan-rejected", |p| p.code().as_str()),
            BootError::Profile(e) => e.code(),
            BootError::Session(e) => e.code(),
            BootError::Open(e) => e.code(),
            BootError::HashMismatch(e) => e.code(),
            BootError::InterventionMismatch(e) => e.code(),
            BootError::PersistSessionHandler => "persist-session-handler",
            BootError::Bundle(e) => e.code(),
            BootError::PinMismatch { .. } => "pin-mismatch",
            BootError::EmbedderMismatch { .. } => "embedder-mismatch",
            BootError::EmbedderDimension { .. } => "embedder-dimension",
            BootError::Exec(e) => e.code(),
        }
    }

    /// The failure class: FailFast, except a plan rejected with class CycleFail and a missing
    /// handler (the executor's `missing-handler`, CycleFail).
    fn kind(&self) -> crate::contract::registry::FailureKind {
        match self {
            BootError::Plan(r) => r.class(),
            BootError::Exec(e) => e.kind(),
            _ => crate::contract::registry::FailureKind::FailFast,
        }
    }
}

/// A runtime failure. A FailFast one halts the runtime: every later call is refused with
/// [`RuntimeError::Halted`], which names it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The cycle failed.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The session store failed (saving the session or the intervention record).
    #[error(transparent)]
    Session(Arc<SessionError>),
    /// A policy file could not be read again to recompute the plan hash for a resume.
    #[error(transparent)]
    Profile(Arc<ProfileError>),
    /// The plan hash is no longer the one the cycle paused under.
    #[error(transparent)]
    HashMismatch(Box<HashMismatch>),
    /// A cycle is paused and no decision on it is recorded: only a decision (resume) or an
    /// abandon may follow; an expired one can only be abandoned.
    #[error(
        "cycle {cycle} is paused at step `{step_id}` by validator `{validator_id}`: {}",
        if *expired { "the pause expired: abandon it" } else { "resume or abandon it first" }
    )]
    Paused {
        /// The paused cycle's number.
        cycle: u64,
        /// The blocked step.
        step_id: String,
        /// The validator that blocked it.
        validator_id: String,
        /// Whether the pause has expired.
        expired: bool,
    },
    /// A decision on the paused cycle could not be recorded (`already-decided`,
    /// `approval-expired`, …); nothing ran.
    #[error(transparent)]
    Decision(Arc<DecideError>),
    /// There is no paused cycle to resume or abandon.
    #[error("no cycle is paused; there is nothing to resume or abandon")]
    NotPaused,
    /// The override's justification is blank, too long or has control characters; nothing ran.
    #[error("the override cannot be used: {0}; nothing ran")]
    Justification(String),
    /// The record of the paused cycle does not fit the plan (a step or result it names).
    #[error(transparent)]
    InterventionMismatch(RecordMismatch),
    /// An earlier FailFast failure halted this runtime.
    #[error("the runtime is halted by an earlier FailFast failure: {original}")]
    Halted {
        /// The failure that halted it.
        original: Box<RuntimeError>,
    },
}

impl From<SessionError> for RuntimeError {
    fn from(e: SessionError) -> Self {
        RuntimeError::Session(Arc::new(e))
    }
}

impl From<ProfileError> for RuntimeError {
    fn from(e: ProfileError) -> Self {
        RuntimeError::Profile(Arc::new(e))
    }
}

impl RuntimeError {
    /// What the failed cycle did before it stopped, when it stopped at a step
    /// ([`ExecError::report`]): the steps that completed and the failed one.
    pub fn report(&self) -> Option<&crate::exec::executor::CycleReport> {
        match self {
            RuntimeError::Exec(e) => e.report(),
            _ => None,
        }
    }
}

impl Failure for RuntimeError {
    fn code(&self) -> &'static str {
        match self {
            RuntimeError::Exec(e) => e.code(),
            RuntimeError::Session(e) => e.code(),
            RuntimeError::Profile(e) => e.code(),
            RuntimeError::HashMismatch(e) => e.code(),
            RuntimeError::Paused { .. } => "cycle-paused",
            RuntimeError::Decision(e) => e.code(),
            RuntimeError::NotPaused => "not-paused",
            RuntimeError::Justification(_) => "override-justification",
            RuntimeError::InterventionMismatch(e) => e.code(),
            RuntimeError::Halted { .. } => "halted",
        }
    }

    fn kind(&self) -> FailureKind {
        match self {
            RuntimeError::Exec(e) => e.kind(),
            RuntimeError::Paused { .. } | RuntimeError::NotPaused | RuntimeError::Justification(_) => {
                FailureKind::CycleFail
            }
            RuntimeError::Decision(e) => e.kind(),
            RuntimeError::Session(_)
            | RuntimeError::Profile(_)
            | RuntimeError::HashMismatch(_)
            | RuntimeError::InterventionMismatch(_)
            | RuntimeError::Halted { .. } => FailureKind::FailFast,
        }
    }
}

/// A `PersistSession` failure of `plan`: FailFast, as the registry says of every storage write.
/// The cycle's `report` goes with it, its `PersistSession` step (which only staged the update)
/// marked failed.
pub(super) fn persist_failure(plan: &ValidPlan, cause: HandlerError, mut report: CycleReport) -> ExecError {
    let step = plan.steps().iter().find(|s| s.step_type() == StepType::PersistSession);
    if let Some(record) = report.steps.iter_mut().rev().find(|s| s.step_type == StepType::PersistSession) {
        record.status = StepStatus::Failed;
    }
    ExecError::StepFailed {
        step_id: step.map(|s| s.id.clone()).unwrap_or_default(),
        step_type: StepType::PersistSession,
        kind: StepType::PersistSession.failure_kind(),
        cause: StepFailure::Handler(cause),
        report: Box::new(report),
    }
}

/// The failure of a completed cycle's session save, its `report` given: a store write sent with
/// the save that failed is its step's ([`write_failure`]); anything else is `PersistSession`'s.
pub(super) fn save_failure(plan: &ValidPlan, e: SessionError, report: CycleReport) -> ExecError {
    write_failure(plan, e, report).unwrap_or_else(|other| {
        let (e, report) = *other;
        persist_failure(plan, HandlerError::with_source("saving the session failed", e), report)
    })
}

/// A store write of the cycle that failed when its session store sent it with the save
/// (CONTRACT §13: "each write's failure still reported as its step's"): the failure its step's
/// handler would have returned, with its step's class, and the cycle's `report` cut after that
/// step, marked failed (the steps after it ran, but nothing of the cycle was written). Any
/// other failure comes back as it was, with the report.
pub(super) fn write_failure(
    plan: &ValidPlan,
    e: SessionError,
    report: CycleReport,
) -> Result<ExecError, Box<(SessionError, CycleReport)>> {
    if let SessionError::StepWrite { step_id: Some(id), source, .. } = &e
        && let Some((index, step)) = plan.steps().iter().enumerate().find(|(_, s)| &s.id == id)
    {
        let (step_type, mut report) = (step.step_type(), report);
        if let Some(at) = report.steps.iter().position(|r| r.index == index) {
            report.steps.truncate(at + 1);
            report.steps[at].status = StepStatus::Failed;
        }
        // What the step's store would have said at the step.
        let said = match source.clone() {
            WriteFailure::Conflict(m) => StoreError::Conflict(m),
            WriteFailure::NotFound(m) => StoreError::NotFound(m),
            WriteFailure::Backend(m) => StoreError::Backend(m),
        };
        let cause = crate::store::step_failure(step_type, said);
        return Ok(ExecError::StepFailed {
            step_id: id.clone(),
            step_type,
            kind: step_type.failure_kind(),
            cause: StepFailure::Handler(cause),
            report: Box::new(report),
        });
    }
    Err(Box::new((e, report)))
}
