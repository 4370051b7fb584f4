//! `ModelPlanner` and `planlock plan` asked for whole plans (`--whole-plan`, CONTRACT §19)
//! against a server on 127.0.0.1 (wiremock) that stands for one ignoring the grammar — the fault
//! a real server test cannot make on purpose: what is sent (the grammar, temperature 0, the
//! seed), a valid plan coming back, and an invalid one refused by the validator, never printed as
//! a plan. The compact choices, the default, are in `planner_choices.rs`; the real model plans in
//! `tests/models.rs`.
#![cfg(feature = "openai")]

use planlock::grammar::{GrammarFormat, GrammarRequest, grammar};
use planlock::handlers::{Constraint, ModelPlanner, PlanError};
use planlock::runtime::PolicyInterpreter;
use planlock::{Failure, FailureKind};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A chat completion answering `text`.
pub(crate) fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "served-model",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 80, "completion_tokens": 300, "total_tokens": 380 }
    })
}

/// A plan as the grammar writes them (the demo plan's shape).
fn valid_plan() -> Value {
    json!({
        "step_contract_version": "1", "extensions": [],
        "metadata": { "mode": "chat", "policyProfile": "profiles/default" },
        "steps": [
            { "id": "context-select", "type": "ContextSelect", "payload": { "input": "rotate", "sources": [] } },
            { "id": "prompt-assemble", "type": "PromptAssemble", "payload": { "template": "t", "vars": {} } },
            { "id": "llmcall", "type": "LLMCall", "payload": { "config": {}, "prompt": "p" } },
            { "id": "persist-session", "type": "PersistSession", "payload": { "meta": {}, "sessionRef": "s" } }
        ]
    })
}

/// A server on 127.0.0.1 answering every chat completion with `text`.
pub(crate) async fn answering(text: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(text)))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_request_carries_the_grammar_at_temperature_0_and_a_valid_answer_is_the_plan() {
    let server = answering(&valid_plan().to_string()).await;
    let request = GrammarRequest::new().vars(["question"]);
    let planner =
        ModelPlanner::new(&format!("{}/v1", server.uri()), "m").request(request.clone()).whole_plan(true).seed(42);
    let planned = planner.plan("rotate the key").await.unwrap();
    assert_eq!(planned.plan.steps().len(), 4);
    assert_eq!((planned.asked.model.as_deref(), planned.asked.tokens), (Some("served-model"), (Some(80), Some(300))));
    let sent: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["grammar"], grammar(&request, GrammarFormat::Gbnf).unwrap());
    assert_eq!(
        (sent["temperature"].as_u64(), sent["seed"].as_u64(), sent["model"].as_str()),
        (Some(0), Some(42), Some("m"))
    );
    assert!(sent["messages"][1]["content"].as_str().unwrap().contains("rotate the key"));
    assert!(sent["messages"][0]["content"].as_str().unwrap().contains("ContextSelect (mandatory)"));
    // The strict schema instead, as `response_format`; its nulls are out before validating.
    let mut with_nulls = valid_plan();
    with_nulls["validators"] = Value::Null;
    with_nulls["metadata"]["topK"] = Value::Null;
    let server = answering(&with_nulls.to_string()).await;
    let planner =
        ModelPlanner::new(&format!("{}/v1", server.uri()), "m").whole_plan(true).constraint(Constraint::JsonSchema);
    planner.plan("rotate the key").await.unwrap();
    let sent: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
    assert!(sent.get("grammar").is_none());
}

#[tokio::test]
async fn a_server_that_ignores_the_grammar_is_caught_by_the_validator() {
    // Out of order, as a model left unconstrained writes it.
    let mut out_of_order = valid_plan();
    out_of_order["steps"].as_array_mut().unwrap().swap(1, 2);
    let server = answering(&out_of_order.to_string()).await;
    let planner = ModelPlanner::new(&format!("{}/v1", server.uri()), "m").whole_plan(true);
    match planner.plan("rotate the key").await {
        Err(e @ PlanError::Rejected(_)) => {
            assert_eq!((e.code(), e.kind()), ("plan-rejected", FailureKind::CycleFail));
            assert!(e.to_string().contains("order-violation"), "{e}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Prose around no plan at all.
    let server = answering("Sure! Here is a plan: first scan the repo, then answer.").await;
    let planner = ModelPlanner::new(&format!("{}/v1", server.uri()), "m").whole_plan(true);
    let e = planner.plan("rotate the key").await.unwrap_err();
    assert_eq!(e.code(), "plan-not-json", "{e}");
    // As a PolicyInterpreter, the refusal is the validator's.
    let server = answering(&out_of_order.to_string()).await;
    let planner = ModelPlanner::new(&format!("{}/v1", server.uri()), "m").whole_plan(true);
    let refused =
        tokio::task::spawn_blocking(move || planner.interpret("profiles/default", &json!({ "goal": "rotate" })));
    assert!(refused.await.unwrap().is_err());
}

#[tokio::test]
async fn planlock_plan_prints_a_valid_plan_and_refuses_an_invalid_one() {
    let server = answering(&valid_plan().to_string()).await;
    let url = format!("{}/v1", server.uri());
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let args =
        ["plan", "--whole-plan", "--format", "json", "--llm-url", &url, "--goal", "rotate", "--policy-root", policy];
    let out = tokio::task::spawn_blocking({
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        move || crate::common::cli::planlock().args(&args).args(["--profile", "profiles/default"]).output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["plan"]["steps"].as_array().map(Vec::len), Some(4));
    assert_eq!(report["hash"].as_str().map(str::len), Some(64));

    let mut out_of_order = valid_plan();
    out_of_order["steps"].as_array_mut().unwrap().swap(1, 2);
    let server = answering(&out_of_order.to_string()).await;
    let url = format!("{}/v1", server.uri());
    let out = tokio::task::spawn_blocking(move || {
        crate::common::cli::planlock()
            .args(["plan", "--whole-plan", "--format", "json", "--llm-url", &url, "--goal", "g"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["errorCode"], "plan-rejected", "{report}");
    assert!(report.get("plan").is_none());
}

/// What comes back is input (CONTRACT §11): an answer nested past any bound, a plan past the
/// size limit, or one that echoes the API key is refused with its code — no panic, no key shown.
#[tokio::test]
async fn hostile_answers_are_refused_and_the_key_is_never_shown() {
    const KEY: &str = "sk-planner-5ecret";
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let mut huge = valid_plan();
    huge["steps"][0]["payload"]["input"] = Value::String("x".repeat(2 << 20));
    let mut echo = valid_plan();
    echo["steps"].as_array_mut().unwrap().swap(1, 2);
    echo["steps"][0]["payload"]["input"] = Value::String(format!("your key is {KEY}"));
    for (answer, code) in
        [(deep, "plan-not-json"), (huge.to_string(), "plan-rejected"), (echo.to_string(), "plan-rejected")]
    {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(wiremock::matchers::header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(completion(&answer)))
            .mount(&server)
            .await;
        let planner = ModelPlanner::new(&format!("{}/v1", server.uri()), "m").whole_plan(true).api_key(KEY);
        let e = planner.plan("g").await.unwrap_err();
        assert_eq!(e.code(), code, "{}", e.to_string().chars().take(300).collect::<String>());
        assert!(!e.to_string().contains(KEY) && !format!("{e:?}").contains(KEY));
    }
}

/// The planner keeps to the validator's rules (CONTRACT §19, amended): an answer with a key twice
/// (`"mode"` twice, or `"steps": []` before the real steps) is refused as `validate` refuses it
/// (`duplicate-key`), never written with its last value; a plan of another profile than the one
/// asked for is refused. On the code before, both were printed and written.
#[tokio::test]
async fn planlock_plan_judges_a_plan_as_validate_does_and_keeps_to_its_profile() {
    let dir = tempfile::tempdir().unwrap();
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let text = valid_plan().to_string();
    let twice_mode = text.replacen("\"mode\":\"chat\"", "\"mode\":\"lax\",\"mode\":\"chat\"", 1);
    let steps_twice = text.replacen("\"steps\":[", "\"steps\":[],\"steps\":[", 1);
    let other_profile = text.replacen("profiles/default", "profiles/other", 1);
    for (answer, code) in
        [(twice_mode, "plan-rejected"), (steps_twice, "plan-rejected"), (other_profile, "plan-profile")]
    {
        assert!(answer != text, "the case changed the plan");
        let server = answering(&answer).await;
        let url = format!("{}/v1", server.uri());
        let written = dir.path().join("plan.json");
        let out = tokio::task::spawn_blocking({
            let written = written.clone();
            move || {
                crate::common::cli::planlock()
                    .args(["plan", "--whole-plan", "--format", "json", "--llm-url", &url, "--goal", "g"])
                    .args(["--policy-root", policy])
                    .args(["--profile", "profiles/default", "--out"])
                    .arg(&written)
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!((out.status.code(), &report["errorCode"]), (Some(1), &json!(code)), "{answer}: {report}");
        if code == "plan-rejected" {
            assert!(report["error"].as_str().unwrap().contains("duplicate-key"), "{report}");
        }
        assert!(!written.exists(), "nothing written for {answer}");
    }
}
