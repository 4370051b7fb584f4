//! Plans SmolLM2 writes (CONTRACT §19, issue 44 §2): with the grammar every answer is a valid
//! plan that `planlock run` boots and runs with the demo handlers; without it, the count of
//! valid ones is reported, not asserted.

use std::time::{Duration, Instant};

use planlock::handlers::{Constraint, ModelPlanner};
use serde_json::Value;

use super::common::goals::GOALS;
use super::{Models, planlock, text};

/// The plan requests of a run: the demo policy's profile, the demo template's variables.
fn ask(m: &Models, goal: &str, out: &std::path::Path) -> std::process::Output {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    planlock(&[
        "plan",
        "--format",
        "json",
        "--llm-url",
        &m.chat.url,
        "--llm-model",
        "smollm2",
        "--goal",
        goal,
        "--policy-root",
        policy,
        "--profile",
        "profiles/default",
        "--vars",
        "question,context",
        "--out",
        out.to_str().unwrap(),
    ])
}

pub fn twenty_goals_give_twenty_valid_plans_with_the_grammar(m: &Models) {
    let dir = tempfile::tempdir().unwrap();
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let (mut outcomes, mut tokens, started) = (std::collections::BTreeMap::new(), 0u64, Instant::now());
    for (n, goal) in GOALS.iter().enumerate() {
        let file = dir.path().join(format!("plan-{n}.json"));
        let out = ask(m, goal, &file);
        assert_eq!(out.status.code(), Some(0), "goal {n} ({goal}): {}", text(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["hash"].as_str().map(str::len), Some(64), "{report}");
        tokens += report["plan"].to_string().len() as u64;
        // The plan runs: it boots and its steps run with the demo handlers (a step may fail on
        // what the model wrote in it, such as a repository path that is not there).
        let root = dir.path().join(format!("root-{n}"));
        let run = planlock(&[
            "run",
            "--format",
            "json",
            "--root",
            root.to_str().unwrap(),
            "--policy-root",
            policy,
            file.to_str().unwrap(),
        ]);
        let report: Value = serde_json::from_slice(&run.stdout).unwrap_or(Value::Null);
        assert_eq!(report["boot"], "cold", "goal {n}: the plan did not run: {}", text(&run));
        *outcomes.entry(report["outcome"].as_str().unwrap_or("?").to_owned()).or_insert(0) += 1;
    }
    println!(
        "models: 20/20 valid plans with the grammar in {:.1?} ({} bytes of plan); planlock run outcomes {outcomes:?}",
        started.elapsed(),
        tokens
    );
    // The same goals without the grammar: what the grammar buys.
    let planner = ModelPlanner::new(&m.chat.url, "smollm2")
        .constraint(Constraint::Unconstrained)
        .max_tokens(700)
        .timeout(Duration::from_secs(300));
    let started = Instant::now();
    let valid = GOALS.iter().filter(|goal| planner.plan_blocking(goal).is_ok()).count();
    println!("models: {valid}/20 valid plans without the grammar in {:.1?}", started.elapsed());
}
