//! A session's durable records as any process reads and decides on them, without owning the
//! session: [`SessionRecords`], and [`FileRecords`] under a root. A command that only reads
//! (`status`, `memory search`, `decisions`) takes no lock and no lease (CONTRACT §11: reads write
//! nothing, and a worker running a cycle is not disturbed); each record is read as strictly as
//! the store reads it, and an atomic save means a reader sees the old record or the new one,
//! never a mix. A person's decision on a paused cycle is written here too, from any process
//! (CONTRACT §14): into the approval log, which is where decisions live — one per pause, each
//! line durable before the call returns, never rewritten.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::approval::{ApprovalEvent, Decisions, MAX_LOG_BYTES, PauseRef, Recorded, ReviewDecision};
use super::history::{HISTORY_FILE, History, MAX_ENTRY_BYTES, MAX_HISTORY_READ_BYTES, PREVIOUS_HISTORY_FILE};
use super::store::{StoreFuture, ready};
use super::{
    BundlePinV1, INTERVENTION_FILE, InterventionRecord, MAX_INTERVENTION_FILE_BYTES, MAX_SESSION_FILE_BYTES, PIN_FILE,
    RESERVED_FILE, ReservedSession, SESSION_FILE, SessionError, SessionState,
};
use crate::fsread::{self, ReadError};

/// The approval log, relative to the root: one JSON object a line.
pub const APPROVAL_LOG_FILE: &str = "ops/runtime/approvals.jsonl";

/// The pauses' notices ([`ApprovalEvent::is_notice`]), relative to the root: one JSON object a
/// line, beside the approval log (which holds decisions and outcomes only).
pub const NOTICES_FILE: &str = "ops/runtime/notices.jsonl";

/// A mark of a session's pause as [`SessionRecords::pause_mark`] takes it: equal marks, the
/// same record and the same approval log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PauseMark(u64);

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
    pub fn has_outcome(&self, pause: &PauseRef) -> bool {
        self.events.iter().any(|e| e.is_outcome() && e.pause() == pause)
    }

    /// The decision on `pause`, if the log holds one.
    pub fn decision_on(&self, pause: &PauseRef) -> Option<&ReviewDecision> {
        self.events.iter().find_map(|e| match e {
            ApprovalEvent::Decided { decision } if decision.pause == *pause => Some(decision),
            _ => None,
        })
    }
}

/// A session's five records as read at once ([`SessionRecords::snapshot`]): each `None` where
/// the session has none. A new kind of record would be a new field, so the struct is
/// `#[non_exhaustive]`: a store outside planlock starts from `default()`.
///
/// ```
/// use planlock::session::SessionSnapshot;
/// let mut read = SessionSnapshot::default();
/// read.state = None; // what the store found, field by field
/// assert!(read.intervention.is_none());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SessionSnapshot {
    /// The saved session.
    pub state: Option<SessionState>,
    /// The record of a paused cycle.
    pub intervention: Option<InterventionRecord>,
    /// The id reserved for a new session.
    pub reserved: Option<ReservedSession>,
    /// The bundle pin.
    pub pin: Option<BundlePinV1>,
    /// The plan the session runs ([`PlanDocument`](super::PlanDocument)): none for a session
    /// that has not ended a cycle yet, or was last run by a planlock that kept no plan.
    pub plan: Option<super::PlanDocument>,
}

/// The records of one session, read and decided on without taking it: what a
/// [`SessionStore`](super::SessionStore) loads, a person's decision on a paused cycle, and the
/// approval log. Every call is a future, as a [`SessionStore`](super::SessionStore)'s are.
///
/// A new store writes [`snapshot`](Self::snapshot) (its five records in one read), the
/// approval log's four calls, the history and the access file; the `load*` calls read one record
/// each from the snapshot unless the store reads that record alone (files and PostgreSQL do).
pub trait SessionRecords: Send + Sync {
    /// The session's records, read together (each as strictly as its own `load*` reads it).
    fn snapshot(&self) -> StoreFuture<'_, SessionSnapshot>;
    /// The saved session, or `None`.
    fn load(&self) -> StoreFuture<'_, Option<SessionState>> {
        Box::pin(async move { Ok(self.snapshot().await?.state) })
    }
    /// The record of a paused cycle, or `None`.
    fn load_intervention(&self) -> StoreFuture<'_, Option<InterventionRecord>> {
        Box::pin(async move { Ok(self.snapshot().await?.intervention) })
    }
    /// The id reserved for a new session, or `None`.
    fn load_reserved(&self) -> StoreFuture<'_, Option<ReservedSession>> {
        Box::pin(async move { Ok(self.snapshot().await?.reserved) })
    }
    /// The bundle pin, or `None`.
    fn load_pin(&self) -> StoreFuture<'_, Option<BundlePinV1>> {
        Box::pin(async move { Ok(self.snapshot().await?.pin) })
    }
    /// The plan the session runs ([`PlanDocument`](super::PlanDocument)), or `None` (a session
    /// that has not ended a cycle yet, or was last run by a planlock that kept no plan).
    fn load_plan(&self) -> StoreFuture<'_, Option<super::PlanDocument>> {
        Box::pin(async move { Ok(self.snapshot().await?.plan) })
    }
    /// The decision recorded on `pause`, or `None`: the decision of
    /// [`decisions_on`](Self::decisions_on).
    fn decision_on<'a>(&'a self, pause: &'a PauseRef) -> StoreFuture<'a, Option<ReviewDecision>> {
        Box::pin(async move { Ok(self.decisions_on(pause).await?.decision) })
    }
    /// A cheap mark of what a listing of the session's pause reads — its record and its approval
    /// log — taken without reading them: equal marks, nothing of the pause changed since. `None`
    /// where a store has no such mark (PostgreSQL lists every pause in one statement). Files: a
    /// stat of each file, never an open, so a worker's pass over 10,000 roots reads no record
    /// it read before and wakes no watcher of the roots.
    fn pause_mark(&self) -> Option<PauseMark> {
        None
    }
    /// What is decided on `pause` so far: its decision, or the approvals counted toward one. By
    /// default, read from the [`approval_log`](Self::approval_log); a store that can read the
    /// pause's events alone does (files, PostgreSQL).
    fn decisions_on<'a>(&'a self, pause: &'a PauseRef) -> StoreFuture<'a, Decisions> {
        Box::pin(async move { Ok(self.approval_log().await?.decisions_on(pause)) })
    }
    /// Records `decision` on its pause in the approval log, durably before it returns, by the
    /// rule of [`ApprovalLog::tally`] for a pause that needs `required` distinct approvals: the
    /// pause's decision ([`Recorded::New`]), the same again ([`Recorded::Again`]), one approval
    /// of several ([`Recorded::Counted`]), or a different decision than the one recorded
    /// ([`SessionError::AlreadyDecided`]). Processes deciding at once take turns on the pause: one
    /// decision wins, and no approval is counted twice or lost. Checks nothing else:
    /// [`decide`](crate::review::decide) does.
    fn record_decision<'a>(&'a self, decision: &'a ReviewDecision, required: usize) -> StoreFuture<'a, Recorded>;
    /// Appends `outcome` (what became of a decision, or of a pause without one) to the approval
    /// log, durably, unless the log already has the outcome of its pause: a crash may stop a
    /// process after it logged and before it removed the record, and the next one must not log
    /// again. First, while the pause's record is still there, its `paused` notice, unless that
    /// is logged already: every pause's making is logged before its end. Whether the outcome was
    /// appended.
    fn log_outcome<'a>(&'a self, outcome: &'a ApprovalEvent) -> StoreFuture<'a, bool>;
    /// Appends `notice` ([`ApprovalEvent::is_notice`]) to the session's notices, durably, unless
    /// they hold that notice of its pause already (whoever sees a pause first logs it). Whether
    /// it was appended.
    fn log_notice<'a>(&'a self, notice: &'a ApprovalEvent) -> StoreFuture<'a, bool>;
    /// The session's notices (at most the last [`MAX_LOG_BYTES`] of them), oldest first.
    fn notices(&self) -> StoreFuture<'_, ApprovalLog>;
    /// The approval log (at most its last [`MAX_LOG_BYTES`]).
    fn approval_log(&self) -> StoreFuture<'_, ApprovalLog>;
    /// The session's last `limit` finished cycles, newest first (see [`CycleEntry`](super::CycleEntry)).
    fn history(&self, limit: usize) -> StoreFuture<'_, History>;
    /// The access file installed where this session lives (CONTRACT §18, amended: the rules
    /// live with the sessions): beside the session roots ([`ACCESS_FILE`](super::ACCESS_FILE)),
    /// or the tenant's in the database. `None`: none is installed (one operator, names
    /// unverified). Every path that decides or acts reads it here.
    fn installed_access(&self) -> StoreFuture<'_, Option<super::InstalledAccess>>;
}

/// The records under a session root, read without its lock; creates nothing. Its calls are a
/// few KiB of local I/O, done in place: their futures are ready when they are returned.
///
/// ```
/// use planlock::session::{FileRecords, FileSessionStore, SessionRecords};
/// let root = tempfile::tempdir()?;
/// let _running = FileSessionStore::open(root.path())?; // a runtime holds the root
/// let records = FileRecords::new(root.path());         // a reader still reads it
/// let (state, paused) = planlock::block_on(async { (records.load().await, records.load_intervention().await) });
/// assert!(state?.is_none() && paused?.is_none());
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

    /// The saved session, read strictly.
    fn state(&self) -> Result<Option<SessionState>, SessionError> {
        self.unlinked(|| read_strict(&self.root.join(SESSION_FILE), MAX_SESSION_FILE_BYTES, "session state"))
    }

    /// The record of a paused cycle, read strictly.
    fn intervention(&self) -> Result<Option<InterventionRecord>, SessionError> {
        self.unlinked(|| {
            read_strict(&self.root.join(INTERVENTION_FILE), MAX_INTERVENTION_FILE_BYTES, "intervention record")
        })
    }

    /// The id reserved for a new session, read strictly.
    fn reserved(&self) -> Result<Option<ReservedSession>, SessionError> {
        self.unlinked(|| read_strict(&self.root.join(RESERVED_FILE), MAX_SESSION_FILE_BYTES, "reserved session id"))
    }

    /// The bundle pin, read strictly.
    fn pin(&self) -> Result<Option<BundlePinV1>, SessionError> {
        self.unlinked(|| read_strict(&self.root.join(PIN_FILE), MAX_SESSION_FILE_BYTES, "bundle pin"))
    }

    /// The plan the session runs, read strictly.
    fn plan(&self) -> Result<Option<super::PlanDocument>, SessionError> {
        self.unlinked(|| read_strict(&self.root.join(super::PLAN_FILE), super::MAX_PLAN_FILE_BYTES, "plan"))
    }

    /// The approval log's events on `pause` (none without a log).
    fn events_on(&self, pause: &PauseRef) -> Result<ApprovalLog, SessionError> {
        let path = self.root.join(APPROVAL_LOG_FILE);
        match fsread::open_regular(&path) {
            Ok(mut file) => events_of(&mut file, &path, pause),
            Err(ReadError::NotFound) | Err(ReadError::TooLarge) => Ok(ApprovalLog::default()),
            Err(ReadError::NotRegular(kind)) => Err(SessionError::Corrupt { file: path, problem: kind.to_owned() }),
            Err(ReadError::Io(op, source)) => Err(SessionError::Io { file: path, op, source }),
        }
    }

    fn record(&self, decision: &ReviewDecision, required: usize) -> Result<Recorded, SessionError> {
        self.append_with(APPROVAL_LOG_FILE, &decision.pause, |log| log.tally(decision, required))
    }

    fn log_of(&self, file: &str) -> Result<ApprovalLog, SessionError> {
        let path = self.root.join(file);
        match fsread::open_regular(&path) {
            Ok(mut file) => read_log(&mut file, &path, MAX_LOG_BYTES).map(|text| ApprovalLog::parse(text.lines())),
            Err(ReadError::NotFound) => Ok(ApprovalLog::default()),
            Err(ReadError::NotRegular(kind)) => Err(SessionError::Corrupt { file: path, problem: kind.to_owned() }),
            Err(ReadError::TooLarge) => Ok(ApprovalLog::default()),
            Err(ReadError::Io(op, source)) => Err(SessionError::Io { file: path, op, source }),
        }
    }
}

impl SessionRecords for FileRecords {
    /// The record's and the approval log's size, modification time and file id (a record is
    /// replaced whole, the log only grown), from a stat of each: no file is opened.
    fn pause_mark(&self) -> Option<PauseMark> {
        use std::hash::{Hash, Hasher};
        let mut mark = std::collections::hash_map::DefaultHasher::new();
        for file in [INTERVENTION_FILE, APPROVAL_LOG_FILE] {
            match fs::metadata(self.root.join(file)) {
                Ok(meta) => {
                    (meta.len(), meta.modified().ok()).hash(&mut mark);
                    #[cfg(unix)]
                    std::os::unix::fs::MetadataExt::ino(&meta).hash(&mut mark);
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => 0u8.hash(&mut mark),
                // A file that cannot be looked at has no mark: it is read (and its error shown).
                Err(_) => return None,
            }
        }
        Some(PauseMark(mark.finish()))
    }
    fn snapshot(&self) -> StoreFuture<'_, SessionSnapshot> {
        let read = || -> Result<SessionSnapshot, SessionError> {
            Ok(SessionSnapshot {
                state: self.state()?,
                intervention: self.intervention()?,
                reserved: self.reserved()?,
                pin: self.pin()?,
                plan: self.plan()?,
            })
        };
        ready(read())
    }
    fn load(&self) -> StoreFuture<'_, Option<SessionState>> {
        ready(self.state())
    }
    fn load_intervention(&self) -> StoreFuture<'_, Option<InterventionRecord>> {
        ready(self.intervention())
    }
    fn load_reserved(&self) -> StoreFuture<'_, Option<ReservedSession>> {
        ready(self.reserved())
    }
    fn load_pin(&self) -> StoreFuture<'_, Option<BundlePinV1>> {
        ready(self.pin())
    }
    fn load_plan(&self) -> StoreFuture<'_, Option<super::PlanDocument>> {
        ready(self.plan())
    }
    fn decisions_on<'a>(&'a self, pause: &'a PauseRef) -> StoreFuture<'a, Decisions> {
        ready(self.unlinked(|| Ok(self.events_on(pause)?.decisions_on(pause))))
    }
    fn record_decision<'a>(&'a self, decision: &'a ReviewDecision, required: usize) -> StoreFuture<'a, Recorded> {
        ready(self.unlinked(|| self.record(decision, required)))
    }
    fn log_outcome<'a>(&'a self, outcome: &'a ApprovalEvent) -> StoreFuture<'a, bool> {
        ready(self.unlinked(|| self.outcome_now(outcome)))
    }
    fn log_notice<'a>(&'a self, notice: &'a ApprovalEvent) -> StoreFuture<'a, bool> {
        ready(self.unlinked(|| self.notice_now(notice)))
    }
    fn notices(&self) -> StoreFuture<'_, ApprovalLog> {
        ready(self.unlinked(|| self.log_of(NOTICES_FILE)))
    }
    fn approval_log(&self) -> StoreFuture<'_, ApprovalLog> {
        ready(self.unlinked(|| self.log_of(APPROVAL_LOG_FILE)))
    }
    fn history(&self, limit: usize) -> StoreFuture<'_, History> {
        ready(self.unlinked(|| self.read_history(limit)))
    }
    fn installed_access(&self) -> StoreFuture<'_, Option<super::InstalledAccess>> {
        ready(super::read_installed_access(&super::sessions_dir_of(&self.root)))
    }
}

impl FileRecords {
    /// [`SessionRecords::log_outcome`], in place.
    pub(super) fn outcome_now(&self, outcome: &ApprovalEvent) -> Result<bool, SessionError> {
        let pause = outcome.pause();
        let record: Option<InterventionRecord> =
            read_strict(&self.root.join(INTERVENTION_FILE), MAX_INTERVENTION_FILE_BYTES, "intervention record")?;
        if let Some(record) = record.filter(|record| PauseRef::of(record) == *pause) {
            self.notice_now(&ApprovalEvent::paused(&record))?;
        }
        self.append_with(APPROVAL_LOG_FILE, pause, |log| {
            Ok(if log.has_outcome(pause) { (false, Vec::new()) } else { (true, vec![outcome.clone()]) })
        })
    }

    /// [`SessionRecords::log_notice`], in place.
    fn notice_now(&self, notice: &ApprovalEvent) -> Result<bool, SessionError> {
        self.append_with(NOTICES_FILE, notice.pause(), |log| {
            let there = log.events.iter().any(|e| e.name() == notice.name() && e.pause() == notice.pause());
            Ok(if there { (false, Vec::new()) } else { (true, vec![notice.clone()]) })
        })
    }

    /// `read` if the root's `ops` and `ops/runtime` are directories of its own, not links: a
    /// link to another root's would have this root's readers read, and its deciders write, the
    /// other session's records (the session store refuses them too).
    fn unlinked<T>(&self, read: impl FnOnce() -> Result<T, SessionError>) -> Result<T, SessionError> {
        let ops = self.root.join("ops");
        for dir in [ops.join("runtime"), ops] {
            match fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let problem = "a symbolic link: a session's directories are never followed through links".into();
                    return Err(SessionError::Corrupt { file: dir, problem });
                }
                _ => {}
            }
        }
        read()
    }
}

/// How long a writer of the approval log waits for another one (a decider, a runtime logging an
/// outcome) to finish its line before giving up.
const LOG_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

impl FileRecords {
    /// Appends what `check` says to the log `file` (the approval log or the notices), durably, in
    /// one write: `check` is given
    /// the log's events on `pause` as they are, read under the log's lock (so no other writer
    /// comes between), and answers a value and the events to append (none: nothing is written).
    /// The lock is the log file's own (an advisory lock of a few milliseconds), not the
    /// session's.
    fn append_with<T>(
        &self,
        file: &str,
        pause: &PauseRef,
        check: impl FnOnce(&ApprovalLog) -> Result<(T, Vec<ApprovalEvent>), SessionError>,
    ) -> Result<T, SessionError> {
        let path = self.root.join(file);
        let dir = self.runtime_dir()?;
        let io = |op: &'static str| {
            let file = path.clone();
            move |source| SessionError::Io { file, op, source }
        };
        let mut file = open_log(&path).map_err(io("open"))?;
        // A new log's name is made durable in its directory too.
        let created = file.metadata().map_err(io("inspect"))?.len() == 0;
        let started = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(fs::TryLockError::WouldBlock) if started.elapsed() < LOG_LOCK_WAIT => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(io("lock")(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "another writer holds the approval log",
                    )));
                }
                Err(fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
            }
        }
        let log = events_of(&mut file, &path, pause)?;
        let (value, events) = check(&log)?;
        if events.is_empty() {
            return Ok(value);
        }
        let before = file.metadata().map_err(io("inspect"))?.len();
        // A log that does not end with a newline (a line a crash or a full disk cut short, an
        // edit) would swallow this line into its torn one, where no reader finds it: the torn
        // line is ended first, in the same write.
        let torn = before > 0 && last_byte(&file, before).map_err(io("read"))? != b'\n';
        let mut line = Vec::with_capacity(512);
        if torn {
            line.push(b'\n');
        }
        for event in &events {
            serde_json::to_writer(&mut line, event).map_err(|e| io("encode")(io::Error::other(e)))?;
            line.push(b'\n');
        }
        // One write of a whole line at the end (O_APPEND), made durable before the call returns.
        // A write or sync that fails (a full disk, a file size limit) is undone: a part of a line
        // left behind would be the torn tail of the next append, and the caller is told.
        let written = file.write_all(&line).map_err(io("append")).and_then(|()| file.sync_data().map_err(io("fsync")));
        if let Err(e) = written {
            let _ = file.set_len(before).and_then(|()| file.sync_data());
            return Err(e);
        }
        if created {
            File::open(&dir).and_then(|d| d.sync_all()).map_err(io("fsync directory"))?;
        }
        Ok(value)
    }

    /// The newest `limit` entries of the history: the current file's, then the previous one's
    /// when that is not enough; at most [`MAX_HISTORY_READ_BYTES`] of the end of each.
    fn read_history(&self, limit: usize) -> Result<History, SessionError> {
        let mut history = History::default();
        for file in [HISTORY_FILE, PREVIOUS_HISTORY_FILE] {
            let wanted = limit - history.entries.len();
            if wanted == 0 {
                break;
            }
            let path = self.root.join(file);
            // An entry is at most MAX_ENTRY_BYTES and a newline: the last `wanted` lie within
            // `wanted + 1` of those from the end (one more for the line a read from the middle cuts).
            let room = (wanted as u64 + 1).saturating_mul(MAX_ENTRY_BYTES as u64 + 1);
            let text = match fsread::open_regular(&path) {
                Ok(mut file) => read_log(&mut file, &path, room.min(MAX_HISTORY_READ_BYTES))?,
                Err(ReadError::NotFound) => continue,
                Err(ReadError::NotRegular(kind)) => {
                    return Err(SessionError::Corrupt { file: path, problem: kind.to_owned() });
                }
                Err(ReadError::TooLarge) => continue,
                Err(ReadError::Io(op, source)) => return Err(SessionError::Io { file: path, op, source }),
            };
            let older = History::of_lines(text.lines(), wanted);
            history.entries.extend(older.entries);
            history.unreadable += older.unreadable;
        }
        Ok(history)
    }

    /// `ops/runtime` under the root, which must be there (the log lives beside the record it is
    /// about, which made it).
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

/// Opens a log (the approval log, the history) to read and append, creating it, never through a
/// symbolic link.
pub(crate) fn open_log(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
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

/// The byte at `len - 1` of `file` (a log opened to append: where it reads does not move where
/// it writes).
fn last_byte(mut file: &File, len: u64) -> io::Result<u8> {
    file.seek(io::SeekFrom::Start(len - 1))?;
    let mut byte = [0u8];
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// How much of the log's end a check reads for one pause's events: they all come after the
/// pause began, and while a pause waits no other pause's events are logged, so they are the last
/// line or two (a decision line is at most about 10 KiB: 2,000 characters of justification).
const CHECK_BYTES: u64 = 32 << 10;

/// The events of `pause` in the log in `file` (read from its end, at most [`CHECK_BYTES`]; only
/// the lines that name the pause's creation are parsed, found with one search of the text).
fn events_of(file: &mut File, path: &Path, pause: &PauseRef) -> Result<ApprovalLog, SessionError> {
    let text = read_log(file, path, CHECK_BYTES)?;
    let created = format!("\"createdAt\":\"{}\"", pause.created_at);
    let mut lines = Vec::new();
    let mut after = 0;
    for (at, _) in text.match_indices(&created) {
        if at < after {
            continue;
        }
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        lines.push(&text[start..end]);
        after = end;
    }
    let mut log = ApprovalLog::parse(lines);
    log.events.retain(|e| e.pause() == pause);
    Ok(log)
}

/// The text of the log in `file`: at most its last `cap` bytes; read from the middle, the first
/// line is cut, and is not one of the log's.
pub(crate) fn read_log(file: &mut File, path: &Path, cap: u64) -> Result<String, SessionError> {
    let io = |op: &'static str| {
        let file = path.to_owned();
        move |source| SessionError::Io { file, op, source }
    };
    let len = file.metadata().map_err(io("inspect"))?.len();
    let skip = len.saturating_sub(cap);
    file.seek(io::SeekFrom::Start(skip)).map_err(io("seek"))?;
    let mut bytes = Vec::with_capacity((len - skip) as usize);
    (&mut *file).take(cap).read_to_end(&mut bytes).map_err(io("read"))?;
    let start = if skip > 0 { bytes.iter().position(|b| *b == b'\n').map_or(bytes.len(), |at| at + 1) } else { 0 };
    // The log is UTF-8 as written; a byte that is not (an edit) spoils only its own line.
    Ok(match String::from_utf8(bytes.split_off(start)) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
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
