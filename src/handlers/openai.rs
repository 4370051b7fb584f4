//! `LLMCall` and `SummarizeMemory` on any OpenAI-compatible chat-completions server: OpenAI,
//! vLLM, llama.cpp's server, Ollama (docs/CONTRACT.md, "Real handlers").
//!
//! - The request goes to `{base_url}/chat/completions`. The model is the payload's
//!   `config.model` when it names one, else [`ModelConfig`]'s. Every other member of `config`
//!   (`temperature`, `max_tokens`, …) is passed through untouched; `messages` and `stream` are
//!   planlock's to set, and a `config` that sets them is refused.
//! - What is sent: the handler reads the cycle's text from the ledger, as D-007 lets a handler
//!   read earlier results. `LLMCall` sends `PromptAssemble`'s prompt as the user's message, with
//!   the payload's `prompt` (the policy's fixed instruction) as the system message when it is
//!   not empty. `SummarizeMemory` summarizes this cycle's `LLMCall` response (the payload's
//!   `response` when the ledger has none, as when the handler is called alone).
//! - The API key is read from an environment variable when the handler is made, sent only as
//!   the `Authorization` header, and never logged, printed or put in an error. A server may echo
//!   it back: every text built from a response (its error message, the answer, the model name,
//!   a header) has the key and the URL's password replaced ([`Secrets`]) before anything reads
//!   it, and the URL is shown without its userinfo. Redirects are not followed (they could carry
//!   the key elsewhere); a 3xx is `model-redirect`, naming where it pointed.
//! - `LLMCall`'s deadline is `metadata.timeouts.llmMs`: the executor enforces it, and the HTTP
//!   request is given the same limit so that nothing keeps running after it.
//! - HTTP 4xx and 5xx, malformed bodies, bodies that are not UTF-8, refused connections and
//!   timeouts are handler errors whose source is a [`ModelError`] with a stable code and the
//!   server's own message. The step's failure kind comes from the registry, as for any handler.
//! - Token usage is recorded on the step's `chat` span as `gen_ai.usage.input_tokens` and
//!   `gen_ai.usage.output_tokens`, with `gen_ai.request.model` and `gen_ai.response.model`.
//!
//! The HTTP client is [`ureq`] with rustls (no system OpenSSL); requests run on the `blocking`
//! crate's thread pool, so an async executor's threads are never blocked
//! ([`ModelConfig::on_thread_pool`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::contract::schema::{LlmCallPayload, LlmCallResult, SummarizeMemoryPayload, SummarizeMemoryResult};
use crate::contract::steps::{LLMCall, PromptAssemble, SummarizeMemory};
use crate::exec::handler::{Handler, HandlerError, StepContext};
use crate::handlers::secret::{Secrets, without_userinfo};

/// The environment variable the API key is read from unless another is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// How long a connection may take to open unless configured otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole request may take where the plan sets no limit (`SummarizeMemory` always,
/// `LLMCall` without `llmMs`): a client's safety net, so that a server that accepts and never
/// answers cannot hold a cycle forever. The plan's `llmMs`, when present, is the limit instead.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest response body read, in bytes.
pub const MAX_RESPONSE_BYTES: u64 = 8 << 20;

/// The system message `SummarizeMemory` sends.
pub const SUMMARY_INSTRUCTION: &str = "Summarize the assistant's answer below for a memory store. Reply with one JSON \
     object and nothing else: {\"summary\": \"<one or two sentences>\", \"keywords\": [\"<3 to 8 lowercase keywords>\"]}";

/// Where the model is and how to reach it.
///
/// ```
/// use planlock::handlers::ModelConfig;
/// let config = ModelConfig::new("http://127.0.0.1:11434/v1", "llama3.2").api_key_env("MY_KEY");
/// assert_eq!(config.model(), "llama3.2");
/// // The key never shows, even when the configuration is printed.
/// assert!(!format!("{config:?}").contains("MY_KEY="));
/// ```
#[derive(Clone)]
pub struct ModelConfig {
    base_url: String,
    model: String,
    api_key: Option<Arc<str>>,
    api_key_env: String,
    connect_timeout: Duration,
    timeout: Duration,
    json_summaries: bool,
    on_pool: bool,
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelConfig")
            .field("base_url", &self.shown_url())
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set, not shown)"))
            .field("api_key_env", &self.api_key_env)
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("json_summaries", &self.json_summaries)
            .field("on_pool", &self.on_pool)
            .finish()
    }
}

impl ModelConfig {
    /// A server at `base_url` (such as `https://api.openai.com/v1`), with `model` unless a
    /// payload's `config.model` names another. The API key is read from `OPENAI_API_KEY` when
    /// the handler is made; without it no `Authorization` header is sent (local servers need
    /// none).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        ModelConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            api_key_env: DEFAULT_API_KEY_ENV.to_owned(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_REQUEST_TIMEOUT,
            json_summaries: true,
            on_pool: true,
        }
    }

    /// Uses this API key instead of reading one from the environment (for keys kept in a
    /// secrets manager).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Arc::from(key.into()));
        self
    }

    /// Reads the API key from this environment variable instead of `OPENAI_API_KEY`.
    pub fn api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = name.into();
        self
    }

    /// How long a connection may take to open (default [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// A limit on each whole request where the plan sets none: `SummarizeMemory` always,
    /// `LLMCall` when the plan has no `llmMs` (which, when present, is the limit). Default
    /// [`DEFAULT_REQUEST_TIMEOUT`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether `SummarizeMemory` asks for `response_format: {"type": "json_object"}` (default
    /// true; turn off for a server that does not know it).
    pub fn json_summaries(mut self, on: bool) -> Self {
        self.json_summaries = on;
        self
    }

    /// Whether requests run on the `blocking` crate's thread pool (default true), so that an
    /// async executor's threads are never blocked while a model answers. A program that runs
    /// its cycles with `run_cycle_blocking` has no executor to keep free (its thread waits
    /// anyway) and may turn this off to save the hop to the pool (about 30 µs a request on two
    /// cores; `cargo bench --bench model`). Deadlines hold either way: the request's own limit
    /// is `llmMs`.
    pub fn on_thread_pool(mut self, on: bool) -> Self {
        self.on_pool = on;
        self
    }

    /// The model used when a payload names none.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The chat-completions endpoint.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The base URL as it may be shown: without its userinfo (`user:password@`).
    ///
    /// ```
    /// use planlock::handlers::ModelConfig;
    /// let config = ModelConfig::new("http://ada:secret@127.0.0.1:8080/v1", "m");
    /// assert_eq!(config.shown_url(), "http://127.0.0.1:8080/v1");
    /// assert!(!format!("{config:?}").contains("secret"));
    /// ```
    pub fn shown_url(&self) -> String {
        without_userinfo(&self.base_url)
    }
}

/// Why a model call failed: the source of the handler's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The payload's `config` sets what planlock sets.
    #[error("`config.{field}` is set by planlock, not by the plan; remove it from the LLMCall payload's config")]
    Config {
        /// The refused member.
        field: &'static str,
    },
    /// A handler needs an earlier result the ledger does not have.
    #[error("the ledger has no {step} result; the plan must run {step} before this step")]
    MissingInput {
        /// The step type whose result is missing.
        step: &'static str,
    },
    /// The server could not be reached.
    #[error("cannot reach the model server at {url}: {reason}")]
    Connect {
        /// The endpoint, without userinfo.
        url: String,
        /// What the client said, secrets replaced.
        reason: String,
    },
    /// The server answered with a redirect, which planlock does not follow.
    #[error(
        "the model server answered HTTP {status}, a redirect to {location:?}; planlock does not follow redirects \
         (they could carry the API key elsewhere): configure the final URL"
    )]
    Redirect {
        /// The HTTP status (301, 302, 303, 307, 308).
        status: u16,
        /// The `Location` header, without userinfo and secrets replaced (empty when absent).
        location: String,
    },
    /// No answer within the limit.
    #[error("the model server at {url} did not answer within {limit_ms} ms")]
    Timeout {
        /// The endpoint.
        url: String,
        /// The limit, in milliseconds.
        limit_ms: u128,
    },
    /// The server answered with an HTTP error.
    #[error("the model server answered HTTP {status}: {message}{}", retry_after.as_ref().map(|s| format!(" (retry after {s} s)")).unwrap_or_default())]
    Status {
        /// The HTTP status.
        status: u16,
        /// The server's own message (its `error.message`, or the body's start).
        message: String,
        /// The `Retry-After` header, when sent.
        retry_after: Option<String>,
    },
    /// The body is not UTF-8.
    #[error("the model server sent a body that is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// The body is not the JSON the handler expects.
    #[error("the model server sent a body that is not a chat completion ({reason}); it began: {start:?}")]
    Malformed {
        /// What is wrong.
        reason: String,
        /// The body's first 200 characters.
        start: String,
    },
}

impl ModelError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::Config { .. } => "model-config",
            ModelError::MissingInput { .. } => "model-missing-input",
            ModelError::Connect { .. } => "model-connect",
            ModelError::Redirect { .. } => "model-redirect",
            ModelError::Timeout { .. } => "model-timeout",
            ModelError::Status { .. } => "model-http-status",
            ModelError::NotUtf8 { .. } => "model-not-utf8",
            ModelError::Malformed { .. } => "model-malformed-body",
        }
    }
}

/// `LLMCall` and `SummarizeMemory` on an OpenAI-compatible server; clone it to register it for
/// both.
///
/// ```no_run
/// use planlock::handlers::{ModelConfig, OpenAiModel};
/// use planlock::{Handlers, steps::*};
///
/// let model = OpenAiModel::new(ModelConfig::new("https://api.openai.com/v1", "gpt-4o-mini"));
/// let handlers = Handlers::new().on::<LLMCall>(model.clone()).on::<SummarizeMemory>(model);
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    config: Arc<ModelConfig>,
    agent: ureq::Agent,
    /// The key and the URL's password, replaced in every text from a response.
    secrets: Secrets,
}

/// What the server said, as much as planlock reads of it; other fields are ignored.
#[derive(Debug, Deserialize)]
struct ChatCompletion {
    choices: Vec<Choice>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Message,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// One answer: its text, and what the span records.
struct Answer {
    text: String,
    model: Option<String>,
    usage: Option<Usage>,
}

impl OpenAiModel {
    /// The handler; reads the API key from the configured environment variable now.
    pub fn new(mut config: ModelConfig) -> Self {
        if config.api_key.is_none() {
            config.api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.is_empty()).map(Arc::from);
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(config.connect_timeout))
            .user_agent(concat!("planlock/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        let mut secrets = Secrets::new().with_password_of(&config.base_url);
        if let Some(key) = &config.api_key {
            secrets = secrets.with(key);
        }
        OpenAiModel { config: Arc::new(config), agent, secrets }
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Sends one chat completion and returns the first choice's text.
    async fn complete(&self, model: &str, body: Map<String, Value>, limit: Duration) -> Result<Answer, ModelError> {
        let span = tracing::Span::current();
        span.record("gen_ai.request.model", model);
        let (agent, key, secrets) = (self.agent.clone(), self.config.api_key.clone(), self.secrets.clone());
        let to = Endpoint { url: self.config.endpoint(), shown: without_userinfo(&self.config.endpoint()) };
        let body = Value::Object(body);
        let answer = if self.config.on_pool {
            blocking::unblock(move || send(&agent, &to, key.as_deref(), &secrets, &body, limit)).await?
        } else {
            send(&agent, &to, key.as_deref(), &secrets, &body, limit)?
        };
        if let Some(model) = &answer.model {
            span.record("gen_ai.response.model", model.as_str());
        }
        if let Some(usage) = &answer.usage {
            if let Some(n) = usage.prompt_tokens {
                span.record("gen_ai.usage.input_tokens", n);
            }
            if let Some(n) = usage.completion_tokens {
                span.record("gen_ai.usage.output_tokens", n);
            }
        }
        Ok(answer)
    }

    fn failed(&self, e: ModelError) -> HandlerError {
        HandlerError::with_source(format!("the model call to {} failed", without_userinfo(&self.config.endpoint())), e)
    }
}

/// The request: `messages`, then the model, then `config` passed through.
fn request_body(
    model: &str,
    system: &str,
    user: &str,
    config: &Map<String, Value>,
) -> Result<Map<String, Value>, ModelError> {
    for field in ["messages", "stream"] {
        if config.contains_key(field) {
            return Err(ModelError::Config { field });
        }
    }
    let mut messages = Vec::with_capacity(2);
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    messages.push(json!({ "role": "user", "content": user }));
    let mut body = config.clone();
    body.insert("model".into(), Value::String(model.to_owned()));
    body.insert("messages".into(), Value::Array(messages));
    Ok(body)
}

/// Where a request goes, and how that place may be shown.
struct Endpoint {
    url: String,
    shown: String,
}

fn send(
    agent: &ureq::Agent,
    to: &Endpoint,
    key: Option<&str>,
    secrets: &Secrets,
    body: &Value,
    limit: Duration,
) -> Result<Answer, ModelError> {
    let mut request = agent.post(&to.url).config().timeout_global(Some(limit)).build();
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let timeout = || ModelError::Timeout { url: to.shown.clone(), limit_ms: limit.as_millis() };
    let mut response = match request.send_json(body) {
        Ok(r) => r,
        Err(ureq::Error::Timeout(_)) => return Err(timeout()),
        Err(e) => {
            return Err(ModelError::Connect { url: to.shown.clone(), reason: secrets.scrub(&e.to_string()).into() });
        }
    };
    let status = response.status().as_u16();
    // Every text below comes from the server: secrets are replaced before anything reads it.
    let header = |name: &str| {
        let value = response.headers().get(name).and_then(|v| v.to_str().ok())?;
        Some(secrets.scrub(&without_userinfo(value)).into_owned())
    };
    let retry_after = header("retry-after");
    if (300..400).contains(&status) {
        return Err(ModelError::Redirect { status, location: start_of(&header("location").unwrap_or_default()) });
    }
    let bytes = match response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec() {
        Ok(b) => b,
        Err(ureq::Error::Timeout(_)) => return Err(timeout()),
        Err(e) => {
            let reason = format!("cannot read it: {}", secrets.scrub(&e.to_string()));
            return Err(ModelError::Malformed { reason, start: String::new() });
        }
    };
    let text = String::from_utf8(bytes).map_err(|e| ModelError::NotUtf8 { offset: e.utf8_error().valid_up_to() })?;
    let text = secrets.scrub(&text);
    if status >= 400 {
        return Err(ModelError::Status { status, message: secrets.scrub(&server_message(&text)).into(), retry_after });
    }
    let malformed =
        |reason: String| ModelError::Malformed { reason: secrets.scrub(&reason).into(), start: start_of(&text) };
    let completion: ChatCompletion = serde_json::from_str(&text).map_err(|e| malformed(e.to_string()))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(malformed("`choices` is empty".into()));
    };
    let Some(content) = choice.message.content else {
        let why = choice.finish_reason.unwrap_or_else(|| "none given".into());
        return Err(ModelError::Malformed {
            reason: format!("the first choice has no text (finish_reason: {})", secrets.scrub(&why)),
            start: String::new(),
        });
    };
    // JSON escapes (`\u0073k-…`) hide a secret from the scrub of the raw text: scrub the decoded
    // strings too.
    Ok(Answer {
        text: secrets.scrub(&content).into_owned(),
        model: completion.model.map(|m| secrets.scrub(&m).into_owned()),
        usage: completion.usage,
    })
}

/// The server's message: OpenAI's `{"error": {"message"}}`, Ollama's `{"error": "..."}`, or the
/// body's start.
fn server_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    match error.and_then(|e| e.get("message").or(Some(e))).and_then(Value::as_str) {
        Some(message) => start_of(message),
        None if body.trim().is_empty() => "(empty body)".to_owned(),
        None => start_of(body),
    }
}

fn start_of(text: &str) -> String {
    text.chars().take(200).collect()
}

impl Handler<LLMCall> for OpenAiModel {
    async fn call(&self, cx: &StepContext<'_>, p: &LlmCallPayload) -> Result<LlmCallResult, HandlerError> {
        let prompt = cx
            .ledger()
            .get::<PromptAssemble>()
            .ok_or_else(|| self.failed(ModelError::MissingInput { step: "PromptAssemble" }))?;
        let model = p.config.get("model").and_then(Value::as_str).unwrap_or(&self.config.model).to_owned();
        let mut config = p.config.0.clone();
        config.remove("model");
        let body = request_body(&model, &p.prompt, &prompt.prompt, &config).map_err(|e| self.failed(e))?;
        let llm_ms = cx.metadata().timeouts.as_ref().and_then(|t| t.llm_ms).map(|ms| Duration::from_millis(ms.get()));
        let answer =
            self.complete(&model, body, llm_ms.unwrap_or(self.config.timeout)).await.map_err(|e| self.failed(e))?;
        Ok(LlmCallResult { response: answer.text })
    }
}

impl Handler<SummarizeMemory> for OpenAiModel {
    async fn call(
        &self,
        cx: &StepContext<'_>,
        p: &SummarizeMemoryPayload,
    ) -> Result<SummarizeMemoryResult, HandlerError> {
        let response = cx.ledger().get::<LLMCall>().map_or(p.response.as_str(), |r| r.response.as_str());
        let mut config = Map::new();
        if self.config.json_summaries {
            config.insert("response_format".into(), json!({ "type": "json_object" }));
        }
        let body =
            request_body(&self.config.model, SUMMARY_INSTRUCTION, response, &config).map_err(|e| self.failed(e))?;
        let answer = self.complete(&self.config.model, body, self.config.timeout).await.map_err(|e| self.failed(e))?;
        // Strict: exactly `summary` and `keywords`, as the contract's result type reads them.
        serde_json::from_str::<SummarizeMemoryResult>(answer.text.trim()).map_err(|e| {
            self.failed(ModelError::Malformed {
                reason: format!("the summary is not {{\"summary\", \"keywords\"}} JSON: {e}"),
                start: start_of(&answer.text),
            })
        })
    }
}
