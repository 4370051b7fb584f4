//! The session's cycle history (CONTRACT §15): what each finished cycle did — completed, paused
//! or failed — kept beside the session in the session's own store, bounded.
//!
//! - An entry ([`CycleEntry`]) is the cycle's report (every step with its status, duration,
//!   warnings and tokens; its interventions, overrides and stale approvals), how it ended, the
//!   failure's code and class, and when it ran. No prompt, answer or memory text: a step's
//!   results ([`CycleEntry::content`]) only when the runtime records content
//!   (`RuntimeBuilder::record_content`, which also puts them in the step spans).
//! - The runtime writes one entry per finished cycle through its store
//!   ([`SessionStore::end_cycle`](super::SessionStore::end_cycle)), durably, keeping the
//!   last `keep` (default [`DEFAULT_KEEP`]); any process reads them
//!   ([`SessionRecords::history`](super::SessionRecords::history)), newest first.
//! - Files: one JSON object a line in [`HISTORY_FILE`], appended and synced; when it holds `keep`
//!   entries it becomes `cycle_history.1.jsonl` (replacing the one before) and a new file starts,
//!   so at most `2 × keep` entries are on disk and older ones go whole. PostgreSQL: a row per
//!   entry in `planlock_cycle_history`, older rows deleted in the same transaction.
//! - The history is input when read back (CONTRACT §11): a line that is not an entry is counted
//!   ([`History::unreadable`]) and skipped, and a read takes at most [`MAX_HISTORY_READ_BYTES`]
//!   of each file.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::Timestamp;
use crate::contract::registry::FailureKind;
use crate::exec::executor::CycleReport;
use crate::hash::Digest;

/// How many finished cycles a session keeps unless told otherwise.
pub const DEFAULT_KEEP: usize = 100;

/// The history file, relative to the store's root.
pub const HISTORY_FILE: &str = "ops/runtime/cycle_history.jsonl";

/// The history file before [`HISTORY_FILE`] began, relative to the store's root.
pub const PREVIOUS_HISTORY_FILE: &str = "ops/runtime/cycle_history.1.jsonl";

/// The largest entry written, in bytes: a larger one is kept without its content, then without
/// its warnings' text ([`CycleEntry::truncated`]).
pub const MAX_ENTRY_BYTES: usize = 256 << 10;

/// The most read of each history file, from its end, in bytes (32 MiB).
pub const MAX_HISTORY_READ_BYTES: u64 = 32 << 20;

/// How a cycle ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CycleEnd {
    /// It completed and its session save is durable.
    Completed,
    /// A validator blocked a step; the cycle waits for a person.
    Paused,
    /// A step (or the store) failed; the failure says which and how.
    Failed,
    /// Its pause was ended by a person (a rejection, an abandon; the approval log says who and
    /// why) or by `planlock abandon`: nothing of it was kept.
    Abandoned,
}

impl CycleEnd {
    /// Its name: `completed`, `paused`, `failed`, `abandoned`.
    pub fn as_str(self) -> &'static str {
        match self {
            CycleEnd::Completed => "completed",
            CycleEnd::Paused => "paused",
            CycleEnd::Failed => "failed",
            CycleEnd::Abandoned => "abandoned",
        }
    }
}

/// Why a cycle failed: its stable code and class, and the step, when a step failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CycleFailure {
    /// The stable code (`step-timeout`, `model-unreachable`, `session-fenced`…).
    pub code: String,
    /// CycleFail or FailFast.
    pub class: FailureKind,
    /// The step that failed, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    /// What went wrong, as the error says it (printable, at most [`MAX_FAILURE_MESSAGE_CHARS`];
    /// secrets were scrubbed where the error was made, as in every output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The longest failure message an entry keeps, in characters.
pub const MAX_FAILURE_MESSAGE_CHARS: usize = 2000;

impl CycleFailure {
    /// The failure of `failure` (a stable code, a class, its message bounded), at `step_id`.
    pub fn of<F: crate::contract::registry::Failure + std::fmt::Display + ?Sized>(
        failure: &F,
        step_id: Option<String>,
    ) -> CycleFailure {
        let text = failure.to_string();
        let mut message: String = crate::text::printable(&text).chars().take(MAX_FAILURE_MESSAGE_CHARS).collect();
        if text.chars().count() > MAX_FAILURE_MESSAGE_CHARS {
            message.push('…');
        }
        CycleFailure { code: failure.code().to_owned(), class: failure.kind(), step_id, message: Some(message) }
    }
}

/// One finished cycle of a session, as the history keeps it.
///
/// ```
/// use planlock::session::{CycleEnd, CycleEntry, Timestamp};
/// let entry = CycleEntry {
///     session_id: uuid::Uuid::new_v4(),
///     cycle: 1,
///     plan_hash: planlock::Digest::of(b"plan"),
///     end: CycleEnd::Completed,
///     started_at: Timestamp::now(),
///     finished_at: Timestamp::now(),
///     report: Default::default(),
///     failure: None,
///     content: None,
///     truncated: false,
/// };
/// let line = serde_json::to_string(&entry)?;
/// assert!(line.contains(r#""end":"completed""#));
/// assert_eq!(serde_json::from_str::<CycleEntry>(&line)?, entry);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CycleEntry {
    /// The session.
    pub session_id: Uuid,
    /// The cycle's number (a failed cycle's number runs again, so it may appear more than once).
    pub cycle: u64,
    /// The plan hash it ran under.
    pub plan_hash: Digest,
    /// How it ended.
    pub end: CycleEnd,
    /// When it started (a resumed cycle: when it resumed).
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Timestamp,
    /// Its report: every step that ran, with status, duration, warnings and tokens.
    pub report: CycleReport,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<CycleFailure>,
    /// The results of its completed steps by step id (prompts, answers, memory text): only when
    /// content recording is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Whether it was cut to fit [`MAX_ENTRY_BYTES`] (its content, then its warnings' text).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

impl CycleEntry {
    /// The entry as one line of JSON (no newline), at most [`MAX_ENTRY_BYTES`]: a larger one
    /// loses its content, then its warnings' text, and says so.
    pub(crate) fn to_line(&self) -> Vec<u8> {
        let line = serde_json::to_vec(self).unwrap_or_default();
        if line.len() <= MAX_ENTRY_BYTES {
            return line;
        }
        let mut cut = self.clone();
        cut.truncated = true;
        cut.content = None;
        let line = serde_json::to_vec(&cut).unwrap_or_default();
        if line.len() <= MAX_ENTRY_BYTES {
            return line;
        }
        for step in &mut cut.report.steps {
            for warning in &mut step.warnings {
                warning.message.clear();
            }
        }
        serde_json::to_vec(&cut).unwrap_or_default()
    }
}

/// A session's history as read: its entries, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// The entries read, newest first.
    pub entries: Vec<CycleEntry>,
    /// Lines (or rows) that were not an entry, skipped.
    pub unreadable: usize,
}

impl History {
    /// The newest `limit` entries of `lines` (oldest first, as appended).
    pub(crate) fn of_lines<'a>(lines: impl DoubleEndedIterator<Item = &'a str>, limit: usize) -> History {
        let mut history = History::default();
        for line in lines.rev().filter(|l| !l.trim().is_empty()) {
            if history.entries.len() == limit {
                break;
            }
            match serde_json::from_str::<CycleEntry>(line) {
                Ok(entry) => history.entries.push(entry),
                Err(_) => history.unreadable += 1,
            }
        }
        history
    }
}
