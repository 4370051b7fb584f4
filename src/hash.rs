//! Canonical JSON (RFC 8785, JCS) and SHA-256 digests: validator `config_hash`, the plan digest
//! that guards a resume, and the idempotency keys handed to step handlers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

use crate::plan::ExecutionPlan;

/// A SHA-256 digest, written as 64 lowercase hex digits.
///
/// ```
/// use planlock::Digest;
/// let d = Digest::of(b"abc");
/// assert_eq!(d.to_string(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
/// assert_eq!(d.to_string().parse::<Digest>().unwrap(), d);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(Sha256::digest(bytes).into())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// From raw bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Digest {
        Digest(bytes)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

/// A string that is not 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected 64 lowercase hex digits (a SHA-256 digest), found {found:?}")]
pub struct DigestParseError {
    found: String,
}

impl DigestParseError {
    /// `"invalid-digest"`.
    pub fn code(&self) -> &'static str {
        "invalid-digest"
    }
}

impl FromStr for Digest {
    type Err = DigestParseError;
    fn from_str(s: &str) -> Result<Digest, DigestParseError> {
        let err = || DigestParseError { found: s.chars().take(80).collect() };
        if crate::rules::sha256_hex(s).is_err() {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (i, pair) in s.as_bytes().chunks_exact(2).enumerate() {
            let hex = std::str::from_utf8(pair).map_err(|_| err())?;
            out[i] = u8::from_str_radix(hex, 16).map_err(|_| err())?;
        }
        Ok(Digest(out))
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Serializing a value to canonical JSON failed (a map with non-string keys, a number JSON
/// cannot hold).
#[derive(Debug, thiserror::Error)]
#[error("cannot write canonical JSON: {0}")]
pub struct CanonicalError(#[from] serde_json::Error);

impl CanonicalError {
    /// `"canonical-json"`.
    pub fn code(&self) -> &'static str {
        "canonical-json"
    }
}

/// The RFC 8785 (JCS) form of `value`: sorted keys (UTF-16 order), no whitespace, ECMAScript
/// number form. Never use `serde_json::to_string` where bytes must be stable.
///
/// ```
/// let bytes = planlock::canonical_json(&serde_json::json!({"b": 1.0, "a": "x"})).unwrap();
/// assert_eq!(bytes, br#"{"a":"x","b":1}"#);
/// ```
pub fn canonical_json<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    Ok(serde_json_canonicalizer::to_vec(value)?)
}

/// `config_hash` of a validator configuration: SHA-256 of its canonical JSON.
pub fn config_hash(config: &serde_json::Value) -> Result<Digest, CanonicalError> {
    canonical_json(config).map(|bytes| Digest::of(&bytes))
}

/// SHA-256 of the canonical JSON of the plan alone, as the library serializes it.
pub(crate) fn plan_digest(plan: &ExecutionPlan) -> Result<Digest, CanonicalError> {
    canonical_json(plan).map(|bytes| Digest::of(&bytes))
}

/// A key that is stable for one step of one plan in one session, so a write handler can make a
/// re-run (after an intervention or a crash) harmless: SHA-256 over the session id, the plan
/// hash and the step id.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Digest);

impl IdempotencyKey {
    /// Derives the key; each part is length-prefixed so no two inputs collide by concatenation.
    pub fn derive(session_id: Uuid, plan_hash: &Digest, step_id: &str) -> IdempotencyKey {
        let mut h = Sha256::new();
        h.update(b"planlock/idempotency/v1");
        h.update(session_id.as_bytes());
        h.update(plan_hash.as_bytes());
        h.update((step_id.len() as u64).to_be_bytes());
        h.update(step_id.as_bytes());
        IdempotencyKey(Digest(h.finalize().into()))
    }

    /// The digest.
    pub fn digest(&self) -> &Digest {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({})", self.0)
    }
}
