//! The document size limit for plans that were never a document: a plan built in Rust is held to
//! [`MAX_PLAN_BYTES`](crate::MAX_PLAN_BYTES) by the length of its own JSON form (what
//! `ValidPlan::to_json` writes), so every way to a `ValidPlan` gives the same verdict.
//!
//! Writing the JSON to count it costs as much as the rest of `build()`, so a cheap upper bound
//! comes first ([`JsonLenBound`]: every string byte counted as a six-byte `\u00XX` escape, every
//! number as the longest one); only a plan whose bound is over the limit is written out and
//! counted exactly.

use std::io;

use serde::Serialize;
use serde_json::Value;

/// An upper bound on the length of a value's compact JSON, whichever writer writes it
/// (`serde_json` or the canonical one): generated for the contract's types from the same field
/// lists as their other code.
pub trait JsonLenBound {
    /// At least the number of bytes the compact JSON of `self` takes.
    fn json_len_bound(&self) -> usize;
}

/// Longer than any number either writer writes (`-1.7976931348623157e308` has 24 characters).
const NUMBER: usize = 24;

/// `"key":` and the comma before the next member, for a key that needs no escape.
pub const fn member_overhead(key: &str) -> usize {
    key.len() + 4
}

impl JsonLenBound for str {
    fn json_len_bound(&self) -> usize {
        self.len() * 6 + 2
    }
}

impl JsonLenBound for String {
    fn json_len_bound(&self) -> usize {
        self.as_str().json_len_bound()
    }
}

impl JsonLenBound for bool {
    fn json_len_bound(&self) -> usize {
        5
    }
}

impl JsonLenBound for u64 {
    fn json_len_bound(&self) -> usize {
        NUMBER
    }
}

impl<T: JsonLenBound> JsonLenBound for Vec<T> {
    fn json_len_bound(&self) -> usize {
        self.iter().fold(2, |n, item| n + item.json_len_bound() + 1)
    }
}

impl JsonLenBound for Value {
    fn json_len_bound(&self) -> usize {
        match self {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => NUMBER,
            Value::String(s) => s.json_len_bound(),
            Value::Array(items) => items.iter().fold(2, |n, item| n + item.json_len_bound() + 1),
            Value::Object(map) => map.iter().fold(2, |n, (k, v)| n + k.json_len_bound() + 2 + v.json_len_bound()),
        }
    }
}

/// The exact length of `serde_json::to_writer(value)`, or `None` if it is at most `limit`.
pub fn json_len_over<T: Serialize + JsonLenBound + ?Sized>(value: &T, limit: usize) -> Option<usize> {
    if value.json_len_bound() <= limit {
        return None;
    }
    let mut counter = Counter(0);
    // Writing to a counter fails only if serializing fails, and nothing here does.
    serde_json::to_writer(&mut counter, value).ok()?;
    (counter.0 > limit).then_some(counter.0)
}

struct Counter(usize);

impl io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_never_below_either_writers_length() {
        let values = [
            serde_json::json!({"a": [1, 2.5, -3, null, true, "x\u{1}\"\\"], "b": {"c": "é"}}),
            serde_json::json!([]),
            serde_json::json!("\u{0}\u{1f}"),
            serde_json::json!(-1.7976931348623157e308),
            serde_json::json!(9007199254740991_u64),
        ];
        for v in &values {
            let exact = serde_json::to_string(v).unwrap().len();
            let canonical = crate::hash::canonical_json(v).unwrap().len();
            assert!(v.json_len_bound() >= exact.max(canonical), "{v}: bound {} < {exact}", v.json_len_bound());
            assert_eq!(json_len_over(v, exact), None);
            assert_eq!(json_len_over(v, exact - 1), Some(exact));
        }
    }
}
