//! What producers of plans in other languages call (CONTRACT §17): the Python wheel
//! (`bindings/python`) and the Node addon (`bindings/node`) are thin wrappers over these
//! functions, so the three languages give the same verdicts, codes, pointers, messages and
//! hashes by construction; `tests/corpus/` holds the cases all three suites run.
//!
//! Nothing here reads a file but the three profile documents of [`plan_hash_in`], each a
//! regular file of at most 1 MiB inside the directory given.
//!
//! ```
//! let report = planlock_contract::producer::validate(br#"{"step_contract_version":"2"}"#);
//! assert!(!report.ok);
//! assert_eq!(report.problems[0].code().as_str(), "unsupported-version");
//! ```

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::contract::problem::{Problem, Rejection};
use crate::contract::registry::{Failure, FailureKind, StepType};
use crate::hash::profile::{PolicyProfile, ProfileError};
use crate::hash::{CanonicalError, Digest, plan_hash};
use crate::validate::ValidPlan;

/// The validator's verdict on one plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Whether the plan is valid.
    pub ok: bool,
    /// `FailFast` if any problem is, else `CycleFail`; `None` for a valid plan.
    pub class: Option<FailureKind>,
    /// Every problem, in the validator's order (empty for a valid plan).
    pub problems: Vec<Problem>,
}

/// Why a producer's call gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// The plan is not valid: its report says why.
    #[error("{0}")]
    Rejected(#[from] Rejection),
    /// The profile could not be read or parsed.
    #[error("{0}")]
    Profile(#[from] ProfileError),
    /// The value is not JSON, or not one canonical JSON can write (a float past 2^53, a lone
    /// surrogate).
    #[error("not canonical JSON: {0}")]
    Json(String),
}

impl ProducerError {
    /// Every code a producer's call can fail with (the bindings' TypeScript types and Python
    /// stubs list them from here): a rejected plan, the profile's, the YAML's, the JSON's.
    pub const CODES: &'static [&'static str] = &[
        "plan-rejected",
        "profile-path",
        "profile-outside-root",
        "profile-unreadable",
        "profile-invalid",
        "yaml",
        "invalid-json",
    ];
}

impl Failure for ProducerError {
    /// The cause's code (`plan-rejected`, `profile-…`, `yaml`), or `invalid-json`.
    fn code(&self) -> &'static str {
        match self {
            ProducerError::Rejected(e) => e.code(),
            ProducerError::Profile(e) => e.code(),
            ProducerError::Json(_) => "invalid-json",
        }
    }

    fn kind(&self) -> FailureKind {
        match self {
            ProducerError::Rejected(e) => e.kind(),
            ProducerError::Profile(e) => e.kind(),
            ProducerError::Json(_) => FailureKind::CycleFail,
        }
    }
}

impl From<CanonicalError> for ProducerError {
    fn from(e: CanonicalError) -> ProducerError {
        ProducerError::Json(e.to_string())
    }
}

/// Validates a plan's JSON text (UTF-8 bytes).
pub fn validate(plan: &[u8]) -> Report {
    match ValidPlan::from_slice(plan) {
        Ok(_) => Report { ok: true, class: None, problems: Vec::new() },
        Err(e) => validate_rejection(e),
    }
}

/// The plan hash of `plan` as `planlock hash --policy-root` computes it: the profile is the
/// plan's `metadata.policyProfile` under `policy_root` (its three documents read as the runtime
/// reads them).
pub fn plan_hash_at(policy_root: &Path, plan: &[u8]) -> Result<Digest, ProducerError> {
    let plan = ValidPlan::from_slice(plan)?;
    let profile = PolicyProfile::load(policy_root, &plan.metadata().policy_profile)?;
    Ok(plan_hash(&profile, &plan))
}

/// The report on a plan of `len` bytes past [`MAX_PLAN_BYTES`](crate::MAX_PLAN_BYTES), for a
/// caller that counted a value's JSON without keeping it (the bindings, given a value).
pub fn too_large(len: usize) -> Report {
    validate_rejection(crate::validate::too_large_rejection(len))
}

/// The error a call that needs a valid plan gives for one of `len` bytes, past
/// [`MAX_PLAN_BYTES`](crate::MAX_PLAN_BYTES) (`plan-rejected`, its problem `too-large`).
pub fn too_large_error(len: usize) -> ProducerError {
    ProducerError::Rejected(crate::validate::too_large_rejection(len))
}

fn validate_rejection(e: Rejection) -> Report {
    Report { ok: false, class: Some(e.class()), problems: e.into_problems() }
}

/// The plan hash of `plan` with the profile whose three documents are in `profile_dir`
/// (`modes.yaml`, `triggers.yaml`, `bundles.yaml`); the profile's path in the hash is the plan's
/// `metadata.policyProfile`, as the runtime's is.
pub fn plan_hash_in(profile_dir: &Path, plan: &[u8]) -> Result<Digest, ProducerError> {
    let plan = ValidPlan::from_slice(plan)?;
    let mut profile = PolicyProfile::load(profile_dir, ".")?;
    profile.path = plan.metadata().policy_profile.clone();
    Ok(plan_hash(&profile, &plan))
}

/// The plan hash of `plan` with the profile's three documents given as text, in the order
/// `modes.yaml`, `triggers.yaml`, `bundles.yaml`.
pub fn plan_hash_of(documents: [&str; 3], plan: &[u8]) -> Result<Digest, ProducerError> {
    let plan = ValidPlan::from_slice(plan)?;
    let profile = PolicyProfile::from_documents(&plan.metadata().policy_profile, documents)?;
    Ok(plan_hash(&profile, &plan))
}

/// JSON text written canonically (RFC 8785: sorted keys, no whitespace, ECMAScript numbers),
/// as the plan hash writes it. Read as a plan is (I-JSON): at most
/// [`MAX_PLAN_BYTES`](crate::MAX_PLAN_BYTES), nested at most [`MAX_DEPTH`](crate::MAX_DEPTH)
/// deep, no key twice in an object, no lone surrogate, no byte order mark; nothing is repaired.
///
/// ```
/// use planlock_contract::producer::canonical_json;
/// assert_eq!(canonical_json(br#"{"b": 1, "a": [1.50, "\u00e9"]}"#)?, r#"{"a":[1.5,"é"],"b":1}"#);
/// assert!(canonical_json(br#"{"a": 1, "a": 2}"#).is_err()); // which one would it be?
/// assert!(canonical_json(br#""\udfff""#).is_err());
/// # Ok::<(), planlock_contract::producer::ProducerError>(())
/// ```
pub fn canonical_json(json: &[u8]) -> Result<String, ProducerError> {
    if json.len() > crate::json::MAX_PLAN_BYTES {
        return Err(ProducerError::Json(format!(
            "the text is {} bytes; canonical JSON is written for at most {} (a plan's bound)",
            json.len(),
            crate::json::MAX_PLAN_BYTES
        )));
    }
    let said = |p: &Problem| match p.pointer() {
        "" => p.message().to_owned(),
        at => format!("at {at}: {}", p.message()),
    };
    let (value, problems) = crate::contract::strict::parse_strict(json);
    let value = value.map_err(|p| ProducerError::Json(said(&p)))?;
    if let Some(p) = problems.iter().find(|p| p.code() == crate::contract::problem::ProblemCode::DuplicateKey) {
        return Err(ProducerError::Json(said(p)));
    }
    let bytes = crate::hash::canonical_json(&value)?;
    String::from_utf8(bytes).map_err(|e| ProducerError::Json(e.to_string()))
}

/// The plan's JSON Schema, as text.
pub fn schema() -> String {
    serde_json::to_string_pretty(&crate::contract::json_schema::plan_json_schema()).unwrap_or_default()
}

/// The step registry, in canonical order: each step's wire name, whether every plan needs it,
/// its failure class and the timeout class that bounds it.
pub fn registry() -> Value {
    let rows: Vec<Value> = StepType::ALL
        .iter()
        .map(|t| {
            let spec = t.spec();
            serde_json::json!({
                "type": spec.wire_name,
                "mandatory": spec.mandatory,
                "failureClass": spec.failure_kind.as_str(),
                "timeout": match spec.class {
                    crate::contract::registry::StepClass::Compute => "compute",
                    crate::contract::registry::StepClass::Llm => "llm",
                    crate::contract::registry::StepClass::Io => "io",
                },
            })
        })
        .collect();
    Value::Array(rows)
}
