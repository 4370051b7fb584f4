//! The [`Notifier`]: which events go to which hooks, signed, retried with backoff, each
//! delivered once.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest as _, Sha256};

use super::{Notification, Secret};
use crate::backend::{Backend, BackendError, DeliveryOutcome, Logged};
use crate::contract::registry::{Failure, FailureKind};
use crate::review::access::Access;
use crate::session::{ApprovalEvent, Timestamp};

/// The most events one look at the outbox reads.
pub const MAX_EVENTS: usize = 100_000;

/// Why notifications cannot be sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotifyError {
    /// A webhook's secret variable is missing or not a Standard Webhooks secret (its value is
    /// never said).
    #[error("webhook secret `{var}`: {why}; set it to the receiver's `whsec_…` secret")]
    Secret {
        /// The variable.
        var: String,
        /// What is wrong with it.
        why: String,
    },
    /// Where the sessions live could not be read or written.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The HTTP client could not be made.
    #[error("cannot make the HTTP client: {0}")]
    Client(String),
}

impl Failure for NotifyError {
    fn code(&self) -> &'static str {
        match self {
            NotifyError::Secret { .. } => "webhook-secret",
            NotifyError::Backend(e) => e.code(),
            NotifyError::Client(_) => "webhook-client",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// How notifications are sent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NotifyOptions {
    /// How long a receiver has to answer (default 10 s).
    pub timeout: Duration,
    /// The wait before the first retry (default 10 s); each next one doubles, at most an hour.
    pub first_retry: Duration,
    /// How old an event may get and still be tried (default 24 h).
    pub give_up_after: Duration,
    /// How often a sender looks at the outbox (default 1 s).
    pub poll: Duration,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        NotifyOptions {
            timeout: Duration::from_secs(10),
            first_retry: Duration::from_secs(10),
            give_up_after: Duration::from_secs(24 * 3600),
            poll: Duration::from_secs(1),
        }
    }
}

impl NotifyOptions {
    /// With [`timeout`](Self::timeout) `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// With [`first_retry`](Self::first_retry) `wait`.
    pub fn first_retry(mut self, wait: Duration) -> Self {
        self.first_retry = wait;
        self
    }

    /// With [`give_up_after`](Self::give_up_after) `age`.
    pub fn give_up_after(mut self, age: Duration) -> Self {
        self.give_up_after = age;
        self
    }

    /// With [`poll`](Self::poll) `every`.
    pub fn poll(mut self, every: Duration) -> Self {
        self.poll = every;
        self
    }
}

/// A receiver: its id (the SHA-256 of its URL, 16 hex digits), URL, secret and events.
#[derive(Debug, Clone)]
struct Hook {
    id: String,
    url: String,
    /// The URL as it may be printed: without a user or password in it.
    shown: String,
    secret: Secret,
    events: Vec<String>,
}

/// What one attempt did, as a sender reports it (never with a secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted {
    /// The receiver's URL, without any user or password in it.
    pub url: String,
    /// The notification's id.
    pub id: String,
    /// Its kind.
    pub kind: &'static str,
    /// The session.
    pub session: String,
    /// `delivered`, `retry` or `given-up`.
    pub outcome: &'static str,
    /// Why it failed, when it did.
    pub why: Option<String>,
}

/// The sender (see the module docs).
#[derive(Clone)]
pub struct Notifier {
    backend: Arc<dyn Backend>,
    hooks: Vec<Hook>,
    console: Option<String>,
    /// The rules, for who may still approve a pause that needs several.
    rules: Arc<Access>,
    options: NotifyOptions,
    client: reqwest::Client,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.hooks.iter().map(|h| h.shown.as_str()).collect();
        f.debug_struct("Notifier").field("hooks", &urls).finish_non_exhaustive()
    }
}

impl Notifier {
    /// The sender of `backend`'s notifications to `access`'s webhooks, each secret read from its
    /// variable now (a missing or malformed one is refused, by name).
    pub fn new(backend: Arc<dyn Backend>, access: &Access, options: NotifyOptions) -> Result<Notifier, NotifyError> {
        Notifier::with_secrets(backend, access, options, |var| std::env::var(var).ok())
    }

    /// [`new`](Self::new), each webhook's secret looked up by `secret` from its variable's name
    /// (for a program that keeps its secrets elsewhere than in its environment).
    pub fn with_secrets(
        backend: Arc<dyn Backend>,
        access: &Access,
        options: NotifyOptions,
        secret: impl Fn(&str) -> Option<String>,
    ) -> Result<Notifier, NotifyError> {
        let hooks = access
            .webhooks()
            .iter()
            .map(|hook| {
                let text = secret(&hook.secret_env)
                    .ok_or_else(|| NotifyError::Secret { var: hook.secret_env.clone(), why: "it is not set".into() })?;
                let id: String =
                    Sha256::digest(hook.url.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
                Ok(Hook {
                    id,
                    url: hook.url.clone(),
                    shown: without_userinfo(&hook.url),
                    secret: Secret::parse(&text, &hook.secret_env)?,
                    events: hook.events.clone(),
                })
            })
            .collect::<Result<Vec<_>, NotifyError>>()?;
        // Deliveries are claimed in the backend's outbox: one that keeps none cannot send.
        if !hooks.is_empty() && backend.outbox().is_none() {
            return Err(BackendError::Lacks("outbox of notifications").into());
        }
        let client = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| NotifyError::Client(e.to_string()))?;
        let console = access.console_url().map(str::to_owned);
        Ok(Notifier { backend, hooks, console, rules: Arc::new(access.clone()), options, client })
    }

    /// Whether there is anyone to notify.
    pub fn has_hooks(&self) -> bool {
        !self.hooks.is_empty()
    }

    /// Logs what the records say without anyone having logged it: a paused record's `paused`
    /// notice (a process stopped between saving the record and logging it), and an undecided
    /// pause seen past its expiry (`expiryNoticed`, once).
    pub async fn notice(&self) -> Result<(), NotifyError> {
        let now = Timestamp::now();
        // The notices logged already (within the horizon): a pause seen again costs no write.
        let known: std::collections::HashSet<(String, String, &'static str)> = self
            .backend
            .recent_events(self.since(now), MAX_EVENTS)
            .await?
            .into_iter()
            .filter(|l| l.event.is_notice())
            .map(|l| (l.session, l.event.pause().id(), l.event.name()))
            .collect();
        for (session, read) in self.backend.paused(MAX_EVENTS).await? {
            let Ok((record, decided)) = read else { continue };
            let pause = crate::session::PauseRef::of(&record);
            let missing = |name: &'static str| !known.contains(&(session.clone(), pause.id(), name));
            let expired = record.expired_at(now) && decided.decision.is_none() && missing("expiryNoticed");
            if !missing("paused") && !expired {
                continue;
            }
            let records = self.backend.records(&session).await?;
            if missing("paused")
                && let Err(e) = records.log_notice(&ApprovalEvent::paused(&record)).await
            {
                tracing::warn!(error = %e, "a pause could not be logged");
            }
            if expired && let Err(e) = records.log_notice(&ApprovalEvent::ExpiryNoticed { pause, at: now }).await {
                tracing::warn!(error = %e, "an expired pause could not be logged");
            }
        }
        Ok(())
    }

    /// The oldest an event may be and still be looked at: [`NotifyOptions::give_up_after`] and an
    /// hour more.
    fn since(&self, now: Timestamp) -> Timestamp {
        now.minus(self.options.give_up_after + Duration::from_secs(3600)).unwrap_or(now)
    }

    /// One look at the outbox: notices logged, then every notification due delivered to every
    /// receiver (the receivers at once, each its own in turn); what each attempt did.
    pub async fn once(&self) -> Result<Vec<Attempted>, NotifyError> {
        self.notice().await?;
        let sends = self.hooks.iter().map(|hook| self.deliver_due(hook));
        let mut attempted = Vec::new();
        for sent in futures_util::future::join_all(sends).await {
            attempted.extend(sent?);
        }
        Ok(attempted)
    }

    /// Sends until the process stops: a loop for the notices and one for each receiver, each
    /// looking again every [`NotifyOptions::poll`]; every attempt is given to `report`.
    pub async fn run(self, report: Arc<dyn Fn(&Attempted) + Send + Sync>) {
        let notices = {
            let this = self.clone();
            async move {
                loop {
                    if let Err(e) = this.notice().await {
                        tracing::warn!(error = %e, "looking for notices failed");
                    }
                    tokio::time::sleep(this.options.poll).await;
                }
            }
        };
        let loops = self.hooks.clone().into_iter().map(|hook| {
            let (this, report) = (self.clone(), report.clone());
            async move {
                loop {
                    match this.deliver_due(&hook).await {
                        Ok(attempted) => attempted.iter().for_each(|a| report(a)),
                        Err(e) => tracing::warn!(error = %e, url = %hook.shown, "reading the outbox failed"),
                    }
                    tokio::time::sleep(this.options.poll).await;
                }
            }
        });
        futures_util::future::join(notices, futures_util::future::join_all(loops)).await;
    }

    /// Delivers to `hook` every notification of its kinds that is due. A session whose outbox
    /// cannot be used here (a file this sender may not open, a link) is skipped and reported,
    /// and the others are delivered; that is no attempt, so it never counts toward giving up.
    async fn deliver_due(&self, hook: &Hook) -> Result<Vec<Attempted>, NotifyError> {
        let mut attempted = Vec::new();
        let events = self.backend.recent_events(self.since(Timestamp::now()), MAX_EVENTS).await?;
        let mut skipped: Vec<String> = Vec::new();
        for (at, logged) in events.iter().enumerate() {
            // The approval that completes a pause is told once, by its decision.
            if let ApprovalEvent::Voted { count, required, .. } = &logged.event
                && count >= required
            {
                continue;
            }
            let turn = self.turn_of(&events[..at], logged);
            let notification = Notification::with_turn(logged, self.console.as_deref(), turn.as_ref());
            if !hook.events.iter().any(|e| e == notification.kind) || skipped.contains(&logged.session) {
                continue;
            }
            match self.deliver(hook, logged, &notification).await {
                Ok(Some(done)) => attempted.push(done),
                Ok(None) => {}
                Err(e) => {
                    skipped.push(logged.session.clone());
                    attempted.push(Attempted {
                        url: hook.shown.clone(),
                        id: notification.id.clone(),
                        kind: notification.kind,
                        session: logged.session.clone(),
                        outcome: "skipped",
                        why: Some(format!("this session's outbox cannot be used here: {e}")),
                    });
                }
            }
        }
        Ok(attempted)
    }

    /// Where an approval by several stands as of `logged` (its earlier approvals in `before`),
    /// under the access file's rule for its validator.
    fn turn_of(&self, before: &[Logged], logged: &Logged) -> Option<crate::review::Turn> {
        let (pause, by) = match &logged.event {
            ApprovalEvent::Voted { decision, .. } => (&decision.pause, vec![decision.by.clone()]),
            ApprovalEvent::Decided { decision } if decision.approvers.len() > 1 => {
                (&decision.pause, decision.approvers.clone())
            }
            _ => return None,
        };
        let mut approved: Vec<String> = Vec::new();
        for earlier in before.iter().filter(|l| l.session == logged.session) {
            if let ApprovalEvent::Voted { decision, .. } = &earlier.event
                && decision.pause == *pause
                && !approved.contains(&decision.by)
            {
                approved.push(decision.by.clone());
            }
        }
        for name in by {
            if !approved.contains(&name) {
                approved.push(name);
            }
        }
        Some(crate::review::Turn::of(&self.rules.rule(&pause.validator_id), approved))
    }

    /// One attempt to deliver `notification` to `hook`, if it is due and this sender claims it.
    async fn deliver(
        &self,
        hook: &Hook,
        logged: &Logged,
        notification: &Notification,
    ) -> Result<Option<Attempted>, NotifyError> {
        // A claim outlives the request: another sender takes it over only once this one has
        // plainly stopped.
        let hold = self.options.timeout * 2 + Duration::from_secs(5);
        let outbox = self.backend.outbox().ok_or(BackendError::Lacks("outbox of notifications"))?;
        let claim = outbox.claim_delivery(&logged.session, &notification.id, &hook.id, hold).await?;
        let Some(claim) = claim else { return Ok(None) };
        let attempts = claim.attempts;
        let now = Timestamp::now();
        let attempt = |outcome: &'static str, why: Option<String>| Attempted {
            url: hook.shown.clone(),
            id: notification.id.clone(),
            kind: notification.kind,
            session: logged.session.clone(),
            outcome,
            why,
        };
        if now.since(notification.at) > self.options.give_up_after {
            outbox.finish_delivery(claim, DeliveryOutcome::GivenUp).await?;
            return Ok(Some(attempt("given-up", Some("older than the time it may be tried".into()))));
        }
        let sent = self.post(hook, notification, now).await;
        let (outcome, done) = match sent {
            Ok(()) => (DeliveryOutcome::Delivered, attempt("delivered", None)),
            Err(why) => {
                let next = now.plus(backoff(self.options.first_retry, attempts)).unwrap_or(now);
                let past = next.since(notification.at) > self.options.give_up_after;
                match past {
                    true => (DeliveryOutcome::GivenUp, attempt("given-up", Some(why))),
                    false => (DeliveryOutcome::RetryAt(next), attempt("retry", Some(why))),
                }
            }
        };
        outbox.finish_delivery(claim, outcome).await?;
        Ok(Some(done))
    }

    /// POSTs `notification` to `hook`, signed: `Ok` on a 2xx answer, else why not.
    async fn post(&self, hook: &Hook, notification: &Notification, now: Timestamp) -> Result<(), String> {
        let timestamp = now.unix_seconds();
        let signature = hook.secret.sign(&notification.id, timestamp, &notification.body);
        let request = self
            .client
            .post(&hook.url)
            .header("content-type", "application/json")
            .header("webhook-id", &notification.id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(notification.body.clone());
        // On planlock's I/O runtime, whatever runtime awaits it.
        let sent = async move {
            match request.send().await {
                Ok(answer) if answer.status().is_success() => Ok(()),
                Ok(answer) => Err(format!("the receiver answered {}", answer.status())),
                Err(e) if e.is_timeout() => Err("the receiver did not answer in time".to_owned()),
                Err(e) => {
                    Err(format!("cannot reach the receiver: {}", crate::text::printable(&e.without_url().to_string())))
                }
            }
        };
        match crate::io::runtime() {
            Ok(runtime) => runtime.spawn(sent).await.unwrap_or_else(|_| Err("the request was stopped".into())),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// `url` as it is printed: its origin and path, without a `user:password@` (shown as `…@`), a
/// query or a fragment, where a credential may be (`?token=…`).
fn without_userinfo(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://…@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// The wait after failed attempt `attempts` (0 the first): `first` doubled each time, at most an
/// hour, give or take a fifth at random so that retries of many senders spread out.
fn backoff(first: Duration, attempts: u32) -> Duration {
    let base = first.saturating_mul(1u32 << attempts.min(16)).min(Duration::from_secs(3600));
    let mut byte = [0u8; 1];
    let spread = match getrandom::fill(&mut byte) {
        Ok(()) => f64::from(byte[0]) / 255.0 * 0.4 + 0.8,
        Err(_) => 1.0,
    };
    base.mul_f64(spread)
}

#[cfg(test)]
mod tests {
    use super::without_userinfo;

    #[test]
    fn a_credential_in_a_webhook_url_is_never_shown() {
        assert_eq!(without_userinfo("https://bot:s3cret@hooks.example.com/in?x=a@b"), "https://…@hooks.example.com/in");
        assert_eq!(without_userinfo("http://127.0.0.1:9/hook?token=Sup3rSecret#x"), "http://127.0.0.1:9/hook");
        assert_eq!(without_userinfo("http://127.0.0.1:9000/hook"), "http://127.0.0.1:9000/hook");
        assert!(!without_userinfo("http://u:p@h@host/").contains("p@h"));
    }
}
