//! The document size limit for plans that were never a document: a plan built in Rust is held to
//! [`MAX_PLAN_BYTES`](crate::MAX_PLAN_BYTES) by the length of its own JSON form (what
//! `ValidPlan::to_json` writes), so every way to a `ValidPlan` gives the same verdict.
//!
//! Writing the JSON to count it costs as much as the rest of `build()`, so a cheap upper bound
//! comes first (every string byte counted as a six-byte `\u00XX` escape, every number as the
//! longest one); only a plan whose bound is over the limit is written out and counted exactly.

use std::io;

use serde::Serialize;
use serde::ser::{self, Impossible};

/// The exact length of `serde_json::to_writer(value)`, or `None` if it is at most `limit`.
pub(crate) fn json_len_over<T: Serialize + ?Sized>(value: &T, limit: usize) -> Option<usize> {
    let mut bound = Bound(0);
    if value.serialize(&mut bound).is_ok() && bound.0 <= limit {
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

/// An upper bound on the compact JSON length of what is serialized into it.
struct Bound(usize);

/// Longer than any number serde_json writes (`-1.7976931348623157e308` has 24 characters).
const NUMBER: usize = 24;

impl Bound {
    fn add(&mut self, n: usize) {
        self.0 = self.0.saturating_add(n);
    }
    fn string(&mut self, len: usize) {
        self.add(len.saturating_mul(6).saturating_add(2));
    }
}

/// Bound never fails; serde needs an error type anyway.
#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unsupported value")
    }
}
impl std::error::Error for Never {}
impl ser::Error for Never {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Never
    }
}

macro_rules! numbers {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, _: $ty) -> Result<(), Never> {
            self.add(NUMBER);
            Ok(())
        })*
    };
}

impl ser::Serializer for &mut Bound {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Impossible<(), Never>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), Never>;

    numbers!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128,
        serialize_f32: f32, serialize_f64: f64);

    fn serialize_bool(self, _: bool) -> Result<(), Never> {
        self.add(5);
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), Never> {
        self.string(4);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Never> {
        self.string(v.len());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Never> {
        // An array of numbers of at most three digits and a comma each.
        self.add(v.len().saturating_mul(4).saturating_add(2));
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Never> {
        self.add(4);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Never> {
        self.add(4);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Never> {
        self.add(4);
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Never> {
        self.string(variant.len());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), Never> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Never> {
        self.string(variant.len());
        self.add(3);
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self, Never> {
        self.add(2);
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self, Never> {
        self.add(2);
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        self.add(2);
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Never> {
        Err(Never)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self, Never> {
        self.add(2);
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Never> {
        self.add(2);
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Never> {
        Err(Never)
    }
}

/// Elements and members: the value plus a separator (`,` or `:`) each.
macro_rules! compound {
    ($($trait:ident $method:ident),*) => {
        $(impl ser::$trait for &mut Bound {
            type Ok = ();
            type Error = Never;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Never> {
                self.add(1);
                v.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        })*
    };
}
compound!(SerializeSeq serialize_element, SerializeTuple serialize_element, SerializeTupleStruct serialize_field);

impl ser::SerializeMap for &mut Bound {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), Never> {
        self.add(2);
        k.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Never> {
        v.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Bound {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), Never> {
        self.string(key.len());
        self.add(2);
        v.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_never_below_the_exact_length() {
        let values = [
            serde_json::json!({"a": [1, 2.5, -3, null, true, "x\u{1}\"\\"], "b": {"c": "é"}}),
            serde_json::json!([]),
            serde_json::json!("\u{0}\u{1f}"),
            serde_json::json!(-1.7976931348623157e308),
        ];
        for v in &values {
            let exact = serde_json::to_string(v).unwrap().len();
            let mut bound = Bound(0);
            v.serialize(&mut bound).unwrap();
            assert!(bound.0 >= exact, "{v}: bound {} < exact {exact}", bound.0);
            assert_eq!(json_len_over(v, exact), None);
            assert_eq!(json_len_over(v, exact - 1), Some(exact));
        }
    }
}
