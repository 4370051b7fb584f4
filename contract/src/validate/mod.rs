//! Layer 2, validation: the only way to obtain a [`ValidPlan`] (docs/CONTRACT.md,
//! "Validation"). Imports the contract and `json` layers.
//!
//! A rejected plan yields a [`Rejection`] listing every problem found, each with a stable
//! [`ProblemCode`], its failure class, a JSON Pointer into the document and a message that says
//! what was expected.
//!
//! Bytes take a fast path first: the typed model is deserialized directly, with the same strict
//! rules, and then checked. Only a document that fails there is parsed again into a JSON value
//! and walked, so that the report names every problem rather than the first.

mod document;
mod interpreter;
mod result;
mod step_list;
mod typed;
mod valid_plan;

// The executor's check of a handler's result (planlock's own; hidden from the API).
#[doc(hidden)]
pub use interpreter::PolicyInterpreter;
pub use result::check_result;
pub(crate) use valid_plan::too_large_rejection;
pub use valid_plan::{PlanReadError, ValidPlan};

pub use crate::contract::problem::{Problem, ProblemCode, Rejection};
