//! Layer 1, the contract's vocabulary (docs/CONTRACT.md, "Step registry", "Payloads, results,
//! shared objects", "The plan document"): the registry table every rule reads ([`registry`]), the
//! payload and result of each step ([`schema`]), the step markers that tie them together
//! ([`steps`]), the plan document ([`plan`]), and the problem codes a rejection is made of.
//! Each type here also carries its strict serde, its canonical JSON and its checks, generated
//! from one field list by `contract_object!` ([`object`]).
//!
//! Imports only `json` (layer 0).

pub mod json_schema;
pub mod object;
pub mod plan;
pub mod problem;
pub mod registry;
pub mod rules;
pub mod schema;
pub mod steps;
pub mod strict;
pub mod value;
