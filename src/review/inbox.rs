//! The inbox: every paused cycle waiting for a person, across sessions (CONTRACT §14): the
//! session roots under a directory, or the sessions of a PostgreSQL database. What it lists is
//! each pause's record (what is being approved, `shown`, with its digest), its expiry, and the
//! decision if one is recorded; a pause is decided through [`Inbox::records`] and
//! [`decide`](fn@super::decide), from any process, without the sessions' locks or leases.
//!
//! Bounded (CONTRACT §11): at most [`MAX_INBOX`] pauses are listed at once (the oldest first;
//! the result says how many more there are), a session's record is read as strictly as the
//! runtime reads it, and one that cannot be read is listed as a problem, not a failure.

use std::sync::Arc;

use serde::Serialize;

use super::access::Access;
use crate::backend::Backend;
use crate::contract::registry::Failure;
use crate::session::{Decisions, InterventionRecord, ReviewDecision, SessionRecords, Timestamp};

pub use super::filter::{FilterError, InboxFilter, MAX_WORDS, PARAMETERS, PauseState, Show, parse_duration};
/// The rule for a session root's name, where the inbox's users first found it.
pub use crate::session::{MAX_ROOT_NAME_BYTES, is_root_name};
/// Why an inbox could not be read: the [`Backend`]'s error.
pub type InboxError = crate::backend::BackendError;

/// The most pauses one listing returns.
pub const MAX_INBOX: usize = 1000;

/// The most sessions (roots or rows) one listing looks at.
pub const MAX_SESSIONS: usize = 100_000;

/// One pause waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPause {
    /// The session: its root's name under the directory, or its key in the database.
    pub session: String,
    /// Whether it has expired.
    pub expired: bool,
    /// How long it has waited, in seconds.
    pub age_seconds: u64,
    /// The pause's record (what is being approved is its `shown`, with `shownDigest`).
    pub record: InterventionRecord,
    /// The decision recorded on it, waiting for the session's next run.
    pub decision: Option<ReviewDecision>,
    /// Who approved it so far, where its validator needs several approvals and it has fewer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<String>,
    /// How many approvals it needs, once one of several is counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<usize>,
    /// Whose turn it is, once one of several approvals is counted under installed rules: who
    /// approved and who may still (issue 58).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<super::Turn>,
    /// The latest edit of the step's payload while the pause waits (CONTRACT §22): what the
    /// approvals counted are of, and what the next approver approves (its digest).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit: Option<crate::session::Edit>,
}

impl PendingPause {
    /// The pause of `session`, with what is decided on it, as it stands at `now` under `rules`.
    fn new(
        session: String,
        record: InterventionRecord,
        decided: Decisions,
        now: Timestamp,
        rules: Option<&Access>,
    ) -> PendingPause {
        let turn = match (&decided.decision, rules) {
            (None, Some(rules)) if !decided.approvals.is_empty() => {
                Some(super::Turn::of(&rules.rule(&record.validator.id), decided.approvals.clone()))
            }
            _ => None,
        };
        PendingPause {
            session,
            expired: record.expired_at(now),
            age_seconds: now.since(record.created_at).as_secs(),
            record,
            decision: decided.decision,
            approvals: decided.approvals,
            required: decided.required,
            turn,
            edit: decided.edit,
        }
    }

    /// Where it stands: `expired`, `approved` or `rejected`, whose turn it is (`1 of 2: ada
    /// approved; bob may approve`, or `1 of 2 (ada)` where no rules say who may), or `waiting`.
    ///
    /// ```
    /// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
    /// # let record: planlock::session::InterventionRecord = serde_json::from_str(json)?;
    /// use planlock::review::inbox::PendingPause;
    /// let pause = PendingPause {
    ///     session: "s1".into(), expired: false, age_seconds: 5, record, decision: None,
    ///     approvals: vec!["ada".into()], required: Some(2), turn: None, edit: None,
    /// };
    /// assert_eq!(pause.state(), "1 of 2 (ada)");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn state(&self) -> String {
        match (&self.decision, self.required) {
            _ if self.expired => "expired".to_owned(),
            (Some(d), _) if d.verified == Some(false) => format!("{} (unverified name)", d.verdict.past()),
            (Some(d), _) => d.verdict.past().to_owned(),
            (None, _) if let Some(turn) = &self.turn => turn.to_string(),
            (None, Some(required)) if !self.approvals.is_empty() => {
                format!("{} of {required} ({})", self.approvals.len(), self.approvals.join(", "))
            }
            _ => "waiting".to_owned(),
        }
    }
}

/// A session whose records could not be read: listed beside the pauses, not fatal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxProblem {
    /// The session.
    pub session: String,
    /// What is wrong, with its code.
    pub code: &'static str,
    /// The message.
    pub message: String,
}

/// A listing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxListing {
    /// The pauses, oldest first (newest first when the filter asks), at most [`MAX_INBOX`].
    pub pauses: Vec<PendingPause>,
    /// How many more matched than are listed.
    pub more: usize,
    /// Sessions whose records could not be read.
    pub problems: Vec<InboxProblem>,
}

/// The pauses waiting for a person across sessions; see the module docs.
///
/// ```
/// use planlock::backend::FilesBackend;
/// use planlock::review::inbox::{Inbox, InboxFilter};
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("session-a"))?;
/// let inbox = Inbox::new(FilesBackend::new(dir.path()));
/// assert!(planlock::block_on(inbox.list(&InboxFilter::default()))?.pauses.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Inbox {
    backend: Arc<dyn Backend>,
}

impl Inbox {
    /// The inbox of the sessions of `backend` (a [`FilesBackend`](crate::backend::FilesBackend), a `PgBackend`, or one shared
    /// as `Arc<dyn Backend>`).
    pub fn new(backend: impl Into<Arc<dyn Backend>>) -> Inbox {
        Inbox { backend: backend.into() }
    }

    /// Where its sessions are.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Where its sessions are, shared (for a notifier of the same sessions).
    pub fn backend_arc(&self) -> Arc<dyn Backend> {
        self.backend.clone()
    }

    /// The pauses that match `filter`, oldest first.
    pub async fn list(&self, filter: &InboxFilter) -> Result<InboxListing, InboxError> {
        let now = Timestamp::now();
        let mut listing = InboxListing::default();
        let mut found = Vec::new();
        let rules = self.rules().await;
        for (session, read) in self.backend.paused(MAX_SESSIONS).await? {
            match read {
                Ok((record, decided)) => {
                    let pause = PendingPause::new(session, record, decided, now, rules.as_ref());
                    if filter.matches(&pause) {
                        found.push(pause);
                    }
                }
                Err(e) => listing.problems.push(InboxProblem {
                    session,
                    code: e.code(),
                    message: crate::text::printable(&e.to_string()).into_owned(),
                }),
            }
        }
        found.sort_by(|a, b| a.record.created_at.cmp(&b.record.created_at).then_with(|| a.session.cmp(&b.session)));
        if filter.newest_first {
            found.reverse();
        }
        listing.more = found.len().saturating_sub(MAX_INBOX);
        found.truncate(MAX_INBOX);
        listing.pauses = found;
        Ok(listing)
    }

    /// The pause of one session, if it has one (`Ok(None)`: it exists and nothing is paused).
    pub async fn show(&self, session: &str) -> Result<Option<PendingPause>, InboxError> {
        let records = self.records(session).await?;
        let Some(record) = records.load_intervention().await? else { return Ok(None) };
        let now = Timestamp::now();
        let decided = records.decisions_on(&crate::session::PauseRef::of(&record)).await?;
        Ok(Some(PendingPause::new(session.to_owned(), record, decided, now, self.rules().await.as_ref())))
    }

    /// The rules installed where the sessions live, to say whose turn it is (none, or rules that
    /// cannot be read: the count alone is said; deciding refuses unreadable rules itself).
    async fn rules(&self) -> Option<Access> {
        let installed = self.backend.installed_access().await.ok()??;
        Access::installed(&installed).ok()
    }

    /// The records of one session, to decide on its pause ([`decide`](fn@super::decide)) or read
    /// its approval log; a name that is no session here is `unknown-session`.
    pub async fn records(&self, session: &str) -> Result<Box<dyn SessionRecords>, InboxError> {
        self.backend.records(session).await
    }
}

// Where a pause stands and whether a filter asks for it: read from the pause, here beside it (the
// filter's module knows nothing of pauses).
impl PauseState {
    /// Where `pause` stands.
    pub fn of(pause: &PendingPause) -> PauseState {
        match (pause.expired, pause.decision.is_some() || !pause.approvals.is_empty()) {
            (true, _) => PauseState::Expired,
            (false, true) => PauseState::Decided,
            (false, false) => PauseState::Waiting,
        }
    }
}

impl InboxFilter {
    /// Whether `pause` is one this filter asks for.
    pub fn matches(&self, pause: &PendingPause) -> bool {
        let record = &pause.record;
        // The session, the step, why it paused, and the reason of its decision (issue 58).
        let decided = pause.decision.as_ref().map_or("", |d| d.justification.as_str());
        let holds = |word: &String| {
            [pause.session.as_str(), record.step_id.as_str(), record.reason.as_str(), decided]
                .iter()
                .any(|text| text.to_lowercase().contains(word.as_str()))
        };
        self.validator.as_ref().is_none_or(|v| *v == record.validator.id)
            && self.step_type.is_none_or(|t| t == record.step_type)
            && self.older_than.is_none_or(|age| pause.age_seconds >= age.as_secs())
            && self.expired.is_none_or(|expired| expired == pause.expired)
            && self.state.is_none_or(|state| state == PauseState::of(pause))
            && self.q.iter().all(holds)
    }
}
