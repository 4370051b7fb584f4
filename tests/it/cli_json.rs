//! Every command answers in JSON when asked, on every path (README, "Exit codes and output"):
//! exactly one JSON object on stdout (its report, or `{"error", "errorCode"}`), nothing on
//! stderr, the documented exit code; usage errors included. And the commands that only read
//! answer while another process runs a cycle on the same root (they take no lock), an
//! embeddings server a bundle does not need is never contacted, and a justification of
//! invisible characters is blank.
#![cfg(unix)]

use crate::common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

struct Setup {
    root: tempfile::TempDir,
    policy: tempfile::TempDir,
    dir: tempfile::TempDir,
    plan: PathBuf,
    reviewed: PathBuf,
}

fn setup() -> Setup {
    let (root, policy, dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    common::policy(policy.path(), "friendly");
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, common::plan_with(|_| {}).to_json()).unwrap();
    let reviewed = dir.path().join("reviewed.json");
    let reviewed_plan = common::plan_with(|v| v["validators"] = json!([planlock::demo::ReviewGate::signature()]));
    std::fs::write(&reviewed, reviewed_plan.to_json()).unwrap();
    Setup { root, policy, dir, plan, reviewed }
}

fn planlock(args: &[&str]) -> Output {
    crate::common::cli::planlock().args(args).output().unwrap()
}

/// The one JSON object a command printed (and nothing on stderr); fails otherwise.
fn one_object(what: &str, out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.stderr.is_empty(), "{what}: stderr: {}", String::from_utf8_lossy(&out.stderr));
    let mut values = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    let first = values.next().unwrap_or_else(|| panic!("{what}: no JSON on stdout"));
    let first = first.unwrap_or_else(|e| panic!("{what}: {e}: {stdout}"));
    assert!(values.next().is_none(), "{what}: more than one JSON value: {stdout}");
    assert!(first.is_object(), "{what}: {first}");
    first
}

/// `{"error", "errorCode"}` and the exit code.
fn assert_error(what: &str, out: &Output, exit: i32, code: &str) {
    let v = one_object(what, out);
    assert_eq!(out.status.code(), Some(exit), "{what}: {v}");
    assert_eq!(v["errorCode"], code, "{what}: {v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{what}: {v}");
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn every_command_answers_one_json_object_on_every_path() {
    let s = setup();
    let (root, pol, plan, reviewed) = (path(s.root.path()), path(s.policy.path()), path(&s.plan), path(&s.reviewed));
    let missing = s.dir.path().join("missing");
    let missing = path(&missing);
    let j = ["--format", "json"];
    let cmd = |args: &[&str]| planlock(&[&j[..], args].concat());

    // validate, hash, schema
    let v = one_object("validate", &cmd(&["validate", plan]));
    assert_eq!(v["valid"], true);
    let out = cmd(&["validate", missing]);
    assert_eq!(
        (out.status.code(), one_object("validate missing", &out)["errorCode"].clone()),
        (Some(2), json!("cannot-read"))
    );
    let out = cmd(&["hash", "--policy-root", pol, plan]);
    assert_eq!(one_object("hash", &out)["hash"].as_str().map(str::len), Some(64));
    let out = cmd(&["hash", "--policy-root", pol, "--parts", plan]);
    assert!(one_object("hash --parts", &out)["parts"].is_object());
    assert_error("hash, no policy", &cmd(&["hash", "--policy-root", missing, plan]), 3, "profile-unreadable");
    assert_error("hash, no plan", &cmd(&["hash", "--policy-root", pol, missing]), 2, "cannot-read");
    let out = cmd(&["schema"]);
    assert_eq!(one_object("schema", &out)["$id"], planlock::PLAN_SCHEMA_ID);

    // status, memory search, decisions, abandon: on a root that does not exist, then on a session.
    for (what, args) in [
        ("status", vec!["status", "--root", missing]),
        ("memory search", vec!["memory", "search", "--root", missing, "key"]),
        ("decisions", vec!["decisions", "--root", missing]),
        ("abandon", vec!["abandon", "--root", missing]),
    ] {
        assert_error(&format!("{what} without a root"), &cmd(&args), 3, "session-root");
    }
    let out = cmd(&["run", "--root", root, "--policy-root", pol, plan]);
    assert_eq!((out.status.code(), one_object("run", &out)["outcome"].clone()), (Some(0), json!("completed")));
    assert_eq!(one_object("status", &cmd(&["status", "--root", root]))["session"]["cycle"], 1);
    assert!(one_object("memory", &cmd(&["memory", "search", "--root", root, "key"]))["items"].is_array());
    assert!(one_object("decisions", &cmd(&["decisions", "--root", root]))["decisions"].is_array());
    assert_error("abandon, nothing paused", &cmd(&["abandon", "--root", root]), 1, "nothing-paused");
    assert_error(
        "resume, nothing paused",
        &cmd(&[
            "resume",
            "--root",
            root,
            "--policy-root",
            pol,
            "--approve",
            "demo-review",
            "--step",
            "remember",
            "--reason",
            "ok",
            plan,
        ]),
        1,
        "not-paused",
    );
    // A damaged session file: every reader says so in JSON.
    let state = s.root.path().join("ops/runtime/session_state.json");
    let saved = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"{ not json").unwrap();
    assert_error("status, damaged", &cmd(&["status", "--root", root]), 3, "session-corrupt");
    let out = cmd(&["run", "--root", root, "--policy-root", pol, plan]);
    assert_eq!(
        (out.status.code(), one_object("run, damaged", &out)["errorCode"].clone()),
        (Some(3), json!("session-corrupt"))
    );
    std::fs::write(&state, saved).unwrap();

    // A pause, a run that meets it, and its abandon.
    let paused = tempfile::tempdir().unwrap();
    let proot = path(paused.path());
    let out = cmd(&["run", "--root", proot, "--policy-root", pol, reviewed]);
    assert_eq!(one_object("run, paused", &out)["outcome"], "InterventionRequired");
    assert_eq!(out.status.code(), Some(4));
    let out = cmd(&["run", "--root", proot, "--policy-root", pol, reviewed]);
    let v = one_object("run, still paused", &out);
    assert_eq!(
        (out.status.code(), &v["errorCode"], &v["intervention"]["stepId"]),
        (Some(4), &json!("cycle-paused"), &json!("remember"))
    );
    let out = cmd(&["abandon", "--root", proot]);
    assert_eq!((out.status.code(), one_object("abandon", &out)["abandonedCycle"].clone()), (Some(0), json!(1)));
}

#[test]
fn usage_errors_answer_in_json_when_asked() {
    let s = setup();
    let (root, pol, plan) = (path(s.root.path()), path(s.policy.path()), path(&s.plan));
    for args in [
        vec!["--format", "json", "status", "--no-such-flag"],
        vec!["status", "--format=json"],
        vec!["validate", "--format", "json"],
        vec!["--format", "json", "frobnicate"],
        vec!["run", "--format", "json", "--root", root, "--policy-root", pol, "--fail", "NoSuchStep", plan],
        vec![
            "resume",
            "--format",
            "json",
            "--root",
            root,
            "--policy-root",
            pol,
            "--approve",
            "v",
            "--step",
            "s",
            "--reason",
            " ",
            plan,
        ],
    ] {
        assert_error(&format!("{args:?}"), &planlock(&args), 2, "usage");
    }
    // In text, the usage goes to stderr as clap writes it.
    let out = planlock(&["status", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn a_justification_of_invisible_characters_is_blank() {
    let s = setup();
    let (root, pol, reviewed) = (path(s.root.path()), path(s.policy.path()), path(&s.reviewed));
    assert_eq!(planlock(&["run", "--root", root, "--policy-root", pol, reviewed]).status.code(), Some(4));
    for reason in ["\u{200b}\u{200c}\u{200d}", "\u{202e}\u{2066}\u{2069}", "\u{feff} \u{2060}"] {
        let args = ["resume", "--format", "json", "--root", root, "--policy-root", pol, "--approve", "demo-review"];
        let out = planlock(&[&args[..], &["--step", "remember", "--reason", reason, reviewed]].concat());
        assert_error(&format!("reason {reason:?}"), &out, 2, "usage");
    }
    // The record is still there: nothing ran.
    assert!(s.root.path().join("ops/runtime/intervention.json").exists());
}

#[test]
fn an_embeddings_server_a_bundle_does_not_use_is_never_contacted() {
    let s = setup();
    let (root, pol, plan) = (path(s.root.path()), path(s.policy.path()), path(&s.plan));
    // A server that accepts and never answers: asked, it would hold the run for its timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let out = planlock(&[
        "run",
        "--format",
        "json",
        "--root",
        root,
        "--policy-root",
        pol,
        "--embed-url",
        &url,
        "--embed-model",
        "e5",
        plan,
    ]);
    let v = one_object("run", &out);
    assert_eq!((out.status.code(), &v["outcome"]), (Some(0), &json!("completed")), "{v}");
    assert!(v.get("embedder").is_none(), "the default bundle ranks by words: {v}");
    listener.set_nonblocking(true).unwrap();
    let contacted = listener.accept();
    assert!(contacted.is_err(), "the embeddings server was contacted");
    // Nor by the reads.
    let out = planlock(&[
        "memory",
        "search",
        "--format",
        "json",
        "--root",
        root,
        "--embed-url",
        &url,
        "--embed-model",
        "e5",
        "key",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(listener.accept().is_err(), "the embeddings server was contacted by a read");
}

#[test]
fn reads_answer_while_another_process_runs_a_cycle() {
    use std::io::BufRead as _;
    let s = setup();
    let (root, pol, plan) = (path(s.root.path()), path(s.policy.path()), path(&s.plan));
    assert_eq!(planlock(&["run", "--root", root, "--policy-root", pol, plan]).status.code(), Some(0));
    // A second cycle whose model never answers (a server that accepts and waits), in another
    // process: it holds the root's lock for as long as the cycle runs.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let mut running = crate::common::cli::planlock()
        .args(["run", "--root", root, "--policy-root", pol, "--llm-url", &url, "--llm-model", "m", plan])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The cycle is in progress once its model request arrives.
    let (mut conn, _) = listener.accept().unwrap();
    let mut request = [0u8; 64];
    let _ = conn.read(&mut request).unwrap();
    let held = planlock(&["run", "--format", "json", "--root", root, "--policy-root", pol, plan]);
    assert_eq!(one_object("a second run", &held)["errorCode"], "session-in-use", "the cycle holds the root");
    for args in [
        vec!["status", "--root", root],
        vec!["memory", "search", "--root", root, "key"],
        vec!["decisions", "--root", root],
    ] {
        let out = planlock(&[&["--format", "json"][..], &args].concat());
        let v = one_object(&format!("{args:?}"), &out);
        assert_eq!(out.status.code(), Some(0), "{args:?} while a cycle runs: {v}");
    }
    running.kill().unwrap();
    let _ = running.wait();
    let _ = std::io::BufReader::new(running.stdout.take().unwrap()).lines().count();
}
