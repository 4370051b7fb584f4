//! Edit and approve (CONTRACT §22): a reviewer replaces the paused step's payload; the edit is
//! checked by the plan's validator, gets its own digest, restarts the count of approvals, and
//! the re-run runs exactly the approved bytes — once: the next cycle runs the plan's own payload.

use std::path::Path;

use planlock::Failure;
use planlock::block_on;
use planlock::review::{decide, decide_with, edit_of};
use planlock::session::{
    ApprovalEvent, FileRecords, InterventionRecord, Recorded, ReviewDecision, ReviewVerdict, SessionRecords,
};
use serde_json::{Value, json};

use crate::common::cli::planlock;

const PLAN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plans/reviewed_plan.json");
const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");

/// Runs the session's next cycle with `planlock run`: its exit code (0 completed, 4 paused).
fn run(root: &Path) -> Option<i32> {
    let out = planlock().args(["run", "--root"]).arg(root).args(["--policy-root", POLICY, PLAN]).output().unwrap();
    out.status.code()
}

fn pause_of(records: &FileRecords) -> InterventionRecord {
    block_on(records.load_intervention()).unwrap().expect("paused")
}

/// The summaries of the memories the session stored, in order.
fn memories(root: &Path) -> Vec<String> {
    let file = root.join(planlock::store::sqlite::DATABASE_FILE);
    if !file.exists() {
        return Vec::new();
    }
    let conn = rusqlite::Connection::open(file).unwrap();
    let mut rows = conn.prepare("SELECT summary FROM memories ORDER BY rowid").unwrap();
    rows.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The payload the pause shows, with its summary replaced.
fn summarised(record: &InterventionRecord, summary: &str) -> Value {
    let mut payload = record.shown.as_ref().unwrap()["payload"].clone();
    payload["summary"] = json!(summary);
    payload
}

#[test]
fn an_approved_edit_runs_exactly_its_payload_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s1");
    assert_eq!(run(&root), Some(4), "paused before `remember`");
    let records = FileRecords::new(&root);
    let record = pause_of(&records);
    let edit = block_on(edit_of(&records, &record, summarised(&record, "key rotation (names removed)"))).unwrap();
    assert_ne!(Some(edit.digest), record.shown_digest, "the edit has its own digest");
    let decision =
        ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "removed the names").editing(edit.clone());
    assert_eq!(block_on(decide(&records, &decision)).unwrap(), Recorded::New);
    // The log keeps both digests: what ada was shown, and her edit.
    let log = block_on(records.approval_log()).unwrap();
    let Some(ApprovalEvent::Decided { decision: logged }) = log.events.last() else { panic!("{log:?}") };
    assert_eq!((logged.shown_digest, logged.edit.as_ref().map(|e| e.digest)), (record.shown_digest, Some(edit.digest)));
    // The re-run stores ada's text, not the plan's.
    assert_eq!(run(&root), Some(0));
    assert_eq!(memories(&root), ["key rotation (names removed)"]);
    // The history keeps both digests with the override it applied.
    let history = block_on(records.history(1)).unwrap();
    let text = serde_json::to_string(&history.entries[0]).unwrap();
    assert!(
        text.contains(&edit.digest.to_string()) && text.contains(&record.shown_digest.unwrap().to_string()),
        "{text}"
    );
    // The next cycle runs the plan's own payload: it pauses on it again.
    assert_eq!(run(&root), Some(4));
    let next = pause_of(&records);
    assert_eq!(next.shown.as_ref().unwrap()["payload"]["summary"], "key rotation");
    assert_eq!(next.plan_hash, record.plan_hash, "an edit is a decision, not a new plan");
}

#[test]
fn an_edit_the_validator_refuses_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s1");
    assert_eq!(run(&root), Some(4));
    let records = FileRecords::new(&root);
    let record = pause_of(&records);
    let mut payload = summarised(&record, "fine");
    payload["keywords"] = json!("not a list");
    let refused = block_on(edit_of(&records, &record, payload)).unwrap_err();
    assert_eq!(refused.code(), "edit-invalid");
    let message = refused.to_string();
    assert!(message.contains("/steps/7/payload/keywords"), "the validator's pointer: {message}");
    // An edit made by hand with a digest of its own making is refused too, and nothing is logged.
    let mut forged = block_on(edit_of(&records, &record, summarised(&record, "mine"))).unwrap();
    forged.payload = summarised(&record, "something else");
    let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "x").editing(forged);
    assert_eq!(block_on(decide(&records, &decision)).unwrap_err().code(), "decision-invalid");
    // Only an approval edits.
    let edit = block_on(edit_of(&records, &record, summarised(&record, "mine"))).unwrap();
    let reject = ReviewDecision::new(&record, ReviewVerdict::Reject, "ada", "x").editing(edit);
    assert_eq!(block_on(decide(&records, &reject)).unwrap_err().code(), "decision-invalid");
    assert!(block_on(records.approval_log()).unwrap().events.is_empty());
}

/// N-of-M (CONTRACT §22): an edit restarts the count on the edited payload; the editor's edit is
/// their approval of it; an approval of what it replaced is `approval-stale`.
#[test]
fn an_edit_restarts_the_count_and_an_approval_of_the_old_payload_is_stale() {
    use planlock::review::access::{Access, token_sha256};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("s1");
    assert_eq!(run(&root), Some(4));
    let users: String =
        ["ada", "bob"].iter().map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(u))).collect();
    let text = format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n");
    let access = Access::parse("access.yaml", &text).unwrap();
    let records = FileRecords::new(&root);
    let record = pause_of(&records);
    // bob approves what was shown; then ada edits it: the count restarts at her edit alone.
    let bob = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "fine as shown");
    assert!(matches!(
        block_on(decide_with(&records, &bob, Some(&access))).unwrap(),
        Recorded::Counted { approvals: 1, .. }
    ));
    let edit = block_on(edit_of(&records, &record, summarised(&record, "ada's text"))).unwrap();
    let ada = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "redacted").editing(edit.clone());
    assert!(matches!(
        block_on(decide_with(&records, &ada, Some(&access))).unwrap(),
        Recorded::Counted { approvals: 1, .. }
    ));
    let decided = block_on(records.decisions_on(&planlock::session::PauseRef::of(&record))).unwrap();
    assert_eq!((decided.approvals, decided.edit.map(|e| e.digest)), (vec!["ada".to_owned()], Some(edit.digest)));
    // bob's approval of what the edit replaced is stale, and counts nothing.
    let again = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "fine as shown, again");
    assert_eq!(block_on(decide_with(&records, &again, Some(&access))).unwrap_err().code(), "approval-stale");
    // bob approves the edited payload (what his page shows now): approved, with ada's edit.
    let mut on_edit = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "the edit is fine");
    on_edit.shown_digest = Some(edit.digest);
    assert_eq!(block_on(decide_with(&records, &on_edit, Some(&access))).unwrap(), Recorded::New);
    let decision = block_on(records.decision_on(&planlock::session::PauseRef::of(&record))).unwrap().unwrap();
    assert_eq!(
        (decision.approved_by(), decision.edit.as_ref().map(|e| e.payload["summary"].clone())),
        (vec!["ada", "bob"], Some(json!("ada's text")))
    );
    assert_eq!(run(&root), Some(0));
    assert_eq!(memories(&root), ["ada's text"]);
}

/// The same from the command line: `inbox edit` with a payload file, `inbox show` with the
/// edit's digest and diff, a stale `inbox approve` refused, the edit approved by its digest.
#[test]
fn the_cli_edits_shows_the_diff_and_approves_the_edit() {
    use planlock::review::access::token_sha256;
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    let users: String =
        ["ada", "bob"].iter().map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(u))).collect();
    let access = dir.path().join("access.yaml");
    std::fs::write(
        &access,
        format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n"),
    )
    .unwrap();
    let install = planlock().args(["access", "install", "--sessions"]).arg(&sessions).arg(&access).output().unwrap();
    assert_eq!(install.status.code(), Some(0), "{install:?}");
    let root = sessions.join("s1");
    assert_eq!(run(&root), Some(4));
    let record = pause_of(&FileRecords::new(&root));
    let file = dir.path().join("payload.json");
    std::fs::write(&file, summarised(&record, "ada's text").to_string()).unwrap();
    let inbox = |args: &[&str]| {
        let out = planlock().arg("inbox").args(args).arg("--sessions").arg(&sessions).arg("s1").output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), said)
    };
    let payload = file.to_str().unwrap();
    let (code, said) = inbox(&["edit", "--by", "ada", "--reason", "redacted", "--payload", payload]);
    assert_eq!(code, Some(0), "{said}");
    let (_, shown) = inbox(&["show"]);
    assert!(shown.contains("edited:     digest") && shown.contains("+  \"summary\": \"ada's text\""), "{shown}");
    assert!(shown.contains("-  \"summary\": \"key rotation\""), "{shown}");
    // An approval of what the edit replaced (its digest given) is stale; without --digest, an
    // approval is of what the pause stands on now: the edit.
    let old = shown.lines().find_map(|l| l.strip_prefix("shown:      digest ")).unwrap().split(' ').next().unwrap();
    let (code, said) = inbox(&["approve", "--by", "bob", "--reason", "fine as shown", "--digest", old]);
    assert!(code != Some(0) && said.contains("payload was edited since (by `ada`"), "{said}");
    let (code, said) = inbox(&["approve", "--by", "bob", "--reason", "the edit is fine"]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(run(&root), Some(0));
    assert_eq!(memories(&root), ["ada's text"]);
}

/// The property of edit and approve (`common::edits`) on files: 100 random cases, a session
/// root each, its cycle run by `planlock run` (seeded: `PLANLOCK_SEED` replays one).
#[test]
fn random_edits_and_approvals_run_exactly_the_approved_bytes() {
    let dir = tempfile::tempdir().unwrap();
    planlock::session::install_access(dir.path(), &crate::common::edits::rules()).unwrap();
    let mut property = crate::common::edits::Property::seeded();
    for case in 0..100 {
        let root = dir.path().join(format!("c{case}"));
        assert_eq!(run(&root), Some(4), "{}", property.at(case));
        let records = FileRecords::new(&root);
        let model = property.decide(case, &records);
        property.check(case, &model, run(&root) == Some(0), &memories(&root));
    }
    property.covered();
}

/// Blocks one step before it runs: a review of that step, whatever its type.
struct BlockBefore(String);
impl planlock::Validator for BlockBefore {
    fn before(&self, step: &planlock::StepView<'_>) -> planlock::Verdict {
        match step.id == self.0 {
            true => planlock::Verdict::Block(format!("review `{}` before it runs", step.id)),
            false => planlock::Verdict::Allow,
        }
    }
}

/// Records the payload every step ran with, once it ran: the step the executor handed its
/// handler (the same value), by id.
#[derive(Clone, Default)]
struct RanWith(std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>);
impl planlock::Validator for RanWith {
    fn after(&self, step: &planlock::StepView<'_>, _: &planlock::StepResult) -> planlock::Verdict {
        self.0.lock().unwrap().push((step.id.to_owned(), serde_json::to_value(step.payload).unwrap()));
        planlock::Verdict::Allow
    }
}

impl RanWith {
    fn of(&self, id: &str) -> Vec<Value> {
        self.0.lock().unwrap().iter().filter(|(s, _)| s == id).map(|(_, p)| p.clone()).collect()
    }
}

/// A random text a string field of any step takes: letters, spaces, quotes and characters past
/// ASCII (no braces: a template stays a template).
fn words(rng: &mut fastrand::Rng) -> String {
    const PIECES: [&str; 8] = ["key", " ", "rotation", "é", "日本", "\"", "🔑", "vault"];
    (0..rng.usize(1..8)).map(|_| PIECES[rng.usize(..PIECES.len())]).collect()
}

/// An edit of `payload`, a step of type `step_type`'s, that its validator takes and its handler
/// can run: a string it reads changed (the ids a link names, and a scanned path, stay what they
/// name, written differently or as they were).
fn valid_edit(rng: &mut fastrand::Rng, step_type: &str, payload: &Value) -> Value {
    let mut edited = payload.clone();
    let text = json!(words(rng));
    match step_type {
        "RepoScan" => edited["repoPath"] = json!(format!("{}/", payload["repoPath"].as_str().unwrap())),
        "ContextSelect" | "RetrieveMemory" | "RetrieveDecisionContext" => edited["input"] = text,
        "PromptAssemble" => edited["vars"]["question"] = text,
        "LLMCall" => edited["prompt"] = text,
        "SummarizeMemory" => edited["response"] = text,
        "PersistMemory" => edited["summary"] = text,
        "PersistDecision" => edited["decision"]["text"] = text,
        "PersistEvidence" => edited["evidence"]["summary"] = text,
        "PersistSession" => edited["meta"]["edited"] = text,
        _ => {}
    }
    edited
}

/// Every step type can pause before it runs, and every one can be edited (CONTRACT §22): for
/// each step of the demo plan, a review before it; an edit the validator refuses is refused; a
/// valid random edit (seeded, `PLANLOCK_SEED`) approved runs exactly that payload — what the
/// step was handed — and the next cycle the plan's own.
#[test]
fn every_step_type_paused_before_it_runs_can_be_edited() {
    use planlock::demo::Demo;
    use planlock::runtime::RunOutcome;
    let seed = std::env::var("PLANLOCK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    println!("every step type: seed {seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let signature = |id: &str| planlock::ValidatorSignature {
        id: id.into(),
        version: "1".into(),
        config_hash: planlock::config_hash(&json!({})).to_string(),
    };
    let plan = crate::common::plan_with(|v| {
        v["validators"] = json!([signature("block-one")]);
        v["postValidators"] = json!([signature("ran-with")]);
    });
    let mut types = Vec::new();
    for step in plan.steps() {
        let at = format!("seed {seed}, step `{}` ({})", step.id, step.step_type());
        let d = crate::common::dirs();
        let ran = RanWith::default();
        let mut runtime = crate::common::runtime_on(d.policy.path(), d.root.path(), plan.clone())
            .handlers(Demo::new().handlers().boxed())
            .validator("block-one", "1", &json!({}), BlockBefore(step.id.clone()))
            .validator("ran-with", "1", &json!({}), ran.clone())
            .boot_blocking()
            .unwrap();
        let Ok(RunOutcome::Paused { record, .. }) = runtime.run_cycle_blocking() else { panic!("{at}: paused") };
        let records = FileRecords::new(d.root.path());
        let planned = record.shown.as_ref().unwrap()["payload"].clone();
        // Refused: a field that is not the step's.
        let mut wrong = planned.clone();
        wrong["notAField"] = json!(1);
        assert_eq!(block_on(edit_of(&records, &record, wrong)).unwrap_err().code(), "edit-invalid", "{at}");
        let edit = block_on(edit_of(&records, &record, valid_edit(&mut rng, step.step_type().wire_name(), &planned)))
            .unwrap_or_else(|e| panic!("{at}: {e}"));
        let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "edited").editing(edit.clone());
        block_on(decide(&records, &decision)).unwrap();
        let outcome = runtime.run_cycle_blocking().unwrap_or_else(|e| panic!("{at}: {e}"));
        assert!(matches!(outcome, RunOutcome::Completed(_)), "{at}: {outcome:?}");
        assert_eq!(
            ran.of(&step.id),
            std::slice::from_ref(&edit.payload),
            "{at}: the step ran with exactly the approved payload"
        );
        // The next cycle runs the plan's own payload: it pauses on it again.
        let Ok(RunOutcome::Paused { record: next, .. }) = runtime.run_cycle_blocking() else { panic!("{at}") };
        assert_eq!(next.shown.as_ref().unwrap()["payload"], planned, "{at}");
        types.push(step.step_type());
    }
    assert_eq!(types.len(), planlock::StepType::ALL.len(), "every step type was paused and edited");
}
