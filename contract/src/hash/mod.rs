//! Canonical JSON (RFC 8785, JCS) and SHA-256 digests: validator `config_hash`, the plan digest
//! that guards a resume, and the idempotency keys handed to step handlers.
//!
//! Layer 3 (beside the builder): what is computed from a valid plan and its policy profile: the
//! profile files ([`profile`], [`yaml`]), the plan hash and its parts, `config_hash`, idempotency
//! keys. Imports the contract, validation and `json` layers.

pub mod profile;
pub mod yaml;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};
use uuid::Uuid;

use crate::contract::plan::ExecutionPlan;
use crate::contract::registry::{Failure, FailureKind};
use crate::hash::profile::PolicyProfile;
use crate::json::canonical::Canonical;
use crate::validate::ValidPlan;

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

pub use crate::json::canonical::CanonicalError;

// Beside its re-export: the error type is in layer 0, which knows nothing of failure classes.
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
fn digest_written(write: impl FnOnce(&mut Vec<u8>)) -> Digest {
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
fn canonical_digest<T: Canonical + ?Sized>(value: &T) -> Digest {
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

/// A key that is stable for one step of one cycle of one plan in one session, so a write
/// handler can make a re-run of that cycle (after an intervention, a failure or a crash)
/// harmless, while the next cycle writes anew (docs/CONTRACT.md, "Sessions and the runtime"):
/// lowercase hex SHA-256 of the canonical JSON of `{ "cycle", "planHash", "sessionId", "stepId" }`.
///
/// ```
/// use planlock_contract::{Digest, IdempotencyKey};
/// let (session, hash) = (uuid::Uuid::nil(), Digest::of(b"plan"));
/// let key = IdempotencyKey::derive(session, &hash, 3, "remember");
/// assert_eq!(key, IdempotencyKey::derive(session, &hash, 3, "remember"));
/// assert_ne!(key, IdempotencyKey::derive(session, &hash, 4, "remember"));
/// let doc = format!(r#"{{"cycle":3,"planHash":"{hash}","sessionId":"{session}","stepId":"remember"}}"#);
/// assert_eq!(*key.digest(), Digest::of(doc.as_bytes()));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(Digest);

impl IdempotencyKey {
    /// Derives the key of step `step_id` in cycle `cycle`.
    pub fn derive(session_id: Uuid, plan_hash: &Digest, cycle: u64, step_id: &str) -> IdempotencyKey {
        IdempotencyKey(digest_written(|out| {
            // Members in canonical order; the hex digest and the UUID need no escape.
            out.extend_from_slice(b"{\"cycle\":");
            cycle.write_canonical(out);
            out.extend_from_slice(b",\"planHash\":\"");
            out.extend_from_slice(plan_hash.to_string().as_bytes());
            out.extend_from_slice(b"\",\"sessionId\":\"");
            out.extend_from_slice(session_id.hyphenated().to_string().as_bytes());
            out.extend_from_slice(b"\",\"stepId\":");
            step_id.write_canonical(out);
            out.push(b'}');
        }))
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

/// The hash document of docs/CONTRACT.md, "Plan hash", serialized in the library's own form. Fields
/// are declared in canonical key order, so hashing never reorders them.
#[derive(Serialize)]
struct HashDocument<'a> {
    bundles: &'a serde_json::Value,
    #[serde(rename = "executionPlan")]
    execution_plan: &'a ExecutionPlan,
    modes: &'a serde_json::Value,
    #[serde(rename = "policyProfile")]
    policy_profile: &'a str,
    triggers: &'a serde_json::Value,
}

/// `lastExecutionPlanHash`: SHA-256 over the canonical JSON of the profile path, the three
/// profile files and the plan (validators included). The runtime computes it; a session store
/// only stores and compares it.
///
/// ```
/// # let plan =
/// planlock_contract::ValidPlan::from_str(include_str!("../../../tests/fixtures/full_plan.json")).unwrap(); use
/// planlock_contract::{PolicyProfile, plan_hash}; let profile = PolicyProfile { path:
/// "profiles/default".into(), modes: serde_json::json!({}), triggers: serde_json::json!([]),
/// bundles: serde_json::json!({}) }; let hash = plan_hash(&profile, &plan);
/// assert_eq!(hash.to_string().len(), 64);
/// ```
pub fn plan_hash(profile: &PolicyProfile, plan: &ValidPlan) -> Digest {
    canonical_digest(&hash_document(profile, plan))
}

/// The canonical bytes [`plan_hash`] digests, written the general way (through serde); the
/// tests check that both ways agree.
pub fn hash_document_bytes(profile: &PolicyProfile, plan: &ValidPlan) -> Result<Vec<u8>, CanonicalError> {
    canonical_json(&hash_document(profile, plan))
}

/// The same members, in the same (canonical) order as the struct declares them, written
/// directly; `plan_hash` uses this, `hash_document_bytes` the serde path.
impl Canonical for HashDocument<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        use crate::json::canonical::write_const_key;
        write_const_key(out, "{\"bundles\":");
        self.bundles.write_canonical(out);
        write_const_key(out, ",\"executionPlan\":");
        self.execution_plan.write_canonical(out);
        write_const_key(out, ",\"modes\":");
        self.modes.write_canonical(out);
        write_const_key(out, ",\"policyProfile\":");
        self.policy_profile.write_canonical(out);
        write_const_key(out, ",\"triggers\":");
        self.triggers.write_canonical(out);
        out.push(b'}');
    }
}

fn hash_document<'a>(profile: &'a PolicyProfile, plan: &'a ValidPlan) -> HashDocument<'a> {
    HashDocument {
        policy_profile: &profile.path,
        modes: &profile.modes,
        triggers: &profile.triggers,
        bundles: &profile.bundles,
        execution_plan: plan.plan(),
    }
}

/// Per-part digests of the hash document, kept in the session file so that a mismatch can say
/// what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct HashParts {
    /// Of the profile path.
    pub policy_profile: Digest,
    /// Of `modes.yaml`.
    pub modes: Digest,
    /// Of `triggers.yaml`.
    pub triggers: Digest,
    /// Of `bundles.yaml`.
    pub bundles: Digest,
    /// Of the plan's metadata.
    pub metadata: Digest,
    /// Of the plan's `validators` and `postValidators`.
    pub validators: Digest,
    /// Of each step, in order.
    pub steps: Vec<StepDigest>,
}

/// The digest of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct StepDigest {
    /// The step's id.
    pub id: String,
    /// SHA-256 of the step's canonical JSON.
    pub digest: Digest,
}

crate::contract::object::map_only_serde!(HashParts);
crate::contract::object::map_only_serde!(StepDigest);

impl HashParts {
    /// The parts of `profile` and `plan`.
    pub fn of(profile: &PolicyProfile, plan: &ValidPlan) -> HashParts {
        let p = plan.plan();
        HashParts {
            policy_profile: canonical_digest(profile.path.as_str()),
            modes: canonical_digest(&profile.modes),
            triggers: canonical_digest(&profile.triggers),
            bundles: canonical_digest(&profile.bundles),
            metadata: canonical_digest(&p.metadata),
            validators: digest_written(|out| {
                out.push(b'[');
                p.validators.write_canonical(out);
                out.push(b',');
                p.post_validators.write_canonical(out);
                out.push(b']');
            }),
            steps: p.steps.iter().map(|s| StepDigest { id: s.id.clone(), digest: canonical_digest(s) }).collect(),
        }
    }

    /// What differs between a stored `self` and the current `now`, in words, most general first.
    ///
    /// ```
    /// # use planlock_contract::hash::{HashParts, StepDigest};
    /// # use planlock_contract::Digest;
    /// # let d = Digest::of(b"x");
    /// # let old = HashParts { policy_profile: d, modes: d, triggers: d, bundles: d, metadata: d,
    /// validators: d,
    /// #     steps: vec![StepDigest { id: "llm".into(), digest: d }] };
    /// let mut now = old.clone();
    /// now.steps[0].digest = Digest::of(b"y");
    /// assert_eq!(old.difference(&now), "step `llm` changed");
    /// ```
    pub fn difference(&self, now: &HashParts) -> String {
        let named = [
            (self.policy_profile != now.policy_profile, "the policy profile path changed"),
            (self.modes != now.modes, "modes.yaml changed"),
            (self.triggers != now.triggers, "triggers.yaml changed"),
            (self.bundles != now.bundles, "bundles.yaml changed"),
            (self.metadata != now.metadata, "the plan's metadata changed"),
            (self.validators != now.validators, "the plan's validators changed"),
        ];
        let mut changes: Vec<String> = named.iter().filter(|(c, _)| *c).map(|(_, w)| (*w).to_owned()).collect();
        let first_step = self.steps.iter().zip(&now.steps).find(|(a, b)| a != b);
        match first_step {
            Some((old, new)) if old.id != new.id => {
                changes.push(format!("step `{}` is now `{}`", old.id, new.id));
            }
            Some((old, _)) => changes.push(format!("step `{}` changed", old.id)),
            None if self.steps.len() != now.steps.len() => changes.push(format!(
                "the plan has {} steps, the session was saved with {}",
                now.steps.len(),
                self.steps.len()
            )),
            None => {}
        }
        if changes.is_empty() { "the plan hash changed".to_owned() } else { changes.join("; ") }
    }
}
