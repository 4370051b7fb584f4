//! Session persistence (PRD-004; docs/CONTRACT.md, "Sessions and the runtime"): the
//! [`SessionStore`] interface and the crash-safe [`FileSessionStore`] at
//! `<root>/ops/runtime/session_state.json`.
//!
//! Layer 5: sessions and their records (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs`
//! holds them).
//!
//! - **Load** creates nothing. No file means Cold Start. The file must be a regular file (never
//!   through a symlink, never a FIFO or a directory), at most [`MAX_SESSION_FILE_BYTES`], and
//!   match the schema exactly; anything else is FailFast with the file named, and the file is left
//!   untouched.
//! - **Save** is atomic and durable: write a temporary file beside the target, `fsync` it,
//!   rename it over the target, `fsync` the directory (and the parent of any directory the save
//!   created). Any failure is FailFast and never retried (a retried `fsync` can lie). After a
//!   failed save the file holds the old state or the new one, never a mix.
//! - **Concurrency**: the store holds an exclusive advisory lock on the root directory itself
//!   (never the data file, whose inode the rename swaps) for as long as it lives, so a second
//!   runtime on the same root is refused ("session in use") without creating anything.
//!
//! The store never computes a plan hash; it stores and compares the one the runtime gives it.

mod access_file;
mod approval;
mod edit;
mod end;
mod error;
mod file;
mod file_budget;
mod history;
#[cfg(any(feature = "demo", feature = "testing"))]
mod hook;
mod intervention;
mod pin;
mod plan;
#[cfg(feature = "postgres")]
pub mod postgres;
mod records;
mod reserved;
mod root_name;
mod state;
mod store;
mod timestamp;
pub use access_file::{
    ACCESS_FILE, InstalledAccess, MAX_ACCESS_FILE_BYTES, install_access, read_installed_access, sessions_dir_of,
    uninstall_access,
};
pub use approval::{ApprovalEvent, Decisions, MAX_LOG_BYTES, PauseRef, Recorded, ReviewDecision, ReviewVerdict, Via};
pub use edit::{Edit, NotEditable};
pub use end::{EndOfCycle, HistoryEntry, Leaves};
pub use error::{OpenError, SessionError, WriteFailure};
pub use file::{FileSessionStore, LOCK_PATIENCE};
pub use file_budget::{BUDGETS_FILE, BUDGETS_LOCK, FileBudget, MAX_BUDGETS_FILE_BYTES, MAX_HOLDS};
pub use history::{
    CycleEnd, CycleEntry, CycleFailure, DEFAULT_KEEP, HISTORY_FILE, History, MAX_ENTRY_BYTES,
    MAX_FAILURE_MESSAGE_CHARS, MAX_HISTORY_READ_BYTES, PREVIOUS_HISTORY_FILE,
};
pub use records::{
    APPROVAL_LOG_FILE, ApprovalLog, FileRecords, NOTICES_FILE, PauseMark, SessionRecords, SessionSnapshot,
};
pub(crate) use records::{open_log, read_log};
pub use store::{CycleGuard, SessionStore, StoreFuture};
// The seams for fault injection and the save-check wrapper are test and demo aids.
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use file::{RealFs, SaveFs};
#[cfg(any(feature = "demo", feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "demo", feature = "testing"))))]
pub use hook::BeforeSave;
pub use intervention::{BlockPhase, CompletedStep, INTERVENTION_FILE, InterventionRecord, MAX_INTERVENTION_FILE_BYTES};
pub use pin::{BundlePinV1, PIN_FILE, PinVersion};
pub use plan::{MAX_PLAN_FILE_BYTES, PLAN_FILE, PlanDocument};
pub use reserved::{RESERVED_FILE, ReservedSession};
pub use root_name::{MAX_ROOT_NAME_BYTES, is_root_name};
pub use state::{MAX_SESSION_FILE_BYTES, SESSION_FILE, SessionState, SessionUpdate};
pub(crate) use state::{present, uuid_v4};
pub use timestamp::Timestamp;
