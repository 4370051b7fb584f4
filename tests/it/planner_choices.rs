//! The model chooses, the contract writes (CONTRACT §19, amended): `ModelPlanner` and
//! `planlock plan` ask by default for the compact choices (which optional steps, the free texts)
//! with their grammar, and planlock writes the plan of them. Every choice the grammar allows is a
//! plan that *runs* with the demo handlers — not only one that validates. A server on 127.0.0.1
//! (wiremock) stands for one ignoring the grammar; the real model is in `tests/models.rs`.
#![cfg(feature = "openai")]

use planlock::demo::Demo;
use planlock::grammar::{
    Choices, GrammarFormat, GrammarRequest, MAX_QUESTION_CHARS, MAX_TEXT_CHARS, PlanFrame, compact_grammar,
};
use planlock::handlers::{Constraint, ModelPlanner, PlanError};
use planlock::steps::PersistSession;
use planlock::{Failure, StepType, ValidPlan};
use serde_json::{Value, json};
use wiremock::MockServer;

use super::planner::answering;

/// How `plan` ends with the demo handlers (and a session save that succeeds), its repository
/// scan in an empty directory: `completed`, or why not.
fn run(plan: &ValidPlan) -> Result<(), String> {
    let repo = tempfile::tempdir().unwrap();
    let save = planlock::handler_fn(|_, _: &planlock::schema::PersistSessionPayload| {
        Ok(planlock::schema::PersistSessionResult { status: "saved".into() })
    });
    let handlers = Demo::new().repo_base(repo.path()).handlers().on::<PersistSession>(save);
    match planlock::Executor::new(handlers).run_blocking(plan) {
        Ok(outcome) => outcome.completed().map(|_| ()).ok_or_else(|| "paused".to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

/// The compact answer choosing `optional` (wire names) with texts from `texts`, in order.
fn answer(frame_vars: &[&str], optional: &[StepType], texts: &mut impl Iterator<Item = String>) -> String {
    let mut object = serde_json::Map::new();
    let mut add = |ty: StepType, value: Value| object.insert(ty.wire_name().to_owned(), value);
    for ty in StepType::ALL {
        let value = match ty {
            StepType::ContextSelect => json!({ "question": texts.next().unwrap() }),
            StepType::PromptAssemble if !frame_vars.is_empty() => {
                let vars: serde_json::Map<String, Value> =
                    frame_vars.iter().map(|v| ((*v).to_owned(), json!(texts.next().unwrap()))).collect();
                json!({ "vars": vars })
            }
            _ if !optional.contains(&ty) => continue,
            StepType::PersistMemory | StepType::PersistEvidence => json!({ "summary": texts.next().unwrap() }),
            StepType::PersistDecision => json!({ "text": texts.next().unwrap(), "strength": "must" }),
            _ => json!({}),
        };
        add(ty, value);
    }
    Value::Object(object).to_string()
}

/// Every choice of the optional steps a model can make (the link only with what it links: 160
/// of the 256 sets), with texts at the edges — one character, the most allowed, quotes,
/// backslashes, line breaks, template syntax, right-to-left marks, emoji — is a plan that runs
/// to completed with the demo handlers, its link finding the decision and evidence it persisted.
#[test]
fn every_choice_the_grammar_allows_is_a_plan_that_runs() {
    let optional: Vec<StepType> = StepType::ALL.into_iter().filter(|t| !t.is_mandatory()).collect();
    let edge = |n: usize| -> String {
        match n % 7 {
            0 => "q".to_owned(),
            1 => "x".repeat(MAX_TEXT_CHARS as usize),
            2 => "say \"hi\" \\ then\nbreak\ttab".to_owned(),
            3 => "{{ ledger }} {% for x in y %}{{ question }}".to_owned(),
            4 => "\u{202e}reversed\u{200f} 한국어 😀".to_owned(),
            5 => "y".repeat(MAX_QUESTION_CHARS.min(MAX_TEXT_CHARS) as usize),
            _ => "How do I rotate the API key?".to_owned(),
        }
    };
    let (mut ran, mut linked) = (0, 0);
    for (vars, frame) in [
        (vec![], PlanFrame::default()),
        (vec!["context"], PlanFrame::new(GrammarRequest::new().vars(["question", "context"]))),
    ] {
        for mask in 0u32..(1 << optional.len()) {
            let chosen: Vec<StepType> =
                optional.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, t)| *t).collect();
            let link = chosen.contains(&StepType::LinkDecisionEvidence);
            if link && !(chosen.contains(&StepType::PersistDecision) && chosen.contains(&StepType::PersistEvidence)) {
                continue;
            }
            let mut texts = (mask as usize..).map(edge);
            let written = answer(&vars, &chosen, &mut texts);
            let choices = Choices::read(&written, &frame).unwrap_or_else(|r| panic!("{written}: {r}"));
            let plan = choices.plan(&frame, "a goal").unwrap_or_else(|r| panic!("{written}: {r}"));
            assert_eq!(plan.steps().len(), 4 + chosen.len(), "{written}");
            run(&plan).unwrap_or_else(|why| panic!("the plan of {written} did not run: {why}"));
            ran += 1;
            linked += usize::from(link);
        }
    }
    assert_eq!((ran, linked), (2 * 160, 2 * 32));
}

#[tokio::test]
async fn the_planner_asks_for_the_choices_and_plans_them() {
    let choices = json!({
        "ContextSelect": { "question": "How do I rotate the key?" }, "RetrieveMemory": {},
        "PromptAssemble": { "vars": { "context": "the vault" } },
        "PersistDecision": { "text": "Rotate every 90 days", "strength": "must" },
        "PersistEvidence": { "summary": "The 2026 audit" }, "LinkDecisionEvidence": {}
    });
    let server = answering(&choices.to_string()).await;
    let frame = PlanFrame::new(GrammarRequest::new().vars(["question", "context"])).session_ref("support-7");
    let planner = ModelPlanner::new(&format!("{}/v1", server.uri()), "m").frame(frame.clone()).seed(3);
    let planned = planner.plan("rotate the key, and record the rule").await.unwrap();
    let types: Vec<StepType> = planned.plan.steps().iter().map(|s| s.step_type()).collect();
    use StepType::*;
    assert_eq!(
        types,
        [
            ContextSelect,
            RetrieveMemory,
            PromptAssemble,
            LLMCall,
            PersistDecision,
            PersistEvidence,
            LinkDecisionEvidence,
            PersistSession
        ]
    );
    let sent: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["grammar"], compact_grammar(&frame, GrammarFormat::Gbnf).unwrap());
    assert_eq!((sent["temperature"].as_u64(), sent["seed"].as_u64()), (Some(0), Some(3)));
    let told = sent["messages"][0]["content"].as_str().unwrap();
    assert!(told.contains(r#""ContextSelect": {"question"}"#) && told.contains(r#""vars": {"context"}"#), "{told}");
    assert!(planned.plan.to_json().contains("support-7"));
    tokio::task::spawn_blocking(move || run(&planned.plan)).await.unwrap().unwrap();

    // The strict schema of the choices as `response_format`: a step not chosen is null.
    let mut with_nulls = choices.clone();
    with_nulls["RepoScan"] = Value::Null;
    let server = answering(&with_nulls.to_string()).await;
    let planner =
        ModelPlanner::new(&format!("{}/v1", server.uri()), "m").frame(frame).constraint(Constraint::JsonSchema);
    planner.plan("g").await.unwrap();
    let sent: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["response_format"]["json_schema"]["name"], "PlanChoices");
}

#[tokio::test]
async fn choices_the_grammar_would_not_allow_are_refused_never_planned() {
    let url = |server: &MockServer| format!("{}/v1", server.uri());
    // A link without the decision it links: a server that ignored the grammar.
    let server =
        answering(r#"{"ContextSelect":{"question":"q"},"PersistEvidence":{"summary":"s"},"LinkDecisionEvidence":{}}"#)
            .await;
    let e = ModelPlanner::new(&url(&server), "m").plan("g").await.unwrap_err();
    assert!(matches!(e, PlanError::Rejected(_)), "{e}");
    assert_eq!(e.code(), "plan-rejected");
    assert!(e.to_string().contains("/LinkDecisionEvidence") && e.to_string().contains("PersistDecision"), "{e}");
    // A key twice, as `validate` judges it.
    let server = answering(r#"{"ContextSelect":{"question":"a"},"ContextSelect":{"question":"b"}}"#).await;
    let e = ModelPlanner::new(&url(&server), "m").plan("g").await.unwrap_err();
    assert!(e.to_string().contains("duplicate-key"), "{e}");
    // Prose and no object.
    let server = answering("I would scan the repository first.").await;
    assert_eq!(ModelPlanner::new(&url(&server), "m").plan("g").await.unwrap_err().code(), "plan-not-json");
    // An answer echoing the key as a step name: refused, and the key is not shown.
    const KEY: &str = "sk-choices-5ecret";
    let server = answering(&format!(r#"{{"ContextSelect":{{"question":"q"}},"{KEY}":{{}}}}"#)).await;
    let e = ModelPlanner::new(&url(&server), "m").api_key(KEY).plan("g").await.unwrap_err();
    assert_eq!(e.code(), "plan-rejected");
    assert!(!e.to_string().contains(KEY) && !format!("{e:?}").contains(KEY), "{e}");
}

#[tokio::test]
async fn planlock_plan_writes_the_plan_of_the_choices_and_says_so() {
    let server =
        answering(r#"{"ContextSelect":{"question":"q"},"PersistEvidence":{"summary":"s"},"LinkDecisionEvidence":{}}"#)
            .await;
    let url = format!("{}/v1", server.uri());
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let cli = move |extra: &'static [&'static str]| {
        let url = url.clone();
        move || {
            crate::common::cli::planlock()
                .args(["plan", "--format", "json", "--llm-url", &url, "--goal", "g", "--policy-root", policy])
                .args(["--profile", "profiles/default"])
                .args(extra)
                .output()
                .unwrap()
        }
    };
    // The link needs a decision: with one that exists, the plan links the evidence to it.
    let out = tokio::task::spawn_blocking(cli(&["--existing-decision", "d-7"])).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["writtenAs"], "choices");
    assert_eq!(report["plan"]["steps"][4]["payload"]["decisionId"], "d-7", "{report}");
    assert_eq!(report["plan"]["metadata"]["topK"], 5, "the profile's mode's topK");
    assert_eq!(report["hash"].as_str().map(str::len), Some(64));
    // Without it, refused.
    let out = tokio::task::spawn_blocking(cli(&[])).await.unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    // The choices' settings are not the whole plan's.
    let out = tokio::task::spawn_blocking(cli(&["--whole-plan", "--session-ref", "s"])).await.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn planlock_grammar_compact_is_the_choices_grammar() {
    let out = crate::common::cli::with_input(&["grammar", "--compact", "--vars", "question,context"], None);
    assert_eq!(out.status.code(), Some(0));
    let frame = PlanFrame::new(GrammarRequest::new().vars(["question", "context"]));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), compact_grammar(&frame, GrammarFormat::Gbnf).unwrap());
}
