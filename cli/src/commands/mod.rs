//! One module per command, and what several share: reading a plan.
//!
//! A command writes its report to `out` and returns its exit code, or returns a [`CliError`]
//! having written nothing (`main` writes it, as JSON or on stderr).

mod abandon;
mod access;
mod budget;
mod decisions;
mod dispatch;
mod embedding;
mod grammar;
mod hash;
mod inbox;
mod memory;
mod notify;
mod pgvector;
mod plan;
mod plan_file;
mod run;
mod schema;
mod serve;
mod status;
mod validate;
mod worker;

pub use dispatch::dispatch;
use embedding::read_stores;
use plan_file::{load_plan, read_plan};
