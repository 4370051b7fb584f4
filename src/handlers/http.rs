//! One request to an OpenAI-compatible server, shared by the chat model ([`super::openai`]) and
//! the embedder ([`super::embed`]): the key sent only as a bearer token, the request bounded by
//! its limit, no redirect followed, the body capped, and every text of the answer scrubbed of the
//! secrets before anything reads it (docs/CONTRACT.md, "Real handlers", "Hostile inputs").

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use crate::handlers::pace::{self, Pace};
use crate::handlers::secret::{Secrets, without_userinfo};

/// The largest response body read, in bytes.
pub const MAX_RESPONSE_BYTES: u64 = 8 << 20;

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
    /// The request's cap on what the model writes (`max_tokens`, `max_completion_tokens`) or its
    /// number of choices (`n`) is not a positive whole number: what is reserved from the budget
    /// must be what is sent (CONTRACT §20).
    #[error(
        "`config.{field}` must be a whole number from 1 to {most} (it is {what}): a model call reserves from the token budget what it may write, so the cap it sends must be one; write it as a number such as 512"
    )]
    Cap {
        /// The member.
        field: &'static str,
        /// What it is instead (a JSON type, or the number).
        what: String,
        /// The most it may be.
        most: u64,
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
    /// The server's rate limit holds the call past its deadline (its headers said when the
    /// next call may go out: `retry-after`, or a remaining count of 0 and its reset).
    #[error(
        "the model server at {url} limits the rate of calls: the next may go out in {wait_ms} ms, past this call's deadline ({left_ms} ms left); give the step more time (llmMs) or call less often"
    )]
    RateLimited {
        /// The endpoint.
        url: String,
        /// How long the server asked to wait, in milliseconds.
        wait_ms: u128,
        /// What was left of the call's deadline, in milliseconds.
        left_ms: u128,
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

impl crate::contract::registry::Failure for ModelError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            ModelError::Config { .. } | ModelError::Cap { .. } => "model-config",
            ModelError::MissingInput { .. } => "model-missing-input",
            ModelError::Connect { .. } => "model-connect",
            ModelError::Redirect { .. } => "model-redirect",
            ModelError::Timeout { .. } => "model-timeout",
            ModelError::Status { .. } => "model-http-status",
            ModelError::RateLimited { .. } => "model-rate-limited",
            ModelError::NotUtf8 { .. } => "model-not-utf8",
            ModelError::Malformed { .. } => "model-malformed-body",
        }
    }

    /// FailFast for a configuration that cannot work (a bad URL, a missing input, a redirect);
    /// CycleFail for what the next cycle may not meet (a timeout, a refused connection, an error
    /// status, a bad body).
    fn kind(&self) -> crate::contract::registry::FailureKind {
        use crate::contract::registry::FailureKind;
        match self {
            ModelError::Config { .. }
            | ModelError::Cap { .. }
            | ModelError::MissingInput { .. }
            | ModelError::Redirect { .. } => FailureKind::FailFast,
            _ => FailureKind::CycleFail,
        }
    }
}

/// A client of one endpoint of one server.
#[derive(Clone)]
pub(crate) struct Client {
    /// The connection pool, or why it could not be made (reported by the first call).
    http: Result<reqwest::Client, Arc<str>>,
    /// The endpoint, without userinfo: what is requested and what is shown.
    url: String,
    key: Option<Arc<str>>,
    /// The key and the URL's password, replaced in every text from a response.
    secrets: Secrets,
    /// When the next call may go out, as the server's rate-limit headers said.
    pace: Arc<Pace>,
}

impl std::fmt::Debug for Client {
    // The URL as shown and nothing else: the key and the password stay out of every print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("endpoint", &self.url).finish_non_exhaustive()
    }
}

/// How many kept-alive connections a client keeps for its next calls.
const MAX_IDLE_CONNECTIONS: usize = 64;

/// A request in flight on planlock's I/O runtime (`crate::io`); dropped (the caller gave up: a step's deadline, a
/// cancelled cycle), it stops the request and closes its connection. The server may still
/// finish generating: a client cannot stop that.
struct InFlight(tokio::task::JoinHandle<Result<String, ModelError>>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Future for InFlight {
    type Output = Result<String, ModelError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|joined| {
            joined.unwrap_or_else(|e| {
                Err(ModelError::Connect { url: String::new(), reason: format!("the request's task ended: {e}") })
            })
        })
    }
}

impl Client {
    /// A client of `base_url` + `/` + `path`, sending `key` as a bearer token.
    pub(crate) fn new(base_url: &str, path: &str, key: Option<Arc<str>>, connect_timeout: Duration) -> Client {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(connect_timeout)
            .pool_max_idle_per_host(MAX_IDLE_CONNECTIONS)
            .user_agent(concat!("planlock/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Arc::from(error_chain(&e)));
        let mut secrets = Secrets::new().with_password_of(base_url);
        if let Some(key) = &key {
            secrets = secrets.with(key);
        }
        // A password in the URL is never sent (nor shown): the key goes as a bearer token only.
        let url = without_userinfo(&format!("{}/{path}", base_url.trim_end_matches('/')));
        Client { http, url, key, secrets, pace: Arc::default() }
    }

    /// The endpoint as it may be shown (no userinfo).
    pub(crate) fn shown(&self) -> &str {
        &self.url
    }

    /// The secrets replaced in what the server says.
    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// Posts `body` and returns the answer's body, scrubbed, within `limit`; an HTTP error, a
    /// redirect, a body that is too large or not UTF-8 is an error.
    ///
    /// The body is serialized before the call goes out and the returned future does not borrow
    /// it: the caller drops its JSON while the answer is awaited (a worker holds hundreds of
    /// calls in flight).
    pub(crate) fn post(
        &self,
        body: &Value,
        limit: Duration,
    ) -> impl Future<Output = Result<String, ModelError>> + Send + 'static {
        let connect = |reason: String| ModelError::Connect { url: self.url.clone(), reason };
        let sent = crate::io::runtime().map_err(connect).map(|runtime| {
            let (this, body) = (self.clone(), body.to_string());
            let exchange = async move {
                let timeout = ModelError::Timeout { url: this.url.clone(), limit_ms: limit.as_millis() };
                tokio::time::timeout(limit, this.paced(body, limit)).await.unwrap_or(Err(timeout))
            };
            InFlight(runtime.spawn(exchange))
        });
        async move { sent?.await }
    }

    /// The request, as the server's rate limit allows within `limit` (see [`pace`]): after the
    /// wait its last answers asked for, and again after a 429's while that fits.
    async fn paced(&self, body: String, limit: Duration) -> Result<String, ModelError> {
        let deadline = std::time::Instant::now() + limit;
        let held = |at: std::time::Instant| ModelError::RateLimited {
            url: self.url.clone(),
            wait_ms: at.saturating_duration_since(std::time::Instant::now()).as_millis(),
            left_ms: deadline.saturating_duration_since(std::time::Instant::now()).as_millis(),
        };
        loop {
            if let Some(at) = self.pace.not_before() {
                if at > deadline {
                    return Err(held(at));
                }
                tokio::time::sleep_until(at.into()).await;
            }
            match self.exchange(body.clone()).await {
                Err(ModelError::Status { status: 429, .. })
                    if self.pace.not_before().is_some_and(|at| at <= deadline) =>
                {
                    continue;
                }
                other => return other,
            }
        }
    }

    /// One request and its answer, on planlock's I/O runtime.
    async fn exchange(&self, body: String) -> Result<String, ModelError> {
        let (secrets, shown) = (&self.secrets, &self.url);
        let connect = |reason: &str| ModelError::Connect { url: shown.clone(), reason: secrets.scrub(reason).into() };
        let http = self.http.as_ref().map_err(|e| connect(e))?;
        let mut request = http.post(&self.url).header(CONTENT_TYPE, "application/json").body(body);
        if let Some(key) = &self.key {
            let Ok(mut bearer) = HeaderValue::from_str(&format!("Bearer {key}")) else {
                return Err(connect("the API key holds a character an HTTP header cannot carry"));
            };
            bearer.set_sensitive(true);
            request = request.header(AUTHORIZATION, bearer);
        }
        let mut response = request.send().await.map_err(|e| connect(&error_chain(&e.without_url())))?;
        let status = response.status().as_u16();
        // Every text below comes from the server: secrets are replaced before anything reads it.
        let header = |name: &str| {
            let value = response.headers().get(name).and_then(|v| v.to_str().ok())?;
            Some(secrets.scrub(&without_userinfo(value)).into_owned())
        };
        let retry_after = header("retry-after");
        self.pace.learn(response.headers());
        if status == 429
            && let Some(wait) = pace::retry_after(response.headers())
        {
            self.pace.hold_for(wait);
        }
        if (300..400).contains(&status) {
            return Err(ModelError::Redirect { status, location: start_of(&header("location").unwrap_or_default()) });
        }
        let mut bytes = Vec::new();
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                let reason = format!("cannot read it: {}", secrets.scrub(&error_chain(&e.without_url())));
                ModelError::Malformed { reason, start: String::new() }
            })?;
            let Some(chunk) = chunk else { break };
            if (bytes.len() + chunk.len()) as u64 > MAX_RESPONSE_BYTES {
                let reason = format!("cannot read it: the body is larger than {MAX_RESPONSE_BYTES} bytes");
                return Err(ModelError::Malformed { reason, start: String::new() });
            }
            bytes.extend_from_slice(&chunk);
        }
        let text =
            String::from_utf8(bytes).map_err(|e| ModelError::NotUtf8 { offset: e.utf8_error().valid_up_to() })?;
        let text = secrets.scrub(&text).into_owned();
        if status >= 400 {
            return Err(ModelError::Status {
                status,
                message: secrets.scrub(&server_message(&text)).into(),
                retry_after,
            });
        }
        Ok(text)
    }

    /// A body that is not what the caller expects: what is wrong (scrubbed) and its start.
    pub(crate) fn malformed(&self, reason: &str, body: &str) -> ModelError {
        ModelError::Malformed { reason: self.secrets.scrub(reason).into(), start: start_of(body) }
    }
}

/// An error and its sources, as one line: the client's own message is terse ("error sending
/// request"), the cause (a refused connection, a TLS failure) is in its sources.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
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

/// The first 200 characters of a text, as an error quotes it.
pub(crate) fn start_of(text: &str) -> String {
    text.chars().take(200).collect()
}
