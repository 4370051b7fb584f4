//! Notifications that reach people (CONTRACT §18): `planlock notify` delivers the pauses'
//! events to receivers that verify every signature with the `standardwebhooks` package from
//! PyPI (in the virtual environment `.ci/webhooks` makes: `PLANLOCK_WEBHOOKS`), at least once,
//! with retries under the same id; a receiver that hangs holds up no other, a killed sender loses
//! nothing, two senders never deliver one event at once, and an expired pause is said once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use planlock::review::access::token_sha256;
use serde_json::Value;

use crate::approvals::paused_by_the_cli;
use crate::common::cli::{json, planlock};
use crate::common::webhooks::{Receiver, SECRET, python};

/// An access file in `dir`: ada and bob (demo-review needs both), and `hooks` (URL, secret
/// variable) receiving every event.
fn access_with_hooks(dir: &Path, hooks: &[(&str, &str)]) -> PathBuf {
    let path = dir.join("access.yaml");
    let mut text = String::from("users:\n");
    for u in ["ada", "bob"] {
        text.push_str(&format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(&format!("{u}'s token"))));
    }
    text.push_str("validators:\n  demo-review: { approvers: [ada, bob], required: 2 }\nwebhooks:\n");
    for (url, var) in hooks {
        text.push_str(&format!(
            "  - {{ url: \"{url}\", secretEnv: {var}, events: [pause.created, pause.decided, pause.expired, pause.resolved] }}\n"
        ));
    }
    text.push_str("console: { url: \"https://console.example.com/\" }\n");
    std::fs::write(&path, text).unwrap();
    path
}

/// `planlock notify` on `dir` with `access`: the command, to add `--once` to or to spawn.
fn notify(dir: &Path, access: &Path) -> Command {
    let mut cmd = planlock();
    cmd.args(["notify", "--format", "json", "--timeout", "2s", "--first-retry", "1s", "--sessions"])
        .arg(dir)
        .arg("--access")
        .arg(access)
        .envs([("HOOK_A", SECRET), ("HOOK_B", SECRET)]);
    cmd
}

fn once(dir: &Path, access: &Path) -> Vec<Value> {
    let out = notify(dir, access).arg("--once").output().unwrap();
    // Exit 1 when something was due and nothing could be delivered.
    let attempts = json(&out)["attempts"].as_array().cloned().unwrap_or_default();
    let delivered = attempts.is_empty() || attempts.iter().any(|a| a["outcome"] == "delivered");
    assert_eq!(out.status.code(), Some(if delivered { 0 } else { 1 }), "{out:?}");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!said.contains(&SECRET[6..]), "no secret in any output: {said}");
    json(&out)["attempts"].as_array().unwrap().clone()
}

fn approve(dir: &Path, by: &str, access: &Path) {
    let out = planlock()
        .args(["inbox", "approve", "--format", "json", "--sessions"])
        .arg(dir)
        .args(["--by", by, "--reason", "checked", "--access"])
        .arg(access)
        .arg("s1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn every_notification_arrives_signed_and_says_nothing_of_what_was_shown() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "ok");
    let (s, run) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]);
    approve(dir, "ada", &access);
    approve(dir, "bob", &access);
    assert_eq!(planlock().args(&run).output().unwrap().status.code(), Some(0), "completed with both approvals");
    let attempts = once(dir, &access);
    assert!(attempts.iter().all(|a| a["outcome"] == "delivered"), "{attempts:?}");
    let got = receiver.answered();
    assert!(got.iter().all(|e| e["verified"] == true), "every signature verifies: {got:?}");
    let mut kinds: Vec<&str> = got.iter().map(|e| e["type"].as_str().unwrap()).collect();
    kinds.sort_unstable();
    // One event per decision: ada's approval (1 of 2), then the decision bob's completes.
    assert_eq!(kinds, ["pause.created", "pause.decided", "pause.decided", "pause.resolved"]);
    let partial = got.iter().find(|e| e["data"]["complete"] == false).unwrap();
    assert_eq!(
        (&partial["data"]["approvals"], &partial["data"]["approvedBy"], &partial["data"]["mayStillApprove"]),
        (&serde_json::json!(1), &serde_json::json!(["ada"]), &serde_json::json!(["bob"]))
    );
    let created = got.iter().find(|e| e["type"] == "pause.created").unwrap();
    assert_eq!(created["data"]["stepId"], "remember");
    assert_eq!(created["data"]["url"], "https://console.example.com/inbox/s1/1/remember", "the pause's own page");
    assert!(created["data"]["shownDigest"].as_str().is_some_and(|d| d.len() == 64));
    let complete = got.iter().find(|e| e["data"]["complete"] == true).unwrap();
    assert_eq!(complete["data"]["by"], serde_json::json!(["ada", "bob"]));
    for e in &got {
        assert!(!e["body"].as_str().unwrap().contains("key rotation"), "no shown content: {}", e["body"]);
    }
    assert_eq!((&complete["data"]["approvals"], &complete["data"]["required"]), (&2.into(), &2.into()));
    assert_eq!(complete["data"]["mayStillApprove"], serde_json::json!([]));
    assert!(once(dir, &access).is_empty(), "each delivered once: nothing is due again");
    assert_eq!(receiver.answered().len(), 4);
}

#[test]
fn a_failed_delivery_is_retried_under_the_same_id() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "fail-first");
    let (s, _) = paused_by_the_cli();
    let (dir, access) = (s.sessions.path(), access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]));
    let first = once(dir, &access);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(
        (first[0]["outcome"].as_str(), first[0]["why"].as_str()),
        (Some("retry"), Some("the receiver answered 500 Internal Server Error"))
    );
    assert!(once(dir, &access).is_empty(), "not due again before its retry time");
    std::thread::sleep(Duration::from_millis(1300));
    let second = once(dir, &access);
    assert_eq!(second[0]["outcome"], "delivered", "{second:?}");
    let got = receiver.answered();
    assert_eq!(got.len(), 2);
    assert_eq!((got[0]["id"].clone(), got[0]["status"].clone()), (got[1]["id"].clone(), 500.into()));
    assert_eq!(got[1]["status"], 200);
}

#[test]
fn a_receiver_that_hangs_holds_up_no_other() {
    let Some(python) = python() else { return };
    let (hanging, healthy) = (Receiver::start(&python, "hang"), Receiver::start(&python, "ok"));
    let (s, _) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_with_hooks(s.policy.path(), &[(&hanging.url, "HOOK_A"), (&healthy.url, "HOOK_B")]);
    let mut sender = notify(dir, &access).stdout(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    let arrived = healthy.wait_for(Duration::from_secs(5), |e| e.iter().any(|e| e["phase"] == "end"));
    let took = started.elapsed();
    let _ = sender.kill();
    let _ = sender.wait();
    assert!(arrived && took < Duration::from_secs(4), "the healthy receiver waited {took:?}");
    assert!(hanging.entries().iter().any(|e| e["phase"] == "start"), "the hanging one was asked");
}

#[test]
fn a_sender_killed_mid_delivery_loses_nothing() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "slow-first");
    let (s, _) = paused_by_the_cli();
    let (dir, access) = (s.sessions.path(), access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]));
    let mut sender = notify(dir, &access).stdout(Stdio::null()).spawn().unwrap();
    assert!(receiver.wait_for(Duration::from_secs(5), |e| !e.is_empty()), "the delivery began");
    // Killed while the receiver has not answered yet.
    sender.kill().unwrap();
    sender.wait().unwrap();
    let again = once(dir, &access);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0]["outcome"], "delivered");
    let starts: Vec<Value> =
        receiver.entries().into_iter().filter(|e| e["phase"] == "start").map(|e| e["id"].clone()).collect();
    assert_eq!(starts.len(), 2, "the same event, sent again: {starts:?}");
    assert_eq!(starts[0], starts[1]);
}

#[test]
fn two_senders_never_deliver_one_event_at_once() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "slow");
    let (s, run) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]);
    approve(dir, "ada", &access);
    approve(dir, "bob", &access);
    assert_eq!(planlock().args(&run).output().unwrap().status.code(), Some(0));
    let mut senders: Vec<Child> = (0..2).map(|_| notify(dir, &access).stdout(Stdio::null()).spawn().unwrap()).collect();
    // Four events: the pause, ada's approval, the decision bob's completed, its resolution.
    let all = receiver.wait_for(Duration::from_secs(20), |e| e.iter().filter(|e| e["phase"] == "end").count() >= 4);
    std::thread::sleep(Duration::from_secs(2));
    for sender in &mut senders {
        let _ = sender.kill();
        let _ = sender.wait();
    }
    assert!(all, "{:?}", receiver.entries());
    let got = receiver.answered();
    for (i, a) in got.iter().enumerate() {
        for b in &got[i + 1..] {
            if a["id"] == b["id"] {
                let (a0, a1, b0, b1) = (a["start"].as_f64(), a["end"].as_f64(), b["start"].as_f64(), b["end"].as_f64());
                assert!(a1 <= b0 || b1 <= a0, "one event delivered twice at once: {a} {b}");
            }
        }
    }
    let mut ids: Vec<&str> = got.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 4, "every event delivered (one per decision): {got:?}");
}

#[test]
fn an_expired_pause_is_said_once() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "ok");
    let (s, mut run) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]);
    // A second session whose pause expires in a second.
    let root = dir.join("s2");
    std::fs::create_dir(&root).unwrap();
    let at = run.iter().position(|a| a == "--root").unwrap() + 1;
    run[at] = root.to_str().unwrap().to_owned();
    run.extend(["--approval-ttl".to_owned(), "1s".to_owned()]);
    assert_eq!(planlock().args(&run).output().unwrap().status.code(), Some(4));
    std::thread::sleep(Duration::from_millis(1200));
    once(dir, &access);
    once(dir, &access);
    let expired: Vec<Value> = receiver.answered().into_iter().filter(|e| e["type"] == "pause.expired").collect();
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["data"]["session"], "s2");
}

#[test]
fn a_missing_or_malformed_secret_is_refused_by_its_name_never_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let access = access_with_hooks(dir.path(), &[("http://127.0.0.1:9/hook", "HOOK_A")]);
    let run = |value: Option<&str>| {
        let mut cmd = planlock();
        cmd.args(["notify", "--once", "--format", "json", "--sessions"]).arg(dir.path()).arg("--access").arg(&access);
        cmd.env_remove("HOOK_A");
        if let Some(value) = value {
            cmd.env("HOOK_A", value);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), json(&out))
    };
    let (code, missing) = run(None);
    assert_eq!((code, &missing["errorCode"]), (Some(3), &serde_json::json!("webhook-secret")), "{missing}");
    assert!(missing["error"].as_str().unwrap().contains("HOOK_A"), "{missing}");
    let (code, malformed) = run(Some("s3cr3t-value-not-whsec"));
    assert_eq!(code, Some(3));
    assert!(!malformed.to_string().contains("s3cr3t-value"), "the value is never said: {malformed}");
}

/// An event older than the sender may try is given up, said, and never sent; done, it is not
/// due again.
#[test]
fn an_event_too_old_to_try_is_given_up_and_said() {
    use planlock::review::notify::{Notifier, NotifyOptions};
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "ok");
    let (s, _) = paused_by_the_cli();
    let access = access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_GIVE_UP")]);
    let access = planlock::review::access::Access::load(&access).unwrap();
    let backend: std::sync::Arc<dyn planlock::backend::Backend> =
        std::sync::Arc::new(planlock::backend::FilesBackend::new(s.sessions.path()));
    let options = NotifyOptions::default().give_up_after(Duration::ZERO);
    let notifier = Notifier::with_secrets(backend, &access, options, |_| Some(SECRET.to_owned())).unwrap();
    let attempted = planlock::block_on(notifier.once()).unwrap();
    assert_eq!(attempted.len(), 1, "{attempted:?}");
    assert_eq!(attempted[0].outcome, "given-up");
    assert!(planlock::block_on(notifier.once()).unwrap().is_empty(), "given up is done");
    assert!(receiver.entries().is_empty(), "nothing was sent");
}

/// One session whose outbox this sender cannot use (here: a directory where its deliveries file
/// goes) is skipped and said; the other sessions' pauses are delivered, and `--once` says what
/// was delivered and what failed. A secret in the receiver's query is never printed.
#[test]
fn one_session_that_cannot_be_used_stops_no_other_and_a_secret_in_the_query_is_not_printed() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "ok");
    let (s, run) = paused_by_the_cli();
    let dir = s.sessions.path();
    let url = format!("{}?token=Sup3rSecret-Query", receiver.url);
    let access = access_with_hooks(s.policy.path(), &[(&url, "HOOK_A")]);
    // A second paused session, s2.
    let mut second = run.clone();
    let root = second.iter().position(|a| a == "--root").unwrap() + 1;
    second[root] = dir.join("s2").to_str().unwrap().to_owned();
    assert_eq!(planlock().args(&second).output().unwrap().status.code(), Some(4));
    use sha2::Digest as _;
    let hook: String = sha2::Sha256::digest(url.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(dir.join(format!("s1/ops/runtime/deliveries-{hook}.jsonl"))).unwrap();
    let out = notify(dir, &access).arg("--once").output().unwrap();
    let report = json(&out);
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!said.contains("Sup3rSecret"), "the query's secret was printed: {said}");
    let attempts = report["attempts"].as_array().unwrap();
    let of = |session: &str, outcome: &str| {
        attempts.iter().filter(|a| a["session"] == session && a["outcome"] == outcome).count()
    };
    assert_eq!((of("s1", "skipped"), of("s2", "delivered")), (1, 1), "{report}");
    assert_eq!(out.status.code(), Some(0), "something was delivered");
    let text = notify(dir, &access);
    let args: Vec<_> = text.get_args().map(|a| a.to_owned()).collect();
    let mut text = planlock();
    text.args(args.iter().filter(|a| *a != "--format" && *a != "json")).envs([("HOOK_A", SECRET)]);
    let text = text.arg("--once").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("0 delivered, 0 failed, 1 sessions skipped"), "{text}");
}

/// The README's receiver (`examples/webhook_receiver.py`) listens where it is told (`--port`)
/// and prints each verified event once.
#[test]
fn the_example_receiver_takes_its_port_and_verifies_what_it_prints() {
    use std::io::BufRead;
    let Some(python) = python() else { return };
    let port = crate::common::models::free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/webhook_receiver.py");
    let mut child = Command::new(&python)
        .arg(&script)
        .args(["--port", &port.to_string()])
        .env("PLANLOCK_WEBHOOK_SECRET", SECRET)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, format!("listening on http://127.0.0.1:{port}/"));
    let (s, _) = paused_by_the_cli();
    let access = access_with_hooks(s.policy.path(), &[(&format!("http://127.0.0.1:{port}/hook"), "HOOK_A")]);
    let attempts = once(s.sessions.path(), &access);
    assert_eq!(attempts[0]["outcome"], "delivered", "{attempts:?}");
    let said = lines.next().unwrap().unwrap();
    assert!(said.starts_with("pause.created: session s1, step remember"), "{said}");
    let _ = child.kill();
    let _ = child.wait();
}

/// An edit (CONTRACT §22) is said in `pause.decided` — that one was made, and its digest —
/// never its payload.
#[test]
fn a_decision_that_edits_says_so_and_its_digest_never_the_payload() {
    let Some(python) = python() else { return };
    let receiver = Receiver::start(&python, "ok");
    let (s, run) = paused_by_the_cli();
    let dir = s.sessions.path();
    let access = access_with_hooks(s.policy.path(), &[(&receiver.url, "HOOK_A")]);
    let payload = s.policy.path().join("edit.json");
    std::fs::write(
        &payload,
        r#"{"summary": "a secret edit", "keywords": ["api", "key", "rotation"], "sessionRef": "session-42"}"#,
    )
    .unwrap();
    let out = planlock()
        .args(["inbox", "edit", "--format", "json", "--sessions"])
        .arg(dir)
        .args(["--by", "ada", "--reason", "redacted", "--payload"])
        .arg(&payload)
        .arg("--access")
        .arg(&access)
        .arg("s1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let digest = json(&out)["decision"]["edit"]["digest"].as_str().unwrap().to_owned();
    let out = planlock()
        .args(["inbox", "approve", "--format", "json", "--sessions"])
        .arg(dir)
        .args(["--by", "bob", "--reason", "the edit is fine", "--digest", &digest, "--access"])
        .arg(&access)
        .arg("s1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(planlock().args(&run).output().unwrap().status.code(), Some(0));
    once(dir, &access);
    let got = receiver.answered();
    let decided: Vec<&Value> = got.iter().filter(|e| e["type"] == "pause.decided").collect();
    assert_eq!(decided.len(), 2, "{got:?}");
    for e in &decided {
        assert_eq!(e["data"]["editDigest"], serde_json::json!(digest), "{e}");
        assert_eq!(e["data"]["edited"], true, "{e}");
    }
    for e in &got {
        assert!(!e["body"].as_str().unwrap().contains("a secret edit"), "no payload: {}", e["body"]);
    }
}
