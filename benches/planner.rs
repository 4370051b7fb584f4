//! Plans a model writes (issue 44 §3): the grammar's generation time, and with the real SmolLM2
//! server (`.ci/models`) the time to a plan and tokens/s with the grammar, with the strict JSON
//! Schema profile as `response_format`, and without either, in the same run (interleaved: goal
//! by goal, one way after the other), and valid plans per request each way. Without the model servers it measures the generation alone and says so.
//!
//! `cargo bench --bench planner --features openai` (after `bash .ci/models`);
//! `PLANNER_REQUESTS=N` requests each way (default 100; `-- --quick`: 3), `PLANNER_WAYS` the ways
//! (default `grammar,none`; `json-schema` too for a server that takes `json_schema` formats).

use std::time::{Duration, Instant};

use planlock::grammar::{GrammarFormat, GrammarRequest, grammar};
use planlock::handlers::{Constraint, ModelPlanner};

#[path = "../tests/common/mod.rs"]
mod common;

/// What one way of asking gave.
#[derive(Default)]
struct Way {
    valid: usize,
    asked: usize,
    seconds: Vec<f64>,
    tokens: u64,
    token_seconds: f64,
}

impl Way {
    fn print(&self, name: &str) {
        let mut sorted = self.seconds.clone();
        sorted.sort_by(f64::total_cmp);
        let p50 = sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN);
        println!(
            "  {name:<16} valid {:>3}/{:<3}  time to a plan p50 {p50:>6.2} s  tokens/s {:>6.1}",
            self.valid,
            self.asked,
            self.tokens as f64 / self.token_seconds.max(1e-9)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    if !quick && !args.iter().any(|a| a == "--bench") {
        return;
    }
    // The generation: every syntax, 200 times each.
    let request = GrammarRequest::new().vars(["question", "context"]);
    for (name, format) in GrammarFormat::ALL {
        let started = Instant::now();
        let mut bytes = 0;
        for _ in 0..200 {
            bytes = grammar(&request, format).unwrap().len();
        }
        println!(
            "planner: {name} grammar generated in {:.3} ms ({bytes} bytes)",
            started.elapsed().as_secs_f64() * 1e3 / 200.0
        );
    }
    let Some(dir) = common::models::models_dir() else {
        println!("planner: SKIPPED the model figures — no model servers: run `bash .ci/models` first");
        return;
    };
    let requests: usize =
        std::env::var("PLANNER_REQUESTS").ok().and_then(|n| n.parse().ok()).unwrap_or(if quick { 3 } else { 100 });
    let models = common::models::start_models(&dir);
    let ask = |constraint| {
        ModelPlanner::new(&models.chat.url, "smollm2")
            .request(request.clone())
            .constraint(constraint)
            .max_tokens(1200)
            .timeout(Duration::from_secs(600))
    };
    // `PLANNER_WAYS=grammar,json-schema,none` adds the strict schema as `response_format`, for a
    // server that takes it (llama-cpp-python's takes only its own `json_object`).
    let chosen = std::env::var("PLANNER_WAYS").unwrap_or_else(|_| "grammar,none".into());
    let planners: Vec<(&str, ModelPlanner)> = Constraint::ALL
        .iter()
        .filter(|(name, _)| chosen.split(',').any(|c| c == *name))
        .map(|(name, constraint)| (*name, ask(*constraint)))
        .collect();
    let mut ways: Vec<Way> = planners.iter().map(|_| Way::default()).collect();
    for n in 0..requests {
        let goal = common::goals::GOALS[n % common::goals::GOALS.len()];
        for (way, (_, planner)) in ways.iter_mut().zip(&planners) {
            way.asked += 1;
            let Ok(asked) = planner.ask_blocking(goal) else { continue };
            way.seconds.push(asked.elapsed.as_secs_f64());
            way.tokens += asked.tokens.1.unwrap_or(0);
            way.token_seconds += asked.elapsed.as_secs_f64();
            way.valid += usize::from(planner.check(&asked.written).is_ok());
        }
    }
    println!("planner: SmolLM2-135M on llama-cpp-python's server, {requests} requests each way, interleaved");
    for (way, (name, _)) in ways.iter().zip(&planners) {
        way.print(name);
    }
}
