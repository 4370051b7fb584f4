//! The reviewer's domain (CONTRACT §14, §15): what a person who decides on paused cycles does and
//! sees, above the sessions whose records hold it — the [`access`] file (who may decide what,
//! CONTRACT §18), [`decide`](fn@decide) on a pause (checked against the
//! pause it names, recorded without the session's lock or lease), the [`inbox`] of every pause
//! waiting across sessions, and the [`overview`] of every session's status.
//!
//! Layer 7 (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

pub mod access;
mod decide;
mod edit;
mod filter;
pub mod inbox;
#[cfg(feature = "notify")]
#[cfg_attr(docsrs, doc(cfg(feature = "notify")))]
pub mod notify;
pub mod overview;
mod turn;

pub use decide::{
    DecideError, Decided, MAX_DECIDER_CHARS, ReadPause, check_acting, check_decider, decide, decide_counted,
    decide_shown, decide_with, read_pause, rules_for, turn_on,
};
pub use edit::{DiffLine, edit_diff, edit_of};
pub use turn::Turn;
