//! The typestate [`PlanBuilder`]: plans that break the order, presence or uniqueness rules do
//! not compile.
//!
//! Layer 3, beside hashing. Its states and rules are in `state.rs`, their impls generated below
//! from the registry rows.
//!
//! `PlanBuilder<S, M>` remembers the last step added (`S`: [`Start`] or a step marker from
//! [`steps`](crate::contract::steps)) and whether `metadata.topK` is set (`M`: [`NoTopK`] or [`TopK`]).
//! Each step method exists in every state, bounded on the method (so a wrong call is a
//! failed bound, E0277, whose message the rule traits write): the step comes later than the last
//! one in the canonical order ([`ComesAfter`]) and no mandatory step before it is missing
//! ([`AddedBefore`], asked of the first missing one). A generic helper states the same with one
//! bound, [`CanAdd<T>`]. A wrong call is one error whose first line names the step and the fix,
//! for example
//!
//! ```text
//! error[E0277]: `PromptAssemble` is mandatory and missing: add it before `LLMCall`
//!    |
//! 10 |         .llm_call("llm", llm());
//!    |          ^^^^^^^^ `PromptAssemble` must come before `LLMCall` in the canonical order
//! ```
//!
//! and the calls after it are not reported again. [`PlanBuilder::build`] names the first
//! missing mandatory step the same way. Every optional step also has a `maybe_` method taking
//! an `Option`, for plans whose optional steps depend on configuration; the state moves on
//! either way, so the order rules hold for what follows. The states and impls are generated
//! from the registry rows.
//!
//! What types cannot check — step ids (empty, longer than 128 characters, control characters,
//! duplicated), empty metadata strings, free-form values over the document limits — is reported
//! by `build()` as a [`Rejection`](crate::Rejection) with the validator's own codes. Ids are
//! checked and hashed as they are added, so `build()` walks them again only when one may be
//! malformed or repeated.

mod plan_builder;
mod state;

#[doc(hidden)]
pub use state::Then;
pub use state::{
    AddedBefore, BuilderState, CanAdd, ComesAfter, Complete, NoTopK, NothingMissing, Start, TopK, TopKSet, TopKState,
    TopKUnset,
};

pub use plan_builder::PlanBuilder;
