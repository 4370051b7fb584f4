//! `planlock hash`: the plan hash (`lastExecutionPlanHash`) of a plan with its policy profile.

use std::fmt::Write as _;
use std::path::Path;

use planlock::{HashParts, PolicyProfile};
use serde::Serialize;

use crate::error::{CliError, EXIT_VALID};
use crate::report::line;

/// `--parts`: the hash and its per-part digests.
#[derive(Serialize)]
struct HashReport {
    hash: planlock::Digest,
    parts: HashParts,
}

pub fn hash(out: &mut String, policy_root: &Path, parts: bool, file: &Path) -> Result<u8, CliError> {
    let plan = super::load_plan(file).map_err(|failure| failure.error)?;
    let profile = PolicyProfile::load(policy_root, &plan.metadata().policy_profile).map_err(|e| CliError::of(&e))?;
    let digest = planlock::plan_hash(&profile, &plan);
    if parts {
        let report = HashReport { hash: digest, parts: HashParts::of(&profile, &plan) };
        line!(out, "{}", serde_json::to_string(&report).unwrap_or_default());
    } else {
        line!(out, "{digest}");
    }
    Ok(EXIT_VALID)
}
