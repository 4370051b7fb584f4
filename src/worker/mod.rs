//! The worker (CONTRACT §21: a decision takes effect): runs a session's next cycle as soon as a
//! person's decision on its pause is complete — an approval re-runs the blocked step, a
//! rejection or an abandon ends the cycle, exactly as [`Runtime::run_cycle`] does — woken by
//! the decision itself ([`Backend::watch_decisions`]) with a slow poll as the safety net. Many
//! workers may run at once: the session's lock or lease decides which one acts, and one killed
//! at any point leaves the decision to the next. The session keeps the plan it runs, so a
//! worker is handed none.
//!
//! Layer 9 (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).
//!
//! [`Runtime::run_cycle`]: crate::runtime::Runtime::run_cycle
//! [`Backend::watch_decisions`]: crate::backend::Backend::watch_decisions

mod act;
mod event;
mod run;
mod scan;

pub use act::{Boot, ToRun};
pub use event::{Acted, WorkerEvent};
pub use run::{DEFAULT_POLL, Worker};
