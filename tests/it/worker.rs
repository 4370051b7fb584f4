//! A decision takes effect by itself (CONTRACT §21): a running `planlock worker` runs the
//! session's next cycle as soon as its pause is decided — no `run` typed — woken by the decision
//! (the session roots watched), with the plan the session keeps.

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use crate::common::cli::{json, planlock};
use crate::common::worker::WorkerProcess;

const PLAN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plans/reviewed_plan.json");
const POLICY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");

/// Pauses the first cycle of session `name` under `dir`.
fn paused(dir: &Path, name: &str) {
    let out = planlock().args(["run", "--root"]).arg(dir.join(name)).args(["--policy-root", POLICY, PLAN]).output();
    assert_eq!(out.unwrap().status.code(), Some(4), "paused");
}

fn inbox(dir: &Path, args: &[&str]) {
    let out = planlock().arg("inbox").args(args).arg("--sessions").arg(dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

fn status(dir: &Path, name: &str) -> serde_json::Value {
    json(&planlock().args(["status", "--format", "json", "--root"]).arg(dir.join(name)).output().unwrap())
}

/// `planlock worker` over the roots under `dir`, looking at every session every `poll`.
fn watching(dir: &Path, poll: &str) -> WorkerProcess {
    let args: Vec<&OsStr> = vec![
        "--sessions".as_ref(),
        dir.as_os_str(),
        "--policy-root".as_ref(),
        POLICY.as_ref(),
        "--poll".as_ref(),
        poll.as_ref(),
    ];
    WorkerProcess::start(&args)
}

#[test]
fn a_running_worker_acts_on_each_decision_as_it_is_made() {
    let dir = tempfile::tempdir().unwrap();
    paused(dir.path(), "approved");
    paused(dir.path(), "rejected");
    // A poll far longer than the test: what it acts on, it was woken for.
    let mut worker = watching(dir.path(), "10m");
    worker.wait_for("started: woken by each decision", Duration::from_secs(30));
    inbox(dir.path(), &["approve", "--by", "ada", "--reason", "checked", "approved"]);
    let acted = worker.wait_for("approved cycle 1", Duration::from_secs(20));
    assert!(acted.ends_with("approve by ada: completed"), "{acted}");
    let done = status(dir.path(), "approved");
    assert_eq!((&done["status"], &done["session"]["cycle"]), (&serde_json::json!("ready"), &serde_json::json!(1)));
    inbox(dir.path(), &["reject", "--by", "ada", "--reason", "not this", "rejected"]);
    let acted = worker.wait_for("rejected cycle 1", Duration::from_secs(20));
    assert!(acted.ends_with("reject by ada: abandoned"), "{acted}");
    assert!(status(dir.path(), "rejected")["intervention"].is_null());
    assert_eq!(worker.stop(), Some(0), "SIGTERM stops it cleanly");
}

/// A decision made while no worker ran is acted on when one starts; `--once` acts on what is
/// decided and stops.
#[test]
fn a_worker_acts_on_what_was_decided_before_it_started() {
    let dir = tempfile::tempdir().unwrap();
    paused(dir.path(), "s1");
    inbox(dir.path(), &["approve", "--by", "ada", "--reason", "checked", "s1"]);
    let out = planlock()
        .args(["worker", "--once", "--sessions"])
        .arg(dir.path())
        .args(["--policy-root", POLICY])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("s1 cycle 1: approve by ada: completed"), "{text}");
    assert_eq!(status(dir.path(), "s1")["session"]["cycle"], 1);
}

/// A pause that expired undecided (CONTRACT §21): with `onExpiry: abandon` in its validator's
/// rule, a worker abandons it once, logged as a decision by `planlock` whose reason names the
/// rule; with the default (`wait`), it is left for a person.
#[test]
fn an_expired_pause_is_abandoned_by_its_rule_or_left_to_wait() {
    let token = planlock::review::access::token_sha256("ada-token");
    for (rule, abandons) in [(", onExpiry: abandon", true), ("", false)] {
        let dir = tempfile::tempdir().unwrap();
        let access = dir.path().join("access.yaml");
        let text = format!(
            "users:\n  ada: {{ tokenSha256: \"{token}\" }}\nvalidators:\n  demo-review: {{ approvers: [ada]{rule} }}\n"
        );
        std::fs::write(&access, text).unwrap();
        let sessions = dir.path().join("sessions");
        std::fs::create_dir(&sessions).unwrap();
        let install =
            planlock().args(["access", "install", "--sessions"]).arg(&sessions).arg(&access).output().unwrap();
        assert_eq!(install.status.code(), Some(0), "{install:?}");
        let out = planlock()
            .args(["run", "--approval-ttl", "1s", "--root"])
            .arg(sessions.join("s1"))
            .args(["--policy-root", POLICY, PLAN])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{out:?}");
        std::thread::sleep(Duration::from_millis(1200));
        let once = || {
            let out = planlock()
                .args(["worker", "--once", "--sessions"])
                .arg(&sessions)
                .args(["--policy-root", POLICY])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let said = once();
        let log = planlock().args(["inbox", "log", "--format", "json", "--sessions"]).arg(&sessions).arg("s1").output();
        let log = json(&log.unwrap()).to_string();
        if abandons {
            assert!(said.contains("s1 cycle 1: abandon by planlock: abandoned"), "{said}");
            assert!(log.contains("onExpiry: abandon") && log.contains("\"via\":\"rule\""), "{log}");
            assert!(status(&sessions, "s1")["intervention"].is_null(), "abandoned");
            assert!(!once().contains("s1"), "applied once");
        } else {
            assert!(!said.contains("s1"), "left to wait: {said}");
            assert!(!status(&sessions, "s1")["intervention"].is_null(), "still paused");
        }
    }
}

/// A session the worker cannot act on (here: it keeps no plan) is said once, with what to do,
/// not at every poll; and a session found by the poll alone (no wake-up: the decision came
/// before the worker) is acted on once its plan is back.
#[test]
fn a_session_skipped_is_said_once_not_at_every_poll() {
    let dir = tempfile::tempdir().unwrap();
    paused(dir.path(), "s1");
    let plan = dir.path().join("s1").join(planlock::session::PLAN_FILE);
    let kept = std::fs::read(&plan).unwrap();
    std::fs::remove_file(&plan).unwrap();
    inbox(dir.path(), &["approve", "--by", "ada", "--reason", "checked", "s1"]);
    let mut worker = watching(dir.path(), "1s");
    let skipped = worker.wait_for("s1: skipped", Duration::from_secs(30));
    assert!(skipped.contains("keeps no plan"), "{skipped}");
    let later = worker.said_within(Duration::from_millis(3500));
    assert!(later.iter().all(|l| !l.contains("skipped")), "said again at a later poll: {later:?}");
    std::fs::write(&plan, kept).unwrap();
    let acted = worker.wait_for("s1 cycle 1", Duration::from_secs(20));
    assert!(acted.ends_with("approve by ada: completed"), "{acted}");
    assert_eq!(worker.stop(), Some(0));
}
