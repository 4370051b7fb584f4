//! The runtime lifecycle (PRD-004, D-007): boot computes the plan hash and loads the session —
//! Cold Start, Resume, or FailFast — then cycles run, and the `PersistSession` handler saves the
//! session once at the end of each successful cycle.
//!
//! Layer 6: the runtime owns a session: it imports the executor, the session store, hashing and
//! validation, and nothing imports it but the demo handlers and the binary.

pub mod place;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use uuid::Uuid;

use crate::contract::problem::Rejection;
use crate::contract::registry::{Failure, FailureKind, StepType};
use crate::contract::schema::{PersistSessionPayload, PersistSessionResult};
use crate::contract::steps::{PersistMemory, PersistSession, RepoScan, StepResult};
use crate::exec::executor::{
    Completed, CycleOutcome, CycleSession, ExecError, Executor, Intervention, PausedCycle, Phase, RestoredCycle,
    StepFailure,
};
use crate::exec::handler::{Entry, Handler, HandlerError, HandlerSet, Handlers, Nil, StepContext};
use crate::exec::ledger::Ledger;
use crate::exec::validator::{Override, Registered, Validator};
use crate::hash::profile::{PolicyProfile, ProfileError};
use crate::hash::{Digest, HashParts, plan_hash};
use crate::json::printable;
use crate::session::{
    BlockPhase, BundlePinV1, CompletedStep, INTERVENTION_FILE, InterventionRecord, PIN_FILE, PinVersion,
    ReservedSession, SessionError, SessionState, SessionStore, SessionUpdate, Timestamp,
};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::validate::{ValidPlan, check_result};

/// How the runtime started.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant, reason = "one per runtime; boxing buys nothing")]
pub enum Boot {
    /// No session file: a new session; nothing is written until the first successful cycle.
    ColdStart,
    /// The session file matches the plan hash: its references are restored.
    Resume(SessionState),
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

/// How a cycle (or a resumed one) ended, when it did not fail.
#[derive(Debug)]
#[allow(clippy::large_enum_variant, reason = "one per cycle; boxing buys nothing")]
pub enum RunOutcome {
    /// Every step ran and the session is saved.
    Completed(Completed),
    /// A validator blocked a step. The record is saved: resume or abandon, in this process or
    /// after a restart.
    Paused(InterventionRecord),
}

/// Where the runtime stands between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Ready to run the next cycle.
    Ready,
    /// A cycle is paused for a person: only [`Runtime::resume`] or [`Runtime::abandon`].
    Paused,
    /// A FailFast failure halted it; every call is refused.
    Halted,
}

/// What the session's `PersistSession` handler and the runtime share: the session as last saved,
/// and the update this cycle's `PersistSession` step staged.
#[derive(Debug)]
struct Staging {
    previous: Option<SessionState>,
    parts: HashParts,
    staged: Option<SessionUpdate>,
}

/// The runtime's own `PersistSession` handler: it stages the session update (`memoryRef` from this
/// cycle's `PersistMemory` result, `repoScanVersion` from its `RepoScan` result, the previous values
/// when those steps are not in the plan). The runtime saves it once the cycle has completed, so a
/// cycle that pauses, fails or is abandoned leaves the session file as it was.
#[derive(Debug)]
pub struct SessionStager {
    cell: Arc<Mutex<Staging>>,
}

impl Handler<PersistSession> for SessionStager {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        _: &PersistSessionPayload,
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
            cycle: cx.cycle(),
        };
        cell.staged = Some(update);
        Ok(PersistSessionResult { status: "staged".into() })
    }
}

/// The handler list a runtime runs: the caller's, with the session's own `PersistSession` first.
type WithStager<L> = Entry<PersistSession, SessionStager, L>;

/// Collects what a [`Runtime`] is booted with; see [`Runtime::builder`].
#[must_use = "a runtime builder does nothing until `.boot()`"]
pub struct RuntimeBuilder<S, L = Nil> {
    policy_root: PathBuf,
    plan: ValidPlan,
    store: S,
    handlers: Handlers<L>,
    validators: Vec<Registered>,
    record_content: bool,
    bundle: Option<BundleManifest>,
    resolver: Option<StrategyResolver>,
}

impl<S: SessionStore, L: HandlerSet> RuntimeBuilder<S, L> {
    /// The step handlers, every step type of the plan but `PersistSession` (the runtime's own).
    pub fn handlers<L2: HandlerSet>(self, handlers: Handlers<L2>) -> RuntimeBuilder<S, L2> {
        let RuntimeBuilder { policy_root, plan, store, validators, record_content, bundle, resolver, .. } = self;
        RuntimeBuilder { policy_root, plan, store, handlers, validators, record_content, bundle, resolver }
    }

    /// Registers a validator by id, version and configuration (see
    /// [`Executor::with_validator`]).
    pub fn validator(
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

    /// The bundle whose providers the storage handlers were resolved from: boot checks its ids
    /// against the session's pin (a difference is FailFast, naming both), and the first completed
    /// cycle pins them (an older pin without ids is upgraded then).
    pub fn bundle(mut self, manifest: BundleManifest) -> Self {
        self.bundle = Some(manifest);
        self
    }

    /// The resolver whose registered ids the bundle's are checked against: the one the storage
    /// was resolved with, when it registers providers of its own (the built-ins by default).
    pub fn resolver(mut self, resolver: StrategyResolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Boots: checks the handlers and validators against the plan, loads the policy profile,
    /// computes the plan hash, loads the session and any paused cycle, and compares. Cold Start
    /// creates nothing.
    pub fn boot(self) -> Result<Runtime<S, L>, BootError> {
        let RuntimeBuilder { policy_root, plan, store, handlers, validators, record_content, bundle, resolver } = self;
        if handlers.step_types().contains(&StepType::PersistSession) {
            return Err(BootError::PersistSessionHandler);
        }
        // One runtime per session, whatever wraps the store (CONTRACT §11).
        store.claim()?;
        let profile = PolicyProfile::load(&policy_root, &plan.metadata().policy_profile)?;
        let hash = plan_hash(&profile, &plan);
        let parts = HashParts::of(&profile, &plan);
        let (boot, mut session_id) = match store.load()? {
            // A new session keeps the id reserved by a first cycle that did not complete.
            None => match store.load_reserved()? {
                Some(reserved) if reserved.plan_hash == hash => (Boot::ColdStart, reserved.session_id),
                _ => (Boot::ColdStart, Uuid::new_v4()),
            },
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
        let completed = previous.as_ref().map_or(0, |s| s.cycle);
        let mut pending = store.load_intervention()?;
        // A resume that saved the session but was stopped before removing the record left it
        // behind: the session proves the cycle finished, so the record goes, and nothing re-runs.
        let leftover = match (&pending, &previous) {
            (Some(record), Some(state)) if record.is_leftover_of(state) => {
                store.remove_intervention()?;
                pending.take()
            }
            _ => None,
        };
        if let Some(record) = &pending {
            let mismatch = |what: String| BootError::InterventionMismatch { file: INTERVENTION_FILE, what };
            if record.plan_hash != hash {
                return Err(mismatch(format!(
                    "paused under plan hash {}, but the plan and policy now hash to {hash}",
                    record.plan_hash
                )));
            }
            if previous.is_some() && record.session_id != session_id {
                return Err(mismatch(format!("belongs to session {}, not {session_id}", record.session_id)));
            }
            // A paused first cycle: its id is the one reserved for the new session, if any.
            if let (None, Some(reserved)) = (&previous, store.load_reserved()?)
                && reserved.plan_hash == hash
                && reserved.session_id != record.session_id
            {
                return Err(mismatch(format!(
                    "belongs to session {}, but the first cycle reserved session {}",
                    record.session_id, reserved.session_id
                )));
            }
            if record.session_id.get_version_num() != 4 {
                return Err(mismatch(format!("names session {}, which is not a v4 UUID", record.session_id)));
            }
            if record.cycle != completed + 1 {
                return Err(mismatch(format!(
                    "is cycle {}, but the session has completed {completed} cycles",
                    record.cycle
                )));
            }
            session_id = record.session_id;
        }
        let pin = match &bundle {
            Some(manifest) => pin_for(&store, manifest, &resolver.unwrap_or_default())?,
            None => None,
        };
        let cell = Arc::new(Mutex::new(Staging { previous: previous.clone(), parts: parts.clone(), staged: None }));
        let handlers = handlers.on_named::<PersistSession, _>(SessionStager { cell: cell.clone() });
        let executor = Executor::with_parts(handlers, validators, record_content);
        executor.check(&plan)?;
        let state = match pending {
            Some(record) => State::Paused(Box::new(record)),
            None => State::Ready,
        };
        Ok(Runtime {
            store,
            policy_root,
            plan,
            hash,
            parts,
            boot,
            session_id,
            session: previous,
            leftover,
            reserved: false,
            pin,
            cell,
            executor,
            state,
        })
    }
}

/// Where the runtime stands, with what it needs there.
#[derive(Debug)]
enum State {
    Ready,
    Paused(Box<InterventionRecord>),
    Halted(Box<RuntimeError>),
}

/// The one owner of a session's cycles (docs/CONTRACT.md, "Sessions and the runtime"): booted
/// with the plan, the policy root, the session store, the handlers and the validators, it is the
/// only way to run, resume or abandon the session's cycles. It computes the plan hash itself,
/// numbers the cycles, saves the session once per completed cycle, keeps a paused cycle on disk
/// until a person resumes or abandons it (after a restart too), and halts for good on a FailFast
/// failure. It owns its store, so nothing else writes to it while it runs.
///
/// ```
/// use planlock::demo::Demo;
/// use planlock::runtime::{Runtime, RunOutcome};
/// use planlock::session::FileSessionStore;
/// # let policy = tempfile::tempdir()?;
/// # let dir = policy.path().join("profiles/default");
/// # std::fs::create_dir_all(&dir)?;
/// # for f in ["modes.yaml", "triggers.yaml", "bundles.yaml"] { std::fs::write(dir.join(f), "{}")?; }
/// # let plan = planlock::ValidPlan::from_str(include_str!("../../examples/plans/demo_plan.json"))?;
/// let root = tempfile::tempdir()?;
/// let store = FileSessionStore::open(root.path())?;
/// let demo = Demo::new().repo_base(policy.path()); // the demo RepoScan scans there
/// let mut runtime = Runtime::builder(policy.path(), plan, store).handlers(demo.handlers()).boot()?;
/// assert!(matches!(runtime.run_cycle_blocking()?, RunOutcome::Completed(_)));
/// assert_eq!(runtime.cycle(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Runtime<S, L> {
    store: S,
    policy_root: PathBuf,
    plan: ValidPlan,
    hash: Digest,
    parts: HashParts,
    boot: Boot,
    session_id: Uuid,
    session: Option<SessionState>,
    /// The record of a finished resume that boot found and removed.
    leftover: Option<InterventionRecord>,
    /// A new session's id is reserved on the store (once) before its first cycle runs.
    reserved: bool,
    /// A bundle pin to save with the next completed cycle (a new or upgraded one).
    pin: Option<BundlePinV1>,
    cell: Arc<Mutex<Staging>>,
    executor: Executor<WithStager<L>>,
    state: State,
}

impl<S: SessionStore> Runtime<S, Nil> {
    /// Starts booting a runtime for `plan`, whose policy profile lives under `policy_root`, on
    /// `store`; add the handlers and validators, then [`boot`](RuntimeBuilder::boot).
    pub fn builder(policy_root: impl Into<PathBuf>, plan: ValidPlan, store: S) -> RuntimeBuilder<S, Nil> {
        RuntimeBuilder {
            policy_root: policy_root.into(),
            plan,
            store,
            handlers: Handlers::new(),
            validators: Vec::new(),
            record_content: false,
            bundle: None,
            resolver: None,
        }
    }
}

impl<S: SessionStore, L: HandlerSet> Runtime<S, L> {
    /// How the runtime started.
    pub fn boot_kind(&self) -> &Boot {
        &self.boot
    }

    /// Where it stands: ready, paused or halted.
    pub fn status(&self) -> Status {
        match self.state {
            State::Ready => Status::Ready,
            State::Paused(_) => Status::Paused,
            State::Halted(_) => Status::Halted,
        }
    }

    /// The record of a finished resume that boot removed: a crash had stopped the resume after
    /// it saved the session and before it removed the record
    /// ([`InterventionRecord::is_leftover_of`]). Nothing of its cycle runs again.
    pub fn removed_leftover(&self) -> Option<&InterventionRecord> {
        self.leftover.as_ref()
    }

    /// The paused cycle's record, while one is paused.
    pub fn pending(&self) -> Option<&InterventionRecord> {
        match &self.state {
            State::Paused(record) => Some(record),
            _ => None,
        }
    }

    /// The failure that halted the runtime, if one did.
    pub fn halted(&self) -> Option<&RuntimeError> {
        match &self.state {
            State::Halted(e) => Some(e),
            _ => None,
        }
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
    pub fn session(&self) -> Option<&SessionState> {
        self.session.as_ref()
    }

    /// How many cycles of the session have completed; the next one is this + 1.
    pub fn cycle(&self) -> u64 {
        self.session.as_ref().map_or(0, |s| s.cycle)
    }

    fn cycle_session(&self, cycle: u64) -> CycleSession {
        CycleSession { session_id: self.session_id, plan_hash: self.hash, cycle }
    }

    /// Refuses a call on a halted runtime.
    fn refuse_if_halted(&self) -> Result<(), RuntimeError> {
        match &self.state {
            State::Halted(original) => Err(RuntimeError::Halted { original: original.clone() }),
            _ => Ok(()),
        }
    }

    /// Halts the runtime on a FailFast error; returns the error.
    fn fail(&mut self, err: RuntimeError) -> RuntimeError {
        if err.kind() == FailureKind::FailFast {
            self.state = State::Halted(Box::new(err.clone()));
        }
        err
    }

    /// Runs the next cycle of the session.
    pub async fn run_cycle(&mut self) -> Result<RunOutcome, RuntimeError> {
        self.refuse_if_halted()?;
        if let State::Paused(record) = &self.state {
            return Err(RuntimeError::Paused {
                cycle: record.cycle,
                step_id: record.step_id.clone(),
                validator_id: record.validator.id.clone(),
            });
        }
        self.reserve()?;
        let session = self.cycle_session(self.cycle() + 1);
        self.unstage();
        let outcome = self.executor.run_with(&self.plan, session).await;
        self.settle(outcome, session.cycle).await
    }

    /// [`run_cycle`](Self::run_cycle) from synchronous code.
    pub fn run_cycle_blocking(&mut self) -> Result<RunOutcome, RuntimeError> {
        pollster::block_on(self.run_cycle())
    }

    /// Resumes the paused cycle (docs/CONTRACT.md, "Sessions and the runtime"): recomputes the
    /// plan hash from the current policy files (a change is FailFast, naming the part), restores
    /// the results of the steps completed before the blocked one, and runs the blocked step again
    /// from its beginning. `over` must name the pending intervention's validator and step; it
    /// lets that Block pass in this re-run only. The record is removed once the cycle has
    /// completed and its session save is durable.
    pub async fn resume(&mut self, over: Option<Override>) -> Result<RunOutcome, RuntimeError> {
        self.refuse_if_halted()?;
        let State::Paused(record) = &self.state else { return Err(RuntimeError::NotPaused) };
        let record = (**record).clone();
        if let Some(o) = &over {
            o.check_justification().map_err(RuntimeError::Justification)?;
        }
        if let Some(o) = &over
            && (o.validator_id != record.validator.id || o.step_id != record.step_id)
        {
            return Err(RuntimeError::Exec(ExecError::OverrideRefused {
                validator_id: o.validator_id.clone(),
                step_id: o.step_id.clone(),
                pending_validator: record.validator.id.clone(),
                pending_step: record.step_id.clone(),
            }));
        }
        let profile = match PolicyProfile::load(&self.policy_root, &self.plan.metadata().policy_profile) {
            Ok(profile) => profile,
            Err(e) => return Err(self.fail(e.into())),
        };
        let current = plan_hash(&profile, &self.plan);
        if current != record.plan_hash {
            let what = self.parts.difference(&HashParts::of(&profile, &self.plan));
            return Err(self.fail(RuntimeError::PolicyChanged { paused: record.plan_hash, current, what }));
        }
        let restored = match self.restore(&record, over) {
            Ok(restored) => restored,
            Err(e) => return Err(self.fail(e)),
        };
        self.unstage();
        let outcome = self.executor.resume_restored(&self.plan, restored).await;
        let cycle = record.cycle;
        let settled = self.settle(outcome, cycle).await;
        // A resumed cycle that failed (CycleFail) is over: the same number runs again next.
        if let Err(e) = &settled
            && e.kind() == FailureKind::CycleFail
        {
            self.store.remove_intervention().map_err(|e| self.fail(e.into()))?;
            self.state = State::Ready;
        }
        settled
    }

    /// [`resume`](Self::resume) from synchronous code.
    pub fn resume_blocking(&mut self, over: Option<Override>) -> Result<RunOutcome, RuntimeError> {
        pollster::block_on(self.resume(over))
    }

    /// Gives up the paused cycle: removes its record durably and leaves the session file as it
    /// was. The next cycle runs under the same number.
    pub fn abandon(&mut self) -> Result<InterventionRecord, RuntimeError> {
        self.refuse_if_halted()?;
        let State::Paused(record) = &self.state else { return Err(RuntimeError::NotPaused) };
        let record = (**record).clone();
        self.store.remove_intervention().map_err(|e| self.fail(e.into()))?;
        self.state = State::Ready;
        Ok(record)
    }

    /// Before the first cycle of a new session, reserves its id on the store, so that a crashed
    /// first cycle runs again under the same id and idempotency keys.
    fn reserve(&mut self) -> Result<(), RuntimeError> {
        if self.session.is_some() || self.reserved {
            return Ok(());
        }
        let reserved = ReservedSession { session_id: self.session_id, plan_hash: self.hash };
        self.store.save_reserved(&reserved).map_err(|e| self.fail(e.into()))?;
        self.reserved = true;
        Ok(())
    }

    /// Each cycle's staged session update starts empty.
    fn unstage(&self) {
        if let Ok(mut cell) = self.cell.lock() {
            cell.staged = None;
        }
    }

    /// Turns what the executor returned into the runtime's outcome: saves the session of a
    /// completed cycle (and removes a resumed cycle's record), saves the record of a paused one,
    /// halts on FailFast.
    async fn settle(
        &mut self,
        outcome: Result<CycleOutcome, ExecError>,
        cycle: u64,
    ) -> Result<RunOutcome, RuntimeError> {
        let settled = match outcome {
            Ok(CycleOutcome::Completed(done)) => self.commit(done).await,
            Ok(CycleOutcome::InterventionRequired(paused)) => self.pause(&paused, cycle),
            Err(e) => Err(self.fail(e.into())),
        };
        if settled.is_err() {
            // No save: a store holding the cycle's writes open for it drops them.
            self.store.discard_cycle();
        }
        settled
    }

    /// Saves the staged session of a completed cycle (its bundle pin first, when one is due, so a
    /// session never exists without its pin), then removes any paused cycle's record.
    async fn commit(&mut self, done: Completed) -> Result<RunOutcome, RuntimeError> {
        if let Some(pin) = &self.pin {
            if let Err(e) = self.store.save_pin(pin) {
                let cause = HandlerError::with_source("saving the bundle pin failed", e);
                return Err(self.fail(persist_failure(&self.plan, cause).into()));
            }
            self.pin = None;
        }
        let staged = self.cell.lock().ok().and_then(|mut cell| cell.staged.take());
        let saved = match staged {
            Some(update) => self.store.save_async(update).await,
            None => {
                let cause = HandlerError::new("the cycle completed without staging a session update");
                return Err(self.fail(persist_failure(&self.plan, cause).into()));
            }
        };
        let saved = match saved {
            Ok(saved) => saved,
            Err(e) => {
                let cause = HandlerError::with_source("saving the session failed", e);
                return Err(self.fail(persist_failure(&self.plan, cause).into()));
            }
        };
        if let Ok(mut cell) = self.cell.lock() {
            cell.previous = Some(saved.clone());
        }
        self.session = Some(saved);
        if matches!(self.state, State::Paused(_)) {
            self.store.remove_intervention().map_err(|e| self.fail(e.into()))?;
        }
        self.state = State::Ready;
        Ok(RunOutcome::Completed(done))
    }

    /// Saves the record of a paused cycle; the session file stays as it was.
    fn pause(&mut self, paused: &PausedCycle, cycle: u64) -> Result<RunOutcome, RuntimeError> {
        let intervention = paused.intervention();
        let validator = self.executor.validator_signature(&intervention.validator_id);
        let Some(validator) = validator else {
            let what = format!("validator `{}` is not registered", intervention.validator_id);
            return Err(self.fail(RuntimeError::CorruptRecord(what)));
        };
        let completed = self.plan.steps()[..intervention.step_index]
            .iter()
            .filter_map(|step| {
                let result = paused.ledger().by_type(step.step_type())?;
                let result = serde_json::to_value(result).ok()?;
                Some(CompletedStep { id: step.id.clone(), step_type: step.step_type(), result })
            })
            .collect();
        let record = InterventionRecord {
            session_id: self.session_id,
            plan_hash: self.hash,
            cycle,
            step_id: intervention.step_id.clone(),
            step_type: intervention.step_type,
            phase: match intervention.phase {
                Phase::Before => BlockPhase::Pre,
                Phase::After => BlockPhase::Post,
            },
            validator,
            reason: intervention.reason.clone(),
            completed,
            created_at: Timestamp::now(),
        };
        self.store.save_intervention(&record).map_err(|e| self.fail(e.into()))?;
        self.state = State::Paused(Box::new(record.clone()));
        Ok(RunOutcome::Paused(record))
    }

    /// The cycle a record describes, ready to re-run its blocked step.
    fn restore(&self, record: &InterventionRecord, over: Option<Override>) -> Result<RestoredCycle, RuntimeError> {
        let steps = self.plan.steps();
        let next = steps
            .iter()
            .position(|s| s.id == record.step_id && s.step_type() == record.step_type)
            .ok_or_else(|| RuntimeError::CorruptRecord(format!("the plan has no step `{}`", record.step_id)))?;
        // The record is input (CONTRACT §11): it must name exactly the steps before the blocked
        // one, in order, each with a result that passes the checks a handler's result passes.
        let corrupt = |what: String| RuntimeError::CorruptRecord(printable(&what).into_owned());
        if record.completed.len() != next {
            return Err(corrupt(format!(
                "it lists {} completed steps, but {} steps come before `{}` in the plan",
                record.completed.len(),
                next,
                record.step_id
            )));
        }
        let mut ledger = Ledger::default();
        for (step, done) in steps[..next].iter().zip(&record.completed) {
            if done.id != step.id || done.step_type != step.step_type() {
                return Err(corrupt(format!(
                    "it lists step `{}` ({}) where the plan has `{}` ({})",
                    done.id,
                    done.step_type,
                    step.id,
                    step.step_type()
                )));
            }
            let result = StepResult::from_value(done.step_type, &done.result)
                .map_err(|e| corrupt(format!("the result of step `{}`: {e}", done.id)))?;
            let problems = check_result(&step.payload, &result, self.plan.metadata());
            if let Some(problem) = problems.first() {
                return Err(corrupt(format!("the result of step `{}` breaks its contract: {problem}", done.id)));
            }
            ledger.record(result);
        }
        let paused_by = Intervention {
            step_index: next,
            step_id: record.step_id.clone(),
            step_type: record.step_type,
            validator_id: record.validator.id.clone(),
            phase: match record.phase {
                BlockPhase::Pre => Phase::Before,
                BlockPhase::Post => Phase::After,
            },
            reason: record.reason.clone(),
        };
        Ok(RestoredCycle { session: self.cycle_session(record.cycle), next, ledger, over, paused_by })
    }
}

/// The pin a session on `store` needs for `manifest`: `None` when the stored one already names
/// its ids, a new pin for a new session, an upgraded one for a pin without ids; a pin naming other
/// ids, or an id without an implementation, is refused.
fn pin_for<S: SessionStore>(
    store: &S,
    manifest: &BundleManifest,
    resolver: &StrategyResolver,
) -> Result<Option<BundlePinV1>, BootError> {
    let (strategy, memory) = (manifest.strategy_id(), manifest.memory_id());
    resolver.check(strategy, memory)?;
    let embedder = resolver.embedder_of(manifest);
    let fresh = |pinned_at| BundlePinV1 {
        version: PinVersion,
        bundle_id: manifest.bundle_id.clone(),
        strategy_provider_id: Some(strategy.to_owned()),
        memory_provider_id: Some(memory.to_owned()),
        embedder_model: embedder.map(|(m, _)| m.to_owned()),
        embedder_dimension: embedder.map(|(_, d)| d as u64),
        pinned_at,
    };
    let Some(pin) = store.load_pin()? else { return Ok(Some(fresh(Timestamp::now()))) };
    match (&pin.strategy_provider_id, &pin.memory_provider_id) {
        (Some(s), Some(m)) if s == strategy && m == memory => {}
        (Some(s), Some(m)) => {
            return Err(BootError::PinMismatch {
                bundle: printable(&manifest.bundle_id).into_owned(),
                pinned_strategy: printable(s).into_owned(),
                pinned_memory: printable(m).into_owned(),
                strategy: printable(strategy).into_owned(),
                memory: printable(memory).into_owned(),
            });
        }
        // The older format: upgraded with the manifest's current ids, keeping when it pinned.
        (None, None) => return Ok(Some(fresh(pin.pinned_at))),
        // One id without the other is no format planlock wrote.
        (Some(_), None) | (None, Some(_)) => {
            return Err(BootError::Session(SessionError::Corrupt {
                file: PIN_FILE.into(),
                problem: "naming one provider but not the other (the older format names neither)".into(),
            }));
        }
    }
    // The providers match; the embedder must too, since stored vectors mean what its model meant.
    match (&pin.embedder_model, pin.embedder_dimension, embedder) {
        (Some(m), Some(d), Some((model, dimension))) if m == model && d == dimension as u64 => Ok(None),
        (Some(m), Some(d), Some((model, dimension))) => Err(BootError::EmbedderMismatch {
            pinned: format!("`{}` ({d} dimensions)", printable(m)),
            current: format!("`{}` ({dimension} dimensions)", printable(model)),
        }),
        (None, None, Some(_)) => Ok(Some(fresh(pin.pinned_at))),
        (None, None, None) | (Some(_), Some(_), None) => Ok(None),
        _ => Err(BootError::Session(SessionError::Corrupt {
            file: PIN_FILE.into(),
            problem: "naming an embedder model without its dimension, or the reverse".into(),
        })),
    }
}

/// A `PersistSession` failure of `plan`: FailFast, as the registry says of every storage write.
fn persist_failure(plan: &ValidPlan, cause: HandlerError) -> ExecError {
    let step = plan.steps().iter().find(|s| s.step_type() == StepType::PersistSession);
    ExecError::StepFailed {
        step_id: step.map(|s| s.id.clone()).unwrap_or_default(),
        step_type: StepType::PersistSession,
        kind: StepType::PersistSession.failure_kind(),
        cause: StepFailure::Handler(cause),
    }
}
