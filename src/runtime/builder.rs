//! [`RuntimeBuilder`] and boot: the plan hash, the session (Cold Start, Resume or FailFast), the
//! bundle pin, a paused cycle's record, the executor.

use std::path::PathBuf;

use uuid::Uuid;

use super::error::{BootError, HashMismatch, RecordMismatch, Saved};
use super::history::HistoryOptions;
use super::pin::pin_for;
use super::stager::SessionStager;
use super::{Boot, Runtime, State};
use crate::contract::registry::StepType;
use crate::contract::steps::PersistSession;
use crate::exec::budget::TokenBudget;
use crate::exec::executor::{ExecOptions, Executor};
use crate::exec::handler::{HandlerSet, Handlers, Nil};
use crate::hash::profile::PolicyProfile;
use crate::hash::{HashParts, plan_hash};
use crate::session::{ApprovalEvent, CycleGuard, EndOfCycle, PauseRef, PlanDocument, SessionStore, Timestamp};
use crate::store::bundle::{BundleManifest, StrategyResolver};
use crate::validate::ValidPlan;
use std::sync::Arc;

/// Collects what a [`Runtime`] is booted with; see [`Runtime::builder`].
#[must_use = "a runtime builder does nothing until `.boot()`"]
pub struct RuntimeBuilder<S, L = Nil> {
    pub(super) policy_root: PathBuf,
    pub(super) plan: ValidPlan,
    pub(super) store: S,
    pub(super) handlers: Handlers<L>,
    pub(super) options: ExecOptions,
    pub(super) bundle: Option<BundleManifest>,
    pub(super) resolver: Option<StrategyResolver>,
    pub(super) approval_ttl: Option<std::time::Duration>,
    pub(super) history: HistoryOptions,
    pub(super) budget: Option<Arc<dyn TokenBudget>>,
}

impl<S: SessionStore, L: HandlerSet> RuntimeBuilder<S, L> {
    /// The step handlers, every step type of the plan but `PersistSession` (the runtime's own).
    pub fn handlers<L2: HandlerSet>(self, handlers: Handlers<L2>) -> RuntimeBuilder<S, L2> {
        let RuntimeBuilder {
            policy_root, plan, store, options, bundle, resolver, approval_ttl, history, budget, ..
        } = self;
        RuntimeBuilder { policy_root, plan, store, handlers, options, bundle, resolver, approval_ttl, history, budget }
    }

    crate::exec::executor::option_setters!(
        validator,
        "Registers a validator by id, version and configuration (see [`Executor::with_validator`])."
    );

    /// The bundle whose providers the storage handlers were resolved from: boot checks its ids
    /// against the session's pin (a difference is FailFast, naming both), and the first completed
    /// cycle pins them (an older pin without ids is upgraded then).
    pub fn bundle(mut self, manifest: BundleManifest) -> Self {
        self.bundle = Some(manifest);
        self
    }

    /// How long a pause waits for a person (CONTRACT §14): its record's `expiresAt` is this long
    /// after the pause, a decision after it is refused (`approval-expired`), and an expired pause
    /// can only be abandoned. No expiry without it.
    pub fn approval_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.approval_ttl = Some(ttl);
        self
    }

    /// How many finished cycles the session's history keeps (CONTRACT §15; default
    /// [`DEFAULT_KEEP`](crate::session::DEFAULT_KEEP), 100): older ones are dropped whole; 0
    /// keeps none.
    pub fn history(mut self, keep: usize) -> Self {
        self.history.keep = keep;
        self
    }

    /// The session's token budgets (CONTRACT §20): each model call of a cycle reserves its
    /// estimate before it is sent (refused with `budget-exhausted` when a budget cannot cover
    /// it), the cycle's save settles what the calls used, and a failed cycle gives back what it
    /// reserved. Made for the same session as the store: a backend's
    /// [`OpenedSession::budget`](crate::backend::OpenedSession::budget), or a `PgBudget`
    /// (`session::postgres`, feature `postgres`) or [`FileBudget`](crate::session::FileBudget)
    /// of its own. Without one, nothing is reserved.
    pub fn budget(mut self, budget: Arc<dyn TokenBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The resolver whose registered ids the bundle's are checked against: the one the storage
    /// was resolved with, when it registers providers of its own (the built-ins by default).
    pub fn resolver(mut self, resolver: StrategyResolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Boots: checks the handlers and validators against the plan (once: every cycle runs the
    /// plan they were checked against), loads the policy profile, computes the plan hash, loads
    /// the session and any paused cycle, and compares. Cold Start creates nothing.
    pub async fn boot(self) -> Result<Runtime<S, L>, BootError> {
        let RuntimeBuilder {
            policy_root,
            plan,
            store,
            handlers,
            options,
            bundle,
            resolver,
            approval_ttl,
            history,
            budget,
        } = self;
        // One switch for content: the step spans' and the history's.
        let history = HistoryOptions { content: options.records_content(), ..history };
        if handlers.step_types().contains(&StepType::PersistSession) {
            return Err(BootError::PersistSessionHandler);
        }
        // One runtime per session, whatever wraps the store (CONTRACT §11).
        store.claim()?;
        let profile = PolicyProfile::load(&policy_root, &plan.metadata().policy_profile)?;
        let hash = plan_hash(&profile, &plan);
        let parts = HashParts::of(&profile, &plan);
        let state = store.records().load().await?;
        // Read only for a new session: a saved one has no reserved id left.
        let reserved = match state {
            None => store.records().load_reserved().await?,
            Some(_) => None,
        };
        let (boot, mut session_id) = match state {
            // A new session keeps the id reserved by a first cycle that did not complete.
            None => match &reserved {
                Some(reserved) if reserved.plan_hash == hash => (Boot::ColdStart, reserved.session_id),
                _ => (Boot::ColdStart, Uuid::new_v4()),
            },
            Some(state) if state.last_execution_plan_hash == hash => (Boot::Resume(state.clone()), state.session_id),
            Some(state) => {
                let what = match &state.hash_parts {
                    Some(stored) => stored.difference(&parts),
                    None => "the session file keeps no per-part digests".to_owned(),
                };
                return Err(BootError::HashMismatch(Box::new(HashMismatch {
                    saved: Saved::Session,
                    session_id: state.session_id,
                    stored: state.last_execution_plan_hash,
                    current: hash,
                    what,
                })));
            }
        };
        let previous = match &boot {
            Boot::Resume(state) => Some(state.clone()),
            Boot::ColdStart => None,
        };
        let completed = previous.as_ref().map_or(0, |s| s.cycle);
        let mut pending = store.records().load_intervention().await?;
        // A resume that saved the session but was stopped before removing the record left it
        // behind (a store that ends a cycle in steps: files): the session proves the cycle
        // finished, so the record goes, and nothing re-runs.
        let leftover = match (&pending, &previous) {
            (Some(record), Some(state)) if record.is_leftover_of(state) => {
                // Its decision was consumed by the cycle the session completed: logged if the
                // stopped process had not.
                let pause = PauseRef::of(record);
                let outcome = match store.records().decision_on(&pause).await? {
                    Some(_) => {
                        let at = Timestamp::now();
                        Some(ApprovalEvent::Consumed { pause, cycle: record.cycle, completed: true, at })
                    }
                    None => None,
                };
                store.end_cycle(EndOfCycle::unpausing().with_outcome(outcome), CycleGuard::none()).await?;
                pending.take()
            }
            _ => None,
        };
        if let Some(record) = &pending {
            let mismatch = |what: String| BootError::InterventionMismatch(RecordMismatch::new(&what));
            if record.plan_hash != hash {
                return Err(mismatch(format!(
                    "it paused under plan hash {}, but the plan and policy now hash to {hash}",
                    record.plan_hash
                )));
            }
            if previous.is_some() && record.session_id != session_id {
                return Err(mismatch(format!("it belongs to session {}, not {session_id}", record.session_id)));
            }
            // A paused first cycle: its id is the one reserved for the new session, if any.
            if let (None, Some(reserved)) = (&previous, &reserved)
                && reserved.plan_hash == hash
                && reserved.session_id != record.session_id
            {
                return Err(mismatch(format!(
                    "it belongs to session {}, but the first cycle reserved session {}",
                    record.session_id, reserved.session_id
                )));
            }
            if record.session_id.get_version_num() != 4 {
                return Err(mismatch(format!("it names session {}, which is not a v4 UUID", record.session_id)));
            }
            if record.cycle != completed + 1 {
                return Err(mismatch(format!(
                    "it is cycle {}, but the session has completed {completed} cycles",
                    record.cycle
                )));
            }
            session_id = record.session_id;
        }
        let pin = match &bundle {
            Some(manifest) => pin_for(&store, manifest, &resolver.unwrap_or_default()).await?,
            None => None,
        };
        // The session keeps the plan it runs (CONTRACT §21), for a worker that acts on its
        // decided pause: kept with the next end unless it is kept already. One that cannot be
        // read is kept again (it is a copy: the plan given is the one that runs).
        let plan_due = match store.records().load_plan().await {
            Ok(Some(kept)) if kept.plan_hash == hash => None,
            Ok(_) => Some(Box::new(PlanDocument::of(&plan, hash))),
            Err(e) => {
                tracing::warn!(error = %e, "the session's kept plan cannot be read; it is kept again");
                Some(Box::new(PlanDocument::of(&plan, hash)))
            }
        };
        let handlers = handlers.on_named::<PersistSession, _>(SessionStager);
        let executor = Executor::in_runtime(handlers, options);
        let checked = executor.check(&plan)?;
        let state = match pending {
            Some(record) => State::Paused(Box::new(record)),
            None => State::Ready,
        };
        let mut runtime = Runtime {
            store,
            policy_root,
            plan,
            hash,
            parts,
            boot: Box::new(boot),
            session_id,
            session: previous,
            leftover: leftover.map(Box::new),
            reserved: false,
            pin: pin.map(Box::new),
            plan_due,
            executor,
            checked,
            state,
            approval_ttl,
            history,
            budget,
        };
        runtime.upgrade_record().await?;
        Ok(runtime)
    }

    /// [`boot`](Self::boot) from synchronous code.
    pub fn boot_blocking(self) -> Result<Runtime<S, L>, BootError> {
        crate::io::block_on(self.boot())
    }
}
