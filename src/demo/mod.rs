//! **Demo handlers** for every step but `PersistSession` (which the
//! [`Runtime`](crate::runtime::Runtime) handles itself): deterministic, offline, for the CLI, the
//! examples and tests. They show the shape of real handlers; they are not meant for
//! production.
//!
//! Layer 9, the top of the library (CONTRIBUTING.md, "The layers").
//!
//! - `RepoScan` really scans the directory: the file count, and a SHA-256 over every file's
//!   relative path and content as `versionId`.
//! - Memory and decisions live in an [`InMemoryStore`](crate::store::memory::InMemoryStore) behind
//!   the real storage handlers.
//! - `PromptAssemble` renders the template with minijinja (feature `prompts`, on by default;
//!   [`substitute`] without it); `LLMCall` echoes deterministically.
//! - Any step type can be made to fail, to show the failure semantics.

mod scan;
mod session;
mod steps;

pub use scan::MAX_SCAN_FILES;
pub use steps::{DEMO_PROVIDER, Demo, DemoSessionStore, Gated, ReviewGate, substitute};
