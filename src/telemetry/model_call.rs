//! [`ModelCall`]: one call to a model as the GenAI conventions describe it, a client span named
//! `{operation} {model}` and the two `gen_ai.client.*` metrics, made the same way by every model
//! handler (planlock's OpenAI-compatible client and embedder, the demo model, and yours).

use std::time::Instant;

use tracing::field::Empty;

use crate::telemetry::meters::{self, CallMetric};
use crate::telemetry::name;
use crate::telemetry::names::*;

/// The most finish reasons kept (one per choice).
const MAX_CHOICES: usize = 16;

/// The GenAI operations planlock calls models for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A chat completion (`chat`).
    Chat,
    /// Embeddings (`embeddings`).
    Embeddings,
}

impl Operation {
    /// The conventions' name, `gen_ai.operation.name`'s value.
    pub const fn name(self) -> &'static str {
        match self {
            Operation::Chat => "chat",
            Operation::Embeddings => "embeddings",
        }
    }
}

/// What a model's answer reported; every count is optional, as servers differ.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelAnswer<'a> {
    /// The model that answered (`gen_ai.response.model`).
    pub model: Option<&'a str>,
    /// Input (prompt) tokens.
    pub input_tokens: Option<u64>,
    /// Output (completion) tokens.
    pub output_tokens: Option<u64>,
    /// Input tokens read from the server's cache (part of `input_tokens`).
    pub cache_read_input_tokens: Option<u64>,
    /// Output tokens spent reasoning (part of `output_tokens`).
    pub reasoning_output_tokens: Option<u64>,
    /// Why each choice stopped (`stop`, `length`, …).
    pub finish_reasons: &'a [&'a str],
}

/// One message of a model call's content, as [`ModelCall::content`] records it: its role
/// (`system`, `user`, `assistant`) and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// `system`, `user`, `assistant`, `tool`.
    pub role: &'a str,
    /// The text.
    pub text: &'a str,
}

/// One call to a model: a span of kind client named `chat {model}` or `embeddings {model}`
/// (names from outside cut to [`MAX_NAME_CHARS`](crate::telemetry::MAX_NAME_CHARS) characters)
/// under the current span (the step's), with `gen_ai.operation.name`, `gen_ai.provider.name`,
/// the request model, and at its end the response model, token usage, finish reasons or
/// `error.type`; and the call's `gen_ai.client.operation.duration` and
/// `gen_ai.client.token.usage`.
///
/// A handler of your own that calls a model makes one per request, runs the request inside
/// [`span`](Self::span), and ends it with [`answered`](Self::answered) or
/// [`failed`](Self::failed) (a call dropped unended counts as failed, `error.type` `cancelled`).
///
/// ```
/// use planlock::telemetry::{ModelAnswer, ModelCall, Operation};
/// use tracing::Instrument;
///
/// # planlock::block_on(async {
/// let call = ModelCall::start(Operation::Chat, "openai", "gpt-4o-mini").server("api.openai.com", Some(443));
/// call.max_tokens(256);
/// let answer = async { "Hello" }.instrument(call.span().clone()).await;
/// call.answered(ModelAnswer { input_tokens: Some(12), output_tokens: Some(3), finish_reasons: &["stop"], ..Default::default() });
/// # assert_eq!(answer, "Hello");
/// # });
/// ```
#[derive(Debug)]
#[must_use = "a model call ends with `answered` or `failed`"]
pub struct ModelCall {
    span: tracing::Span,
    started: Instant,
    operation: Operation,
    provider: String,
    model: String,
    server: Option<String>,
    ended: bool,
}

impl ModelCall {
    /// Starts the call's span under the current one and its clock.
    pub fn start(operation: Operation, provider: &str, model: &str) -> ModelCall {
        let (provider, model) = (name(provider), name(model));
        macro_rules! span {
            ($name:literal, $kind:literal) => {
                tracing::info_span!(
                    $name,
                    otel.name = %format_args!("{} {model}", $name),
                    otel.kind = "client",
                    otel.status_code = Empty,
                    otel.status_description = Empty,
                    { OPENINFERENCE_SPAN_KIND } = $kind,
                    { GEN_AI_OPERATION_NAME } = $name,
                    { GEN_AI_PROVIDER_NAME } = provider,
                    { GEN_AI_REQUEST_MODEL } = model,
                    { GEN_AI_REQUEST_MAX_TOKENS } = Empty,
                    { GEN_AI_REQUEST_TEMPERATURE } = Empty,
                    { GEN_AI_REQUEST_SEED } = Empty,
                    { INPUT_VALUE } = Empty,
                    { INPUT_MIME_TYPE } = Empty,
                    { OUTPUT_VALUE } = Empty,
                    { OUTPUT_MIME_TYPE } = Empty,
                    { GEN_AI_RESPONSE_MODEL } = Empty,
                    { GEN_AI_RESPONSE_FINISH_REASONS } = Empty,
                    { GEN_AI_USAGE_INPUT_TOKENS } = Empty,
                    { GEN_AI_USAGE_OUTPUT_TOKENS } = Empty,
                    { GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS } = Empty,
                    { GEN_AI_USAGE_REASONING_OUTPUT_TOKENS } = Empty,
                    { GEN_AI_EMBEDDINGS_DIMENSION_COUNT } = Empty,
                    { GEN_AI_INPUT_MESSAGES } = Empty,
                    { GEN_AI_OUTPUT_MESSAGES } = Empty,
                    { SERVER_ADDRESS } = Empty,
                    { SERVER_PORT } = Empty,
                    { ERROR_TYPE } = Empty,
                )
            };
        }
        let span = match operation {
            Operation::Chat => span!("chat", "LLM"),
            Operation::Embeddings => span!("embeddings", "EMBEDDING"),
        };
        ModelCall {
            span,
            started: Instant::now(),
            operation,
            provider: provider.to_owned(),
            model: model.to_owned(),
            server: None,
            ended: false,
        }
    }

    /// The server's host and port (`server.address`, `server.port`).
    pub fn server(mut self, address: &str, port: Option<u16>) -> ModelCall {
        self.span.record(SERVER_ADDRESS, address);
        if let Some(port) = port {
            self.span.record(SERVER_PORT, i64::from(port));
        }
        self.server = Some(address.to_owned());
        self
    }

    /// The server of `url` (its host and port, never its userinfo, path or query).
    pub fn server_of_url(self, url: &str) -> ModelCall {
        match host_and_port(url) {
            Some((host, port)) => self.server(&host, port),
            None => self,
        }
    }

    /// The request's token limit (`gen_ai.request.max_tokens`).
    pub fn max_tokens(&self, n: u64) {
        self.span.record(GEN_AI_REQUEST_MAX_TOKENS, crate::telemetry::int(n));
    }

    /// The request's sampling temperature (`gen_ai.request.temperature`).
    pub fn temperature(&self, t: f64) {
        self.span.record(GEN_AI_REQUEST_TEMPERATURE, t);
    }

    /// The seed the request sends (`gen_ai.request.seed`).
    pub fn seed(&self, seed: i64) {
        self.span.record(GEN_AI_REQUEST_SEED, seed);
    }

    /// The embeddings' dimension (`gen_ai.embeddings.dimension.count`).
    pub fn dimension(&self, n: usize) {
        self.span.record(GEN_AI_EMBEDDINGS_DIMENSION_COUNT, crate::telemetry::int(n));
    }

    /// The messages sent and the answer received, in the GenAI conventions' shape
    /// (`gen_ai.input.messages`: `[{"role", "parts": [{"type": "text", "content"}]}]`;
    /// `gen_ai.output.messages`: the assistant's, with its `finish_reason`), and as the
    /// OpenInference attributes Arize Phoenix shows in its panels (`input.value`, the last user
    /// message; `output.value`, the answer; and the indexed `llm.input_messages` and
    /// `llm.output_messages` where an OpenTelemetry layer records the span). Content: call it
    /// only when content capture is on
    /// ([`StepContext::records_content`](crate::handler::StepContext::records_content)).
    ///
    /// ```
    /// use planlock::telemetry::{Message, ModelCall, Operation};
    /// let call = ModelCall::start(Operation::Chat, "openai", "m");
    /// call.content(&[Message { role: "user", text: "Hi" }], Some(("Hello", Some("stop"))));
    /// # call.failed("test");
    /// ```
    pub fn content(&self, input: &[Message<'_>], output: Option<(&str, Option<&str>)>) {
        let part = |text: &str| serde_json::json!([{ "type": "text", "content": text }]);
        let sent: Vec<serde_json::Value> =
            input.iter().map(|m| serde_json::json!({ "role": m.role, "parts": part(m.text) })).collect();
        self.span.record(GEN_AI_INPUT_MESSAGES, serde_json::Value::Array(sent).to_string().as_str());
        if let Some(last) = input.iter().rev().find(|m| m.role == "user").or(input.last()) {
            self.span.record(INPUT_VALUE, last.text);
            self.span.record(INPUT_MIME_TYPE, "text/plain");
        }
        if let Some((answer, finish_reason)) = output {
            let mut message = serde_json::json!({ "role": "assistant", "parts": part(answer) });
            if let Some(reason) = finish_reason {
                message["finish_reason"] = name(reason).into();
            }
            self.span.record(GEN_AI_OUTPUT_MESSAGES, serde_json::json!([message]).to_string().as_str());
            self.span.record(OUTPUT_VALUE, answer);
            self.span.record(OUTPUT_MIME_TYPE, "text/plain");
        }
        #[cfg(feature = "otel")]
        {
            use tracing_opentelemetry::OpenTelemetrySpanExt;
            let indexed = |list: &str, i: usize, what: &str| format!("llm.{list}_messages.{i}.message.{what}");
            for (i, m) in input.iter().enumerate() {
                self.span.set_attribute(indexed("input", i, "role"), m.role.to_owned());
                self.span.set_attribute(indexed("input", i, "content"), m.text.to_owned());
            }
            if let Some((answer, _)) = output {
                self.span.set_attribute(indexed("output", 0, "role"), "assistant");
                self.span.set_attribute(indexed("output", 0, "content"), answer.to_owned());
            }
        }
    }

    /// The call's span, to run the request in.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The call answered.
    pub fn answered(mut self, answer: ModelAnswer<'_>) {
        self.ended = true;
        let span = &self.span;
        let model = answer.model.map(name);
        if let Some(model) = model {
            span.record(GEN_AI_RESPONSE_MODEL, model);
        }
        for (name, count) in [
            (GEN_AI_USAGE_INPUT_TOKENS, answer.input_tokens),
            (GEN_AI_USAGE_OUTPUT_TOKENS, answer.output_tokens),
            (GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, answer.cache_read_input_tokens),
            (GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, answer.reasoning_output_tokens),
        ] {
            if let Some(n) = count {
                span.record(name, crate::telemetry::int(n));
            }
        }
        if !answer.finish_reasons.is_empty() {
            let reasons: Vec<&str> = answer.finish_reasons.iter().take(MAX_CHOICES).copied().map(name).collect();
            finish_reasons(span, &reasons);
        }
        self.metric(model, None, answer.input_tokens, answer.output_tokens);
    }

    /// The call failed with a stable code (`error.type`, such as `model-unreachable`).
    pub fn failed(mut self, error_type: &str) {
        self.ended = true;
        let message = format!("the {} call failed: {}", self.operation.name(), name(error_type));
        self.fail(name(error_type), &message);
    }

    /// The call failed with a stable code and a message saying why (the span's status and its
    /// `exception` event carry it; give one without secrets: planlock's errors are scrubbed).
    pub fn failed_with(mut self, error_type: &str, message: &str) {
        self.ended = true;
        self.fail(name(error_type), message);
    }

    fn fail(&self, error_type: &str, message: &str) {
        crate::telemetry::failed(&self.span, error_type, message);
        self.metric(None, Some(error_type), None, None);
    }

    fn metric(&self, response_model: Option<&str>, error_type: Option<&str>, input: Option<u64>, output: Option<u64>) {
        meters::model_call(&CallMetric {
            operation: self.operation.name(),
            provider: &self.provider,
            request_model: &self.model,
            response_model,
            server_address: self.server.as_deref(),
            error_type,
            duration: self.started.elapsed(),
            input_tokens: input,
            output_tokens: output,
        });
    }
}

impl Drop for ModelCall {
    fn drop(&mut self) {
        // Dropped unended: the step's deadline or the caller cancelled the request.
        if !self.ended {
            let message = format!("the {} call was dropped before its answer (a deadline)", self.operation.name());
            self.fail("cancelled", &message);
        }
    }
}

/// `gen_ai.response.finish_reasons` is a string array: set as one where an OpenTelemetry layer
/// records the span, else as the reasons joined by commas.
fn finish_reasons(span: &tracing::Span, reasons: &[&str]) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::{Array, StringValue, Value};
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let values: Vec<StringValue> = reasons.iter().map(|r| StringValue::from(r.to_string())).collect();
        span.set_attribute(GEN_AI_RESPONSE_FINISH_REASONS, Value::Array(Array::String(values)));
    }
    #[cfg(not(feature = "otel"))]
    span.record(GEN_AI_RESPONSE_FINISH_REASONS, reasons.join(",").as_str());
}

/// The host and port of an `http(s)://` URL, without userinfo; `None` if it has no host.
fn host_and_port(url: &str) -> Option<(String, Option<u16>)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => match port.parse::<u16>() {
            Ok(p) => (host, Some(p)),
            Err(_) => (authority, None),
        },
        _ => (authority, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    let port = port.or(match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    });
    Some((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::host_and_port;

    #[test]
    fn the_server_is_the_host_and_port_only() {
        assert_eq!(host_and_port("http://u:p@127.0.0.1:8080/v1?k=1"), Some(("127.0.0.1".into(), Some(8080))));
        assert_eq!(host_and_port("https://api.openai.com/v1"), Some(("api.openai.com".into(), Some(443))));
        assert_eq!(host_and_port("http://[::1]:9/v1"), Some(("::1".into(), Some(9))));
        assert_eq!(host_and_port("http:///v1"), None);
        assert_eq!(host_and_port("nonsense"), None);
    }
}
