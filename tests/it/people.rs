//! The people who may decide (CONTRACT §18): personal tokens, the access file's rules, approvals
//! by more than one person, and what the CLI records — with the real `planlock` binary, on
//! session roots, and with processes that decide at once.

use std::path::{Path, PathBuf};
use std::process::Output;

use planlock::review::access::token_sha256;
use serde_json::{Value, json};

use crate::approvals::paused_by_the_cli;
use crate::common::cli::{json, planlock};

/// An access file in `dir`: ada, bob and eve; `demo-review` needs `required` of ada and bob.
fn access_file(dir: &Path, required: usize) -> PathBuf {
    let path = dir.join("access.yaml");
    let users: String = ["ada", "bob", "eve"]
        .iter()
        .map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(&format!("{u}'s token"))))
        .collect();
    let text =
        format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: {required} }}\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// `planlock inbox VERB --format json --sessions DIR --by BY --reason … --access FILE s1`.
fn decide(dir: &Path, verb: &str, by: &str, access: Option<&Path>) -> (Option<i32>, Value) {
    let mut cmd = planlock();
    cmd.args(["inbox", verb, "--format", "json", "--sessions"]).arg(dir).args(["--by", by, "--reason", "checked"]);
    if let Some(access) = access {
        cmd.arg("--access").arg(access);
    }
    let out = cmd.arg("s1").output().unwrap();
    (out.status.code(), json(&out))
}

fn log_events(dir: &Path) -> Vec<Value> {
    let out = planlock().args(["inbox", "log", "--format", "json", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    json(&out)["events"].as_array().unwrap().clone()
}

fn names(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["event"].as_str().unwrap()).collect()
}

fn run(args: &[String]) -> Output {
    planlock().args(args).output().unwrap()
}

#[test]
fn a_new_token_is_printed_once_with_the_hash_the_file_keeps() {
    let out = planlock().args(["access", "new-token", "--format", "json"]).output().unwrap();
    let report = json(&out);
    let (token, hash) = (report["token"].as_str().unwrap(), report["tokenSha256"].as_str().unwrap());
    assert_eq!((token.len(), hash.len()), (64, 64), "{report}");
    assert_eq!(token_sha256(token), hash);
    let again = json(&planlock().args(["access", "new-token", "--format", "json"]).output().unwrap());
    assert_ne!(again["token"], report["token"], "a fresh token each time");
}

#[test]
fn two_people_approve_a_pause_that_needs_two_and_only_its_approvers_count() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_file(s.policy.path(), 2);
    // eve is a user, but not an approver of demo-review: refused, nothing recorded.
    let (code, refused) = decide(dir, "approve", "eve", Some(&access));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("not-an-approver")), "{refused}");
    let (code, refused) = decide(dir, "reject", "mallory", Some(&access));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("not-an-approver")), "{refused}");
    assert!(log_events(dir).is_empty(), "nothing recorded for who may not decide");
    // ada's approval counts, once however often she sends it.
    let (code, first) = decide(dir, "approve", "ada", Some(&access));
    assert_eq!((code, &first["counted"]), (Some(0), &json!([1, 2])), "{first}");
    assert_eq!(decide(dir, "approve", "ada", Some(&access)).1["counted"], json!([1, 2]));
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted"]);
    assert_eq!((&log[0]["count"], &log[0]["required"]), (&json!(1), &json!(2)));
    assert_eq!((&log[0]["decision"]["verified"], &log[0]["decision"]["via"]), (&json!(true), &json!("cli")));
    // The session does not act on half an approval: it is still paused.
    assert_eq!(run(&run_args).status.code(), Some(4));
    let list = json(&planlock().args(["inbox", "list", "--format", "json", "--sessions"]).arg(dir).output().unwrap());
    assert_eq!((&list["pauses"][0]["approvals"], &list["pauses"][0]["required"]), (&json!(["ada"]), &json!(2)));
    let text = planlock().args(["inbox", "list", "--sessions"]).arg(dir).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("1 of 2 (ada)"), "{text:?}");
    // bob's makes two: the pause is approved, naming both.
    let (code, second) = decide(dir, "approve", "bob", Some(&access));
    assert_eq!(code, Some(0), "{second}");
    let log = log_events(dir);
    assert_eq!(names(&log), ["voted", "voted", "decided"]);
    assert_eq!(log[2]["decision"]["approvers"], json!(["ada", "bob"]));
    let text = planlock().args(["inbox", "log", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("approval 1 of 2 by `ada`"), "{text:?}");
    // A rejection after it is another decision: refused.
    assert_eq!(decide(dir, "reject", "bob", Some(&access)).1["errorCode"], json!("already-decided"));
    let out = run(&run_args);
    assert_eq!((out.status.code(), &json(&out)["outcome"]), (Some(0), &json!("completed")));
}

#[test]
fn one_rejection_by_an_approver_rejects_and_without_an_access_file_the_name_is_unverified() {
    let (s, run_args) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_file(s.policy.path(), 2);
    assert_eq!(decide(dir, "approve", "ada", Some(&access)).0, Some(0));
    let (code, rejected) = decide(dir, "reject", "bob", Some(&access));
    assert_eq!((code, &rejected["decision"]["verdict"]), (Some(0), &json!("reject")), "{rejected}");
    let out = run(&run_args);
    assert_eq!(json(&out)["outcome"], json!("abandoned"), "{out:?}");
    // The next pause, decided without an access file: one operator, the name as typed.
    assert_eq!(run(&run_args).status.code(), Some(4));
    let (code, decided) = decide(dir, "approve", "whoever", None);
    assert_eq!((code, &decided["decision"]["verified"]), (Some(0), &json!(false)), "{decided}");
    let log = log_events(dir);
    assert_eq!(log.last().unwrap()["decision"]["verified"], json!(false));
    let text = planlock().args(["inbox", "log", "--sessions"]).arg(dir).arg("s1").output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("(unverified name)"), "{text:?}");
}

#[test]
fn a_bad_access_file_is_refused_with_its_line_and_nothing_is_recorded() {
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let bad = s.policy.path().join("bad.yaml");
    std::fs::write(&bad, "users:\n  ada: { tokenSha256: \"x\" }\n").unwrap();
    let (code, refused) = decide(dir, "approve", "ada", Some(&bad));
    assert_eq!((code, &refused["errorCode"]), (Some(3), &json!("access-invalid")), "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("bad.yaml:2:"), "{refused}");
    let link = s.policy.path().join("link.yaml");
    std::os::unix::fs::symlink(access_file(s.policy.path(), 1), &link).unwrap();
    assert_eq!(decide(dir, "approve", "ada", Some(&link)).1["errorCode"], json!("access-invalid"));
    assert!(log_events(dir).is_empty());
}

/// Deciders who send their approvals at the same moment, from processes of their own, many
/// rounds: each pause ends with exactly one approval a person, and the decision naming both.
#[test]
fn racing_approvals_never_count_one_person_twice_and_never_lose_one() {
    for round in 0..12 {
        let (s, _) = paused_by_the_cli();
        let dir = s.sessions.path();
        let access = access_file(s.policy.path(), 2);
        let children: Vec<_> = ["ada", "bob", "ada", "bob"]
            .iter()
            .map(|by| {
                planlock()
                    .args(["inbox", "approve", "--format", "json", "--sessions"])
                    .arg(dir)
                    .args(["--by", by, "--reason", "checked", "--access"])
                    .arg(&access)
                    .arg("s1")
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "round {round}: {}", String::from_utf8_lossy(&out.stdout));
        }
        let log = log_events(dir);
        assert_eq!(names(&log), ["voted", "voted", "decided"], "round {round}: {log:?}");
        let mut approvers: Vec<&str> =
            log[2]["decision"]["approvers"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        approvers.sort_unstable();
        assert_eq!(approvers, ["ada", "bob"], "round {round}");
    }
}
