//! Why a [`Backend`](super::Backend) could not do what was asked: one error for opening,
//! reading and listing sessions wherever they live.

use std::path::PathBuf;

use crate::contract::registry::{Failure, FailureKind};
use crate::exec::budget::BudgetError;
use crate::session::SessionError;
use crate::store::bundle::BundleError;

/// Why sessions could not be opened, read or listed where they live.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The session key is empty or too long.
    #[error("the session key must be 1 to {max} bytes long (it is {len})")]
    Key {
        /// Its length in bytes.
        len: usize,
        /// The longest allowed.
        max: usize,
    },
    /// A session name that names no session here.
    #[error("there is no session `{0}` here: name a session root under the directory, or a session key")]
    Unknown(String),
    /// A tenant was given with a directory of sessions: tenants are kept apart by a database.
    #[error("a tenant is given, but the sessions are a directory: tenants are kept apart by a database (give its URL)")]
    TenantNeedsDatabase,
    /// The directory of session roots cannot be read.
    #[error("cannot read the directory of sessions {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The database could not be reached or used: its backend's own error, erased once here
    /// (`PgBackend`'s is `pg::PgError`).
    #[error("{0}")]
    Database(Box<dyn DatabaseError>),
    /// The session store could not be opened or read (a root that is not a directory, a lease
    /// held by another worker, a record that does not parse).
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The session could not be opened: another holds it, or its root or key cannot be used.
    #[error(transparent)]
    Open(#[from] crate::session::OpenError),
    /// The providers the session's pin names could not be opened.
    #[error(transparent)]
    Bundle(#[from] BundleError),
    /// The token budgets could not be read or set.
    #[error(transparent)]
    Budget(#[from] BudgetError),
    /// A budget's settings are out of range.
    #[error("the budget cannot be set: {0}")]
    BudgetSettings(String),
    /// The backend keeps no such thing (its [`budgets`](super::Backend::budgets) or
    /// [`outbox`](super::Backend::outbox) is `None`): what was asked cannot be done here.
    #[error("where these sessions live keeps no {0}; use a backend that does (a directory of sessions, or a database)")]
    Lacks(&'static str),
    /// A delivery claim was handed to a backend other than the one that made it.
    #[error(
        "the delivery claim of event `{0}` was made by another backend; finish a claim on the backend that made it"
    )]
    ForeignClaim(String),
    /// The embedder given is not the one the session's vectors were made with.
    #[error(
        "the session's vectors were made with {pinned}, not {current}: give the embedder it was pinned with (CLI: --embed-url and --embed-model)"
    )]
    EmbedderMismatch {
        /// The pinned model and dimension.
        pinned: String,
        /// The given one.
        current: String,
    },
}

/// The error of the database a backend keeps its sessions in, as [`BackendError::Database`]
/// carries it (as sqlx's `Error::Database` carries a driver's): what went wrong, its stable
/// code, and whether the caller's input (a malformed URL) was the cause.
///
/// ```
/// use planlock::backend::{BackendError, DatabaseError};
/// use planlock::Failure;
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("the store at {0} refused the connection")]
/// struct Refused(String);
/// impl DatabaseError for Refused {
///     fn code(&self) -> &'static str { "kv-connect" }
/// }
/// let err = BackendError::Database(Box::new(Refused("kv.internal".into())));
/// assert_eq!((err.code(), err.is_usage()), ("kv-connect", false));
/// ```
pub trait DatabaseError: std::error::Error + Send + Sync + 'static {
    /// Its stable code (`pg-connect`, …).
    fn code(&self) -> &'static str;
    /// Whether the caller's input was wrong (a place that does not parse), not the database.
    fn is_usage(&self) -> bool {
        false
    }
}

impl BackendError {
    /// Whether the caller's input was wrong (a bad key or URL), not the place: a command line
    /// reports it as a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            BackendError::Key { .. } | BackendError::BudgetSettings(_) => true,
            BackendError::Database(e) => e.is_usage(),
            _ => false,
        }
    }
}

impl Failure for BackendError {
    /// `"invalid-session-key"`, `"unknown-session"`, `"inbox-dir"`, `"embedder-mismatch"`, or
    /// the source's code.
    fn code(&self) -> &'static str {
        match self {
            BackendError::Key { .. } => "invalid-session-key",
            BackendError::Unknown(_) => "unknown-session",
            BackendError::TenantNeedsDatabase => "tenant-needs-database",
            BackendError::Dir { .. } => "inbox-dir",
            BackendError::Database(e) => e.code(),
            BackendError::Session(e) => e.code(),
            BackendError::Open(e) => e.code(),
            BackendError::Bundle(e) => e.code(),
            BackendError::Budget(e) => e.code(),
            BackendError::BudgetSettings(_) => "budget-settings",
            BackendError::EmbedderMismatch { .. } => "embedder-mismatch",
            BackendError::ForeignClaim(_) => "foreign-claim",
            BackendError::Lacks(_) => "backend-lacks",
        }
    }

    /// An unknown session is the caller's to fix (CycleFail); everything else is FailFast.
    fn kind(&self) -> FailureKind {
        match self {
            BackendError::Unknown(_) => FailureKind::CycleFail,
            BackendError::TenantNeedsDatabase => FailureKind::FailFast,
            _ => FailureKind::FailFast,
        }
    }
}
