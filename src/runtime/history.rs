//! The runtime's half of the cycle history (CONTRACT §15): the entry a finished cycle leaves,
//! built from how it ended; the store keeps it ([`SessionStore::record_cycle`]).

use serde_json::{Map, Value};

use super::RunOutcome;
use super::error::RuntimeError;
use crate::contract::registry::Failure;
use crate::exec::executor::{CycleReport, CycleSession, ExecError};
use crate::session::{CycleEnd, CycleEntry, CycleFailure, DEFAULT_KEEP, Timestamp};
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

/// The entry of a cycle of `plan` that ran as `session` from `started` and ended as `settled`;
/// `None` for an outcome that ran no cycle (a rejection).
pub(super) fn entry_of(
    plan: &ValidPlan,
    session: CycleSession,
    started: Timestamp,
    settled: &Result<RunOutcome, RuntimeError>,
    options: HistoryOptions,
) -> Option<CycleEntry> {
    let (end, report, failure, content) = match settled {
        Ok(RunOutcome::Completed(done)) => {
            let content = options.content.then(|| {
                let results = plan.steps().iter().filter_map(|step| {
                    let result = serde_json::to_value(done.ledger.by_type(step.step_type())?).ok()?;
                    Some((step.id.clone(), result))
                });
                results.collect::<Map<String, Value>>()
            });
            (CycleEnd::Completed, done.report.clone(), None, content)
        }
        Ok(RunOutcome::Paused { record, report }) => {
            let content = options
                .content
                .then(|| record.completed.iter().map(|step| (step.id.clone(), step.result.clone())).collect());
            (CycleEnd::Paused, report.clone(), None, content)
        }
        Ok(RunOutcome::Abandoned(_)) => return None,
        Err(e) => {
            let failure = CycleFailure { code: e.code().to_owned(), class: e.kind(), step_id: failed_step(e) };
            (CycleEnd::Failed, e.report().cloned().unwrap_or_else(CycleReport::default), Some(failure), None)
        }
    };
    Some(CycleEntry {
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
    })
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
