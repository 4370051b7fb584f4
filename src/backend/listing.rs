//! What every backend's listings are made of, written once above the backends: the paused sessions,
//! the sessions at a glance and the recent events of their records, each read from every session's
//! [`SessionRecords`](crate::session::SessionRecords)
//! ([`Backend::sessions`](super::Backend::sessions)). A backend that can say one of them in one
//! statement (PostgreSQL) overrides it; a new backend gets them by listing its sessions.

use super::{BackendError, Glance, Glances, Listed, Logged, PausedSession};
use crate::session::{ApprovalEvent, PauseRef};

/// Every paused session of `sessions`, with its record and what is decided on it.
pub(super) async fn paused(sessions: Vec<Listed>) -> Result<Vec<PausedSession>, BackendError> {
    let mut out = Vec::new();
    for (name, records) in sessions {
        let read = match records.load_intervention().await {
            Ok(Some(record)) => {
                records.decisions_on(&PauseRef::of(&record)).await.map(|decided| Some((record, decided)))
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

/// Every session of `sessions` at a glance (a status is known only from its records: the
/// caller filters and pages).
pub(super) async fn glances(sessions: Vec<Listed>) -> Result<Glances, BackendError> {
    let mut glances = Glances::default();
    for (name, records) in sessions {
        let read = async {
            let (state, paused) = (records.load().await?, records.load_intervention().await?);
            let last = records.history(1).await?.entries.into_iter().next();
            Ok(Glance { state, paused, last })
        };
        glances.sessions.push((name, read.await));
    }
    Ok(glances)
}

/// The events of `sessions`' records (notices and approval log) at or after `since`, at most
/// `max`, oldest first within a session. A session whose records cannot be read sends nothing;
/// the inbox lists it as a problem.
pub(super) async fn recent_events(
    sessions: Vec<Listed>,
    since: crate::session::Timestamp,
    max: usize,
) -> Result<Vec<Logged>, BackendError> {
    let mut out = Vec::new();
    for (name, records) in sessions {
        let (Ok(log), Ok(notices)) = (records.approval_log().await, records.notices().await) else { continue };
        let mut events: Vec<_> = notices.events.into_iter().chain(log.events).filter(|e| e.at() >= since).collect();
        events.sort_by_key(ApprovalEvent::at);
        out.extend(events.into_iter().map(|event| Logged { session: name.clone(), event }));
        if out.len() >= max {
            out.truncate(max);
            break;
        }
    }
    Ok(out)
}
