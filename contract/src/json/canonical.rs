//! Canonical JSON (RFC 8785, JCS), the form the plan hash is computed over (docs/CONTRACT.md,
//! "Plan hash"). Two writers give the same bytes:
//!
//! - [`Canonical`], which the contract's own types implement (generated from the same field lists
//!   as their serde and checks): keys are constants, declared in canonical order and checked at
//!   compile time ([`keys_in_order`]), so they are written as they come, nothing compared,
//!   scanned or reordered. The plan hash uses it; tests compare it with the other writer.
//! - [`write_value`], for a [`serde_json::Value`]: the policy files and free-form values.
//!   Anything else that is `Serialize` is turned into a `Value` first ([`write_serialize`]).
//!
//! Numbers are IEEE-754 doubles in ECMAScript form (`ryu-js`); strings escape only `"`, `\` and
//! U+0000–U+001F. Writing a `Value` cannot fail: serde_json holds no NaN, no infinity and only
//! string keys.

use std::cmp::Ordering;

use serde::Serialize;
use serde_json::{Map, Number, Value};
use smallvec::SmallVec;

/// A value that has no canonical JSON form: its `Serialize` impl failed or produced something JSON
/// cannot hold (a map with non-string keys, a NaN).
#[derive(Debug, thiserror::Error)]
#[error("cannot write canonical JSON: {source}")]
#[non_exhaustive]
pub struct CanonicalError {
    #[from]
    source: serde_json::Error,
}

/// Writes the canonical JSON of any `Serialize` value, through a [`Value`].
pub fn write_serialize<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), CanonicalError> {
    write_value(out, &serde_json::to_value(value)?);
    Ok(())
}

/// Writes the canonical JSON of a JSON value.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(b) => b.write_canonical(out),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => {
            write_str(out, s);
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map),
    }
}

/// Writes an object with its members sorted by their keys' UTF-16 code units. A map iterates in
/// UTF-8 byte order (or, with serde_json's `preserve_order`, in insertion order), so the keys are
/// sorted only when they are not already in order.
pub fn write_map(out: &mut Vec<u8>, map: &Map<String, Value>) {
    let mut members: SmallVec<[(&String, &Value); 16]> = map.iter().collect();
    let in_order = |a: &(&String, &Value), b: &(&String, &Value)| utf16_cmp(a.0.as_bytes(), b.0.as_bytes());
    if !members.windows(2).all(|w| in_order(&w[0], &w[1]) == Ordering::Less) {
        members.sort_by(in_order);
    }
    out.push(b'{');
    for (i, (key, value)) in members.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, value);
    }
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        write_u64(out, u);
    } else if let Some(i) = n.as_i64() {
        write_i64(out, i);
    } else if let Some(f) = n.as_f64() {
        write_f64(out, f);
    }
}

const MAX_SAFE: u64 = 1 << 53;

/// A finite double, as ECMAScript prints it (serde_json's numbers are always finite).
fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f == 0.0 {
        out.push(b'0'); // -0 prints as 0
        return;
    }
    out.extend_from_slice(ryu_js::Buffer::new().format_finite(f).as_bytes());
}

fn write_u64(out: &mut Vec<u8>, n: u64) {
    if n <= MAX_SAFE {
        write_digits(out, n);
    } else {
        // Beyond 2^53 the number is the double nearest to it, as every JSON producer reads it.
        write_f64(out, n as f64)
    }
}

fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        if n.unsigned_abs() <= MAX_SAFE {
            out.push(b'-');
            write_digits(out, n.unsigned_abs());
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

/// A type of this crate that writes its own canonical JSON directly: keys are constants known
/// to need no escape and declared in canonical order, so nothing is scanned, compared or
/// reordered. Free-form values are written by [`write_value`]. Every impl must write exactly
/// what [`write_serialize`] writes for the same value; the plan hash tests compare the two on
/// random plans. Writing cannot fail: every value of these types has a JSON form.
pub trait Canonical {
    /// Appends the canonical JSON of `self`.
    fn write_canonical(&self, out: &mut Vec<u8>);
}

impl Canonical for String {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl Canonical for str {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl Canonical for bool {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self { b"true" } else { b"false" });
    }
}

impl Canonical for u64 {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        write_u64(out, *self);
    }
}

impl Canonical for Value {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        write_value(out, self);
    }
}

impl Canonical for Map<String, Value> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        write_map(out, self);
    }
}

impl<T: Canonical> Canonical for Vec<T> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, item) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item.write_canonical(out);
        }
        out.push(b']');
    }
}

/// `"key":` for a constant key, as [`Canonical`] impls write it.
#[inline]
pub fn write_const_key(out: &mut Vec<u8>, quoted_key_colon: &'static str) {
    out.extend_from_slice(quoted_key_colon.as_bytes());
}

/// Whether `key` can be written as a constant by [`Canonical`] impls: printable ASCII without
/// `"` or `\` (so it needs no escape, and byte order is UTF-16 order).
pub const fn plain_key(key: &str) -> bool {
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

/// Whether constant keys, as declared, are plain ([`plain_key`]) and in canonical order, each
/// strictly after the one before: what lets a [`Canonical`] impl write its members in
/// declaration order. Asserted at compile time where keys are declared.
pub const fn keys_in_order(keys: &[&str]) -> bool {
    let mut i = 0;
    while i < keys.len() {
        if !plain_key(keys[i]) || (i > 0 && !bytes_less(keys[i - 1].as_bytes(), keys[i].as_bytes())) {
            return false;
        }
        i += 1;
    }
    true
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
    fn keys_in_order_accepts_only_plain_keys_in_canonical_order() {
        assert!(keys_in_order(&["id", "payload", "type"]));
        assert!(keys_in_order(&["extensions", "metadata", "postValidators", "step_contract_version", "steps"]));
        assert!(keys_in_order(&[]));
        assert!(!keys_in_order(&["id", "type", "payload"]), "out of order");
        assert!(!keys_in_order(&["id", "id"]), "repeated");
        assert!(!keys_in_order(&["a\"b"]), "needs an escape");
        assert!(!keys_in_order(&["é"]), "not ASCII");
    }

    #[test]
    fn escaped_keys_sort_by_the_key_not_by_its_escape() {
        // `"` (0x22) sorts before `#` (0x23), though its escape `\"` starts with 0x5c.
        let map: Map<String, Value> =
            [("#", 1), ("\"", 2), ("\n", 3)].into_iter().map(|(k, v)| (k.to_owned(), Value::from(v))).collect();
        let mut out = Vec::new();
        write_map(&mut out, &map);
        assert_eq!(out, br##"{"\n":3,"\"":2,"#":1}"##);
    }
}
