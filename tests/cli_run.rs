//! The `planlock hash` and `planlock run` commands. A separate test binary from the library
//! lifecycle tests: spawning a process forks this one, and a fork briefly holds copies of every
//! open descriptor, including the session locks of tests running in parallel.
#![cfg(feature = "cli")]

use std::path::Path;
use std::process::Command;

use planlock::PolicyProfile;
use serde_json::{Value, json};

mod common;
use common::{plan_with, policy};

fn run(root: &Path, pol: &Path, plan: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["run", "--format", "json", "--root"])
        .arg(root)
        .arg("--policy-root")
        .arg(pol)
        .args(extra)
        .arg(plan)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out.status.code(), json)
}

#[test]
fn run_exit_codes_and_json_for_every_outcome() {
    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan_with(|_| {}).to_json()).unwrap();

    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--fail", "LLMCall"]);
    assert_eq!(code, Some(1), "{json}");
    assert_eq!((json["boot"].as_str(), json["outcome"].as_str()), (Some("cold"), Some("CycleFail")));
    assert_eq!(json["steps"][5], json!({"id": "llm", "type": "LLMCall", "status": "failed"}));
    assert_eq!(json["steps"][4]["status"], "completed");
    assert_eq!(json["steps"][6]["status"], "not-run");
    assert!(!root.path().join("ops").exists(), "a failed cycle saved nothing");

    let (code, json) = run(root.path(), pol.path(), &plan_file, &[]);
    assert_eq!(code, Some(0), "{json}");
    let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["boot", "error", "hash", "outcome", "problems", "steps"]);
    assert_eq!((json["boot"].as_str(), json["outcome"].as_str()), (Some("cold"), Some("completed")));
    assert_eq!(json["hash"].as_str().unwrap().len(), 64);

    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--fail", "PersistMemory"]);
    assert_eq!(code, Some(3), "{json}");
    assert_eq!((json["boot"].as_str(), json["outcome"].as_str()), (Some("resume"), Some("FailFast")));

    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--fail", "Nope"]);
    assert_eq!(code, Some(2), "{json}");

    // A plan naming the demo review gate pauses before the first storage write.
    let reviewed = dir.path().join("reviewed.json");
    let gate = json!([{"id": "demo-review", "version": "1", "config_hash": planlock::config_hash(&json!({}))}]);
    std::fs::write(&reviewed, plan_with(|v| v["validators"] = gate).to_json()).unwrap();
    let other_root = tempfile::tempdir().unwrap();
    let (code, json) = run(other_root.path(), pol.path(), &reviewed, &[]);
    assert_eq!(code, Some(4), "{json}");
    assert_eq!(json["outcome"], "InterventionRequired");
    assert_eq!(json["steps"][7]["status"], "blocked");

    // The policy changes: boot is refused.
    policy(pol.path(), "formal");
    let (code, json) = run(root.path(), pol.path(), &plan_file, &[]);
    assert_eq!(code, Some(3), "{json}");
    assert!(json["error"].as_str().unwrap().contains("modes.yaml changed"), "{json}");
}

#[test]
fn hash_prints_the_digest_and_its_parts() {
    let (pol, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan = plan_with(|_| {});
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_json()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["hash", "--policy-root"])
        .arg(pol.path())
        .arg(&plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let profile = PolicyProfile::load(pol.path(), "profiles/default").unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), planlock::plan_hash(&profile, &plan).to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["hash", "--parts", "--policy-root"])
        .arg(pol.path())
        .arg(&plan_file)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["parts"]["steps"].as_array().unwrap().len(), 12);
    let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["hash", "--policy-root", "/nonexistent"])
        .arg(&plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
}
