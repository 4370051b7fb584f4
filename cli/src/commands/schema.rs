//! `planlock schema`: the JSON Schema of the plan document (`schema/plan-v1.schema.json`), the
//! same document in either format.

use crate::error::{CliError, EXIT_VALID};
use crate::output::Output;

pub fn schema(out: &mut Output) -> Result<u8, CliError> {
    out.document(&planlock::plan_json_schema());
    Ok(EXIT_VALID)
}
