//! The contract's free-form and numeric values: [`AnyValue`] (`any`), [`AnyObject`] (`object`)
//! and [`PositiveInt`] (`integer >= 1`), each held to the document limits however it is made.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::contract::object::{Contract, expect_object, wrong_type};
use crate::contract::problem::{Problem, ProblemCode};
use crate::contract::strict::{StrictSeed, number_problem};
use crate::json::pointer::JsonPointer;
use crate::json::schema::Defs;
use crate::json::{FREE_FORM_DEPTH, MAX_DEPTH, MAX_SAFE_INTEGER, type_name};

/// A positive integer no larger than 2^53 − 1: `topK`, timeouts, budgets, versions.
///
/// ```
/// use planlock_contract::PositiveInt;
/// assert_eq!(PositiveInt::new(5).map(PositiveInt::get), Some(5));
/// assert!(PositiveInt::new(0).is_none());
/// assert!(PositiveInt::new(1 << 53).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PositiveInt(u64);

impl PositiveInt {
    /// The smallest, 1.
    pub const MIN: PositiveInt = PositiveInt(1);

    /// `Some` when `n` is in `1..=2^53-1`.
    pub const fn new(n: u64) -> Option<PositiveInt> {
        if n >= 1 && n <= MAX_SAFE_INTEGER { Some(PositiveInt(n)) } else { None }
    }
    /// The value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl From<std::num::NonZeroU32> for PositiveInt {
    fn from(n: std::num::NonZeroU32) -> Self {
        PositiveInt(u64::from(n.get()))
    }
}

impl fmt::Display for PositiveInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for PositiveInt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = PositiveInt;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a positive integer at most {MAX_SAFE_INTEGER}")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<PositiveInt, E> {
                PositiveInt::new(n).ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(n), &self))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<PositiveInt, E> {
                Err(E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<PositiveInt, E> {
                Err(E::invalid_value(de::Unexpected::Float(n), &self))
            }
        }
        d.deserialize_u64(V)
    }
}

impl Contract for PositiveInt {
    fn json_schema(_: &mut Defs) -> Value {
        serde_json::json!({ "type": "integer", "minimum": 1, "maximum": MAX_SAFE_INTEGER })
    }
    fn check_value<'a>(v: &'a Value, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
        match v {
            Value::Number(n) => {
                if n.as_u64().and_then(PositiveInt::new).is_none() {
                    out.push(Problem::new(
                        ProblemCode::InvalidValue,
                        path.pointer(),
                        format!("expected a positive integer at most {MAX_SAFE_INTEGER}, found {n}"),
                    ));
                }
            }
            _ => wrong_type(v, "a positive integer", path, out),
        }
    }
}

/// A free-form JSON value (the contract's `any`), held to the document limits: no duplicate
/// keys, nesting within [`MAX_DEPTH`], integers within 2^53 − 1.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct AnyValue(pub Value);

/// A free-form JSON object (the contract's `object`), held to the same limits as [`AnyValue`].
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(transparent)]
pub struct AnyObject(pub Map<String, Value>);

impl From<Value> for AnyValue {
    fn from(v: Value) -> Self {
        AnyValue(v)
    }
}

impl From<Map<String, Value>> for AnyObject {
    fn from(m: Map<String, Value>) -> Self {
        AnyObject(m)
    }
}

impl std::ops::Deref for AnyValue {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.0
    }
}

impl std::ops::Deref for AnyObject {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl AnyObject {
    /// An empty object.
    pub fn new() -> Self {
        AnyObject(Map::new())
    }
    /// Adds a member, builder style.
    ///
    /// ```
    /// use planlock_contract::AnyObject;
    /// let vars = AnyObject::new().with("name", "Ada");
    /// assert_eq!(vars["name"], "Ada");
    /// ```
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.0.insert(key.into(), value.into());
        self
    }
}

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        StrictSeed { depth: FREE_FORM_DEPTH, ctx: None }.deserialize(d).map(AnyValue)
    }
}

impl<'de> Deserialize<'de> for AnyObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match (StrictSeed { depth: FREE_FORM_DEPTH, ctx: None }).deserialize(d)? {
            Value::Object(m) => Ok(AnyObject(m)),
            other => Err(de::Error::custom(format_args!("expected an object, found {}", type_name(&other)))),
        }
    }
}

impl crate::json::canonical::Canonical for PositiveInt {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        crate::json::canonical::Canonical::write_canonical(&self.0, out);
    }
}

impl crate::json::size::JsonLenBound for PositiveInt {
    fn json_len_bound(&self) -> usize {
        self.0.json_len_bound()
    }
}

impl crate::json::size::JsonLenBound for AnyValue {
    fn json_len_bound(&self) -> usize {
        self.0.json_len_bound()
    }
}

impl crate::json::size::JsonLenBound for AnyObject {
    fn json_len_bound(&self) -> usize {
        self.0.iter().fold(2, |n, (k, v)| n + k.json_len_bound() + 2 + v.json_len_bound())
    }
}

impl crate::json::canonical::Canonical for AnyValue {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        crate::json::canonical::write_value(out, &self.0);
    }
}

impl crate::json::canonical::Canonical for AnyObject {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        crate::json::canonical::write_map(out, &self.0);
    }
}

/// Whether [`scan_limits`] would find nothing in `v` at `depth`.
fn limits_ok(v: &Value, depth: usize) -> bool {
    match v {
        Value::Number(n) => number_problem(n).is_none(),
        Value::Array(items) => depth <= MAX_DEPTH && items.iter().all(|item| limits_ok(item, depth + 1)),
        Value::Object(map) => depth <= MAX_DEPTH && map.values().all(|item| limits_ok(item, depth + 1)),
        _ => true,
    }
}

impl Contract for AnyValue {
    fn json_schema(_: &mut Defs) -> Value {
        // Any JSON value; its depth and number limits are planlock's own checks.
        Value::Bool(true)
    }
    const TYPED_CHECKS: bool = true;
    fn typed_ok(&self, limits_checked: bool, depth: usize) -> bool {
        limits_checked || limits_ok(&self.0, depth)
    }
    fn check_value<'a>(_: &'a Value, _: &mut JsonPointer<'a>, _: &mut Vec<Problem>) {}
    fn check_typed<'a>(&'a self, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
        if !path.limits_checked {
            scan_limits(&self.0, path, out);
        }
    }
}

impl Contract for AnyObject {
    fn json_schema(_: &mut Defs) -> Value {
        // Any members: stated, so that generated types allow them.
        serde_json::json!({ "type": "object", "additionalProperties": true })
    }
    const TYPED_CHECKS: bool = true;
    fn typed_ok(&self, limits_checked: bool, depth: usize) -> bool {
        limits_checked || (depth <= MAX_DEPTH && self.0.values().all(|item| limits_ok(item, depth + 1)))
    }
    fn check_value<'a>(v: &'a Value, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
        expect_object(v, path, out);
    }
    fn check_typed<'a>(&'a self, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
        if path.limits_checked {
            return;
        }
        if path.depth() > MAX_DEPTH {
            return out.push(too_deep(path));
        }
        for (k, v) in &self.0 {
            path.push_key(k.as_str());
            scan_limits(v, path, out);
            path.pop();
        }
    }
}

fn too_deep(path: &JsonPointer<'_>) -> Problem {
    Problem::new(ProblemCode::TooDeep, path.pointer(), format!("nesting deeper than {MAX_DEPTH} levels"))
}

/// Checks the document limits (depth, number range) on a value that did not come through the
/// strict parser, such as a [`Value`] or a plan built in Rust.
pub fn scan_limits<'a>(v: &'a Value, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) {
    match v {
        Value::Number(n) => {
            if let Some(msg) = number_problem(n) {
                out.push(Problem::new(ProblemCode::InvalidValue, path.pointer(), msg));
            }
        }
        Value::Array(items) => {
            if path.depth() > MAX_DEPTH {
                return out.push(too_deep(path));
            }
            for (i, item) in items.iter().enumerate() {
                path.push_index(i);
                scan_limits(item, path, out);
                path.pop();
            }
        }
        Value::Object(map) => {
            if path.depth() > MAX_DEPTH {
                return out.push(too_deep(path));
            }
            for (k, item) in map {
                path.push_key(k.as_str());
                scan_limits(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}
