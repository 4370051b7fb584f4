//! # planlock-contract
//!
//! The contract of [planlock](https://docs.rs/planlock) on its own: what an
//! [`ExecutionPlan`] is, which steps it may hold and in which order ([`registry`]), their payload
//! and result schemas ([`schema`]), the strict validator that is the only way to a
//! [`ValidPlan`] ([`validate`]), the typestate [`PlanBuilder`] ([`builder`]), the plan and config
//! hashes ([`hash`]) and what producers in other languages call ([`producer`]).
//!
//! No async, no network, no database: the only I/O is reading a policy root's files, under the
//! bounds of `CONTRACT.md` §11. The `planlock` crate re-exports every item here under the same
//! path (`planlock::validate::ValidPlan` is `planlock_contract::validate::ValidPlan`); the Python
//! and Node bindings, the fuzz target and the compile-fail tests (`ui-tests/`) depend on this
//! crate alone.
//!
//! ```
//! use planlock_contract::{AnyObject, FailureKind, PlanBuilder, ValidPlan, schema::*};
//!
//! let plan = PlanBuilder::new("profiles/default", "chat")
//!     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
//!     .prompt_assemble("prompt", PromptAssemblePayload { template: "{{input}}".into(), vars: AnyObject::new() })
//!     .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() })
//!     .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
//!     .build()?;
//! assert_eq!(ValidPlan::from_str(&plan.to_json())?, plan);
//!
//! let bad = plan.to_json().replace(r#""type":"LLMCall""#, r#""type":"PersistSession""#);
//! assert_eq!(ValidPlan::from_str(&bad).unwrap_err().class(), FailureKind::CycleFail);
//! # Ok::<(), planlock_contract::Rejection>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The README's example is tested as the docs' are.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// Modules in the order of their layers (CONTRIBUTING.md): each imports only those above it
// here. `json`, `fsread` and `contract` are planlock's own building blocks: public so that the
// `planlock` crate can build on them, hidden because their items are reached through the
// re-exports below.

// JSON as the contract reads and writes it; reading the files the runtime trusts; text from
// outside as a person may be shown it.
#[doc(hidden)]
pub mod fsread;
#[doc(hidden)]
pub mod json;
pub mod text;
// The contract's vocabulary: the registry table, payloads and results, the plan document,
// problem codes.
#[doc(hidden)]
pub mod contract;
pub use contract::{plan, registry, schema, steps};
// Validation, the only way to a `ValidPlan`.
pub mod validate;
// The typestate builder; and what is computed from a valid plan (hashes, profiles).
pub mod builder;
pub mod hash;
#[doc(no_inline)]
pub use hash::{profile, yaml};
// What producers in other languages call: the Python and Node bindings wrap it; the grammars
// of plans a model writes.
pub mod grammar;
pub mod producer;

// The short paths of the core items, as `planlock` has them.
#[doc(no_inline)]
pub use builder::PlanBuilder;
pub use contract::json_schema::{PLAN_SCHEMA_ID, plan_json_schema};
pub use contract::problem::{Problem, ProblemCode, Rejection};
pub use contract::rules::MAX_STEP_ID_CHARS;
pub use contract::value::{AnyObject, AnyValue, PositiveInt};
#[doc(no_inline)]
pub use hash::{CanonicalError, Digest, HashParts, IdempotencyKey, canonical_json, config_hash, plan_hash};
pub use json::{MAX_DEPTH, MAX_PLAN_BYTES, MAX_SAFE_INTEGER};
#[doc(no_inline)]
pub use plan::{
    Budgets, ContractVersion, ExecutionPlan, Extensions, PlanMetadata, StepDefinition, Timeouts, ValidatorSignature,
};
#[doc(no_inline)]
pub use profile::{PolicyProfile, ProfileError};
#[doc(no_inline)]
pub use registry::{Failure, FailureKind, REGISTRY, StepClass, StepSpec, StepType};
#[doc(no_inline)]
pub use steps::{Step, StepPayload, StepResult};
#[doc(no_inline)]
pub use text::{MAX_QUOTED_CHARS, printable};
#[doc(no_inline)]
pub use validate::{PlanReadError, ValidPlan};
