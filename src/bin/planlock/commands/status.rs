//! `planlock status`: the session (id, completed cycles, plan hash), its pin, and any paused
//! cycle. A read: it writes nothing.

use std::fmt::Write as _;

use planlock::session::{BundlePinV1, InterventionRecord, SessionState};
use serde::Serialize;

use crate::args::{Format, SessionPlace};
use crate::error::{CliError, EXIT_VALID};
use crate::report::{LEFTOVER_WHY, Leftover, line};

/// The JSON report.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusReport<'a> {
    session: &'a Option<SessionState>,
    intervention: &'a Option<InterventionRecord>,
    pin: &'a Option<BundlePinV1>,
    leftover_record: Option<Leftover>,
}

pub fn status(out: &mut String, place: &SessionPlace, format: Format) -> Result<u8, CliError> {
    let opened = place.place().open().map_err(|e| CliError::of_place(&e))?;
    let store = opened.session_store();
    let loaded = store.load().and_then(|s| Ok((s, store.load_intervention()?, store.load_pin()?)));
    let (session, mut pending, pin) = loaded.map_err(|e| CliError::of(&e))?;
    // A read writes nothing: a leftover record is reported, and the next boot removes it.
    let leftover = match (&pending, &session) {
        (Some(record), Some(s)) if record.is_leftover_of(s) => pending.take(),
        _ => None,
    };
    match format {
        Format::Json => {
            let report = StatusReport {
                session: &session,
                intervention: &pending,
                pin: &pin,
                leftover_record: leftover.as_ref().map(Leftover::of),
            };
            line!(out, "{}", serde_json::to_string(&report).unwrap_or_default())
        }
        Format::Text => {
            match &session {
                None => line!(out, "session: none yet (the next run is a Cold Start)"),
                Some(s) => {
                    line!(out, "session: {}", s.session_id);
                    line!(out, "completed cycles: {}", s.cycle);
                    line!(out, "plan hash: {}", s.last_execution_plan_hash);
                    line!(out, "saved: {}", s.updated_at);
                }
            }
            match &pin {
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
            if let Some(r) = &leftover {
                line!(out, "leftover record of cycle {} (removed at the next run or resume): {LEFTOVER_WHY}", r.cycle);
            }
            match &pending {
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
    Ok(EXIT_VALID)
}
