//! `planlock plan`: a model plans for a goal (CONTRACT §19) — by default it chooses the optional
//! steps and writes the free texts, and planlock writes the plan of them; with `--whole-plan` it
//! writes the whole document with the grammar of valid plans. The validator checks the plan
//! before anything prints it.

use std::path::{Path, PathBuf};

use planlock::grammar::PlanFrame;
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

/// What planlock writes around the model's choices, as the command line says it.
pub struct Frame {
    /// Ask for the whole plan document instead.
    pub whole_plan: bool,
    /// The plan's `sessionRef`.
    pub session_ref: Option<String>,
    /// A decision that exists.
    pub existing_decision: Option<String>,
    /// An evidence that exists.
    pub existing_evidence: Option<String>,
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
    /// `choices` (the model chose, planlock wrote the plan) or `whole-plan`.
    written_as: &'static str,
    /// What the model wrote, as it wrote it.
    written: String,
    /// The tokens the model wrote, as its server reported them.
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens: Option<u64>,
}

impl Report for PlanReport {
    /// The plan's JSON, indented (a file of it would hold the same), or where it was written and
    /// who wrote what.
    fn text(&self, out: &mut Text) {
        match &self.written_to {
            Some(path) => {
                let tokens = self.completion_tokens.map_or_else(String::new, |n| format!(" ({n} tokens)"));
                match self.written_as {
                    "choices" => line!(
                        out,
                        "wrote the plan to {}: the model chose its steps and texts{tokens}, planlock wrote the rest",
                        path.display()
                    ),
                    _ => line!(out, "wrote the plan to {}: the model wrote it whole{tokens}", path.display()),
                }
            }
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

pub fn plan(out: &mut Output, ask: Ask<'_>, frame: Frame, of: &PlansOf) -> Result<u8, CliError> {
    let Some(constraint) = Constraint::ALL.iter().find(|(n, _)| *n == ask.constraint).map(|(_, c)| *c) else {
        let names: Vec<&str> = Constraint::ALL.iter().map(|(n, _)| *n).collect();
        return Err(CliError::usage(
            "usage",
            format!("--constraint `{}`: one of {}", ask.constraint, names.join(", ")),
        ));
    };
    let (request, root) = super::grammar::request(of)?;
    let mut plan_frame = PlanFrame::new(request);
    if let Some(session_ref) = frame.session_ref {
        plan_frame = plan_frame.session_ref(session_ref);
    }
    if let Some(id) = frame.existing_decision {
        plan_frame = plan_frame.existing_decision(id);
    }
    if let Some(id) = frame.existing_evidence {
        plan_frame = plan_frame.existing_evidence(id);
    }
    let planner = ModelPlanner::new(ask.url, ask.model)
        .frame(plan_frame)
        .whole_plan(frame.whole_plan)
        .constraint(constraint)
        .seed(ask.seed);
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
        written_as: if frame.whole_plan { "whole-plan" } else { "choices" },
        written: planned.asked.written,
        completion_tokens: planned.asked.tokens.1,
    });
    Ok(EXIT_VALID)
}

/// The plan's hash with the profile it names under `root`.
fn hash_of(root: &Path, plan: &planlock::ValidPlan) -> Result<Digest, CliError> {
    let profile = PolicyProfile::load(root, &plan.metadata().policy_profile).map_err(|e| CliError::of(&e))?;
    Ok(planlock::plan_hash(&profile, plan))
}
