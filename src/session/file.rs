//! The crash-safe [`FileSessionStore`]: one session file under a root the caller chooses,
//! saved atomically and durably, locked against a second store on the same root.

use super::OpenError;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::history::{HISTORY_FILE, PREVIOUS_HISTORY_FILE};
use super::records::{FileRecords, SessionRecords, open_log};
use super::store::ready;
use super::{
    CycleEntry, CycleGuard, EndOfCycle, HistoryEntry, INTERVENTION_FILE, Leaves, PIN_FILE, RESERVED_FILE,
    ReservedSession, SESSION_FILE, SessionError, SessionState, SessionStore, StoreFuture,
};

/// The file operations of a save, one method each: the seam for fault injection.
pub trait SaveFs: Send + Sync {
    /// Creates one directory.
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir(dir)
    }
    /// Creates a temporary file in `dir` (removed if dropped before [`SaveFs::rename`]).
    fn create_temp(&self, dir: &Path) -> io::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new().prefix(".planlock.").suffix(".tmp").tempfile_in(dir)
    }
    /// Writes all of `bytes`.
    fn write(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }
    /// Flushes the file's data and metadata to disk.
    fn sync_file(&self, file: &File) -> io::Result<()> {
        file.sync_all()
    }
    /// Renames the temporary file over `to`.
    fn rename(&self, temp: tempfile::NamedTempFile, to: &Path) -> io::Result<()> {
        temp.persist(to).map(drop).map_err(|e| e.error)
    }
    /// Removes the file at `path`.
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
    /// Flushes a directory's entries to disk.
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealFs;

impl SaveFs for RealFs {}

/// The crash-safe file store at `<root>/ops/runtime/session_state.json`, with the record of a
/// paused cycle beside it (`intervention.json`).
///
/// ```
/// use planlock::session::{EndOfCycle, FileSessionStore, SessionStore, SessionUpdate};
/// use planlock::{Failure, block_on as wait};
/// let root = tempfile::tempdir()?;
/// let store = FileSessionStore::open(root.path())?;
/// assert!(wait(store.records().load())?.is_none());                  // Cold Start, nothing created
/// assert!(!root.path().join("ops").exists());
/// let update = SessionUpdate {
///     session_id: uuid::Uuid::new_v4(), memory_ref: None, repo_scan_version: None,
///     last_execution_plan_hash: planlock::Digest::of(b"plan"), hash_parts: None, cycle: 1,
/// };
/// let saved = wait(store.end_cycle(EndOfCycle::saving(update), wait(store.begin_cycle())?))?;
/// assert_eq!(wait(store.records().load())?, saved);
/// assert_eq!(FileSessionStore::open(root.path()).unwrap_err().code(), "session-in-use");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FileSessionStore {
    root: PathBuf,
    file: PathBuf,
    intervention: PathBuf,
    /// Its records, read as any reader reads them.
    records: FileRecords,
    // Held for the store's life: the advisory lock on the root directory.
    _lock: File,
    /// Whether a runtime has claimed this store.
    claimed: std::sync::atomic::AtomicBool,
    fs: Box<dyn SaveFs>,
    /// The entries in the history file, once counted (this store alone writes it: it holds the
    /// root's lock).
    history_entries: std::sync::Mutex<Option<usize>>,
}

impl fmt::Debug for FileSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSessionStore").field("root", &self.root).finish_non_exhaustive()
    }
}

/// How long a session root's busy lock is tried again before the store answers "session in
/// use" (see [`FileSessionStore::open`]).
pub const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(250);

impl FileSessionStore {
    /// Opens the store at `root` (which must exist) and locks it; creates nothing. A root another
    /// store holds is refused (`session-in-use`) once its lock stayed busy for [`LOCK_PATIENCE`]
    /// (a lock let go can look held while a child process of this one starts).
    pub fn open(root: impl Into<PathBuf>) -> Result<FileSessionStore, OpenError> {
        FileSessionStore::on(root.into(), Box::new(RealFs))
    }

    /// [`open`](Self::open) with another [`SaveFs`], for fault injection (feature `testing`).
    #[cfg(feature = "testing")]
    #[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
    pub fn with_fs(root: impl Into<PathBuf>, fs: impl SaveFs + 'static) -> Result<FileSessionStore, OpenError> {
        FileSessionStore::on(root.into(), Box::new(fs))
    }

    fn on(root: PathBuf, fs: Box<dyn SaveFs>) -> Result<FileSessionStore, OpenError> {
        let meta = fs::metadata(&root).map_err(|source| OpenError::Root { root: root.clone(), source })?;
        if !meta.is_dir() {
            let source = io::Error::new(io::ErrorKind::NotADirectory, "not a directory");
            return Err(OpenError::Root { root, source });
        }
        let lock = File::open(&root).map_err(|source| OpenError::Root { root: root.clone(), source })?;
        // A lock let go can look held for a moment: a child process another thread is starting
        // holds a copy of every descriptor from its fork to its exec (measured: up to 90 ms for
        // a large process). A busy lock is tried again for LOCK_PATIENCE before "in use".
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        let mut pause = std::time::Duration::from_millis(1);
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause.min(deadline.saturating_duration_since(std::time::Instant::now())));
                    pause = (pause * 2).min(std::time::Duration::from_millis(50));
                }
                Err(fs::TryLockError::WouldBlock) => return Err(OpenError::InUse { root }),
                Err(fs::TryLockError::Error(source)) => return Err(OpenError::Root { root, source }),
            }
        }
        let file = root.join(SESSION_FILE);
        let intervention = root.join(INTERVENTION_FILE);
        Ok(FileSessionStore {
            records: FileRecords::new(&root),
            root,
            file,
            intervention,
            _lock: lock,
            claimed: std::sync::atomic::AtomicBool::new(false),
            fs,
            history_entries: std::sync::Mutex::new(None),
        })
    }

    /// The session file's path.
    pub fn path(&self) -> &Path {
        &self.file
    }

    fn io(&self, op: &'static str, file: &Path) -> impl FnOnce(io::Error) -> SessionError {
        let file = file.to_owned();
        move |source| SessionError::Io { file, op, source }
    }

    /// Creates `ops` and `ops/runtime` if missing, making each new entry durable in its parent.
    fn ensure_dirs(&self) -> Result<PathBuf, SessionError> {
        let ops = self.root.join("ops");
        let runtime = ops.join("runtime");
        for (dir, parent) in [(&ops, &self.root), (&runtime, &ops)] {
            match fs::symlink_metadata(dir) {
                Ok(m) if m.is_dir() => continue,
                Ok(_) => {
                    let e = io::Error::new(io::ErrorKind::NotADirectory, "exists but is not a directory");
                    return Err(self.io("create directory", dir)(e));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.io("inspect directory", dir)(e)),
            }
            self.fs.create_dir(dir).map_err(self.io("create directory", dir))?;
            self.fs.sync_dir(parent).map_err(self.io("fsync directory", parent))?;
        }
        Ok(runtime)
    }
}

impl FileSessionStore {
    /// Refuses a cycle whose backend holds a transaction (a database session's): its writes
    /// would not commit with this session's files.
    fn own(&self, cycle: &CycleGuard) -> Result<(), SessionError> {
        match cycle.holds() {
            false => Ok(()),
            true => Err(SessionError::ForeignCycle { place: format!("session root {}", self.root.display()) }),
        }
    }

    /// Removes the file at `path` if it is there, durably (its directory synced).
    fn remove_durably(&self, path: &Path) -> Result<(), SessionError> {
        match self.fs.remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io("remove", path)(e)),
        }
        let dir = path.parent().unwrap_or(&self.root);
        self.fs.sync_dir(dir).map_err(self.io("fsync directory", dir))
    }

    /// Replaces the file at `path` with `value`'s JSON: a temporary file written and synced, renamed
    /// over it, the directory synced. A reader or a crash sees the old file or the new one.
    fn write_durably<T: serde::Serialize>(&self, path: &Path, value: &T) -> Result<(), SessionError> {
        let mut bytes = serde_json::to_vec_pretty(value)
            .map_err(|e| SessionError::Corrupt { file: path.to_owned(), problem: format!("unserializable: {e}") })?;
        bytes.push(b'\n');
        let dir = self.ensure_dirs()?;
        let mut temp = self.fs.create_temp(&dir).map_err(self.io("create temporary file", &dir))?;
        self.fs.write(temp.as_file_mut(), &bytes).map_err(self.io("write", temp.path()))?;
        self.fs.sync_file(temp.as_file()).map_err(self.io("fsync", temp.path()))?;
        self.fs.rename(temp, path).map_err(self.io("rename", path))?;
        self.fs.sync_dir(&dir).map_err(self.io("fsync directory", &dir))?;
        Ok(())
    }
}

impl FileSessionStore {
    /// Appends `entry` to the history file and syncs it; when the file holds `keep` entries it
    /// first becomes the previous file (the one before that dropped), so at most `2 × keep`
    /// entries are kept. A line a crash cut short is ended first, so it spoils only itself.
    fn append_history(&self, entry: &CycleEntry, keep: usize) -> Result<(), SessionError> {
        if keep == 0 {
            return Ok(());
        }
        let dir = self.ensure_dirs()?;
        let path = self.root.join(HISTORY_FILE);
        let mut counted = self.history_entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries = match *counted {
            Some(n) => n,
            None => count_lines(&path).map_err(self.io("read", &path))?,
        };
        if entries >= keep {
            let previous = self.root.join(PREVIOUS_HISTORY_FILE);
            fs::rename(&path, &previous).map_err(self.io("rename", &path))?;
            self.fs.sync_dir(&dir).map_err(self.io("fsync directory", &dir))?;
            entries = 0;
        }
        let mut file = open_log(&path).map_err(self.io("open", &path))?;
        let len = file.metadata().map_err(self.io("inspect", &path))?.len();
        let mut line = Vec::new();
        if counted.is_none() && len > 0 && !ends_with_newline(&mut file).map_err(self.io("read", &path))? {
            line.push(b'\n');
        }
        line.extend(entry.to_line());
        line.push(b'\n');
        self.fs.write(&mut file, &line).map_err(self.io("append", &path))?;
        self.fs.sync_file(&file).map_err(self.io("fsync", &path))?;
        if len == 0 {
            // A new file's name is made durable in its directory too.
            self.fs.sync_dir(&dir).map_err(self.io("fsync directory", &dir))?;
        }
        *counted = Some(entries + 1);
        Ok(())
    }
}

/// The lines of the file at `path` (0 when there is none), counted without holding it.
fn count_lines(path: &Path) -> io::Result<usize> {
    let file = match crate::fsread::open_regular(path) {
        Ok(file) => file,
        Err(crate::fsread::ReadError::NotFound) => return Ok(0),
        Err(crate::fsread::ReadError::Io(_, e)) => return Err(e),
        Err(_) => return Err(io::Error::other("not a regular file")),
    };
    let mut reader = io::BufReader::new(file);
    let mut lines = 0;
    loop {
        let buf = io::BufRead::fill_buf(&mut reader)?;
        if buf.is_empty() {
            return Ok(lines);
        }
        lines += buf.iter().filter(|b| **b == b'\n').count();
        let n = buf.len();
        io::BufRead::consume(&mut reader, n);
    }
}

/// Whether `file` ends with a newline.
fn ends_with_newline(file: &mut File) -> io::Result<bool> {
    use std::io::{Read, Seek};
    file.seek(io::SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

// The file store's calls run in place (a few KiB of local I/O and its fsyncs) and are ready when
// they return: a fleet of sessions uses the PostgreSQL store, whose calls wait on the server
// holding no thread.
impl SessionStore for FileSessionStore {
    fn claim(&self) -> Result<(), OpenError> {
        if self.claimed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return Err(OpenError::Claimed { place: self.root.display().to_string() });
        }
        Ok(())
    }

    // The one crash-safe order of a cycle's end on files: the plan and the pin (a session never
    // exists without them); the state and then the reserved id's removal (a crash between leaves an id
    // the saved session supersedes), with the history entry right after it; the pause's outcome
    // (logged once); the pause's record written or removed, after its outcome (a crash between
    // leaves a record the next boot finds decided, or a leftover of a saved session); then any
    // other end's history entry. A crash at any point leaves what the next boot reads as the
    // cycle not ended, or ended.
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
        let EndOfCycle { leaves, pin, plan, outcome, entry } = end;
        let ended = self.own(&cycle).and_then(|()| {
            if let Some(plan) = &plan {
                self.write_durably(&self.root.join(super::PLAN_FILE), plan)?;
            }
            if let Some(pin) = &pin {
                self.write_durably(&self.root.join(PIN_FILE), pin)?;
            }
            let saved = match &leaves {
                Leaves::Session(update) => {
                    let state = update.clone().into_state();
                    self.write_durably(&self.file, &state)?;
                    self.remove_durably(&self.root.join(RESERVED_FILE))?;
                    Some(state)
                }
                _ => None,
            };
            let history = |entry: Option<HistoryEntry>| match entry {
                Some((entry, keep)) => self.append_history(&entry, keep),
                None => Ok(()),
            };
            let entry = match saved {
                Some(_) => history(entry).map(|()| None)?,
                None => entry,
            };
            if let Some(outcome) = &outcome {
                self.records.outcome_now(outcome)?;
            }
            match leaves {
                Leaves::Pause(record) => self.write_durably(&self.intervention, &record)?,
                Leaves::Session(_) | Leaves::Unpaused => self.remove_durably(&self.intervention)?,
                Leaves::AsItWas => {}
            }
            history(entry)?;
            Ok(saved)
        });
        ready(ended)
    }

    fn save_reserved<'a>(&'a self, reserved: &'a ReservedSession) -> StoreFuture<'a, ()> {
        ready(self.write_durably(&self.root.join(RESERVED_FILE), reserved))
    }

    fn records(&self) -> &dyn SessionRecords {
        &self.records
    }
}
