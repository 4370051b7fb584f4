//! Restoring a paused cycle from its intervention record: the steps it completed, checked again
//! against the plan, and the step it paused before or after.

use crate::contract::steps::StepResult;
use crate::exec::executor::{CycleSession, Intervention, Phase, RestoredCycle};
use crate::exec::ledger::Ledger;
use crate::exec::validator::Override;
use crate::session::{BlockPhase, InterventionRecord};
use crate::validate::{ValidPlan, check_result};

use super::Runtime;
use super::error::{HashMismatch, RecordMismatch, RuntimeError, Saved};
use crate::exec::handler::HandlerSet;
use crate::hash::profile::PolicyProfile;
use crate::hash::{HashParts, plan_hash};
use crate::session::SessionStore;

/// The cycle `record` describes in `plan`, ready to re-run its blocked step as cycle `session`.
/// The record is input (CONTRACT §11): it must name exactly the steps before the blocked one, in
/// order, each with a result that passes the checks a handler's result passes.
pub(super) fn restore_cycle(
    plan: &ValidPlan,
    record: &InterventionRecord,
    over: Option<Override>,
    session: CycleSession,
) -> Result<RestoredCycle, RuntimeError> {
    let steps = plan.steps();
    let next =
        steps.iter().position(|s| s.id == record.step_id && s.step_type() == record.step_type).ok_or_else(|| {
            let what = format!("the plan has no step `{}`", record.step_id);
            RuntimeError::InterventionMismatch(RecordMismatch::new(&what))
        })?;
    let corrupt = |what: String| RuntimeError::InterventionMismatch(RecordMismatch::new(&what));
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
        let problems = check_result(&step.payload, &result, plan.metadata());
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
    Ok(RestoredCycle { session, next, ledger, over, paused_by, trace: record.trace_parent })
}

impl<S: SessionStore, L: HandlerSet> Runtime<S, L> {
    /// The plan hash of the current policy files against the paused cycle's: a change is
    /// FailFast, naming the part that changed.
    pub(super) fn check_hash(&mut self, record: &InterventionRecord) -> Result<(), RuntimeError> {
        let profile = match PolicyProfile::load(&self.policy_root, &self.plan.metadata().policy_profile) {
            Ok(profile) => profile,
            Err(e) => return Err(self.fail(e.into())),
        };
        let current = plan_hash(&profile, &self.plan);
        if current != record.plan_hash {
            let what = self.parts.difference(&HashParts::of(&profile, &self.plan));
            let saved = Saved::PausedCycle { cycle: record.cycle };
            let (session_id, stored) = (record.session_id, record.plan_hash);
            let mismatch = HashMismatch { saved, session_id, stored, current, what };
            return Err(self.fail(RuntimeError::HashMismatch(Box::new(mismatch))));
        }
        Ok(())
    }
}
