//! Why a storage operation failed, with its stable code and class.

/// Why a storage operation failed. The step that called it fails with its kind from the
/// registry (reads CycleFail, writes FailFast); this says what went wrong and where.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A write that contradicts what is stored: the same id with other content, a new version
    /// whose previous one is no longer the active one, a version that is not the next.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A write that names something that is not stored (a link to a missing decision).
    #[error("not found: {0}")]
    NotFound(String),
    /// The store itself failed: I/O, a corrupt database file, a lock held too long.
    #[error("{0}")]
    Backend(String),
    /// The store will not open what is at its path: a symbolic link, another program's
    /// database, or a write through a read-only store. Nothing was changed.
    #[error("{0}")]
    Refused(String),
    /// The embedder of a provider that ranks by meaning failed: its code and class are the
    /// embedder's (a server's: `model-http-status`, `model-redirect`, …).
    #[error("{message}")]
    Embedder {
        /// The embedder's code.
        code: &'static str,
        /// The embedder's class.
        kind: crate::contract::registry::FailureKind,
        /// What it said, its cause included.
        message: String,
    },
}

impl From<crate::embed::EmbedError> for StoreError {
    fn from(e: crate::embed::EmbedError) -> StoreError {
        StoreError::Embedder { code: e.code, kind: e.kind, message: e.to_string() }
    }
}

impl crate::contract::registry::Failure for StoreError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            StoreError::Conflict(_) => "store-conflict",
            StoreError::NotFound(_) => "store-not-found",
            StoreError::Backend(_) => "store-backend",
            StoreError::Refused(_) => "store-refused",
            StoreError::Embedder { code, .. } => code,
        }
    }

    /// CycleFail for what this write or read found (a conflict, something missing): another
    /// cycle may go differently; FailFast when the store itself failed or refused.
    fn kind(&self) -> crate::contract::registry::FailureKind {
        use crate::contract::registry::FailureKind;
        match self {
            StoreError::Conflict(_) | StoreError::NotFound(_) => FailureKind::CycleFail,
            StoreError::Backend(_) | StoreError::Refused(_) => FailureKind::FailFast,
            StoreError::Embedder { kind, .. } => *kind,
        }
    }
}
