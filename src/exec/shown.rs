//! What a reviewer is shown when a validator blocks a step, and the digest an approval binds to
//! (CONTRACT §14): before the step, its input as it will run — its payload and the results of the
//! steps before it, by id; after the step, its result. The digest is SHA-256 of the whole value's
//! canonical JSON (RFC 8785); what is kept to show is the value itself up to
//! [`MAX_SHOWN_BYTES`], past that the start of its canonical text with `truncated` set.
//!
//! Layer 4, with the executor, which computes it where it judges: so that an approval applies to
//! the re-run only while the re-run meets what was approved.

use serde_json::{Map, Value};

use crate::contract::plan::StepDefinition;
use crate::contract::steps::StepResult;
use crate::exec::ledger::Ledger;
use crate::hash::{Digest, canonical_json};

/// The most bytes of `shown` kept whole (64 KiB of its canonical JSON); a larger one is kept cut,
/// and its digest still covers the whole.
pub const MAX_SHOWN_BYTES: usize = 64 << 10;

/// What a reviewer is shown, as kept, and its digest.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    /// The value, or (when `truncated`) a string holding the first [`MAX_SHOWN_BYTES`] of its
    /// canonical JSON.
    pub value: Value,
    /// SHA-256 of the whole value's canonical JSON.
    pub digest: Digest,
    /// Whether `value` is cut.
    pub truncated: bool,
}

impl Shown {
    /// Before `step` runs: `{ "payload": …, "results": { "<id>": … } }`, the results of the steps
    /// of `steps` before it that the ledger holds, in plan order.
    ///
    /// ```
    /// use planlock::executor::Shown;
    /// use planlock::{AnyObject, StepDefinition, ledger::Ledger, schema::*, steps::*};
    /// let step = StepDefinition::new("llm", LLMCall::wrap(LlmCallPayload { prompt: "p".into(), config: AnyObject::new() }));
    /// let shown = Shown::before(&step, &[step.clone()], &Ledger::default());
    /// assert_eq!(shown.value, serde_json::json!({"payload": {"config": {}, "prompt": "p"}, "results": {}}));
    /// assert_eq!(shown.digest, Shown::of(shown.value.clone()).digest);
    /// ```
    pub fn before(step: &StepDefinition, steps: &[StepDefinition], ledger: &Ledger) -> Shown {
        let mut results = Map::new();
        for earlier in steps.iter().take_while(|s| s.id != step.id) {
            if let Some(result) = ledger.by_type(earlier.step_type()) {
                results.insert(earlier.id.clone(), serde_json::to_value(result).unwrap_or(Value::Null));
            }
        }
        let payload = serde_json::to_value(&step.payload).unwrap_or(Value::Null);
        let mut shown = Map::new();
        shown.insert("payload".into(), payload);
        shown.insert("results".into(), Value::Object(results));
        Shown::of(Value::Object(shown))
    }

    /// After a step ran: its result.
    pub fn after(result: &StepResult) -> Shown {
        Shown::of(serde_json::to_value(result).unwrap_or(Value::Null))
    }

    /// `value` as kept, with its digest.
    pub fn of(value: Value) -> Shown {
        // A value of JSON's data model always has a canonical form (no NaN, no lone surrogate).
        let text = canonical_json(&value).unwrap_or_default();
        let digest = Digest::of(&text);
        if text.len() <= MAX_SHOWN_BYTES {
            return Shown { value, digest, truncated: false };
        }
        let mut start = String::from_utf8(text).unwrap_or_default();
        start.truncate(start.floor_char_boundary(MAX_SHOWN_BYTES));
        Shown { value: Value::String(start), digest, truncated: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_value_is_cut_at_a_character_and_its_digest_covers_the_whole() {
        let big = Value::String("é".repeat(MAX_SHOWN_BYTES));
        let shown = Shown::of(big.clone());
        assert!(shown.truncated);
        let Value::String(start) = &shown.value else { panic!("kept as text") };
        assert!(start.len() <= MAX_SHOWN_BYTES && start.starts_with("\"éé"));
        assert_eq!(shown.digest, Digest::of(&canonical_json(&big).unwrap()));
        assert!(!Shown::of(Value::from("small")).truncated);
    }
}
