//! An edit of a paused step's payload (CONTRACT §22): a reviewer's replacement for what the
//! step will do, kept in the decision that makes it. It binds by its own digest — the digest of
//! what the edited step shows, `{payload: the edit, results: as the pause showed them}` — which
//! is what the other approvers approve and what the re-run must meet.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{BlockPhase, InterventionRecord};
use crate::exec::executor::Shown;
use crate::hash::Digest;

/// The replacement of a paused step's payload, and the digest of what the edited step shows.
///
/// ```
/// use planlock::session::{Edit, InterventionRecord};
/// # let json = r#"{"sessionId":"6f1c1b8e-4a55-4d1f-9a57-8a4f0f7c2a11","planHash":"0000000000000000000000000000000000000000000000000000000000000000","cycle":1,"stepId":"s","stepType":"PersistMemory","phase":"pre","validator":{"id":"v","version":"1","config_hash":"0000000000000000000000000000000000000000000000000000000000000000"},"reason":"r","completed":[],"createdAt":"2026-01-01T00:00:00Z","shown":{"payload":{"summary":"a"},"results":{}},"shownDigest":"0000000000000000000000000000000000000000000000000000000000000000"}"#;
/// # let record: InterventionRecord = serde_json::from_str(json)?;
/// let edit = Edit::of(&record, serde_json::json!({"summary": "b"})).unwrap();
/// assert_ne!(Some(edit.digest), record.shown_digest, "its own digest");
/// assert_eq!(edit.shown(&record).unwrap()["payload"]["summary"], "b");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Edit {
    /// The payload the step runs with once the edit is approved (as the validator normalised
    /// it: what the step's type reads back).
    pub payload: Value,
    /// The digest of what the edited step shows: what its approvals bind to.
    pub digest: Digest,
}

/// Why a pause's step cannot be edited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotEditable {
    /// The pause came after its step ran (its result is what was shown): there is nothing to
    /// edit.
    #[error(
        "the step already ran (this pause is a review of its result): there is nothing to edit; approve, reject or abandon"
    )]
    AfterStep,
    /// The record shows no whole input to edit (a record of an older version, or one cut to
    /// 64 KiB), or the edit itself is past 64 KiB.
    #[error(
        "what this pause shows is not whole (or the edit is past 64 KiB): it cannot be edited here; approve, reject or abandon"
    )]
    NotWhole,
}

impl Edit {
    /// The edit of `record`'s step to `payload`: its digest is that of what the record shows
    /// with `payload` in place of the step's own. Refused for a pause after its step, or one
    /// that does not show its whole input.
    pub fn of(record: &InterventionRecord, payload: Value) -> Result<Edit, NotEditable> {
        let shown = edited_shown(record, &payload)?;
        let shown = Shown::of(shown);
        if shown.truncated {
            return Err(NotEditable::NotWhole);
        }
        Ok(Edit { payload, digest: shown.digest })
    }

    /// What the edited step shows: `record`'s `shown` with this payload in place.
    pub fn shown(&self, record: &InterventionRecord) -> Result<Value, NotEditable> {
        edited_shown(record, &self.payload)
    }

    /// Whether this edit is one of `record`'s step whose digest is right.
    pub fn is_of(&self, record: &InterventionRecord) -> bool {
        Edit::of(record, self.payload.clone()).is_ok_and(|again| again.digest == self.digest)
    }
}

fn edited_shown(record: &InterventionRecord, payload: &Value) -> Result<Value, NotEditable> {
    if record.phase != BlockPhase::Pre {
        return Err(NotEditable::AfterStep);
    }
    match (&record.shown, record.shown_truncated) {
        (Some(Value::Object(shown)), false) if shown.contains_key("payload") => {
            let mut edited = Map::new();
            edited.insert("payload".into(), payload.clone());
            edited.insert("results".into(), shown.get("results").cloned().unwrap_or(Value::Object(Map::new())));
            Ok(Value::Object(edited))
        }
        _ => Err(NotEditable::NotWhole),
    }
}
