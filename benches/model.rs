//! One `LLMCall` through `handlers::OpenAiModel` against a bare `reqwest` request with the same
//! body to the same local mock server (wiremock on 127.0.0.1), side by side in one run, both
//! made on a background runtime thread and waited for from the calling thread. The difference is
//! planlock's handler: reading the ledger, building the request from the payload, strict
//! response reading and span bookkeeping.
//!
//! Run: `cargo bench --bench model --features openai`. Target (issue 13): handler ≤ 1.1× the
//! bare request.

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
    let handler = || planlock::block_on(Handler::<LLMCall>::call(&model, &cx, &payload)).unwrap();
    assert_eq!(handler().response, "Rotate the key in the vault.");
    // The same request by hand: the body the handler sends, one reqwest call on a background
    // runtime thread (as the handler's), the text read out.
    let client = reqwest::Client::new();
    let url = format!("{base}/chat/completions");
    let body = json!({
        "model": "m", "temperature": 0.2, "max_tokens": 64,
        "messages": [{ "role": "system", "content": "You are terse." }, { "role": "user", "content": "How do I rotate the API key?" }]
    });
    let body = body.to_string();
    let bare = || {
        let request = client.post(&url).header("Authorization", "Bearer sk-bench").body(body.clone());
        let text = planlock::block_on(rt.spawn(async move { request.send().await?.text().await })).unwrap().unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        v["choices"][0]["message"]["content"].as_str().unwrap().to_owned()
    };
    assert_eq!(bare(), "Rotate the key in the vault.");

    let mut g = c.benchmark_group("llm_call");
    g.bench_function("bare_reqwest_request", |b| b.iter(|| black_box(bare())));
    g.bench_function("openai_model_handler", |b| b.iter(|| black_box(handler())));
    g.finish();
    paired::report(
        "llm_call",
        &mut [
            ("bare_reqwest_request", &mut || drop(black_box(bare()))),
            ("openai_model_handler", &mut || drop(black_box(handler()))),
        ],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
