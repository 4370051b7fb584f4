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
//!   a header) has the key and the URL's password replaced ([`Secrets`](crate::handlers::secret::Secrets)) before anything reads
//!   it, and the URL is shown without its userinfo. Redirects are not followed (they could carry
//!   the key elsewhere); a 3xx is `model-redirect`, naming where it pointed.
//! - `LLMCall`'s deadline is `metadata.timeouts.llmMs`: the executor enforces it, and the HTTP
//!   request is given the same limit so that nothing keeps running after it.
//! - HTTP 4xx and 5xx, malformed bodies, bodies that are not UTF-8, refused connections and
//!   timeouts are handler errors whose source is a [`ModelError`] with a stable code and the
//!   server's own message. The step's failure kind comes from the registry, as for any handler.
//! - Each request is a `chat {model}` span ([`ModelCall`]) under the
//!   step's, with `gen_ai.provider.name` ([`ModelConfig::provider`]), the request and response
//!   model, `max_tokens`, token usage (cache-read and reasoning counts when the server reports
//!   them), the finish reason, `server.address`, and `error.type` on failure; the messages only
//!   with content recording on. Token usage is also in the cycle report ([`StepRecord::usage`](crate::executor::StepRecord::usage),
//!   [`CycleReport::usage`](crate::CycleReport::usage)).
//!
//! - Token budgets (CONTRACT §20): before a request is sent, its estimate (its messages at a
//!   token per 3 bytes, plus its `max_tokens`) is reserved from the session's budgets
//!   ([`StepContext::reserve_tokens`]); a refusal fails the step with `budget-exhausted` and
//!   nothing is sent. The usage the server reports is what the cycle's save settles.
//!
//! The HTTP client is [`reqwest`] with rustls (no system OpenSSL), running on one background
//! thread of planlock's own: a call is awaited from any executor (or blocked on from plain
//! code), and a model's wait holds no thread of the caller's, so one worker thread drives
//! hundreds of sessions waiting on models.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::contract::plan::ExecutionPlan;
use crate::contract::registry::Failure;
use crate::contract::schema::{LlmCallPayload, LlmCallResult, SummarizeMemoryPayload, SummarizeMemoryResult};
use crate::contract::steps::{LLMCall, PromptAssemble, Step, SummarizeMemory};
use crate::exec::budget::BudgetError;
use crate::exec::handler::{Handler, HandlerError, StepContext};
use crate::exec::report::TokenUsage;
use crate::handlers::http::{Client, start_of};
pub use crate::handlers::http::{MAX_RESPONSE_BYTES, ModelError};
use crate::handlers::secret::without_userinfo;
use crate::telemetry::{ModelAnswer, ModelCall, Operation};
use tracing::Instrument;

/// The environment variable the API key is read from unless another is named.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// `gen_ai.provider.name` unless [`ModelConfig::provider`] names another: the conventions' name
/// for the OpenAI API, which every server this client talks to speaks.
pub const DEFAULT_PROVIDER: &str = "openai";

/// How long a connection may take to open unless configured otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole request may take where the plan sets no limit (`SummarizeMemory` always,
/// `LLMCall` without `llmMs`): a client's safety net, so that a server that accepts and never
/// answers cannot hold a cycle forever. The plan's `llmMs`, when present, is the limit instead.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// The `max_tokens` an `LLMCall` request gets when the plan's `config` sets none: every request
/// is bounded, since a small model otherwise writes until its context is full (and a client
/// that gives up does not stop the server's generation).
pub const DEFAULT_MAX_TOKENS: u64 = 512;

/// The `max_tokens` of a `SummarizeMemory` request: a summary and a few keywords.
pub const SUMMARY_MAX_TOKENS: u64 = 256;

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
    provider: String,
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
            .field("provider", &self.provider)
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
            provider: DEFAULT_PROVIDER.to_owned(),
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

    /// The provider's name on the model-call spans and metrics (`gen_ai.provider.name`; default
    /// [`DEFAULT_PROVIDER`]): the conventions' name for who serves the model, such as
    /// `azure.ai.openai` or `groq`, when it is not OpenAI itself.
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        self.provider = name.into();
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
    client: Client,
    /// The tokens the server reported, over every call of this handler and its clones.
    usage: Arc<TokenCounts>,
}

/// Tokens a server reported using, summed over calls.
#[derive(Debug, Default)]
pub struct TokenCounts {
    input: std::sync::atomic::AtomicU64,
    output: std::sync::atomic::AtomicU64,
}

impl TokenCounts {
    /// The prompt tokens (`usage.prompt_tokens`), summed.
    pub fn input(&self) -> u64 {
        self.input.load(std::sync::atomic::Ordering::Relaxed)
    }
    /// The completion tokens (`usage.completion_tokens`), summed.
    pub fn output(&self) -> u64 {
        self.output.load(std::sync::atomic::Ordering::Relaxed)
    }
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
pub(crate) struct Usage {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

/// One answer: its text, and what the span records.
pub(crate) struct Answer {
    pub(crate) text: String,
    pub(crate) model: Option<String>,
    pub(crate) usage: Option<Usage>,
    pub(crate) finish_reason: Option<String>,
}

impl OpenAiModel {
    /// The handler; reads the API key from the configured environment variable now.
    pub fn new(mut config: ModelConfig) -> Self {
        if config.api_key.is_none() {
            config.api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.is_empty()).map(Arc::from);
        }
        let client = Client::new(&config.base_url, "chat/completions", config.api_key.clone(), config.connect_timeout);
        OpenAiModel { config: Arc::new(config), client, usage: Arc::default() }
    }

    /// The tokens the server reported using, over every call of this handler and its clones
    /// (the same figures as the `chat` spans' `gen_ai.usage.*`).
    pub fn usage(&self) -> &TokenCounts {
        &self.usage
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Sends one chat completion and returns the first choice's text, inside its `chat {model}`
    /// span.
    async fn complete(
        &self,
        cx: &StepContext<'_>,
        model: &str,
        mut body: Map<String, Value>,
        limit: Duration,
    ) -> Result<Answer, Refused> {
        let call = ModelCall::start(Operation::Chat, &self.config.provider, model).server_of_url(&self.config.base_url);
        // Refused before anything is sent: a cap that is not one.
        let output = match output_cap(&mut body, DEFAULT_MAX_TOKENS) {
            Ok(output) => output,
            Err(e) => {
                call.failed_with(e.code(), &e.to_string());
                return Err(Refused::Model(e));
            }
        };
        if let Some(n) = body.get("max_tokens").and_then(Value::as_u64) {
            call.max_tokens(n);
        }
        if let Some(t) = body.get("temperature").and_then(Value::as_f64) {
            call.temperature(t);
        }
        if let Some(seed) = body.get("seed").and_then(Value::as_i64) {
            call.seed(seed);
        }
        // The messages' roles and texts, kept only when content is recorded.
        let input: Option<Vec<(String, String)>> = cx.records_content().then(|| {
            let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let text = |m: &Value, key: &str| m.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            messages.iter().map(|m| (text(m, "role"), text(m, "content"))).collect()
        });
        // The session's budget covers the call before it is sent, or it is not sent.
        let reserved = estimate(&body, output);
        let hold = match cx.reserve_tokens(reserved).await {
            Ok(hold) => hold,
            Err(refused) => {
                call.failed_with(refused.code(), &refused.to_string());
                return Err(Refused::Budget(refused));
            }
        };
        // The request's JSON is dropped once it is sent (its own statement: a temporary lives to
        // the statement's end): only its bytes wait for the answer.
        let sent = self.client.post(&Value::Object(body), limit);
        let answer = match chat(&self.client, sent).instrument(call.span().clone()).await {
            Ok(answer) => answer,
            Err(e) => {
                call.failed_with(e.code(), &e.to_string());
                return Err(Refused::Model(e));
            }
        };
        if let Some(input) = input {
            let messages: Vec<crate::telemetry::Message<'_>> =
                input.iter().map(|(role, text)| crate::telemetry::Message { role, text }).collect();
            call.content(&messages, Some((&answer.text, answer.finish_reason.as_deref())));
        }
        let usage = answer.usage.as_ref();
        let (input_tokens, output_tokens) =
            (usage.and_then(|u| u.prompt_tokens), usage.and_then(|u| u.completion_tokens));
        if usage.is_some() {
            cx.record_usage(TokenUsage { input: input_tokens.unwrap_or(0), output: output_tokens.unwrap_or(0) });
        }
        // Charged what the server counted; a usage without both counts, the reservation (or its
        // `total_tokens`, when larger); none at all, the reservation too.
        let reported = usage.map(|u| match (u.prompt_tokens, u.completion_tokens) {
            (Some(input), Some(output)) => input.saturating_add(output),
            _ => reserved.max(u.total_tokens.unwrap_or(0)),
        });
        hold.answered(reported);
        self.usage.input.fetch_add(input_tokens.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
        self.usage.output.fetch_add(output_tokens.unwrap_or(0), std::sync::atomic::Ordering::Relaxed);
        let finish: Vec<&str> = answer.finish_reason.as_deref().into_iter().collect();
        call.answered(ModelAnswer {
            model: answer.model.as_deref(),
            input_tokens,
            output_tokens,
            cache_read_input_tokens: usage.and_then(|u| u.prompt_tokens_details.as_ref()?.cached_tokens),
            reasoning_output_tokens: usage.and_then(|u| u.completion_tokens_details.as_ref()?.reasoning_tokens),
            finish_reasons: &finish,
        });
        Ok(answer)
    }

    fn failed(&self, e: ModelError) -> HandlerError {
        HandlerError::with_source(format!("the model call to {} failed", self.client.shown()), e)
    }

    fn not_sent(&self, e: Refused) -> HandlerError {
        match e {
            Refused::Model(e) => self.failed(e),
            Refused::Budget(e) => e.into(),
        }
    }
}

/// Why a call has no answer: the server's failure, or the budget's refusal before it was sent.
enum Refused {
    Model(ModelError),
    Budget(BudgetError),
}

/// Tokens counted per message for its role and framing, over its text's estimate.
const TOKENS_PER_MESSAGE: u64 = 8;

/// The most choices (`n`) one request may ask for.
const MAX_CHOICES: u64 = 128;

/// The largest cap on what a model writes that a request may send.
const MAX_OUTPUT_CAP: u64 = 1 << 32;

/// What the model may write for `body` as it will be sent (CONTRACT §20: what is reserved is
/// what is sent): its `max_tokens` or `max_completion_tokens` (the larger, when both are set),
/// times its `n` choices. Each must be a positive whole number; a request that caps nothing is
/// sent with `max_tokens` = `default`, the cap it reserves.
fn output_cap(body: &mut Map<String, Value>, default: u64) -> Result<u64, ModelError> {
    let whole = |field: &'static str, most: u64, value: &Value| match value.as_u64() {
        Some(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(ModelError::Cap { field, what: json_kind(value), most }),
    };
    let mut cap = None;
    for field in ["max_tokens", "max_completion_tokens"] {
        if let Some(value) = body.get(field) {
            let n = whole(field, MAX_OUTPUT_CAP, value)?;
            cap = Some(cap.map_or(n, |c: u64| c.max(n)));
        }
    }
    let cap = match cap {
        Some(cap) => cap,
        None => {
            body.insert("max_tokens".into(), json!(default));
            default
        }
    };
    let choices = body.get("n").map(|n| whole("n", MAX_CHOICES, n)).transpose()?.unwrap_or(1);
    Ok(cap.saturating_mul(choices))
}

/// A JSON value as an error names it: a number as written (short), anything else by its type.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => n.to_string().chars().take(24).collect(),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// What a request may cost, reserved from the session's budget before it is sent (CONTRACT §20):
/// its input, estimated without the model's tokenizer as one token per 3 bytes of UTF-8 (about
/// 4 characters of English make a token; a Korean syllable, 3 bytes, about one) plus
/// [`TOKENS_PER_MESSAGE`] a message, and `output`, all the model may write ([`output_cap`]).
/// The save settles the reservation to what the server reports.
fn estimate(body: &Map<String, Value>, output: u64) -> u64 {
    let messages = body.get("messages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let input: u64 =
        messages.iter().map(|m| message_tokens(m.get("content").and_then(Value::as_str).unwrap_or_default())).sum();
    input.saturating_add(output)
}

/// A message's input tokens, estimated: its text at a token per 3 bytes, and its framing.
fn message_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(3) + TOKENS_PER_MESSAGE
}

/// What an `LLMCall` of `plan` may cost, estimated before the cycle (CONTRACT §20): its
/// instruction and the prompt its `PromptAssemble` renders (the template and its variables, as
/// written), and the output its `config` caps. What the template pulls in from earlier steps is
/// not known yet; a call that needs more than the cycle reserved is reserved on its own.
fn llm_call_ahead(plan: &ExecutionPlan, p: &LlmCallPayload) -> u64 {
    let mut config = p.config.0.clone();
    // A cap that is not one is refused when the call is made: nothing to reserve for it.
    let Ok(output) = output_cap(&mut config, DEFAULT_MAX_TOKENS) else { return 0 };
    let assembled = plan.steps.iter().find_map(|s| PromptAssemble::unwrap(&s.payload));
    let user = assembled.map_or(0, |a| a.template.len() + serde_json::to_string(&a.vars).map_or(0, |v| v.len()));
    message_tokens(&p.prompt).saturating_add((user as u64).div_ceil(3) + TOKENS_PER_MESSAGE).saturating_add(output)
}

/// What a `SummarizeMemory` of `plan` may cost, estimated before the cycle: the instruction, the
/// answer it summarizes (at most the plan's `LLMCall`'s cap, at 4 bytes a token; without one,
/// the payload's), and [`SUMMARY_MAX_TOKENS`].
fn summary_ahead(plan: &ExecutionPlan, p: &SummarizeMemoryPayload) -> u64 {
    let answer = plan.steps.iter().find_map(|s| LLMCall::unwrap(&s.payload)).map_or(
        (p.response.len() as u64).div_ceil(3),
        |call| {
            let mut config = call.config.0.clone();
            output_cap(&mut config, DEFAULT_MAX_TOKENS).unwrap_or(0).saturating_mul(4).div_ceil(3)
        },
    );
    message_tokens(SUMMARY_INSTRUCTION)
        .saturating_add(answer.saturating_add(TOKENS_PER_MESSAGE))
        .saturating_add(SUMMARY_MAX_TOKENS)
}

/// The request: `messages`, then the model, then `config` passed through (taken, not copied: a
/// handler holds nothing of its request while the answer is awaited).
fn request_body(
    model: &str,
    system: &str,
    user: &str,
    config: Map<String, Value>,
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
    let mut body = config;
    body.insert("model".into(), Value::String(model.to_owned()));
    body.insert("messages".into(), Value::Array(messages));
    Ok(body)
}

/// The `seed` a model request carries unless the plan's config sets one (CONTRACT §14): from the
/// step's idempotency key, so a step re-run after a pause (same cycle, same key) asks with the
/// same seed and, where the server honours seeds (or at temperature 0), meets the answer a
/// reviewer approved, without any result being injected. 31 bits: every server's integer.
fn seed_of(cx: &StepContext<'_>) -> u32 {
    let key = cx.idempotency_key();
    let b = key.digest().as_bytes();
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff
}

/// One chat completion: the first choice's text, the model that answered, the usage.
pub(crate) async fn chat(
    client: &Client,
    sent: impl Future<Output = Result<String, ModelError>>,
) -> Result<Answer, ModelError> {
    let text = sent.await?;
    let completion: ChatCompletion =
        serde_json::from_str(&text).map_err(|e| client.malformed(&e.to_string(), &text))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(client.malformed("`choices` is empty", &text));
    };
    let Some(content) = choice.message.content else {
        let why = choice.finish_reason.unwrap_or_else(|| "none given".into());
        return Err(client.malformed(&format!("the first choice has no text (finish_reason: {why})"), ""));
    };
    // JSON escapes (`\u0073k-…`) hide a secret from the scrub of the raw text: scrub the decoded
    // strings too.
    let secrets = client.secrets();
    Ok(Answer {
        text: secrets.scrub(&content).into_owned(),
        model: completion.model.map(|m| secrets.scrub(&m).into_owned()),
        usage: completion.usage,
        // Scrubbed like any text (`ModelCall` cuts a long one).
        finish_reason: choice.finish_reason.map(|r| secrets.scrub(&r).into_owned()),
    })
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
        config.entry("seed").or_insert(json!(seed_of(cx)));
        let body = request_body(&model, &p.prompt, &prompt.prompt, config).map_err(|e| self.failed(e))?;
        let llm_ms = cx.metadata().timeouts.as_ref().and_then(|t| t.llm_ms).map(|ms| Duration::from_millis(ms.get()));
        let answer = self
            .complete(cx, &model, body, llm_ms.unwrap_or(self.config.timeout))
            .await
            .map_err(|e| self.not_sent(e))?;
        Ok(LlmCallResult { response: answer.text })
    }

    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &LlmCallPayload) -> u64 {
        llm_call_ahead(plan, payload)
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
        config.insert("max_tokens".into(), json!(SUMMARY_MAX_TOKENS));
        config.insert("seed".into(), json!(seed_of(cx)));
        if self.config.json_summaries {
            // The schema makes servers that constrain their output to it (llama.cpp) answer in
            // exactly this shape; others take `json_object` and the instruction.
            let schema = json!({
                "type": "object",
                "properties": {
                    "summary": { "type": "string", "minLength": 1, "maxLength": 240 },
                    "keywords": {
                        "type": "array",
                        "items": { "type": "string", "minLength": 1, "maxLength": 24 },
                        "maxItems": 8
                    }
                },
                "required": ["summary", "keywords"],
                "additionalProperties": false
            });
            config.insert("response_format".into(), json!({ "type": "json_object", "schema": schema }));
        }
        let body =
            request_body(&self.config.model, SUMMARY_INSTRUCTION, response, config).map_err(|e| self.failed(e))?;
        let answer =
            self.complete(cx, &self.config.model, body, self.config.timeout).await.map_err(|e| self.not_sent(e))?;
        // Strict: exactly `summary` and `keywords`, as the contract's result type reads them. A
        // line break or tab a model writes raw inside a string is read as a space (JSON allows
        // neither there, and neither changes what the summary says).
        let text: String =
            answer.text.trim().chars().map(|c| if matches!(c, '\n' | '\r' | '\t') { ' ' } else { c }).collect();
        serde_json::from_str::<SummarizeMemoryResult>(&text).map_err(|e| {
            self.failed(ModelError::Malformed {
                reason: format!("the summary is not {{\"summary\", \"keywords\"}} JSON: {e}"),
                start: start_of(&answer.text),
            })
        })
    }

    fn tokens_ahead(&self, plan: &ExecutionPlan, payload: &SummarizeMemoryPayload) -> u64 {
        summary_ahead(plan, payload)
    }
}
