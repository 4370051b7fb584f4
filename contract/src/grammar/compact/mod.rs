//! The compact form (CONTRACT §19, amended): a model writes only what only it can decide —
//! which optional steps the plan has, and the free texts (the question, the template's other
//! variables, a memory's summary, a decision's text and strength, an evidence's summary) — and
//! planlock writes the rest with the typestate builder ([`Choices::plan`]). Its grammar is made
//! from one table of what the model writes per step (`table.rs`) and the registry, never by
//! hand; a model spells a third as many tokens as a whole plan takes.
//!
//! ```text
//! {"ContextSelect":{"question":"How do I rotate the API key?"},"RetrieveMemory":{},
//!  "PersistMemory":{"summary":"Keys rotate in the vault"}}
//! ```
//!
//! `LinkDecisionEvidence` is in the grammar only where the plan persists its decision and its
//! evidence (or the [`PlanFrame`] names them as existing), so a link never names what is not
//! there.

mod choices;
mod frame;
mod rules;
mod table;

pub use choices::Choices;
pub use frame::{DEFAULT_INSTRUCTION, DEFAULT_SESSION_REF, DEFAULT_TOP_K, PlanFrame, QUESTION_VAR};
pub use table::{MAX_QUESTION_CHARS, MAX_STRENGTH_CHARS, MAX_TEXT_CHARS, purpose};

use super::{GrammarError, GrammarFormat, write};
use crate::contract::registry::StepType;

/// What a model is told when it writes a compact answer for `frame`: the form, each step of it
/// with what it does and what it holds, from the same table as the grammar.
///
/// ```
/// use planlock_contract::grammar::{PlanFrame, compact_instructions};
/// assert!(compact_instructions(&PlanFrame::default()).contains("\"ContextSelect\": {\"question\"}"));
/// ```
pub fn compact_instructions(frame: &PlanFrame) -> String {
    let other_vars = frame.other_vars();
    let steps: Vec<String> = rules::form_steps(frame)
        .into_iter()
        .map(|ty| {
            let keys: Vec<String> = table::model_fields(ty)
                .iter()
                .map(|field| match field {
                    table::ModelField::Text { key, .. } => format!("\"{key}\""),
                    table::ModelField::Vars => {
                        let vars: Vec<String> = other_vars.iter().map(|v| format!("\"{v}\"")).collect();
                        format!("\"vars\": {{{}}}", vars.join(", "))
                    }
                })
                .collect();
            let presence = if ty.is_mandatory() { "always" } else { "optional" };
            format!("\"{ty}\": {{{}}} ({presence}: {})", keys.join(", "), table::purpose(ty))
        })
        .collect();
    let link = StepType::LinkDecisionEvidence;
    format!(
        "You plan how to reach a goal by choosing steps and writing their texts, as one JSON object and \
         nothing else. Its keys, in this order: {}. Write only the optional steps the goal needs; {link} only \
         with the decision and the evidence it links. Keep each text short.",
        steps.join("; ")
    )
}

/// The grammar of the compact answers for `frame`, in `format`.
///
/// ```
/// use planlock_contract::grammar::{GrammarFormat, PlanFrame, compact_grammar};
/// let gbnf = compact_grammar(&PlanFrame::default(), GrammarFormat::Gbnf)?;
/// assert!(gbnf.contains(r#"\"ContextSelect\":{"#));
/// # Ok::<(), planlock_contract::grammar::GrammarError>(())
/// ```
pub fn compact_grammar(frame: &PlanFrame, format: GrammarFormat) -> Result<String, GrammarError> {
    let syntax = match format {
        GrammarFormat::Gbnf => &write::GBNF,
        GrammarFormat::Lark => &write::LARK,
        GrammarFormat::JsonSchema => {
            return Ok(super::plan::ascii_pretty(&rules::compact_json_schema(frame)));
        }
    };
    let rules = rules::compact_rules(frame)?;
    let header = vec![
        format!("planlock plan choices, contract version 1: {} rules, generated from the step registry.", rules.len()),
        "planlock writes the plan of the choices (grammar::Choices::plan); the validator checks it.".to_owned(),
    ];
    Ok(syntax.write(&rules, "root", &header))
}
