//! What a worker reports: each action on a session, each session it could not act on, and why.

use std::collections::HashMap;
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

/// The most sessions whose last skip a worker remembers (past it, it forgets them all and may
/// say one again).
const MAX_REMEMBERED: usize = 10_000;

/// What a worker last said of each session it skipped: a skip is reported once, not at every
/// poll, until its reason changes or the session is acted on.
#[derive(Debug, Default)]
pub(super) struct Said(HashMap<String, String>);

impl Said {
    /// Whether `event` is news: not the same skip of the same session again.
    pub(super) fn is_new(&mut self, event: &WorkerEvent) -> bool {
        match event {
            WorkerEvent::Skipped { session, why } => {
                if self.0.get(session) == Some(why) {
                    return false;
                }
                if self.0.len() >= MAX_REMEMBERED {
                    self.0.clear();
                }
                self.0.insert(session.clone(), why.clone());
                true
            }
            WorkerEvent::Acted(acted) => {
                self.0.remove(&acted.session);
                true
            }
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_is_said_once_until_it_changes() {
        let skip = |why: &str| WorkerEvent::Skipped { session: "s1".into(), why: why.into() };
        let mut said = Said::default();
        assert!(said.is_new(&skip("no plan")));
        assert!(!said.is_new(&skip("no plan")), "the same skip at the next poll is not said again");
        assert!(said.is_new(&skip("cannot boot")));
        let acted = Acted {
            session: "s1".into(),
            cycle: 1,
            verdict: ReviewVerdict::Approve,
            by: "ada".into(),
            outcome: "completed".into(),
        };
        assert!(said.is_new(&WorkerEvent::Acted(acted)));
        assert!(said.is_new(&skip("cannot boot")), "acted on since: said again");
    }
}
