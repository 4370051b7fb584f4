//! Why a session store failed, by operation (as redb's `error.rs`): [`OpenError`] for opening
//! a session for a runtime (its lock or lease, its root or key, its claim), [`SessionError`] for
//! reading and writing its records. Every case is FailFast.

use std::io;
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::{INTERVENTION_FILE, PIN_FILE, RESERVED_FILE, ReviewVerdict};
use crate::contract::registry::{Failure, FailureKind};

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
    /// The decider approved this pause already, and it waits for others (an approval counts
    /// once a person; the second one is refused, not recorded).
    #[error(
        "`{by}` approved this pause already ({approvals} of {required} approvals); it waits for the other approvers"
    )]
    AlreadyApproved {
        /// Who approved again.
        by: String,
        /// The approvals so far.
        approvals: usize,
        /// How many it needs.
        required: usize,
    },
    /// The decision is on what an edit of the step's payload replaced since (CONTRACT §22): the
    /// approvals count on the latest edit; refused, not recorded.
    #[error(
        "the step's payload was edited since (by `{edited_by}`, digest {digest}): look again and decide on the edited payload"
    )]
    ApprovalStale {
        /// Who made the latest edit.
        edited_by: String,
        /// The latest edit's digest.
        digest: crate::hash::Digest,
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
    /// This worker's lease was taken over (it stalled past it), or the row changed under it:
    /// it must not write, and did not.
    #[error(
        "session `{key}` was taken over by another worker (this one's lease ran out) or changed under it; nothing was written: stop this worker's runtime and boot again"
    )]
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
        source: WriteFailure,
    },
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
            SessionError::Corrupt { .. } => "session-corrupt",
            SessionError::Io { .. } => "session-io",
            SessionError::AlreadyDecided { .. } => "already-decided",
            SessionError::AlreadyApproved { .. } => "already-approved",
            SessionError::ApprovalStale { .. } => "approval-stale",
            SessionError::ForeignCycle { .. } => "session-foreign-cycle",
            SessionError::Fenced { .. } => "session-fenced",
            SessionError::CorruptRow { .. } => "session-corrupt",
            SessionError::Database { .. } => "session-database",
            SessionError::StepWrite { .. } => "session-step-write",
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// Why a session could not be opened for a runtime: another holds it (its lock, its lease, or a
/// runtime already claimed the opened store), its root or key cannot be used, or its records
/// failed while it was opened ([`OpenError::Records`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
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
    /// Another live worker holds the session's lease (a shared store, docs/CONTRACT.md "More
    /// than one machine").
    #[error(
        "session in use: worker {owner} holds the lease on session `{key}` for {seconds_left:.1} s more; refusing to share it"
    )]
    LeaseHeld {
        /// The session key.
        key: String,
        /// The worker holding it.
        owner: Uuid,
        /// How long its lease still runs.
        seconds_left: f64,
    },
    /// The session key is not one a shared store accepts.
    #[error("session key {problem}; use a non-empty key of at most 256 bytes (a tenant or conversation id)")]
    InvalidKey {
        /// What is wrong with it.
        problem: String,
    },
    /// The session's records failed while it was opened (the database, or a file).
    #[error(transparent)]
    Records(#[from] SessionError),
}

impl Failure for OpenError {
    /// A stable machine-readable code: `session-in-use` (its lock, lease or claim held),
    /// `session-root`, `session-key`, or its records' code.
    fn code(&self) -> &'static str {
        match self {
            OpenError::InUse { .. } | OpenError::Claimed { .. } | OpenError::LeaseHeld { .. } => "session-in-use",
            OpenError::Root { .. } => "session-root",
            OpenError::InvalidKey { .. } => "session-key",
            OpenError::Records(e) => e.code(),
        }
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

/// Why a store write of a cycle failed when its session store sent it with the end of the cycle
/// ([`SessionError::StepWrite`]): what the write's step is told, as its store would have said it
/// at the step.
///
/// ```
/// use planlock::session::WriteFailure;
/// let failure = WriteFailure::Conflict("decision `d1` is stored with other content".into());
/// assert_eq!(failure.to_string(), "conflict: decision `d1` is stored with other content");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteFailure {
    /// The write contradicts what is stored.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The write names something that is not stored.
    #[error("not found: {0}")]
    NotFound(String),
    /// The store itself failed.
    #[error("{0}")]
    Backend(String),
}
