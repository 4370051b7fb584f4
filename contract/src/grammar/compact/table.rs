//! What the model writes of each step, by step type: the one table the compact grammar, its
//! JSON Schema and the reading of an answer are all made from (with the registry's order and
//! mandatory flags). A new step type does not compile until it has a row here.

use crate::contract::registry::StepType;

/// The longest question a model writes, in characters.
pub const MAX_QUESTION_CHARS: u32 = 200;

/// The longest text a model writes in any other field (a summary, a decision's text, a
/// variable), in characters: short texts are what keeps a plan fast to write.
pub const MAX_TEXT_CHARS: u32 = 160;

/// The longest strength of a decision (`must`, `should`, …), in characters.
pub const MAX_STRENGTH_CHARS: u32 = 24;

/// One field a model writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelField {
    /// A text under this key, of 1 to `max` characters.
    Text { key: &'static str, max: u32 },
    /// The template's variables the request names (all but `question`), each a text, under
    /// `vars`.
    Vars,
}

/// The model's fields of a step of type `ty`, in the order it writes them. Everything else of
/// the step is planlock's to write (`choices.rs`).
pub(crate) const fn model_fields(ty: StepType) -> &'static [ModelField] {
    use ModelField::{Text, Vars};
    match ty {
        StepType::ContextSelect => &[Text { key: "question", max: MAX_QUESTION_CHARS }],
        StepType::PromptAssemble => &[Vars],
        StepType::PersistMemory => &[Text { key: "summary", max: MAX_TEXT_CHARS }],
        StepType::PersistDecision => {
            &[Text { key: "text", max: MAX_TEXT_CHARS }, Text { key: "strength", max: MAX_STRENGTH_CHARS }]
        }
        StepType::PersistEvidence => &[Text { key: "summary", max: MAX_TEXT_CHARS }],
        StepType::RepoScan
        | StepType::RetrieveMemory
        | StepType::RetrieveDecisionContext
        | StepType::LLMCall
        | StepType::SummarizeMemory
        | StepType::LinkDecisionEvidence
        | StepType::PersistSession => &[],
    }
}

/// What a step of type `ty` does, in the words a model is told when it chooses.
pub const fn purpose(ty: StepType) -> &'static str {
    match ty {
        StepType::RepoScan => "scan the code repository",
        StepType::ContextSelect => "the question the plan answers",
        StepType::RetrieveMemory => "recall earlier memories",
        StepType::RetrieveDecisionContext => "load the decisions in force",
        StepType::PromptAssemble => "the prompt's other variables",
        StepType::LLMCall => "ask the model",
        StepType::SummarizeMemory => "summarize the answer",
        StepType::PersistMemory => "remember a summary",
        StepType::PersistDecision => "record a decision: its text and strength (must, should, may)",
        StepType::PersistEvidence => "record evidence: its summary",
        StepType::LinkDecisionEvidence => "link the recorded decision to the recorded evidence",
        StepType::PersistSession => "save the session",
    }
}

/// What a step needs that an earlier step of the same plan writes, or the request names as
/// existing: `LinkDecisionEvidence` links a decision and an evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// A decision: `PersistDecision`'s, or the request's existing one.
    Decision,
    /// An evidence: `PersistEvidence`'s, or the request's existing one.
    Evidence,
}

impl Need {
    /// The step that provides it in the same plan.
    pub(crate) const fn provider(self) -> StepType {
        match self {
            Need::Decision => StepType::PersistDecision,
            Need::Evidence => StepType::PersistEvidence,
        }
    }
}

/// What a step of type `ty` needs.
pub(crate) const fn needs(ty: StepType) -> &'static [Need] {
    match ty {
        StepType::LinkDecisionEvidence => &[Need::Decision, Need::Evidence],
        _ => &[],
    }
}

/// Whether a step of type `ty` is in the compact form: every optional step (choosing it is the
/// model's), and a mandatory one the model writes something of. `PromptAssemble` is there only
/// when the request names variables beside `question`.
pub(crate) fn in_form(ty: StepType, other_vars: &[String]) -> bool {
    !ty.is_mandatory()
        || model_fields(ty).iter().any(|field| match field {
            ModelField::Text { .. } => true,
            ModelField::Vars => !other_vars.is_empty(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::registry::REGISTRY;

    #[test]
    fn each_need_is_provided_by_an_optional_step_that_comes_before() {
        for spec in &REGISTRY {
            for need in needs(spec.step_type) {
                assert!(need.provider() < spec.step_type);
                assert!(!need.provider().is_mandatory());
            }
        }
    }

    #[test]
    fn the_mandatory_steps_without_text_are_left_out() {
        let form: Vec<StepType> = REGISTRY.iter().map(|s| s.step_type).filter(|t| in_form(*t, &[])).collect();
        assert!(form.contains(&StepType::ContextSelect));
        assert!(!form.contains(&StepType::LLMCall) && !form.contains(&StepType::PersistSession));
        assert!(!form.contains(&StepType::PromptAssemble));
        assert!(in_form(StepType::PromptAssemble, &["context".to_owned()]));
    }
}
