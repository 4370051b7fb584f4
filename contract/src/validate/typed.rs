//! The check of a typed plan: what its types cannot guarantee (string rules, free-form limits),
//! asked as a quick yes/no first and walked with JSON Pointers only to report, then the step-list
//! rules.

use crate::contract::object::Contract;
use crate::contract::plan::{ExecutionPlan, PAYLOAD_DEPTH, TOP_LEVEL_DEPTH, ValidatorSignature};
use crate::contract::problem::{Problem, ProblemCode};
use crate::contract::rules;
use crate::contract::steps::StepPayload;
use crate::json::pointer::JsonPointer;

use super::step_list::{MetaTopK, StepFacts, duplicate_ids, plan_rules, structure_rules};

/// Whether the typed parts of `plan` (metadata, validator signatures, payloads) pass, without
/// reporting, at the depths `check_plan` walks them at.
pub(super) fn typed_parts_ok(plan: &ExecutionPlan, limits_checked: bool) -> bool {
    plan.metadata.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.validators.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.post_validators.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.steps.iter().all(|s| !s.payload.has_typed_checks() || s.payload.typed_ok(limits_checked, PAYLOAD_DEPTH))
}

/// Checks a typed plan: what its types cannot guarantee, then the plan-level rules.
pub(super) fn check_plan(plan: &ExecutionPlan, rules: StepListRules, limits_checked: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut path = JsonPointer::new();
    path.limits_checked = limits_checked;
    // Each part is asked the quick question first (`typed_ok`, at its depth as `Path` counts
    // it); only a part with a problem is walked again to report it.
    if !plan.metadata.typed_ok(limits_checked, TOP_LEVEL_DEPTH) {
        path.push_key("metadata");
        plan.metadata.check_typed(&mut path, &mut out);
        path.pop();
    }
    check_signatures_typed(&plan.validators, "validators", &mut path, &mut out);
    check_signatures_typed(&plan.post_validators, "postValidators", &mut path, &mut out);
    path.push_key("steps");
    // Inline for a valid plan's at most twelve steps: no allocation.
    let mut facts: smallvec::SmallVec<[StepFacts<'_>; 12]> = smallvec::SmallVec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let id_ok = match rules::step_id(&step.id) {
            Ok(()) => true,
            Err(msg) => {
                out.push(Problem::new(ProblemCode::InvalidValue, format!("/steps/{i}/id"), msg));
                false
            }
        };
        if step.payload.has_typed_checks() && !step.payload.typed_ok(limits_checked, PAYLOAD_DEPTH) {
            path.push_index(i);
            path.push_key("payload");
            step.payload.check_typed(&mut path, &mut out);
            path.pop();
            path.pop();
        }
        let payload_top_k = match &step.payload {
            StepPayload::RetrieveMemory(p) => Some(p.top_k.get()),
            _ => None,
        };
        facts.push(StepFacts {
            index: i,
            id: id_ok.then_some(step.id.as_str()),
            ty: Some(step.step_type()),
            suggested: None,
            payload_top_k,
        });
    }
    let top_k = plan.metadata.top_k.map_or(MetaTopK::Absent, |k| MetaTopK::Present(k.get()));
    match rules {
        StepListRules::All => plan_rules(&facts, top_k, &mut out),
        StepListRules::IdsOnly => {
            duplicate_ids(&facts, &mut out);
            debug_assert!(
                {
                    let mut structure = Vec::new();
                    structure_rules(&facts, top_k, &mut structure);
                    structure.is_empty()
                },
                "the builder's types let through a plan the step-list rules reject"
            );
        }
    }
    out
}

/// Which step-list rules a typed plan still needs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepListRules {
    /// Every rule: the plan's shape is unknown.
    All,
    /// Only duplicate ids: the typestate builder's types already guarantee order, uniqueness of
    /// types, mandatory steps and topK.
    IdsOnly,
}

pub(super) fn check_signatures_typed<'a>(
    sigs: &'a Vec<ValidatorSignature>,
    key: &'static str,
    path: &mut JsonPointer<'a>,
    out: &mut Vec<Problem>,
) {
    if sigs.typed_ok(path.limits_checked, TOP_LEVEL_DEPTH) {
        return;
    }
    path.push_key(key);
    sigs.check_typed(path, out);
    path.pop();
}
