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
mod form;
mod frame;
mod rules;
mod table;

pub use choices::Choices;
pub use form::{compact_grammar, compact_instructions};
pub use frame::{DEFAULT_INSTRUCTION, DEFAULT_SESSION_REF, DEFAULT_TOP_K, PlanFrame, QUESTION_VAR};
pub use table::{MAX_QUESTION_CHARS, MAX_STRENGTH_CHARS, MAX_TEXT_CHARS, purpose};
