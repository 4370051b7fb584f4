//! `planlock hash`: the plan hash (`lastExecutionPlanHash`) of a plan with its policy profile.

use std::path::Path;

use planlock::{HashParts, PolicyProfile};
use serde::Serialize;

use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, json_line, line};

/// The hash, and with `--parts` its per-part digests.
#[derive(Serialize)]
struct HashReport {
    hash: planlock::Digest,
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<HashParts>,
}

impl Report for HashReport {
    /// The hash alone; with `--parts`, the JSON object (the per-part digests are data to read
    /// with a tool).
    fn text(&self, out: &mut Text) {
        match &self.parts {
            None => line!(out, "{}", self.hash),
            Some(_) => line!(out, "{}", json_line(self).trim_end()),
        }
    }
}

pub fn hash(out: &mut Output, policy_root: &Path, parts: bool, file: &Path) -> Result<u8, CliError> {
    let plan = super::load_plan(file).map_err(|failure| failure.error)?;
    let profile = PolicyProfile::load(policy_root, &plan.metadata().policy_profile).map_err(|e| CliError::of(&e))?;
    let hash = planlock::plan_hash(&profile, &plan);
    out.report(&HashReport { hash, parts: parts.then(|| HashParts::of(&profile, &plan)) });
    Ok(EXIT_VALID)
}
