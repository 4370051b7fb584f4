//! One `LLMCall` through `handlers::OpenAiModel` against a bare `ureq` request with the same
//! body to the same local mock server (wiremock on 127.0.0.1), side by side in one run. The
//! difference is planlock's handler: reading the ledger, building the request from the payload,
//! the hop to the blocking pool, strict response reading and span bookkeeping.
//!
//! Run: `cargo bench --bench model --features openai`. Target (issue 13): handler ≤ 1.1× the
//! bare request. Measured both ways: on the `blocking` thread pool (the default, for async
//! executors) and inline (`on_thread_pool(false)`, as the CLI runs it).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use planlock::handler::TestContext;
use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::schema::*;
use planlock::steps::*;
use planlock::{AnyObject, Handler};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[path = "common/paired.rs"]
mod paired;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt.block_on(MockServer::start());
    let completion = json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": "Rotate the key in the vault." }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19 }
    });
    rt.block_on(
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(completion))
            .mount(&server),
    );
    let base = format!("{}/v1", server.uri());

    let model = OpenAiModel::new(ModelConfig::new(&base, "m").api_key("sk-bench"));
    let Value::Object(config) = json!({ "temperature": 0.2, "max_tokens": 64 }) else { unreachable!() };
    let payload = LlmCallPayload { prompt: "You are terse.".into(), config: AnyObject(config) };
    let test = TestContext::new("llm", payload.clone()).with_step::<PromptAssemble>(
        "prompt",
        PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() },
        PromptAssembleResult { prompt: "How do I rotate the API key?".into() },
    );
    let cx = test.context();
    let handler = || pollster::block_on(Handler::<LLMCall>::call(&model, &cx, &payload)).unwrap();
    assert_eq!(handler().response, "Rotate the key in the vault.");
    // As the CLI runs it: no async executor to keep free, so no hop to the thread pool.
    let inline = OpenAiModel::new(ModelConfig::new(&base, "m").api_key("sk-bench").on_thread_pool(false));
    let handler_inline = || pollster::block_on(Handler::<LLMCall>::call(&inline, &cx, &payload)).unwrap();

    // The same request by hand: the body the handler sends, one ureq call, the text read out.
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let url = format!("{base}/chat/completions");
    let body = json!({
        "model": "m", "temperature": 0.2, "max_tokens": 64,
        "messages": [{ "role": "system", "content": "You are terse." }, { "role": "user", "content": "How do I rotate the API key?" }]
    });
    let bare = || {
        let mut response = agent.post(&url).header("Authorization", "Bearer sk-bench").send_json(&body).unwrap();
        let text = response.body_mut().read_to_string().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        v["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(bare(), "Rotate the key in the vault.");

    let mut g = c.benchmark_group("llm_call");
    g.bench_function("bare_ureq_request", |b| b.iter(|| black_box(bare())));
    g.bench_function("openai_model_handler", |b| b.iter(|| black_box(handler())));
    g.bench_function("openai_model_handler_inline", |b| b.iter(|| black_box(handler_inline())));
    g.finish();
    paired::report(
        "llm_call",
        &mut [
            ("bare_ureq_request", &mut || drop(black_box(bare()))),
            ("openai_model_handler (on the thread pool)", &mut || drop(black_box(handler()))),
            ("openai_model_handler_inline", &mut || drop(black_box(handler_inline()))),
        ],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
