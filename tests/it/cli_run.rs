//! The `planlock hash` and `planlock run` commands. A separate test binary from the library
//! lifecycle tests: spawning a process forks this one, and a fork briefly holds copies of every
//! open descriptor, including the session locks of tests running in parallel.

use std::path::Path;

use planlock::PolicyProfile;
use serde_json::{Value, json};

use crate::common;
use common::{plan_with, policy};

fn run(root: &Path, pol: &Path, plan: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let out = crate::common::cli::planlock()
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
    assert!(!root.path().join("ops/runtime/session_state.json").exists(), "a failed cycle saved nothing");

    let (code, json) = run(root.path(), pol.path(), &plan_file, &[]);
    assert_eq!(code, Some(0), "{json}");
    let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["boot", "cycle", "error", "hash", "intervention", "model", "outcome", "problems", "steps"]);
    assert_eq!(json["cycle"], 1);
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
    assert_eq!(json["intervention"]["validator"]["id"], "demo-review");

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
    let out = crate::common::cli::planlock()
        .args(["hash", "--policy-root"])
        .arg(pol.path())
        .arg(&plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let profile = PolicyProfile::load(pol.path(), "profiles/default").unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), planlock::plan_hash(&profile, &plan).to_string());
    let out = crate::common::cli::planlock()
        .args(["hash", "--parts", "--policy-root"])
        .arg(pol.path())
        .arg(&plan_file)
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["parts"]["steps"].as_array().unwrap().len(), 12);
    let out = crate::common::cli::planlock()
        .args(["hash", "--policy-root", "/nonexistent"])
        .arg(&plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
}

fn planlock(args: &[&str], root: &Path) -> (Option<i32>, String) {
    let out = crate::common::cli::planlock().args(args).arg("--root").arg(root).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A pause survives the process: each command below is a new process, so every step of this
/// test is a restart.
#[test]
fn a_pause_is_resumed_or_abandoned_by_later_processes() {
    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let reviewed = dir.path().join("reviewed.json");
    let gate = json!([{"id": "demo-review", "version": "1", "config_hash": planlock::config_hash(&json!({}))}]);
    // One write to review (the memory); the review gate never blocks the session save.
    let plan = plan_with(|v| {
        v["validators"] = gate;
        let other_writes = ["PersistDecision", "PersistEvidence", "LinkDecisionEvidence"];
        v["steps"].as_array_mut().unwrap().retain(|s| !other_writes.contains(&s["type"].as_str().unwrap()));
    });
    std::fs::write(&reviewed, plan.to_json()).unwrap();
    let pol_arg = pol.path().to_str().unwrap();
    let plan_arg = reviewed.to_str().unwrap();

    let (code, text) = planlock(&["run", "--policy-root", pol_arg, plan_arg], root.path());
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("paused: validator `demo-review` blocked step `remember`"), "{text}");
    assert!(!root.path().join("ops/runtime/session_state.json").exists(), "a paused cycle saved no session");

    let (code, text) = planlock(&["status", "--format", "json"], root.path());
    assert_eq!(code, Some(0), "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status["session"], Value::Null);
    assert_eq!(
        (status["intervention"]["cycle"].clone(), status["intervention"]["stepId"].clone()),
        (json!(1), json!("remember"))
    );

    // Another run runs nothing while the cycle is paused: it answers the pause (exit 4, as the
    // README says); an approval for another step is refused.
    let (code, text) = planlock(&["run", "--policy-root", pol_arg, plan_arg], root.path());
    assert_eq!(code, Some(4), "{text}");
    assert!(text.contains("resume or abandon it first"), "{text}");
    assert!(text.contains("paused: validator `demo-review` blocked step `remember`"), "{text}");
    let wrong =
        ["resume", "--policy-root", pol_arg, "--approve", "demo-review", "--step", "llm", "--reason", "ok", plan_arg];
    let (code, text) = planlock(&wrong, root.path());
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("override refused"), "{text}");

    // The approval for the pending step resumes it in a new process and completes cycle 1.
    let approve = [
        "resume",
        "--policy-root",
        pol_arg,
        "--approve",
        "demo-review",
        "--step",
        "remember",
        "--reason",
        "ok",
        "--format",
        "json",
        plan_arg,
    ];
    let (code, text) = planlock(&approve, root.path());
    assert_eq!(code, Some(0), "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (report["boot"].clone(), report["outcome"].clone(), report["cycle"].clone()),
        (json!("paused"), json!("completed"), json!(1))
    );
    assert!(!root.path().join("ops/runtime/intervention.json").exists(), "the record is gone once the cycle completed");

    // Cycle 2 pauses too; abandoned, the session stays at cycle 1 and the next run is cycle 2 again.
    let (code, _) = planlock(&["run", "--policy-root", pol_arg, plan_arg], root.path());
    assert_eq!(code, Some(4));
    let before = std::fs::read(root.path().join("ops/runtime/session_state.json")).unwrap();
    let (code, text) = planlock(&["abandon"], root.path());
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("abandoned cycle 2"), "{text}");
    assert_eq!(std::fs::read(root.path().join("ops/runtime/session_state.json")).unwrap(), before);
    let (code, text) = planlock(&["abandon"], root.path());
    assert_eq!(code, Some(1), "nothing left to abandon: {text}");
    let (code, text) = planlock(&["run", "--policy-root", pol_arg, "--format", "json", plan_arg], root.path());
    assert_eq!(code, Some(4), "{text}");
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["cycle"], 2, "the abandoned cycle's number runs again");

    // A changed policy between the pause and the resume is FailFast, naming the file.
    policy(pol.path(), "formal");
    let (code, text) = planlock(&approve, root.path());
    assert_eq!(code, Some(3), "{text}");
    assert!(text.contains("modes.yaml changed"), "{text}");
}

#[test]
fn memory_search_and_decisions_show_what_the_sqlite_store_holds() {
    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan_with(|_| {}).to_json()).unwrap();
    let json_of = |args: &[&str]| -> Value {
        let (code, text) = planlock(args, root.path());
        assert_eq!(code, Some(0), "{text}");
        serde_json::from_str(&text).unwrap()
    };
    // Nothing yet, and no database created by looking.
    assert_eq!(json_of(&["memory", "search", "--format", "json", "key"])["items"], json!([]));
    assert!(!root.path().join("ops/store/planlock.sqlite3").exists());
    for _ in 0..2 {
        let (code, _) = run(root.path(), pol.path(), &plan_file, &[]);
        assert_eq!(code, Some(0));
    }
    let found = json_of(&["memory", "search", "--format", "json", "rotate the key"]);
    assert_eq!(found["items"].as_array().unwrap().len(), 2, "one memory per cycle: {found}");
    let syntax = json_of(&["memory", "search", "--format", "json", "NEAR(\"rotate\" * -key"]);
    assert_eq!(syntax["items"].as_array().unwrap().len(), 2, "query syntax is searched as words: {syntax}");
    let global = json_of(&["decisions", "--format", "json"]);
    assert_eq!(global["decisions"], json!([]), "the demo decision is of the security domain");
    let security = json_of(&["decisions", "--format", "json", "--domain", "security"]);
    assert_eq!(security["decisions"][0]["id"], "d-1");
    assert_eq!(security["anchors"], json!([{"decisionId": "d-1", "evidenceId": "e-1"}]));
}

#[test]
fn run_pins_the_bundle_and_status_shows_it() {
    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan_with(|_| {}).to_json()).unwrap();
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).unwrap();
    std::fs::write(
        bundle.join("manifest.json"),
        r#"{"bundle_id": "support", "version": "1", "memory_provider_id": "sqlite"}"#,
    )
    .unwrap();
    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--bundle", bundle.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{json}");
    let (code, text) = planlock(&["status", "--format", "json"], root.path());
    assert_eq!(code, Some(0), "{text}");
    let status: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (status["pin"]["bundle_id"].clone(), status["pin"]["memory_provider_id"].clone()),
        (json!("support"), json!("sqlite"))
    );
    // Another memory provider for the same session is refused; so is a manifest that is not one.
    std::fs::write(
        bundle.join("manifest.json"),
        r#"{"bundle_id": "support", "version": "2", "memory_provider_id": "in-memory"}"#,
    )
    .unwrap();
    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--bundle", bundle.to_str().unwrap()]);
    assert_eq!(code, Some(3), "{json}");
    assert!(json["error"].as_str().unwrap().contains("pinned"), "{json}");
    std::fs::write(bundle.join("manifest.json"), "{}").unwrap();
    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--bundle", bundle.to_str().unwrap()]);
    assert_eq!(code, Some(3), "{json}");
    assert!(json["error"].as_str().unwrap().contains("manifest.json"), "{json}");
}

/// `run --llm-url --llm-model` talks to a real OpenAI-compatible server (here a local one on
/// 127.0.0.1); the key comes from the named environment variable and is never printed; a server
/// error is a CycleFail (exit 1) with the server's message; without the flags the demo model
/// runs and the output says so.
#[test]
fn run_with_a_model_server_uses_it_and_says_which_model_answered() {
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let (pol, root, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan_with(|v| v["steps"][5]["payload"]["config"] = json!({"temperature": 0})).to_json())
        .unwrap();

    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(MockServer::start());
    let answer = |text: &str| json!({"choices": [{"message": {"role": "assistant", "content": text}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}});
    let summary = json!({"summary": "rotate in the vault", "keywords": ["vault"]}).to_string();
    rt.block_on(async {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", "Bearer sk-cli-secret"))
            .and(wiremock::matchers::body_partial_json(json!({"response_format": {"type": "json_object"}})))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer(&summary)))
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", "Bearer sk-cli-secret"))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer("Use the vault.")))
            .with_priority(2)
            .mount(&server)
            .await;
    });
    let url = format!("{}/v1", server.uri());
    let cli = |root: &Path, format: &str, model: &[&str]| {
        crate::common::cli::planlock()
            .args(["run", "--format", format, "--root"])
            .arg(root)
            .arg("--policy-root")
            .arg(pol.path())
            .args(model)
            .arg(&plan_file)
            .env("MY_MODEL_KEY", "sk-cli-secret")
            .output()
            .unwrap()
    };
    let with_model = ["--llm-url", url.as_str(), "--llm-model", "small-1", "--llm-api-key-env", "MY_MODEL_KEY"];
    let out = cli(root.path(), "text", &with_model);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("model: small-1 at {url}")), "{text}");
    assert!(!text.contains("sk-cli-secret"), "{text}");
    let requests = rt.block_on(server.received_requests()).unwrap();
    assert_eq!(requests.len(), 2, "LLMCall and SummarizeMemory");
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(first["model"], "small-1");
    assert_eq!(first["temperature"], 0);

    // The next cycle, as JSON; without the key in the environment the server would refuse it.
    let out = cli(root.path(), "json", &with_model);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{json}");
    assert_eq!(
        (json["cycle"].as_u64(), &json["model"]),
        (
            Some(2),
            &json!({"kind": "openai", "model": "small-1", "url": url, "usage": {"inputTokens": 6, "outputTokens": 4}})
        )
    );

    // A server error: CycleFail, exit 1, the server's message shown.
    let failing = rt.block_on(MockServer::start());
    rt.block_on(
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded, try later"}})),
            )
            .mount(&failing),
    );
    let failing_url = format!("{}/v1", failing.uri());
    let (code, json) = run(root.path(), pol.path(), &plan_file, &["--llm-url", &failing_url, "--llm-model", "m"]);
    assert_eq!(code, Some(1), "{json}");
    assert!(json["error"].as_str().unwrap_or_default().contains("HTTP 503: overloaded, try later"), "{json}");
    assert_eq!(json["steps"][5]["status"], "failed");

    // Without the flags: the demo model, said plainly.
    let fresh = tempfile::tempdir().unwrap();
    let (code, json) = run(fresh.path(), pol.path(), &plan_file, &[]);
    assert_eq!((code, &json["model"]), (Some(0), &json!({"kind": "demo"})));
    // One flag without the other is a usage error.
    let out = cli(fresh.path(), "json", &["--llm-url", url.as_str()]);
    assert_eq!(out.status.code(), Some(2));
}
