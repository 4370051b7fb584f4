//! The runtime's half of the cycle history (CONTRACT §15): the entry a finished cycle leaves,
//! built from how it ended, and kept: it goes with the end of its cycle, by value
//! ([`EndOfCycle::with_entry`]; a store that commits the cycle's writes keeps it in the same
//! transaction).

use serde_json::{Map, Value};

use super::error::RuntimeError;
use super::{RunOutcome, Runtime, State};
use crate::exec::executor::{Completed, CycleReport, CycleSession, ExecError};
use crate::exec::handler::HandlerSet;
use crate::session::{
    CycleEnd, CycleEntry, CycleFailure, CycleGuard, DEFAULT_KEEP, EndOfCycle, History, HistoryEntry,
    InterventionRecord, Leaves, SessionStore, Timestamp,
};
use crate::validate::ValidPlan;

/// What the runtime keeps of its cycles: how many, and whether with their content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HistoryOptions {
    /// The finished cycles kept per session (0: none).
    pub(super) keep: usize,
    /// Whether an entry carries its steps' results (prompts, answers, memory text).
    pub(super) content: bool,
}

impl Default for HistoryOptions {
    fn default() -> Self {
        HistoryOptions { keep: DEFAULT_KEEP, content: false }
    }
}

/// The entry of a cycle of `plan` that ran as `session` from `started` and completed.
pub(super) fn completed(
    plan: &ValidPlan,
    session: CycleSession,
    started: Timestamp,
    done: &Completed,
    options: HistoryOptions,
) -> CycleEntry {
    let content = options.content.then(|| {
        let results = plan.steps().iter().filter_map(|step| {
            let result = serde_json::to_value(done.ledger.by_type(step.step_type())?).ok()?;
            Some((step.id.clone(), result))
        });
        results.collect::<Map<String, Value>>()
    });
    entry(session, started, CycleEnd::Completed, done.report.clone(), None, content)
}

/// The entry of a cycle that paused with `record`, having done what `report` says.
pub(super) fn paused(
    session: CycleSession,
    started: Timestamp,
    record: &InterventionRecord,
    report: &CycleReport,
    options: HistoryOptions,
) -> CycleEntry {
    let content =
        options.content.then(|| record.completed.iter().map(|step| (step.id.clone(), step.result.clone())).collect());
    entry(session, started, CycleEnd::Paused, report.clone(), None, content)
}

/// The entry of a cycle that failed with `e`.
pub(super) fn failed(session: CycleSession, started: Timestamp, e: &RuntimeError) -> CycleEntry {
    let failure = CycleFailure::of(e, failed_step(e));
    entry(session, started, CycleEnd::Failed, e.report().cloned().unwrap_or_default(), Some(failure), None)
}

fn entry(
    session: CycleSession,
    started: Timestamp,
    end: CycleEnd,
    report: CycleReport,
    failure: Option<CycleFailure>,
    content: Option<Map<String, Value>>,
) -> CycleEntry {
    CycleEntry {
        session_id: session.session_id,
        cycle: session.cycle,
        plan_hash: session.plan_hash,
        end,
        started_at: started,
        finished_at: Timestamp::now(),
        report,
        failure,
        content,
        truncated: false,
    }
}

/// The entry of the paused cycle `record`, abandoned (on a person's decision, or by `planlock
/// abandon`): the approval log holds who and why.
pub(super) fn abandoned(session: CycleSession, record: &InterventionRecord) -> CycleEntry {
    let report = CycleReport { trace_id: record.trace_parent.map(|t| t.trace_id()), ..CycleReport::default() };
    entry(session, Timestamp::now(), CycleEnd::Abandoned, report, None, None)
}

/// The step a failure stopped at, when one did.
fn failed_step(e: &RuntimeError) -> Option<String> {
    match e {
        RuntimeError::Exec(ExecError::StepFailed { step_id, .. } | ExecError::ValidatorPanicked { step_id, .. }) => {
            Some(step_id.clone())
        }
        _ => None,
    }
}

/// A cycle as the call that runs it keeps it, a local of that call (the runtime holds no cycle's
/// state): its number, and when it started.
pub(super) struct CycleRun {
    pub(super) cycle: u64,
    pub(super) started: Timestamp,
}

impl CycleRun {
    /// Cycle `cycle`, starting now.
    pub(super) fn new(cycle: u64) -> CycleRun {
        CycleRun { cycle, started: Timestamp::now() }
    }
}

impl<S: SessionStore, L: HandlerSet> Runtime<S, L> {
    /// Ends a failed cycle with `end` (nothing changed, or its pause given up), keeping its
    /// history entry, and returns how it ended: a completed or paused cycle's end went with it.
    /// A failed cycle's own error stands over its entry's; one whose pause cannot be given up
    /// durably halts the runtime (a store failure, FailFast), else the runtime is ready for the
    /// same cycle number.
    pub(super) async fn record(
        &mut self,
        run: CycleRun,
        settled: Result<RunOutcome, RuntimeError>,
        end: EndOfCycle,
    ) -> Result<RunOutcome, RuntimeError> {
        let (session, started) = (self.cycle_session(run.cycle), run.started);
        let entry = match &settled {
            // Its entry was kept when it ended, or when it was abandoned.
            Ok(_) => return settled,
            Err(e) => failed(session, started, e),
        };
        let unpauses = end.leaves == Leaves::Unpaused;
        let end = end.with_entry(self.to_keep(entry));
        if end.entry.is_none() && !unpauses {
            return settled;
        }
        match self.store.end_cycle(end, CycleGuard::none()).await {
            Err(e) if unpauses => Err(self.fail(e.into())),
            Ok(_) if unpauses => {
                self.state = State::Ready;
                settled
            }
            _ => settled,
        }
    }

    /// The cycle's history entry as it goes with the end of its cycle, with how many to keep (none when no
    /// history is kept).
    pub(super) fn to_keep(&self, entry: CycleEntry) -> Option<HistoryEntry> {
        match self.history.keep {
            0 => None,
            keep => Some((entry, keep)),
        }
    }

    /// The session's last `limit` finished cycles, newest first (CONTRACT §15): each one's
    /// report, how it ended and when. Read from the store, so a restarted runtime sees the cycles
    /// of the processes before it.
    pub async fn history(&self, limit: usize) -> Result<History, RuntimeError> {
        Ok(self.store.records().history(limit).await?)
    }
}
