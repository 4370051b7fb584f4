//! The full report of a JSON document the fast path rejected: walked value by value, the version
//! gate first, so that every problem is named with its pointer.

use serde_json::{Map, Value};

use crate::contract::object::{Contract, expect_object};
use crate::contract::plan::{PLAN_FIELDS, PlanMetadata, STEP_FIELDS, ValidatorSignature};
use crate::contract::problem::{Problem, ProblemCode};
use crate::contract::registry::StepType;
use crate::contract::rules;
use crate::contract::steps::StepPayload;
use crate::contract::value::PositiveInt;
use crate::json::pointer::JsonPointer;
use crate::json::type_name;

use super::step_list::{MetaTopK, StepFacts, plan_rules};

/// Walks a JSON document and reports every problem. The version gate comes first: when it
/// fails, only its problems are reported.
pub(super) fn walk_document(doc: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut path = JsonPointer::new();
    let Some(obj) = expect_object(doc, &path, &mut out) else {
        return out;
    };
    version_gate(obj, &mut out);
    if !out.is_empty() {
        return out;
    }
    for key in obj.keys() {
        if !PLAN_FIELDS.contains(&key.as_str()) {
            out.push(Problem::unknown_field(&path, key, PLAN_FIELDS));
        }
    }
    let top_k = match obj.get("metadata") {
        None => {
            out.push(Problem::missing_field(&path, "metadata"));
            MetaTopK::Invalid
        }
        Some(m) if !m.is_object() => {
            path.push_key("metadata");
            PlanMetadata::check_value(m, &mut path, &mut out);
            path.pop();
            MetaTopK::Invalid
        }
        Some(m) => {
            path.push_key("metadata");
            PlanMetadata::check_value(m, &mut path, &mut out);
            path.pop();
            match m.get("topK") {
                None => MetaTopK::Absent,
                Some(k) => {
                    k.as_u64().and_then(PositiveInt::new).map_or(MetaTopK::Invalid, |n| MetaTopK::Present(n.get()))
                }
            }
        }
    };
    for key in ["validators", "postValidators"] {
        if let Some(v) = obj.get(key) {
            path.push_key(key);
            Vec::<ValidatorSignature>::check_value(v, &mut path, &mut out);
            path.pop();
        }
    }
    match obj.get("steps") {
        None => out.push(Problem::missing_field(&path, "steps")),
        Some(steps) => {
            path.push_key("steps");
            match steps.as_array() {
                None => out.push(Problem::wrong_type(path.pointer(), "an array of steps", steps)),
                Some(items) => {
                    let facts: Vec<_> =
                        items.iter().enumerate().map(|(i, step)| walk_step(i, step, &mut path, &mut out)).collect();
                    plan_rules(&facts, top_k, &mut out);
                }
            }
            path.pop();
        }
    }
    out
}

pub(super) fn version_gate(obj: &Map<String, Value>, out: &mut Vec<Problem>) {
    let root = JsonPointer::new();
    let version_problem = match obj.get("step_contract_version") {
        None => Some(
            "required field `step_contract_version` is missing; this runtime implements contract version \"1\""
                .to_owned(),
        ),
        Some(Value::String(v)) if v == "1" => None,
        Some(Value::String(v)) => {
            Some(format!("contract version \"{v}\" is not supported; this runtime implements \"1\""))
        }
        Some(other) => Some(format!("expected the string \"1\", found {}", type_name(other))),
    };
    if let Some(msg) = version_problem {
        out.push(Problem::new(ProblemCode::UnsupportedVersion, root.child("step_contract_version"), msg));
    }
    let extensions_problem = match obj.get("extensions") {
        None => Some("required field `extensions` is missing; in contract v1 it is `[]`".to_owned()),
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(Value::Array(a)) => Some(format!("extensions must be empty in contract v1; found {} entries", a.len())),
        Some(other) => Some(format!("expected the empty array `[]`, found {}", type_name(other))),
    };
    if let Some(msg) = extensions_problem {
        out.push(Problem::new(ProblemCode::InvalidExtensions, root.child("extensions"), msg));
    }
}

pub(super) fn walk_step<'a>(
    i: usize,
    step: &'a Value,
    path: &mut JsonPointer<'a>,
    out: &mut Vec<Problem>,
) -> StepFacts<'a> {
    let mut facts = StepFacts { index: i, id: None, ty: None, suggested: None, payload_top_k: None };
    path.push_index(i);
    if let Some(obj) = expect_object(step, path, out) {
        for key in obj.keys() {
            if !STEP_FIELDS.contains(&key.as_str()) {
                out.push(Problem::unknown_field(path, key, STEP_FIELDS));
            }
        }
        match obj.get("id") {
            None => out.push(Problem::missing_field(path, "id")),
            Some(Value::String(id)) => match rules::step_id(id) {
                Ok(()) => facts.id = Some(id),
                Err(msg) => out.push(Problem::new(ProblemCode::InvalidValue, path.child("id"), msg)),
            },
            Some(other) => out.push(Problem::wrong_type(path.child("id"), "a string", other)),
        }
        match obj.get("type") {
            None => out.push(Problem::missing_field(path, "type")),
            Some(Value::String(name)) => match StepType::from_wire(name) {
                Some(ty) => facts.ty = Some(ty),
                None => {
                    facts.suggested = StepType::nearest(name);
                    let hint = match facts.suggested {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "the registry has: {}",
                            StepType::ALL.iter().map(|t| t.wire_name()).collect::<Vec<_>>().join(", ")
                        ),
                    };
                    out.push(Problem::new(
                        ProblemCode::UnknownStepType,
                        path.child("type"),
                        format!("`{name}` is not a registered step type; {hint}"),
                    ));
                }
            },
            Some(other) => out.push(Problem::wrong_type(path.child("type"), "a step type name", other)),
        }
        match obj.get("payload") {
            None => out.push(Problem::missing_field(path, "payload")),
            Some(payload) => {
                if let Some(ty) = facts.ty {
                    path.push_key("payload");
                    StepPayload::check_value(ty, payload, path, out);
                    path.pop();
                    if ty == StepType::RetrieveMemory {
                        facts.payload_top_k = payload.get("topK").and_then(Value::as_u64);
                    }
                }
            }
        }
    }
    path.pop();
    facts
}
