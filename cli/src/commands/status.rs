//! `planlock status`: the session (id, completed cycles, plan hash), its pin, and any paused
//! cycle; with `--history N`, the session's last N finished cycles. A read: it writes nothing and takes neither the session's lock nor its lease, so it
//! answers while a cycle runs.

use planlock::review::Turn;
use planlock::review::access::Access;
use planlock::session::{
    BundlePinV1, CycleEntry, InterventionRecord, PauseRef, ReviewDecision, SessionState, Timestamp,
};
use serde::Serialize;

use crate::args::SessionPlace;
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};
use crate::report::{LEFTOVER_WHY, Leftover};

/// The report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusReport {
    /// Where the session stands: `new` (nothing run), `paused`, `expired` (paused past its
    /// expiry), `ready`; a session whose first cycle is paused is `paused`, though nothing is
    /// saved yet.
    status: &'static str,
    /// The session's id: the saved session's, or the paused first cycle's.
    session_id: Option<uuid::Uuid>,
    session: Option<SessionState>,
    intervention: Option<InterventionRecord>,
    pin: Option<BundlePinV1>,
    leftover_record: Option<Leftover>,
    /// The decision recorded on the paused cycle, waiting for the next run.
    decision: Option<ReviewDecision>,
    /// Whose turn it is on a pause that needs several approvals and has some (issue 58).
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<planlock::review::Turn>,
    /// Whether the paused cycle's pause has expired.
    expired: bool,
    /// The last finished cycles, newest first, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<Vec<CycleEntry>>,
    /// History lines or rows that could not be read, skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable_history: Option<usize>,
}

impl Report for StatusReport {
    fn text(&self, out: &mut Text) {
        match (&self.session, &self.intervention) {
            (None, Some(i)) => {
                line!(out, "session: {} ({}: its first cycle, nothing completed yet)", i.session_id, self.status)
            }
            (None, None) => line!(out, "session: none yet (the next run is a Cold Start)"),
            (Some(s), _) => {
                line!(out, "session: {} ({})", s.session_id, self.status);
                line!(out, "completed cycles: {}", s.cycle);
                line!(out, "plan hash: {}", s.last_execution_plan_hash);
                line!(out, "saved: {}", s.updated_at);
            }
        }
        match &self.pin {
            None => line!(out, "bundle pin: none yet (the first completed cycle pins the providers)"),
            Some(p) => line!(
                out,
                "bundle pin: `{}`, strategy `{}`, memory provider `{}` (since {})",
                p.bundle_id,
                p.strategy_provider_id.as_deref().unwrap_or("(older format)"),
                p.memory_provider_id.as_deref().unwrap_or("(older format)"),
                p.pinned_at
            ),
        }
        if let Some(r) = &self.leftover_record {
            line!(out, "leftover record of cycle {} (removed at the next run or resume): {LEFTOVER_WHY}", r.cycle);
        }
        match &self.intervention {
            None => line!(out, "paused cycle: none"),
            Some(i) => {
                line!(
                    out,
                    "paused cycle: {} at step `{}` ({}), validator `{}`: {}",
                    i.cycle,
                    i.step_id,
                    i.step_type,
                    i.validator.id,
                    i.reason
                );
                if let Some(digest) = &i.shown_digest {
                    line!(out, "shown: digest {digest} (planlock inbox show prints it)");
                }
                match (&i.expires_at, self.expired) {
                    (Some(at), true) => line!(out, "expired: {at}; it can only be abandoned"),
                    (Some(at), false) => line!(out, "expires: {at}"),
                    (None, _) => {}
                }
                match &self.decision {
                    Some(d) => {
                        line!(out, "decision: {} by {} at {} (acted on at the next run)", d.verdict, d.who(), d.at)
                    }
                    None => match &self.turn {
                        Some(turn) => line!(out, "decision: none yet: {turn}"),
                        None => line!(out, "decision: none yet"),
                    },
                }
            }
        }
        if let Some(history) = &self.history {
            history_text(out, history, self.unreadable_history.unwrap_or(0));
        }
    }
}

/// The history, newest first: a line per cycle, then one per step.
fn history_text(out: &mut Text, history: &[CycleEntry], unreadable: usize) {
    line!(out, "history: {} finished cycles, newest first", history.len());
    for entry in history {
        let took = entry.report.steps.iter().map(|s| s.duration).sum::<std::time::Duration>();
        let usage = match entry.report.usage() {
            Some(u) => format!(", {} tokens in, {} out", u.input, u.output),
            None => String::new(),
        };
        line!(
            out,
            "  cycle {} {} at {} ({:.1?} in steps{usage})",
            entry.cycle,
            entry.end.as_str(),
            entry.finished_at,
            took
        );
        if let Some(f) = &entry.failure {
            match &f.step_id {
                Some(step) => line!(out, "    failure: {} ({:?}) at step `{step}`", f.code, f.class),
                None => line!(out, "    failure: {} ({:?})", f.code, f.class),
            }
            if let Some(message) = &f.message {
                line!(out, "      {message}");
            }
        }
        for step in &entry.report.steps {
            let tokens = step.usage.map(|u| format!(", {} + {} tokens", u.input, u.output)).unwrap_or_default();
            line!(out, "    #{} {} {:?} {:.1?}{tokens}", step.index, step.label(), step.status, step.duration);
            for warning in &step.warnings {
                line!(out, "      warning: {}", warning.message);
            }
        }
        for i in &entry.report.interventions {
            line!(out, "    paused at `{}` by validator `{}`: {}", i.step_id, i.validator_id, i.reason);
        }
        for o in entry.report.overrides.iter().map(|o| &o.approved) {
            line!(out, "    override at `{}` of `{}`: {}", o.step_id, o.validator_id, o.justification);
        }
    }
    if unreadable > 0 {
        line!(out, "history: {unreadable} lines could not be read and were skipped");
    }
}

pub fn status(out: &mut Output, place: &SessionPlace, history: Option<usize>) -> Result<u8, CliError> {
    let records = place.locate()?.records()?;
    let loaded = planlock::block_on(async {
        let (session, intervention, pin) =
            (records.load().await?, records.load_intervention().await?, records.load_pin().await?);
        let decided = match &intervention {
            Some(record) => Some(records.decisions_on(&PauseRef::of(record)).await?),
            None => None,
        };
        // Whose turn it is, where installed rules say who may approve.
        let rules = records.installed_access().await.ok().flatten().and_then(|i| Access::installed(&i).ok());
        let turn = match (&decided, &intervention, rules) {
            (Some(d), Some(record), Some(rules)) if d.decision.is_none() && !d.approvals.is_empty() => {
                Some(Turn::of(&rules.rule(&record.validator.id), d.approvals.clone()))
            }
            _ => None,
        };
        let decision = decided.and_then(|d| d.decision);
        let history = match history {
            Some(limit) => Some(records.history(limit).await?),
            None => None,
        };
        Ok::<_, planlock::session::SessionError>((session, intervention, pin, (decision, turn), history))
    });
    let (session, mut intervention, pin, (decision, turn), history) = loaded.map_err(|e| CliError::of(&e))?;
    let expired = intervention.as_ref().is_some_and(|r| r.expired_at(Timestamp::now()));
    // A read writes nothing: a leftover record is reported, and the next boot removes it.
    let leftover = match (&intervention, &session) {
        (Some(record), Some(s)) if record.is_leftover_of(s) => intervention.take(),
        _ => None,
    };
    let leftover_record = leftover.as_ref().map(Leftover::of);
    let status = match (&intervention, expired, &session) {
        (Some(_), true, _) => "expired",
        (Some(_), false, _) => "paused",
        (None, _, Some(_)) => "ready",
        (None, _, None) => "new",
    };
    let session_id = session.as_ref().map(|s| s.session_id).or(intervention.as_ref().map(|i| i.session_id));
    let unreadable_history = history.as_ref().map(|h| h.unreadable);
    let history = history.map(|h| h.entries);
    out.report(&StatusReport {
        status,
        session_id,
        session,
        intervention,
        pin,
        leftover_record,
        decision,
        turn,
        expired,
        history,
        unreadable_history,
    });
    Ok(EXIT_VALID)
}
