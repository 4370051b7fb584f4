//! The plan schema as strict structured-output engines take it (OpenAI strict mode, XGrammar,
//! llguidance): made from the plan's JSON Schema by rewriting what they refuse.
//!
//! - `oneOf` becomes `anyOf`, `const` a one-value `enum`;
//! - every property is required; an optional one may be `null` instead ("type or null"), and
//!   [`remove_optional_nulls`] takes those nulls out before the plan is validated;
//! - a string with a pattern keeps the pattern and loses its lengths;
//! - a free-form object (`vars`, `config`, `meta`) holds the keys the request names, each a
//!   scalar, and no other (`additionalProperties: false` everywhere);
//! - `extensions`' `items: false` becomes strings (it must still be empty).

use serde_json::{Map, Value, json};

use super::GrammarRequest;

/// What the strict schema cannot say, and the validator checks: a plan it accepts may still
/// be rejected for one of these.
pub const JSON_SCHEMA_CANNOT_SAY: &[&str] = &[
    "the canonical order of the steps, each type at most once, the mandatory steps present",
    "unique step ids and unique keys",
    "metadata.topK present with RetrieveMemory and equal to its topK",
    "extensions empty",
    "the lengths of strings that have a pattern (a step id's 1 to 128 characters)",
    "the document's size, depth and number magnitudes",
];

/// The strict profile of `schema` for `request`.
pub(crate) fn strict_schema(mut schema: Value, request: &GrammarRequest) -> Value {
    if let Some(object) = schema.as_object_mut() {
        object.remove("$id");
        object.remove("$schema");
    }
    schema["properties"]["extensions"] = json!({
        "type": "array", "items": { "type": "string" }, "maxItems": 0,
        "description": "Reserved: always the empty array.",
    });
    let free_form = [
        ("PromptAssemblePayload", "vars", &request.vars),
        ("LlmCallPayload", "config", &request.config),
        ("PersistSessionPayload", "meta", &request.meta),
    ];
    for (def, field, keys) in free_form {
        schema["$defs"][def]["properties"][field] = scalars_object(keys);
    }
    rewrite(&mut schema);
    schema
}

/// An object of exactly these keys, each a scalar.
fn scalars_object(keys: &[String]) -> Value {
    let scalar = json!({ "type": ["string", "number", "boolean", "null"] });
    let properties: Map<String, Value> = keys.iter().map(|k| (k.clone(), scalar.clone())).collect();
    json!({ "type": "object", "properties": properties, "required": keys, "additionalProperties": false })
}

/// Rewrites every schema under `value` (see the module docs).
fn rewrite(value: &mut Value) {
    let Some(object) = value.as_object_mut() else {
        if let Some(items) = value.as_array_mut() {
            items.iter_mut().for_each(rewrite);
        }
        return;
    };
    if let Some(one_of) = object.remove("oneOf") {
        object.insert("anyOf".into(), one_of);
    }
    if let Some(constant) = object.remove("const") {
        object.insert("enum".into(), json!([constant]));
    }
    if object.contains_key("pattern") {
        object.remove("minLength");
        object.remove("maxLength");
    }
    if object.get("type") == Some(&json!("object")) && object.get("additionalProperties") == Some(&json!(true)) {
        object.insert("properties".into(), json!({}));
        object.insert("required".into(), json!([]));
        object.insert("additionalProperties".into(), json!(false));
    }
    if let Some(Value::Object(properties)) = object.get("properties").cloned() {
        let required: Vec<Value> = object.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut rewritten = Map::new();
        for (key, mut property) in properties {
            if !required.contains(&Value::String(key.clone())) {
                property = nullable(property);
            }
            rewritten.insert(key, property);
        }
        let all: Vec<Value> = rewritten.keys().map(|k| Value::String(k.clone())).collect();
        object.insert("properties".into(), Value::Object(rewritten));
        object.insert("required".into(), Value::Array(all));
    }
    for (key, child) in object.iter_mut() {
        if key != "enum" {
            rewrite(child);
        }
    }
}

/// `schema`, or `null`.
fn nullable(schema: Value) -> Value {
    match schema.get("type").cloned() {
        Some(Value::String(ty)) => {
            let mut schema = schema;
            schema["type"] = json!([ty, "null"]);
            schema
        }
        _ => json!({ "anyOf": [schema, { "type": "null" }] }),
    }
}

/// A plan written to the strict schema, its optional fields' nulls taken out, so the validator
/// sees what the plan means: a `null` member of a contract object is a field left out. Free-form
/// objects (`vars`, `config`, `meta`) keep theirs: a null there is a value.
///
/// ```
/// use serde_json::json;
/// let mut plan = json!({ "metadata": { "mode": "chat", "topK": null }, "validators": null,
///     "steps": [{ "payload": { "vars": { "q": null }, "currentDomain": null } }] });
/// planlock_contract::grammar::remove_optional_nulls(&mut plan);
/// assert_eq!(plan, json!({ "metadata": { "mode": "chat" },
///     "steps": [{ "payload": { "vars": { "q": null } } }] }));
/// ```
pub fn remove_optional_nulls(plan: &mut Value) {
    match plan {
        Value::Object(object) => {
            object.retain(|_, v| !v.is_null());
            for (key, child) in object.iter_mut() {
                if !matches!(key.as_str(), "vars" | "config" | "meta") {
                    remove_optional_nulls(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(remove_optional_nulls),
        _ => {}
    }
}
