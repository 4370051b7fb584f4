//! planlock's overhead per cycle on a real model (issue 19: ≤ 2 ms): whole demo-plan cycles
//! through the executor with `LLMCall` and `SummarizeMemory` on llama.cpp's server (SmolLM2, from
//! `.ci/models`), each model call timed where it is made; the overhead is the cycle's time minus
//! the time inside the model calls (the server's answer and the HTTP round trip). Prints p50 and
//! the worst of the cycles. Without the model servers it says so and measures nothing.
//!
//! `cargo bench --bench real_model --features openai` (after `bash .ci/models`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::schema::*;
use planlock::steps::*;
use planlock::{Handler, HandlerError, StepContext};
use serde_json::json;

#[path = "../tests/common/mod.rs"]
mod common;

const CYCLES: usize = 12;

/// A model handler whose calls are timed into `spent`.
#[derive(Clone)]
struct Timed {
    model: OpenAiModel,
    spent: Arc<Mutex<Duration>>,
}

impl Timed {
    async fn time<T>(&self, call: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let out = call.await;
        *self.spent.lock().unwrap() += started.elapsed();
        out
    }
}

impl Handler<LLMCall> for Timed {
    async fn call(&self, cx: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        self.time(Handler::<LLMCall>::call(&self.model, cx, p)).await
    }
}

impl Handler<SummarizeMemory> for Timed {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &SummarizeMemoryPayload,
    ) -> Result<SummarizeMemoryResult, HandlerError> {
        self.time(Handler::<SummarizeMemory>::call(&self.model, cx, p)).await
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(dir) = common::models::models_dir() else {
        println!("real_model: SKIPPED — no model servers: run `bash .ci/models` first");
        return;
    };
    let servers = common::models::start_models(&dir);
    let spent = Arc::new(Mutex::new(Duration::ZERO));
    let model = Timed { model: OpenAiModel::new(ModelConfig::new(&servers.chat.url, "smollm2")), spent: spent.clone() };
    let save = planlock::handler_fn(|_, _: &PersistSessionPayload| Ok(PersistSessionResult { status: "saved".into() }));
    let handlers = planlock::demo::Demo::new()
        .repo_base(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))
        .handlers()
        .on::<LLMCall>(model.clone())
        .on::<SummarizeMemory>(model)
        .on::<PersistSession>(save);
    let exec = planlock::Executor::new(handlers);
    let plan =
        common::plan_with(|v| v["steps"][5]["payload"]["config"] = json!({ "max_tokens": 16, "temperature": 0 }));
    let mut overheads = Vec::new();
    for n in 0..=CYCLES {
        *spent.lock().unwrap() = Duration::ZERO;
        let started = Instant::now();
        exec.run_blocking(&plan).unwrap().completed().expect("completed");
        let (total, model_time) = (started.elapsed(), *spent.lock().unwrap());
        if n > 0 {
            // The first cycle warms the server's cache and the connection.
            overheads.push(total.saturating_sub(model_time));
        }
    }
    overheads.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "real_model: {CYCLES} cycles on SmolLM2: planlock's overhead per cycle p50 {:.3} ms, worst {:.3} ms (cycle minus the time inside the model calls)",
        ms(overheads[CYCLES / 2]),
        ms(overheads[CYCLES - 1])
    );
}
