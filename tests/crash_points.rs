//! A crash at each point of the resume and abandon sequences never wedges the session
//! (CONTRACT §11): a child process stops at a named point of the end of the cycle (before it;
//! inside it with the new pin written but not renamed, with the pin saved and the state written
//! but not renamed, with the state and the history entry written but the outcome not logged nor
//! the record removed; after it, the record removed; for abandon, before and after its end) and
//! is killed with SIGKILL. A new process
//! then boots and goes on — resuming with the same approval if the cycle is still paused, running
//! the next cycle otherwise — with no manual step, and the SQLite store holds one memory per
//! completed cycle.
//!
//! A worker (CONTRACT §21) killed before or after its end of the cycle leaves the decision to the
//! next worker, which acts on it once.
//!
//! This file is its own test harness: run with a `PLANLOCK_CHILD` variable it is the child.

use planlock::block_on;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use planlock::demo::{Demo, ReviewGate};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::{FileSessionStore, RealFs, SaveFs, SessionStore};
use planlock::store::StoreHandlers;
use planlock::store::bundle::BundleManifest;
use planlock::store::sqlite::SqliteStore;
use planlock::{Override, ValidPlan};

mod common;
use common::around::Around;

/// Says where it is and waits to be killed.
fn stop_at(point: &str) {
    println!("at {point}");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(120));
    panic!("not killed at {point}");
}

/// The real file system, stopping inside the end of a cycle at `point`: `during-pin` with the
/// new pin written and flushed, not yet renamed; `during-save` with the pin saved and the state
/// written and flushed, not yet renamed; `after-save` with the state saved and the history entry
/// written, before the outcome is logged and the record removed.
struct StopInEnd(String);

impl SaveFs for StopInEnd {
    fn rename(&self, temp: tempfile::NamedTempFile, to: &Path) -> std::io::Result<()> {
        let file = match self.0.as_str() {
            "during-pin" => "bundle_pin.json",
            "during-save" => "session_state.json",
            _ => "",
        };
        if !file.is_empty() && to.ends_with(file) {
            stop_at(&self.0);
        }
        RealFs.rename(temp, to)
    }
    fn sync_file(&self, file: &File) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        if self.0 == "after-save" {
            let path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))?;
            if path.ends_with(planlock::session::HISTORY_FILE) {
                stop_at(&self.0);
            }
        }
        RealFs.sync_file(file)
    }
}

/// One process: boots on `root` and does `action` (`run`, `resume`, `abandon`, or `go-on`:
/// resume if paused, else run), stopping at `point` if it names one.
fn child(root: &Path, action: &str, point: &str) {
    let data = root.parent().unwrap();
    let plan = ValidPlan::from_str(include_str!("../examples/plans/reviewed_plan.json")).unwrap();
    let files = FileSessionStore::with_fs(root, StopInEnd(point.to_owned())).unwrap();
    let store = Around::at(files, point, stop_at);
    let storage = StoreHandlers::new(SqliteStore::open(root));
    let runtime = Runtime::builder(data.join("policy"), plan, store)
        .handlers(Demo::new().repo_base(data).with_store(&storage))
        .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate)
        .bundle(BundleManifest::default_bundle())
        .boot_blocking();
    let mut runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            println!("boot failed: {e}");
            return;
        }
    };
    if let Some(r) = runtime.removed_leftover() {
        println!("removed leftover of cycle {}", r.cycle);
    }
    let approve = || Some(Override::new(ReviewGate::ID, "remember", "reviewed"));
    let paused = runtime.pending().is_some();
    let outcome = match action {
        "run" => runtime.run_cycle_blocking(),
        "resume" => runtime.resume_blocking(approve()),
        "abandon" => runtime.abandon_blocking().map(|r| RunOutcome::Abandoned(Box::new(r))),
        "go-on" if paused => runtime.resume_blocking(approve()),
        "go-on" => runtime.run_cycle_blocking(),
        other => panic!("unknown action {other}"),
    };
    match outcome {
        Ok(RunOutcome::Completed(_)) => println!("completed {}", runtime.cycle()),
        Ok(RunOutcome::Paused { record: r, .. }) => println!("paused {}", r.cycle),
        Ok(RunOutcome::Abandoned(r)) => println!("abandoned {}", r.cycle),
        Err(e) => println!("failed: {e}"),
    }
}

/// One worker process (CONTRACT §21) over the roots beside `root`: acts on every decided pause
/// there is (one pass, as `planlock worker --once`), the session's store stopping at `point`
/// (`before-save`, `after-removal`) if it names one.
fn worker_child(root: &Path, point: &str) {
    use planlock::backend::{Backend, FilesBackend};
    use planlock::store::bundle::StrategyResolver;
    use planlock::worker::{ToRun, Worker};
    let data = root.parent().unwrap().to_owned();
    let backend: std::sync::Arc<dyn Backend> = std::sync::Arc::new(FilesBackend::new(&data));
    let point = point.to_owned();
    // The session's own runtime, as a deployment boots it, its store stopping at the point.
    let boot = move |s: ToRun| {
        let manifest = BundleManifest::default_bundle();
        let storage = s.opened.resolve(&StrategyResolver::default(), &manifest).map_err(|e| e.to_string())?;
        let store = Around::at(s.opened.into_session_store(), &point, stop_at);
        Ok(Runtime::builder(data.join("policy"), s.plan, store)
            .handlers(Demo::new().repo_base(&data).with_store(&StoreHandlers::new(storage)).boxed())
            .bundle(manifest)
            .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate))
    };
    let worker = Worker::new(backend, boot);
    block_on(worker.act_on_decided(&mut |event| println!("{event}")));
    println!("worker done");
}

/// Runs one child to its end and returns its lines.
fn lines_of(root: &Path, action: &str) -> Vec<String> {
    let (mut child, lines) = common::spawn_self("cycle", root, &[("PLANLOCK_ACTION", action), ("PLANLOCK_POINT", "")]);
    let all = std::iter::from_fn(|| lines.recv_timeout(Duration::from_secs(60)).ok()).collect();
    child.wait().unwrap();
    all
}

/// Runs one child to its end and returns its last line.
fn finish(root: &Path, action: &str) -> String {
    lines_of(root, action).pop().unwrap_or_default()
}

/// Kills a child doing `action` at `point`.
fn kill_at(root: &Path, action: &str, point: &str) {
    let (mut child, lines) =
        common::spawn_self("cycle", root, &[("PLANLOCK_ACTION", action), ("PLANLOCK_POINT", point)]);
    let line = lines.recv_timeout(Duration::from_secs(60)).unwrap_or_default();
    assert_eq!(line, format!("at {point}"), "{action} reached {point}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

fn memories(root: &Path) -> i64 {
    let db = root.join(planlock::store::sqlite::DATABASE_FILE);
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0)).unwrap()
}

fn completed(root: &Path) -> i64 {
    let store = FileSessionStore::open(root).unwrap();
    block_on(store.records().load()).unwrap().map_or(0, |s| s.cycle as i64)
}

/// A fresh session whose first cycle is paused for review.
fn paused_session(data: &Path) -> std::path::PathBuf {
    let dir = data.join("policy/profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["modes.yaml", "triggers.yaml", "bundles.yaml"] {
        std::fs::write(dir.join(f), "{}\n").unwrap();
    }
    let root = data.join("session");
    std::fs::create_dir(&root).unwrap();
    assert_eq!(finish(&root, "run"), "paused 1");
    root
}

fn every_kill_point_of_resume_and_abandon_leaves_a_session_that_goes_on() {
    let cases = [
        ("resume", "before-save"),
        ("resume", "during-pin"),
        ("resume", "during-save"),
        ("resume", "after-save"),
        ("resume", "after-removal"),
        ("abandon", "before-removal"),
        ("abandon", "after-removal"),
    ];
    for (action, point) in cases {
        let data = tempfile::tempdir().unwrap();
        let root = paused_session(data.path());
        kill_at(&root, action, point);
        // The next process goes on, whatever the kill left: no abandon, no file removed by hand.
        if point == "after-save" {
            // The record outlived its finished cycle: the next boot removes it and says so.
            let lines = lines_of(&root, "go-on");
            assert_eq!(lines, ["removed leftover of cycle 1", "paused 2"], "{action} killed {point}");
            assert_eq!(finish(&root, "go-on"), "completed 2");
            assert_eq!(memories(&root), 2, "nothing of cycle 1 ran again");
            println!("crash: {action} killed {point}: boot removed the leftover record; the session went on");
            continue;
        }
        for _ in 0..2 {
            if completed(&root) == 1 {
                break;
            }
            let last = finish(&root, "go-on");
            assert!(last.starts_with("completed") || last.starts_with("paused"), "{action} killed {point}: {last}");
        }
        assert_eq!(completed(&root), 1, "{action} killed {point}: cycle 1 completed once");
        // And the session keeps going: cycle 2 pauses for review and resumes.
        assert_eq!(finish(&root, "go-on"), "paused 2", "{action} killed {point}");
        assert_eq!(finish(&root, "go-on"), "completed 2", "{action} killed {point}");
        assert_eq!(memories(&root), completed(&root), "{action} killed {point}: one memory per completed cycle");
        println!("crash: {action} killed {point}: the session went on (2 cycles, 2 memories)");
    }
}

/// The approval log's events, by name.
fn log_of(root: &Path) -> Vec<&'static str> {
    use planlock::session::SessionRecords;
    let log = block_on(planlock::session::FileRecords::new(root).approval_log()).unwrap();
    assert_eq!(log.unreadable, 0);
    log.events.iter().map(|e| e.name()).collect()
}

/// A person's approval of the paused cycle, recorded from outside the session's processes.
fn approve_outside(root: &Path) {
    use planlock::session::{FileRecords, ReviewDecision, ReviewVerdict, SessionRecords};

    use planlock::review::decide;
    let records = FileRecords::new(root);
    let record = block_on(records.load_intervention()).unwrap().unwrap();
    block_on(decide(&records, &ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "reviewed"))).unwrap();
}

fn every_kill_point_of_an_approved_run_consumes_the_decision_once() {
    // Where the run acting on the decision is killed (none: the decision waits for a process);
    // a plain approval, and one that edits the step's payload (CONTRACT §22).
    let points =
        [None, Some("before-save"), Some("during-pin"), Some("during-save"), Some("after-save"), Some("after-removal")];
    for (point, edited) in points.into_iter().flat_map(|p| [(p, false), (p, true)]) {
        let data = tempfile::tempdir().unwrap();
        let root = decided_then_killed(data.path(), edited, ("run", point));
        // The next process finishes the work: the approved step's effect once, the decision
        // consumed once, one outcome in the log.
        let lines = lines_of(&root, "run");
        let expected: &[&str] = match point {
            Some("after-save") => &["removed leftover of cycle 1", "paused 2"],
            Some("after-removal") => &["paused 2"],
            _ => &["completed 1"],
        };
        assert_eq!(lines, expected, "killed at {point:?}");
        assert_eq!(completed(&root), 1, "killed at {point:?}");
        assert_eq!(memories(&root), 1, "killed at {point:?}: the approved write happened once");
        assert_eq!(log_of(&root), ["decided", "consumed"], "killed at {point:?}");
        if edited {
            assert_eq!(summaries(&root), ["the reviewer's summary"], "killed at {point:?}: the edited payload");
        }
        println!("crash: an approved run (edited: {edited}) killed at {point:?}: consumed once, written once");
    }
}

/// A worker killed at each point of acting on a decision leaves it to the next worker
/// (CONTRACT §21): the approved step's effect once, the decision consumed once. The same for an
/// edited approval (CONTRACT §22): the step runs once, with the edited payload, and the next
/// cycle runs the plan's own payload again.
fn every_kill_point_of_a_worker_leaves_the_decision_to_the_next() {
    for edited in [false, true] {
        for point in [None, Some("before-save"), Some("after-removal")] {
            let data = tempfile::tempdir().unwrap();
            let root = decided_then_killed(data.path(), edited, ("worker", point));
            // The next worker acts on what is left: the cycle if it did not end, nothing if it did.
            let lines = lines_of(&root, "worker");
            let expected: &[&str] = match point {
                Some("after-removal") => &["worker done"],
                _ => &["session cycle 1: approve by ada: completed", "worker done"],
            };
            let at = format!("worker killed at {point:?}, edited: {edited}");
            assert_eq!(lines, expected, "{at}");
            assert_eq!(completed(&root), 1, "{at}");
            assert_eq!(memories(&root), 1, "{at}: the approved write happened once");
            assert_eq!(log_of(&root), ["decided", "consumed"], "{at}");
            if edited {
                assert_eq!(summaries(&root), ["the reviewer's summary"], "{at}: with the edited payload");
                // The next cycle runs the plan's own payload again: it pauses on it.
                assert_eq!(finish(&root, "go-on"), "paused 2", "{at}");
                let records = planlock::session::FileRecords::new(&root);
                let next = block_on(planlock::session::SessionRecords::load_intervention(&records)).unwrap().unwrap();
                assert_ne!(next.shown.as_ref().unwrap()["payload"]["summary"], "the reviewer's summary", "{at}");
            }
            println!(
                "crash: a worker killed at {point:?} (edited: {edited}): the next one left it consumed once, written once"
            );
        }
    }
}

/// A session under `data` paused, approved from outside (`edited`: with an edit of the step's
/// summary), and a child doing `action` killed at `point` if it names one: its root.
fn decided_then_killed(data: &Path, edited: bool, (action, point): (&str, Option<&str>)) -> std::path::PathBuf {
    let root = paused_session(data);
    match edited {
        false => approve_outside(&root),
        true => edit_outside(&root, "the reviewer's summary"),
    }
    if let Some(point) = point {
        kill_at(&root, action, point);
    }
    root
}

/// A person's approval of the paused cycle that edits the step's summary to `summary`,
/// recorded from outside the session's processes.
fn edit_outside(root: &Path, summary: &str) {
    use planlock::review::{decide, edit_of};
    use planlock::session::{FileRecords, ReviewDecision, ReviewVerdict, SessionRecords};
    let records = FileRecords::new(root);
    let record = block_on(records.load_intervention()).unwrap().unwrap();
    let mut payload = record.shown.as_ref().unwrap()["payload"].clone();
    payload["summary"] = serde_json::json!(summary);
    let edit = block_on(edit_of(&records, &record, payload)).unwrap();
    block_on(decide(&records, &ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "edited").editing(edit)))
        .unwrap();
}

/// The summaries of the memories stored under `root`, in order.
fn summaries(root: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(root.join(planlock::store::sqlite::DATABASE_FILE)).unwrap();
    let mut rows = conn.prepare("SELECT summary FROM memories ORDER BY rowid").unwrap();
    rows.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

fn main() {
    if std::env::var("PLANLOCK_CHILD").is_ok() {
        let root = std::env::var("PLANLOCK_ROOT").expect("PLANLOCK_ROOT");
        let action = std::env::var("PLANLOCK_ACTION").expect("PLANLOCK_ACTION");
        let point = std::env::var("PLANLOCK_POINT").unwrap_or_default();
        match action.as_str() {
            "worker" => worker_child(Path::new(&root), &point),
            _ => child(Path::new(&root), &action, &point),
        }
        return;
    }
    println!("test every_kill_point_of_resume_and_abandon_leaves_a_session_that_goes_on ...");
    every_kill_point_of_resume_and_abandon_leaves_a_session_that_goes_on();
    println!("test every_kill_point_of_an_approved_run_consumes_the_decision_once ...");
    every_kill_point_of_an_approved_run_consumes_the_decision_once();
    println!("test every_kill_point_of_a_worker_leaves_the_decision_to_the_next ...");
    every_kill_point_of_a_worker_leaves_the_decision_to_the_next();
    println!("crash_points: 3 passed, 0 failed");
}
