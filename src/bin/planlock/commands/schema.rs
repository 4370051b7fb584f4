//! `planlock schema`: the JSON Schema of the plan document (`schema/plan-v1.schema.json`).

use std::fmt::Write as _;

use crate::error::{CliError, EXIT_VALID};
use crate::report::line;

pub fn schema(out: &mut String) -> Result<u8, CliError> {
    line!(out, "{:#}", planlock::plan_json_schema());
    Ok(EXIT_VALID)
}
