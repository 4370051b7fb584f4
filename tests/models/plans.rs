//! Plans SmolLM2 writes (CONTRACT §19, issue 56 §3): the model chooses the optional steps and
//! writes the texts, planlock writes the plan; every plan validates and at least 19 of 20 run to
//! completed or paused with the demo handlers (none FailFast). The same goals asked for whole
//! plans (`--whole-plan`) are reported, not asserted.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use super::common::goals::GOALS;
use super::{Models, planlock, text};

/// Asks for a plan for `goal` (the demo policy's profile, the demo template's variables) into
/// `out`: the report, or the command's failure.
fn ask(m: &Models, goal: &str, out: &std::path::Path, whole: bool) -> Result<Value, String> {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let mut args = vec![
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
    ];
    if whole {
        args.push("--whole-plan");
    }
    let run = planlock(&args);
    match run.status.code() {
        Some(0) => Ok(serde_json::from_slice(&run.stdout).unwrap()),
        _ => Err(text(&run)),
    }
}

/// What `planlock run` did with the plan in `file`: its outcome (`completed`, `paused`,
/// `FailFast`, …), and its error (or what it printed).
fn run(file: &std::path::Path, root: &std::path::Path) -> (String, String) {
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let args = ["run", "--format", "json", "--root", root.to_str().unwrap(), "--policy-root", policy];
    let out = planlock(&[&args[..], &[file.to_str().unwrap()]].concat());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let said = report["error"].as_str().map_or_else(|| text(&out), str::to_owned);
    (report["outcome"].as_str().unwrap_or("did not run").to_owned(), said)
}

/// What one way of asking gave over the goals.
#[derive(Default)]
struct Tally {
    valid: usize,
    ran: usize,
    outcomes: BTreeMap<String, usize>,
    tokens: u64,
}

fn tally(m: &Models, dir: &std::path::Path, whole: bool) -> (Tally, std::time::Duration) {
    let (mut t, started) = (Tally::default(), Instant::now());
    let way = if whole { "whole" } else { "choices" };
    for (n, goal) in GOALS.iter().enumerate() {
        let file = dir.join(format!("{way}-{n}.json"));
        let outcome = match ask(m, goal, &file, whole) {
            Err(why) => format!("not valid: {why}"),
            Ok(report) => {
                t.valid += 1;
                assert_eq!(report["hash"].as_str().map(str::len), Some(64), "{report}");
                t.tokens += report["completionTokens"].as_u64().unwrap_or(0);
                let (outcome, said) = run(&file, &dir.join(format!("root-{way}-{n}")));
                t.ran += usize::from(outcome == "completed" || outcome == "paused");
                if outcome != "completed" && outcome != "paused" {
                    println!("models: {way} goal {n}: {said}");
                }
                outcome
            }
        };
        println!("models: {way} goal {n} ({goal}): {outcome}");
        *t.outcomes.entry(outcome.split(':').next().unwrap_or("?").to_owned()).or_insert(0) += 1;
    }
    (t, started.elapsed())
}

pub fn twenty_goals_give_twenty_plans_that_run(m: &Models) {
    let dir = tempfile::tempdir().unwrap();
    let (choices, took) = tally(m, dir.path(), false);
    println!(
        "models: choices: {}/20 valid, {}/20 ran, in {took:.1?} ({} tokens written); outcomes {:?}",
        choices.valid, choices.ran, choices.tokens, choices.outcomes
    );
    // The same goals, the model writing whole plans: reported, not asserted.
    let (whole, took) = tally(m, dir.path(), true);
    println!(
        "models: whole plans: {}/20 valid, {}/20 ran, in {took:.1?} ({} tokens written); outcomes {:?}",
        whole.valid, whole.ran, whole.tokens, whole.outcomes
    );
    assert_eq!(choices.valid, 20, "every plan validates: {:?}", choices.outcomes);
    assert!(choices.ran >= 19, "at least 19 of 20 plans run to completed or paused: {:?}", choices.outcomes);
    assert_eq!(choices.outcomes.get("FailFast"), None, "no plan ends FailFast: {:?}", choices.outcomes);
}
