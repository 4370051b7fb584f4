//! `planlock plan`: a model writes the plan for a goal (CONTRACT §19), with the grammar of valid
//! plans; the validator checks what it wrote before anything prints it as a plan.

use std::path::{Path, PathBuf};

use planlock::handlers::{Constraint, ModelPlanner};
use planlock::{Digest, PolicyProfile};
use serde::Serialize;
use serde_json::Value;

use crate::args::PlansOf;
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// Where to ask, and for what.
pub struct Ask<'a> {
    /// The server's base URL (`…/v1`).
    pub url: &'a str,
    /// The model's name.
    pub model: &'a str,
    /// The goal.
    pub goal: &'a str,
    /// `grammar`, `json-schema` or `none`.
    pub constraint: &'a str,
    /// The request's seed.
    pub seed: u32,
    /// Where to write the plan, instead of standard output.
    pub out: Option<PathBuf>,
}

/// The plan, its hash with a profile, and where it went.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanReport {
    plan: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    hash: Option<Digest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    written_to: Option<PathBuf>,
    model: Option<String>,
    elapsed_ms: u128,
}

impl Report for PlanReport {
    /// The plan's JSON, indented (a file of it would hold the same), or where it was written.
    fn text(&self, out: &mut Text) {
        match &self.written_to {
            Some(path) => line!(out, "wrote the plan to {}", path.display()),
            None => {
                for l in format!("{:#}", self.plan).lines() {
                    line!(out, "{l}");
                }
            }
        }
        if let Some(hash) = &self.hash {
            line!(out, "plan hash {hash}");
        }
    }
}

pub fn plan(out: &mut Output, ask: Ask<'_>, of: &PlansOf) -> Result<u8, CliError> {
    let Some(constraint) = Constraint::ALL.iter().find(|(n, _)| *n == ask.constraint).map(|(_, c)| *c) else {
        let names: Vec<&str> = Constraint::ALL.iter().map(|(n, _)| *n).collect();
        return Err(CliError::usage(
            "usage",
            format!("--constraint `{}`: one of {}", ask.constraint, names.join(", ")),
        ));
    };
    let (request, root) = super::grammar::request(of)?;
    let planner = ModelPlanner::new(ask.url, ask.model).request(request).constraint(constraint).seed(ask.seed);
    let planned = planner.plan_blocking(ask.goal).map_err(|e| CliError::of(&e))?;
    // A plan of another profile than the one asked for is refused, never hashed with its own.
    let written_for = &planned.plan.metadata().policy_profile;
    if let Some(asked) = of.profile.as_deref().filter(|asked| asked != written_for) {
        return Err(CliError {
            exit: crate::error::EXIT_CYCLE_FAIL,
            code: "plan-profile",
            message: format!(
                "the model wrote a plan for profile `{}`, not `{}` (--profile); nothing was written",
                planlock::printable(written_for),
                planlock::printable(asked)
            ),
        });
    }
    let hash = root.map(|root| hash_of(root, &planned.plan)).transpose()?;
    let plan: Value = serde_json::from_str(&planned.plan.to_json()).unwrap_or_default();
    if let Some(path) = &ask.out {
        std::fs::write(path, planned.plan.to_json() + "\n").map_err(|e| {
            CliError::usage("cannot-write", format!("cannot write the plan to {}: {e}", path.display()))
        })?;
    }
    out.report(&PlanReport {
        plan,
        hash,
        written_to: ask.out,
        model: planned.asked.model,
        elapsed_ms: planned.asked.elapsed.as_millis(),
    });
    Ok(EXIT_VALID)
}

/// The plan's hash with the profile it names under `root`.
fn hash_of(root: &Path, plan: &planlock::ValidPlan) -> Result<Digest, CliError> {
    let profile = PolicyProfile::load(root, &plan.metadata().policy_profile).map_err(|e| CliError::of(&e))?;
    Ok(planlock::plan_hash(&profile, plan))
}
