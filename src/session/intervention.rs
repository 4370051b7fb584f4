//! The durable record of a paused cycle, `ops/runtime/intervention.json` (docs/CONTRACT.md,
//! "Sessions and the runtime"): what a person must decide on, and what the cycle had done
//! before it paused, so that it can be resumed after a restart.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

use super::{SessionState, Timestamp};
use crate::contract::plan::ValidatorSignature;
use crate::contract::registry::StepType;
use crate::hash::Digest;
use crate::telemetry::TraceParent;

/// The intervention file, relative to the store's root.
pub const INTERVENTION_FILE: &str = "ops/runtime/intervention.json";

/// The largest intervention file read, in bytes (4 MiB: it holds the results of the completed
/// steps).
pub const MAX_INTERVENTION_FILE_BYTES: u64 = 4 << 20;

/// Whether a pre-validator (before the step) or a post-validator (on its result) blocked it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockPhase {
    /// Before the step ran.
    Pre,
    /// After the step ran, on its result.
    Post,
}

/// A step that completed before the blocked one, with its result as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct CompletedStep {
    /// The step's id.
    pub id: String,
    /// The step's type.
    #[serde(rename = "type", with = "wire_type")]
    pub step_type: StepType,
    /// Its result, as the step's result contract writes it.
    pub result: Value,
}

/// A paused cycle, as saved: the session and plan hash it belongs to, the cycle number, the
/// blocked step, the validator and its reason, and the results of the steps before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct InterventionRecord {
    /// The session.
    pub session_id: Uuid,
    /// The plan hash the cycle ran under.
    pub plan_hash: Digest,
    /// The cycle's number (the session's completed cycles + 1).
    pub cycle: u64,
    /// The blocked step's id.
    pub step_id: String,
    /// The blocked step's type.
    #[serde(with = "wire_type")]
    pub step_type: StepType,
    /// Before or after the step.
    pub phase: BlockPhase,
    /// The validator that blocked it.
    pub validator: ValidatorSignature,
    /// The validator's reason.
    pub reason: String,
    /// The steps completed before the blocked one, in order.
    pub completed: Vec<CompletedStep>,
    /// When the cycle paused.
    pub created_at: Timestamp,
    /// What the reviewer decides on (CONTRACT §14): before the step, its input as it will run
    /// (`{ "payload", "results" }`); after it, its result. Cut past
    /// [`MAX_SHOWN_BYTES`](crate::executor::MAX_SHOWN_BYTES) (then a string: the start of its
    /// canonical JSON, and `shown_truncated`). Absent in records of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub shown: Option<Value>,
    /// SHA-256 of the whole of `shown`'s canonical JSON: what an approval names.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub shown_digest: Option<Digest>,
    /// Whether `shown` is cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shown_truncated: bool,
    /// When the pause expires (the runtime's approval TTL): a decision after it is refused, and
    /// only an abandon may follow.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "super::present")]
    pub expires_at: Option<Timestamp>,
    /// Where the paused cycle's span is in its trace (CONTRACT §16), when an OpenTelemetry layer
    /// recorded it: the resumed cycle's span continues that trace. Read leniently: a value that
    /// is not a `traceparent` is dropped, never a reason to refuse the record.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "TraceParent::lenient")]
    pub trace_parent: Option<TraceParent>,
}

crate::contract::object::map_only_serde!(InterventionRecord);
crate::contract::object::map_only_serde!(CompletedStep);

impl InterventionRecord {
    /// Whether the pause has expired at `now`.
    pub fn expired_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| now > at)
    }

    /// Whether this record is the leftover of a resume that finished: the session it belongs to
    /// has already completed its cycle under the same plan hash. A resume saves the session and
    /// then removes the record; a crash between the two leaves both, and the record then proves
    /// nothing is pending (CONTRACT §11: cleaned up, not reported as damage).
    ///
    /// ```
    /// # use planlock::session::*;
    /// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z"}"#;
    /// let record: InterventionRecord = serde_json::from_str(json)?;
    /// let session = SessionUpdate {
    ///     session_id: record.session_id, memory_ref: None, repo_scan_version: None,
    ///     last_execution_plan_hash: record.plan_hash, hash_parts: None, cycle: 1,
    /// }.into_state();
    /// assert!(record.is_leftover_of(&session));
    /// assert!(!record.is_leftover_of(&SessionState { cycle: 0, ..session }));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn is_leftover_of(&self, session: &SessionState) -> bool {
        self.session_id == session.session_id
            && self.plan_hash == session.last_execution_plan_hash
            && self.cycle <= session.cycle
    }
}

/// A step type as its wire name.
mod wire_type {
    use super::*;

    pub(super) fn serialize<S: Serializer>(ty: &StepType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(ty.wire_name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<StepType, D::Error> {
        let name = String::deserialize(d)?;
        StepType::from_wire(&name).ok_or_else(|| serde::de::Error::custom(format_args!("unknown step type `{name}`")))
    }
}
