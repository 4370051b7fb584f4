//! What a cycle reports: every step with its status, duration and warnings, the interventions
//! that paused it and the overrides that let a Block pass.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::contract::registry::StepType;
use crate::hash::Digest;

/// When a validator ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Before the step (a pre-validator).
    Before,
    /// After the step, on its result (a post-validator).
    After,
}

/// Who gave a [`Warning`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WarnedBy {
    /// A validator's Warn, before or after the step.
    #[serde(rename_all = "camelCase")]
    Validator {
        /// The validator.
        validator_id: String,
        /// Before or after the step.
        phase: Phase,
    },
    /// The step's handler ([`StepContext::warn`](crate::StepContext::warn)): what it passed over
    /// and went on without (a stored row it could not read, say).
    Handler,
}

/// A warning recorded in the report; the step went on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Who gave it.
    pub by: WarnedBy,
    /// Its message.
    pub message: String,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepStatus {
    /// It ran and its result is in the ledger.
    Completed,
    /// A validator blocked it; the cycle is paused.
    Blocked,
    /// It failed: its handler returned an error, timed out, panicked or broke the result
    /// contract, or a validator panicked judging it. The cycle ended there.
    Failed,
}

/// One step of the cycle report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The step's position in the plan.
    pub index: usize,
    /// The step's id (empty in a record of an older version, which kept only the type).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// The step's type.
    pub step_type: StepType,
    /// How it ended.
    pub status: StepStatus,
    /// How long it took, validators included.
    pub duration: Duration,
    /// The validators' and the handler's warnings.
    pub warnings: Vec<Warning>,
    /// The tokens a model reported using for this step, when its handler recorded them
    /// ([`StepContext::record_usage`](crate::StepContext::record_usage)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

impl StepRecord {
    /// The step as people read it everywhere: its id with its type, `remember (PersistMemory)`
    /// (the type alone in a record of an older version).
    pub fn label(&self) -> String {
        match self.id.is_empty() {
            true => self.step_type.to_string(),
            false => format!("{} ({})", self.id, self.step_type),
        }
    }
}

/// Tokens a model server reported using (its `usage.prompt_tokens` and
/// `usage.completion_tokens`).
///
/// ```
/// use planlock::executor::TokenUsage;
///
/// let a = TokenUsage { input: 12, output: 3 };
/// assert_eq!(a + TokenUsage { input: 1, output: 1 }, TokenUsage { input: 13, output: 4 });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens read: the prompt.
    pub input: u64,
    /// Tokens written: the answer.
    pub output: u64,
}

impl std::ops::Add for TokenUsage {
    type Output = TokenUsage;
    fn add(self, other: TokenUsage) -> TokenUsage {
        TokenUsage { input: self.input.saturating_add(other.input), output: self.output.saturating_add(other.output) }
    }
}

/// A validator's Block that paused the cycle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intervention {
    /// The blocked step's position in the plan.
    pub step_index: usize,
    /// The blocked step's id.
    pub step_id: String,
    /// The blocked step's type.
    pub step_type: StepType,
    /// The validator that blocked it.
    pub validator_id: String,
    /// Before or after the step.
    pub phase: Phase,
    /// The validator's reason.
    pub reason: String,
}

/// An override that let a Block pass: the override as it was given (its validator and step,
/// the justification, who decided, the digest it was bound to), and the reason the validator
/// gave. Its JSON is one flat object, as before the override was kept whole.
///
/// ```
/// use planlock::executor::OverrideRecord;
/// let kept = r#"{"step_id":"remember","validator_id":"review","reason":"pii","justification":"checked","by":"ada"}"#;
/// let record: OverrideRecord = serde_json::from_str(kept)?;
/// assert_eq!((record.approved.step_id.as_str(), record.reason.as_str()), ("remember", "pii"));
/// let json = serde_json::to_value(&record)?;
/// assert_eq!((&json["justification"], &json["by"]), (&"checked".into(), &"ada".into()), "one flat object");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverrideRecord {
    /// The override applied.
    #[serde(flatten)]
    pub approved: crate::exec::validator::Override,
    /// The reason the validator gave.
    pub reason: String,
}

/// An approval that did not apply (`approval-stale`): the re-run met something other than what
/// was approved, so the validator judged it like any other (CONTRACT §14).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleApproval {
    /// The step.
    pub step_id: String,
    /// The validator the approval named.
    pub validator_id: String,
    /// The digest that was approved.
    pub approved: Digest,
    /// The digest of what the re-run met.
    pub met: Digest,
}

/// What happened in a cycle: every step with its status, duration and warnings, the
/// interventions and the overrides.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CycleReport {
    /// The steps that ran, in order (a resumed step appears once per attempt).
    pub steps: Vec<StepRecord>,
    /// Every Block that paused this cycle.
    pub interventions: Vec<Intervention>,
    /// Every override used.
    pub overrides: Vec<OverrideRecord>,
    /// Every approval that did not apply because the re-run met something else.
    pub stale: Vec<StaleApproval>,
    /// The trace the cycle's spans are in (32 hex digits), when an OpenTelemetry layer recorded
    /// them (`otel` feature): what a trace UI's link names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

impl CycleReport {
    /// Every warning, with the index of its step.
    pub fn warnings(&self) -> impl Iterator<Item = (usize, &Warning)> {
        self.steps.iter().flat_map(|s| s.warnings.iter().map(move |w| (s.index, w)))
    }

    /// The tokens the cycle's model calls reported, summed over its steps; `None` when no step
    /// recorded any (a demo model, a server that does not report usage).
    pub fn usage(&self) -> Option<TokenUsage> {
        self.steps.iter().filter_map(|s| s.usage).reduce(|a, b| a + b)
    }

    /// How the step at plan position `index` ended in this cycle (its last attempt); `None` for
    /// a step this report does not name: one that never ran, or, in a resumed cycle, one that
    /// completed before the pause (its result was restored, not run again).
    pub fn status_of(&self, index: usize) -> Option<StepStatus> {
        self.steps.iter().rev().find(|s| s.index == index).map(|s| s.status)
    }
}
