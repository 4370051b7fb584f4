//! Grammars for plans a model writes (CONTRACT §19): generated from the step registry and the
//! plan's JSON Schema (itself generated from the contract's field lists), never by hand, so a
//! change to the table changes the grammar.
//!
//! - [`GrammarFormat::Gbnf`] (llama.cpp's `grammar` field) and [`GrammarFormat::Lark`]
//!   (llguidance): every text they describe is a plan [`ValidPlan`](crate::validate::ValidPlan)
//!   accepts — the steps in canonical order, each type once, the mandatory ones always, each
//!   step's id its type's, `topK` agreeing, keys in one order, free-form objects holding only the
//!   keys the request names, strings, lists and numbers bounded. Compact JSON (no whitespace), so
//!   a model cannot loop on spaces.
//! - [`GrammarFormat::JsonSchema`]: a profile of the plan schema that strict structured-output
//!   engines accept (OpenAI strict mode, XGrammar, llguidance): no `oneOf`, no pattern beside
//!   lengths, every field required, optional ones as "type or null"
//!   ([`remove_optional_nulls`] takes the nulls out before validating). It cannot say what
//!   [`JSON_SCHEMA_CANNOT_SAY`] lists; the validator checks those.
//!
//! With a profile ([`GrammarRequest::profile`]) `metadata.policyProfile` is the profile's and
//! `metadata.mode` one of its modes, each mode's `topK` (a setting of `modes.yaml`) the plan's.
//!
//! Layer 4, with what producers call.
//!
//! ```
//! use planlock_contract::grammar::{GrammarFormat, GrammarRequest, grammar};
//! let gbnf = grammar(&GrammarRequest::new().vars(["question"]), GrammarFormat::Gbnf)?;
//! assert!(gbnf.contains("root ::= "));
//! assert!(gbnf.contains(r#"\"id\":\"llmcall\""#));
//! # Ok::<(), planlock_contract::grammar::GrammarError>(())
//! ```

mod compact;
mod ir;
mod plan;
mod request;
mod strict;
mod write;

pub use compact::{
    Choices, DEFAULT_INSTRUCTION, DEFAULT_SESSION_REF, DEFAULT_TOP_K, MAX_QUESTION_CHARS, MAX_STRENGTH_CHARS,
    MAX_TEXT_CHARS, PlanFrame, QUESTION_VAR, compact_grammar, compact_instructions, purpose,
};
pub use request::{
    GRAMMAR_CANNOT_SAY, GrammarError, GrammarFormat, GrammarMode, GrammarRequest, MAX_GRAMMAR_ITEMS,
    MAX_GRAMMAR_STRING_CHARS, MAX_GRAMMAR_TOP_K, grammar, step_id,
};
pub use strict::{JSON_SCHEMA_CANNOT_SAY, remove_optional_nulls};
