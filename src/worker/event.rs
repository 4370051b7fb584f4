//! What a worker reports: each action on a session, each session it could not act on, and why.

use std::time::Duration;

use crate::session::ReviewVerdict;

/// How a decided pause was acted on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acted {
    /// The session (a root's name, or a key).
    pub session: String,
    /// The paused cycle.
    pub cycle: u64,
    /// The decision acted on, and who made it (several names for several approvals).
    pub verdict: ReviewVerdict,
    /// Who decided.
    pub by: String,
    /// What became of the cycle: `completed`, `paused` (the re-run paused again), `abandoned`,
    /// or the failure's code.
    pub outcome: String,
}

/// What a worker did, or could not do, as it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorkerEvent {
    /// The worker started: whether the backend wakes it on each decision, and how often it
    /// looks at every session anyway.
    Started {
        /// Woken by the decision itself (else by the poll alone).
        watching: bool,
        /// The poll's period.
        poll: Duration,
    },
    /// A decided pause was acted on.
    Acted(Acted),
    /// A session with a decided pause could not be acted on by this worker (it keeps no plan,
    /// its plan or runtime cannot be booted): it is looked at again at the next poll.
    Skipped {
        /// The session.
        session: String,
        /// Why, with what to do.
        why: String,
    },
    /// Looking for decisions failed (the sessions could not be listed or watched): tried again
    /// at the next poll.
    Failed {
        /// The error's stable code.
        code: &'static str,
        /// What failed.
        message: String,
    },
    /// The worker stopped (its stop future completed), after the cycle in flight.
    Stopped,
}

impl std::fmt::Display for WorkerEvent {
    /// One line: what the CLI's `planlock worker` logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::text::printable;
        match self {
            WorkerEvent::Started { watching: true, poll } => {
                write!(f, "started: woken by each decision, and looking at every session every {} s", poll.as_secs())
            }
            WorkerEvent::Started { watching: false, poll } => {
                write!(f, "started: looking for decisions every {} s (this place cannot wake a worker)", poll.as_secs())
            }
            WorkerEvent::Acted(a) => write!(
                f,
                "{} cycle {}: {} by {}: {}",
                printable(&a.session),
                a.cycle,
                a.verdict.as_str(),
                printable(&a.by),
                a.outcome
            ),
            WorkerEvent::Skipped { session, why } => write!(f, "{}: skipped: {why}", printable(session)),
            WorkerEvent::Failed { code, message } => write!(f, "failed ({code}): {message}"),
            WorkerEvent::Stopped => f.write_str("stopped"),
        }
    }
}
