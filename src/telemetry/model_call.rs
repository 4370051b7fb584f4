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
            ($name:literal) => {
                tracing::info_span!(
                    $name,
                    otel.name = %format_args!("{} {model}", $name),
                    otel.kind = "client",
                    otel.status_code = Empty,
                    { GEN_AI_OPERATION_NAME } = $name,
                    { GEN_AI_PROVIDER_NAME } = provider,
                    { GEN_AI_REQUEST_MODEL } = model,
                    { GEN_AI_REQUEST_MAX_TOKENS } = Empty,
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
            Operation::Chat => span!("chat"),
            Operation::Embeddings => span!("embeddings"),
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
            self.span.record(SERVER_PORT, port);
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
        self.span.record(GEN_AI_REQUEST_MAX_TOKENS, n);
    }

    /// The embeddings' dimension (`gen_ai.embeddings.dimension.count`).
    pub fn dimension(&self, n: usize) {
        self.span.record(GEN_AI_EMBEDDINGS_DIMENSION_COUNT, n as u64);
    }

    /// The messages sent and received, as JSON (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`). Content: call it only when content capture is on
    /// ([`StepContext::records_content`](crate::handler::StepContext::records_content)).
    pub fn content(&self, input: Option<&str>, output: Option<&str>) {
        if let Some(input) = input {
            self.span.record(GEN_AI_INPUT_MESSAGES, input);
        }
        if let Some(output) = output {
            self.span.record(GEN_AI_OUTPUT_MESSAGES, output);
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
                span.record(name, n);
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
        self.fail(name(error_type));
    }

    fn fail(&self, error_type: &str) {
        self.span.record(ERROR_TYPE, error_type);
        self.span.record("otel.status_code", "error");
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
            self.fail("cancelled");
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
