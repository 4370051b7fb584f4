//! Canonical JSON (RFC 8785, JCS), written two ways that give the same bytes:
//!
//! - [`write`], a serde `Serializer` for any value, without building a JSON tree first. Members
//!   of each object are written in the order they come and reordered only when they are not
//!   already sorted by their keys' UTF-16 code units (this crate's types write theirs sorted).
//! - [`Canonical`], which the plan's own types implement (generated from the same field lists
//!   as their serde and validation code): constant keys, already in order, written directly.
//!   The plan hash uses it; tests compare it with [`write`] on random plans.
//!
//! Numbers are IEEE-754 doubles in ECMAScript form (`ryu-js`); strings escape only `"`, `\` and
//! U+0000–U+001F.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Display;

use serde::ser::{self, Serialize};
use smallvec::SmallVec;

/// A value that has no canonical JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JcsError(Box<str>);

impl ser::Error for JcsError {
    fn custom<T: Display>(msg: T) -> Self {
        JcsError(msg.to_string().into())
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

/// The first byte that needs escaping, looked for eight bytes at a time.
#[inline(always)]
fn find_escape(bytes: &[u8]) -> Option<usize> {
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        if let Some(i) = escape_in_word(word_at(chunk, 0)) {
            return Some(at + i);
        }
        at += 8;
    }
    let tail = chunks.remainder();
    if tail.is_empty() {
        return None;
    }
    // Whole words only (a word assembled byte by byte stalls the load that reads it back): the
    // last eight bytes again, whose already-checked front is clean; or, for a short string, its
    // first and last four bytes side by side.
    let len = bytes.len();
    if len >= 8 {
        return escape_in_word(word_at(bytes, len - 8)).map(|i| len - 8 + i);
    }
    if len >= 4 {
        let front = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let back = u32::from_le_bytes([bytes[len - 4], bytes[len - 3], bytes[len - 2], bytes[len - 1]]);
        return escape_in_word(u64::from(front) | u64::from(back) << 32).map(|i| if i < 4 { i } else { len + i - 8 });
    }
    bytes.iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// The index of the first byte of `x` (little-endian) below 0x20 or equal to `"` or `\`. The
/// borrow tricks below may flag bytes above a true hit, never below one, so the lowest flag is
/// exact.
fn escape_in_word(x: u64) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    let flags = below_space | zero_byte(x ^ (ONES * u64::from(b'"'))) | zero_byte(x ^ (ONES * u64::from(b'\\')));
    (flags != 0).then(|| flags.trailing_zeros() as usize / 8)
}

/// Writes `s` as a JSON string; says whether anything in it was escaped.
fn write_str(out: &mut Vec<u8>, s: &str) -> bool {
    let bytes = s.as_bytes();
    match find_escape(bytes) {
        None => {
            out.reserve(bytes.len() + 2);
            out.push(b'"');
            append_short(out, bytes);
            out.push(b'"');
            false
        }
        Some(first) => {
            write_escaped(out, bytes, first);
            true
        }
    }
}

/// The rare string with something to escape, the first at `first`.
#[cold]
#[inline(never)]
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8], first: usize) {
    out.reserve(bytes.len() + 8);
    out.push(b'"');
    let mut start = 0;
    let mut next = Some(first);
    while let Some(i) = next {
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
        next = find_escape(&bytes[start..]).map(|offset| start + offset);
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// A type of this crate that writes its own canonical JSON directly, without going through
/// serde: keys are constants known to need no escape and to be in order, so nothing is scanned,
/// compared or reordered. Free-form values (`AnyValue`, `AnyObject`) still go through the serde
/// path. Every impl must write exactly what [`write`] writes for the same value; the plan hash
/// tests compare the two on random plans.
pub(crate) trait Canonical {
    /// Appends the canonical JSON of `self`.
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError>;
}

impl Canonical for String {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        write_str(out, self);
        Ok(())
    }
}

impl Canonical for str {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        write_str(out, self);
        Ok(())
    }
}

impl Canonical for bool {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        out.extend_from_slice(if *self { b"true" } else { b"false" });
        Ok(())
    }
}

impl Canonical for u64 {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        write_u64(out, *self)
    }
}

impl<T: Canonical> Canonical for Vec<T> {
    fn write_canonical(&self, out: &mut Vec<u8>) -> Result<(), JcsError> {
        out.push(b'[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item.write_canonical(out)?;
        }
        out.push(b']');
        Ok(())
    }
}

/// `"key":` for a constant key, as [`Canonical`] impls write it.
#[inline]
pub(crate) fn write_const_key(out: &mut Vec<u8>, quoted_key_colon: &'static str) {
    out.extend_from_slice(quoted_key_colon.as_bytes());
}

/// Whether `key` can be written as a constant by [`Canonical`] impls: printable ASCII without
/// `"` or `\` (so it needs no escape, and byte order is UTF-16 order).
pub(crate) const fn plain_key(key: &str) -> bool {
    let b = key.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] < 0x20 || b[i] >= 0x7f || b[i] == b'"' || b[i] == b'\\' {
            return false;
        }
        i += 1;
    }
    true
}

/// The order in which canonical JSON writes an object with these keys: indices into `keys`,
/// sorted by the keys' bytes, which is UTF-16 order for the ASCII wire names of this crate
/// (checked by [`plain_key`] where they are written as constants).
pub(crate) const fn key_order<const N: usize>(keys: [&str; N]) -> [usize; N] {
    let mut order = [0; N];
    let mut i = 0;
    while i < N {
        order[i] = i;
        i += 1;
    }
    // Insertion sort: a struct has a handful of fields, and this runs at compile time.
    let mut i = 1;
    while i < N {
        let mut j = i;
        while j > 0 && bytes_less(keys[order[j]].as_bytes(), keys[order[j - 1]].as_bytes()) {
            let t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
            j -= 1;
        }
        i += 1;
    }
    order
}

const fn bytes_less(a: &[u8], b: &[u8]) -> bool {
    let mut i = 0;
    while i < a.len() && i < b.len() {
        if a[i] != b[i] {
            return a[i] < b[i];
        }
        i += 1;
    }
    a.len() < b.len()
}

/// Appends `bytes`, copying short ones as two overlapping fixed-size words: most keys and many
/// values are short, and a `memcpy` call costs more than the copy.
#[inline]
fn append_short(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    let at = out.len();
    // Write the front word, cut back to where the back word goes, then write the back word.
    if (8..=16).contains(&n) {
        out.extend_from_slice(&bytes[..8]);
        out.truncate(at + n - 8);
        out.extend_from_slice(&bytes[n - 8..]);
    } else if (4..8).contains(&n) {
        out.extend_from_slice(&bytes[..4]);
        out.truncate(at + n - 4);
        out.extend_from_slice(&bytes[n - 4..]);
    } else {
        out.extend_from_slice(bytes);
    }
}

/// Orders keys by UTF-16 code units. UTF-8 byte order is code point order, which differs from
/// UTF-16 order only where a character in U+E000..=U+FFFF meets a supplementary one (a surrogate
/// pair, 0xD800.. in UTF-16): there the byte order is reversed.
fn utf16_cmp(x: &[u8], y: &[u8]) -> Ordering {
    let Some(i) = x.iter().zip(y).position(|(p, q)| p != q) else {
        return x.len().cmp(&y.len());
    };
    // The common prefix ends on the same character boundary in both strings: the last byte
    // at or before `i` that is not a UTF-8 continuation byte.
    let start = (0..=i).rev().find(|&j| x[j] & 0xC0 != 0x80).unwrap_or(0);
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

/// Where one member sits in the output: `"key":value` from `start` (the key's opening quote),
/// the key's closing quote at `key_end`, the value ending at `end`.
#[derive(Clone, Copy)]
struct Span {
    start: usize,
    key_end: usize,
    end: usize,
}

/// An object being written. Each key is compared with the one before it, straight from the
/// output, so an object whose members arrive sorted (every struct of this crate, every
/// `serde_json` map) costs one comparison per member and nothing else. Any other is sorted and
/// rewritten at `close`. The object stays small because it is moved by value through serde.
struct Object<'o> {
    out: &'o mut Vec<u8>,
    open: usize,
    /// The previous key, as written (without its quotes).
    prev_key: (usize, usize),
    /// A key was written and its value not yet.
    pending: bool,
    has_members: bool,
    /// The keys so far are strictly increasing (meaningful only while `escaped` is false).
    sorted: bool,
    /// Some key was written with an escape, so its written bytes are not the key's own.
    escaped: bool,
    variant: bool,
}

impl<'o> Object<'o> {
    fn open(out: &'o mut Vec<u8>, variant: bool) -> Object<'o> {
        out.push(b'{');
        let open = out.len();
        Object {
            out,
            open,
            prev_key: (open, open),
            pending: false,
            has_members: false,
            sorted: true,
            escaped: false,
            variant,
        }
    }

    /// Starts a member; `write_key` writes the quoted key and says whether it escaped anything.
    fn key(&mut self, write_key: impl FnOnce(&mut Vec<u8>) -> Result<bool, JcsError>) -> Result<(), JcsError> {
        if self.has_members {
            self.out.push(b',');
        }
        let start = self.out.len() + 1;
        self.escaped |= write_key(self.out)?;
        let key = (start, self.out.len() - 1);
        self.out.push(b':');
        if self.has_members && self.sorted && !self.escaped {
            let (before, now) = (&self.out[self.prev_key.0..self.prev_key.1], &self.out[key.0..key.1]);
            self.sorted = match (before.first(), now.first()) {
                // Most neighbouring keys differ in their first byte, an ASCII one.
                (Some(&a), Some(&b)) if a != b && a < 0x80 && b < 0x80 => a < b,
                _ => utf16_cmp(before, now) == Ordering::Less,
            };
        }
        self.prev_key = key;
        self.pending = true;
        Ok(())
    }

    fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), JcsError> {
        if !std::mem::take(&mut self.pending) {
            return Err(JcsError("a map value came without its key".into()));
        }
        value.serialize(Jcs { out: self.out })?;
        self.has_members = true;
        Ok(())
    }

    fn close(mut self) -> Result<(), JcsError> {
        if self.pending {
            return Err(JcsError("a map key came without its value".into()));
        }
        if self.escaped || !self.sorted {
            self.reorder()?;
        }
        self.out.push(b'}');
        if self.variant {
            self.out.push(b'}');
        }
        Ok(())
    }

    /// Sorts the members by their keys' UTF-16 code units and rewrites them in that order.
    #[cold]
    #[inline(never)]
    fn reorder(&mut self) -> Result<(), JcsError> {
        let members = member_spans(self.out, self.open);
        let mut keyed: SmallVec<[(Cow<'_, [u8]>, Span); 8]> =
            members.iter().map(|m| (unescape(&self.out[m.start + 1..m.key_end]), *m)).collect();
        keyed.sort_by(|a, b| utf16_cmp(&a.0, &b.0));
        if keyed.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(JcsError("an object has a repeated key".into()));
        }
        let order: SmallVec<[Span; 8]> = keyed.into_iter().map(|k| k.1).collect();
        if order.iter().zip(&members).all(|(o, m)| o.start == m.start) {
            return Ok(());
        }
        // Through a scratch buffer kept per thread, so a reorder allocates nothing once warm.
        // No user code runs while it is borrowed.
        SCRATCH.with(|scratch| {
            let mut written = scratch.borrow_mut();
            written.clear();
            written.extend_from_slice(&self.out[self.open..]);
            self.out.truncate(self.open);
            for (i, m) in order.iter().enumerate() {
                if i > 0 {
                    self.out.push(b',');
                }
                self.out.extend_from_slice(&written[m.start - self.open..m.end - self.open]);
            }
        });
        Ok(())
    }
}

/// The members of the object whose body this writer wrote into `out[open..]`. Found again by
/// scanning that output (it is canonical JSON: no whitespace, strings escaped the one way), so
/// the common, already-sorted object never records where its members are.
fn member_spans(out: &[u8], open: usize) -> SmallVec<[Span; 8]> {
    let mut spans = SmallVec::new();
    let (mut depth, mut in_string, mut escape) = (0usize, false, false);
    let (mut start, mut key_end) = (open, open);
    for (i, &b) in out.iter().enumerate().skip(open) {
        if in_string {
            match b {
                _ if escape => escape = false,
                b'\\' => escape = true,
                b'"' => {
                    in_string = false;
                    if depth == 0 && key_end <= start {
                        key_end = i;
                    }
                }
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                spans.push(Span { start, key_end, end: i });
                start = i + 1;
            }
            _ => {}
        }
    }
    if out.len() > open {
        spans.push(Span { start, key_end, end: out.len() });
    }
    spans
}

/// The key a written (escaped) key stands for. Only this writer's own escapes can occur.
fn unescape(written: &[u8]) -> Cow<'_, [u8]> {
    if !written.contains(&b'\\') {
        return Cow::Borrowed(written);
    }
    let mut raw = Vec::with_capacity(written.len());
    let mut bytes = written.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            raw.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'b') => raw.push(b'\x08'),
            Some(b't') => raw.push(b'\t'),
            Some(b'n') => raw.push(b'\n'),
            Some(b'f') => raw.push(b'\x0c'),
            Some(b'r') => raw.push(b'\r'),
            Some(b'u') => {
                // `\u00XX`: only C0 controls are written this way.
                let hex: SmallVec<[u8; 4]> = bytes.by_ref().take(4).collect();
                let digit = |h: u8| (h as char).to_digit(16).unwrap_or(0) as u8;
                raw.push(hex.get(2).map_or(0, |&h| digit(h)) << 4 | hex.get(3).map_or(0, |&h| digit(h)));
            }
            Some(other) => raw.push(other),
            None => {}
        }
    }
    Cow::Owned(raw)
}

/// Writes map keys: strings (or, as in serde_json, chars, integers and booleans written as
/// strings) straight into the output. Says whether the key needed an escape.
struct KeyWriter<'o> {
    out: &'o mut Vec<u8>,
}

impl KeyWriter<'_> {
    fn plain(self, key: &str) -> Result<bool, JcsError> {
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.push(b'"');
        Ok(false)
    }
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = bool;
    type Error = JcsError;
    type SerializeSeq = ser::Impossible<bool, JcsError>;
    type SerializeTuple = ser::Impossible<bool, JcsError>;
    type SerializeTupleStruct = ser::Impossible<bool, JcsError>;
    type SerializeTupleVariant = ser::Impossible<bool, JcsError>;
    type SerializeMap = ser::Impossible<bool, JcsError>;
    type SerializeStruct = ser::Impossible<bool, JcsError>;
    type SerializeStructVariant = ser::Impossible<bool, JcsError>;

    fn serialize_str(self, v: &str) -> Result<bool, JcsError> {
        Ok(write_str(self.out, v))
    }
    fn serialize_char(self, v: char) -> Result<bool, JcsError> {
        Ok(write_str(self.out, v.encode_utf8(&mut [0; 4])))
    }
    fn serialize_bool(self, v: bool) -> Result<bool, JcsError> {
        self.plain(if v { "true" } else { "false" })
    }
    fn serialize_i64(self, v: i64) -> Result<bool, JcsError> {
        self.plain(&v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<bool, JcsError> {
        self.plain(&v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<bool, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<bool, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<bool, JcsError> {
        self.serialize_i64(v.into())
    }
    fn serialize_u8(self, v: u8) -> Result<bool, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<bool, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<bool, JcsError> {
        self.serialize_u64(v.into())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<bool, JcsError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<bool, JcsError> {
        v.serialize(self)
    }
    fn serialize_f32(self, _: f32) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_f64(self, _: f64) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_none(self) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_unit(self) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<bool, JcsError> {
        Err(not_a_key())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<bool, JcsError> {
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
        self.key(|out| key.serialize(KeyWriter { out }))
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
                self.key(|out| Ok(write_str(out, key)))?;
                self.value(value)
            }
            fn end(self) -> Result<(), JcsError> {
                self.close()
            }
        }
    )*};
}

struct_impl!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\')
    }

    #[test]
    fn find_escape_finds_the_first_byte_to_escape_at_every_length_and_position() {
        // Every length through three words, each byte that needs an escape (and the bytes that
        // sit next to them) at each position, alone and after another one.
        let specials = [0x00, 0x1f, b'"', b'\\', b'\n'];
        let neighbours = [0x20, b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff, b'a'];
        for len in 0..=24 {
            for &fill in &neighbours {
                let clean = vec![fill; len];
                assert_eq!(find_escape(&clean), None, "{clean:?}");
                for at in 0..len {
                    for &special in &specials {
                        let mut bytes = clean.clone();
                        bytes[at] = special;
                        assert_eq!(find_escape(&bytes), naive(&bytes), "{bytes:?}");
                        if at + 1 < len {
                            bytes[len - 1] = b'"';
                            assert_eq!(find_escape(&bytes), naive(&bytes), "{bytes:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_key_without_its_value_is_an_error_not_a_broken_document() {
        struct KeyOnly;
        impl Serialize for KeyOnly {
            fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("b", &1)?;
                m.serialize_key("a")?;
                m.end()
            }
        }
        let err = write(&mut Vec::new(), &KeyOnly).unwrap_err();
        assert!(err.to_string().contains("without its value"), "{err}");
    }

    #[test]
    fn key_order_sorts_wire_names() {
        assert_eq!(key_order(["id", "type", "payload"]), [0, 2, 1]);
        assert_eq!(key_order(["step_contract_version", "steps", "extensions"]), [2, 0, 1]);
        assert_eq!(key_order::<0>([]), [0usize; 0]);
    }

    #[test]
    fn escaped_keys_sort_by_the_key_not_by_its_escape() {
        // `"` (0x22) sorts before `#` (0x23), though its escape `\"` starts with 0x5c.
        let map: std::collections::HashMap<&str, u8> = [("#", 1), ("\"", 2), ("\n", 3)].into_iter().collect();
        let mut out = Vec::new();
        write(&mut out, &map).unwrap();
        assert_eq!(out, br##"{"\n":3,"\"":2,"#":1}"##);
    }
}
