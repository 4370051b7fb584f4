//! The reviewer's triage outside the browser (CONTRACT §14, §15): `planlock inbox list` filters
//! as the console's inbox does (the same parameters, the same code), Abandon ends an expired or
//! a waiting pause with who and why, and the session's next run acts on it.

use std::path::{Path, PathBuf};

use planlock::review::inbox::{Inbox, InboxFilter};
use serde_json::Value;

use crate::common::cli::planlock;

fn manifest(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `planlock run` of the reviewed plan on root `root` under `dir`, with `extra`: its exit code.
fn run(dir: &Path, root: &str, extra: &[&str]) -> i32 {
    let (policy, plan) = (manifest("examples/policy"), manifest("examples/plans/reviewed_plan.json"));
    let mut cmd = planlock();
    cmd.current_dir(dir).args(["run", "--root", root]).args(extra);
    cmd.arg("--policy-root").arg(policy).arg(plan);
    cmd.output().unwrap().status.code().unwrap()
}

/// `planlock args --format json` under `dir`: its exit code and what it printed.
fn cli(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = planlock().current_dir(dir).args(args).args(["--format", "json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null), stderr)
}

fn sessions_of(listing: &Value) -> Vec<String> {
    listing["pauses"].as_array().unwrap().iter().map(|p| p["session"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn the_inbox_list_filters_as_the_consoles_inbox_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(run(d, "review", &[]), 4);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(run(d, "other", &[]), 4);
    let list = |extra: &[&str]| {
        let mut args = vec!["inbox", "list", "--sessions", "."];
        args.extend_from_slice(extra);
        let (code, listing, stderr) = cli(d, &args);
        assert_eq!(code, 0, "{stderr}");
        sessions_of(&listing)
    };
    assert_eq!(list(&[]), ["review", "other"], "oldest first");
    assert_eq!(list(&["--newest-first"]), ["other", "review"]);
    assert_eq!(list(&["--q", "OTH"]), ["other"], "a word of the name, in any case");
    assert_eq!(list(&["--q", "remember"]), ["review", "other"], "of the step id");
    assert_eq!(list(&["--q", "storage oth"]), ["other"], "every word, in the name, the step or the reason");
    assert_eq!(list(&["--q", "storage nobody"]), Vec::<String>::new());
    assert_eq!(list(&["--state", "decided"]), Vec::<String>::new());
    let approve = ["inbox", "approve", "--sessions", ".", "--by", "ada", "--reason", "fine", "review"];
    assert_eq!(cli(d, &approve).0, 0);
    assert_eq!(list(&["--state", "decided"]), ["review"]);
    assert_eq!(list(&["--q", "FINE"]), ["review"], "a word of the decision's reason (issue 58)");
    assert_eq!(list(&["--state", "waiting", "--step-type", "PersistMemory"]), ["other"]);
    assert_eq!(list(&["--state", "expired"]), Vec::<String>::new());
    // The console's parameters, read by the library, give the same rows.
    let inbox = Inbox::new(planlock::backend::FilesBackend::new(d.to_owned()));
    let filter = InboxFilter::from_pairs([("state", "waiting"), ("stepType", "PersistMemory")]).unwrap();
    let listed = planlock::block_on(inbox.list(&filter)).unwrap();
    assert_eq!(listed.pauses.iter().map(|p| p.session.as_str()).collect::<Vec<_>>(), ["other"]);
    // A state that is none is refused before anything is read.
    let (code, _, stderr) = cli(d, &["inbox", "list", "--sessions", ".", "--state", "lost"]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn an_expired_pause_is_abandoned_with_who_and_why_and_its_next_run_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(run(d, "late", &["--approval-ttl", "1s"]), 4);
    std::thread::sleep(std::time::Duration::from_millis(1300));
    // Expired: an approval or a rejection is refused; an abandon is taken.
    for verdict in ["approve", "reject"] {
        let (code, out, stderr) =
            cli(d, &["inbox", verdict, "--sessions", ".", "--by", "ada", "--reason", "now then", "late"]);
        assert_ne!(code, 0);
        assert!(format!("{out}{stderr}").contains("approval-expired"), "{out}{stderr}");
    }
    let (code, out, stderr) =
        cli(d, &["inbox", "abandon", "--sessions", ".", "--by", "ada", "--reason", "too late to judge", "late"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(out["decision"]["verdict"], "abandon", "{out}");
    let log = |d: &Path| cli(d, &["inbox", "log", "--sessions", ".", "late"]).1;
    let events = log(d)["events"].as_array().unwrap().clone();
    assert_eq!(events[0]["event"], "decided");
    let decision = &events[0]["decision"];
    assert_eq!(
        (&decision["verdict"], &decision["by"], &decision["justification"]),
        (&"abandon".into(), &"ada".into(), &"too late to judge".into())
    );
    // The session's next run abandons the cycle, logs it, and its history says so.
    assert_eq!(run(d, "late", &[]), 1, "abandoned");
    let events = log(d)["events"].as_array().unwrap().clone();
    assert_eq!(events.last().unwrap()["event"], "abandoned");
    let (_, status, _) = cli(d, &["status", "--root", "late", "--history", "5"]);
    assert_eq!(status["history"][0]["end"], "abandoned", "{status}");
    assert_eq!(status["history"][0]["cycle"], 1, "{status}");
    let text = planlock().current_dir(d).args(["status", "--root", "late", "--history", "5"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("cycle 1 abandoned") && text.contains("remember (PersistMemory) Blocked"), "{text}");
    // A waiting pause may be abandoned too; one abandon ends a pause that needs two approvals.
    assert_eq!(run(d, "late", &[]), 4, "the same cycle runs again and pauses");
    let (code, _, stderr) =
        cli(d, &["inbox", "abandon", "--sessions", ".", "--by", "bob", "--reason", "not needed", "late"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(run(d, "late", &[]), 1);
}
