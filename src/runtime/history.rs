//! The runtime's half of the cycle history (CONTRACT §15): the entry a finished cycle leaves,
//! built from how it ended. A completed or paused cycle's goes with its save, on the cycle's
//! guard (a store that commits the cycle's writes keeps it in the same transaction); any other,
//! and one no store took, is kept after ([`SessionStore::record_cycle`](crate::session::SessionStore::record_cycle)).

use serde_json::{Map, Value};

use super::error::RuntimeError;
use crate::contract::registry::Failure;
use crate::exec::executor::{Completed, CycleReport, CycleSession, ExecError};
use crate::session::{CycleEnd, CycleEntry, CycleFailure, DEFAULT_KEEP, InterventionRecord, Timestamp};
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
    let failure = CycleFailure { code: e.code().to_owned(), class: e.kind(), step_id: failed_step(e) };
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

/// The step a failure stopped at, when one did.
fn failed_step(e: &RuntimeError) -> Option<String> {
    match e {
        RuntimeError::Exec(ExecError::StepFailed { step_id, .. } | ExecError::ValidatorPanicked { step_id, .. }) => {
            Some(step_id.clone())
        }
        _ => None,
    }
}
