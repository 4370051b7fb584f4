//! `planlock abandon`: give up the paused cycle as a runtime does (its outcome logged, its record
//! removed); the session stays as it was.

use serde::Serialize;

use crate::args::SessionPlace;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The cycle abandoned.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AbandonReport {
    abandoned_cycle: u64,
    step_id: String,
}

impl Report for AbandonReport {
    fn text(&self, out: &mut Text) {
        line!(
            out,
            "abandoned cycle {} (paused at step `{}`); the session is as it was",
            self.abandoned_cycle,
            self.step_id
        );
    }
}

pub fn abandon(out: &mut Output, place: &SessionPlace) -> Result<u8, CliError> {
    let place = place.locate()?;
    let store = place.open()?.into_session_store();
    let abandoned = planlock::block_on(planlock::runtime::abandon_paused(store.as_ref()));
    match abandoned.map_err(|e| CliError::of(&e))? {
        Some(record) => {
            out.report(&AbandonReport { abandoned_cycle: record.cycle, step_id: record.step_id });
            Ok(EXIT_VALID)
        }
        None => Err(CliError {
            exit: EXIT_CYCLE_FAIL,
            code: "nothing-paused",
            message: format!("no cycle is paused in {place}; there is nothing to abandon"),
        }),
    }
}
