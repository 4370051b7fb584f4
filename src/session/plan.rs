//! The plan a session runs, `ops/runtime/plan.json` (CONTRACT §21): its document beside the hash
//! that pins it, kept with the end of the session's first cycle, so that a process acting on the
//! session's decided pause (a worker) resumes it without being handed
//! the plan again. A plan given that differs is still refused (its hash is not the session's).

use serde::{Deserialize, Serialize};

use crate::contract::problem::Rejection;
use crate::hash::Digest;
use crate::json::MAX_PLAN_BYTES;
use crate::validate::ValidPlan;

/// The plan file, relative to the store's root.
pub const PLAN_FILE: &str = "ops/runtime/plan.json";

/// The largest plan file read: a plan's largest document
/// ([`MAX_PLAN_BYTES`]) and room for its hash.
pub const MAX_PLAN_FILE_BYTES: u64 = MAX_PLAN_BYTES as u64 + 4096;

/// The plan a session runs, as it keeps it.
///
/// ```
/// use planlock::session::PlanDocument;
/// let plan = planlock::ValidPlan::from_str(include_str!("../../examples/plans/demo_plan.json"))?;
/// let kept = PlanDocument::of(&plan, planlock::hash::Digest::of(b"plan and policy"));
/// assert_eq!(kept.plan()?, plan, "the document is the plan, validated again when read");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct PlanDocument {
    /// The plan hash the session runs under (the plan and its policy): the session's own.
    pub plan_hash: Digest,
    /// The plan's JSON document.
    pub plan: serde_json::Value,
}

crate::contract::object::map_only_serde!(PlanDocument);

impl PlanDocument {
    /// `plan`'s document, kept under `plan_hash`.
    pub fn of(plan: &ValidPlan, plan_hash: Digest) -> PlanDocument {
        PlanDocument { plan_hash, plan: serde_json::to_value(plan).unwrap_or_default() }
    }

    /// The plan, validated again (a kept document is input like any other).
    pub fn plan(&self) -> Result<ValidPlan, Rejection> {
        ValidPlan::from_value(&self.plan)
    }
}
