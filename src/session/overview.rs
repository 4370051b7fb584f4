//! Every session at a glance (CONTRACT §15): its status — ready, paused, paused and expired,
//! halted by its last cycle's failure — its completed cycles, when it was saved, and its last
//! finished cycle; across the session roots under a directory or a database's sessions, paused
//! first, a page at a time. What the console's sessions page shows.

use serde::Serialize;

use super::inbox::{Inbox, InboxError, InboxProblem, MAX_SESSIONS, Sessions};
use super::records::{FileRecords, SessionRecords};
use super::{CycleEnd, CycleEntry, CycleFailure, SessionError, Timestamp};
use crate::contract::registry::{Failure, FailureKind};

/// The most sessions one page holds.
pub const MAX_PAGE: usize = 500;

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SessionStatus {
    /// A cycle waits for a person.
    Paused,
    /// A cycle waited for a person past its expiry: it can only be abandoned.
    Expired,
    /// Its last cycle failed FailFast: its runtime halted, and a person must look.
    Halted,
    /// Ready for its next cycle.
    Ready,
}

impl SessionStatus {
    /// Its name: `paused`, `expired`, `halted`, `ready`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Paused => "paused",
            SessionStatus::Expired => "expired",
            SessionStatus::Halted => "halted",
            SessionStatus::Ready => "ready",
        }
    }

    /// The status named `name`, if any.
    pub fn parse(name: &str) -> Option<SessionStatus> {
        [SessionStatus::Paused, SessionStatus::Expired, SessionStatus::Halted, SessionStatus::Ready]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

/// A session's last finished cycle, as its history keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastCycle {
    /// Its number.
    pub cycle: u64,
    /// How it ended.
    pub end: CycleEnd,
    /// When it ended.
    pub finished_at: Timestamp,
    /// Why it failed, when it did.
    pub failure: Option<CycleFailure>,
}

/// One session at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session: its root's name under the directory, or its key in the database.
    pub session: String,
    /// Where it stands.
    pub status: SessionStatus,
    /// Its completed cycles.
    pub cycles: u64,
    /// When its session was last saved (`None`: no cycle has completed).
    pub updated_at: Option<Timestamp>,
    /// Its last finished cycle, when its history has one.
    pub last: Option<LastCycle>,
}

/// A page of sessions.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsPage {
    /// The sessions of the page: paused, expired, halted, then ready; each group most recently
    /// active first.
    pub sessions: Vec<SessionSummary>,
    /// How many sessions matched in all.
    pub total: usize,
    /// Sessions whose records could not be read.
    pub problems: Vec<InboxProblem>,
}

impl SessionSummary {
    /// The summary of `session` from its records: `None` for a root with nothing in it yet.
    pub(crate) async fn read(session: String, records: &dyn SessionRecords) -> Result<Option<Self>, SessionError> {
        let (state, paused, history) =
            (records.load().await?, records.load_intervention().await?, records.history(1).await?);
        let last = history.entries.into_iter().next().map(LastCycle::of);
        if state.is_none() && paused.is_none() && last.is_none() {
            return Ok(None);
        }
        let status = match (&paused, &last) {
            (Some(record), _) if record.expired_at(Timestamp::now()) => SessionStatus::Expired,
            (Some(_), _) => SessionStatus::Paused,
            (None, Some(last)) if last.failure.as_ref().is_some_and(|f| f.class == FailureKind::FailFast) => {
                SessionStatus::Halted
            }
            (None, _) => SessionStatus::Ready,
        };
        Ok(Some(SessionSummary {
            session,
            status,
            cycles: state.as_ref().map_or(0, |s| s.cycle),
            updated_at: state.map(|s| s.updated_at),
            last,
        }))
    }

    /// When it was last active: its last cycle's end, else its save.
    fn active_at(&self) -> Option<Timestamp> {
        self.last.as_ref().map(|l| l.finished_at).max(self.updated_at)
    }
}

impl LastCycle {
    fn of(entry: CycleEntry) -> LastCycle {
        LastCycle { cycle: entry.cycle, end: entry.end, finished_at: entry.finished_at, failure: entry.failure }
    }
}

impl Inbox {
    /// The sessions with `status` (every one with `None`), paused first, the page of at most
    /// `limit` ([`MAX_PAGE`]) starting at `offset`.
    ///
    /// ```
    /// use planlock::session::inbox::{Inbox, Sessions};
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("new-session"))?; // nothing in it yet: not listed
    /// let page = planlock::block_on(Inbox::new(Sessions::Dir(dir.path().to_owned())).sessions(None, 0, 50))?;
    /// assert_eq!(page.total, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn sessions(
        &self,
        status: Option<SessionStatus>,
        offset: usize,
        limit: usize,
    ) -> Result<SessionsPage, InboxError> {
        let mut page = SessionsPage::default();
        let mut all = Vec::new();
        for (name, records) in self.every_session().await? {
            match SessionSummary::read(name.clone(), records.as_ref()).await {
                Ok(Some(summary)) => all.push(summary),
                Ok(None) => {}
                Err(e) => page.problems.push(InboxProblem {
                    session: name,
                    code: e.code(),
                    message: crate::text::printable(&e.to_string()).into_owned(),
                }),
            }
        }
        all.retain(|s| status.is_none_or(|wanted| s.status == wanted));
        all.sort_by(|a, b| {
            (a.status, std::cmp::Reverse(a.active_at()), &a.session).cmp(&(
                b.status,
                std::cmp::Reverse(b.active_at()),
                &b.session,
            ))
        });
        page.total = all.len();
        page.sessions = all.into_iter().skip(offset).take(limit.min(MAX_PAGE)).collect();
        Ok(page)
    }

    /// Every session's name and records (at most [`MAX_SESSIONS`]).
    pub(super) async fn every_session(&self) -> Result<Vec<(String, Box<dyn SessionRecords>)>, InboxError> {
        match self.place() {
            Sessions::Dir(dir) => {
                let entries = std::fs::read_dir(dir).map_err(|source| InboxError::Dir { dir: dir.clone(), source })?;
                let mut out: Vec<(String, Box<dyn SessionRecords>)> = Vec::new();
                for entry in entries.take(MAX_SESSIONS) {
                    let entry = entry.map_err(|source| InboxError::Dir { dir: dir.clone(), source })?;
                    // A root is a directory here, not a link to one elsewhere.
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        out.push((name, Box::new(FileRecords::new(entry.path()))));
                    }
                }
                Ok(out)
            }
            #[cfg(feature = "postgres")]
            Sessions::Database(db) => {
                let keys = super::postgres::session_keys(db, MAX_SESSIONS).await?;
                let mut out: Vec<(String, Box<dyn SessionRecords>)> = Vec::new();
                for key in keys {
                    let records = super::postgres::PgRecords::new(db, &key)?;
                    out.push((key, Box::new(records)));
                }
                Ok(out)
            }
        }
    }
}
