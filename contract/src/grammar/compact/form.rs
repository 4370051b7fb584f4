//! What a compact answer is, as the model is told it and as its grammar says it.

use super::PlanFrame;
use super::{rules, table};
use crate::contract::registry::StepType;
use crate::grammar::{GrammarError, GrammarFormat, write};

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
            return Ok(crate::grammar::plan::ascii_pretty(&rules::compact_json_schema(frame)));
        }
    };
    let rules = rules::compact_rules(frame)?;
    let header = vec![
        format!("planlock plan choices, contract version 1: {} rules, generated from the step registry.", rules.len()),
        "planlock writes the plan of the choices (grammar::Choices::plan); the validator checks it.".to_owned(),
    ];
    Ok(syntax.write(&rules, "root", &header))
}
