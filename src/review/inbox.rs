//! The inbox: every paused cycle waiting for a person, across sessions (CONTRACT §14): the
//! session roots under a directory, or the sessions of a PostgreSQL database. What it lists is
//! each pause's record (what is being approved, `shown`, with its digest), its expiry, and the
//! decision if one is recorded; a pause is decided through [`Inbox::records`] and
//! [`decide`](super::decide), from any process, without the sessions' locks or leases.
//!
//! Bounded (CONTRACT §11): at most [`MAX_INBOX`] pauses are listed at once (the oldest first;
//! the result says how many more there are), a session's record is read as strictly as the
//! runtime reads it, and one that cannot be read is listed as a problem, not a failure.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::contract::registry::StepType;
use crate::contract::registry::{Failure, FailureKind};
use crate::session::ReviewDecision;
use crate::session::{FileRecords, SessionRecords};
use crate::session::{InterventionRecord, SessionError, Timestamp};

/// The most pauses one listing returns.
pub const MAX_INBOX: usize = 1000;

/// The most sessions (roots or rows) one listing looks at.
pub const MAX_SESSIONS: usize = 100_000;

/// Where the sessions are.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Sessions {
    /// Each directory under this one is a session root (not followed through a link).
    Dir(PathBuf),
    /// The sessions of a shared database.
    #[cfg(feature = "postgres")]
    Database(crate::pg::PgDatabase),
}

/// Which pauses to list.
///
/// ```
/// use planlock::review::inbox::InboxFilter;
/// let filter = InboxFilter { validator: Some("pii-guard".into()), ..InboxFilter::default() };
/// assert!(filter.expired.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InboxFilter {
    /// Only this validator's.
    pub validator: Option<String>,
    /// Only pauses at this step type.
    pub step_type: Option<StepType>,
    /// Only pauses at least this old.
    pub older_than: Option<std::time::Duration>,
    /// Only expired ones (`Some(true)`) or only live ones (`Some(false)`).
    pub expired: Option<bool>,
}

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
    /// The pauses, oldest first, at most [`MAX_INBOX`].
    pub pauses: Vec<PendingPause>,
    /// How many more matched than are listed.
    pub more: usize,
    /// Sessions whose records could not be read.
    pub problems: Vec<InboxProblem>,
}

/// Why an inbox could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxError {
    /// The directory of session roots cannot be read.
    #[error("cannot read the directory of sessions {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A session name that names no session here.
    #[error("there is no session `{0}` here: name a session root under the directory, or a session key")]
    Unknown(String),
    /// The database failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl Failure for InboxError {
    fn code(&self) -> &'static str {
        match self {
            InboxError::Dir { .. } => "inbox-dir",
            InboxError::Unknown(_) => "unknown-session",
            InboxError::Session(e) => e.code(),
        }
    }
    fn kind(&self) -> FailureKind {
        match self {
            InboxError::Unknown(_) => FailureKind::CycleFail,
            _ => FailureKind::FailFast,
        }
    }
}

/// The pauses waiting for a person across sessions; see the module docs.
///
/// ```
/// use planlock::review::inbox::{Inbox, InboxFilter, Sessions};
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("session-a"))?;
/// let inbox = Inbox::new(Sessions::Dir(dir.path().to_owned()));
/// assert!(planlock::block_on(inbox.list(&InboxFilter::default()))?.pauses.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Inbox {
    sessions: Sessions,
}

impl Inbox {
    /// The inbox of `sessions`.
    pub fn new(sessions: Sessions) -> Inbox {
        Inbox { sessions }
    }

    /// Where its sessions are.
    pub fn place(&self) -> &Sessions {
        &self.sessions
    }

    /// The pauses that match `filter`, oldest first.
    pub async fn list(&self, filter: &InboxFilter) -> Result<InboxListing, InboxError> {
        let now = Timestamp::now();
        let mut listing = InboxListing::default();
        let mut found = Vec::new();
        for (session, read) in self.paused().await? {
            match read {
                Ok((record, decision)) => {
                    let pause = PendingPause {
                        session,
                        expired: record.expired_at(now),
                        age_seconds: now.since(record.created_at).as_secs(),
                        record,
                        decision,
                    };
                    if matches(&pause, filter) {
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
        let decision = records.decision_on(&crate::session::PauseRef::of(&record)).await?;
        Ok(Some(PendingPause {
            session: session.to_owned(),
            expired: record.expired_at(now),
            age_seconds: now.since(record.created_at).as_secs(),
            record,
            decision,
        }))
    }

    /// The records of one session, to decide on its pause ([`decide`](super::decide)) or read
    /// its approval log.
    pub async fn records(&self, session: &str) -> Result<Box<dyn SessionRecords>, InboxError> {
        match &self.sessions {
            Sessions::Dir(dir) => Ok(Box::new(FileRecords::new(root_of(dir, session)?))),
            #[cfg(feature = "postgres")]
            Sessions::Database(db) => {
                let records = crate::session::postgres::PgRecords::new(db, session)?;
                if records.load().await?.is_none() && records.load_intervention().await?.is_none() {
                    return Err(InboxError::Unknown(crate::text::printable(session).into_owned()));
                }
                Ok(Box::new(records))
            }
        }
    }

    /// Every paused session's record and decision (or why it cannot be read).
    #[allow(clippy::type_complexity, reason = "one private listing")]
    async fn paused(
        &self,
    ) -> Result<Vec<(String, Result<(InterventionRecord, Option<ReviewDecision>), SessionError>)>, InboxError> {
        match &self.sessions {
            Sessions::Dir(dir) => {
                let mut out = Vec::new();
                for (name, records) in roots(dir)? {
                    let read = match records.load_intervention().await {
                        Ok(Some(record)) => {
                            let decision = records.decision_on(&crate::session::PauseRef::of(&record)).await;
                            decision.map(|decision| Some((record, decision)))
                        }
                        Ok(None) => Ok(None),
                        Err(e) => Err(e),
                    };
                    match read {
                        Ok(Some(pause)) => out.push((name, Ok(pause))),
                        Ok(None) => {}
                        Err(e) => out.push((name, Err(e))),
                    }
                }
                Ok(out)
            }
            #[cfg(feature = "postgres")]
            Sessions::Database(db) => Ok(crate::session::postgres::paused_sessions(db, MAX_SESSIONS).await?),
        }
    }
}

/// Whether `pause` is one `filter` asks for.
fn matches(pause: &PendingPause, filter: &InboxFilter) -> bool {
    filter.validator.as_ref().is_none_or(|v| *v == pause.record.validator.id)
        && filter.step_type.is_none_or(|t| t == pause.record.step_type)
        && filter.older_than.is_none_or(|age| pause.age_seconds >= age.as_secs())
        && filter.expired.is_none_or(|expired| expired == pause.expired)
}

/// The longest name of a session root, in bytes (a file name's limit on common file systems).
pub const MAX_ROOT_NAME_BYTES: usize = 255;

/// Whether `name` can be a session root's name under a directory: the one rule the lister, the
/// inbox, the console and every reader use. A plain name of one entry there: not empty, at most
/// [`MAX_ROOT_NAME_BYTES`], not `.` or `..`, no separator (`/`, nor `\`, which is one elsewhere),
/// and no NUL. A directory whose name breaks it is not a session (any other character is allowed,
/// and shown escaped wherever a name is shown).
///
/// ```
/// use planlock::review::inbox::is_root_name;
/// assert!(is_root_name("support-7") && is_root_name("세션"));
/// assert!(!is_root_name("..") && !is_root_name("a/b") && !is_root_name("a\\b") && !is_root_name("a\0"));
/// ```
pub fn is_root_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ROOT_NAME_BYTES
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}

/// The root of session `name` under `dir`: a name of one directory there ([`is_root_name`]),
/// or a path to a root (as given on a command line).
fn root_of(dir: &Path, name: &str) -> Result<PathBuf, InboxError> {
    let unknown = || InboxError::Unknown(crate::text::printable(name).into_owned());
    if name.is_empty() || name.contains('\0') {
        return Err(unknown());
    }
    let root = if is_root_name(name) { dir.join(name) } else { PathBuf::from(name) };
    match std::fs::symlink_metadata(&root) {
        Ok(meta) if meta.is_dir() => Ok(root),
        _ => Err(unknown()),
    }
}

/// The session roots under `dir` (at most [`MAX_SESSIONS`]): each directory there, not followed
/// through a link, with its records.
pub(crate) fn roots(dir: &std::path::Path) -> Result<Vec<(String, FileRecords)>, InboxError> {
    let failed = |source| InboxError::Dir { dir: dir.to_owned(), source };
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(failed)?.take(MAX_SESSIONS) {
        let entry = entry.map_err(failed)?;
        // One rule for which names are sessions (a name no reader could open is not listed).
        let Some(name) = entry.file_name().to_str().filter(|n| is_root_name(n)).map(str::to_owned) else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push((name, FileRecords::new(entry.path())));
        }
    }
    Ok(out)
}
