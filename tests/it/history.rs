//! The session's cycle history (CONTRACT §15) on the file store: every finished cycle — completed,
//! paused, failed — kept with its report, bounded per session, without content unless it is
//! recorded, read back by a later process and by `planlock status --history`; its file is input
//! (a torn or edited line is skipped and counted).

use std::path::Path;

use planlock::demo::{Demo, ReviewGate};
use planlock::executor::StepStatus;
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::{CycleEnd, FileRecords, FileSessionStore, HISTORY_FILE, PREVIOUS_HISTORY_FILE, SessionRecords};
use planlock::{FailureKind, Override, StepType, ValidPlan};
use serde_json::{Value, json};

use crate::common;
use common::{Dirs, dirs, plan_with};

/// The demo plan, with the review gate (which blocks `PersistMemory`) when `reviewed`.
fn plan(reviewed: bool) -> ValidPlan {
    plan_with(|v| {
        if reviewed {
            v["validators"] = json!([ReviewGate::signature()]);
        }
        let writes = ["PersistDecision", "PersistEvidence", "LinkDecisionEvidence"];
        v["steps"].as_array_mut().unwrap().retain(|s| !writes.contains(&s["type"].as_str().unwrap()));
    })
}

fn runtime(
    d: &Dirs,
    plan: ValidPlan,
    demo: &Demo,
    keep: Option<usize>,
    content: bool,
) -> Runtime<FileSessionStore, planlock::handler::Boxed> {
    let mut builder = crate::common::demo_runtime(d, plan, demo).record_content(content);
    if let Some(keep) = keep {
        builder = builder.history(keep);
    }
    builder.boot_blocking().unwrap()
}

fn lines(root: &Path, file: &str) -> usize {
    std::fs::read_to_string(root.join(file)).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn every_finished_cycle_is_kept_with_its_steps_and_read_back_newest_first_after_a_restart() {
    let d = dirs();
    let demo = Demo::new();
    {
        // Paused by the review gate, then approved: the pause and the resumed cycle.
        let mut rt = runtime(&d, plan(true), &demo, None, false);
        assert!(matches!(rt.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
        let over = Override::new(ReviewGate::ID, "remember", "checked by hand");
        assert!(matches!(rt.resume_blocking(Some(over)).unwrap(), RunOutcome::Completed(_)));
    }
    {
        // A failing LLMCall: a failed cycle (CycleFail), kept with the failure's code and step.
        let mut rt = runtime(&d, plan(true), &Demo::new().failing([StepType::LLMCall]), None, false);
        rt.run_cycle_blocking().unwrap_err();
    }
    // Another process reads it, newest first.
    let history = planlock::block_on(FileRecords::new(d.root.path()).history(10)).unwrap();
    assert_eq!(history.unreadable, 0);
    let ends: Vec<(u64, CycleEnd)> = history.entries.iter().map(|e| (e.cycle, e.end)).collect();
    assert_eq!(ends, [(2, CycleEnd::Failed), (1, CycleEnd::Completed), (1, CycleEnd::Paused)]);
    let [failed, resumed, paused] = &history.entries[..] else { unreachable!() };
    assert!(resumed.failure.is_none() && resumed.finished_at >= resumed.started_at);
    assert!(resumed.report.steps.iter().all(|s| s.status == StepStatus::Completed));
    assert_eq!(resumed.report.overrides[0].approved.justification, "checked by hand");
    let failure = failed.failure.as_ref().unwrap();
    assert_eq!((failure.code.as_str(), failure.class), ("step-failed", FailureKind::CycleFail), "{failure:?}");
    assert_eq!(failure.step_id.as_deref(), Some("llm"));
    // What went wrong, as the error said it, kept (bounded) for the console and `status`.
    let message = failure.message.as_deref().unwrap_or_default();
    assert!(
        message.contains("llm") && message.chars().count() <= planlock::session::MAX_FAILURE_MESSAGE_CHARS,
        "{failure:?}"
    );
    assert_eq!(failed.report.steps.last().unwrap().status, StepStatus::Failed);
    // Each step by its id with its type, as people read it everywhere.
    assert_eq!(failed.report.steps.last().unwrap().label(), "llm (LLMCall)");
    assert_eq!(resumed.report.steps.last().unwrap().label(), "save (PersistSession)");
    assert_eq!(paused.report.interventions.len(), 1);
    assert_eq!(paused.report.steps.last().unwrap().status, StepStatus::Blocked);
    assert_eq!(paused.report.steps.len(), 1 + plan(true).steps().iter().position(|s| s.id == "remember").unwrap());
    assert_eq!(paused.session_id, failed.session_id);
    // The runtime reads the same history.
    let rt = runtime(&d, plan(true), &demo, None, false);
    assert_eq!(planlock::block_on(rt.history(2)).unwrap().entries, history.entries[..2]);
}

#[test]
fn an_abandoned_cycle_is_kept_once_and_its_number_runs_again() {
    let d = dirs();
    let mut rt = runtime(&d, plan(true), &Demo::new(), None, false);
    assert!(matches!(rt.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    rt.abandon_blocking().unwrap();
    assert!(matches!(rt.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
    let history = planlock::block_on(FileRecords::new(d.root.path()).history(10)).unwrap();
    let ends: Vec<(u64, CycleEnd)> = history.entries.iter().map(|e| (e.cycle, e.end)).collect();
    assert_eq!(ends, [(1, CycleEnd::Paused), (1, CycleEnd::Abandoned), (1, CycleEnd::Paused)]);
    assert!(history.entries[1].report.steps.is_empty(), "an abandoned cycle ran nothing more");
}

#[test]
fn the_history_is_bounded_and_older_cycles_go_whole() {
    let d = dirs();
    let mut rt = runtime(&d, plan(false), &Demo::new(), Some(3), false);
    for _ in 0..8 {
        assert!(matches!(rt.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
    }
    // At most 2 × keep on disk: the current file and the one before it.
    let on_disk = lines(d.root.path(), HISTORY_FILE) + lines(d.root.path(), PREVIOUS_HISTORY_FILE);
    assert!((3..=6).contains(&on_disk), "{on_disk} entries on disk");
    let cycles: Vec<u64> = planlock::block_on(rt.history(3)).unwrap().entries.iter().map(|e| e.cycle).collect();
    assert_eq!(cycles, [8, 7, 6]);
    let all = planlock::block_on(rt.history(100)).unwrap().entries;
    assert_eq!(all.first().map(|e| e.cycle), Some(8));
    assert!(all.windows(2).all(|w| w[0].cycle == w[1].cycle + 1), "contiguous, newest first");
    // keep 0: nothing is written.
    let d = dirs();
    let mut rt = runtime(&d, plan(false), &Demo::new(), Some(0), false);
    rt.run_cycle_blocking().unwrap();
    assert!(!d.root.path().join(HISTORY_FILE).exists());
}

#[test]
fn no_prompt_or_answer_is_kept_unless_content_is_recorded() {
    let answer = "(demo model) You said";
    let d = dirs();
    let mut rt = runtime(&d, plan(false), &Demo::new(), None, false);
    rt.run_cycle_blocking().unwrap();
    let text = std::fs::read_to_string(d.root.path().join(HISTORY_FILE)).unwrap();
    assert!(!text.contains(answer) && !text.contains("Answer the question"), "{text}");
    assert!(planlock::block_on(rt.history(1)).unwrap().entries[0].content.is_none());
    drop(rt);
    let mut rt = runtime(&d, plan(false), &Demo::new(), None, true);
    rt.run_cycle_blocking().unwrap();
    let entry = planlock::block_on(rt.history(1)).unwrap().entries.remove(0);
    let content = Value::Object(entry.content.expect("recorded"));
    assert!(content.to_string().contains(answer), "{content}");
}

#[test]
fn a_torn_or_edited_line_is_skipped_and_counted_and_the_next_entry_is_whole() {
    let d = dirs();
    let mut rt = runtime(&d, plan(false), &Demo::new(), None, false);
    rt.run_cycle_blocking().unwrap();
    drop(rt);
    // A crash cut the next line short, and someone wrote a line that is not an entry.
    let path = d.root.path().join(HISTORY_FILE);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("not an entry\n{\"sessionId\":\"x\"}\n{\"cycle\":2,\"end\":\"comp");
    std::fs::write(&path, text).unwrap();
    let mut rt = runtime(&d, plan(false), &Demo::new(), None, false);
    rt.run_cycle_blocking().unwrap();
    let history = planlock::block_on(rt.history(10)).unwrap();
    assert_eq!(history.entries.iter().map(|e| e.cycle).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(history.unreadable, 3, "the torn line spoils only itself");
    // A history file that is a symbolic link is not followed (read or written).
    std::fs::remove_file(&path).unwrap();
    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &path).unwrap();
    let err = planlock::block_on(rt.history(10)).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    rt.run_cycle_blocking().unwrap_err();
    assert_eq!(std::fs::read(elsewhere.path()).unwrap(), b"", "nothing written through the link");
}

#[test]
fn the_cli_shows_the_history() {
    let d = dirs();
    let mut rt = runtime(&d, plan(false), &Demo::new(), None, false);
    rt.run_cycle_blocking().unwrap();
    rt.run_cycle_blocking().unwrap();
    drop(rt);
    let cli = |args: &[&str]| {
        let out = crate::common::cli::planlock().args(args).arg("--root").arg(d.root.path()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&cli(&["status", "--history", "1", "--format", "json"])).unwrap();
    let history = json["history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!((history[0]["cycle"].as_u64(), history[0]["end"].as_str()), (Some(2), Some("completed")));
    assert!(history[0]["report"]["steps"].as_array().unwrap().len() > 5);
    let text = cli(&["status", "--history", "5"]);
    assert!(text.contains("history: 2 finished cycles") && text.contains("cycle 1 completed"), "{text}");
    // Without the flag the report is as it was.
    let json: Value = serde_json::from_str(&cli(&["status", "--format", "json"])).unwrap();
    assert!(json.get("history").is_none());
}
