//! Session persistence (PRD-004; docs/CONTRACT.md, "Sessions and the runtime"): the
//! [`SessionStore`] interface and the crash-safe [`FileSessionStore`] at
//! `<root>/ops/runtime/session_state.json`.
//!
//! Layer 5: sessions and their records. Imports the contract (digests, JSON, files read under bounds),
//! the executor's cycle report (a history entry keeps it) and the PostgreSQL pool; nothing that runs
//! a plan.
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

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::contract::registry::{Failure, FailureKind};
use crate::hash::{Digest, HashParts};

mod access_file;
mod approval;
mod file;
mod file_budget;
mod history;
#[cfg(any(feature = "demo", feature = "testing"))]
mod hook;
mod intervention;
mod pin;
#[cfg(feature = "postgres")]
pub mod postgres;
mod records;
mod store;
pub use access_file::{
    ACCESS_FILE, InstalledAccess, MAX_ACCESS_FILE_BYTES, install_access, read_installed_access, sessions_dir_of,
    uninstall_access,
};
pub use approval::{ApprovalEvent, Decisions, MAX_LOG_BYTES, PauseRef, Recorded, ReviewDecision, ReviewVerdict, Via};
// The reviewer's operations live in `review/` (a layer above); their first paths stay.
#[doc(hidden)]
pub use crate::review::{DecideError, MAX_DECIDER_CHARS, check_decider, decide, inbox, overview};
pub use file::FileSessionStore;
pub use file_budget::{BUDGETS_FILE, BUDGETS_LOCK, FileBudget, MAX_BUDGETS_FILE_BYTES, MAX_HOLDS};
pub use history::{
    CycleEnd, CycleEntry, CycleFailure, DEFAULT_KEEP, HISTORY_FILE, History, MAX_ENTRY_BYTES,
    MAX_FAILURE_MESSAGE_CHARS, MAX_HISTORY_READ_BYTES, PREVIOUS_HISTORY_FILE,
};
pub use records::{APPROVAL_LOG_FILE, ApprovalLog, FileRecords, NOTICES_FILE, SessionRecords};
pub(crate) use records::{open_log, read_log};
pub use store::{CycleGuard, Durable, HistoryEntry, SessionStore, StoreFuture};
// The seams for fault injection and the save-check wrapper are test and demo aids.
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use file::{RealFs, SaveFs};
#[cfg(any(feature = "demo", feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "demo", feature = "testing"))))]
pub use hook::BeforeSave;
pub use intervention::{BlockPhase, CompletedStep, INTERVENTION_FILE, InterventionRecord, MAX_INTERVENTION_FILE_BYTES};
pub use pin::{BundlePinV1, PIN_FILE, PinVersion};

/// The session file, relative to the store's root.
pub const SESSION_FILE: &str = "ops/runtime/session_state.json";

/// What a durable record is called in messages, by its file (or database row) name.
fn record_kind(file: &Path) -> &'static str {
    let is = |f: &'static str| file.file_name() == Path::new(f).file_name();
    if is(INTERVENTION_FILE) {
        "intervention record"
    } else if is(PIN_FILE) {
        "bundle pin"
    } else if is(RESERVED_FILE) {
        "session reservation"
    } else {
        "session file"
    }
}

/// The largest session file read, in bytes (64 KiB).
pub const MAX_SESSION_FILE_BYTES: u64 = 64 * 1024;

/// An RFC 3339 UTC timestamp (`updatedAt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// Now, in UTC.
    pub fn now() -> Timestamp {
        Timestamp(OffsetDateTime::now_utc())
    }

    /// `duration` later; `None` past the last time a timestamp can say.
    pub fn plus(self, duration: std::time::Duration) -> Option<Timestamp> {
        self.0.checked_add(time::Duration::try_from(duration).ok()?).map(Timestamp)
    }

    /// `duration` earlier; `None` before the first time a timestamp can say.
    pub fn minus(self, duration: std::time::Duration) -> Option<Timestamp> {
        self.0.checked_sub(time::Duration::try_from(duration).ok()?).map(Timestamp)
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(self) -> i64 {
        self.0.unix_timestamp()
    }

    /// How long after `earlier` this is (zero when it is not after).
    pub fn since(self, earlier: Timestamp) -> std::time::Duration {
        std::time::Duration::try_from(self.0 - earlier.0).unwrap_or_default()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(&Rfc3339) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        let t = OffsetDateTime::parse(&s, &Rfc3339)
            .map_err(|e| serde::de::Error::custom(format_args!("`{s}` is not an RFC 3339 time: {e}")))?;
        if !t.offset().is_utc() || !s.ends_with(['Z', 'z']) {
            return Err(serde::de::Error::custom(format_args!("`{s}` is not in UTC (it must end in `Z`)")));
        }
        Ok(Timestamp(t))
    }
}

fn uuid_v4<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
    let id = Uuid::deserialize(d)?;
    if id.get_version_num() != 4 {
        return Err(serde::de::Error::custom(format_args!("sessionId `{id}` is not a version 4 UUID")));
    }
    Ok(id)
}

/// An optional member that, when present, is a value (never `null`: only its absence means none).
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A required field whose value may be `null`.
fn nullable<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<String>::deserialize(d)
}

/// The persisted session: minimal references only (PRD-004), plus the optional per-part
/// digests of the plan hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct SessionState {
    /// Created at cold start, restored on resume.
    #[serde(deserialize_with = "uuid_v4")]
    pub session_id: Uuid,
    /// The id of the last `PersistMemory` result.
    #[serde(deserialize_with = "nullable")]
    pub memory_ref: Option<String>,
    /// The `versionId` of the last `RepoScan` result.
    #[serde(deserialize_with = "nullable")]
    pub repo_scan_version: Option<String>,
    /// The plan hash the session was saved under.
    pub last_execution_plan_hash: Digest,
    /// When the store saved it.
    pub updated_at: Timestamp,
    /// How many cycles of this session have completed (absent in older files: 0).
    #[serde(default)]
    pub cycle: u64,
    /// Per-part digests of the plan hash, to say what changed on a mismatch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash_parts: Option<HashParts>,
}

crate::contract::object::map_only_serde!(SessionState);

/// What a save writes; the store adds `updatedAt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionUpdate {
    /// The session id.
    pub session_id: Uuid,
    /// The memory reference.
    pub memory_ref: Option<String>,
    /// The repository scan version.
    pub repo_scan_version: Option<String>,
    /// The plan hash.
    pub last_execution_plan_hash: Digest,
    /// Per-part digests.
    pub hash_parts: Option<HashParts>,
    /// The number of completed cycles, this one included.
    pub cycle: u64,
}

impl SessionUpdate {
    /// The state a store saves for this update: the update, stamped now.
    pub fn into_state(self) -> SessionState {
        SessionState {
            session_id: self.session_id,
            memory_ref: self.memory_ref,
            repo_scan_version: self.repo_scan_version,
            last_execution_plan_hash: self.last_execution_plan_hash,
            updated_at: Timestamp::now(),
            cycle: self.cycle,
            hash_parts: self.hash_parts,
        }
    }
}

/// A session store failure. Every one is FailFast: data integrity is at stake.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The paused cycle already has a different decision (one decision per pause).
    #[error(
        "the paused cycle is already decided: {verdict} by `{by}`; a pause has one decision (the same one again changes nothing)"
    )]
    AlreadyDecided {
        /// The recorded decision's verdict.
        verdict: ReviewVerdict,
        /// Who recorded it.
        by: String,
    },
    /// Another runtime holds this session.
    #[error("session in use: another runtime holds the lock on {}; refusing to share a session file", root.display())]
    InUse {
        /// The store's root.
        root: PathBuf,
    },
    /// A runtime already claimed this opened store; a second one may not use it.
    #[error("session in use: a runtime already claimed the store of {place}; open the session once per runtime")]
    Claimed {
        /// The session's root or key.
        place: String,
    },
    /// The root directory is missing or not a directory.
    #[error("session root {} is not usable: {source}", root.display())]
    Root {
        /// The root.
        root: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The record is there but is not what it should be.
    #[error("{} {} is {problem}; fix or remove it (it was not changed)", record_kind(file), file.display())]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// Reading or writing failed.
    #[error("{} {}: {op} failed: {source}", record_kind(file), file.display())]
    Io {
        /// The file or directory.
        file: PathBuf,
        /// The operation.
        op: &'static str,
        /// Why.
        source: io::Error,
    },
    /// Another live worker holds the session's lease (a shared store, docs/CONTRACT.md "More
    /// than one machine").
    #[error(
        "session in use: worker {owner} holds the lease on session `{key}` for {seconds_left:.1} s more; refusing to share it"
    )]
    #[cfg(feature = "postgres")]
    LeaseHeld {
        /// The session key.
        key: String,
        /// The worker holding it.
        owner: Uuid,
        /// How long its lease still runs.
        seconds_left: f64,
    },
    /// This worker's lease was taken over (it stalled past it), or the row changed under it:
    /// it must not write, and did not.
    #[error(
        "session `{key}` was taken over by another worker (this one's lease ran out) or changed under it; nothing was written: stop this worker's runtime and boot again"
    )]
    #[cfg(feature = "postgres")]
    Fenced {
        /// The session key.
        key: String,
    },
    /// The store was handed a cycle another session's store began (another session, or another
    /// database): it writes nothing rather than commit outside that cycle.
    #[error(
        "the store of {place} was handed another session's cycle (another session or database); nothing was written: hand each store the cycle its own session's store began"
    )]
    ForeignCycle {
        /// The session's root or key.
        place: String,
    },
    #[cfg(feature = "postgres")]
    /// The session key is not one a shared store accepts.
    #[error("session key {problem}; use a non-empty key of at most 256 bytes (a tenant or conversation id)")]
    InvalidKey {
        /// What is wrong with it.
        problem: String,
    },
    #[cfg(feature = "postgres")]
    /// A stored row does not read back as what it must be.
    #[error("session `{key}`: the stored {what} is not valid: {problem}; fix or remove it (it was not changed)")]
    CorruptRow {
        /// The session key.
        key: String,
        /// What was read.
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    #[cfg(feature = "postgres")]
    /// A store write of the cycle, sent with its save (CONTRACT §13), failed: the failure is
    /// the write's step's (the runtime reports it as that step's), and the server rolled back
    /// all of the cycle, the save included.
    #[error("session `{key}`: the write of step `{}`, sent with the save, failed: {source}; nothing of the cycle was written", step_id.as_deref().unwrap_or("(none)"))]
    StepWrite {
        /// The session key.
        key: String,
        /// The step that made the write (`None` for a program's own call in the cycle).
        step_id: Option<String>,
        /// Why it failed.
        source: crate::pg::WriteFailure,
    },
    #[cfg(feature = "postgres")]
    /// The shared database failed.
    #[error("session `{key}`: {reason}")]
    Database {
        /// The session key.
        key: String,
        /// What failed, naming the database (never its credentials).
        reason: String,
    },
}

impl Failure for SessionError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            SessionError::InUse { .. } | SessionError::Claimed { .. } => "session-in-use",
            SessionError::Root { .. } => "session-root",
            SessionError::Corrupt { .. } => "session-corrupt",
            SessionError::Io { .. } => "session-io",
            SessionError::AlreadyDecided { .. } => "already-decided",
            SessionError::ForeignCycle { .. } => "session-foreign-cycle",
            #[cfg(feature = "postgres")]
            SessionError::LeaseHeld { .. } => "session-in-use",
            #[cfg(feature = "postgres")]
            SessionError::Fenced { .. } => "session-fenced",
            #[cfg(feature = "postgres")]
            SessionError::InvalidKey { .. } => "session-key",
            #[cfg(feature = "postgres")]
            SessionError::CorruptRow { .. } => "session-corrupt",
            #[cfg(feature = "postgres")]
            SessionError::Database { .. } => "session-database",
            #[cfg(feature = "postgres")]
            SessionError::StepWrite { .. } => "session-step-write",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// The id of a new session, reserved before its first cycle (`ops/runtime/new_session.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase", remote = "Self")]
pub struct ReservedSession {
    /// The session id.
    #[serde(deserialize_with = "uuid_v4")]
    pub session_id: Uuid,
    /// The plan hash it was reserved under.
    pub plan_hash: Digest,
}

crate::contract::object::map_only_serde!(ReservedSession);

/// The reserved-id file, relative to the store's root.
pub const RESERVED_FILE: &str = "ops/runtime/new_session.json";

/// The longest name of a session root, in bytes (a file name's limit on common file systems).
pub const MAX_ROOT_NAME_BYTES: usize = 255;

/// Whether `name` can be a session root's name under a directory: the one rule the lister, the
/// inbox, the console and every reader use. A plain name of one entry there: not empty, at most
/// [`MAX_ROOT_NAME_BYTES`], not `.` or `..`, no separator (`/`, nor `\`, which is one elsewhere),
/// and no NUL. A directory whose name breaks it is not a session (any other character is allowed,
/// and shown escaped wherever a name is shown).
///
/// ```
/// use planlock::session::is_root_name;
/// assert!(is_root_name("support-7") && is_root_name("세션"));
/// assert!(!is_root_name("..") && !is_root_name("a/b") && !is_root_name("a\\b") && !is_root_name("a\0"));
/// ```
pub fn is_root_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_ROOT_NAME_BYTES
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
}
