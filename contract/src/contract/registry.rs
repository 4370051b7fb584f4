//! The step registry: the twelve step types, their canonical order, mandatory flags and
//! failure kinds, defined once (docs/CONTRACT.md, "Step registry").
//!
//! Everything else in the crate reads this table: the validator's order and mandatory
//! checks, the executor's failure mapping, the typestate builder's legal transitions
//! (generated from the same rows by `for_each_step!`), the docs and the CLI.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How a failure propagates (PRD-007 §5).
///
/// ```
/// use planlock_contract::{FailureKind, StepType};
/// assert_eq!(StepType::PersistSession.failure_kind(), FailureKind::FailFast);
/// assert_eq!(StepType::LLMCall.failure_kind(), FailureKind::CycleFail);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FailureKind {
    /// The current cycle ends with an error; the runtime stays usable.
    CycleFail,
    /// The runtime halts: data integrity is at stake.
    FailFast,
}

impl FailureKind {
    /// The wire name, `"CycleFail"` or `"FailFast"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureKind::CycleFail => "CycleFail",
            FailureKind::FailFast => "FailFast",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every error of this crate answers the same way: which stable, machine-readable code, and
/// which failure class (how it propagates; docs/CONTRACT.md, "Execution"). A caller can log or map
/// any of them to an exit code without knowing the type.
///
/// ```
/// use planlock_contract::{Failure, FailureKind, ValidPlan};
/// let err = ValidPlan::from_str("{}").unwrap_err();
/// assert_eq!((err.code(), err.kind()), ("plan-rejected", FailureKind::FailFast));
/// ```
///
/// A handler's own error (`planlock::handler::HandlerError`) has a code but no
/// class: the registry classifies a step's failure, never the handler.
pub trait Failure: std::error::Error {
    /// A stable machine-readable code, such as `"session-in-use"`.
    fn code(&self) -> &'static str;
    /// How the failure propagates.
    fn kind(&self) -> FailureKind;
}

/// What kind of work a step does; decides which `metadata.timeouts` entry bounds it
/// (docs/CONTRACT.md, "Execution").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepClass {
    /// Pure computation in the runtime (`ContextSelect`, `PromptAssemble`, `SummarizeMemory`).
    Compute,
    /// The model call, bounded by `timeouts.llmMs`.
    Llm,
    /// Storage or file-system I/O, bounded by `timeouts.ioMs`.
    Io,
}

/// One row of the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepSpec {
    /// The step type this row describes.
    pub step_type: StepType,
    /// The wire name used in plan JSON.
    pub wire_name: &'static str,
    /// The snake-case name of the [`PlanBuilder`](crate::PlanBuilder) method that adds it.
    pub method: &'static str,
    /// Whether every plan must contain this step.
    pub mandatory: bool,
    /// How a failure of this step propagates.
    pub failure_kind: FailureKind,
    /// Which timeout bounds it.
    pub class: StepClass,
}

/// Calls `$callback!` with the registry rows, in canonical order.
///
/// Each row is `Variant "WireName" method_name mandatory|optional(maybe_method_name) FailureKind
/// Class Payload Result`. The registry table, the step markers, the payload enum and the builder's
/// transitions are all generated from this one list.
macro_rules! for_each_step {
    ($callback:ident) => {
        $callback! {
            RepoScan "RepoScan" repo_scan optional(maybe_repo_scan) CycleFail Io RepoScanPayload RepoScanResult;
            ContextSelect "ContextSelect" context_select mandatory CycleFail Compute ContextSelectPayload ContextSelectResult;
            RetrieveMemory "RetrieveMemory" retrieve_memory optional(maybe_retrieve_memory) CycleFail Io RetrieveMemoryPayload RetrieveMemoryResult;
            RetrieveDecisionContext "RetrieveDecisionContext" retrieve_decision_context optional(maybe_retrieve_decision_context) CycleFail Io RetrieveDecisionContextPayload RetrieveDecisionContextResult;
            PromptAssemble "PromptAssemble" prompt_assemble mandatory CycleFail Compute PromptAssemblePayload PromptAssembleResult;
            LLMCall "LLMCall" llm_call mandatory CycleFail Llm LlmCallPayload LlmCallResult;
            SummarizeMemory "SummarizeMemory" summarize_memory optional(maybe_summarize_memory) CycleFail Compute SummarizeMemoryPayload SummarizeMemoryResult;
            PersistMemory "PersistMemory" persist_memory optional(maybe_persist_memory) FailFast Io PersistMemoryPayload PersistMemoryResult;
            PersistDecision "PersistDecision" persist_decision optional(maybe_persist_decision) FailFast Io PersistDecisionPayload PersistDecisionResult;
            PersistEvidence "PersistEvidence" persist_evidence optional(maybe_persist_evidence) FailFast Io PersistEvidencePayload PersistEvidenceResult;
            LinkDecisionEvidence "LinkDecisionEvidence" link_decision_evidence optional(maybe_link_decision_evidence) FailFast Io LinkDecisionEvidencePayload LinkDecisionEvidenceResult;
            PersistSession "PersistSession" persist_session mandatory FailFast Io PersistSessionPayload PersistSessionResult;
        }
    };
}

macro_rules! mandatory_flag {
    (mandatory) => {
        true
    };
    (optional) => {
        false
    };
}
pub(crate) use for_each_step;

macro_rules! define_registry {
    ($($variant:ident $wire:literal $method:ident $mand:ident $(($maybe:ident))? $kind:ident $class:ident $payload:ident $result:ident;)*) => {
        /// The twelve step types of registry revision 1.1, in canonical order.
        ///
        /// `Ord` follows the canonical order.
        #[allow(clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum StepType {
            $(
                #[doc = concat!("`", $wire, "` (", stringify!($mand), ", ", stringify!($kind), ").")]
                $variant,
            )*
        }

        /// The registry table, in canonical order (docs/CONTRACT.md, "Step registry").
        pub const REGISTRY: [StepSpec; 12] = [
            $(StepSpec {
                step_type: StepType::$variant,
                wire_name: $wire,
                method: stringify!($method),
                mandatory: mandatory_flag!($mand),
                failure_kind: FailureKind::$kind,
                class: StepClass::$class,
            },)*
        ];
    };
}

for_each_step!(define_registry);

impl StepType {
    /// All step types in canonical order.
    pub const ALL: [StepType; 12] = {
        let mut all = [StepType::RepoScan; 12];
        let mut i = 0;
        while i < 12 {
            all[i] = REGISTRY[i].step_type;
            i += 1;
        }
        all
    };

    /// This type's row in [`REGISTRY`].
    pub const fn spec(self) -> &'static StepSpec {
        &REGISTRY[self as usize]
    }

    /// Zero-based position in the canonical order.
    pub const fn position(self) -> usize {
        self as usize
    }

    /// The wire name, e.g. `"LLMCall"`.
    pub const fn wire_name(self) -> &'static str {
        self.spec().wire_name
    }

    /// Whether every plan must contain this step.
    pub const fn is_mandatory(self) -> bool {
        self.spec().mandatory
    }

    /// How a failure of this step propagates.
    pub const fn failure_kind(self) -> FailureKind {
        self.spec().failure_kind
    }

    /// Which timeout bounds it.
    pub const fn class(self) -> StepClass {
        self.spec().class
    }

    /// Looks a wire name up; exact and case-sensitive.
    ///
    /// ```
    /// use planlock_contract::StepType;
    /// assert_eq!(StepType::from_wire("LLMCall"), Some(StepType::LLMCall));
    /// assert_eq!(StepType::from_wire("llmcall"), None);
    /// ```
    pub fn from_wire(name: &str) -> Option<StepType> {
        REGISTRY.iter().find(|s| s.wire_name == name).map(|s| s.step_type)
    }

    /// The registered wire name closest to `name` (case-insensitive edit distance), for
    /// "did you mean" hints.
    pub fn nearest(name: &str) -> Option<StepType> {
        REGISTRY
            .iter()
            .filter_map(|s| {
                let limit = (s.wire_name.len() / 3).max(2);
                edit_distance(name.as_bytes(), s.wire_name.as_bytes(), limit).map(|d| (d, s.step_type))
            })
            .min_by_key(|(d, _)| *d)
            .map(|(_, ty)| ty)
    }

    /// The step types that may directly follow `self` in a plan: the later ones up to and
    /// including the next mandatory step.
    pub fn allowed_next(self) -> impl Iterator<Item = StepType> {
        allowed_after(Some(self))
    }
}

/// The step types that may come next after `last` (`None`: at the start of the plan).
pub fn allowed_after(last: Option<StepType>) -> impl Iterator<Item = StepType> {
    let start = last.map_or(0, |t| t.position() + 1);
    let mut open = true;
    StepType::ALL[start..].iter().copied().take_while(move |t| {
        let take = open;
        if t.is_mandatory() {
            open = false;
        }
        take
    })
}

/// Levenshtein distance over ASCII-case-folded bytes, if it is at most `limit`. Step names are
/// short, so one row on the stack suffices; longer input has no suggestion.
fn edit_distance(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    const MAX: usize = 48;
    if a.len() >= MAX || b.len() >= MAX || a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut row = [0usize; MAX];
    for (j, cell) in row.iter_mut().enumerate().take(b.len() + 1) {
        *cell = j;
    }
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(!ca.eq_ignore_ascii_case(cb));
            let next = (diagonal + cost).min(row[j + 1] + 1).min(row[j] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    Some(row[b.len()]).filter(|&d| d <= limit)
}

impl fmt::Display for StepType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

impl Serialize for StepType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for StepType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = StepType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a registered step type")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<StepType, E> {
                StepType::from_wire(v).ok_or_else(|| E::custom(format_args!("unknown step type `{v}`")))
            }
        }
        deserializer.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_canonical_order_and_consistent() {
        for (i, spec) in REGISTRY.iter().enumerate() {
            assert_eq!(spec.step_type.position(), i);
            assert_eq!(StepType::from_wire(spec.wire_name), Some(spec.step_type));
        }
        let mandatory: Vec<_> = REGISTRY.iter().filter(|s| s.mandatory).map(|s| s.wire_name).collect();
        assert_eq!(mandatory, ["ContextSelect", "PromptAssemble", "LLMCall", "PersistSession"]);
        let fail_fast: Vec<_> =
            REGISTRY.iter().filter(|s| s.failure_kind == FailureKind::FailFast).map(|s| s.wire_name).collect();
        assert_eq!(
            fail_fast,
            ["PersistMemory", "PersistDecision", "PersistEvidence", "LinkDecisionEvidence", "PersistSession"]
        );
    }

    #[test]
    fn allowed_next_stops_at_the_next_mandatory_step() {
        let next: Vec<_> = allowed_after(None).collect();
        assert_eq!(next, [StepType::RepoScan, StepType::ContextSelect]);
        let next: Vec<_> = StepType::ContextSelect.allowed_next().collect();
        assert_eq!(next, [StepType::RetrieveMemory, StepType::RetrieveDecisionContext, StepType::PromptAssemble]);
        assert_eq!(StepType::PersistSession.allowed_next().count(), 0);
    }

    #[test]
    fn nearest_suggests_misspellings() {
        assert_eq!(StepType::nearest("LLMCal"), Some(StepType::LLMCall));
        assert_eq!(StepType::nearest("persistsession"), Some(StepType::PersistSession));
        assert_eq!(StepType::nearest("Branch"), None);
    }
}
