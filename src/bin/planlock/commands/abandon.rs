//! `planlock abandon`: remove the paused cycle's record; the session stays as it was.

use std::fmt::Write as _;

use crate::args::SessionPlace;
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::report::line;

pub fn abandon(out: &mut String, place: &SessionPlace) -> Result<u8, CliError> {
    let place = place.place();
    let opened = place.open().map_err(|e| CliError::of_place(&e))?;
    let store = opened.session_store();
    let abandoned = store.load_intervention().and_then(|record| match record {
        Some(record) => store.remove_intervention().map(|()| Some(record)),
        None => Ok(None),
    });
    match abandoned.map_err(|e| CliError::of(&e))? {
        Some(record) => {
            line!(
                out,
                "abandoned cycle {} (paused at step `{}`); the session is as it was",
                record.cycle,
                record.step_id
            );
            Ok(EXIT_VALID)
        }
        None => Err(CliError {
            exit: EXIT_CYCLE_FAIL,
            code: "nothing-paused",
            message: format!("no cycle is paused in {place}; there is nothing to abandon"),
        }),
    }
}
