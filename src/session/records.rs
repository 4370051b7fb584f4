//! Reading a session's durable records without owning the session: [`SessionRecords`], and
//! [`FileRecords`] under a root. A command that only reads (`status`, `memory search`,
//! `decisions`) takes no lock and no lease (CONTRACT §11: reads write nothing, and a worker
//! running a cycle is not disturbed); each record is read as strictly as the store reads it, and
//! an atomic save means a reader sees the old record or the new one, never a mix.

use std::path::{Path, PathBuf};

use super::{
    BundlePinV1, INTERVENTION_FILE, InterventionRecord, MAX_INTERVENTION_FILE_BYTES, MAX_SESSION_FILE_BYTES, PIN_FILE,
    RESERVED_FILE, ReservedSession, SESSION_FILE, SessionError, SessionState,
};
use crate::fsread::{self, ReadError};

/// The records of one session, read without taking it: what a [`SessionStore`](super::SessionStore)
/// loads, for a process that does not run its cycles.
pub trait SessionRecords: Send + Sync {
    /// The saved session, or `None`.
    fn load(&self) -> Result<Option<SessionState>, SessionError>;
    /// The record of a paused cycle, or `None`.
    fn load_intervention(&self) -> Result<Option<InterventionRecord>, SessionError>;
    /// The id reserved for a new session, or `None`.
    fn load_reserved(&self) -> Result<Option<ReservedSession>, SessionError>;
    /// The bundle pin, or `None`.
    fn load_pin(&self) -> Result<Option<BundlePinV1>, SessionError>;
}

/// The records under a session root, read without its lock; creates nothing.
///
/// ```
/// use planlock::session::{FileRecords, FileSessionStore, SessionRecords};
/// let root = tempfile::tempdir()?;
/// let _running = FileSessionStore::open(root.path())?; // a runtime holds the root
/// let records = FileRecords::new(root.path());         // a reader still reads it
/// assert!(records.load()?.is_none() && records.load_intervention()?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct FileRecords {
    root: PathBuf,
}

impl FileRecords {
    /// The records under `root`.
    pub fn new(root: impl Into<PathBuf>) -> FileRecords {
        FileRecords { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl SessionRecords for FileRecords {
    fn load(&self) -> Result<Option<SessionState>, SessionError> {
        read_strict(&self.root.join(SESSION_FILE), MAX_SESSION_FILE_BYTES, "session state")
    }
    fn load_intervention(&self) -> Result<Option<InterventionRecord>, SessionError> {
        read_strict(&self.root.join(INTERVENTION_FILE), MAX_INTERVENTION_FILE_BYTES, "intervention record")
    }
    fn load_reserved(&self) -> Result<Option<ReservedSession>, SessionError> {
        read_strict(&self.root.join(RESERVED_FILE), MAX_SESSION_FILE_BYTES, "reserved session id")
    }
    fn load_pin(&self) -> Result<Option<BundlePinV1>, SessionError> {
        read_strict(&self.root.join(PIN_FILE), MAX_SESSION_FILE_BYTES, "bundle pin")
    }
}

/// Reads the file at `path` strictly: a regular file within `cap` bytes, non-empty, that parses
/// as `T` and nothing else; `None` when there is none. Says where a bad file is wrong.
pub(super) fn read_strict<T: serde::de::DeserializeOwned>(
    path: &Path,
    cap: u64,
    what: &str,
) -> Result<Option<T>, SessionError> {
    // What serde says quotes the file's text: escaped before it is shown.
    let corrupt = |problem: String| SessionError::Corrupt {
        file: path.to_owned(),
        problem: crate::text::printable(&problem).into_owned(),
    };
    let bytes = match fsread::read_regular(path, cap) {
        Ok(bytes) => bytes,
        Err(ReadError::NotFound) => return Ok(None),
        Err(ReadError::NotRegular(kind)) => return Err(corrupt(kind.to_owned())),
        Err(ReadError::TooLarge) => return Err(corrupt(format!("larger than the {cap}-byte limit"))),
        Err(ReadError::Io(op, source)) => return Err(SessionError::Io { file: path.to_owned(), op, source }),
    };
    if bytes.is_empty() {
        return Err(corrupt("empty".to_owned()));
    }
    if let Ok(value) = serde_json::from_slice::<T>(&bytes) {
        return Ok(Some(value));
    }
    // Parsed again, tracking where, only to say where it is wrong.
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." { String::new() } else { format!(" at `{at}`") };
        corrupt(format!("not a valid {what}{at}: {}", e.inner()))
    })?;
    de.end().map_err(|e| corrupt(format!("not a valid {what}: {e}")))?;
    Ok(Some(value))
}
