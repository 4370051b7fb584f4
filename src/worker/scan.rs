//! A worker's pass over every session: which ones to act on (their pause decided, or expired:
//! its rule may be to abandon it). A backend that lists in one statement (PostgreSQL) is asked
//! for its paused sessions; one read session by session (a directory of roots) is looked at by
//! each session's [`PauseMark`], so a pass reads again only the pauses that changed since the
//! last one (or whose expiry came): at 10,000 roots a pass is a stat or two a root, and a
//! decision that wakes the worker meanwhile does not wait behind reads of every record.

use std::collections::HashMap;

use crate::backend::Backend;
use crate::contract::registry::Failure;
use crate::session::{PauseMark, PauseRef, Timestamp};

use super::event::WorkerEvent;

/// The most sessions one pass looks at.
const MAX_SESSIONS: usize = 100_000;

/// What a pass found: the sessions to act on, or why it could not look.
pub(super) type Found = Result<Vec<String>, WorkerEvent>;

/// The sessions a pass found nothing to do on, by name: the mark their pause had, and when it
/// expires (a pause past its expiry is looked at again, whatever its mark).
#[derive(Default)]
pub(super) struct Scan {
    quiet: HashMap<String, (PauseMark, Option<Timestamp>)>,
}

impl Scan {
    /// The sessions of `backend` to act on now.
    pub(super) async fn pass(&mut self, backend: &dyn Backend) -> Found {
        let failed = |e: crate::backend::BackendError| WorkerEvent::Failed { code: e.code(), message: e.to_string() };
        let now = Timestamp::now();
        let due = |record: &crate::session::InterventionRecord, decided: bool| decided || record.expired_at(now);
        if !backend.lists_by_reading_each() {
            let paused = backend.paused(MAX_SESSIONS).await.map_err(failed)?;
            return Ok(paused
                .into_iter()
                .filter(
                    |(_, listed)| matches!(listed, Ok((record, decided)) if due(record, decided.decision.is_some())),
                )
                .map(|(name, _)| name)
                .collect());
        }
        let sessions = backend.sessions(MAX_SESSIONS).await.map_err(failed)?;
        let mut quiet = HashMap::with_capacity(self.quiet.len());
        let mut found = Vec::new();
        for (name, records) in sessions {
            let mark = records.pause_mark();
            if let (Some(mark), Some((was, expires))) = (mark, self.quiet.remove(&name))
                && mark == was
                && expires.is_none_or(|at| now < at)
            {
                quiet.insert(name, (mark, expires));
                continue;
            }
            // Changed, new, or expiring: read. A session that cannot be read is looked at again
            // at the next pass (the inbox lists it as a problem).
            let Ok(record) = records.load_intervention().await else { continue };
            let act = match &record {
                Some(record) => match records.decisions_on(&PauseRef::of(record)).await {
                    Ok(decided) => due(record, decided.decision.is_some()),
                    Err(_) => continue,
                },
                None => false,
            };
            match (act, mark) {
                (true, _) => found.push(name),
                (false, Some(mark)) => {
                    quiet.insert(name, (mark, record.and_then(|r| r.expires_at)));
                }
                (false, None) => {}
            }
        }
        // Sessions gone since are forgotten with the rest of the last pass.
        self.quiet = quiet;
        Ok(found)
    }
}
