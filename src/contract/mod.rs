//! Layer 1, the contract's vocabulary (docs/CONTRACT.md, "Step registry", "Payloads, results,
//! shared objects", "The plan document"): the registry table every rule reads ([`registry`]), the
//! payload and result of each step ([`schema`]), the step markers that tie them together
//! ([`steps`]), the plan document ([`plan`]), and the problem codes a rejection is made of.
//! Each type here also carries its strict serde, its canonical JSON and its checks, generated
//! from one field list by `contract_object!` ([`object`]).
//!
//! Imports only `json` (layer 0).

pub(crate) mod json_schema;
pub(crate) mod object;
pub mod plan;
pub(crate) mod problem;
pub mod registry;
pub(crate) mod rules;
pub mod schema;
pub mod steps;
pub(crate) mod strict;
pub(crate) mod value;
