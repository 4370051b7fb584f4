//! How a runtime started and how a cycle ended: [`Boot`], [`RunOutcome`], [`Status`].

use crate::exec::executor::{Completed, CycleReport};
use crate::session::{InterventionRecord, SessionState};

/// How the runtime started.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant, reason = "one per runtime; boxing buys nothing")]
pub enum Boot {
    /// No session file: a new session; nothing is written until the first successful cycle.
    ColdStart,
    /// The session file matches the plan hash: its references are restored.
    Resume(SessionState),
}

/// How a cycle (or a resumed one) ended, when it did not fail.
#[derive(Debug)]
#[allow(clippy::large_enum_variant, reason = "one per cycle; boxing buys nothing")]
pub enum RunOutcome {
    /// Every step ran and the session is saved.
    Completed(Completed),
    /// A validator blocked a step. The record is saved: resume or abandon, in this process or
    /// after a restart.
    Paused {
        /// The saved record of the paused cycle.
        record: InterventionRecord,
        /// What the cycle did up to the pause.
        report: CycleReport,
    },
    /// A person rejected the paused cycle: it is abandoned (the session as it was; the same
    /// cycle number runs next).
    Abandoned(Box<InterventionRecord>),
}

impl RunOutcome {
    /// The report of the cycle that ran: a completed cycle's, or a paused one's up to its pause;
    /// `None` for a rejection, which runs nothing. A failed cycle's is its error's
    /// ([`RuntimeError::report`](super::RuntimeError::report)).
    pub fn report(&self) -> Option<&CycleReport> {
        match self {
            RunOutcome::Completed(done) => Some(&done.report),
            RunOutcome::Paused { report, .. } => Some(report),
            RunOutcome::Abandoned(_) => None,
        }
    }
}

/// Where the runtime stands between calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Ready to run the next cycle.
    Ready,
    /// A cycle is paused for a person: only [`Runtime::resume`](super::Runtime::resume) or [`Runtime::abandon`](super::Runtime::abandon).
    Paused,
    /// A FailFast failure halted it; every call is refused.
    Halted,
}
