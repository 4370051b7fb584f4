//! A session's durable records as any process reads and decides on them, without owning the
//! session: [`SessionRecords`], and [`FileRecords`] under a root. A command that only reads
//! (`status`, `memory search`, `decisions`) takes no lock and no lease (CONTRACT §11: reads write
//! nothing, and a worker running a cycle is not disturbed); each record is read as strictly as
//! the store reads it, and an atomic save means a reader sees the old record or the new one,
//! never a mix. A person's decision on a paused cycle is written here too, from any process
//! (CONTRACT §14): one per pause, and the approval log, appended.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::approval::{ApprovalEvent, MAX_DECISION_BYTES, MAX_LOG_BYTES, Recorded, ReviewDecision};
use super::{
    BundlePinV1, INTERVENTION_FILE, InterventionRecord, MAX_INTERVENTION_FILE_BYTES, MAX_SESSION_FILE_BYTES, PIN_FILE,
    RESERVED_FILE, ReservedSession, SESSION_FILE, SessionError, SessionState,
};
use crate::fsread::{self, ReadError};

/// The decision on the paused cycle, relative to the root.
pub const DECISION_FILE: &str = "ops/runtime/decision.json";

/// The approval log, relative to the root: one JSON object a line.
pub const APPROVAL_LOG_FILE: &str = "ops/runtime/approvals.jsonl";

/// The approval log as read back: its events in order, and how many lines could not be read (a
/// line a crash cut short, or one edited).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ApprovalLog {
    /// The events, oldest first.
    pub events: Vec<ApprovalEvent>,
    /// Lines skipped as unreadable.
    pub unreadable: usize,
}

impl ApprovalLog {
    /// Reads the log's lines: each a JSON event; one that is not is counted, not fatal.
    pub fn parse(lines: impl IntoIterator<Item = impl AsRef<str>>) -> ApprovalLog {
        let mut log = ApprovalLog::default();
        for line in lines {
            let line = line.as_ref().trim();
            if line.is_empty() {
                continue;
            }
            match serde_json::from_str(line) {
                Ok(event) => log.events.push(event),
                Err(_) => log.unreadable += 1,
            }
        }
        log
    }

    /// Whether the log already says what became of the decision on `pause`.
    pub fn has_outcome(&self, pause: &super::PauseRef) -> bool {
        self.events.iter().any(|e| e.is_outcome() && e.pause() == pause)
    }

    /// Whether the log holds the decision on `pause`.
    pub fn has_decision(&self, pause: &super::PauseRef) -> bool {
        self.events.iter().any(|e| !e.is_outcome() && e.pause() == pause)
    }
}

/// The records of one session, read and decided on without taking it: what a
/// [`SessionStore`](super::SessionStore) loads, a person's decision on a paused cycle, and the
/// approval log.
pub trait SessionRecords: Send + Sync {
    /// The saved session, or `None`.
    fn load(&self) -> Result<Option<SessionState>, SessionError>;
    /// The record of a paused cycle, or `None`.
    fn load_intervention(&self) -> Result<Option<InterventionRecord>, SessionError>;
    /// The id reserved for a new session, or `None`.
    fn load_reserved(&self) -> Result<Option<ReservedSession>, SessionError>;
    /// The bundle pin, or `None`.
    fn load_pin(&self) -> Result<Option<BundlePinV1>, SessionError>;
    /// The decision recorded on the paused cycle, or `None`. It may name a pause that has ended
    /// (a leftover): compare its `pause` with the record's.
    fn load_decision(&self) -> Result<Option<ReviewDecision>, SessionError>;
    /// Records `decision` as the decision on its pause, durably, if none is: [`Recorded::New`];
    /// the same decision again: [`Recorded::Again`]; a different one on the same pause:
    /// [`SessionError::AlreadyDecided`]. A leftover decision on another pause is replaced. Two
    /// processes deciding at once: one wins. Checks nothing else: [`decide`](super::decide) does.
    fn record_decision(&self, decision: &ReviewDecision) -> Result<Recorded, SessionError>;
    /// Appends `event` to the approval log, durably before it returns.
    fn log(&self, event: &ApprovalEvent) -> Result<(), SessionError>;
    /// The approval log (at most its last [`MAX_LOG_BYTES`]).
    fn approval_log(&self) -> Result<ApprovalLog, SessionError>;
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
    fn load_decision(&self) -> Result<Option<ReviewDecision>, SessionError> {
        read_strict(&self.root.join(DECISION_FILE), MAX_DECISION_BYTES, "review decision")
    }
    fn record_decision(&self, decision: &ReviewDecision) -> Result<Recorded, SessionError> {
        let path = self.root.join(DECISION_FILE);
        let dir = self.runtime_dir()?;
        let io = |op: &'static str, file: &Path| {
            let file = file.to_owned();
            move |source| SessionError::Io { file, op, source }
        };
        let mut bytes = serde_json::to_vec_pretty(decision).unwrap_or_default();
        bytes.push(b'\n');
        let mut temp = tempfile::Builder::new()
            .prefix(".planlock.")
            .suffix(".tmp")
            .tempfile_in(&dir)
            .map_err(io("create temporary file", &dir))?;
        temp.write_all(&bytes).map_err(io("write", temp.path()))?;
        temp.as_file().sync_all().map_err(io("fsync", temp.path()))?;
        // A hard link to the new name fails if the name exists: the one atomic "create if absent"
        // of a complete file. Of two deciders, one links first; the other meets its decision.
        for _ in 0..2 {
            match fs::hard_link(temp.path(), &path) {
                Ok(()) => {
                    File::open(&dir).and_then(|d| d.sync_all()).map_err(io("fsync directory", &dir))?;
                    return Ok(Recorded::New);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io("link", &path)(e)),
            }
            match self.load_decision()? {
                Some(existing) if existing.pause == decision.pause => {
                    return if existing.same_as(decision) {
                        Ok(Recorded::Again)
                    } else {
                        Err(SessionError::AlreadyDecided {
                            verdict: existing.verdict,
                            by: crate::text::printable(&existing.by).into_owned(),
                        })
                    };
                }
                // A leftover decision on a pause that has ended: removed, then linked again (a
                // racing decider may link first; then its decision is the one).
                _ => match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io("remove", &path)(e)),
                },
            }
        }
        Err(SessionError::AlreadyDecided { verdict: decision.verdict, by: "another decider, at the same time".into() })
    }
    fn log(&self, event: &ApprovalEvent) -> Result<(), SessionError> {
        let path = self.root.join(APPROVAL_LOG_FILE);
        let dir = self.runtime_dir()?;
        let io = |op: &'static str| {
            let file = path.clone();
            move |source| SessionError::Io { file, op, source }
        };
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        let created = !path.exists();
        let mut file = append_no_follow(&path).map_err(io("open"))?;
        // One write of a whole line: appends from several processes do not interleave.
        file.write_all(&line).map_err(io("append"))?;
        file.sync_all().map_err(io("fsync"))?;
        if created {
            File::open(&dir).and_then(|d| d.sync_all()).map_err(io("fsync directory"))?;
        }
        Ok(())
    }
    fn approval_log(&self) -> Result<ApprovalLog, SessionError> {
        let path = self.root.join(APPROVAL_LOG_FILE);
        let io = |op: &'static str| {
            let file = path.clone();
            move |source| SessionError::Io { file, op, source }
        };
        let mut file = match fsread::open_regular(&path) {
            Ok(file) => file,
            Err(ReadError::NotFound) => return Ok(ApprovalLog::default()),
            Err(ReadError::NotRegular(kind)) => {
                return Err(SessionError::Corrupt { file: path.clone(), problem: kind.to_owned() });
            }
            Err(ReadError::TooLarge) => return Ok(ApprovalLog::default()),
            Err(ReadError::Io(op, source)) => return Err(SessionError::Io { file: path.clone(), op, source }),
        };
        let len = file.metadata().map_err(io("inspect"))?.len();
        let skip = len.saturating_sub(MAX_LOG_BYTES);
        file.seek(io::SeekFrom::Start(skip)).map_err(io("seek"))?;
        let mut bytes = Vec::with_capacity((len - skip) as usize);
        file.take(MAX_LOG_BYTES).read_to_end(&mut bytes).map_err(io("read"))?;
        let text = String::from_utf8_lossy(&bytes);
        // Read from the middle, the first line is cut: it is not one of the log's.
        let lines = text.split('\n').skip(usize::from(skip > 0));
        Ok(ApprovalLog::parse(lines))
    }
}

impl FileRecords {
    /// `ops/runtime` under the root, created if missing (a decision and the log live beside the
    /// record they are about, which made it).
    fn runtime_dir(&self) -> Result<PathBuf, SessionError> {
        let dir = self.root.join(INTERVENTION_FILE);
        let dir = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| self.root.clone());
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => Ok(dir),
            Ok(_) => Err(SessionError::Corrupt { file: dir, problem: "not a directory".into() }),
            Err(source) => Err(SessionError::Io { file: dir, op: "inspect directory", source }),
        }
    }
}

/// Opens `path` to append, creating it, never through a symbolic link.
fn append_no_follow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW).mode(0o644);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
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
