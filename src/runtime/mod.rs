//! The runtime lifecycle (PRD-004, D-007): boot computes the plan hash and loads the session —
//! Cold Start, Resume, or FailFast — then cycles run, and the runtime saves the session once at
//! the end of each successful cycle (the `PersistSession` step's handler returns its status; the
//! save, built from the cycle's ledger, is the runtime's: `commit`).
//!
//! Layer 8 (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

mod approvals;
mod builder;
mod cycles;
mod error;
mod history;
mod outcome;
mod pin;
mod restore;
mod stager;

pub use approvals::abandon_paused;
pub use builder::RuntimeBuilder;
pub use cycles::Runtime;
use cycles::State;
pub use error::{BootError, HashMismatch, RecordMismatch, RuntimeError, Saved};
pub use outcome::{Boot, RunOutcome, Status};
pub use stager::SessionStager;

/// Turns the current situation into a plan (D-007 §1); defined beside the validator, which
/// stands at its entrance.
pub use crate::validate::PolicyInterpreter;
