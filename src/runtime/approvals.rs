//! The runtime and a person's decision (CONTRACT §14): a paused session whose decision is
//! recorded goes on at its next [`run_cycle`](Runtime::run_cycle) (an approval resumes it, a
//! rejection abandons it), and every decision's outcome goes to the approval log once — consumed
//! by a cycle, stale, expired, abandoned or superseded — before the record it is about is removed
//! or replaced, so that a crash in any window leaves work the next process finishes.

use std::sync::Arc;

use tracing::Instrument;

use super::error::{BootError, RecordMismatch, RuntimeError};
use super::{RunOutcome, Runtime, State};
use crate::exec::executor::{CycleReport, Shown};
use crate::exec::handler::HandlerSet;
use crate::exec::validator::Override;
use crate::review::{DecideError, Decided, check_acting, decide_counted};
use crate::session::{
    ApprovalEvent, BlockPhase, CycleGuard, EndOfCycle, HistoryEntry, InterventionRecord, PauseRef, ReviewDecision,
    ReviewVerdict, SessionError, SessionStore, Timestamp, Via,
};

/// Logs `outcome` in `store`'s records once (see
/// [`SessionRecords::log_outcome`](crate::session::SessionRecords::log_outcome), which logs the
/// `paused` notice of the pause it ends first): for an outcome that ends nothing (an expired
/// decision); one that ends its pause goes with the end ([`EndOfCycle::with_outcome`]).
pub(super) async fn log_outcome<S: SessionStore + ?Sized>(
    store: &S,
    outcome: &ApprovalEvent,
) -> Result<(), SessionError> {
    if store.records().log_outcome(outcome).await? {
        tracing::info!(event = outcome.name(), step_id = %outcome.pause().step_id, "approval log");
    }
    Ok(())
}

/// Gives up the paused cycle of the session `store` holds (the one way to: a runtime's
/// [`abandon`](Runtime::abandon), and a process that holds the session without running it, as
/// `planlock abandon` does): its outcome goes to the approval log once (`abandoned`), then its
/// record is removed durably, in one end ([`EndOfCycle::unpausing`]); the session stays as it
/// was and the same cycle number runs next. `None` when nothing is paused.
///
/// ```
/// use planlock::session::FileSessionStore;
/// let root = tempfile::tempdir()?;
/// let store = FileSessionStore::open(root.path())?;
/// assert!(planlock::block_on(planlock::runtime::abandon_paused(&store))?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn abandon_paused(store: &dyn SessionStore) -> Result<Option<InterventionRecord>, SessionError> {
    let Some(record) = store.records().load_intervention().await? else { return Ok(None) };
    abandon_with(store, &record, None).await?;
    Ok(Some(record))
}

/// [`abandon_paused`] of `record`, keeping the history `entry` with it.
pub(super) async fn abandon_with<S: SessionStore + ?Sized>(
    store: &S,
    record: &InterventionRecord,
    entry: Option<HistoryEntry>,
) -> Result<(), SessionError> {
    let event = ApprovalEvent::Abandoned { pause: PauseRef::of(record), at: Timestamp::now() };
    let end = EndOfCycle::unpausing().with_outcome(Some(event)).with_entry(entry);
    store.end_cycle(end, CycleGuard::none()).await?;
    crate::telemetry::pause_closed();
    Ok(())
}

/// What a decision being acted on became, from the cycle report of the run that used it.
pub(super) fn outcome(pause: &PauseRef, report: Option<&CycleReport>, completed: bool) -> ApprovalEvent {
    let at = Timestamp::now();
    let mine = |step: &str, validator: &str| step == pause.step_id && validator == pause.validator_id;
    let applied =
        report.is_some_and(|r| r.overrides.iter().any(|o| mine(&o.approved.step_id, &o.approved.validator_id)));
    let stale = report.and_then(|r| r.stale.iter().find(|s| mine(&s.step_id, &s.validator_id)));
    match (applied, stale) {
        (true, _) => ApprovalEvent::Consumed { pause: pause.clone(), cycle: pause.cycle, completed, at },
        (false, Some(stale)) => ApprovalEvent::Stale { pause: pause.clone(), met: stale.met, at },
        // The re-run did not need it: the validator let what it met pass.
        (false, None) => ApprovalEvent::Superseded { pause: pause.clone(), at },
    }
}

impl<S: SessionStore, L: HandlerSet> Runtime<S, L> {
    /// The decision recorded on the paused cycle `record`, if one is.
    pub(super) async fn decision_on(
        &self,
        record: &InterventionRecord,
    ) -> Result<Option<ReviewDecision>, RuntimeError> {
        let pause = PauseRef::of(record);
        self.store.records().decision_on(&pause).await.map_err(|e| RuntimeError::Session(Arc::new(e)))
    }

    /// [`log_outcome`] in this session's records.
    pub(super) async fn log_outcome(&self, outcome: ApprovalEvent) -> Result<(), RuntimeError> {
        log_outcome(&self.store, &outcome).await.map_err(|e| RuntimeError::Session(Arc::new(e)))
    }

    /// Acts on the paused cycle's decision, if one is recorded: an approval resumes the cycle
    /// with it, a rejection abandons it. `None` when there is none to act on.
    pub(super) async fn act_on_decision(&mut self) -> Option<Result<RunOutcome, RuntimeError>> {
        let State::Paused(record) = &self.state else { return None };
        let record = (**record).clone();
        let decision = match self.decision_on(&record).await {
            Ok(Some(decision)) => decision,
            Ok(None) => return None,
            Err(e) => return Some(Err(self.fail(e))),
        };
        // A decision made after the pause expired is not used (`decide` refuses one; this one
        // came another way, or with a clock that disagrees).
        if decision.too_late_for(&record).is_some() {
            let event = ApprovalEvent::Expired { pause: decision.pause.clone(), at: Timestamp::now() };
            return Some(self.log_outcome(event).await.and(Err(self.paused_error(&record))));
        }
        // The installed rules hold for acting too: an approval they would not have let through
        // (a name nobody vouched for, a person since removed, too few) runs nothing.
        if let Err(e) = check_acting(self.store.records(), &decision).await {
            return Some(Err(RuntimeError::Decision(Arc::new(e))));
        }
        Some(match decision.verdict {
            ReviewVerdict::Approve => {
                let over = override_of(&decision);
                self.resume_with(record, Some(over), Some(decision)).await
            }
            ReviewVerdict::Reject | ReviewVerdict::Abandon => {
                // The run that acts on a rejection is part of the paused cycle's trace too: its
                // span, a child of the paused cycle's, says the cycle was abandoned.
                let span = abandon_span(self.plan.metadata(), &record);
                let abandoned = self.abandon().instrument(span.clone()).await;
                span.record(crate::telemetry::names::OUTCOME, if abandoned.is_ok() { "abandoned" } else { "failed" });
                abandoned.map(|record| RunOutcome::Abandoned(Box::new(record)))
            }
        })
    }

    /// Records an override given to [`resume`](Runtime::resume) as a decision (an approval by
    /// the override's `by`, on what the record shows unless it names another digest), as a
    /// decider in another process would: a pause has one decision.
    pub(super) async fn decide_now(
        &self,
        record: &InterventionRecord,
        over: &Override,
    ) -> Result<ReviewDecision, RuntimeError> {
        let by = over.by.clone().unwrap_or_else(|| "runtime".to_owned());
        let mut decision =
            ReviewDecision::new(record, ReviewVerdict::Approve, by, over.justification.clone()).via(Via::Library);
        if over.shown_digest.is_some() {
            decision.shown_digest = over.shown_digest;
        }
        let records = self.store.records();
        match decide_counted(records, &decision, None).await {
            // One person's approval of a pause that needs more: recorded, nothing runs.
            Ok(Decided { turn: Some(turn), .. }) => {
                Err(RuntimeError::Decision(Arc::new(DecideError::Incomplete { turn })))
            }
            // The approval that completes the pause's: the recorded decision names everyone.
            Ok(_) => Ok(self.decision_on(record).await?.unwrap_or(decision)),
            Err(DecideError::Session(SessionError::AlreadyDecided { .. })) => {
                // Decided already, the same way or not: the recorded decision is the one.
                let recorded = self.decision_on(record).await?;
                match recorded {
                    Some(recorded) if recorded.verdict == ReviewVerdict::Approve => Ok(recorded),
                    _ => Err(RuntimeError::Decision(Arc::new(DecideError::Session(SessionError::AlreadyDecided {
                        verdict: ReviewVerdict::Reject,
                        by: decision.by,
                    })))),
                }
            }
            Err(e) => Err(RuntimeError::Decision(Arc::new(e))),
        }
    }

    /// Upgrades the paused cycle's record of an older version, as a pin is upgraded: a record
    /// of a Block before its step gets what it shows (the step's input, rebuilt from the plan and
    /// the record's results, exactly as the re-run will meet it) and its digest, saved, so that a
    /// decision binds to it. One after its step cannot be: its result was not kept.
    pub(super) async fn upgrade_record(&mut self) -> Result<(), BootError> {
        let State::Paused(record) = &self.state else { return Ok(()) };
        if record.shown.is_some() || record.phase != BlockPhase::Pre {
            return Ok(());
        }
        let restored = self.restore(record, None).map_err(|e| match e {
            RuntimeError::InterventionMismatch(m) => BootError::InterventionMismatch(m),
            other => BootError::InterventionMismatch(RecordMismatch::new(&other.to_string())),
        })?;
        let steps = self.plan.steps();
        let shown = Shown::before(&steps[restored.next], steps, &restored.ledger);
        let mut upgraded = (**record).clone();
        upgraded.shown = Some(shown.value);
        upgraded.shown_digest = Some(shown.digest);
        upgraded.shown_truncated = shown.truncated;
        // Outside a cycle: nothing of one to make durable with it, and no history entry.
        self.store.end_cycle(EndOfCycle::pausing(upgraded.clone()), CycleGuard::none()).await?;
        self.state = State::Paused(Box::new(upgraded));
        Ok(())
    }

    /// The refusal of a new cycle while `record` is paused.
    pub(super) fn paused_error(&self, record: &InterventionRecord) -> RuntimeError {
        RuntimeError::Paused {
            cycle: record.cycle,
            step_id: record.step_id.clone(),
            validator_id: record.validator.id.clone(),
            expired: record.expired_at(Timestamp::now()),
        }
    }
}

/// The override an approval gives the re-run: its validator and step, bound to what was shown.
pub(super) fn override_of(decision: &ReviewDecision) -> Override {
    let over =
        Override::new(&decision.pause.validator_id, &decision.pause.step_id, &decision.justification).by(&decision.by);
    match (&decision.edit, decision.shown_digest) {
        // An approved edit: the re-run runs its payload, bound to its digest (CONTRACT §22).
        (Some(edit), shown) => over.with_edit(edit.payload.clone(), edit.digest, shown),
        (None, Some(digest)) => over.for_shown(digest),
        (None, None) => over,
    }
}

/// The span of a run that abandons a rejected paused cycle, `abandon_workflow {mode}`: a child
/// of the paused cycle's span (kept in its record), in its trace, so the trace shows how the
/// cycle ended.
fn abandon_span(metadata: &crate::contract::plan::PlanMetadata, record: &InterventionRecord) -> tracing::Span {
    use crate::telemetry::names::*;
    let mode = crate::telemetry::name(&metadata.mode);
    let span = tracing::info_span!(
        "abandon_workflow",
        otel.name = %format_args!("abandon_workflow {mode}"),
        { GEN_AI_OPERATION_NAME } = "invoke_workflow",
        { GEN_AI_WORKFLOW_NAME } = mode,
        { GEN_AI_CONVERSATION_ID } = %record.session_id,
        { SESSION_ID } = %record.session_id,
        { OPENINFERENCE_SPAN_KIND } = "CHAIN",
        { CYCLE_NUMBER } = crate::telemetry::int(record.cycle),
        { STEP_ID } = record.step_id.as_str(),
        { VERDICT } = "rejected",
        { OUTCOME } = tracing::field::Empty,
    );
    if let Some(parent) = record.trace_parent {
        parent.adopt(&span);
    }
    span
}
