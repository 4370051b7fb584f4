//! `planlock status`: the session (id, completed cycles, plan hash), its pin, and any paused
//! cycle. A read: it writes nothing and takes neither the session's lock nor its lease, so it
//! answers while a cycle runs.

use planlock::session::{BundlePinV1, InterventionRecord, SessionState};
use serde::Serialize;

use crate::args::SessionPlace;
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};
use crate::report::{LEFTOVER_WHY, Leftover};

/// The report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusReport {
    session: Option<SessionState>,
    intervention: Option<InterventionRecord>,
    pin: Option<BundlePinV1>,
    leftover_record: Option<Leftover>,
}

impl Report for StatusReport {
    fn text(&self, out: &mut Text) {
        match &self.session {
            None => line!(out, "session: none yet (the next run is a Cold Start)"),
            Some(s) => {
                line!(out, "session: {}", s.session_id);
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
            Some(i) => line!(
                out,
                "paused cycle: {} at step `{}` ({}), validator `{}`: {}",
                i.cycle,
                i.step_id,
                i.step_type,
                i.validator.id,
                i.reason
            ),
        }
    }
}

pub fn status(out: &mut Output, place: &SessionPlace) -> Result<u8, CliError> {
    let records = place.place().records().map_err(|e| CliError::of_place(&e))?;
    let loaded = records.load().and_then(|s| Ok((s, records.load_intervention()?, records.load_pin()?)));
    let (session, mut intervention, pin) = loaded.map_err(|e| CliError::of(&e))?;
    // A read writes nothing: a leftover record is reported, and the next boot removes it.
    let leftover = match (&intervention, &session) {
        (Some(record), Some(s)) if record.is_leftover_of(s) => intervention.take(),
        _ => None,
    };
    out.report(&StatusReport { session, intervention, pin, leftover_record: leftover.as_ref().map(Leftover::of) });
    Ok(EXIT_VALID)
}
