//! Every session at a glance (CONTRACT §15): its status — ready, paused, paused and expired,
//! halted by its last cycle's failure — its completed cycles, when it was saved, and its last
//! finished cycle; across the session roots under a directory or a database's sessions, paused
//! first, a page at a time. What the console's sessions page shows.

use serde::Serialize;

use super::inbox::{Inbox, InboxError, InboxProblem, MAX_SESSIONS};
use crate::backend::{Glance, Glances};
use crate::contract::registry::{Failure, FailureKind};
use crate::session::{CycleEnd, CycleEntry, CycleFailure, InterventionRecord, SessionError, SessionState, Timestamp};

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
    /// Its id (`session.id` and `gen_ai.conversation.id` on its traces): the saved session's,
    /// else its paused first cycle's or its history's.
    pub session_id: Option<uuid::Uuid>,
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
    /// The summary of `session` from what its records hold: `None` when they hold nothing.
    pub(crate) fn of(
        session: String,
        state: Option<SessionState>,
        paused: Option<InterventionRecord>,
        last: Option<CycleEntry>,
    ) -> Option<Self> {
        let session_id = state
            .as_ref()
            .map(|s| s.session_id)
            .or(paused.as_ref().map(|p| p.session_id))
            .or(last.as_ref().map(|l| l.session_id));
        let last = last.map(LastCycle::of);
        if state.is_none() && paused.is_none() && last.is_none() {
            return None;
        }
        let status = match (&paused, &last) {
            (Some(record), _) if record.expired_at(Timestamp::now()) => SessionStatus::Expired,
            (Some(_), _) => SessionStatus::Paused,
            (None, Some(last)) if last.failure.as_ref().is_some_and(|f| f.class == FailureKind::FailFast) => {
                SessionStatus::Halted
            }
            (None, _) => SessionStatus::Ready,
        };
        Some(SessionSummary {
            session,
            session_id,
            status,
            cycles: state.as_ref().map_or(0, |s| s.cycle),
            updated_at: state.map(|s| s.updated_at),
            last,
        })
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
    /// `limit` ([`MAX_PAGE`]) starting at `offset`. Under a directory every root is read; in a
    /// database, one statement reads the page.
    ///
    /// ```
    /// use planlock::review::inbox::Inbox;
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("new-session"))?; // nothing in it yet: not listed
    /// let page = planlock::block_on(Inbox::new(planlock::backend::FilesBackend::new(dir.path())).sessions(None, 0, 50))?;
    /// assert_eq!(page.total, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn sessions(
        &self,
        status: Option<SessionStatus>,
        offset: usize,
        limit: usize,
    ) -> Result<SessionsPage, InboxError> {
        self.find_sessions(status, &[], offset, limit).await
    }

    /// [`sessions`](Self::sessions) whose name holds every one of `words` (lowercase, as
    /// [`InboxFilter::words`](super::inbox::InboxFilter::words) has them), in any case.
    pub async fn find_sessions(
        &self,
        status: Option<SessionStatus>,
        words: &[String],
        offset: usize,
        limit: usize,
    ) -> Result<SessionsPage, InboxError> {
        let limit = limit.min(MAX_PAGE);
        let status_name = status.map(SessionStatus::as_str);
        let glances = self.backend().glances(status_name, words, offset, limit, MAX_SESSIONS).await?;
        Ok(match glances.paged_total {
            Some(_) => summaries(glances),
            None => in_order(summaries(glances)).find(status, words, offset, limit),
        })
    }

    /// Every session (at most [`MAX_SESSIONS`]), in the order of [`sessions`](Self::sessions):
    /// what a console keeps to page through without reading every root again.
    pub async fn all_sessions(&self) -> Result<SessionsPage, InboxError> {
        Ok(in_order(summaries(self.backend().glances(None, &[], 0, MAX_SESSIONS, MAX_SESSIONS).await?)))
    }
}

/// `page`'s sessions paused, expired, halted, then ready; each group most recently active first.
fn in_order(mut page: SessionsPage) -> SessionsPage {
    page.sessions.sort_by(|a, b| {
        (a.status, std::cmp::Reverse(a.active_at()), &a.session).cmp(&(
            b.status,
            std::cmp::Reverse(b.active_at()),
            &b.session,
        ))
    });
    page.total = page.sessions.len();
    page
}

/// The summaries of `glances`, in their order, with the backend's total when it paged them.
fn summaries(glances: Glances) -> SessionsPage {
    let mut page = SessionsPage::default();
    for (name, read) in glances.sessions {
        match read {
            Ok(Glance { state, paused, last }) => {
                page.sessions.extend(SessionSummary::of(name, state, paused, last));
            }
            Err(e) => page.problems.push(problem(name, &e)),
        }
    }
    page.total = glances.paged_total.unwrap_or(page.sessions.len());
    page
}

impl SessionsPage {
    /// The page of at most `limit` sessions with `status` from `offset`, of this full listing.
    pub fn page(&self, status: Option<SessionStatus>, offset: usize, limit: usize) -> SessionsPage {
        self.find(status, &[], offset, limit)
    }

    /// [`page`](Self::page) of the sessions whose name holds every one of `words` (lowercase).
    pub fn find(&self, status: Option<SessionStatus>, words: &[String], offset: usize, limit: usize) -> SessionsPage {
        let wanted = |s: &&SessionSummary| {
            status.is_none_or(|wanted| s.status == wanted) && super::filter::holds_words(words, &s.session)
        };
        let matching: Vec<&SessionSummary> = self.sessions.iter().filter(wanted).collect();
        SessionsPage {
            total: matching.len(),
            sessions: matching.into_iter().skip(offset).take(limit.min(MAX_PAGE)).cloned().collect(),
            problems: self.problems.clone(),
        }
    }
}

fn problem(session: String, e: &SessionError) -> InboxProblem {
    InboxProblem { session, code: e.code(), message: crate::text::printable(&e.to_string()).into_owned() }
}
