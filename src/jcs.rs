//! An RFC 8785 (JCS) serializer that writes canonical JSON straight from any `Serialize` value,
//! without building a JSON tree first.
//!
//! Members of each object are written in the order they come and reordered in place only when
//! they are not already sorted by their keys' UTF-16 code units. Numbers are IEEE-754 doubles in
//! ECMAScript form (`ryu-js`); strings escape only `"`, `\` and U+0000–U+001F.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Display;

use serde::ser::{self, Serialize};
use smallvec::SmallVec;

/// A value that has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JcsError(String);

impl ser::Error for JcsError {
    fn custom<T: Display>(msg: T) -> Self {
        JcsError(msg.to_string())
    }
}

/// Writes the canonical JSON of `value` into `out`.
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), JcsError> {
    value.serialize(Jcs { out })
}

struct Jcs<'o> {
    out: &'o mut Vec<u8>,
}

const MAX_SAFE: u64 = 1 << 53;

fn write_f64(out: &mut Vec<u8>, f: f64) -> Result<(), JcsError> {
    if !f.is_finite() {
        return Err(JcsError("NaN and infinities have no JSON form".into()));
    }
    if f == 0.0 {
        out.push(b'0'); // -0 prints as 0
        return Ok(());
    }
    out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
    Ok(())
}

fn write_u64(out: &mut Vec<u8>, n: u64) -> Result<(), JcsError> {
    if n <= MAX_SAFE {
        write_digits(out, n);
        Ok(())
    } else {
        // Beyond 2^53 the number is the double nearest to it, as every JSON producer reads it.
        write_f64(out, n as f64)
    }
}

fn write_i64(out: &mut Vec<u8>, n: i64) -> Result<(), JcsError> {
    if n < 0 {
        if n.unsigned_abs() <= MAX_SAFE {
            out.push(b'-');
            write_digits(out, n.unsigned_abs());
            Ok(())
        } else {
            write_f64(out, n as f64)
        }
    } else {
        write_u64(out, n.unsigned_abs())
    }
}

/// Which bytes a JCS string escapes: `"`, `\` and the C0 controls.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The first byte that needs escaping, eight bytes at a time where none does.
fn find_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // A byte below 0x20, or equal to `"` or `\`: only then look closer.
        let below = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        if below | zero_byte(x ^ (ONES * u64::from(b'"'))) | zero_byte(x ^ (ONES * u64::from(b'\\'))) != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| NEEDS_ESCAPE[usize::from(b)]).map(|i| at + i)
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    while let Some(offset) = find_escape(&bytes[start..]) {
        let i = start + offset;
        out.extend_from_slice(&bytes[start..i]);
        let b = bytes[i];
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Orders keys by UTF-16 code units. UTF-8 byte order is code point order, which differs from
/// UTF-16 order only where a character in U+E000..=U+FFFF meets a supplementary one (a surrogate
/// pair, 0xD800.. in UTF-16): there the byte order is reversed.
fn utf16_cmp(a: &str, b: &str) -> Ordering {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    let Some(i) = x.iter().zip(y).position(|(p, q)| p != q) else {
        return x.len().cmp(&y.len());
    };
    // The common prefix ends on the same character boundary in both strings.
    let start = (0..=i).rev().find(|&j| a.is_char_boundary(j)).unwrap_or(0);
    let (la, lb) = (x[start], y[start]);
    let high_bmp = |l: u8| l == 0xEE || l == 0xEF;
    let supplementary = |l: u8| l >= 0xF0;
    if (high_bmp(la) && supplementary(lb)) || (supplementary(la) && high_bmp(lb)) {
        la.cmp(&lb).reverse()
    } else {
        x[i].cmp(&y[i])
    }
}

fn write_digits(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

impl<'o> ser::Serializer for Jcs<'o> {
    type Ok = ();
    type Error = JcsError;
    type SerializeSeq = Seq<'o>;
    type SerializeTuple = Seq<'o>;
    type SerializeTupleStruct = Seq<'o>;
    type SerializeTupleVariant = Seq<'o>;
    type SerializeMap = Object<'o>;
    type SerializeStruct = Object<'o>;
    type SerializeStructVariant = Object<'o>;

    fn serialize_bool(self, v: bool) -> Result<(), JcsError> {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), JcsError> {
        write_i64(self.out, v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), JcsError> {
        write_i64(self.out, v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), JcsError> {
        write_i64(self.out, v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), JcsError> {
        write_i64(self.out, v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), JcsError> {
        match i64::try_from(v) {
            Ok(n) => write_i64(self.out, n),
            Err(_) => write_f64(self.out, v as f64),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), JcsError> {
        write_u64(self.out, v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<(), JcsError> {
        write_u64(self.out, v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<(), JcsError> {
        write_u64(self.out, v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<(), JcsError> {
        write_u64(self.out, v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), JcsError> {
        match u64::try_from(v) {
            Ok(n) => write_u64(self.out, n),
            Err(_) => write_f64(self.out, v as f64),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<(), JcsError> {
        write_f64(self.out, v.into())
    }
    fn serialize_f64(self, v: f64) -> Result<(), JcsError> {
        write_f64(self.out, v)
    }
    fn serialize_char(self, v: char) -> Result<(), JcsError> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), JcsError> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), JcsError> {
        let mut seq = self.serialize_seq(Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<(), JcsError> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), JcsError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), JcsError> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), JcsError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), JcsError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), JcsError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), JcsError> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        value.serialize(Jcs { out: self.out })?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'o>, JcsError> {
        self.out.push(b'[');
        Ok(Seq { out: self.out, first: true, variant: false })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'o>, JcsError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'o>, JcsError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Seq<'o>, JcsError> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.extend_from_slice(b":[");
        Ok(Seq { out: self.out, first: true, variant: true })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Object<'o>, JcsError> {
        Ok(Object::open(self.out, false))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Object<'o>, JcsError> {
        Ok(Object::open(self.out, false))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Object<'o>, JcsError> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        Ok(Object::open(self.out, true))
    }
}

struct Seq<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
    variant: bool,
}

impl Seq<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JcsError> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        value.serialize(Jcs { out: self.out })
    }
    fn close(self) {
        self.out.push(b']');
        if self.variant {
            self.out.push(b'}');
        }
    }
}

macro_rules! seq_impl {
    ($($trait:ident $method:ident;)*) => {$(
        impl ser::$trait for Seq<'_> {
            type Ok = ();
            type Error = JcsError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JcsError> {
                self.element(value)
            }
            fn end(self) -> Result<(), JcsError> {
                self.close();
                Ok(())
            }
        }
    )*};
}

seq_impl! {
    SerializeSeq serialize_element;
    SerializeTuple serialize_element;
    SerializeTupleStruct serialize_field;
    SerializeTupleVariant serialize_field;
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One member written so far: its raw key and where `"key":value` sits in the output.
struct Member {
    key: Cow<'static, str>,
    start: usize,
    end: usize,
}

struct Object<'o> {
    out: &'o mut Vec<u8>,
    open: usize,
    members: SmallVec<[Member; 8]>,
    pending: Option<(Cow<'static, str>, usize)>,
    variant: bool,
}

impl<'o> Object<'o> {
    fn open(out: &'o mut Vec<u8>, variant: bool) -> Object<'o> {
        out.push(b'{');
        let open = out.len();
        Object { out, open, members: SmallVec::new(), pending: None, variant }
    }

    fn key(&mut self, key: Cow<'static, str>) {
        if !self.members.is_empty() {
            self.out.push(b',');
        }
        let start = self.out.len();
        write_str(self.out, &key);
        self.out.push(b':');
        self.pending = Some((key, start));
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JcsError> {
        let (key, start) = self.pending.take().ok_or_else(|| JcsError("a map value came without its key".into()))?;
        value.serialize(Jcs { out: self.out })?;
        self.members.push(Member { key, start, end: self.out.len() });
        Ok(())
    }

    fn close(mut self) -> Result<(), JcsError> {
        let sorted = self.members.windows(2).all(|w| utf16_cmp(&w[0].key, &w[1].key) == Ordering::Less);
        if !sorted {
            self.members.sort_by(|a, b| utf16_cmp(&a.key, &b.key));
            if self.members.windows(2).any(|w| w[0].key == w[1].key) {
                return Err(JcsError("an object has a repeated key".into()));
            }
            // Members are reordered through a scratch buffer kept per thread, so a reorder
            // allocates nothing once warm. No user code runs while it is borrowed.
            SCRATCH.with(|scratch| {
                let mut written = scratch.borrow_mut();
                written.clear();
                written.extend_from_slice(&self.out[self.open..]);
                self.out.truncate(self.open);
                for (i, m) in self.members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.out.extend_from_slice(&written[m.start - self.open..m.end - self.open]);
                }
            });
        }
        self.out.push(b'}');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }
}

/// Map keys must be strings (or, as in serde_json, chars, integers and booleans written as
/// strings).
struct KeyOnly;

impl ser::Serializer for KeyOnly {
    type Ok = Cow<'static, str>;
    type Error = JcsError;
    type SerializeSeq = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeTuple = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeTupleStruct = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeTupleVariant = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeMap = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeStruct = ser::Impossible<Cow<'static, str>, JcsError>;
    type SerializeStructVariant = ser::Impossible<Cow<'static, str>, JcsError>;

    fn serialize_str(self, v: &str) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn serialize_char(self, v: char) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn serialize_bool(self, v: bool) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Borrowed(if v { "true" } else { "false" }))
    }
    fn serialize_i64(self, v: i64) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn serialize_u64(self, v: u64) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Owned(v.to_string()))
    }
    fn serialize_i8(self, v: i8) -> Result<Self::Ok, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Self::Ok, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Self::Ok, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<Self::Ok, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Self::Ok, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Self::Ok, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<Self::Ok, JcsError> {
        Ok(Cow::Borrowed(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<Self::Ok, JcsError> {
        v.serialize(self)
    }
    fn serialize_f32(self, _: f32) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_none(self) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, JcsError> {
        Err(not_a_key())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, JcsError> {
        Err(not_a_key())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, JcsError> {
        Err(not_a_key())
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, JcsError> {
        Err(not_a_key())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, JcsError> {
        Err(not_a_key())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, JcsError> {
        Err(not_a_key())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, JcsError> {
        Err(not_a_key())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, JcsError> {
        Err(not_a_key())
    }
}

fn not_a_key() -> JcsError {
    JcsError("a map key must be a string".into())
}

impl ser::SerializeMap for Object<'_> {
    type Ok = ();
    type Error = JcsError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), JcsError> {
        let key = key.serialize(KeyOnly)?;
        self.key(key);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JcsError> {
        self.value(value)
    }
    fn end(self) -> Result<(), JcsError> {
        self.close()
    }
}

macro_rules! struct_impl {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Object<'_> {
            type Ok = ();
            type Error = JcsError;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), JcsError> {
                self.key(Cow::Borrowed(key));
                self.value(value)
            }
            fn end(self) -> Result<(), JcsError> {
                self.close()
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);
