//! The plan document as JSON Schema (draft 2020-12), for producers in other languages
//! (docs/CONTRACT.md, "JSON Schema and TypeScript types").
//!
//! The schema is generated from the same field lists as the validator (`contract_object!` and
//! the registry), so the two cannot drift: [`plan_json_schema`] walks the contract's types and
//! each type states itself ([`Contract::json_schema`]), each string rule beside its check
//! ([`StringRule`](crate::contract::rules::StringRule)). The committed copy,
//! `schema/plan-v1.schema.json`, is checked against this function by a test.
//!
//! The schema accepts every plan planlock accepts. It states what JSON Schema can state; the
//! rules it cannot state are listed in its `description` and only planlock checks them.

use serde_json::{Value, json};

use crate::contract::object::Contract;
#[cfg(test)]
use crate::contract::plan::PLAN_FIELDS;
use crate::contract::plan::{ContractVersion, PlanMetadata, STEP_FIELDS, ValidatorSignature};
use crate::contract::registry::{REGISTRY, StepType, for_each_step};
use crate::contract::rules::STEP_ID;
use crate::json::schema::{Defs, extended};
use crate::json::{MAX_DEPTH, MAX_PLAN_BYTES, MAX_SAFE_INTEGER};

/// The `$id` of the schema of contract version 1.
pub const PLAN_SCHEMA_ID: &str = "https://planlock.dev/schema/plan-v1.schema.json";

/// The rules planlock checks that JSON Schema cannot state, as the schema's description lists
/// them. A plan that passes the schema may still be rejected for one of these.
fn rules_only_planlock_checks() -> Vec<String> {
    let mandatory: Vec<&str> = REGISTRY.iter().filter(|s| s.mandatory).map(|s| s.wire_name).collect();
    vec![
        "the steps follow the canonical order of the registry (order-violation)".to_owned(),
        format!("every mandatory step is present: {} (missing-mandatory-step)", mandatory.join(", ")),
        "no step type and no step id appears twice (duplicate-step-type, duplicate-step-id)".to_owned(),
        "a RetrieveMemory step needs metadata.topK, and its payload topK equals it (top-k-missing, top-k-mismatch)"
            .to_owned(),
        "no object repeats a key (duplicate-key)".to_owned(),
        format!(
            "the document is at most {} KiB and nested at most {MAX_DEPTH} levels deep (too-large, too-deep)",
            MAX_PLAN_BYTES / 1024
        ),
        format!(
            "every number, in free-form values too, has a magnitude of at most {MAX_SAFE_INTEGER} (2^53-1); an \
             integer field holds no fraction (planlock reads 1.0 as a fraction, JSON Schema as an integer)"
        ),
        "no string holds a lone surrogate".to_owned(),
    ]
}

/// The plan document of contract version 1 as a JSON Schema (draft 2020-12).
///
/// ```
/// let schema = planlock_contract::plan_json_schema();
/// assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
/// assert_eq!(schema["properties"]["step_contract_version"]["const"], "1");
/// // One definition per step type, each pairing its `type` with its payload.
/// assert_eq!(schema["$defs"]["LLMCallStep"]["properties"]["type"]["const"], "LLMCall");
/// ```
pub fn plan_json_schema() -> Value {
    let mut defs = Defs::default();
    let metadata = PlanMetadata::json_schema(&mut defs);
    let signatures = Vec::<ValidatorSignature>::json_schema(&mut defs);
    let steps: Vec<Value> = REGISTRY.iter().map(|spec| step_schema(spec.step_type, &mut defs)).collect();
    let mandatory = REGISTRY.iter().filter(|spec| spec.mandatory).count();

    // The steps array: one step per type at most, and every mandatory type present.
    let steps = json!({
        "type": "array",
        "minItems": mandatory,
        "maxItems": REGISTRY.len(),
        "items": { "oneOf": steps },
        "description": "The steps, in canonical order; each type at most once.",
    });
    let properties = json!({
        "step_contract_version": { "const": ContractVersion::WIRE,
            "description": "The contract version: always the string \"1\"." },
        "extensions": { "type": "array", "items": false, "maxItems": 0,
            "description": "Reserved: always the empty array in contract version 1." },
        "metadata": metadata,
        "validators": with_description(signatures.clone(), "Validators run before each step; a missing array means []."),
        "postValidators": with_description(signatures, "Validators run after each step; a missing array means []."),
        "steps": steps,
    });

    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": PLAN_SCHEMA_ID,
        "title": "ExecutionPlan",
        "description": description(),
        "type": "object",
        "properties": properties,
        "required": ["step_contract_version", "extensions", "metadata", "steps"],
        "additionalProperties": false,
        "$defs": defs.into_value(),
    })
}

fn description() -> String {
    let mut text = String::from(
        "A planlock execution plan, contract version 1 (registry revision 1.1): a flat, ordered list of typed \
         steps. This schema states the document's shape: types, required and unknown fields, each step's type \
         paired with its payload, limits and patterns. A plan this schema rejects, planlock rejects. planlock \
         also checks what JSON Schema cannot state:",
    );
    for rule in rules_only_planlock_checks() {
        text.push_str("\n- ");
        text.push_str(&rule);
    }
    text
}

/// The schema of one step: `{ id, type: "<wire name>", payload: <its payload> }`.
fn step_schema(ty: StepType, defs: &mut Defs) -> Value {
    let spec = ty.spec();
    let name = format!("{}Step", spec.wire_name);
    let payload = payload_schema(ty, defs);
    defs.reference(&name.clone(), move |_| {
        let id = extended(json!({ "type": "string" }), (STEP_ID.schema)());
        let properties = json!({
            "id": with_description(id, "The step's id, unique in the plan; the tracing key."),
            "type": { "const": spec.wire_name },
            "payload": payload,
        });
        let kind = if spec.mandatory { "mandatory" } else { "optional" };
        json!({
            "title": name,
            "description": format!(
                "A `{}` step ({kind}, {}; step {} of the canonical order).",
                spec.wire_name,
                spec.failure_kind,
                ty.position() + 1
            ),
            "type": "object",
            "properties": properties,
            "required": STEP_FIELDS,
            "additionalProperties": false,
        })
    })
}

macro_rules! payload_schema {
    ($($variant:ident $wire:literal $method:ident $mand:ident $(($maybe:ident))? $kind:ident $class:ident $payload:ident $result:ident;)*) => {
        /// The schema of a step type's payload.
        fn payload_schema(ty: StepType, defs: &mut Defs) -> Value {
            match ty {
                $( StepType::$variant => <crate::contract::schema::$payload as Contract>::json_schema(defs), )*
            }
        }
    };
}
for_each_step!(payload_schema);

/// `schema` with a description. A `$ref` beside other keywords is fine in draft 2020-12.
fn with_description(schema: Value, text: &str) -> Value {
    extended(schema, json!({ "description": text }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_plan_field_and_step_type_is_stated() {
        let schema = plan_json_schema();
        let properties: Vec<&str> =
            schema["properties"].as_object().into_iter().flatten().map(|(k, _)| k.as_str()).collect();
        let mut fields = PLAN_FIELDS.to_vec();
        fields.sort_unstable();
        assert_eq!(properties, fields);
        assert_eq!(schema["properties"]["steps"]["items"]["oneOf"].as_array().map(Vec::len), Some(12));
        for spec in &REGISTRY {
            let def = &schema["$defs"][format!("{}Step", spec.wire_name)];
            assert_eq!(def["properties"]["type"]["const"], spec.wire_name);
            assert!(def["properties"]["payload"]["$ref"].is_string(), "{}", spec.wire_name);
        }
    }

    #[test]
    fn descriptions_come_from_the_doc_comments() {
        let schema = plan_json_schema();
        let decision = &schema["$defs"]["Decision"];
        assert_eq!(
            decision["description"],
            "A decision record (B-007 v1.1).\n\n`scope` is `\"global\"`, `\"axis\"` or `\"domain:<name>\"`."
        );
        assert_eq!(decision["properties"]["isActive"]["description"], "Whether this version is the one in force.");
        assert_eq!(decision["required"], json!(["id", "isActive", "rootId", "scope", "strength", "text", "version"]));
    }
}
