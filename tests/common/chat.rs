//! A chat-completions server on 127.0.0.1 (wiremock) that answers every request alike and counts
//! them: the model whose calls the budget tests count (CONTRACT §20). It answers a
//! `SummarizeMemory` request with a summary, and reports the usage it is given.

use std::time::Duration;

use serde_json::json;
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// What the server reports a summary (`SummarizeMemory`) used.
pub const SUMMARY_REPORTED: u64 = 300;

/// A server answering with `status` after `delay`, reporting `prompt` and `completion` tokens
/// (a summary: [`SUMMARY_REPORTED`]); the tokio runtime serving it.
pub fn counting(
    status: u16,
    delay: Duration,
    (prompt, completion): (u64, u64),
) -> (tokio::runtime::Runtime, MockServer) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let answer = |content: &str, usage: (u64, u64)| {
        json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": content }, "finish_reason": "stop" }],
            "usage": { "prompt_tokens": usage.0, "completion_tokens": usage.1 }
        })
    };
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        let summary = answer("{\"summary\": \"ok\", \"keywords\": [\"ok\"]}", (SUMMARY_REPORTED - 20, 20));
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(body_string_contains("Summarize the assistant"))
            .respond_with(ResponseTemplate::new(status).set_body_json(summary))
            .with_priority(1)
            .mount(&server)
            .await;
        let reply = ResponseTemplate::new(status).set_body_json(answer("ok", (prompt, completion))).set_delay(delay);
        Mock::given(method("POST")).and(path("/v1/chat/completions")).respond_with(reply).mount(&server).await;
        server
    });
    (rt, server)
}

/// How many requests the server received.
pub fn calls(rt: &tokio::runtime::Runtime, server: &MockServer) -> usize {
    rt.block_on(server.received_requests()).map_or(0, |r| r.len())
}
