//! The [`Runtime`]: the one owner of a session's cycles — run, resume, abandon, and the end of
//! each (the save of a completed cycle, the record of a paused one).

use std::path::PathBuf;

use uuid::Uuid;

use crate::contract::registry::{Failure, FailureKind};
use crate::exec::budget::{CycleBudget, TokenBudget};
use crate::exec::executor::{
    Checked, Completed, CycleOutcome, CycleSession, ExecError, ExecOptions, Executor, PausedCycle, Phase,
    RestoredCycle, override_fits,
};
use crate::exec::handler::{HandlerError, HandlerSet, Handlers, InSession, Nil};
use crate::exec::validator::Override;
use crate::hash::{Digest, HashParts};
use crate::session::{
    BlockPhase, BundlePinV1, CompletedStep, CycleGuard, EndOfCycle, InterventionRecord, PlanDocument, ReservedSession,
    ReviewDecision, SessionState, SessionStore, Timestamp,
};
use crate::validate::ValidPlan;

use super::error::{RecordMismatch, RuntimeError};
use super::history::{CycleRun, HistoryOptions};
use super::stager::{WithStager, session_update};
use super::{Boot, RunOutcome, RuntimeBuilder, Status, approvals, error, history, restore};

/// Where the runtime stands, with what it needs there.
#[derive(Debug)]
pub(super) enum State {
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
/// let mut runtime = Runtime::builder(policy.path(), plan, store).handlers(demo.handlers()).boot_blocking()?;
/// assert!(matches!(runtime.run_cycle_blocking()?, RunOutcome::Completed(_)));
/// assert_eq!(runtime.cycle(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Runtime<S, L> {
    pub(super) store: S,
    pub(super) policy_root: PathBuf,
    pub(super) plan: ValidPlan,
    pub(super) hash: Digest,
    pub(super) parts: HashParts,
    // Boxed, as the records below: a worker keeps hundreds of runtimes, most of them without.
    pub(super) boot: Box<Boot>,
    pub(super) session_id: Uuid,
    pub(super) session: Option<SessionState>,
    /// The record of a finished resume that boot found and removed.
    pub(super) leftover: Option<Box<InterventionRecord>>,
    /// A new session's id is reserved on the store (once) before its first cycle runs.
    pub(super) reserved: bool,
    /// A bundle pin to save with the next completed cycle (a new or upgraded one).
    pub(super) pin: Option<Box<BundlePinV1>>,
    /// The plan to keep with the next completed or paused cycle, while the session keeps none
    /// (or another's, or one that cannot be read).
    pub(super) plan_due: Option<Box<PlanDocument>>,
    pub(super) executor: Executor<WithStager<L>>,
    /// What boot found the plan needs of the executor: every cycle runs with it.
    pub(super) checked: Checked,
    pub(super) state: State,
    /// How long a pause waits for a decision (`expiresAt` on new records); none: no expiry.
    pub(super) approval_ttl: Option<std::time::Duration>,
    /// What the session's history keeps of each finished cycle.
    pub(super) history: HistoryOptions,
    /// The session's token budgets, when it has them: each cycle opens an account with them.
    pub(super) budget: Option<std::sync::Arc<dyn TokenBudget>>,
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
            options: ExecOptions::default(),
            bundle: None,
            resolver: None,
            approval_ttl: None,
            history: HistoryOptions::default(),
            budget: None,
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
        self.leftover.as_deref()
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

    pub(super) fn cycle_session(&self, cycle: u64) -> CycleSession {
        CycleSession { session_id: self.session_id, plan_hash: self.hash, cycle }
    }

    /// Refuses a call on a halted runtime.
    pub(super) fn refuse_if_halted(&self) -> Result<(), RuntimeError> {
        match &self.state {
            State::Halted(original) => Err(RuntimeError::Halted { original: original.clone() }),
            _ => Ok(()),
        }
    }

    /// Halts the runtime on a FailFast error; returns the error.
    pub(super) fn fail(&mut self, err: RuntimeError) -> RuntimeError {
        if err.kind() == FailureKind::FailFast {
            self.state = State::Halted(Box::new(err.clone()));
        }
        err
    }

    /// Runs the next cycle of the session.
    ///
    /// A paused session goes on here once a person has decided (CONTRACT §14), in this process
    /// or another: an approval resumes the paused cycle with it, a rejection abandons it
    /// ([`RunOutcome::Abandoned`]). Without a decision, a paused session is refused
    /// ([`RuntimeError::Paused`]).
    pub async fn run_cycle(&mut self) -> Result<RunOutcome, RuntimeError> {
        self.refuse_if_halted()?;
        if let State::Paused(record) = &self.state {
            let record = (**record).clone();
            return match self.act_on_decision().await {
                Some(outcome) => outcome,
                None => Err(self.paused_error(&record)),
            };
        }
        self.reserve().await?;
        let session = self.cycle_session(self.cycle() + 1);
        let (guard, budget) = self.begin_cycle(session.cycle, 0).await?;
        let run = CycleRun::new(session.cycle);
        let in_session = InSession { guard: &guard, budget: budget.as_ref() };
        let outcome = self.executor.run_checked(&self.plan, &self.checked, session, Some(in_session)).await;
        let settled = self.settle(outcome, &run, None, guard, budget).await;
        self.record(run, settled, EndOfCycle::failing()).await
    }

    /// Opens the cycle on the store (where the store holds its writes, from now until the save
    /// or the guard's drop), and its budget's account beside it: what the steps from index `from`
    /// on may spend is reserved once, now (PostgreSQL: with the cycle's first round trip).
    pub(super) async fn begin_cycle(
        &mut self,
        cycle: u64,
        from: usize,
    ) -> Result<(CycleGuard, Option<CycleBudget>), RuntimeError> {
        let guard = match self.store.begin_cycle().await {
            Ok(guard) => guard,
            Err(e) => return Err(self.fail(e.into())),
        };
        let Some(budget) = &self.budget else { return Ok((guard, None)) };
        let account = CycleBudget::new(budget.clone(), cycle);
        account.reserve_ahead(self.executor.tokens_ahead(&self.plan, from), &guard).await;
        Ok((guard, Some(account)))
    }

    /// [`run_cycle`](Self::run_cycle) from synchronous code.
    pub fn run_cycle_blocking(&mut self) -> Result<RunOutcome, RuntimeError> {
        crate::io::block_on(self.run_cycle())
    }

    /// Resumes the paused cycle (docs/CONTRACT.md, "Sessions and the runtime"): recomputes the
    /// plan hash from the current policy files (a change is FailFast, naming the part), restores
    /// the results of the steps completed before the blocked one, and runs the blocked step again
    /// from its beginning. `over` must name the pending intervention's validator and step; it is
    /// recorded as the pause's decision first (an approval by `over.by`, on what the record shows
    /// unless `over` names a digest: a pause has one decision, so one already recorded stands),
    /// and lets that Block pass in this re-run only, while the re-run meets what was approved.
    /// The record is removed once the cycle has completed and its session save is durable.
    pub async fn resume(&mut self, over: Option<Override>) -> Result<RunOutcome, RuntimeError> {
        self.refuse_if_halted()?;
        let State::Paused(record) = &self.state else { return Err(RuntimeError::NotPaused) };
        let record = (**record).clone();
        let decision = match &over {
            Some(o) => {
                o.check_justification().map_err(RuntimeError::Justification)?;
                override_fits(o, &record.validator.id, &record.step_id)?;
                // A resume that will be refused records no approval.
                self.check_hash(&record)?;
                Some(self.decide_now(&record, o).await?)
            }
            None => None,
        };
        let over = decision.as_ref().map(approvals::override_of);
        self.resume_with(record, over, decision).await
    }

    /// Runs the paused cycle of `record` on from its blocked step with `over`, acting on
    /// `decision` (whose outcome is logged before the record is removed or replaced).
    pub(super) async fn resume_with(
        &mut self,
        record: InterventionRecord,
        over: Option<Override>,
        decision: Option<ReviewDecision>,
    ) -> Result<RunOutcome, RuntimeError> {
        self.check_hash(&record)?;
        let restored = match self.restore(&record, over) {
            Ok(restored) => restored,
            Err(e) => return Err(self.fail(e)),
        };
        crate::telemetry::pause_closed();
        let from = self.plan.steps().iter().position(|s| s.id == record.step_id).unwrap_or(0);
        let (guard, budget) = self.begin_cycle(record.cycle, from).await?;
        let run = CycleRun::new(record.cycle);
        let in_session = InSession { guard: &guard, budget: budget.as_ref() };
        let outcome = self.executor.resume_restored(&self.plan, &self.checked, restored, Some(in_session)).await;
        let settled = self.settle(outcome, &run, decision.as_ref(), guard, budget).await;
        // A resumed cycle that failed (CycleFail) is over: its pause goes with its history entry,
        // after what became of the decision, and the same number runs next.
        let given_up = matches!(&settled, Err(e) if e.kind() == FailureKind::CycleFail);
        let end = match (&settled, given_up) {
            (Err(e), true) => {
                let report = match e {
                    RuntimeError::Exec(e) => e.report(),
                    _ => None,
                };
                let outcome = decision.as_ref().map(|decision| approvals::outcome(&decision.pause, report, false));
                EndOfCycle::unpausing().with_outcome(outcome)
            }
            _ => EndOfCycle::failing(),
        };
        self.record(run, settled, end).await
    }

    /// [`resume`](Self::resume) from synchronous code.
    pub fn resume_blocking(&mut self, over: Option<Override>) -> Result<RunOutcome, RuntimeError> {
        crate::io::block_on(self.resume(over))
    }

    /// Gives up the paused cycle: logs it abandoned, removes its record durably (with its
    /// history entry) and leaves the session as it was. The next cycle runs under the same
    /// number.
    pub async fn abandon(&mut self) -> Result<InterventionRecord, RuntimeError> {
        self.refuse_if_halted()?;
        let State::Paused(record) = &self.state else { return Err(RuntimeError::NotPaused) };
        let record = (**record).clone();
        let entry = self.to_keep(history::abandoned(self.cycle_session(record.cycle), &record));
        if let Err(e) = approvals::abandon_with(&self.store, &record, entry).await {
            return Err(self.fail(e.into()));
        }
        self.state = State::Ready;
        Ok(record)
    }

    /// [`abandon`](Self::abandon) from synchronous code.
    pub fn abandon_blocking(&mut self) -> Result<InterventionRecord, RuntimeError> {
        crate::io::block_on(self.abandon())
    }

    /// Before the first cycle of a new session, reserves its id on the store, so that a crashed
    /// first cycle runs again under the same id and idempotency keys.
    pub(super) async fn reserve(&mut self) -> Result<(), RuntimeError> {
        if self.session.is_some() || self.reserved {
            return Ok(());
        }
        let reserved = ReservedSession { session_id: self.session_id, plan_hash: self.hash };
        if let Err(e) = self.store.save_reserved(&reserved).await {
            return Err(self.fail(e.into()));
        }
        self.reserved = true;
        Ok(())
    }

    /// Turns what the executor returned into the runtime's outcome: saves the session of a
    /// completed cycle (and removes a resumed cycle's record), saves the record of a paused one,
    /// halts on FailFast. The cycle ends here: its `guard` goes to the save (its writes durable
    /// with it) or is dropped (a failed cycle's writes rolled back, where the store holds them).
    pub(super) async fn settle(
        &mut self,
        outcome: Result<CycleOutcome, ExecError>,
        run: &CycleRun,
        decision: Option<&ReviewDecision>,
        guard: CycleGuard,
        budget: Option<CycleBudget>,
    ) -> Result<RunOutcome, RuntimeError> {
        // The cycle's reservations are settled once, here: with the durable write that ends it
        // (the session's save, or the pause's record), or now when it writes nothing (a
        // failure, or a write that failed: the settlement was rolled back with it).
        if let (Some(budget), Ok(_)) = (&budget, &outcome) {
            budget.settle(Some(&guard)).await;
        }
        let settled = match outcome {
            Ok(CycleOutcome::Completed(done)) => self.commit(done, run, decision, guard).await,
            Ok(CycleOutcome::InterventionRequired(paused)) => self.pause(paused, run, decision, guard).await,
            Err(e) => Err(self.fail(e.into())),
        };
        if let (Some(budget), Err(_)) = (budget, &settled) {
            budget.settle(None).await;
        }
        settled
    }

    /// Saves the session update of a completed cycle, built from its ledger, with the bundle
    /// pin due (a session never exists without its pin) and what became of the decision it acted
    /// on (logged before the paused cycle's record goes with the save).
    pub(super) async fn commit(
        &mut self,
        done: Completed,
        run: &CycleRun,
        decision: Option<&ReviewDecision>,
        guard: CycleGuard,
    ) -> Result<RunOutcome, RuntimeError> {
        let cycle = run.cycle;
        let entry = history::completed(&self.plan, self.cycle_session(cycle), run.started, &done, self.history);
        let update = session_update(self.session.as_ref(), &done.ledger, self.cycle_session(cycle), &self.parts);
        // What became of the decision acted on, logged before its record goes.
        let outcome = match (&self.state, decision) {
            (State::Paused(_), Some(decision)) => Some(approvals::outcome(&decision.pause, Some(&done.report), true)),
            _ => None,
        };
        let end = EndOfCycle::saving(update)
            .with_pin(self.pin.as_deref().cloned())
            .with_plan(self.plan_due.as_deref().cloned())
            .with_outcome(outcome)
            .with_entry(self.to_keep(entry));
        let saved = match self.store.end_cycle(end, guard).await {
            Ok(Some(saved)) => saved,
            Ok(None) => {
                let cause = HandlerError::new("the store saved no session state for a completed cycle");
                return Err(self.fail(error::persist_failure(&self.plan, cause, done.report).into()));
            }
            Err(e) => return Err(self.fail(error::save_failure(&self.plan, e, done.report).into())),
        };
        (self.pin, self.plan_due) = (None, None);
        self.session = Some(saved);
        self.state = State::Ready;
        Ok(RunOutcome::Completed(done))
    }

    /// Saves the record of a paused cycle, with what the reviewer is shown and when the pause
    /// expires; the session file stays as it was. A decision acted on in this run is logged
    /// first (the new record replaces the one it was about).
    pub(super) async fn pause(
        &mut self,
        paused: PausedCycle,
        run: &CycleRun,
        decision: Option<&ReviewDecision>,
        guard: CycleGuard,
    ) -> Result<RunOutcome, RuntimeError> {
        let cycle = run.cycle;
        let (intervention, shown, now) = (paused.intervention(), paused.shown(), Timestamp::now());
        let validator = self.executor.validator_signature(&intervention.validator_id);
        let Some(validator) = validator else {
            let what = format!("it would name validator `{}`, which is not registered", intervention.validator_id);
            return Err(self.fail(RuntimeError::InterventionMismatch(RecordMismatch::new(&what))));
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
            created_at: now,
            shown: Some(shown.value.clone()),
            shown_digest: Some(shown.digest),
            shown_truncated: shown.truncated,
            expires_at: self.approval_ttl.and_then(|ttl| now.plus(ttl)),
            trace_parent: paused.trace(),
        };
        // What became of the decision acted on, logged before the new record replaces its own.
        let outcome = decision.map(|decision| approvals::outcome(&decision.pause, Some(paused.report()), false));
        let entry = history::paused(self.cycle_session(cycle), run.started, &record, paused.report(), self.history);
        let end = EndOfCycle::pausing(record.clone())
            .with_plan(self.plan_due.as_deref().cloned())
            .with_outcome(outcome)
            .with_entry(self.to_keep(entry));
        if let Err(e) = self.store.end_cycle(end, guard).await {
            return Err(match error::write_failure(&self.plan, e, paused.report().clone()) {
                Ok(step_failed) => self.fail(step_failed.into()),
                Err(other) => self.fail(other.0.into()),
            });
        }
        self.plan_due = None;
        self.state = State::Paused(Box::new(record.clone()));
        Ok(RunOutcome::Paused { record, report: paused.abandon() })
    }

    /// The cycle a record describes, ready to re-run its blocked step.
    pub(super) fn restore(
        &self,
        record: &InterventionRecord,
        over: Option<Override>,
    ) -> Result<RestoredCycle, RuntimeError> {
        restore::restore_cycle(&self.plan, record, over, self.cycle_session(record.cycle))
    }
}
