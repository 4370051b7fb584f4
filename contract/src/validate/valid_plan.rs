//! A [`ValidPlan`]: the only way to one, from bytes, a reader, a value or a typed plan.

use std::io::Read;

use serde::Serialize;
use serde_json::Value;

use super::document::walk_document;
use super::typed::{StepListRules, check_plan, typed_parts_ok};
use super::{Problem, ProblemCode, Rejection};
use crate::contract::object::Contract;
use crate::contract::plan::{ExecutionPlan, PlanMetadata};
use crate::contract::registry::{Failure, FailureKind};
use crate::contract::strict::parse_strict;
use crate::contract::value::{PositiveInt, scan_limits};
use crate::json::MAX_PLAN_BYTES;
use crate::json::pointer::JsonPointer;

/// Reading a plan from an [`io::Read`](std::io::Read) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanReadError {
    /// The reader failed; nothing was validated.
    #[error("could not read the plan: {0}")]
    Io(#[from] std::io::Error),
    /// The plan was read and rejected.
    #[error(transparent)]
    Rejected(#[from] Rejection),
}

impl Failure for PlanReadError {
    /// `"io-error"`, or `"rejected"` with the problems in [`Rejection`].
    fn code(&self) -> &'static str {
        match self {
            PlanReadError::Io(_) => "io-error",
            PlanReadError::Rejected(_) => "rejected",
        }
    }

    /// A plan that cannot be read cannot be run: FailFast; a rejection has its own class.
    fn kind(&self) -> FailureKind {
        match self {
            PlanReadError::Io(_) => FailureKind::FailFast,
            PlanReadError::Rejected(r) => r.class(),
        }
    }
}

/// A plan that passed validation: the only plan type the executor accepts.
///
/// ```
/// use planlock_contract::ValidPlan;
/// let json = r#"{
///   "step_contract_version": "1", "extensions": [],
///   "metadata": { "policyProfile": "profiles/default", "mode": "chat" },
///   "steps": [
///     { "id": "ctx", "type": "ContextSelect", "payload": { "input": "hi", "sources": ["repo"] } },
///     { "id": "prompt", "type": "PromptAssemble", "payload": { "template": "{{input}}", "vars": {} } },
///     { "id": "llm", "type": "LLMCall", "payload": { "prompt": "hi", "config": {} } },
///     { "id": "save", "type": "PersistSession", "payload": { "sessionRef": "s1", "meta": {} } }
///   ]
/// }"#;
/// let plan = ValidPlan::from_str(json)?;
/// assert_eq!(plan.steps().len(), 4);
/// # Ok::<(), planlock_contract::Rejection>(())
/// ```
///
/// Clones share the plan (a worker booting a runtime per session of one plan holds it once).
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPlan {
    plan: std::sync::Arc<ExecutionPlan>,
}

impl Serialize for ValidPlan {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.plan.serialize(serializer)
    }
}

impl ValidPlan {
    /// Validates a JSON document given as bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<ValidPlan, Rejection> {
        if bytes.len() > MAX_PLAN_BYTES {
            return Err(Rejection::new(vec![too_large(Some(bytes.len()))]));
        }
        // UTF-8 is checked once for the whole document (a word at a time), so the parser need
        // not check each string again; a document that is not UTF-8 goes to the full report.
        match std::str::from_utf8(bytes) {
            Ok(json) => ValidPlan::from_str(json),
            Err(_) => Err(Rejection::new(report_bytes(bytes))),
        }
    }

    /// Validates a JSON document given as a string.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(json: &str) -> Result<ValidPlan, Rejection> {
        if json.len() > MAX_PLAN_BYTES {
            return ValidPlan::from_slice(json.as_bytes());
        }
        match serde_json::from_str::<ExecutionPlan>(json) {
            // Its free-form values passed the strict deserializer's limits on the way in, and
            // its JSON form cannot outgrow the document by more than `JSON_GROWTH`.
            Ok(plan) => ValidPlan::checked(plan, StepListRules::All, true, json.len() <= MAX_PLAN_BYTES / JSON_GROWTH),
            Err(_) => Err(Rejection::new(report_bytes(json.as_bytes()))),
        }
    }

    /// Reads a JSON document (at most [`MAX_PLAN_BYTES`] + 1 bytes are read) and validates it.
    pub fn from_reader(reader: impl Read) -> Result<ValidPlan, PlanReadError> {
        let mut bytes = Vec::new();
        reader.take(MAX_PLAN_BYTES as u64 + 1).read_to_end(&mut bytes)?;
        if bytes.len() > MAX_PLAN_BYTES {
            // Only the cap was read: the real size is not known.
            return Err(Rejection::new(vec![too_large(None)]).into());
        }
        Ok(ValidPlan::from_slice(&bytes)?)
    }

    /// Validates a JSON value.
    pub fn from_value(value: &Value) -> Result<ValidPlan, Rejection> {
        let mut problems = Vec::new();
        scan_limits(value, &mut JsonPointer::new(), &mut problems);
        if !problems.is_empty() {
            return Err(Rejection::new(problems));
        }
        let problems = walk_document(value);
        if !problems.is_empty() {
            return Err(Rejection::new(problems));
        }
        match serde_json::from_value::<ExecutionPlan>(value.clone()) {
            // `scan_limits` above covered the whole document.
            Ok(plan) => ValidPlan::checked(plan, StepListRules::All, true, false),
            Err(e) => Err(Rejection::new(vec![Problem::new(ProblemCode::InvalidValue, String::new(), e.to_string())])),
        }
    }

    /// Validates a plan built in Rust, its size included: the JSON form
    /// ([`to_json`](Self::to_json)) must fit in [`MAX_PLAN_BYTES`] like any document.
    pub fn from_plan(plan: ExecutionPlan) -> Result<ValidPlan, Rejection> {
        ValidPlan::checked(plan, StepListRules::All, false, false)
    }

    /// Validates a plan whose step list the typestate builder's types already checked.
    /// `ids_ok`: the builder saw every step id well-formed and distinct as it was added.
    /// `rejected_top_k`: a `topK` the builder could not store (0, or over 2^53 − 1).
    pub(crate) fn from_builder(
        plan: ExecutionPlan,
        ids_ok: bool,
        rejected_top_k: Option<u64>,
    ) -> Result<ValidPlan, Rejection> {
        if let Some(n) = rejected_top_k {
            let value = Value::from(n);
            let mut path = JsonPointer::new();
            path.push_key("metadata");
            path.push_key("topK");
            // The document path's order: the number limit first, then the type's own rule.
            let mut problems = Vec::new();
            scan_limits(&value, &mut path, &mut problems);
            if problems.is_empty() {
                <PositiveInt as Contract>::check_value(&value, &mut path, &mut problems);
            }
            // The refused value explains why the plan has no usable topK: the topK rules that
            // follow from that would only repeat it.
            let rest = check_plan(&plan, StepListRules::All, false);
            problems.extend(
                rest.into_iter().filter(|p| !matches!(p.code(), ProblemCode::TopKMissing | ProblemCode::TopKMismatch)),
            );
            return Err(Rejection::new(problems));
        }
        // With the ids settled and the step list settled by the builder's types, only the typed
        // parts are left; asked the quick question, they need the full walk only to report.
        if ids_ok && typed_parts_ok(&plan, false) {
            debug_assert!(
                check_plan(&plan, StepListRules::IdsOnly, false).is_empty(),
                "the quick check passed a builder plan the full check rejects"
            );
            return ValidPlan::sized(plan);
        }
        ValidPlan::checked(plan, StepListRules::IdsOnly, false, false)
    }

    /// `limits_checked`: the plan's free-form values are known to be within the document limits.
    /// `small`: its JSON form is known to be within [`MAX_PLAN_BYTES`].
    fn checked(
        plan: ExecutionPlan,
        rules: StepListRules,
        limits_checked: bool,
        small: bool,
    ) -> Result<ValidPlan, Rejection> {
        let problems = check_plan(&plan, rules, limits_checked);
        if !problems.is_empty() {
            return Err(Rejection::new(problems));
        }
        if small { Ok(ValidPlan { plan: plan.into() }) } else { ValidPlan::sized(plan) }
    }

    /// Holds a plan that passed every other check to the document size limit.
    fn sized(plan: ExecutionPlan) -> Result<ValidPlan, Rejection> {
        match crate::json::size::json_len_over(&plan, MAX_PLAN_BYTES) {
            None => Ok(ValidPlan { plan: plan.into() }),
            Some(len) => Err(Rejection::new(vec![too_large(Some(len))])),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &ExecutionPlan {
        &self.plan
    }

    /// The plan, owned; it is no longer known to be valid.
    pub fn into_plan(self) -> ExecutionPlan {
        std::sync::Arc::unwrap_or_clone(self.plan)
    }

    /// The metadata.
    pub fn metadata(&self) -> &PlanMetadata {
        &self.plan.metadata
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[crate::contract::plan::StepDefinition] {
        &self.plan.steps
    }

    /// The plan as compact JSON, in the library's own serialization: every object's keys in
    /// canonical (RFC 8785) order.
    pub fn to_json(&self) -> String {
        // Serializing the typed model cannot fail: every map key is a string.
        serde_json::to_string(&*self.plan).unwrap_or_default()
    }
}

impl TryFrom<ExecutionPlan> for ValidPlan {
    type Error = Rejection;
    fn try_from(plan: ExecutionPlan) -> Result<ValidPlan, Rejection> {
        ValidPlan::from_plan(plan)
    }
}

impl std::str::FromStr for ValidPlan {
    type Err = Rejection;
    fn from_str(s: &str) -> Result<ValidPlan, Rejection> {
        ValidPlan::from_slice(s.as_bytes())
    }
}

impl From<ValidPlan> for ExecutionPlan {
    fn from(p: ValidPlan) -> ExecutionPlan {
        p.into_plan()
    }
}

/// How much longer the library's JSON form of a parsed plan can be than the document it was
/// parsed from: whitespace and escapes only shrink, and a number grows at most from `1e15` (4
/// bytes) to `1000000000000000.0` (18).
const JSON_GROWTH: usize = 5;

/// The `too-large` problem, with the size when it is known.
/// The rejection of a document of `len` bytes, past [`MAX_PLAN_BYTES`].
pub(crate) fn too_large_rejection(len: usize) -> Rejection {
    Rejection::new(vec![too_large(Some(len))])
}

fn too_large(len: Option<usize>) -> Problem {
    let limit = format!("the limit is 1 MiB ({MAX_PLAN_BYTES} bytes)");
    let message = match len {
        Some(len) => format!("the document has {len} bytes; {limit}"),
        None => format!("the document has more than 1 MiB; {limit}"),
    };
    Problem::new(ProblemCode::TooLarge, String::new(), message)
}

/// The full report for a document the fast path rejected.
fn report_bytes(bytes: &[u8]) -> Vec<Problem> {
    let (parsed, mut problems) = parse_strict(bytes);
    match parsed {
        Err(fatal) => {
            problems.push(fatal);
            problems
        }
        Ok(value) => {
            let walked = walk_document(&value);
            if is_gate_failure(&walked) {
                return walked;
            }
            problems.extend(walked);
            if problems.is_empty() {
                // The walker and the typed model disagree; report rather than accept.
                let detail = serde_json::from_value::<ExecutionPlan>(value).err().map(|e| e.to_string());
                problems.push(Problem::new(
                    ProblemCode::InvalidValue,
                    String::new(),
                    detail.unwrap_or_else(|| "the document does not match the plan model".into()),
                ));
            }
            problems
        }
    }
}

fn is_gate_failure(problems: &[Problem]) -> bool {
    problems.first().is_some_and(|p| p.class() == FailureKind::FailFast)
}
