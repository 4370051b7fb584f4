//! The person who approves (CONTRACT §14), on session files: the record shows what is being
//! approved and binds the approval to it; a decision is made from any process, once per pause,
//! and the runtime acts on it at its next cycle; every decision and its outcome go to the
//! approval log once; a pause expires. The crash windows are in `tests/crash_points.rs`, the
//! PostgreSQL side in `tests/postgres/approvals.rs`.
#![cfg(unix)]

use planlock::block_on;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use planlock::demo::Demo;
use planlock::executor::Shown;
use planlock::handler::Boxed;
use planlock::review::inbox::{Inbox, InboxFilter};
use planlock::runtime::{RunOutcome, Runtime, RuntimeError};
use planlock::schema::*;
use planlock::session::{
    ApprovalEvent, FileRecords, FileSessionStore, InterventionRecord, Recorded, ReviewDecision, ReviewVerdict,
    SessionRecords,
};

use planlock::review::decide;
use planlock::steps::*;
use planlock::{
    Digest, Failure, Handler, HandlerError, Override, StepContext, StepView, ValidPlan, Validator, Verdict,
};
use serde_json::{Value, json};

use crate::common;
use common::{plan_with, policy};

type TestRuntime = Runtime<FileSessionStore, Boxed>;

/// Blocks `LLMCall` after it ran (a post-validator on answers), or every storage write before
/// it (a pre-validator), allowing what contains `allow` when given.
#[derive(Clone, Default)]
struct Gate {
    allow: Option<&'static str>,
}

impl Validator for Gate {
    fn before(&self, step: &StepView<'_>) -> Verdict {
        match step.step_type {
            planlock::StepType::PersistMemory => Verdict::Block("a write needs a person".into()),
            _ => Verdict::Allow,
        }
    }
    fn after(&self, step: &StepView<'_>, result: &planlock::StepResult) -> Verdict {
        let answer = match result {
            planlock::StepResult::LLMCall(r) if step.step_type == planlock::StepType::LLMCall => &r.response,
            _ => return Verdict::Allow,
        };
        match self.allow {
            Some(ok) if answer.contains(ok) => Verdict::Allow,
            _ => Verdict::Block(format!("review the answer `{answer}`")),
        }
    }
}

/// A model whose answer changes on every call (`answer 1`, `answer 2`, …), or stays the same.
#[derive(Clone)]
struct Model {
    calls: Arc<AtomicU64>,
    changes: bool,
    long: bool,
}

impl Handler<LLMCall> for Model {
    async fn call(&self, _: &StepContext<'_>, _: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let n = if self.changes { n } else { 1 };
        let response = if self.long { format!("answer {n} {}", "x".repeat(70 << 10)) } else { format!("answer {n}") };
        Ok(LlmCallResult { response })
    }
}

pub(crate) struct Session {
    pub(crate) policy: tempfile::TempDir,
    pub(crate) sessions: tempfile::TempDir,
}

impl Session {
    fn new() -> Session {
        let s = Session { policy: tempfile::tempdir().unwrap(), sessions: tempfile::tempdir().unwrap() };
        policy(s.policy.path(), "friendly");
        std::fs::create_dir(s.root()).unwrap();
        s
    }

    pub(crate) fn root(&self) -> std::path::PathBuf {
        self.sessions.path().join("s1")
    }

    fn records(&self) -> FileRecords {
        FileRecords::new(self.root())
    }

    /// A runtime whose pre-validator (`pre`) or post-validator (otherwise) is `gate`.
    fn boot(&self, gate: Gate, model: &Model, pre: bool, ttl: Option<Duration>) -> TestRuntime {
        let plan = plan(pre);
        let handlers = Demo::new().handlers().on::<LLMCall>(model.clone()).boxed();
        let builder = crate::common::runtime_on(self.policy.path(), &self.root(), plan).handlers(handlers).validator(
            "gate",
            "1",
            &json!({}),
            gate,
        );
        match ttl {
            Some(ttl) => builder.approval_ttl(ttl),
            None => builder,
        }
        .boot_blocking()
        .unwrap()
    }

    fn log(&self) -> Vec<ApprovalEvent> {
        block_on(self.records().approval_log()).unwrap().events
    }
}

fn model(changes: bool) -> Model {
    Model { calls: Arc::default(), changes, long: false }
}

/// The demo plan with the gate as a pre- or a post-validator.
fn plan(pre: bool) -> ValidPlan {
    let signature =
        json!([{ "id": "gate", "version": "1", "config_hash": planlock::config_hash(&json!({})).to_string() }]);
    plan_with(move |v| {
        let list = if pre { "validators" } else { "postValidators" };
        v[list] = signature;
    })
}

fn paused(outcome: Result<RunOutcome, RuntimeError>) -> InterventionRecord {
    match outcome {
        Ok(RunOutcome::Paused { record, .. }) => record,
        other => panic!("expected a pause, got {other:?}"),
    }
}

fn completed(outcome: Result<RunOutcome, RuntimeError>) -> planlock::Completed {
    match outcome {
        Ok(RunOutcome::Completed(done)) => done,
        other => panic!("expected a completed cycle, got {other:?}"),
    }
}

fn events(log: &[ApprovalEvent]) -> Vec<&'static str> {
    log.iter().map(ApprovalEvent::name).collect()
}

#[test]
fn the_record_shows_what_is_being_approved_and_its_digest() {
    // Before the step: its payload and the results it may read.
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let record = paused(rt.run_cycle_blocking());
    let shown = record.shown.clone().unwrap();
    assert_eq!(shown["payload"]["summary"], "key rotation", "{shown}");
    assert_eq!(shown["results"]["llm"]["response"], "answer 1");
    assert!(shown["results"].get("remember").is_none(), "only the steps before it");
    let digest = Digest::of(&planlock::canonical_json(&shown).unwrap());
    assert_eq!(record.shown_digest, Some(digest), "SHA-256 of its canonical JSON");
    assert!(!record.shown_truncated);
    // After the step: its result, which the cycle does not keep.
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), false, None);
    let record = paused(rt.run_cycle_blocking());
    assert_eq!(record.shown, Some(json!({ "response": "answer 1" })));
    // Past 64 KiB: cut, the digest still the whole's.
    let s = Session::new();
    let long = Model { long: true, ..model(false) };
    let mut rt = s.boot(Gate::default(), &long, false, None);
    let record = paused(rt.run_cycle_blocking());
    assert!(record.shown_truncated);
    let Some(Value::String(start)) = &record.shown else { panic!("kept as the start of its text") };
    assert!(start.len() <= planlock::executor::MAX_SHOWN_BYTES && start.starts_with("{\"response\":\"answer 1 xxx"));
    let whole = Shown::of(json!({ "response": format!("answer 1 {}", "x".repeat(70 << 10)) }));
    assert_eq!(record.shown_digest, Some(whole.digest));
}

#[test]
fn an_approval_applies_while_the_rerun_meets_what_was_approved() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), false, None);
    let record = paused(rt.run_cycle_blocking());
    // Approved from another process (the records, without the lock the runtime holds).
    let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "the answer is fine");
    assert_eq!(block_on(decide(&s.records(), &decision)).unwrap(), Recorded::New);
    // The runtime acts on it at its next cycle: the re-run meets the same answer, and the cycle
    // completes without a second pause.
    let done = completed(rt.run_cycle_blocking());
    assert_eq!(done.report.overrides.len(), 1);
    assert_eq!(done.report.overrides[0].approved.by.as_deref(), Some("ada"));
    assert_eq!(done.report.overrides[0].approved.shown_digest, record.shown_digest);
    assert!(rt.pending().is_none());
    assert_eq!(events(&s.log()), ["decided", "consumed"]);
}

#[test]
fn an_approval_of_something_else_is_stale_and_the_validator_judges_what_is_there() {
    // The model answers differently on the re-run: the approval does not carry over; the
    // validator blocks the new answer, and the new record shows it.
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(true), false, None);
    let first = paused(rt.run_cycle_blocking());
    block_on(decide(&s.records(), &ReviewDecision::new(&first, ReviewVerdict::Approve, "ada", "answer 1 is fine")))
        .unwrap();
    let second = paused(rt.run_cycle_blocking());
    assert_eq!(second.shown, Some(json!({ "response": "answer 2" })), "the new answer, for review");
    assert_ne!(second.shown_digest, first.shown_digest);
    assert_ne!(second.created_at, first.created_at, "another pause");
    let log = s.log();
    assert_eq!(events(&log), ["decided", "stale"]);
    let ApprovalEvent::Stale { met, .. } = &log[1] else { unreachable!() };
    assert_eq!(Some(*met), second.shown_digest);
    // The same validator allowing the new answer: it passes without the approval.
    let s = Session::new();
    let mut rt = s.boot(Gate { allow: Some("answer 2") }, &model(true), false, None);
    let first = paused(rt.run_cycle_blocking());
    block_on(decide(&s.records(), &ReviewDecision::new(&first, ReviewVerdict::Approve, "ada", "fine"))).unwrap();
    let done = completed(rt.run_cycle_blocking());
    assert!(done.report.overrides.is_empty(), "the approval was not used");
    assert_eq!(events(&s.log()), ["decided", "superseded"]);
    // An override given in process, bound to an old digest, is stale too (`resume`).
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(true), false, None);
    let first = paused(rt.run_cycle_blocking());
    let over = Override::new("gate", "llm", "fine").by("ada").for_shown(first.shown_digest.unwrap());
    let again = paused(rt.resume_blocking(Some(over)));
    assert_eq!(again.shown, Some(json!({ "response": "answer 2" })));
}

#[test]
fn a_rejection_abandons_the_paused_cycle() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let record = paused(rt.run_cycle_blocking());
    block_on(decide(&s.records(), &ReviewDecision::new(&record, ReviewVerdict::Reject, "bob", "not this memory")))
        .unwrap();
    match rt.run_cycle_blocking() {
        Ok(RunOutcome::Abandoned(abandoned)) => assert_eq!(abandoned.cycle, 1),
        other => panic!("expected the cycle abandoned, got {other:?}"),
    }
    assert_eq!(rt.cycle(), 0, "the session as it was");
    assert_eq!(events(&s.log()), ["decided", "abandoned"]);
    // The next cycle runs the same number again, and pauses again (a new pause, undecided).
    let again = paused(rt.run_cycle_blocking());
    assert_eq!(again.cycle, 1);
    assert!(matches!(rt.run_cycle_blocking(), Err(RuntimeError::Paused { .. })));
}

#[test]
fn one_decision_per_pause_even_when_two_decide_at_once() {
    for round in 0..40 {
        let s = Session::new();
        let mut rt = s.boot(Gate::default(), &model(false), true, None);
        let record = paused(rt.run_cycle_blocking());
        let barrier = Arc::new(Barrier::new(2));
        let deciders: Vec<_> = [ReviewVerdict::Approve, ReviewVerdict::Reject]
            .into_iter()
            .map(|verdict| {
                let (barrier, record, root) = (barrier.clone(), record.clone(), s.root());
                std::thread::spawn(move || {
                    let decision = ReviewDecision::new(&record, verdict, format!("{verdict}er"), "decided");
                    barrier.wait();
                    block_on(decide(&FileRecords::new(root), &decision))
                })
            })
            .collect();
        let results: Vec<_> = deciders.into_iter().map(|d| d.join().unwrap()).collect();
        let won = results.iter().filter(|r| matches!(r, Ok(Recorded::New))).count();
        let lost: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).map(|e| e.code()).collect();
        assert_eq!((won, lost.as_slice()), (1, &["already-decided"][..]), "round {round}: {results:?}");
        assert_eq!(events(&s.log()), ["decided"], "round {round}: the winner's decision alone");
        // The same decision again changes nothing.
        let recorded = block_on(s.records().decision_on(&planlock::session::PauseRef::of(&record))).unwrap().unwrap();
        assert_eq!(
            block_on(decide(&s.records(), &ReviewDecision { at: planlock::session::Timestamp::now(), ..recorded }))
                .unwrap(),
            Recorded::Again
        );
        assert_eq!(s.log().len(), 1);
    }
}

#[test]
fn a_decision_must_name_the_pause_and_what_it_shows() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let record = paused(rt.run_cycle_blocking());
    let mut other_digest = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "fine");
    other_digest.shown_digest = Some(Digest::of(b"something else"));
    assert_eq!(block_on(decide(&s.records(), &other_digest)).unwrap_err().code(), "digest-mismatch");
    let mut other_pause = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "fine");
    other_pause.pause.cycle = 7;
    assert_eq!(block_on(decide(&s.records(), &other_pause)).unwrap_err().code(), "pause-ended");
    for (by, why) in [("", "fine"), ("ada", "\u{200b}\u{202e}")] {
        let blank = ReviewDecision::new(&record, ReviewVerdict::Approve, by, why);
        assert_eq!(block_on(decide(&s.records(), &blank)).unwrap_err().code(), "decision-invalid");
    }
    assert!(s.log().is_empty(), "nothing recorded");
}

#[test]
fn an_expired_pause_can_only_be_abandoned_and_lists_as_expired() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, Some(Duration::from_millis(1)));
    let record = paused(rt.run_cycle_blocking());
    assert!(record.expires_at.is_some());
    std::thread::sleep(Duration::from_millis(20));
    let late = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "too late");
    assert_eq!(block_on(decide(&s.records(), &late)).unwrap_err().code(), "approval-expired");
    let err = rt.resume_blocking(Some(Override::new("gate", "remember", "too late"))).unwrap_err();
    assert_eq!(err.code(), "approval-expired", "{err}");
    let err = rt.run_cycle_blocking().unwrap_err();
    assert!(err.to_string().contains("expired: abandon it"), "{err}");
    let inbox = Inbox::new(planlock::backend::FilesBackend::new(s.sessions.path().to_owned()));
    let expired = block_on(inbox.list(&InboxFilter { expired: Some(true), ..InboxFilter::default() })).unwrap();
    assert_eq!(expired.pauses.len(), 1);
    assert!(expired.pauses[0].expired);
    assert!(
        block_on(inbox.list(&InboxFilter { expired: Some(false), ..InboxFilter::default() }))
            .unwrap()
            .pauses
            .is_empty()
    );
    rt.abandon_blocking().unwrap();
    assert_eq!(events(&s.log()), ["abandoned"]);
}

#[test]
fn the_cli_decides_from_the_inbox_and_the_next_run_goes_on() {
    let s = Session::new();
    let plan = reviewed_plan_file(&s);
    let cli = |args: &[&str]| {
        let out = crate::common::cli::planlock().args(args).output().unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), json, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (root, pol, dir) = (s.root(), s.policy.path().to_owned(), s.sessions.path().to_owned());
    let (root, pol, dir, plan) =
        (root.to_str().unwrap(), pol.to_str().unwrap(), dir.to_str().unwrap(), plan.to_str().unwrap());
    let run = ["run", "--format", "json", "--root", root, "--policy-root", pol, plan];
    assert_eq!(cli(&run).0, Some(4));
    let (code, list, _) = cli(&["inbox", "list", "--format", "json", "--sessions", dir]);
    assert_eq!(code, Some(0), "{list}");
    assert_eq!(list["pauses"][0]["session"], "s1");
    assert_eq!(list["pauses"][0]["record"]["stepId"], "remember");
    let digest = list["pauses"][0]["record"]["shownDigest"].as_str().unwrap().to_owned();
    let (code, show, _) = cli(&["inbox", "show", "--format", "json", "--sessions", dir, "s1"]);
    assert_eq!((code, &show["record"]["shown"]["payload"]["summary"]), (Some(0), &json!("key rotation")));
    // A wrong digest is refused; the shown one is recorded; a different decision after it is not.
    let approve =
        ["inbox", "approve", "--format", "json", "--sessions", dir, "--by", "ada", "--reason", "no personal data"];
    let wrong = cli(&[&approve[..], &["--digest", &"0".repeat(64), "s1"]].concat());
    assert_eq!((wrong.0, &wrong.1["errorCode"]), (Some(1), &json!("digest-mismatch")));
    let (code, decided, _) = cli(&[&approve[..], &["--digest", &digest, "s1"]].concat());
    assert_eq!((code, &decided["decision"]["verdict"]), (Some(0), &json!("approve")), "{decided}");
    let reject = ["inbox", "reject", "--format", "json", "--sessions", dir, "--by", "bob", "--reason", "no", "s1"];
    let (code, refused, _) = cli(&reject);
    assert_eq!((code, &refused["errorCode"]), (Some(1), &json!("already-decided")));
    // The next run resumes with the approval and completes.
    let (code, report, _) = cli(&run);
    assert_eq!((code, &report["outcome"]), (Some(0), &json!("completed")), "{report}");
    let (_, log, _) = cli(&["inbox", "log", "--format", "json", "--sessions", dir, "s1"]);
    let names: Vec<&str> = log["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["decided", "consumed"]);
    assert!(cli(&["inbox", "list", "--format", "json", "--sessions", dir]).1["pauses"].as_array().unwrap().is_empty());
    // `planlock abandon` gives a pause up as a runtime does: its outcome is in the log too.
    assert_eq!(cli(&run).0, Some(4), "cycle 2 pauses");
    let (code, abandoned, _) = cli(&["abandon", "--format", "json", "--root", root]);
    assert_eq!((code, &abandoned["abandonedCycle"]), (Some(0), &json!(2)), "{abandoned}");
    let (_, log, _) = cli(&["inbox", "log", "--format", "json", "--sessions", dir, "s1"]);
    let names: Vec<&str> = log["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["decided", "consumed", "abandoned"]);
}

/// A model server whose answer changes on every request: the approval of the first answer does
/// not apply to the second; the validator blocks it, and the new record shows it for review.
#[test]
fn a_server_whose_answer_changes_is_judged_again() {
    use planlock::handlers::{ModelConfig, OpenAiModel};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};
    struct Counting(AtomicU64);
    impl Respond for Counting {
        fn respond(&self, _: &Request) -> ResponseTemplate {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            let body = json!({ "model": "m", "choices": [ { "message": { "role": "assistant", "content": format!("answer {n}") } } ] });
            ResponseTemplate::new(200).set_body_json(body)
        }
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(wiremock::matchers::method("POST")).respond_with(Counting(AtomicU64::new(0))).mount(&server),
    );
    let s = Session::new();
    let model = OpenAiModel::new(ModelConfig::new(format!("{}/v1", server.uri()), "m"));
    let handlers = Demo::new().handlers().on::<LLMCall>(model).boxed();
    let mut runtime = crate::common::runtime_on(s.policy.path(), &s.root(), plan(false))
        .handlers(handlers)
        .validator("gate", "1", &json!({}), Gate::default())
        .boot_blocking()
        .unwrap();
    let first = paused(runtime.run_cycle_blocking());
    assert_eq!(first.shown, Some(json!({ "response": "answer 1" })));
    block_on(decide(&s.records(), &ReviewDecision::new(&first, ReviewVerdict::Approve, "ada", "answer 1 is fine")))
        .unwrap();
    let second = paused(runtime.run_cycle_blocking());
    assert_eq!(second.shown, Some(json!({ "response": "answer 2" })), "the new answer, shown for review");
    assert_eq!(events(&s.log()), ["decided", "stale"]);
    // Both requests carried the same seed: the server, not planlock, changed its answer.
    let seeds: Vec<Value> = rt
        .block_on(server.received_requests())
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["seed"].clone())
        .collect();
    assert_eq!(seeds.len(), 2);
    assert_eq!(seeds[0], seeds[1]);
}

/// The CLI on a paused session: `(exit code, JSON report)` of `planlock args…` under `limit`
/// (a file size limit in bytes, SIGXFSZ ignored, so a write past it fails as a full disk does).
fn cli_limited(args: &[&str], limit: Option<u64>) -> (Option<i32>, Value) {
    let mut command = std::process::Command::new("bash");
    let script = match limit {
        Some(bytes) => format!("trap '' XFSZ; ulimit -f {}; exec \"$0\" \"$@\"", bytes / 512),
        None => "exec \"$0\" \"$@\"".to_owned(),
    };
    // bash's ulimit -f counts 512-byte blocks in POSIX mode, 1024 otherwise: POSIX mode is asked.
    command.args(["--posix", "-c", &script, &crate::common::cli::bin().display().to_string()]).args(args);
    let out = command.output().unwrap();
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null))
}

/// The demo plan with the review gate and one write to review (the others left out), written
/// beside the session's root.
fn reviewed_plan_file(s: &Session) -> std::path::PathBuf {
    let plan = s.sessions.path().join("plan.json");
    let reviewed = plan_with(common::review_one_write);
    std::fs::write(&plan, reviewed.to_json()).unwrap();
    plan
}

/// A session of the CLI paused at the review gate's write: (the session, the run's arguments).
pub(crate) fn paused_by_the_cli() -> (Session, Vec<String>) {
    let s = Session::new();
    let plan = reviewed_plan_file(&s);
    let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let run = vec![
        "run".to_owned(),
        "--format".into(),
        "json".into(),
        "--root".into(),
        path(&s.root()),
        "--policy-root".into(),
        path(s.policy.path()),
        path(&plan),
    ];
    let args: Vec<&str> = run.iter().map(String::as_str).collect();
    assert_eq!(cli_limited(&args, None).0, Some(4));
    (s, run)
}

/// A decision is acknowledged only when every reader finds it: a log whose last line was cut
/// (a crash, an edit, a 2 GiB sparse file) has its torn line ended before the decision's; a
/// write that fails (a full disk: here a file size limit) is an error (exit 3), leaves no part of
/// a line, and the next decision is found.
#[test]
fn a_decision_is_never_lost_in_a_cut_log() {
    let log_path = |s: &Session| s.root().join(planlock::session::APPROVAL_LOG_FILE);
    let decide_cli = |s: &Session, verdict: &str, by: &str, limit: Option<u64>| {
        let dir = s.sessions.path().to_str().unwrap().to_owned();
        let args = ["inbox", verdict, "--format", "json", "--sessions", &dir, "--by", by, "--reason", "looked", "s1"];
        cli_limited(&args, limit)
    };
    for torn in [&b"{\"event\":\"decided\",\"decision\":{\"pa"[..], &b"garbage with no newline"[..]] {
        let (s, _) = paused_by_the_cli();
        std::fs::write(log_path(&s), torn).unwrap();
        assert_eq!(decide_cli(&s, "approve", "ada", None).0, Some(0));
        let record = block_on(s.records().load_intervention()).unwrap().unwrap();
        let pause = planlock::session::PauseRef::of(&record);
        let found = block_on(s.records().decision_on(&pause)).unwrap();
        assert_eq!(found.map(|d| d.by), Some("ada".to_owned()), "the acknowledged decision is found");
        let (code, refused) = decide_cli(&s, "reject", "bob", None);
        assert_eq!((code, &refused["errorCode"]), (Some(1), &json!("already-decided")), "one decision per pause");
    }
    // A sparse log of 2 GiB whose end is NUL bytes, no newline.
    let (s, run) = paused_by_the_cli();
    let file = std::fs::File::create(log_path(&s)).unwrap();
    file.set_len(2 << 30).unwrap();
    assert_eq!(decide_cli(&s, "approve", "ada", None).0, Some(0));
    let args: Vec<&str> = run.iter().map(String::as_str).collect();
    let (code, report) = cli_limited(&args, None);
    assert_eq!((code, &report["outcome"]), (Some(0), &json!("completed")), "the approval was found: {report}");
    // A full disk: the write fails, the decider is told, nothing of the line stays.
    let (s, _) = paused_by_the_cli();
    // A cut line of 1,000 bytes, and room for 24 more: the decision's line is written in part.
    let cut = [&b"{\"event\":\"cut"[..], &[b'x'; 987]].concat();
    std::fs::write(log_path(&s), &cut).unwrap();
    let before = std::fs::metadata(log_path(&s)).unwrap().len();
    let (code, failed) = decide_cli(&s, "approve", "ada", Some(1024));
    assert_eq!(code, Some(3), "{failed}");
    assert_eq!(std::fs::metadata(log_path(&s)).unwrap().len(), before, "no part of a line left");
    assert_eq!(decide_cli(&s, "reject", "bob", None).0, Some(0), "another decider is not refused by a lost one");
    let record = block_on(s.records().load_intervention()).unwrap().unwrap();
    let found = block_on(s.records().decision_on(&planlock::session::PauseRef::of(&record))).unwrap().unwrap();
    assert_eq!(found.by, "bob");
}

/// A name or a reason with nothing a person can see is blank; a name is one line.
#[test]
fn a_decider_and_a_reason_must_be_visible() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let record = paused(rt.run_cycle_blocking());
    let invisible =
        ["\u{2800}", "\u{FE0F}", "\u{0300}", "\u{FFFC}", "\u{1D159}", "\u{E000}", "\u{2800}\u{0300} \u{200b}"];
    for blank in invisible {
        for (by, why) in [(blank, "fine"), ("ada", blank)] {
            let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, by, why);
            let err = block_on(decide(&s.records(), &decision)).unwrap_err();
            assert_eq!(err.code(), "decision-invalid", "{by:?} {why:?}: {err}");
        }
    }
    for by in ["ada\nbob", "ada\u{1b}[2J", "ada\u{85}"] {
        let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, by, "fine");
        assert_eq!(block_on(decide(&s.records(), &decision)).unwrap_err().code(), "decision-invalid", "{by:?}");
    }
    assert!(s.log().is_empty(), "nothing recorded");
    for by in ["é", "한", "🙂", "a\u{0300}"] {
        assert!(planlock::review::check_decider(by).is_ok(), "{by:?}");
    }
}

/// A decision shown for one pause does not land on a later pause of the same session, though
/// the re-run pauses at the same step showing the same thing (the same digest).
#[test]
fn a_decision_names_its_pause_and_another_is_refused() {
    let (s, run) = paused_by_the_cli();
    let dir = s.sessions.path().to_str().unwrap().to_owned();
    let (_, show) = cli_limited(&["inbox", "show", "--format", "json", "--sessions", &dir, "s1"], None);
    let first = planlock::session::PauseRef::of(&serde_json::from_value(show["record"].clone()).unwrap()).id();
    let reject = ["inbox", "reject", "--format", "json", "--sessions", &dir, "--by", "ada", "--reason", "no"];
    assert_eq!(cli_limited(&[&reject[..], &["--pause", &first, "s1"]].concat(), None).0, Some(0));
    let args: Vec<&str> = run.iter().map(String::as_str).collect();
    assert_eq!(cli_limited(&args, None).0, Some(1), "the rejected cycle is abandoned");
    assert_eq!(cli_limited(&args, None).0, Some(4), "and pauses again, showing the same thing");
    let approve = ["inbox", "approve", "--format", "json", "--sessions", &dir, "--by", "ada", "--reason", "ok"];
    let (code, refused) = cli_limited(&[&approve[..], &["--pause", &first, "s1"]].concat(), None);
    assert_eq!((code, &refused["errorCode"]), (Some(1), &json!("pause-ended")), "{refused}");
    let record = block_on(s.records().load_intervention()).unwrap().unwrap();
    assert_ne!(planlock::session::PauseRef::of(&record).id(), first);
    assert!(block_on(s.records().decision_on(&planlock::session::PauseRef::of(&record))).unwrap().is_none());
}

/// `resume` with an override whose plan hash no longer holds records no approval.
#[test]
fn a_refused_resume_leaves_no_approval() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    paused(rt.run_cycle_blocking());
    policy(s.policy.path(), "changed");
    let err = rt.resume_blocking(Some(Override::new("gate", "remember", "fine"))).unwrap_err();
    assert_eq!(err.code(), "plan-hash-mismatch", "{err}");
    assert!(s.log().is_empty(), "no approval recorded: {:?}", s.log());
}

/// The session's records, counting how often the pause's record is read (what is decided on a
/// pause is read from the approval log, by the trait's default).
struct CountingReads {
    inner: FileRecords,
    reads: std::sync::atomic::AtomicUsize,
}

impl SessionRecords for CountingReads {
    fn snapshot(&self) -> planlock::session::StoreFuture<'_, planlock::session::SessionSnapshot> {
        self.inner.snapshot()
    }
    fn load_intervention(&self) -> planlock::session::StoreFuture<'_, Option<InterventionRecord>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.load_intervention()
    }
    fn load(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::SessionState>> {
        self.inner.load()
    }
    fn load_reserved(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::ReservedSession>> {
        self.inner.load_reserved()
    }
    fn load_pin(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::BundlePinV1>> {
        self.inner.load_pin()
    }
    fn load_plan(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::PlanDocument>> {
        self.inner.load_plan()
    }
    fn record_decision<'a>(
        &'a self,
        decision: &'a ReviewDecision,
        required: usize,
    ) -> planlock::session::StoreFuture<'a, Recorded> {
        self.inner.record_decision(decision, required)
    }
    fn log_outcome<'a>(&'a self, outcome: &'a ApprovalEvent) -> planlock::session::StoreFuture<'a, bool> {
        self.inner.log_outcome(outcome)
    }
    fn log_notice<'a>(&'a self, notice: &'a ApprovalEvent) -> planlock::session::StoreFuture<'a, bool> {
        self.inner.log_notice(notice)
    }
    fn notices(&self) -> planlock::session::StoreFuture<'_, planlock::session::ApprovalLog> {
        self.inner.notices()
    }
    fn approval_log(&self) -> planlock::session::StoreFuture<'_, planlock::session::ApprovalLog> {
        self.inner.approval_log()
    }
    fn history(&self, limit: usize) -> planlock::session::StoreFuture<'_, planlock::session::History> {
        self.inner.history(limit)
    }
    fn installed_access(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::InstalledAccess>> {
        self.inner.installed_access()
    }
}

/// A decision on the pause the caller read (the console's POST, the CLI's `inbox approve`)
/// reads the pause's record once per request (issue 57 §5): `decide_shown` judges the record it
/// is given, as `decide` judges the one it reads; a record of another pause is refused.
#[test]
fn a_decision_reads_the_pause_once_per_request() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let _ = paused(rt.run_cycle_blocking());
    let records = CountingReads { inner: s.records(), reads: Default::default() };
    let record = block_on(planlock::review::read_pause(&records)).unwrap().unwrap();
    let mut other = (*record).clone();
    other.cycle += 1;
    let stale = ReviewDecision::new(&other, ReviewVerdict::Approve, "ada", "fine");
    let refused = block_on(planlock::review::decide_shown(&records, &record, &stale, None)).unwrap_err();
    assert_eq!(refused.code(), "pause-ended");
    let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "fine");
    let decided = block_on(planlock::review::decide_shown(&records, &record, &decision, None)).unwrap();
    assert_eq!(decided.recorded, Recorded::New);
    assert_eq!(records.reads.load(Ordering::SeqCst), 1, "the caller's read, and no other");
    assert_eq!(events(&s.log()), ["decided"]);
    // `decide` reads it itself, once.
    let again = block_on(decide(&records, &ReviewDecision { at: planlock::session::Timestamp::now(), ..decision }));
    assert_eq!((again.unwrap(), records.reads.load(Ordering::SeqCst)), (Recorded::Again, 2));
}

/// The records a new store writes: the required calls only, each forwarded; every `load*` is
/// the trait's own, read from the snapshot.
struct SnapshotOnly(FileRecords);

impl SessionRecords for SnapshotOnly {
    fn snapshot(&self) -> planlock::session::StoreFuture<'_, planlock::session::SessionSnapshot> {
        self.0.snapshot()
    }
    fn record_decision<'a>(
        &'a self,
        decision: &'a ReviewDecision,
        required: usize,
    ) -> planlock::session::StoreFuture<'a, Recorded> {
        self.0.record_decision(decision, required)
    }
    fn log_outcome<'a>(&'a self, outcome: &'a ApprovalEvent) -> planlock::session::StoreFuture<'a, bool> {
        self.0.log_outcome(outcome)
    }
    fn log_notice<'a>(&'a self, notice: &'a ApprovalEvent) -> planlock::session::StoreFuture<'a, bool> {
        self.0.log_notice(notice)
    }
    fn notices(&self) -> planlock::session::StoreFuture<'_, planlock::session::ApprovalLog> {
        self.0.notices()
    }
    fn approval_log(&self) -> planlock::session::StoreFuture<'_, planlock::session::ApprovalLog> {
        self.0.approval_log()
    }
    fn history(&self, limit: usize) -> planlock::session::StoreFuture<'_, planlock::session::History> {
        self.0.history(limit)
    }
    fn installed_access(&self) -> planlock::session::StoreFuture<'_, Option<planlock::session::InstalledAccess>> {
        self.0.installed_access()
    }
}

/// A store that writes only the snapshot reads each record as the file store reads it alone
/// (issue 57 §3: a backend is a few hooks), and a decision goes through it.
#[test]
fn a_store_with_only_a_snapshot_reads_every_record() {
    let s = Session::new();
    let mut rt = s.boot(Gate::default(), &model(false), true, None);
    let _ = paused(rt.run_cycle_blocking());
    let (own, only) = (s.records(), SnapshotOnly(s.records()));
    block_on(async {
        assert_eq!(json(&only.load().await.unwrap()), json(&own.load().await.unwrap()));
        assert_eq!(json(&only.load_intervention().await.unwrap()), json(&own.load_intervention().await.unwrap()));
        assert_eq!(json(&only.load_reserved().await.unwrap()), json(&own.load_reserved().await.unwrap()));
        assert_eq!(json(&only.load_pin().await.unwrap()), json(&own.load_pin().await.unwrap()));
        assert_eq!(json(&only.load_plan().await.unwrap()), json(&own.load_plan().await.unwrap()));
    });
    let snapshot = block_on(only.snapshot()).unwrap();
    // Its first cycle paused: nothing saved yet, its id reserved, the pause and the plan kept.
    let found = [snapshot.state.is_some(), snapshot.intervention.is_some(), snapshot.reserved.is_some()];
    assert_eq!((found, snapshot.plan.is_some()), ([false, true, true], true));
    let record = block_on(planlock::review::read_pause(&only)).unwrap().unwrap();
    let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "fine");
    assert_eq!(block_on(decide(&only, &decision)).unwrap(), Recorded::New);
    assert_eq!(events(&s.log()), ["decided"]);
}

/// A record as JSON: what the comparisons above hold equal (not every record type is `PartialEq`).
fn json<T: serde::Serialize>(record: &T) -> String {
    serde_json::to_string(record).unwrap()
}
