//! The SHA-256 [`Digest`] and what it is taken of: canonical JSON (RFC 8785, JCS), a validator's
//! `config_hash`, the plan alone.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::contract::plan::ExecutionPlan;
use crate::contract::registry::{Failure, FailureKind};
use crate::json::canonical::Canonical;

/// A SHA-256 digest, written as 64 lowercase hex digits.
///
/// ```
/// use planlock_contract::Digest;
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

impl Failure for DigestParseError {
    /// `"invalid-digest"`.
    fn code(&self) -> &'static str {
        "invalid-digest"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

impl FromStr for Digest {
    type Err = DigestParseError;
    fn from_str(s: &str) -> Result<Digest, DigestParseError> {
        let err = || DigestParseError { found: s.chars().take(80).collect() };
        // Lowercase only, as `rules::sha256_hex` requires.
        let nibble = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(err());
        }
        let mut out = [0u8; 32];
        for (byte, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            match (nibble(pair[0]), nibble(pair[1])) {
                (Some(high), Some(low)) => *byte = high << 4 | low,
                _ => return Err(err()),
            }
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

use crate::json::canonical::CanonicalError;

// Here, where canonical JSON is made for a digest (`hash` re-exports the error): the error type
// is in layer 0, which knows nothing of failure classes.
impl Failure for CanonicalError {
    /// `"canonical-json"`.
    fn code(&self) -> &'static str {
        "canonical-json"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The RFC 8785 (JCS) form of `value`: sorted keys (UTF-16 order), no whitespace, ECMAScript
/// number form. Never use `serde_json::to_string` where bytes must be stable. Fails only when
/// `value`'s `Serialize` impl fails or makes what JSON cannot hold (a map with non-string keys).
///
/// ```
/// let bytes = planlock_contract::canonical_json(&serde_json::json!({"b": 1.0, "a": "x"})).unwrap();
/// assert_eq!(bytes, br#"{"a":"x","b":1}"#);
/// ```
pub fn canonical_json<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(1024);
    crate::json::canonical::write_serialize(&mut out, value)?;
    Ok(out)
}

/// SHA-256 of the canonical JSON `write` appends, written into a buffer kept per thread so that
/// hashing allocates nothing once warm.
pub(super) fn digest_written(write: impl FnOnce(&mut Vec<u8>)) -> Digest {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut bytes) => {
            bytes.clear();
            write(&mut bytes);
            Digest::of(&bytes)
        }
        // A writer that hashes while being hashed gets a buffer of its own.
        Err(_) => {
            let mut bytes = Vec::new();
            write(&mut bytes);
            Digest::of(&bytes)
        }
    })
}

/// SHA-256 of the canonical JSON of a value written directly (see [`Canonical`]).
pub(super) fn canonical_digest<T: Canonical + ?Sized>(value: &T) -> Digest {
    digest_written(|out| value.write_canonical(out))
}

/// `config_hash` of a validator configuration: SHA-256 of its canonical JSON.
///
/// ```
/// let a = planlock_contract::config_hash(&serde_json::json!({"mask": true, "level": 2})); let b =
/// planlock_contract::config_hash(&serde_json::from_str(r#"{ "level": 2.0, "mask": true }"#).unwrap());
/// assert_eq!(a, b);
/// ```
pub fn config_hash(config: &serde_json::Value) -> Digest {
    canonical_digest(config)
}

/// SHA-256 of the canonical JSON of the plan alone, as the library serializes it (the runtime's
/// own; producers use [`plan_hash`]).
#[doc(hidden)]
pub fn plan_digest(plan: &ExecutionPlan) -> Digest {
    canonical_digest(plan)
}
