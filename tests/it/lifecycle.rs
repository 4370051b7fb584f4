//! The runtime lifecycle: Cold Start creates nothing until the first successful cycle, Resume
//! restores the session, a changed plan or policy is FailFast, one save per successful cycle.

use planlock::block_on;
use planlock::session::CycleGuard;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use planlock::Failure;
use planlock::demo::Demo;
use planlock::runtime::{Boot, BootError, PolicyInterpreter, RunOutcome, Runtime, RuntimeError};
use planlock::session::{
    BeforeSave, EndOfCycle, FileSessionStore, SESSION_FILE, SessionError, SessionState, SessionStore, SessionUpdate,
};
use planlock::{FailureKind, PolicyProfile, StepType, ValidPlan};
use serde_json::{Value, json};

use crate::common;
use common::{DEMO_PLAN, plan_with, policy};

/// A store that counts saves and can be told to fail them; the count is shared, so a test can
/// read it while the runtime owns the store.
type Counting = BeforeSave<FileSessionStore, Box<dyn Fn(&SessionUpdate) -> Result<(), SessionError> + Send + Sync>>;

/// A store on `root`, and its save counter.
fn counting(root: &Path, fail: bool) -> (Counting, Arc<AtomicUsize>) {
    let saves = Arc::new(AtomicUsize::new(0));
    let inner = FileSessionStore::open(root).unwrap();
    let file = inner.path().to_owned();
    let counter = saves.clone();
    let check = move |_: &SessionUpdate| {
        counter.fetch_add(1, Ordering::SeqCst);
        if fail {
            let source = std::io::Error::new(std::io::ErrorKind::StorageFull, "disk full");
            return Err(SessionError::Io { file: file.clone(), op: "write", source });
        }
        Ok(())
    };
    (BeforeSave::new(inner, Box::new(check)), saves)
}

type DemoRuntime = Runtime<Counting, planlock::handler::Boxed>;

fn boot(pol: &Path, plan: ValidPlan, store: Counting, demo: &Demo) -> Result<DemoRuntime, BootError> {
    Runtime::builder(pol, plan, store).handlers(demo.handlers().boxed()).boot_blocking()
}

/// Reads the session file as it is on disk.
fn on_disk(root: &Path) -> Option<SessionState> {
    let text = std::fs::read_to_string(root.join(SESSION_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[test]
fn cold_start_writes_nothing_until_a_cycle_succeeds() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_with(|_| {});
    let (store, saves) = counting(root.path(), false);
    // A failed cycle saves nothing.
    let mut runtime = boot(pol.path(), plan.clone(), store, &Demo::new().failing([StepType::LLMCall])).unwrap();
    assert_eq!(runtime.boot_kind(), &Boot::ColdStart);
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "boot created nothing");
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!(err.kind(), FailureKind::CycleFail);
    assert_eq!(saves.load(Ordering::SeqCst), 0);
    assert!(!root.path().join(SESSION_FILE).exists(), "no session file");
    // Only the new session's id is reserved, so that the failed first cycle re-runs under it.
    let runtime_id = runtime.session_id();
    drop(runtime);
    let (store, _) = counting(root.path(), false);
    assert_eq!(block_on(store.records().load_reserved()).unwrap().map(|r| r.session_id), Some(runtime_id));
    drop(store);

    // A successful one saves exactly once, with the references from this cycle's ledger.
    let (store, saves) = counting(root.path(), false);
    let mut runtime = boot(pol.path(), plan, store, &Demo::new()).unwrap();
    let RunOutcome::Completed(done) = runtime.run_cycle_blocking().unwrap() else { panic!("paused") };
    assert_eq!(saves.load(Ordering::SeqCst), 1);
    let state = on_disk(root.path()).unwrap();
    assert_eq!(state.session_id, runtime.session_id());
    assert_eq!(state.last_execution_plan_hash, runtime.plan_hash());
    let memory = done.ledger.get::<planlock::steps::PersistMemory>().unwrap();
    assert_eq!(state.memory_ref.as_deref(), Some(memory.id.as_str()));
    let scan = done.ledger.get::<planlock::steps::RepoScan>().unwrap();
    assert_eq!(state.repo_scan_version.as_deref(), Some(scan.version_id.as_str()));
    assert!(scan.file_count > 10, "the demo RepoScan really scanned the crate");
    assert_eq!(state.hash_parts.as_ref(), Some(runtime.hash_parts()));
    assert_eq!(state.cycle, 1);
    runtime.run_cycle_blocking().unwrap();
    assert_eq!(saves.load(Ordering::SeqCst), 2, "once per cycle");
    assert_eq!(on_disk(root.path()).unwrap().cycle, 2);
}

#[test]
fn a_restart_resumes_the_session() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let first = {
        let mut runtime = boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap();
        runtime.run_cycle_blocking().unwrap();
        runtime.session().unwrap().clone()
    };
    let runtime = boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap();
    assert_eq!(runtime.boot_kind(), &Boot::Resume(first.clone()));
    assert_eq!(runtime.session_id(), first.session_id);
}

#[test]
fn references_are_kept_when_the_plan_has_no_step_to_renew_them() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_with(|v| {
        v["steps"].as_array_mut().unwrap().retain(|s| s["type"] != "PersistMemory" && s["type"] != "RepoScan");
    });
    // A session saved earlier under this very plan hash, with references of its own.
    let profile = PolicyProfile::load(pol.path(), "profiles/default").unwrap();
    let hash = planlock::plan_hash(&profile, &plan);
    let id = uuid::Uuid::new_v4();
    let update = SessionUpdate {
        session_id: id,
        memory_ref: Some("mem-old".into()),
        repo_scan_version: Some("scan-old".into()),
        last_execution_plan_hash: hash,
        hash_parts: None,
        cycle: 4,
    };
    let _ = block_on(
        FileSessionStore::open(root.path()).unwrap().end_cycle(EndOfCycle::saving(update), CycleGuard::none()),
    )
    .unwrap();
    let mut runtime = boot(pol.path(), plan, counting(root.path(), false).0, &Demo::new()).unwrap();
    assert!(matches!(runtime.boot_kind(), Boot::Resume(_)));
    runtime.run_cycle_blocking().unwrap();
    let state = on_disk(root.path()).unwrap();
    assert_eq!(state.cycle, 5, "cycle 5 follows the session's cycle 4");
    assert_eq!(state.session_id, id);
    assert_eq!(state.memory_ref.as_deref(), Some("mem-old"));
    assert_eq!(state.repo_scan_version.as_deref(), Some("scan-old"));
}

#[test]
fn a_changed_plan_or_policy_is_fail_fast_and_says_what_changed() {
    type Change = Box<dyn Fn(&Path) -> ValidPlan>;
    let cases: Vec<(&str, Change, &str)> = vec![
        (
            "policy",
            Box::new(|p: &Path| {
                policy(p, "formal");
                plan_with(|_| {})
            }),
            "modes.yaml changed",
        ),
        (
            "a step",
            Box::new(|_: &Path| plan_with(|v| v["steps"][5]["payload"]["prompt"] = json!("other"))),
            "step `llm` changed",
        ),
        ("metadata", Box::new(|_: &Path| plan_with(|v| v["metadata"]["mode"] = json!("voice"))), "metadata changed"),
        (
            "validators",
            Box::new(|_: &Path| {
                plan_with(|v| v["postValidators"] = json!([{"id": "x", "version": "1", "config_hash": "0".repeat(64)}]))
            }),
            "validators changed",
        ),
    ];
    for (name, change, words) in cases {
        let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        policy(pol.path(), "friendly");
        {
            let mut runtime =
                boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap();
            runtime.run_cycle_blocking().unwrap();
        }
        let file = root.path().join(SESSION_FILE);
        let before = std::fs::read(&file).unwrap();
        let plan = change(pol.path());
        let err = boot(pol.path(), plan, counting(root.path(), false).0, &Demo::new()).unwrap_err();
        assert!(matches!(err, BootError::HashMismatch(_)), "{name}: {err}");
        assert_eq!(err.kind(), FailureKind::FailFast);
        assert_eq!(err.code(), "plan-hash-mismatch");
        assert!(err.to_string().contains(words), "{name}: {err}");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{name}: no automatic re-initialisation");
    }
}

#[test]
fn boot_failures_are_fail_fast() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let err = boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("profile-unreadable", FailureKind::FailFast));
    policy(pol.path(), "friendly");
    std::fs::write(pol.path().join("profiles/default/bundles.yaml"), "a: !!binary aGk=\n").unwrap();
    let err = boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap_err();
    assert_eq!(err.code(), "yaml");
    assert!(err.to_string().contains("bundles.yaml:1:"), "{err}");
    policy(pol.path(), "friendly");
    let file = root.path().join(SESSION_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{").unwrap();
    let err = boot(pol.path(), plan_with(|_| {}), counting(root.path(), false).0, &Demo::new()).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("session-corrupt", FailureKind::FailFast));
}

#[test]
fn a_failed_save_is_fail_fast_and_halts_the_runtime() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let mut runtime = boot(pol.path(), plan_with(|_| {}), counting(root.path(), true).0, &Demo::new()).unwrap();
    let err = runtime.run_cycle_blocking().unwrap_err();
    assert_eq!(err.kind(), FailureKind::FailFast);
    assert!(err.to_string().contains("saving the session failed"), "{err}");
    // Every step ran; the save is what failed, and the report says so at `PersistSession`.
    let report = err.report().expect("the failure carries the cycle's report");
    let last = report.steps.last().unwrap();
    assert_eq!((last.step_type, last.status), (planlock::StepType::PersistSession, planlock::StepStatus::Failed));
    assert!(report.steps[..report.steps.len() - 1].iter().all(|s| s.status == planlock::StepStatus::Completed));
    assert!(matches!(runtime.run_cycle_blocking(), Err(RuntimeError::Halted { .. })));
    assert!(!root.path().join(SESSION_FILE).exists());
}

struct Fixed(Value);
impl PolicyInterpreter for Fixed {
    fn produce(&self, _: &str, _: &Value) -> Value {
        self.0.clone()
    }
}

#[test]
fn the_policy_interpreter_has_the_version_gate_at_its_entrance() {
    let mut v: Value = serde_json::from_str(DEMO_PLAN).unwrap();
    assert!(Fixed(v.clone()).interpret("policies/default", &json!({})).is_ok());
    v["step_contract_version"] = json!("2");
    v["steps"] = json!("not even steps");
    let err = Fixed(v).interpret("policies/default", &json!({})).unwrap_err();
    assert_eq!(err.class(), FailureKind::FailFast);
    assert_eq!(err.problems().len(), 1, "nothing past the gate is read");
    assert_eq!(err.problems()[0].code().as_str(), "unsupported-version");
}
