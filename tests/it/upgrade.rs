//! Records written by an earlier version stay readable (CONTRIBUTING.md, "Records"): the
//! fixtures under `tests/fixtures/v0.1/` were written by planlock 0.1 and are never edited. Each
//! test copies one to a temporary directory and boots on it with the current code: the plan
//! hash recomputes equal, a paused record resumes, the stores answer the same searches. The
//! PostgreSQL fixture is checked by the PostgreSQL harness (`tests/postgres/upgrade.rs`).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

const QUERY: &str = "API key rotation";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.1")
}

/// A copy of a fixture root, so the test may resume it.
struct Copy {
    dir: tempfile::TempDir,
}

impl Copy {
    fn of(name: &str) -> Copy {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(&fixtures().join("files").join(name), dir.path());
        Copy { dir }
    }

    fn cli(&self, args: &[&str]) -> Output {
        crate::common::cli::planlock().args(args).arg("--root").arg(self.dir.path()).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.cli(args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Runs (or resumes) a cycle of `plan` from the fixture set; its exit code and report.
    fn cycle(&self, plan: &str, extra: &[&str]) -> (i32, Value) {
        let mut cmd = crate::common::cli::planlock();
        cmd.args(extra).arg("--root").arg(self.dir.path());
        cmd.arg("--policy-root").arg(fixtures().join("policy")).args(["--format", "json"]).arg(fixtures().join(plan));
        let out = cmd.output().unwrap();
        let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        (out.status.code().unwrap(), report)
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn expected(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixtures().join("expected").join(name)).unwrap()).unwrap()
}

fn expected_hash(plan: &str) -> String {
    std::fs::read_to_string(fixtures().join("expected").join(format!("{plan}.hash"))).unwrap().trim().to_owned()
}

/// The plan hash of a fixture plan, computed by the current code.
fn hash_now(plan: &str) -> String {
    let out = crate::common::cli::planlock()
        .args(["hash", "--policy-root"])
        .arg(fixtures().join("policy"))
        .arg(fixtures().join(plan))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The members of a status report that 0.1 wrote: what the current code reads back must be
/// these, member for member (it may add members of its own).
fn assert_status_keeps(now: &Value, then: &Value) {
    for part in ["session", "pin"] {
        assert_eq!(now[part], then[part], "{part}");
    }
    let (now, then) = (&now["intervention"], &then["intervention"]);
    assert_eq!(now.is_null(), then.is_null());
    if let Value::Object(members) = then {
        for (name, value) in members {
            assert_eq!(&now[name], value, "intervention.{name}");
        }
    }
}

/// Approves each write of the review plan in turn until the cycle completes.
fn approve_until_done(root: &Copy, plan: &str, steps: &[&str]) -> Value {
    for (i, step) in steps.iter().enumerate() {
        let args = ["resume", "--approve", "demo-review", "--step", step, "--reason", "checked after the upgrade"];
        let (code, report) = root.cycle(plan, &args);
        let last = i + 1 == steps.len();
        assert_eq!(code, if last { 0 } else { 4 }, "{step}: {report}");
        if last {
            return report;
        }
    }
    unreachable!("no step to approve")
}

#[test]
fn the_plan_hashes_of_0_1_recompute_equal() {
    for plan in ["plan.json", "semantic_plan.json", "memory_plan.json"] {
        let stem = plan.trim_end_matches(".json");
        assert_eq!(hash_now(plan), expected_hash(stem), "{plan}");
    }
}

#[test]
fn a_first_cycle_paused_by_0_1_resumes_under_its_reserved_id() {
    let root = Copy::of("first-pause");
    let then = expected("first-pause.status.json");
    assert_status_keeps(&root.json(&["status", "--format", "json"]), &then);
    assert_eq!(then["intervention"]["planHash"], expected_hash("plan"));
    let done = approve_until_done(&root, "plan.json", &["remember", "decide", "evidence", "link"]);
    assert_eq!(done["cycle"], 1);
    let status = root.json(&["status", "--format", "json"]);
    assert_eq!(status["session"]["sessionId"], then["intervention"]["sessionId"], "the reserved id is the session's");
    assert_eq!(status["session"]["cycle"], 1);
}

#[test]
fn a_session_paused_by_0_1_reads_the_same_and_resumes() {
    let root = Copy::of("paused");
    let then = expected("paused.status.json");
    assert_status_keeps(&root.json(&["status", "--format", "json"]), &then);
    // A boot upgrades the record (as a pin is upgraded): what it shows is rebuilt and saved, so a
    // decision binds to it; the pause itself is the same.
    let (code, report) = root.cycle("plan.json", &["run"]);
    assert_eq!(code, 4, "{report}");
    let upgraded = root.json(&["status", "--format", "json"]);
    assert_status_keeps(&upgraded, &then);
    assert_eq!(upgraded["intervention"]["shown"]["payload"]["summary"], "key rotation", "{upgraded}");
    assert_eq!(upgraded["intervention"]["shown"]["results"]["llm"], then["intervention"]["completed"][5]["result"]);
    assert!(upgraded["intervention"]["shownDigest"].as_str().is_some_and(|d| d.len() == 64));
    assert_eq!(root.json(&["memory", "search", "--format", "json", QUERY]), expected("paused.search.json"));
    let decisions = root.json(&["decisions", "--domain", "security", "--format", "json"]);
    assert_eq!(decisions, expected("paused.decisions.json"));
    let done = approve_until_done(&root, "plan.json", &["remember", "decide", "evidence", "link"]);
    assert_eq!(done["cycle"], 2);
    let status = root.json(&["status", "--format", "json"]);
    assert_eq!(status["session"]["sessionId"], then["session"]["sessionId"]);
    assert_eq!(status["session"]["cycle"], 2);
    assert!(status["intervention"].is_null(), "{status}");
}

#[test]
fn a_semantic_store_of_0_1_answers_the_same_and_takes_the_next_cycle() {
    let root = Copy::of("semantic");
    assert_status_keeps(&root.json(&["status", "--format", "json"]), &expected("semantic.status.json"));
    assert_eq!(root.json(&["memory", "search", "--format", "json", QUERY]), expected("semantic.search.json"));
    let decisions = root.json(&["decisions", "--domain", "security", "--format", "json"]);
    assert_eq!(decisions, expected("semantic.decisions.json"));
    let bundle = fixtures().join("bundle");
    let (code, report) = root.cycle("semantic_plan.json", &["run", "--bundle", bundle.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["cycle"], 3);
    let now = root.json(&["memory", "search", "--format", "json", QUERY]);
    assert_eq!(now["items"].as_array().unwrap().len(), 3, "the new cycle's memory is found beside the old ones: {now}");
}
