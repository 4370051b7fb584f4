//! What stops a runtime: a boot failure ([`BootError`]) and a cycle's ([`RuntimeError`]), each
//! with its stable code and class.

use super::*;

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
    /// The saved session belongs to another plan or policy.
    #[error(
        "session {session_id} was saved under plan hash {stored}, but the plan and policy now hash to {current} ({what}); refusing to resume a contaminated session (no automatic re-initialisation: remove the session file to start over)"
    )]
    HashMismatch {
        /// The saved session's id.
        session_id: Uuid,
        /// The stored hash.
        stored: Digest,
        /// The current hash.
        current: Digest,
        /// What changed, as far as the stored per-part digests tell.
        what: String,
    },
    /// A paused cycle's record does not belong to this session, plan or cycle.
    #[error(
        "the paused cycle recorded in {file} {what}; refusing to resume it (abandon it, or restore the plan and policy it paused under)"
    )]
    InterventionMismatch {
        /// The record's file.
        file: &'static str,
        /// What does not match.
        what: String,
    },
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
            BootError::HashMismatch { .. } => "plan-hash-mismatch",
            BootError::InterventionMismatch { .. } => "intervention-mismatch",
            BootError::PersistSessionHandler => "persist-session-handler",
            BootError::Bundle(e) => e.code(),
            BootError::PinMismatch { .. } => "pin-mismatch",
            BootError::EmbedderMismatch { .. } => "embedder-mismatch",
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
    #[error("resume refused: the plan and policy hash to {current}, not {paused} as when the cycle paused ({what})")]
    PolicyChanged {
        /// The hash the cycle paused under.
        paused: Digest,
        /// The hash now.
        current: Digest,
        /// What changed.
        what: String,
    },
    /// A cycle is paused: only resume or abandon may follow.
    #[error("cycle {cycle} is paused at step `{step_id}` by validator `{validator_id}`: resume or abandon it first")]
    Paused {
        /// The paused cycle's number.
        cycle: u64,
        /// The blocked step.
        step_id: String,
        /// The validator that blocked it.
        validator_id: String,
    },
    /// There is no paused cycle to resume or abandon.
    #[error("no cycle is paused; there is nothing to resume or abandon")]
    NotPaused,
    /// The override's justification is blank, too long or has control characters; nothing ran.
    #[error("the override cannot be used: {0}; nothing ran")]
    Justification(String),
    /// The record of the paused cycle does not fit the plan (a step or result it names).
    #[error("the paused cycle's record ({INTERVENTION_FILE}) cannot be restored: {0}; it was not changed")]
    CorruptRecord(String),
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
            RuntimeError::PolicyChanged { .. } => "plan-hash-mismatch",
            RuntimeError::Paused { .. } => "cycle-paused",
            RuntimeError::NotPaused => "not-paused",
            RuntimeError::Justification(_) => "override-justification",
            RuntimeError::CorruptRecord(_) => "intervention-corrupt",
            RuntimeError::Halted { .. } => "halted",
        }
    }

    fn kind(&self) -> FailureKind {
        match self {
            RuntimeError::Exec(e) => e.kind(),
            RuntimeError::Paused { .. } | RuntimeError::NotPaused | RuntimeError::Justification(_) => {
                FailureKind::CycleFail
            }
            RuntimeError::Session(_)
            | RuntimeError::Profile(_)
            | RuntimeError::PolicyChanged { .. }
            | RuntimeError::CorruptRecord(_)
            | RuntimeError::Halted { .. } => FailureKind::FailFast,
        }
    }
}
