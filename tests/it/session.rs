//! The file session store: the bad-input table, fault injection at every step of a save, and the
//! no-creation-at-boot rule. (Crash and two-process tests: `tests/crash.rs`.)

use planlock::block_on;
use planlock::session::CycleGuard;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use planlock::Digest;
use planlock::Failure;
use planlock::session::{EndOfCycle, FileSessionStore, RealFs, SESSION_FILE, SaveFs, SessionStore, SessionUpdate};

fn update(memory: &str) -> SessionUpdate {
    SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: Some(memory.into()),
        repo_scan_version: None,
        last_execution_plan_hash: Digest::of(memory.as_bytes()),
        hash_parts: None,
        cycle: 1,
    }
}

fn write_state(root: &Path, text: &[u8]) -> PathBuf {
    let file = root.join(SESSION_FILE);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, text).unwrap();
    file
}

const GOOD: &str = r#"{
  "sessionId": "8c1b5f5e-2f4b-4d2a-9c57-0f6b3c3e2a11",
  "memoryRef": null,
  "repoScanVersion": "v1.2.3",
  "lastExecutionPlanHash": "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b",
  "updatedAt": "2026-11-22T10:00:00Z"
}"#;

#[test]
fn a_good_file_loads() {
    let root = tempfile::tempdir().unwrap();
    write_state(root.path(), GOOD.as_bytes());
    let state = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap().unwrap();
    assert_eq!(state.repo_scan_version.as_deref(), Some("v1.2.3"));
    assert_eq!(state.memory_ref, None);
    assert_eq!(state.updated_at.to_string(), "2026-11-22T10:00:00Z");
}

#[test]
fn no_file_is_a_cold_start_and_creates_nothing() {
    let root = tempfile::tempdir().unwrap();
    let store = FileSessionStore::open(root.path()).unwrap();
    assert!(block_on(store.records().load()).unwrap().is_none());
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0, "boot created nothing");
    // The same with `ops/` present but empty.
    fs::create_dir(root.path().join("ops")).unwrap();
    assert!(block_on(store.records().load()).unwrap().is_none());
    assert_eq!(fs::read_dir(root.path().join("ops")).unwrap().count(), 0);
}

#[test]
fn a_missing_root_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let err = FileSessionStore::open(root.path().join("nope")).unwrap_err();
    assert_eq!(err.code(), "session-root");
    assert!(!root.path().join("nope").exists());
}

fn replace(field: &str, value: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    let mut m = v.as_object().unwrap().clone();
    m.insert(field.into(), serde_json::from_str(value).unwrap());
    serde_json::to_string(&m).unwrap()
}

fn without(field: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(GOOD).unwrap();
    let mut m = v.as_object().unwrap().clone();
    m.remove(field);
    serde_json::to_string(&m).unwrap()
}

#[test]
fn every_bad_file_is_fail_fast_names_the_file_and_stays_untouched() {
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty"),
        ("truncated", GOOD.as_bytes()[..GOOD.len() / 2].to_vec(), "EOF"),
        ("trailing garbage", format!("{GOOD} {{}}").into_bytes(), "trailing"),
        ("not JSON", b"session=1".to_vec(), "expected"),
        ("unknown field", replace("owner", "\"me\"").into_bytes(), "unknown field `owner`"),
        ("missing field", without("memoryRef").into_bytes(), "missing field `memoryRef`"),
        ("missing hash", without("lastExecutionPlanHash").into_bytes(), "missing field"),
        ("wrong type", replace("memoryRef", "7").into_bytes(), "invalid type"),
        ("bad uuid", replace("sessionId", "\"not-a-uuid\"").into_bytes(), "sessionId"),
        ("uuid not v4", replace("sessionId", "\"8c1b5f5e-2f4b-1d2a-9c57-0f6b3c3e2a11\"").into_bytes(), "version 4"),
        ("bad hash", replace("lastExecutionPlanHash", "\"ABC\"").into_bytes(), "64 lowercase hex"),
        ("bad time", replace("updatedAt", "\"yesterday\"").into_bytes(), "RFC 3339"),
        ("time not UTC", replace("updatedAt", "\"2026-11-22T10:00:00+02:00\"").into_bytes(), "UTC"),
        (
            "duplicate key",
            GOOD.replacen("\"memoryRef\": null,", "\"memoryRef\": null, \"memoryRef\": \"x\",", 1).into_bytes(),
            "duplicate",
        ),
        ("over the size cap", format!("{}{}", GOOD, " ".repeat(70 * 1024)).into_bytes(), "limit"),
        ("not UTF-8", vec![0xff, 0xfe, b'{'], "expected"),
    ];
    cases.push(("array", b"[]".to_vec(), "invalid type"));
    let fields = r#"["8c1b5f5e-2f4b-4d2a-9c57-0f6b3c3e2a11", null, null, "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b", "2026-11-22T10:00:00Z", null]"#;
    cases.push(("its fields as an array", fields.as_bytes().to_vec(), "invalid type"));
    for (name, bytes, words) in cases {
        let root = tempfile::tempdir().unwrap();
        let file = write_state(root.path(), &bytes);
        let before = fs::metadata(&file).unwrap().modified().unwrap();
        let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).expect_err(name);
        assert_eq!(err.code(), "session-corrupt", "{name}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&file.display().to_string()), "{name}: the file is named: {msg}");
        assert!(msg.contains(words), "{name}: {msg}");
        assert_eq!(fs::read(&file).unwrap(), bytes, "{name}: untouched");
        assert_eq!(fs::metadata(&file).unwrap().modified().unwrap(), before, "{name}: untouched");
    }
}

#[test]
fn special_files_are_refused_without_being_followed_or_opened() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join(SESSION_FILE);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    let target = root.path().join("elsewhere.json");
    fs::write(&target, GOOD).unwrap();

    std::os::unix::fs::symlink(&target, &file).unwrap();
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    fs::remove_file(&file).unwrap();

    fs::create_dir(&file).unwrap();
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert!(err.to_string().contains("a directory"), "{err}");
    fs::remove_dir(&file).unwrap();

    let c = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    // A FIFO with no writer: opening it for reading would block forever. Made with libc, not by
    // spawning `mkfifo`: a fork would briefly hold the session locks of tests running in parallel.
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
    fs::remove_file(&file).unwrap();

    // A socket cannot even be opened; the store still says what it is.
    let listener = std::os::unix::net::UnixListener::bind(&file).unwrap();
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert!(err.to_string().contains("a socket"), "{err}");
    drop(listener);
    fs::remove_file(&file).unwrap();

    // A dangling symbolic link is refused too, not taken for a missing file (Cold Start).
    std::os::unix::fs::symlink(root.path().join("nowhere.json"), &file).unwrap();
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    fs::remove_file(&file).unwrap();

    // Unreadable: the path runs through a file where a directory should be.
    fs::remove_dir_all(root.path().join("ops")).unwrap();
    fs::write(root.path().join("ops"), "not a directory").unwrap();
    let err = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap_err();
    assert_eq!(err.code(), "session-io", "{err}");
    assert_eq!(fs::read_to_string(root.path().join("ops")).unwrap(), "not a directory");
}

#[test]
fn save_then_load_round_trips_and_sets_updated_at() {
    let root = tempfile::tempdir().unwrap();
    let store = FileSessionStore::open(root.path()).unwrap();
    let before = planlock::session::Timestamp::now();
    let saved = block_on(store.end_cycle(EndOfCycle::saving(update("m-1")), CycleGuard::none())).unwrap().unwrap();
    assert!(saved.updated_at >= before);
    assert_eq!(block_on(store.records().load()).unwrap(), Some(saved.clone()));
    let again = block_on(store.end_cycle(EndOfCycle::saving(update("m-2")), CycleGuard::none())).unwrap().unwrap();
    assert_eq!(block_on(store.records().load()).unwrap(), Some(again));
    let leftovers: Vec<_> =
        fs::read_dir(root.path().join("ops/runtime")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("session_state.json")], "no temporary files left");
}

/// Where a save can fail.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    CreateDir,
    CreateTemp,
    Write,
    ShortWrite,
    SyncFile,
    Rename,
    SyncDir,
}

/// The real file system, failing once at `op`.
struct Faulty {
    op: Op,
    log: Arc<Mutex<Vec<&'static str>>>,
}

fn injected() -> io::Error {
    io::Error::other("injected fault")
}

impl SaveFs for Faulty {
    fn create_dir(&self, dir: &Path) -> io::Result<()> {
        self.log.lock().unwrap().push("create_dir");
        if self.op == Op::CreateDir { Err(injected()) } else { RealFs.create_dir(dir) }
    }
    fn create_temp(&self, dir: &Path) -> io::Result<tempfile::NamedTempFile> {
        self.log.lock().unwrap().push("create_temp");
        if self.op == Op::CreateTemp { Err(injected()) } else { RealFs.create_temp(dir) }
    }
    fn write(&self, file: &mut fs::File, bytes: &[u8]) -> io::Result<()> {
        self.log.lock().unwrap().push("write");
        match self.op {
            Op::Write => Err(injected()),
            Op::ShortWrite => {
                RealFs.write(file, &bytes[..bytes.len() / 2])?;
                Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
            }
            _ => RealFs.write(file, bytes),
        }
    }
    fn sync_file(&self, file: &fs::File) -> io::Result<()> {
        self.log.lock().unwrap().push("sync_file");
        if self.op == Op::SyncFile { Err(injected()) } else { RealFs.sync_file(file) }
    }
    fn rename(&self, temp: tempfile::NamedTempFile, to: &Path) -> io::Result<()> {
        self.log.lock().unwrap().push("rename");
        if self.op == Op::Rename { Err(injected()) } else { RealFs.rename(temp, to) }
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.log.lock().unwrap().push("sync_dir");
        // Fail only the final directory fsync (the one after the rename).
        let after_rename = self.log.lock().unwrap().contains(&"rename");
        if self.op == Op::SyncDir && after_rename { Err(injected()) } else { RealFs.sync_dir(dir) }
    }
}

#[test]
fn a_save_does_every_durability_step_in_order() {
    let root = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    // The fault is in the very last step, so every step before it is seen to run.
    let store = FileSessionStore::with_fs(root.path(), Faulty { op: Op::SyncDir, log: log.clone() }).unwrap();
    // A fresh root: both directories are created and each is made durable in its parent.
    let err = block_on(store.end_cycle(EndOfCycle::saving(update("x")), CycleGuard::none())).unwrap_err();
    assert_eq!(err.code(), "session-io", "{err}");
    assert!(err.to_string().contains("fsync directory"), "the last step failed: {err}");
    assert_eq!(
        *log.lock().unwrap(),
        ["create_dir", "sync_dir", "create_dir", "sync_dir", "create_temp", "write", "sync_file", "rename", "sync_dir"]
    );
}

#[test]
fn every_save_failure_is_fail_fast_and_leaves_the_old_or_the_new_state() {
    for op in [Op::CreateDir, Op::CreateTemp, Op::Write, Op::ShortWrite, Op::SyncFile, Op::Rename, Op::SyncDir] {
        let root = tempfile::tempdir().unwrap();
        let old = if op == Op::CreateDir {
            None // the directories must not exist yet for this fault to be reached
        } else {
            block_on(
                FileSessionStore::open(root.path())
                    .unwrap()
                    .end_cycle(EndOfCycle::saving(update("old")), CycleGuard::none()),
            )
            .unwrap()
        };
        let log = Arc::new(Mutex::new(Vec::new()));
        let store = FileSessionStore::with_fs(root.path(), Faulty { op, log }).unwrap();
        let err = block_on(store.end_cycle(EndOfCycle::saving(update("new")), CycleGuard::none()))
            .expect_err(&format!("{op:?}"));
        assert_eq!(err.code(), "session-io", "{op:?}: {err}");
        assert!(err.to_string().contains(&root.path().display().to_string()), "{op:?} names the path: {err}");
        drop(store);
        let now = block_on(FileSessionStore::open(root.path()).unwrap().records().load()).unwrap();
        match op {
            // The rename happened: the new state is in place, even though the save reported failure.
            Op::SyncDir => assert_eq!(now.unwrap().memory_ref.as_deref(), Some("new"), "{op:?}"),
            _ => assert_eq!(now, old, "{op:?}: the old state is intact"),
        }
        if let Ok(dir) = fs::read_dir(root.path().join("ops/runtime")) {
            let temps = dir.filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".tmp")).count();
            assert_eq!(temps, 0, "{op:?}: no temporary file left behind");
        }
    }
}

#[test]
fn two_stores_on_one_root_in_one_process_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let first = FileSessionStore::open(root.path()).unwrap();
    let err = FileSessionStore::open(root.path()).unwrap_err();
    assert_eq!(err.code(), "session-in-use");
    assert!(err.to_string().contains("session in use"));
    assert_eq!(fs::read_dir(root.path()).unwrap().count(), 0, "the lock creates nothing");
    drop(first);
    FileSessionStore::open(root.path()).unwrap();
}

/// A store dropped is a session free to open again at once, in the same process, while another
/// thread starts child processes: a child holds a copy of the lock's descriptor between its fork
/// and its exec, and an open in that instant must not answer "session in use".
#[test]
fn a_session_reopens_while_another_thread_starts_processes() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
    let root = tempfile::tempdir().unwrap();
    let (stop, spawned) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let spawner = {
        let (stop, spawned) = (stop.clone(), spawned.clone());
        std::thread::spawn(move || {
            while !stop.load(Relaxed) {
                let _ = std::process::Command::new("true").status();
                spawned.fetch_add(1, Relaxed);
            }
        })
    };
    let (started, mut opens, mut refused) = (std::time::Instant::now(), 0, Vec::new());
    // Until 40 processes have started (or 30 s), opened and dropped again and again.
    while spawned.load(Relaxed) < 40 && started.elapsed() < std::time::Duration::from_secs(30) {
        opens += 1;
        match FileSessionStore::open(root.path()) {
            Ok(store) => drop(store),
            Err(e) => refused.push(format!("{opens}: {e}")),
        }
    }
    stop.store(true, Relaxed);
    spawner.join().unwrap();
    let spawned = spawned.load(Relaxed);
    assert!(spawned >= 40, "the processes started: {spawned}");
    assert!(refused.is_empty(), "{} of {opens} opens refused: {:?}", refused.len(), refused.first());
}

/// Opening a session has an error of its own (errors by operation, issue 57 §6): a root another
/// store holds, a root that is no directory, a store a runtime already claimed — each a case of
/// `OpenError`, with the codes a person reads.
#[test]
fn opening_a_session_fails_with_an_open_error_by_case() {
    use planlock::session::OpenError;
    let root = tempfile::tempdir().unwrap();
    let held = FileSessionStore::open(root.path()).unwrap();
    let in_use = FileSessionStore::open(root.path()).unwrap_err();
    assert!(matches!(in_use, OpenError::InUse { .. }), "{in_use}");
    let missing = FileSessionStore::open(root.path().join("missing")).unwrap_err();
    assert!(matches!(missing, OpenError::Root { .. }), "{missing}");
    held.claim().unwrap();
    let claimed = held.claim().unwrap_err();
    assert!(matches!(claimed, OpenError::Claimed { .. }), "{claimed}");
    let codes = [in_use.code(), missing.code(), claimed.code()];
    assert_eq!(codes, ["session-in-use", "session-root", "session-in-use"]);
}
