//! Layer 2, validation: the only way to obtain a [`ValidPlan`] (CONTRACT "The plan document",
//! "Validation outcome: codes and failure classes"). Imports the contract and `json` layers.
//!
//! A rejected plan yields a [`Rejection`] listing every problem found, each with a stable
//! [`ProblemCode`], its failure class, a JSON Pointer into the document and a message that says
//! what was expected.
//!
//! Bytes take a fast path first: the typed model is deserialized directly, with the same strict
//! rules, and then checked. Only a document that fails there is parsed again into a JSON value
//! and walked, so that the report names every problem rather than the first.

use std::collections::HashMap;
use std::io::Read;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::contract::object::{Contract, expect_object};
use crate::contract::plan::{
    ExecutionPlan, PAYLOAD_DEPTH, PLAN_FIELDS, PlanMetadata, STEP_FIELDS, TOP_LEVEL_DEPTH, ValidatorSignature,
};
use crate::contract::registry::Failure;
use crate::contract::registry::{FailureKind, StepType, allowed_after};
use crate::contract::rules;
use crate::contract::steps::StepPayload;
use crate::contract::strict::parse_strict;
use crate::contract::value::{PositiveInt, scan_limits};
use crate::json::pointer::JsonPointer;
use crate::json::{MAX_PLAN_BYTES, type_name};

pub use crate::contract::problem::{Problem, ProblemCode, Rejection};

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
/// use planlock::ValidPlan;
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
/// # Ok::<(), planlock::Rejection>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct ValidPlan {
    plan: ExecutionPlan,
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
        if small { Ok(ValidPlan { plan }) } else { ValidPlan::sized(plan) }
    }

    /// Holds a plan that passed every other check to the document size limit.
    fn sized(plan: ExecutionPlan) -> Result<ValidPlan, Rejection> {
        match crate::json::size::json_len_over(&plan, MAX_PLAN_BYTES) {
            None => Ok(ValidPlan { plan }),
            Some(len) => Err(Rejection::new(vec![too_large(Some(len))])),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &ExecutionPlan {
        &self.plan
    }

    /// The plan, owned; it is no longer known to be valid.
    pub fn into_plan(self) -> ExecutionPlan {
        self.plan
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
        serde_json::to_string(&self.plan).unwrap_or_default()
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
        p.plan
    }
}

/// How much longer the library's JSON form of a parsed plan can be than the document it was
/// parsed from: whitespace and escapes only shrink, and a number grows at most from `1e15` (4
/// bytes) to `1000000000000000.0` (18).
const JSON_GROWTH: usize = 5;

/// The `too-large` problem, with the size when it is known.
fn too_large(len: Option<usize>) -> Problem {
    let limit = format!("the limit is 1 MiB ({MAX_PLAN_BYTES} bytes)");
    let message = match len {
        Some(len) => format!("the document has {len} bytes; {limit}"),
        None => format!("the document has more than 1 MiB; {limit}"),
    };
    Problem::new(ProblemCode::TooLarge, String::new(), message)
}

/// The full report for a document the fast path rejected.
pub(crate) fn report_bytes(bytes: &[u8]) -> Vec<Problem> {
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

/// What the plan-level rules need to know of one step, from either path.
struct StepFacts<'a> {
    index: usize,
    id: Option<&'a str>,
    ty: Option<StepType>,
    /// For an unknown type: the registered type it probably means.
    suggested: Option<StepType>,
    payload_top_k: Option<u64>,
}

/// `metadata.topK` as far as the plan-level rules are concerned.
#[derive(Clone, Copy)]
enum MetaTopK {
    Absent,
    Present(u64),
    /// Present but invalid: already reported, so the topK rules stay quiet.
    Invalid,
}

/// Whether the typed parts of `plan` (metadata, validator signatures, payloads) pass, without
/// reporting, at the depths `check_plan` walks them at.
fn typed_parts_ok(plan: &ExecutionPlan, limits_checked: bool) -> bool {
    plan.metadata.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.validators.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.post_validators.typed_ok(limits_checked, TOP_LEVEL_DEPTH)
        && plan.steps.iter().all(|s| !s.payload.has_typed_checks() || s.payload.typed_ok(limits_checked, PAYLOAD_DEPTH))
}

/// Checks a typed plan: what its types cannot guarantee, then the plan-level rules.
fn check_plan(plan: &ExecutionPlan, rules: StepListRules, limits_checked: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut path = JsonPointer::new();
    path.limits_checked = limits_checked;
    // Each part is asked the quick question first (`typed_ok`, at its depth as `Path` counts
    // it); only a part with a problem is walked again to report it.
    if !plan.metadata.typed_ok(limits_checked, TOP_LEVEL_DEPTH) {
        path.push_key("metadata");
        plan.metadata.check_typed(&mut path, &mut out);
        path.pop();
    }
    check_signatures_typed(&plan.validators, "validators", &mut path, &mut out);
    check_signatures_typed(&plan.post_validators, "postValidators", &mut path, &mut out);
    path.push_key("steps");
    // Inline for a valid plan's at most twelve steps: no allocation.
    let mut facts: smallvec::SmallVec<[StepFacts<'_>; 12]> = smallvec::SmallVec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        let id_ok = match rules::step_id(&step.id) {
            Ok(()) => true,
            Err(msg) => {
                out.push(Problem::new(ProblemCode::InvalidValue, format!("/steps/{i}/id"), msg));
                false
            }
        };
        if step.payload.has_typed_checks() && !step.payload.typed_ok(limits_checked, PAYLOAD_DEPTH) {
            path.push_index(i);
            path.push_key("payload");
            step.payload.check_typed(&mut path, &mut out);
            path.pop();
            path.pop();
        }
        let payload_top_k = match &step.payload {
            StepPayload::RetrieveMemory(p) => Some(p.top_k.get()),
            _ => None,
        };
        facts.push(StepFacts {
            index: i,
            id: id_ok.then_some(step.id.as_str()),
            ty: Some(step.step_type()),
            suggested: None,
            payload_top_k,
        });
    }
    let top_k = plan.metadata.top_k.map_or(MetaTopK::Absent, |k| MetaTopK::Present(k.get()));
    match rules {
        StepListRules::All => plan_rules(&facts, top_k, &mut out),
        StepListRules::IdsOnly => {
            duplicate_ids(&facts, &mut out);
            debug_assert!(
                {
                    let mut structure = Vec::new();
                    structure_rules(&facts, top_k, &mut structure);
                    structure.is_empty()
                },
                "the builder's types let through a plan the step-list rules reject"
            );
        }
    }
    out
}

/// Which step-list rules a typed plan still needs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepListRules {
    /// Every rule: the plan's shape is unknown.
    All,
    /// Only duplicate ids: the typestate builder's types already guarantee order, uniqueness of
    /// types, mandatory steps and topK.
    IdsOnly,
}

fn check_signatures_typed<'a>(
    sigs: &'a Vec<ValidatorSignature>,
    key: &'static str,
    path: &mut JsonPointer<'a>,
    out: &mut Vec<Problem>,
) {
    if sigs.typed_ok(path.limits_checked, TOP_LEVEL_DEPTH) {
        return;
    }
    path.push_key(key);
    sigs.check_typed(path, out);
    path.pop();
}

/// Walks a JSON document and reports every problem. The version gate comes first: when it
/// fails, only its problems are reported.
fn walk_document(doc: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut path = JsonPointer::new();
    let Some(obj) = expect_object(doc, &path, &mut out) else {
        return out;
    };
    version_gate(obj, &mut out);
    if !out.is_empty() {
        return out;
    }
    for key in obj.keys() {
        if !PLAN_FIELDS.contains(&key.as_str()) {
            out.push(Problem::unknown_field(&path, key, PLAN_FIELDS));
        }
    }
    let top_k = match obj.get("metadata") {
        None => {
            out.push(Problem::missing_field(&path, "metadata"));
            MetaTopK::Invalid
        }
        Some(m) if !m.is_object() => {
            path.push_key("metadata");
            PlanMetadata::check_value(m, &mut path, &mut out);
            path.pop();
            MetaTopK::Invalid
        }
        Some(m) => {
            path.push_key("metadata");
            PlanMetadata::check_value(m, &mut path, &mut out);
            path.pop();
            match m.get("topK") {
                None => MetaTopK::Absent,
                Some(k) => {
                    k.as_u64().and_then(PositiveInt::new).map_or(MetaTopK::Invalid, |n| MetaTopK::Present(n.get()))
                }
            }
        }
    };
    for key in ["validators", "postValidators"] {
        if let Some(v) = obj.get(key) {
            path.push_key(key);
            Vec::<ValidatorSignature>::check_value(v, &mut path, &mut out);
            path.pop();
        }
    }
    match obj.get("steps") {
        None => out.push(Problem::missing_field(&path, "steps")),
        Some(steps) => {
            path.push_key("steps");
            match steps.as_array() {
                None => out.push(Problem::wrong_type(path.pointer(), "an array of steps", steps)),
                Some(items) => {
                    let facts: Vec<_> =
                        items.iter().enumerate().map(|(i, step)| walk_step(i, step, &mut path, &mut out)).collect();
                    plan_rules(&facts, top_k, &mut out);
                }
            }
            path.pop();
        }
    }
    out
}

fn version_gate(obj: &Map<String, Value>, out: &mut Vec<Problem>) {
    let root = JsonPointer::new();
    let version_problem = match obj.get("step_contract_version") {
        None => Some(
            "required field `step_contract_version` is missing; this runtime implements contract version \"1\""
                .to_owned(),
        ),
        Some(Value::String(v)) if v == "1" => None,
        Some(Value::String(v)) => {
            Some(format!("contract version \"{v}\" is not supported; this runtime implements \"1\""))
        }
        Some(other) => Some(format!("expected the string \"1\", found {}", type_name(other))),
    };
    if let Some(msg) = version_problem {
        out.push(Problem::new(ProblemCode::UnsupportedVersion, root.child("step_contract_version"), msg));
    }
    let extensions_problem = match obj.get("extensions") {
        None => Some("required field `extensions` is missing; in contract v1 it is `[]`".to_owned()),
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(Value::Array(a)) => Some(format!("extensions must be empty in contract v1; found {} entries", a.len())),
        Some(other) => Some(format!("expected the empty array `[]`, found {}", type_name(other))),
    };
    if let Some(msg) = extensions_problem {
        out.push(Problem::new(ProblemCode::InvalidExtensions, root.child("extensions"), msg));
    }
}

fn walk_step<'a>(i: usize, step: &'a Value, path: &mut JsonPointer<'a>, out: &mut Vec<Problem>) -> StepFacts<'a> {
    let mut facts = StepFacts { index: i, id: None, ty: None, suggested: None, payload_top_k: None };
    path.push_index(i);
    if let Some(obj) = expect_object(step, path, out) {
        for key in obj.keys() {
            if !STEP_FIELDS.contains(&key.as_str()) {
                out.push(Problem::unknown_field(path, key, STEP_FIELDS));
            }
        }
        match obj.get("id") {
            None => out.push(Problem::missing_field(path, "id")),
            Some(Value::String(id)) => match rules::step_id(id) {
                Ok(()) => facts.id = Some(id),
                Err(msg) => out.push(Problem::new(ProblemCode::InvalidValue, path.child("id"), msg)),
            },
            Some(other) => out.push(Problem::wrong_type(path.child("id"), "a string", other)),
        }
        match obj.get("type") {
            None => out.push(Problem::missing_field(path, "type")),
            Some(Value::String(name)) => match StepType::from_wire(name) {
                Some(ty) => facts.ty = Some(ty),
                None => {
                    facts.suggested = StepType::nearest(name);
                    let hint = match facts.suggested {
                        Some(s) => format!("did you mean `{s}`?"),
                        None => format!(
                            "the registry has: {}",
                            StepType::ALL.iter().map(|t| t.wire_name()).collect::<Vec<_>>().join(", ")
                        ),
                    };
                    out.push(Problem::new(
                        ProblemCode::UnknownStepType,
                        path.child("type"),
                        format!("`{name}` is not a registered step type; {hint}"),
                    ));
                }
            },
            Some(other) => out.push(Problem::wrong_type(path.child("type"), "a step type name", other)),
        }
        match obj.get("payload") {
            None => out.push(Problem::missing_field(path, "payload")),
            Some(payload) => {
                if let Some(ty) = facts.ty {
                    path.push_key("payload");
                    StepPayload::check_value(ty, payload, path, out);
                    path.pop();
                    if ty == StepType::RetrieveMemory {
                        facts.payload_top_k = payload.get("topK").and_then(Value::as_u64);
                    }
                }
            }
        }
    }
    path.pop();
    facts
}

/// The rules over the whole step list: duplicates, order, mandatory steps, topK (B-007 §4,
/// D-007 metadata enforcement). Shared by both paths.
fn plan_rules(facts: &[StepFacts<'_>], top_k: MetaTopK, out: &mut Vec<Problem>) {
    duplicate_ids(facts, out);
    structure_rules(facts, top_k, out);
}

fn duplicate_ids(facts: &[StepFacts<'_>], out: &mut Vec<Problem>) {
    let mut ids = IdIndex::new(facts.len());
    for f in facts {
        let Some(id) = f.id else { continue };
        if let Some(first) = ids.first_use(id, f.index) {
            out.push(Problem::new(
                ProblemCode::DuplicateStepId,
                format!("/steps/{}/id", f.index),
                format!("step id `{id}` is already used by /steps/{first}; step ids are unique in a plan"),
            ));
        }
    }
}

/// Duplicate types, order, mandatory steps and topK: what the builder's types guarantee.
fn structure_rules(facts: &[StepFacts<'_>], top_k: MetaTopK, out: &mut Vec<Problem>) {
    let mut first_of_type: [Option<usize>; 12] = [None; 12];
    let mut last: Option<StepType> = None;
    for f in facts {
        let Some(ty) = f.ty else { continue };
        if let Some(first) = first_of_type[ty.position()] {
            out.push(Problem::new(
                ProblemCode::DuplicateStepType,
                format!("/steps/{}/type", f.index),
                format!("`{ty}` already appears at /steps/{first}; each step type appears at most once"),
            ));
            continue;
        }
        first_of_type[ty.position()] = Some(f.index);
        match last {
            Some(l) if ty < l => out.push(Problem::new(
                ProblemCode::OrderViolation,
                format!("/steps/{}/type", f.index),
                format!(
                    "`{ty}` cannot come after `{l}`: the canonical order puts it earlier; allowed after `{l}`: {}",
                    list_or_none(allowed_after(Some(l)))
                ),
            )),
            _ => last = Some(ty),
        }
        if ty == StepType::RetrieveMemory {
            match top_k {
                MetaTopK::Absent => out.push(Problem::new(
                    ProblemCode::TopKMissing,
                    "/metadata/topK".to_owned(),
                    format!(
                        "step /steps/{} is `RetrieveMemory`, which needs `metadata.topK`; there is no default",
                        f.index
                    ),
                )),
                MetaTopK::Present(k) => {
                    if let Some(p) = f.payload_top_k.filter(|&p| p != k) {
                        out.push(Problem::new(
                            ProblemCode::TopKMismatch,
                            format!("/steps/{}/payload/topK", f.index),
                            format!("payload topK is {p} but metadata.topK is {k}; they must be equal"),
                        ));
                    }
                }
                MetaTopK::Invalid => {}
            }
        }
    }
    for spec in crate::contract::registry::REGISTRY.iter().filter(|s| s.mandatory) {
        let ty = spec.step_type;
        let meant = facts.iter().any(|f| f.suggested == Some(ty));
        if first_of_type[ty.position()].is_none() && !meant {
            out.push(Problem::new(
                ProblemCode::MissingMandatoryStep,
                "/steps".to_owned(),
                format!(
                    "the plan has no `{ty}` step; it is mandatory (every plan has {})",
                    list_or_none(
                        crate::contract::registry::REGISTRY.iter().filter(|s| s.mandatory).map(|s| s.step_type)
                    )
                ),
            ));
        }
    }
}

/// Where each step id was first used. A valid plan has at most 12 steps, so a short list on the
/// stack beats hashing; a long (invalid) one uses a map so no input is quadratic.
#[allow(clippy::large_enum_variant, reason = "a short-lived local; the inline list is the point")]
enum IdIndex<'a> {
    /// The ids seen, and a 64-bit filter of their signatures: most new ids miss the filter and
    /// are never compared.
    Few(smallvec::SmallVec<[(u64, &'a str, usize); IdIndex::FEW]>, u64),
    Many(HashMap<&'a str, usize>),
}

impl<'a> IdIndex<'a> {
    const FEW: usize = 16;

    fn new(n: usize) -> Self {
        if n <= Self::FEW {
            IdIndex::Few(smallvec::SmallVec::new(), 0)
        } else {
            IdIndex::Many(HashMap::with_capacity(n))
        }
    }

    /// Length and first and last bytes: equal ids have equal signatures, so most pairs are
    /// told apart without comparing the strings.
    fn signature(id: &str) -> u64 {
        let b = id.as_bytes();
        let first = b.first().copied().unwrap_or(0);
        let last = b.last().copied().unwrap_or(0);
        ((b.len() as u64) << 16) | (u64::from(first) << 8) | u64::from(last)
    }

    /// Records `id` at `index`; returns the index of its first use if it was used before.
    fn first_use(&mut self, id: &'a str, index: usize) -> Option<usize> {
        match self {
            IdIndex::Few(seen, filter) => {
                let sig = Self::signature(id);
                let bit = 1u64 << (sig.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58);
                if *filter & bit != 0
                    && let Some(&(_, _, first)) = seen.iter().find(|(s, seen_id, _)| *s == sig && *seen_id == id)
                {
                    return Some(first);
                }
                *filter |= bit;
                seen.push((sig, id, index));
                None
            }
            IdIndex::Many(map) => match map.entry(id) {
                std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(index);
                    None
                }
            },
        }
    }
}

fn list_or_none(types: impl Iterator<Item = StepType>) -> String {
    let names: Vec<String> = types.map(|t| format!("`{t}`")).collect();
    if names.is_empty() { "nothing (it is the last step)".to_owned() } else { names.join(", ") }
}

/// Checks a handler's result against its step's result contract (B-007 §3): what its types
/// cannot say, e.g. `RetrieveMemory` returning more than `topK` items.
pub(crate) fn check_result(
    payload: &StepPayload,
    result: &crate::contract::steps::StepResult,
    metadata: &PlanMetadata,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if result.step_type() != payload.step_type() {
        out.push(Problem::new(
            ProblemCode::InvalidType,
            String::new(),
            format!("a `{}` step returned a `{}` result", payload.step_type(), result.step_type()),
        ));
        return out;
    }
    result.check_typed(&mut JsonPointer::new(), &mut out);
    if let crate::contract::steps::StepResult::RetrieveMemory(r) = result {
        let limit = metadata.top_k.map(PositiveInt::get);
        if let Some(k) = limit.filter(|&k| r.items.len() as u64 > k) {
            out.push(Problem::new(
                ProblemCode::InvalidValue,
                "/items".to_owned(),
                format!("{} items returned; RetrieveMemory returns at most topK = {k}", r.items.len()),
            ));
        }
    }
    out
}
