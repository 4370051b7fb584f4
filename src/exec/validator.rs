//! Validators (D-021): checks that run before each step (pre-validators, the plan's `validators`)
//! and after it (post-validators, `postValidators`), each answering Allow, Warn or Block.
//!
//! A plan names the validators it needs by [`ValidatorSignature`]: id, version and the SHA-256 of
//! the canonical JSON of the configuration. The runtime registers each validator with the same
//! three facts; a plan naming an unknown id, another version or another configuration is refused
//! before any step runs, because the run would not be reproducible.

use std::fmt;

use serde_json::Value;

use crate::contract::plan::{PlanMetadata, ValidatorSignature};
use crate::contract::registry::StepType;
use crate::contract::steps::{StepPayload, StepResult};
use crate::exec::ledger::Ledger;
use crate::hash::{Digest, config_hash};

/// A validator's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Allow,
    /// Go on, and record this message in the cycle report.
    Warn(String),
    /// Stop the cycle in `InterventionRequired` with this reason.
    Block(String),
}

/// What a validator sees of a step: everything read-only.
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// The step's id.
    pub id: &'a str,
    /// The step's type.
    pub step_type: StepType,
    /// The step's payload.
    pub payload: &'a StepPayload,
    /// The plan metadata.
    pub metadata: &'a PlanMetadata,
    /// The results of the steps before this one.
    pub ledger: &'a Ledger,
}

/// A pre- and/or post-validator.
///
/// ```
/// use planlock::{StepType, Validator, Verdict, StepView, StepResult};
/// struct NoEmptyPrompts;
/// impl Validator for NoEmptyPrompts {
///     fn after(&self, _step: &StepView<'_>, result: &StepResult) -> Verdict {
///         match result {
///             StepResult::PromptAssemble(r) if r.prompt.trim().is_empty() => Verdict::Block("empty prompt".into()),
///             _ => Verdict::Allow,
///         }
///     }
/// }
/// ```
pub trait Validator: Send + Sync + 'static {
    /// Runs before the step when the plan lists this validator in `validators`.
    fn before(&self, step: &StepView<'_>) -> Verdict {
        let _ = step;
        Verdict::Allow
    }

    /// Runs after the step, with its result, when the plan lists this validator in
    /// `postValidators`.
    fn after(&self, step: &StepView<'_>, result: &StepResult) -> Verdict {
        let _ = (step, result);
        Verdict::Allow
    }
}

/// A validator registered with the runtime.
pub(crate) struct Registered {
    pub(crate) id: String,
    pub(crate) version: String,
    pub(crate) config_hash: Digest,
    pub(crate) validator: Box<dyn Validator>,
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("id", &self.id)
            .field("version", &self.version)
            .field("config_hash", &self.config_hash)
            .finish_non_exhaustive()
    }
}

impl Registered {
    pub(crate) fn new(
        id: impl Into<String>,
        version: impl Into<String>,
        config: &Value,
        validator: impl Validator,
    ) -> Registered {
        Registered {
            id: id.into(),
            version: version.into(),
            config_hash: config_hash(config),
            validator: Box::new(validator),
        }
    }

    /// Adds this validator to `list`, in place of one with the same id.
    pub(crate) fn add_to(self, list: &mut Vec<Registered>) {
        list.retain(|v| v.id != self.id);
        list.push(self);
    }

    /// The signature a plan must carry to use this validator.
    pub(crate) fn signature(&self) -> ValidatorSignature {
        ValidatorSignature {
            id: self.id.clone(),
            version: self.version.clone(),
            config_hash: self.config_hash.to_string(),
        }
    }
}

/// Lets the pending Block of one validator at one step pass, in that step's re-run only, when a
/// paused cycle is resumed. One that names any other validator or step is refused.
///
/// Bound to what the reviewer saw ([`for_shown`](Override::for_shown)), it lets the Block pass only
/// while the re-run meets what has that digest (before the step: its input; after it: its
/// result); otherwise the validator's Block stands, the report says the approval was stale, and
/// the cycle pauses again on what is there now (CONTRACT §14).
///
/// The cycle report records the override it applied as it was given
/// ([`OverrideRecord`](crate::executor::OverrideRecord)), with the validator's reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Override {
    /// The validator whose Block is overridden.
    pub validator_id: String,
    /// The blocked step.
    pub step_id: String,
    /// Why; recorded in the cycle report.
    pub justification: String,
    /// Who decided, when known; recorded in the cycle report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// The digest of what was approved ([`Shown::digest`](crate::executor::Shown)); `None` lets
    /// the Block pass whatever the re-run meets (a record of an older version shows nothing to
    /// bind to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_digest: Option<Digest>,
    /// An approved edit of the step's payload (CONTRACT §22): the re-run hands the step this
    /// payload instead of the plan's, and `shown_digest` is the edit's digest, which the re-run
    /// must meet. Only for this re-run: the next cycle runs the plan's own payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    /// With an edit: the digest of what the step showed before it (the cycle's history keeps
    /// both digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_from: Option<Digest>,
}

impl Override {
    /// An override of `validator_id`'s Block at step `step_id`, with a justification.
    pub fn new(
        validator_id: impl Into<String>,
        step_id: impl Into<String>,
        justification: impl Into<String>,
    ) -> Override {
        Override {
            validator_id: validator_id.into(),
            step_id: step_id.into(),
            justification: justification.into(),
            by: None,
            shown_digest: None,
            payload: None,
            edited_from: None,
        }
    }

    /// With `payload` in place of the step's own (an approved edit, CONTRACT §22), bound to the
    /// edit's `digest`; `from` is what the step showed before it.
    pub fn with_edit(mut self, payload: serde_json::Value, digest: Digest, from: Option<Digest>) -> Override {
        self.payload = Some(payload);
        self.shown_digest = Some(digest);
        self.edited_from = from;
        self
    }

    /// `step` as the re-run runs it: with the approved edit's payload when this override is
    /// for it and carries one (read as the step's type reads a plan's payload), else `None`.
    pub fn edited(
        &self,
        step: &crate::contract::plan::StepDefinition,
    ) -> Option<Result<crate::contract::plan::StepDefinition, String>> {
        let payload = self.payload.as_ref().filter(|_| self.step_id == step.id)?;
        let document = serde_json::json!({"id": step.id, "type": step.step_type().wire_name(), "payload": payload});
        Some(
            serde_json::from_value(document)
                .map_err(|e| format!("the approved edit cannot be read as a payload of {}: {e}", step.step_type())),
        )
    }

    /// Binds the override to what the reviewer saw: it applies only while the re-run meets what
    /// has this digest.
    pub fn for_shown(mut self, digest: Digest) -> Override {
        self.shown_digest = Some(digest);
        self
    }

    /// Names who decided.
    pub fn by(mut self, by: impl Into<String>) -> Override {
        self.by = Some(by.into());
        self
    }

    /// Checks the justification a person gave: not blank, at most [`MAX_JUSTIFICATION_CHARS`]
    /// characters, no control character but a line break. A resume refuses an override whose
    /// justification fails this (`override-justification`), as the CLI's `--reason` does.
    ///
    /// ```
    /// use planlock::Override;
    /// assert!(Override::new("review", "remember", "checked: no personal data").check_justification().is_ok());
    /// assert!(Override::new("review", "remember", "  ").check_justification().is_err());
    /// assert!(Override::new("review", "remember", "\u{200b}\u{202e}").check_justification().is_err());
    /// ```
    pub fn check_justification(&self) -> Result<(), String> {
        check_justification(&self.justification)
    }
}

/// The longest justification an override may carry, in characters.
pub const MAX_JUSTIFICATION_CHARS: usize = 2000;

/// The rule of [`Override::check_justification`], for a justification not yet in an override.
pub fn check_justification(text: &str) -> Result<(), String> {
    // Zero-width and bidi characters alone say nothing a reviewer could read.
    if crate::text::is_blank(text) {
        return Err("a justification is required: say why the Block may pass (invisible characters are blank)".into());
    }
    let chars = text.chars().count();
    if chars > MAX_JUSTIFICATION_CHARS {
        return Err(format!("a justification has at most {MAX_JUSTIFICATION_CHARS} characters; this one has {chars}"));
    }
    match text.chars().find(|c| c.is_control() && *c != '\n') {
        Some(c) => Err(format!("a justification must not contain control characters (found U+{:04X})", u32::from(c))),
        None => Ok(()),
    }
}
