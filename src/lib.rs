//! # planlock
//!
//! The contract-locked core of an AI orchestration runtime. A policy layer produces an
//! [`ExecutionPlan`]: a flat list of typed steps in a fixed canonical order
//! (`ContextSelect` → … → `LLMCall` → … → `PersistSession`). planlock makes wrong plans
//! impossible to write in Rust and impossible to sneak in from outside:
//!
//! - **In Rust**, the typestate [`PlanBuilder`] only offers the steps that may come next, and
//!   `build()` does not exist until every mandatory step is in.
//! - **From outside**, [`ValidPlan`] is obtainable only by validation, which reports every
//!   problem with a stable [`ProblemCode`], a JSON Pointer and its failure class
//!   ([`FailureKind::CycleFail`] or [`FailureKind::FailFast`]).
//!
//! - **At run time**, the flat [`Executor`] runs a [`ValidPlan`] step by step with typed async
//!   [`Handler`]s, records a read-only [`Ledger`], applies the failure semantics, deadlines and
//!   validators, and the [`runtime`] with its [`session::FileSessionStore`] gives Cold Start,
//!   Resume, or FailFast when the plan or policy changed.
//! - **Meeting the outside**: memories and decisions behind the D-021 ports in [`store`]
//!   (embedded SQLite by default), minijinja prompts and an OpenAI-compatible model in
//!   [`handlers`], and [`plan_json_schema`] for producers in other languages.
//!
//! The rules live in one place each: the step table in [`registry`], the payload and result
//! schemas in [`schema`], the document in [`plan`], the checks in [`validate`], the builder in
//! [`builder`], execution in [`executor`], hashing in [`hash`], sessions in [`session`] and
//! [`runtime`]. `docs/CONTRACT.md` in the repository states every rule and decision.
//!
//! ```
//! use planlock::{AnyObject, FailureKind, PlanBuilder, ValidPlan, schema::*};
//!
//! // Built in Rust: checked by the compiler, ids checked by `build()`.
//! let plan = PlanBuilder::new("profiles/default", "chat")
//!     .context_select("ctx", ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] })
//!     .prompt_assemble("prompt", PromptAssemblePayload { template: "{{input}}".into(), vars: AnyObject::new() })
//!     .llm_call("llm", LlmCallPayload { prompt: "hi".into(), config: AnyObject::new() })
//!     .persist_session("save", PersistSessionPayload { session_ref: "s1".into(), meta: AnyObject::new() })
//!     .build()?;
//!
//! // Its JSON is accepted by the runtime validator and reads back equal.
//! let again = ValidPlan::from_str(&plan.to_json())?;
//! assert_eq!(again, plan);
//!
//! // A plan from outside that skips a mandatory step is rejected, with the place named.
//! let bad = plan.to_json().replace(r#""type":"PromptAssemble""#, r#""type":"SummarizeMemory""#);
//! let bad = bad.replace(r#""template":"{{input}}","vars":{}"#, r#""response":"x""#);
//! let err = ValidPlan::from_str(&bad).unwrap_err();
//! assert_eq!(err.class(), FailureKind::CycleFail);
//! let codes: Vec<_> = err.problems().iter().map(|p| (p.code().as_str(), p.pointer())).collect();
//! assert_eq!(codes, [("order-violation", "/steps/2/type"), ("missing-mandatory-step", "/steps")]);
//! # Ok::<(), planlock::Rejection>(())
//! ```
//!
//! ## Features
//!
//! What each brings in, from `Cargo.toml`'s own comments:
#![doc = document_features::document_features!()]
#![forbid(unsafe_code)]
// On docs.rs, each feature-gated item is labelled with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// The crate is built in layers (CONTRIBUTING.md's table, the one place they are written down);
// each module imports only from its own layer and those below it (`tests/it/layers.rs` holds it to
// that and finds import cycles). The modules are declared in the table's order; the public paths
// stay short through the re-exports.

// Layers 0 to 4 of the contract, its own crate (`planlock-contract`, no async and no network):
// JSON as the contract reads and writes it, the files the runtime trusts, text as a person may be
// shown it, the step table and documents, validation, the builder, hashes and what producers
// call. The same public paths as the crate's.
// Its root is ours: its modules, the short paths of its items as it documents them, and its
// hidden building blocks (`crate::json`, `crate::contract`, `crate::fsread` inside planlock).
pub use planlock_contract::*;
// Layer 0: planlock's own I/O runtime (model requests, PostgreSQL, SQLite's blocking calls).
mod io;
// Layer 2: telemetry (the OpenTelemetry names, model-call spans, the trace a pause keeps, export).
pub mod telemetry;
// Layer 3: the shared PostgreSQL database (feature `postgres`).
#[cfg(feature = "postgres")]
pub mod pg;
// Layer 4: running a plan (a cycle's guard holds its backend's cycle); the embedder port.
mod exec;
pub use exec::{budget, executor, handler, ledger, validator};
pub mod embed;
// Layer 5: sessions and their records; storage behind the D-021 ports; the model and prompt
// handlers.
pub mod handlers;
pub mod session;
pub mod store;
// Layer 6: where sessions live, one backend (files or a database).
pub mod backend;
// Layer 7: the reviewer's domain (deciding on pauses, the inbox, the overview of sessions).
pub mod review;
// Layer 8: the runtime that owns a session's cycles; the reviewer's console (feature `console`).
#[cfg(feature = "console")]
#[cfg_attr(docsrs, doc(cfg(feature = "console")))]
pub mod console;
pub mod runtime;
// Layer 9: demo handlers for the CLI and the examples (feature `demo`).
#[cfg(feature = "demo")]
#[cfg_attr(docsrs, doc(cfg(feature = "demo")))]
pub mod demo;
// Layer 9: the worker that acts on decisions (feature `worker`).
#[cfg(feature = "worker")]
#[cfg_attr(docsrs, doc(cfg(feature = "worker")))]
pub mod worker;

// The short paths of the core items (the contract's come with its root, above). Each item is
// documented once, on its module's page; these re-exports only link there (`doc(no_inline)`),
// so it has one documented path.
#[doc(no_inline)]
pub use executor::{
    Completed, CycleOutcome, CycleReport, CycleSession, ExecError, Executor, Intervention, PausedCycle, StepFailure,
    StepStatus,
};
#[doc(no_inline)]
pub use handler::{Handler, HandlerError, Handlers, StepContext, async_handler_fn, handler_fn};
pub use io::block_on;
#[cfg(feature = "io")]
pub use io::io_handle;
#[doc(no_inline)]
pub use ledger::Ledger;
#[doc(no_inline)]
pub use validator::{Override, StepView, Validator, Verdict};
