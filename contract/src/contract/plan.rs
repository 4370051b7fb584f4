//! The plan document (docs/CONTRACT.md, "The plan document"): [`ExecutionPlan`], its
//! [`PlanMetadata`], its steps and its validator signatures.
//!
//! These types describe a plan's shape. They do not promise the plan is valid: only a
//! [`ValidPlan`](crate::ValidPlan) does, and only validation makes one.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

use crate::contract::object::contract_object;
use crate::contract::registry::StepType;
use crate::contract::rules::{NON_EMPTY, SHA256_HEX};
use crate::contract::steps::{PayloadSeed, StepPayload};
use crate::contract::strict::StrictSeed;
use crate::contract::value::PositiveInt;

/// A top-level member (`/metadata`, `/validators`) sits at depth 2, as `JsonPointer` counts.
pub const TOP_LEVEL_DEPTH: usize = 2;
/// A payload object sits at `/steps/N/payload`: depth 4.
pub const PAYLOAD_DEPTH: usize = 4;

/// `step_contract_version`: always the string `"1"` (registry revision 1.1 is additive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ContractVersion;

impl ContractVersion {
    /// The only wire value.
    pub const WIRE: &'static str = "1";
}

impl Serialize for ContractVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(Self::WIRE)
    }
}

impl<'de> Deserialize<'de> for ContractVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ContractVersion;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the string \"1\"")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ContractVersion, E> {
                if v == ContractVersion::WIRE {
                    Ok(ContractVersion)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
        d.deserialize_str(V)
    }
}

/// `extensions`: always the empty array in contract version 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Extensions;

impl Serialize for Extensions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_seq(Some(0)).and_then(serde::ser::SerializeSeq::end)
    }
}

impl<'de> Deserialize<'de> for Extensions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Extensions;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an empty array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Extensions, A::Error> {
                match seq.next_element::<IgnoredAny>()? {
                    None => Ok(Extensions),
                    Some(_) => Err(de::Error::invalid_length(1, &self)),
                }
            }
        }
        d.deserialize_seq(V)
    }
}

contract_object! {
    /// `metadata.timeouts`, in milliseconds. An absent value means no deadline.
    pub struct Timeouts {
        /// Bounds the I/O steps: `RepoScan`, the `Retrieve*` and `Persist*` steps.
        opt io_ms: PositiveInt = "ioMs",
        /// Bounds the `LLMCall` step.
        opt llm_ms: PositiveInt = "llmMs",
    }
}

contract_object! {
    /// `metadata.budgets`.
    pub struct Budgets {
        /// The prompt's token budget.
        opt prompt_tokens: PositiveInt = "promptTokens",
    }
}

contract_object! {
    /// The plan metadata (PRD-007 §6): exactly these five keys, no others.
    pub struct PlanMetadata {
        /// Budgets.
        opt budgets: Budgets = "budgets",
        /// The mode.
        req mode: String = "mode" where NON_EMPTY,
        /// The policy profile directory, relative to the policy root.
        req policy_profile: String = "policyProfile" where NON_EMPTY,
        /// Deadlines.
        opt timeouts: Timeouts = "timeouts",
        /// How many memory items `RetrieveMemory` may return; required when the plan has one.
        opt top_k: PositiveInt = "topK",
    }
}

impl PlanMetadata {
    /// Metadata with the two required keys and nothing else.
    ///
    /// ```
    /// let m = planlock_contract::PlanMetadata::new("profiles/default", "chat");
    /// assert!(m.top_k.is_none());
    /// ```
    pub fn new(policy_profile: impl Into<String>, mode: impl Into<String>) -> Self {
        PlanMetadata {
            policy_profile: policy_profile.into(),
            mode: mode.into(),
            top_k: None,
            timeouts: None,
            budgets: None,
        }
    }
}

contract_object! {
    /// A validator the plan requires, pinned by version and configuration (D-021).
    pub struct ValidatorSignature {
        /// SHA-256 (lowercase hex) of the JCS form of the validator's configuration.
        req config_hash: String = "config_hash" where SHA256_HEX,
        /// The validator's id.
        req id: String = "id" where NON_EMPTY,
        /// The validator's logic version.
        req version: String = "version" where NON_EMPTY,
    }
}

/// One step of a plan: `{ "id", "type", "payload" }`. The type is the payload's variant.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDefinition {
    /// The step's id, unique in the plan; the tracing key.
    pub id: String,
    /// The typed payload.
    pub payload: StepPayload,
}

impl StepDefinition {
    /// A step with this id and payload.
    pub fn new(id: impl Into<String>, payload: impl Into<StepPayload>) -> Self {
        StepDefinition { id: id.into(), payload: payload.into() }
    }

    /// The step's type.
    pub fn step_type(&self) -> StepType {
        self.payload.step_type()
    }
}

impl Serialize for StepDefinition {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Canonical (JCS) key order, so hashing never reorders a step.
        let mut st = s.serialize_struct("StepDefinition", 3)?;
        st.serialize_field("id", &self.id)?;
        st.serialize_field("payload", &self.payload)?;
        st.serialize_field("type", &self.step_type())?;
        st.end()
    }
}

impl crate::json::canonical::Canonical for StepDefinition {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        use crate::json::canonical::write_const_key;
        write_const_key(out, "{\"id\":");
        self.id.write_canonical(out);
        write_const_key(out, ",\"payload\":");
        self.payload.write_canonical(out);
        write_const_key(out, ",\"type\":");
        self.step_type().wire_name().write_canonical(out);
        out.push(b'}');
    }
}

impl crate::json::size::JsonLenBound for StepDefinition {
    fn json_len_bound(&self) -> usize {
        use crate::json::size::member_overhead;
        2 + member_overhead("id")
            + self.id.json_len_bound()
            + member_overhead("payload")
            + self.payload.json_len_bound()
            + member_overhead("type")
            + self.step_type().wire_name().json_len_bound()
    }
}

impl<'de> Deserialize<'de> for StepDefinition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_struct("StepDefinition", STEP_FIELDS, StepVisitor)
    }
}

pub const STEP_FIELDS: &[&str] = &["id", "type", "payload"];

struct StepVisitor;

impl<'de> Visitor<'de> for StepVisitor {
    type Value = StepDefinition;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step object { id, type, payload }")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StepDefinition, A::Error> {
        let mut id: Option<String> = None;
        let mut ty: Option<StepType> = None;
        let mut payload: Option<StepPayload> = None;
        // A payload seen before its type is held as a value until the type is known.
        let mut early: Option<serde_json::Value> = None;
        while let Some(key) = map.next_key::<StepKey>()? {
            match key {
                StepKey::Id if id.is_some() => return Err(de::Error::duplicate_field("id")),
                StepKey::Id => id = Some(map.next_value()?),
                StepKey::Type if ty.is_some() => return Err(de::Error::duplicate_field("type")),
                StepKey::Type => ty = Some(map.next_value()?),
                StepKey::Payload if payload.is_some() || early.is_some() => {
                    return Err(de::Error::duplicate_field("payload"));
                }
                StepKey::Payload => match ty {
                    Some(t) => payload = Some(map.next_value_seed(PayloadSeed(t))?),
                    None => early = Some(map.next_value_seed(StrictSeed { depth: PAYLOAD_DEPTH, ctx: None })?),
                },
            }
        }
        let id = id.ok_or_else(|| de::Error::missing_field("id"))?;
        let ty = ty.ok_or_else(|| de::Error::missing_field("type"))?;
        let payload = match (payload, early) {
            (Some(p), _) => p,
            (None, Some(v)) => PayloadSeed(ty).deserialize(v).map_err(de::Error::custom)?,
            (None, None) => return Err(de::Error::missing_field("payload")),
        };
        Ok(StepDefinition { id, payload })
    }
}

enum StepKey {
    Id,
    Type,
    Payload,
}

impl<'de> Deserialize<'de> for StepKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StepKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`id`, `type` or `payload`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepKey, E> {
                match v {
                    "id" => Ok(StepKey::Id),
                    "type" => Ok(StepKey::Type),
                    "payload" => Ok(StepKey::Payload),
                    other => Err(E::unknown_field(other, STEP_FIELDS)),
                }
            }
        }
        d.deserialize_identifier(V)
    }
}

/// An execution plan: a flat, ordered list of typed steps with its metadata (docs/CONTRACT.md, "The
/// plan document").
///
/// Its JSON form always writes `validators` and `postValidators` (a legacy plan without them
/// reads as `[]`, so both hash the same).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct ExecutionPlan {
    /// Always `"1"`.
    pub step_contract_version: ContractVersion,
    /// Always `[]`.
    pub extensions: Extensions,
    /// The plan metadata.
    pub metadata: PlanMetadata,
    /// Validators run before each step.
    #[serde(default)]
    pub validators: Vec<ValidatorSignature>,
    /// Validators run after each step.
    #[serde(default, rename = "postValidators")]
    pub post_validators: Vec<ValidatorSignature>,
    /// The steps, in order.
    pub steps: Vec<StepDefinition>,
}

crate::contract::object::map_only_serde!(@deserialize ExecutionPlan);

impl Serialize for ExecutionPlan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Canonical (JCS) key order, so hashing never reorders the plan.
        let mut st = s.serialize_struct("ExecutionPlan", 6)?;
        st.serialize_field("extensions", &self.extensions)?;
        st.serialize_field("metadata", &self.metadata)?;
        st.serialize_field("postValidators", &self.post_validators)?;
        st.serialize_field("step_contract_version", &self.step_contract_version)?;
        st.serialize_field("steps", &self.steps)?;
        st.serialize_field("validators", &self.validators)?;
        st.end()
    }
}

/// The top-level fields of a plan document.
pub const PLAN_FIELDS: &[&str] =
    &["step_contract_version", "extensions", "metadata", "validators", "postValidators", "steps"];

impl crate::json::canonical::Canonical for ExecutionPlan {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        use crate::json::canonical::write_const_key;
        // Keys in canonical order; `extensions` is always `[]` and the version always "1".
        write_const_key(out, "{\"extensions\":[],\"metadata\":");
        self.metadata.write_canonical(out);
        write_const_key(out, ",\"postValidators\":");
        self.post_validators.write_canonical(out);
        write_const_key(out, ",\"step_contract_version\":");
        ContractVersion::WIRE.write_canonical(out);
        write_const_key(out, ",\"steps\":");
        self.steps.write_canonical(out);
        write_const_key(out, ",\"validators\":");
        self.validators.write_canonical(out);
        out.push(b'}');
    }
}

impl crate::json::size::JsonLenBound for ExecutionPlan {
    fn json_len_bound(&self) -> usize {
        use crate::json::size::member_overhead;
        // The fixed members: `"extensions":[],` and `"step_contract_version":"1",`.
        2 + member_overhead("extensions")
            + 2
            + member_overhead("step_contract_version")
            + 3
            + member_overhead("metadata")
            + self.metadata.json_len_bound()
            + member_overhead("postValidators")
            + self.post_validators.json_len_bound()
            + member_overhead("steps")
            + self.steps.json_len_bound()
            + member_overhead("validators")
            + self.validators.json_len_bound()
    }
}

impl ExecutionPlan {
    /// A plan with these metadata and steps, no validators.
    pub fn new(metadata: PlanMetadata, steps: Vec<StepDefinition>) -> Self {
        ExecutionPlan {
            step_contract_version: ContractVersion,
            extensions: Extensions,
            metadata,
            validators: Vec::new(),
            post_validators: Vec::new(),
            steps,
        }
    }
}
