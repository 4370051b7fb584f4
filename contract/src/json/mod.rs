//! Layer 0: JSON as the contract reads and writes it: the document limits, JSON Pointers
//! ([`pointer`](mod@pointer)), the canonical (RFC 8785) writer ([`canonical`]), the size bound of a plan's
//! JSON form ([`size`]) and JSON Schema building blocks ([`schema`]). It imports nothing else of
//! the crate; everything else may import it.

pub mod canonical;
pub mod pointer;
pub mod schema;
pub mod size;

use serde_json::Value;

/// The largest plan document accepted, in bytes (1 MiB). Larger input is `too-large`.
pub const MAX_PLAN_BYTES: usize = 1 << 20;

/// The deepest nesting accepted: the plan's root object is depth 1, `steps` depth 2, a step
/// depth 3, its payload depth 4. Deeper input is `too-deep`.
pub const MAX_DEPTH: usize = 64;

/// The largest integer magnitude accepted anywhere (2^53 − 1): every number must survive a
/// round trip through an IEEE-754 double, as in every other plan producer.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Free-form values appear only as payload fields, at `/steps/N/payload/FIELD`: depth 5.
pub const FREE_FORM_DEPTH: usize = 5;

/// The name of a JSON value's type, for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
