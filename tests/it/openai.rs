//! `LLMCall` and `SummarizeMemory` on an OpenAI-compatible server (`handlers::OpenAiModel`),
//! against a real HTTP server on 127.0.0.1 (wiremock), offline: what is sent, success, 429 and
//! 500, a slow server past `llmMs`, malformed, extra-field and non-UTF-8 bodies, the API key,
//! token usage on the `chat` span, and whole cycles through the executor.
#![cfg(feature = "openai")]

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use planlock::demo::Demo;
use planlock::executor::TokenUsage;
use planlock::handler::TestContext;
use planlock::handlers::openai::ModelError;
use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::schema::*;
use planlock::steps::*;
use planlock::{
    AnyObject, Executor, Failure, FailureKind, Handler, HandlerError, PlanMetadata, PositiveInt, StepType, Timeouts,
};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "sk-test-5ecret-do-not-log";

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "served-model",
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19 }
    })
}

async fn server_answering(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(template).mount(&server).await;
    server
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(ModelConfig::new(format!("{}/v1", server.uri()), "configured-model").api_key(KEY))
}

fn llm_payload(config: Value) -> LlmCallPayload {
    let Value::Object(config) = config else { panic!("config must be an object") };
    LlmCallPayload { prompt: "You are terse.".into(), config: AnyObject(config) }
}

/// A context whose ledger has the assembled prompt, with `llm_ms` as the plan's deadline.
fn context(p: &LlmCallPayload, llm_ms: Option<u64>) -> TestContext {
    let mut metadata = PlanMetadata::new("profiles/default", "chat");
    metadata.timeouts = Some(Timeouts { llm_ms: llm_ms.and_then(PositiveInt::new), io_ms: None });
    TestContext::new("llm", p.clone()).metadata(metadata).with_step::<PromptAssemble>(
        "prompt",
        PromptAssemblePayload { template: "t".into(), vars: AnyObject::new() },
        PromptAssembleResult { prompt: "How do I rotate the API key?".into() },
    )
}

async fn call(model: &OpenAiModel, p: &LlmCallPayload, llm_ms: Option<u64>) -> Result<LlmCallResult, HandlerError> {
    Handler::<LLMCall>::call(model, &context(p, llm_ms).context(), p).await
}

/// The `ModelError` inside a handler error.
fn model_error(e: &HandlerError) -> &ModelError {
    std::error::Error::source(e).and_then(|s| s.downcast_ref::<ModelError>()).expect("a ModelError source")
}

#[tokio::test]
async fn a_call_sends_the_assembled_prompt_with_the_plans_config_and_returns_the_text() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("Use the vault.")))
        .expect(1)
        .mount(&server)
        .await;
    let p = llm_payload(json!({ "model": "plan-model", "temperature": 0.2, "max_tokens": 64, "seed": 7 }));
    let out = call(&model(&server), &p, Some(5_000)).await.unwrap();
    assert_eq!(out.response, "Use the vault.");

    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "plan-model",
            "temperature": 0.2, "max_tokens": 64, "seed": 7,
            "messages": [
                { "role": "system", "content": "You are terse." },
                { "role": "user", "content": "How do I rotate the API key?" }
            ]
        })
    );
}

#[tokio::test]
async fn without_config_model_the_configured_model_is_used_and_an_empty_prompt_sends_no_system_message() {
    let server = server_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let mut p = llm_payload(json!({}));
    p.prompt.clear();
    call(&model(&server), &p, None).await.unwrap();
    let body: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(body["model"], "configured-model");
    assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
    // Without `max_tokens` in the plan, every request is still bounded.
    assert_eq!(body["max_tokens"], planlock::handlers::openai::DEFAULT_MAX_TOKENS);
}

#[tokio::test]
async fn a_body_with_extra_fields_is_read() {
    let mut body = completion("fine");
    body["system_fingerprint"] = json!("fp_1");
    body["choices"][0]["logprobs"] = Value::Null;
    body["choices"][0]["message"]["refusal"] = Value::Null;
    body["x_vendor"] = json!({"latency_ms": 3});
    let server = server_answering(ResponseTemplate::new(200).set_body_json(body)).await;
    assert_eq!(call(&model(&server), &llm_payload(json!({})), None).await.unwrap().response, "fine");
}

#[tokio::test]
async fn http_429_is_an_error_with_the_servers_message_and_retry_after() {
    let body = json!({ "error": { "message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded" } });
    let server =
        server_answering(ResponseTemplate::new(429).set_body_json(body).insert_header("retry-after", "20")).await;
    // The wait it asks for is past the call's deadline: it fails at once, not tried again.
    let started = Instant::now();
    let err = call(&model(&server), &llm_payload(json!({})), Some(2_000)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    assert_eq!(model_error(&err).code(), "model-http-status");
    let text = err.to_string();
    assert!(text.contains("HTTP 429: Rate limit reached for requests (retry after 20 s)"), "{text}");
    assert!(text.contains("/v1/chat/completions"), "the message names the endpoint: {text}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// A 429 whose `retry-after` fits in the deadline is tried again after it (CONTRACT §20).
#[tokio::test]
async fn a_429_is_tried_again_after_its_retry_after_within_the_deadline() {
    let server = MockServer::start().await;
    let limited = ResponseTemplate::new(429).insert_header("retry-after", "1").set_body_string("slow down");
    Mock::given(method("POST")).respond_with(limited).up_to_n_times(1).mount(&server).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("after")))
        .mount(&server)
        .await;
    let started = Instant::now();
    let answer = call(&model(&server), &llm_payload(json!({})), Some(5_000)).await.unwrap();
    assert_eq!(answer.response, "after");
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// An answer saying no request remains holds the next call until its reset, instead of it
/// being refused; a call whose deadline ends before the reset fails at once, sending nothing;
/// headers that ask for absurd waits are bounded, and unreadable ones ignored.
#[tokio::test]
async fn the_rate_limit_headers_pace_the_next_calls() {
    let exhausted = ResponseTemplate::new(200)
        .set_body_json(completion("ok"))
        .insert_header("x-ratelimit-remaining-requests", "0")
        .insert_header("x-ratelimit-reset-requests", "1s")
        .insert_header("x-ratelimit-remaining-tokens", "5000")
        .insert_header("x-ratelimit-reset-tokens", "garbage");
    let server = server_answering(exhausted).await;
    let model = model(&server);
    call(&model, &llm_payload(json!({})), Some(5_000)).await.unwrap();
    let started = Instant::now();
    let err = call(&model, &llm_payload(json!({})), Some(300)).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-rate-limited", "{err}");
    assert!(err.to_string().contains("limits the rate of calls"), "{err}");
    assert!(started.elapsed() < Duration::from_millis(200), "failed at once: {:?}", started.elapsed());
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "nothing was sent");
    let answer = call(&model, &llm_payload(json!({})), Some(5_000)).await.unwrap();
    assert_eq!(answer.response, "ok");
    assert!(started.elapsed() >= Duration::from_millis(800), "paced: {:?}", started.elapsed());

    let absurd = ResponseTemplate::new(429)
        .set_body_string("no")
        .insert_header("retry-after", "1e300")
        .insert_header("x-ratelimit-remaining-requests", "0")
        .insert_header("x-ratelimit-reset-requests", "99999999999999h");
    let server = server_answering(absurd).await;
    let started = Instant::now();
    let err = call(&self::model(&server), &llm_payload(json!({})), Some(1_000)).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(500), "{:?}", started.elapsed());
    assert_eq!(model_error(&err).code(), "model-http-status", "{err}");
}

#[tokio::test]
async fn http_500_with_a_plain_body_is_an_error_quoting_it() {
    let server = server_answering(ResponseTemplate::new(500).set_body_string("upstream exploded")).await;
    let err = call(&model(&server), &llm_payload(json!({})), None).await.unwrap_err();
    assert!(matches!(model_error(&err), ModelError::Status { status: 500, .. }));
    assert!(err.to_string().contains("HTTP 500: upstream exploded"), "{err}");
    // Ollama's shape: `{"error": "..."}`.
    let server =
        server_answering(ResponseTemplate::new(404).set_body_json(json!({"error": "model 'x' not found"}))).await;
    let err = call(&model(&server), &llm_payload(json!({})), None).await.unwrap_err();
    assert!(err.to_string().contains("HTTP 404: model 'x' not found"), "{err}");
}

#[tokio::test]
async fn a_slow_server_past_llm_ms_is_a_timeout_and_the_request_is_given_up() {
    let slow = ResponseTemplate::new(200).set_body_json(completion("late")).set_delay(Duration::from_secs(5));
    let server = server_answering(slow).await;
    let started = Instant::now();
    let err = call(&model(&server), &llm_payload(json!({})), Some(300)).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-timeout");
    // A timeout is what the next cycle may not meet: CycleFail; a config that cannot work is FailFast.
    assert_eq!(model_error(&err).kind(), FailureKind::CycleFail);
    assert!(err.to_string().contains("did not answer within 300 ms"), "{err}");
    // The request itself stopped at the deadline (the thread is not left waiting 5 s).
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_malformed_body_is_an_error_showing_its_start() {
    let server = server_answering(ResponseTemplate::new(200).set_body_string("<html>gateway</html>")).await;
    let err = call(&model(&server), &llm_payload(json!({})), None).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-malformed-body");
    assert!(err.to_string().contains("<html>gateway</html>"), "{err}");
    // JSON, but not a completion: no choices, or a choice without text.
    for body in [
        json!({"choices": []}),
        json!({"object": "list"}),
        json!({"choices": [{"message": {"content": null}, "finish_reason": "tool_calls"}]}),
    ] {
        let server = server_answering(ResponseTemplate::new(200).set_body_json(body.clone())).await;
        let err = call(&model(&server), &llm_payload(json!({})), None).await.unwrap_err();
        assert_eq!(model_error(&err).code(), "model-malformed-body", "{body}: {err}");
    }
}

#[tokio::test]
async fn a_body_that_is_not_utf8_is_an_error_naming_the_offset() {
    let mut bytes = br#"{"choices":[{"message":{"content":"caf"#.to_vec();
    let offset = bytes.len();
    bytes.extend_from_slice(&[0xC3, 0x28]);
    bytes.extend_from_slice(br#""}}]}"#);
    let server = server_answering(ResponseTemplate::new(200).set_body_raw(bytes, "application/json")).await;
    let err = call(&model(&server), &llm_payload(json!({})), None).await.unwrap_err();
    assert!(matches!(model_error(&err), ModelError::NotUtf8 { offset: o } if *o == offset), "{err}");
}

#[tokio::test]
async fn config_may_not_set_messages_or_stream_and_nothing_is_sent() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&server).await;
    for config in [json!({"stream": true}), json!({"messages": []})] {
        let err = call(&model(&server), &llm_payload(config), None).await.unwrap_err();
        assert_eq!(model_error(&err).code(), "model-config");
        assert_eq!(model_error(&err).kind(), FailureKind::FailFast);
        assert!(err.to_string().contains("remove it from the LLMCall payload's config"), "{err}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_an_error_naming_the_server() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let model = OpenAiModel::new(ModelConfig::new(format!("http://127.0.0.1:{port}/v1"), "m"));
    let err = call(&model, &llm_payload(json!({})), None).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-connect");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
}

#[tokio::test]
async fn the_api_key_is_never_in_an_error_or_a_debug_print() {
    let server =
        server_answering(ResponseTemplate::new(401).set_body_json(json!({"error": {"message": "bad key"}}))).await;
    let model = model(&server);
    let err = call(&model, &llm_payload(json!({})), None).await.unwrap_err();
    for text in [err.to_string(), format!("{err:?}"), format!("{model:?}"), format!("{:?}", model.config())] {
        assert!(!text.contains(KEY), "{text}");
    }
}

#[tokio::test]
async fn summarize_memory_sends_the_cycles_response_and_reads_strict_json() {
    let answer = json!({"summary": "Rotate keys in the vault.", "keywords": ["keys", "vault"]}).to_string();
    let server = server_answering(ResponseTemplate::new(200).set_body_json(completion(&answer))).await;
    let p = SummarizeMemoryPayload { response: "(from the plan)".into() };
    let test = TestContext::new("summary", p.clone()).with_step::<LLMCall>(
        "llm",
        llm_payload(json!({})),
        LlmCallResult { response: "Rotate the key in the vault every 90 days.".into() },
    );
    let out = Handler::<SummarizeMemory>::call(&model(&server), &test.context(), &p).await.unwrap();
    assert_eq!(
        out,
        SummarizeMemoryResult {
            summary: "Rotate keys in the vault.".into(),
            keywords: vec!["keys".into(), "vault".into()]
        }
    );
    let body: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["response_format"]["schema"]["required"], json!(["summary", "keywords"]));
    assert_eq!(body["max_tokens"], planlock::handlers::openai::SUMMARY_MAX_TOKENS);
    assert_eq!(body["messages"][1]["content"], "Rotate the key in the vault every 90 days.");

    // Strict: an extra field, a missing one or prose is refused with what the model said.
    for bad in [
        json!({"summary": "s", "keywords": [], "mood": "happy"}).to_string(),
        json!({"summary": "s"}).to_string(),
        "Sure! Here is the summary: keys.".to_owned(),
    ] {
        let server = server_answering(ResponseTemplate::new(200).set_body_json(completion(&bad))).await;
        let err = Handler::<SummarizeMemory>::call(&model(&server), &test.context(), &p).await.unwrap_err();
        assert_eq!(model_error(&err).code(), "model-malformed-body", "{bad}");
        assert!(err.to_string().contains("the summary is not"), "{err}");
    }
}

/// A plan whose model steps go to the mock server, the rest to the demo handlers.
fn cycle_plan(llm_ms: u64) -> planlock::ValidPlan {
    common::plan_with(|v| {
        v["metadata"]["timeouts"]["llmMs"] = json!(llm_ms);
        v["steps"][5]["payload"]["config"] = json!({ "model": "plan-model", "temperature": 0.2 });
    })
}

fn executor(server: &MockServer) -> Executor<impl planlock::handler::HandlerSet> {
    let model = model(server);
    // Outside a runtime nothing saves a session: the cycle ends with a stand-in save.
    let save = planlock::handler_fn(|_, _: &PersistSessionPayload| Ok(PersistSessionResult { status: "saved".into() }));
    Executor::new(
        Demo::new().handlers().on::<LLMCall>(model.clone()).on::<SummarizeMemory>(model).on::<PersistSession>(save),
    )
}

#[tokio::test]
async fn a_whole_cycle_runs_on_the_model_and_records_usage_on_the_chat_span() {
    use tracing_subscriber::layer::SubscriberExt;
    let server = MockServer::start().await;
    let summary = json!({"summary": "s", "keywords": ["k"]}).to_string();
    Mock::given(method("POST"))
        .and(wiremock::matchers::body_partial_json(json!({"response_format": {"type": "json_object"}})))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(&summary)))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion("Use the vault.")))
        .with_priority(2)
        .mount(&server)
        .await;
    let plan = cycle_plan(10_000);
    let fields = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(common::RecordedFields(fields.clone()));
    let exec = executor(&server);
    let outcome = {
        let _guard = tracing::subscriber::set_default(subscriber);
        exec.run(&plan).await.unwrap()
    };
    let done = outcome.completed().unwrap();
    assert_eq!(done.ledger.get::<LLMCall>().unwrap().response, "Use the vault.");
    assert_eq!(done.ledger.get::<SummarizeMemory>().unwrap().keywords, vec!["k".to_owned()]);
    // The user's message is what PromptAssemble rendered from the plan's template and vars.
    let first: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(first["messages"][1]["content"], "Answer How do I rotate the API key? using repo");
    let fields = fields.lock().unwrap().clone();
    for (name, value) in [
        ("gen_ai.usage.input_tokens", "12"),
        ("gen_ai.usage.output_tokens", "7"),
        ("gen_ai.request.model", "\"plan-model\""),
        ("gen_ai.response.model", "\"served-model\""),
    ] {
        assert!(fields.contains(&(name.to_owned(), value.to_owned())), "{name} = {value} not in {fields:?}");
    }
    // And in the report: on each model step's record, summed for the cycle.
    let usage = |t: StepType| done.report.steps.iter().find(|s| s.step_type == t).and_then(|s| s.usage);
    assert_eq!(usage(StepType::LLMCall), Some(TokenUsage { input: 12, output: 7 }));
    assert_eq!(usage(StepType::SummarizeMemory), Some(TokenUsage { input: 12, output: 7 }));
    assert_eq!(usage(StepType::PromptAssemble), None, "no model, no usage");
    assert_eq!(done.report.usage(), Some(TokenUsage { input: 24, output: 14 }));
}

#[tokio::test]
async fn a_handler_calling_twice_records_the_sum_and_a_test_context_shows_it() {
    let server = server_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let (openai, p) = (model(&server), llm_payload(json!({})));
    let test = context(&p, None);
    Handler::<LLMCall>::call(&openai, &test.context(), &p).await.unwrap();
    Handler::<LLMCall>::call(&openai, &test.context(), &p).await.unwrap();
    assert_eq!(test.take_usage(), Some(TokenUsage { input: 24, output: 14 }));
    assert_eq!(test.take_usage(), None, "taken");
    // A server that reports no usage records none.
    let quiet = server_answering(ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{ "message": { "role": "assistant", "content": "ok" } }]
    })))
    .await;
    Handler::<LLMCall>::call(&model(&quiet), &test.context(), &p).await.unwrap();
    assert_eq!(test.take_usage(), None);
}

#[tokio::test]
async fn a_slow_model_fails_the_cycle_as_a_cyclefail_timeout() {
    let slow = ResponseTemplate::new(200).set_body_json(completion("late")).set_delay(Duration::from_secs(3));
    let server = server_answering(slow).await;
    let err = executor(&server).run(&cycle_plan(200)).await.unwrap_err();
    assert_eq!(planlock::Failure::kind(&err), FailureKind::CycleFail);
    assert_eq!(planlock::Failure::code(&err), "step-timed-out");
}

#[tokio::test]
async fn a_server_error_fails_the_cycle_as_cyclefail_with_the_servers_message() {
    let server =
        server_answering(ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded"}}))).await;
    let err = executor(&server).run(&cycle_plan(10_000)).await.unwrap_err();
    assert_eq!(planlock::Failure::kind(&err), FailureKind::CycleFail);
    assert!(err.to_string().contains("HTTP 503: overloaded"), "{err}");
}

#[tokio::test]
async fn where_the_plan_sets_no_limit_the_clients_request_timeout_bounds_the_call() {
    assert_eq!(planlock::handlers::openai::DEFAULT_REQUEST_TIMEOUT, Duration::from_secs(300));
    let slow = ResponseTemplate::new(200).set_body_json(completion("late")).set_delay(Duration::from_secs(5));
    let server = server_answering(slow).await;
    let model =
        OpenAiModel::new(ModelConfig::new(format!("{}/v1", server.uri()), "m").timeout(Duration::from_millis(300)));
    let started = Instant::now();
    // SummarizeMemory has no deadline in the plan; LLMCall without llmMs neither.
    let p = SummarizeMemoryPayload { response: "text".into() };
    let test = TestContext::new("summary", p.clone());
    let err = Handler::<SummarizeMemory>::call(&model, &test.context(), &p).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-timeout", "{err}");
    let err = call(&model, &llm_payload(json!({})), None).await.unwrap_err();
    assert_eq!(model_error(&err).code(), "model-timeout", "{err}");
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
}

/// An embeddings answer for `n` texts of `dimension` numbers, its items in reverse order.
fn embeddings(n: usize, dimension: usize) -> Value {
    let data: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({ "object": "embedding", "index": i, "embedding": vec![i as f32 + 1.0; dimension] }))
        .collect();
    json!({ "object": "list", "data": data, "model": "e5" })
}

#[tokio::test]
async fn the_embedder_sends_the_purpose_reads_by_index_and_checks_what_it_gets() {
    use planlock::embed::{Embedder, Purpose};
    use planlock::handlers::{EmbedConfig, OpenAiEmbedder};
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(embeddings(1, 4)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .respond_with(ResponseTemplate::new(200).set_body_json(embeddings(2, 4)))
        .mount(&server)
        .await;
    let config = EmbedConfig::new(format!("{}/v1", server.uri()), "e5").api_key(KEY).purpose_member("input_type");
    let embedder = tokio::task::spawn_blocking(move || OpenAiEmbedder::connect(config)).await.unwrap().unwrap();
    assert_eq!(embedder.dimension(), 4, "learned from the probe");
    let texts = vec!["a".to_owned(), "b".to_owned()];
    let vectors = embedder.embed(&texts, Purpose::Passage, None).await.unwrap();
    // Read by index (the server sent them reversed), and normalized.
    assert!((vectors[0][0] - 0.5).abs() < 1e-6 && (vectors[1][0] - 0.5).abs() < 1e-6, "{vectors:?}");
    let body: Value = serde_json::from_slice(&server.received_requests().await.unwrap()[1].body).unwrap();
    assert_eq!((body["input_type"].as_str(), body["input"].as_array().map(Vec::len)), (Some("passage"), Some(2)));
    // A vector of another dimension is refused, and the key is in no error.
    let err = embedder.embed(&texts[..1], Purpose::Query, None).await.unwrap_err();
    assert!(err.to_string().contains("2 vectors for 1 texts"), "{err}");
    assert!(!format!("{err:?}{embedder:?}").contains(KEY));
}

#[tokio::test]
async fn an_embedding_request_stops_at_the_steps_deadline() {
    use planlock::embed::{Embedder, Purpose};
    use planlock::handlers::{EmbedConfig, OpenAiEmbedder};
    let slow = ResponseTemplate::new(200).set_body_json(embeddings(1, 4)).set_delay(Duration::from_secs(5));
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/v1/embeddings")).respond_with(slow).mount(&server).await;
    let embedder = OpenAiEmbedder::with_dimension(EmbedConfig::new(format!("{}/v1", server.uri()), "e5"), 4);
    let started = Instant::now();
    let deadline = Some(Instant::now() + Duration::from_millis(200));
    let err = embedder.embed(&["q".to_owned()], Purpose::Query, deadline).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3), "given up at the deadline, not after the server's 5 s");
    let source = std::error::Error::source(&err).and_then(|s| s.downcast_ref::<ModelError>()).expect("a ModelError");
    assert_eq!(source.code(), "model-timeout");
}

/// The process's threads now, from `/proc/self/status`.
#[cfg(target_os = "linux")]
fn threads() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok()).unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn calls_waiting_on_a_model_hold_no_thread_each() {
    // 200 calls in flight on one executor thread, each waiting 600 ms for its answer: the
    // process gains no thread per call (a blocking client on a thread pool gained ~200).
    const CALLS: usize = 200;
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let slow = ResponseTemplate::new(200).set_body_json(completion("late")).set_delay(Duration::from_millis(600));
    let server = server_rt.block_on(server_answering(slow));
    let model = model(&server);
    let p = llm_payload(json!({}));
    planlock::block_on(call(&model, &p, Some(10_000))).unwrap(); // the client's own thread starts
    let before = threads();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let (during, answers) = local.block_on(&rt, async {
        let calls: Vec<_> = (0..CALLS)
            .map(|_| {
                let (model, p) = (model.clone(), p.clone());
                tokio::task::spawn_local(async move { call(&model, &p, Some(10_000)).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(300)).await; // every call is waiting now
        let during = threads();
        let mut answers = 0;
        for c in calls {
            answers += usize::from(c.await.unwrap().is_ok_and(|r| r.response == "late"));
        }
        (during, answers)
    });
    assert_eq!(answers, CALLS);
    assert!(during < before + 16, "{before} threads before, {during} with {CALLS} calls in flight");
}

#[tokio::test]
async fn an_embeddings_answer_where_only_some_items_have_an_index_is_refused() {
    use planlock::embed::{Embedder, Purpose};
    use planlock::handlers::{EmbedConfig, OpenAiEmbedder};
    let server = MockServer::start().await;
    // The second item says it is the first; the first says nothing. Read in position order, the
    // vectors would be swapped.
    let body = json!({ "data": [ { "embedding": [1.0, 0.0] }, { "embedding": [0.0, 1.0], "index": 0 } ] });
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(body)).mount(&server).await;
    let embedder = OpenAiEmbedder::with_dimension(EmbedConfig::new(format!("{}/v1", server.uri()), "e5"), 2);
    let err = embedder.embed(&["a".to_owned(), "b".to_owned()], Purpose::Passage, None).await.unwrap_err();
    assert!(err.to_string().contains("1 of the answer's 2 items have an index"), "{err}");
}

#[tokio::test]
async fn a_request_carries_a_seed_from_the_steps_idempotency_key_unless_the_plan_sets_one() {
    let server = server_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let model = model(&server);
    let p = llm_payload(json!({}));
    let (session, hash) = (uuid::Uuid::new_v4(), planlock::Digest::of(b"plan"));
    for cycle in [1, 1, 2] {
        let cx = context(&p, None).session(session, hash, cycle);
        Handler::<LLMCall>::call(&model, &cx.context(), &p).await.unwrap();
    }
    let seeds: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["seed"].clone())
        .collect();
    assert!(seeds[0].as_u64().is_some_and(|s| s < 1 << 31), "{seeds:?}");
    assert_eq!(seeds[0], seeds[1], "a re-run of the same cycle asks with the same seed");
    assert_ne!(seeds[0], seeds[2], "the next cycle asks with another");
    // The plan's own seed is sent as it is (the first test sends `seed: 7`).
}
