//! Layer 4, running a plan (docs/CONTRACT.md, "Execution"): typed handlers ([`handler`]), the
//! read-only results of a cycle ([`ledger`]), pre and post validators ([`validator`]) and the flat
//! executor with its cycle report ([`executor`]). What it may import is the layer test's to say
//! (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs`).

mod backend_cases;
pub mod budget;
mod cycle;
pub mod executor;
mod failure;
mod guard;
pub mod handler;
pub mod ledger;
mod open_cycle;
pub(crate) mod report;
mod shown;
mod spans;
pub mod validator;

pub(crate) use backend_cases::{Held, SessionAt};
