//! The runtime lifecycle (PRD-004, D-007): boot computes the plan hash and loads the session —
//! Cold Start, Resume, or FailFast — then cycles run, and the `PersistSession` handler saves the
//! session once at the end of each successful cycle.
//!
//! Layer 6: the runtime owns a session: it imports the executor, the session store, hashing and
//! validation, and nothing imports it but the demo handlers and the binary.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use uuid::Uuid;

use crate::contract::problem::Rejection;
use crate::contract::registry::Failure;
use crate::contract::schema::{PersistSessionPayload, PersistSessionResult};
use crate::contract::steps::{PersistMemory, PersistSession, RepoScan};
use crate::exec::executor::{CycleOutcome, CycleSession, ExecError, Executor};
use crate::exec::handler::{Handler, HandlerError, HandlerSet, StepContext};
use crate::hash::profile::{PolicyProfile, ProfileError};
use crate::hash::{Digest, HashParts, plan_hash};
use crate::session::{SessionError, SessionState, SessionStore, SessionUpdate};
use crate::validate::ValidPlan;

/// How the runtime started.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant, reason = "one per runtime; boxing buys nothing")]
pub enum Boot {
    /// No session file: a new session; nothing is written until the first successful cycle.
    ColdStart,
    /// The session file matches the plan hash: its references are restored.
    Resume(SessionState),
}

/// A boot failure. Every one is FailFast: the runtime must not start.
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
}

impl Failure for BootError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            BootError::Plan(r) => r.problems().first().map_or("plan-rejected", |p| p.code().as_str()),
            BootError::Profile(e) => e.code(),
            BootError::Session(e) => e.code(),
            BootError::HashMismatch { .. } => "plan-hash-mismatch",
        }
    }

    /// The failure class: FailFast, except a plan rejected with class CycleFail.
    fn kind(&self) -> crate::contract::registry::FailureKind {
        match self {
            BootError::Plan(r) => r.class(),
            _ => crate::contract::registry::FailureKind::FailFast,
        }
    }
}

/// Turns the current situation into a plan (D-007 §1). The version gate sits at its entrance:
/// whatever an interpreter produces goes through [`ValidPlan::from_value`], so an unsupported
/// `step_contract_version` or non-empty `extensions` is refused (FailFast) before anything else.
pub trait PolicyInterpreter {
    /// Produces the plan document for `policy_ref` and the situation.
    fn produce(&self, policy_ref: &str, situation: &Value) -> Value;

    /// The validated plan.
    fn interpret(&self, policy_ref: &str, situation: &Value) -> Result<ValidPlan, Rejection> {
        ValidPlan::from_value(&self.produce(policy_ref, situation))
    }
}

/// What the `PersistSession` handler needs of the session between cycles.
#[derive(Debug)]
struct SessionCell {
    previous: Option<SessionState>,
    parts: HashParts,
}

/// The runtime: a booted session, a plan and its hash, and a store.
#[derive(Debug)]
pub struct Runtime<S> {
    store: Arc<S>,
    plan: ValidPlan,
    hash: Digest,
    parts: HashParts,
    boot: Boot,
    session_id: Uuid,
    cell: Arc<Mutex<SessionCell>>,
}

impl<S: SessionStore + 'static> Runtime<S> {
    /// Boots: loads the profile, computes the plan hash, loads the session and compares.
    pub fn boot(policy_root: &Path, plan: ValidPlan, store: Arc<S>) -> Result<Runtime<S>, BootError> {
        let profile = PolicyProfile::load(policy_root, &plan.metadata().policy_profile)?;
        let hash = plan_hash(&profile, &plan);
        let parts = HashParts::of(&profile, &plan);
        let (boot, session_id) = match store.load()? {
            None => (Boot::ColdStart, Uuid::new_v4()),
            Some(state) if state.last_execution_plan_hash == hash => (Boot::Resume(state.clone()), state.session_id),
            Some(state) => {
                let what = match &state.hash_parts {
                    Some(stored) => stored.difference(&parts),
                    None => "the session file keeps no per-part digests".to_owned(),
                };
                return Err(BootError::HashMismatch {
                    session_id: state.session_id,
                    stored: state.last_execution_plan_hash,
                    current: hash,
                    what,
                });
            }
        };
        let previous = match &boot {
            Boot::Resume(state) => Some(state.clone()),
            Boot::ColdStart => None,
        };
        let cell = Arc::new(Mutex::new(SessionCell { previous, parts: parts.clone() }));
        Ok(Runtime { store, plan, hash, parts, boot, session_id, cell })
    }

    /// How the runtime started.
    pub fn boot_kind(&self) -> &Boot {
        &self.boot
    }

    /// The session id: new at Cold Start, restored on Resume.
    pub fn session_id(&self) -> Uuid {
        self.session_id
    }

    /// The plan hash.
    pub fn plan_hash(&self) -> Digest {
        self.hash
    }

    /// The per-part digests of the plan hash.
    pub fn hash_parts(&self) -> &HashParts {
        &self.parts
    }

    /// The plan.
    pub fn plan(&self) -> &ValidPlan {
        &self.plan
    }

    /// The session as last saved or restored.
    pub fn session(&self) -> Option<SessionState> {
        self.cell.lock().ok().and_then(|c| c.previous.clone())
    }

    /// The `PersistSession` handler: saves the session once, at the end of the cycle.
    pub fn session_persister(&self) -> SessionPersister<S> {
        SessionPersister { store: self.store.clone(), cell: self.cell.clone() }
    }

    /// The cycle's session: id and plan hash.
    pub fn cycle_session(&self) -> CycleSession {
        CycleSession { session_id: self.session_id, plan_hash: self.hash }
    }

    /// Runs one cycle of the plan.
    pub async fn run_cycle<L: HandlerSet>(&self, executor: &Executor<L>) -> Result<CycleOutcome, ExecError> {
        executor.run(&self.plan, self.cycle_session()).await
    }

    /// [`run_cycle`](Self::run_cycle) from synchronous code.
    pub fn run_cycle_blocking<L: HandlerSet>(&self, executor: &Executor<L>) -> Result<CycleOutcome, ExecError> {
        pollster::block_on(self.run_cycle(executor))
    }
}

/// The `PersistSession` handler of a [`Runtime`]: takes `memoryRef` from this cycle's
/// `PersistMemory` result and `repoScanVersion` from its `RepoScan` result (keeping the previous
/// values when those steps are not in the plan), and saves through the store. A failed save is
/// a handler failure, so the registry makes it FailFast.
#[derive(Debug)]
pub struct SessionPersister<S> {
    store: Arc<S>,
    cell: Arc<Mutex<SessionCell>>,
}

impl<S: SessionStore + 'static> Handler<PersistSession> for SessionPersister<S> {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        _payload: &PersistSessionPayload,
    ) -> Result<PersistSessionResult, HandlerError> {
        let mut cell = self.cell.lock().map_err(|_| HandlerError::new("the session state lock is poisoned"))?;
        let previous = cell.previous.as_ref();
        let memory_ref = match cx.ledger().get::<PersistMemory>() {
            Some(r) => Some(r.id.clone()),
            None => previous.and_then(|p| p.memory_ref.clone()),
        };
        let repo_scan_version = match cx.ledger().get::<RepoScan>() {
            Some(r) => Some(r.version_id.clone()),
            None => previous.and_then(|p| p.repo_scan_version.clone()),
        };
        let update = SessionUpdate {
            session_id: cx.session_id(),
            memory_ref,
            repo_scan_version,
            last_execution_plan_hash: *cx.plan_hash(),
            hash_parts: Some(cell.parts.clone()),
        };
        let saved = self.store.save(update).map_err(|e| HandlerError::with_source("saving the session failed", e))?;
        cell.previous = Some(saved);
        Ok(PersistSessionResult { status: "saved".into() })
    }
}
