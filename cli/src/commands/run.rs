//! `planlock run` and `planlock resume`: boot a session with the demo handlers (a real model when
//! asked for) and run its next cycle, or resume its paused one.

use std::path::PathBuf;

use planlock::executor::StepStatus as ReportStatus;
use planlock::review::DecideError;
use planlock::runtime::{Boot, RunOutcome, RuntimeError, Status};
use planlock::{Failure, FailureKind, Override};

use crate::args::CycleArgs;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_INTERVENTION, EXIT_USAGE, EXIT_VALID, class_exit};
use crate::output::Output;
use crate::report::{BootCleanup, Leftover, ModelInfo, RunReport, StepStatus, Usage};
use crate::runtime::{self, Built};

/// Boots the session with the demo handlers and runs its next cycle, or resumes its paused one
/// with `over`. Every outcome, failures included, is the report.
pub fn run(out: &mut Output, c: CycleArgs, over: Option<Override>) -> Result<u8, CliError> {
    let (report, exit) = match cycle(&c, over) {
        Ok(done) => done,
        Err(Stopped { error, outcome, problems }) => {
            let mut report = RunReport::failed(outcome, error.code, error.message);
            report.problems = problems;
            (report, error.exit)
        }
    };
    out.report(&report);
    Ok(exit)
}

/// A run that stopped before its cycle: the error, the outcome it reports (the failure's class,
/// or `error` for usage and I/O), and a rejected plan's problems.
struct Stopped {
    error: CliError,
    outcome: &'static str,
    problems: Vec<planlock::Problem>,
}

impl From<CliError> for Stopped {
    /// The outcome the error's exit code says: the outcome, the exit code and the class agree
    /// (an embedder that fails at the probe exits with the class of the first step that asks
    /// it, and its outcome names that class).
    fn from(error: CliError) -> Stopped {
        let outcome = match error.exit {
            EXIT_USAGE => "error",
            EXIT_CYCLE_FAIL => FailureKind::CycleFail.as_str(),
            _ => FailureKind::FailFast.as_str(),
        };
        Stopped { error, outcome, problems: vec![] }
    }
}

fn cycle(c: &CycleArgs, over: Option<Override>) -> Result<(RunReport, u8), Stopped> {
    let plan = super::load_plan(&c.plan).map_err(|failure| Stopped {
        outcome: failure.class.map_or("error", FailureKind::as_str),
        error: failure.error,
        problems: failure.problems,
    })?;
    // Relative `repoPath`s mean the directory that holds the plan, wherever planlock runs.
    let plan_dir = match c.plan.parent() {
        Some(dir) if c.plan.as_os_str() != "-" && !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let place = c.place.locate()?;
    let args = c.runtime.args(&c.fail, plan_dir);
    let manifest = runtime::manifest(&args, place.backend.as_ref())?;
    // `run` may create the root itself; nothing under it is created at boot.
    if over.is_none()
        && let Some(root) = &c.place.root
        && let Err(e) = std::fs::create_dir_all(root)
    {
        let message = format!("cannot create the session root {}: {e}", root.display());
        return Err(CliError::usage("cannot-create-root", message).into());
    }
    let Built { builder, mut model, embedder } = runtime::build(&args, manifest, plan, || place.open())?;
    let runtime = builder.boot_blocking();
    let mut runtime =
        runtime.map_err(|e| Stopped { outcome: e.kind().as_str(), error: CliError::of(&e), problems: vec![] })?;
    let boot = match (runtime.boot_kind(), runtime.status()) {
        (_, Status::Paused) => "paused",
        (Boot::ColdStart, _) => "cold",
        (Boot::Resume(_), _) => "resume",
    };
    let cycle = runtime.cycle() + 1;
    let outcome = match over {
        None => runtime.run_cycle_blocking(),
        Some(over) => runtime.resume_blocking(Some(over)),
    };
    // What ran is the cycle's report: a completed, paused or failed cycle's (a rejection and a
    // pause waiting for a person ran nothing).
    let ran = match &outcome {
        Ok(outcome) => outcome.report(),
        Err(e) => e.report(),
    };
    // The tokens the server reported for this cycle, as its steps recorded them.
    if let ModelInfo::Openai { usage, .. } = &mut model {
        let used = ran.and_then(|r| r.usage()).unwrap_or_default();
        *usage = Some(Usage { input_tokens: used.input, output_tokens: used.output });
    }
    // Each step as the report has it; one it does not name completed before the pause this run
    // resumed (restored, not run again), or never ran.
    let resumed_at = ran.and_then(|r| r.steps.first()).map_or(0, |first| first.index);
    let ran_status = |i: usize| match ran.and_then(|r| r.status_of(i)) {
        Some(ReportStatus::Completed) => "completed",
        Some(ReportStatus::Blocked) => "blocked",
        Some(ReportStatus::Failed) => "failed",
        None if i < resumed_at => "completed",
        None => "not-run",
    };
    let steps_of = |statuses: &dyn Fn(usize) -> &'static str| -> Vec<StepStatus> {
        let steps = runtime.plan().steps().iter().enumerate();
        steps
            .map(|(i, s)| StepStatus { id: s.id.clone(), step_type: s.step_type().wire_name(), status: statuses(i) })
            .collect()
    };
    let mut report = RunReport {
        boot: Some(boot),
        model: Some(model),
        embedder,
        outcome: "completed",
        hash: Some(runtime.plan_hash().to_string()),
        cycle: Some(cycle),
        steps: vec![],
        error: None,
        error_code: None,
        problems: vec![],
        intervention: None,
        abandoned: None,
        boot_cleanup: runtime.removed_leftover().map(|r| BootCleanup { removed_record: Leftover::of(r) }),
        to_decide: None,
    };
    let ran_steps = steps_of(&ran_status);
    let exit = match outcome {
        Ok(RunOutcome::Completed(_)) => {
            report.steps = ran_steps;
            EXIT_VALID
        }
        Ok(RunOutcome::Paused { record, .. }) => {
            report.steps = ran_steps;
            report.outcome = "InterventionRequired";
            report.error = Some(record.reason.clone());
            report.intervention = Some(record);
            EXIT_INTERVENTION
        }
        // A reviewer rejected the paused cycle: it is abandoned, nothing ran.
        Ok(RunOutcome::Abandoned(record)) => {
            report.steps = ran_steps;
            report.outcome = "abandoned";
            report.error = Some(format!(
                "the reviewer rejected cycle {} paused at step `{}`; it is abandoned, and the next run runs it again",
                record.cycle, record.step_id
            ));
            report.error_code = Some("rejected");
            // The pause is gone: what can be done is to run again (the record stays in the
            // JSON report as what was abandoned), not to resume it.
            report.abandoned = Some(*record);
            EXIT_CYCLE_FAIL
        }
        // The session waits for a person: nothing ran; the pause is the answer (exit 4). So it
        // is for `resume --approve` by one person of several: recorded, waiting for the rest.
        Err(e) if waits_for_a_person(&e) => {
            let record = runtime.pending().cloned();
            if let Some(record) = &record {
                report.steps = steps_of(&paused_at(runtime.plan(), record));
            }
            report.outcome = "InterventionRequired";
            report.error = Some(e.to_string());
            report.error_code = Some(e.code());
            report.intervention = record;
            EXIT_INTERVENTION
        }
        Err(e) => {
            report.steps = ran_steps;
            report.outcome = e.kind().as_str();
            report.error = Some(e.to_string());
            report.error_code = Some(e.code());
            class_exit(e.kind())
        }
    };
    if report.intervention.is_some() {
        report.to_decide = Some(c.place.decide_command());
    }
    Ok((report, exit))
}

/// Whether `e` leaves the cycle paused for a person: a run while it waits, an approval that
/// counted toward several and is not yet complete, or one by a person who approved already.
fn waits_for_a_person(e: &RuntimeError) -> bool {
    match e {
        RuntimeError::Paused { .. } => true,
        RuntimeError::Decision(d) => {
            matches!(**d, DecideError::Incomplete { .. } | DecideError::AlreadyApproved { .. })
        }
        _ => false,
    }
}

/// Each step's status in a cycle paused at `record`'s step: completed before it, blocked, not run
/// after it.
fn paused_at(
    plan: &planlock::ValidPlan,
    record: &planlock::session::InterventionRecord,
) -> impl Fn(usize) -> &'static str {
    let at = plan.steps().iter().position(|s| s.id == record.step_id).unwrap_or(0);
    move |i: usize| match i.cmp(&at) {
        std::cmp::Ordering::Less => "completed",
        std::cmp::Ordering::Equal => "blocked",
        std::cmp::Ordering::Greater => "not-run",
    }
}
