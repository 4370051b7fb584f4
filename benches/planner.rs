//! Plans a model writes (issues 44 §3, 56 §3): the grammars' generation time, and with the real
//! SmolLM2 server (`.ci/models`), in the same run (interleaved: goal by goal, one way after the
//! other), for each way of asking: plans valid, plans that ran (completed or paused with the
//! demo handlers), time to a plan p50 and p99, and tokens written per plan. The ways:
//! `choices` (the model chooses the steps and writes the texts with the compact grammar,
//! planlock writes the plan: the default), `whole` (the whole plan with the grammar of valid
//! plans), `none` (the whole plan, unconstrained), and `json-schema` (the compact choices with
//! the strict schema as `response_format`, for a server that takes it). Without the model
//! servers it measures the generation alone and says so.
//!
//! `cargo bench --bench planner --features openai` (after `bash .ci/models`);
//! `PLANNER_REQUESTS=N` requests each way (default 100; `-- --quick`: 3), `PLANNER_WAYS` the ways
//! (default `choices,whole,none`).

use std::time::{Duration, Instant};

use planlock::demo::Demo;
use planlock::grammar::{GrammarFormat, GrammarRequest, PlanFrame, compact_grammar, grammar};
use planlock::handlers::{Constraint, ModelPlanner};

#[path = "../tests/common/mod.rs"]
mod common;

/// What one way of asking gave.
#[derive(Default)]
struct Way {
    valid: usize,
    ran: usize,
    asked: usize,
    seconds: Vec<f64>,
    tokens: u64,
    token_seconds: f64,
}

impl Way {
    fn print(&self, name: &str) {
        let mut sorted = self.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |q: f64| sorted.get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)));
        let (p50, p99) = (at(0.5).copied().unwrap_or(f64::NAN), at(0.99).copied().unwrap_or(f64::NAN));
        println!(
            "  {name:<12} valid {:>3}/{:<3} ran {:>3}/{:<3} time to a plan p50 {p50:>6.2} s p99 {p99:>6.2} s  \
             tokens per plan {:>6.1}  tokens/s {:>6.1}",
            self.valid,
            self.asked,
            self.ran,
            self.asked,
            self.tokens as f64 / self.seconds.len().max(1) as f64,
            self.tokens as f64 / self.token_seconds.max(1e-9)
        );
    }
}

/// Whether `plan` runs to its end with the demo handlers and a session save that succeeds (it
/// has no validator, so nothing pauses it), its repository scan under `repo`.
fn runs(plan: &planlock::ValidPlan, repo: &std::path::Path) -> bool {
    let save = planlock::handler_fn(|_, _: &planlock::schema::PersistSessionPayload| {
        Ok(planlock::schema::PersistSessionResult { status: "saved".into() })
    });
    let handlers = Demo::new().repo_base(repo).handlers().on::<planlock::steps::PersistSession>(save);
    planlock::Executor::new(handlers).run_blocking(plan).is_ok_and(|outcome| outcome.completed().is_some())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    if !quick && !args.iter().any(|a| a == "--bench") {
        return;
    }
    // The generation: every syntax, 200 times each.
    let request = GrammarRequest::new().vars(["question", "context"]);
    let frame = PlanFrame::new(request.clone());
    for (name, format) in GrammarFormat::ALL {
        for (of, compact) in [("whole-plan", false), ("compact", true)] {
            let started = Instant::now();
            let mut bytes = 0;
            for _ in 0..200 {
                let made = if compact { compact_grammar(&frame, format) } else { grammar(&request, format) };
                bytes = made.unwrap().len();
            }
            println!(
                "planner: {name} {of} grammar generated in {:.3} ms ({bytes} bytes)",
                started.elapsed().as_secs_f64() * 1e3 / 200.0
            );
        }
    }
    let Some(dir) = common::models::models_dir() else {
        println!("planner: SKIPPED the model figures — no model servers: run `bash .ci/models` first");
        return;
    };
    let requests: usize =
        std::env::var("PLANNER_REQUESTS").ok().and_then(|n| n.parse().ok()).unwrap_or(if quick { 3 } else { 100 });
    let models = common::models::start_models(&dir);
    let ask = |constraint, whole| {
        ModelPlanner::new(&models.chat.url, "smollm2")
            .request(request.clone())
            .whole_plan(whole)
            .constraint(constraint)
            .max_tokens(1200)
            .timeout(Duration::from_secs(600))
    };
    // `json-schema` adds the strict schema as `response_format`, for a server that takes it
    // (llama-cpp-python's takes only its own `json_object`).
    let chosen = std::env::var("PLANNER_WAYS").unwrap_or_else(|_| "choices,whole,none".into());
    let all = [
        ("choices", Constraint::Grammar, false),
        ("whole", Constraint::Grammar, true),
        ("none", Constraint::Unconstrained, true),
        ("json-schema", Constraint::JsonSchema, false),
    ];
    let planners: Vec<(&str, ModelPlanner)> = all
        .iter()
        .filter(|(name, ..)| chosen.split(',').any(|c| c == *name))
        .map(|(name, constraint, whole)| (*name, ask(*constraint, *whole)))
        .collect();
    let repo = tempfile::tempdir().unwrap();
    let mut ways: Vec<Way> = planners.iter().map(|_| Way::default()).collect();
    for n in 0..requests {
        let goal = common::goals::GOALS[n % common::goals::GOALS.len()];
        for (way, (_, planner)) in ways.iter_mut().zip(&planners) {
            way.asked += 1;
            let Ok(asked) = planner.ask_blocking(goal) else { continue };
            way.seconds.push(asked.elapsed.as_secs_f64());
            way.tokens += asked.tokens.1.unwrap_or(0);
            way.token_seconds += asked.elapsed.as_secs_f64();
            let Ok(plan) = planner.check(goal, &asked.written) else { continue };
            way.valid += 1;
            way.ran += usize::from(runs(&plan, repo.path()));
        }
    }
    println!("planner: SmolLM2-135M on llama-cpp-python's server, {requests} requests each way, interleaved");
    for (way, (name, _)) in ways.iter().zip(&planners) {
        way.print(name);
    }
}
