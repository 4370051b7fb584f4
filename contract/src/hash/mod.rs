//! Canonical JSON (RFC 8785, JCS) and SHA-256 digests: validator `config_hash`, the plan digest
//! that guards a resume, and the idempotency keys handed to step handlers.
//!
//! Layer 3 (beside the builder): what is computed from a valid plan and its policy profile: the
//! profile files ([`profile`], [`yaml`]), the plan hash and its parts, `config_hash`, idempotency
//! keys. Imports the contract, validation and `json` layers.

mod digest;
mod idempotency;
mod plan_hash;
pub mod profile;
pub mod yaml;

pub use crate::json::canonical::CanonicalError;
pub use digest::{Digest, DigestParseError, canonical_json, config_hash, plan_digest};
pub use idempotency::IdempotencyKey;
pub use plan_hash::{HashParts, StepDigest, hash_document_bytes, plan_hash};
