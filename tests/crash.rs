//! Crash safety and concurrency of the file session store, with real processes:
//!
//! - a child saves in a loop and is killed with SIGKILL at random moments, hundreds of times;
//!   after each kill the file must be the last acknowledged state or the next one, never torn;
//! - the same for the record of a paused cycle (`intervention.json`), hundreds of kills more;
//! - a cycle killed after its memory write runs again in a new process under the same
//!   idempotency key, so the write happens once;
//! - two processes on one root: the second is refused ("session in use") until the first dies.
//!
//! This file is its own test harness: run with a `PLANLOCK_CHILD` variable it is the child.

use planlock::block_on;
use planlock::session::CycleGuard;
use planlock::store::Call;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};

mod common;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

use planlock::Digest;
use planlock::Failure;
use planlock::demo::Demo;
use planlock::runtime::Runtime;
use planlock::schema::*;
use planlock::session::{
    BlockPhase, EndOfCycle, FileSessionStore, InterventionRecord, SessionStore, SessionUpdate, Timestamp,
};
use planlock::steps::{PersistDecision, PersistMemory};
use planlock::store::sqlite::SqliteStore;
use planlock::store::{MemoryRepositoryPort, NewMemory};
use planlock::{Handler, HandlerError, StepContext};

const KILLS: usize = 300;
const INTERVENTION_KILLS: usize = 200;
const SHARED_WRITES: u64 = 100;

fn update(seq: u64, session_id: uuid::Uuid) -> SessionUpdate {
    SessionUpdate {
        session_id,
        memory_ref: Some(format!("seq-{seq}")),
        repo_scan_version: Some("x".repeat((seq % 50) as usize)),
        last_execution_plan_hash: Digest::of(&seq.to_be_bytes()),
        hash_parts: None,
        cycle: 1,
    }
}

fn child(mode: &str, root: &Path) {
    let store = FileSessionStore::open(root).unwrap_or_else(|e| {
        println!("error {}", e.code());
        std::process::exit(7)
    });
    let mut out = std::io::stdout().lock();
    match mode {
        "save-loop" => {
            let session_id = uuid::Uuid::new_v4();
            let start = match block_on(store.records().load()) {
                Ok(Some(s)) => seq_of(&s.memory_ref),
                _ => 0,
            };
            writeln!(out, "ready {start}").unwrap();
            out.flush().unwrap();
            for seq in start + 1.. {
                let _ =
                    block_on(store.end_cycle(EndOfCycle::saving(update(seq, session_id)), CycleGuard::none())).unwrap();
                writeln!(out, "{seq}").unwrap();
                out.flush().unwrap();
            }
        }
        "pause-loop" => {
            let start = match block_on(store.records().load_intervention()) {
                Ok(Some(r)) => r.cycle,
                _ => 0,
            };
            writeln!(out, "ready {start}").unwrap();
            out.flush().unwrap();
            for seq in start + 1.. {
                let _ = block_on(store.end_cycle(EndOfCycle::pausing(record(seq)), CycleGuard::none())).unwrap();
                writeln!(out, "{seq}").unwrap();
                out.flush().unwrap();
            }
        }
        "cycle-killed" | "cycle" => run_keyed_cycle(mode, store, root, &mut out),
        "sqlite-writer" => {
            // Writes into a database beside the root, shared with another writer process.
            let writer: u64 = std::env::var("PLANLOCK_WRITER").ok().and_then(|w| w.parse().ok()).unwrap_or(0);
            let db = SqliteStore::at(root.parent().unwrap().join("shared.sqlite3"));
            writeln!(out, "ready 0").unwrap();
            out.flush().unwrap();
            for n in 0..SHARED_WRITES {
                let key =
                    planlock::IdempotencyKey::derive(uuid::Uuid::nil(), &Digest::of(b"w"), writer * 1000 + n, "m");
                let memory = NewMemory { session_ref: "s", summary: "shared writes", keywords: &[] };
                planlock::block_on(db.put(&Call::new().keyed(key), memory)).unwrap();
                // The same key again: written once.
                planlock::block_on(db.put(&Call::new().keyed(key), memory)).unwrap();
            }
            writeln!(out, "done").unwrap();
        }
        "hold-lock" => {
            writeln!(out, "locked").unwrap();
            out.flush().unwrap();
            std::thread::sleep(Duration::from_secs(120));
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// An intervention record whose every field follows from `seq`, so a torn mix is seen.
fn record(seq: u64) -> InterventionRecord {
    InterventionRecord {
        session_id: uuid::Uuid::from_u128(u128::from(seq) | 0x4000_8000_0000_0000_0000),
        plan_hash: Digest::of(&seq.to_be_bytes()),
        cycle: seq,
        step_id: format!("step-{seq}"),
        step_type: planlock::StepType::PersistMemory,
        phase: BlockPhase::Pre,
        validator: planlock::ValidatorSignature {
            id: "gate".into(),
            version: "1".into(),
            config_hash: Digest::of(b"{}").to_string(),
        },
        reason: "r".repeat((seq % 300) as usize),
        completed: vec![],
        created_at: Timestamp::now(),
        shown: Some(serde_json::json!({ "seq": seq })),
        shown_digest: Some(Digest::of(&seq.to_le_bytes())),
        shown_truncated: false,
        expires_at: None,
        trace_parent: None,
    }
}

/// A `PersistMemory` handler as the contract asks of writes: every call is logged, but a key is
/// stored only once (in `writes.txt` beside the session root).
struct KeyedFile(std::path::PathBuf);

impl Handler<PersistMemory> for KeyedFile {
    async fn call(&self, cx: &StepContext<'_>, _: &PersistMemoryPayload) -> Result<PersistMemoryResult, HandlerError> {
        let key = cx.idempotency_key().to_string();
        let append = |name: &str, line: &str| {
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(self.0.join(name))?;
            writeln!(f, "{line}")?;
            f.sync_all()
        };
        append("calls.txt", &key).map_err(|e| HandlerError::with_source("log", e))?;
        let stored = std::fs::read_to_string(self.0.join("writes.txt")).unwrap_or_default();
        if !stored.lines().any(|l| l == key) {
            append("writes.txt", &key).map_err(|e| HandlerError::with_source("write", e))?;
        }
        Ok(PersistMemoryResult { id: format!("mem-{}", &key[..12]) })
    }
}

/// A `PersistDecision` handler that says the memory was written, then hangs (to be killed).
struct Hang;

impl Handler<PersistDecision> for Hang {
    async fn call(
        &self,
        _: &StepContext<'_>,
        _: &PersistDecisionPayload,
    ) -> Result<PersistDecisionResult, HandlerError> {
        println!("wrote");
        std::thread::sleep(Duration::from_secs(120));
        Err(HandlerError::new("not killed"))
    }
}

/// Runs one cycle of the demo plan on `root` (policy under `root/policy`), the memory write
/// keyed; `cycle-killed` hangs after the write.
fn run_keyed_cycle(mode: &str, store: FileSessionStore, root: &Path, out: &mut impl Write) {
    let plan = planlock::ValidPlan::from_str(include_str!("../examples/plans/demo_plan.json")).unwrap();
    let data = root.parent().unwrap().to_path_buf();
    let handlers = Demo::new().repo_base(&data).handlers().on::<PersistMemory>(KeyedFile(data.clone()));
    let outcome = if mode == "cycle-killed" {
        let handlers = handlers.on::<PersistDecision>(Hang);
        let mut runtime =
            Runtime::builder(data.join("policy"), plan, store).handlers(handlers).boot_blocking().unwrap();
        runtime.run_cycle_blocking().map(|_| runtime.cycle())
    } else {
        let mut runtime =
            Runtime::builder(data.join("policy"), plan, store).handlers(handlers).boot_blocking().unwrap();
        runtime.run_cycle_blocking().map(|_| runtime.cycle())
    };
    writeln!(out, "done {}", outcome.map_or_else(|e| e.to_string(), |c| c.to_string())).unwrap();
}

fn seq_of(memory_ref: &Option<String>) -> u64 {
    memory_ref.as_deref().and_then(|m| m.strip_prefix("seq-")).and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn spawn(mode: &str, root: &Path) -> (Child, mpsc::Receiver<String>) {
    common::spawn_self(mode, root, &[])
}

/// A small xorshift generator: the kill moments need no quality, only spread.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn killed_saves_leave_the_last_acknowledged_state_or_the_next() {
    let root = tempfile::tempdir().unwrap();
    let seed = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = Rng(seed);
    let (mut at_ack, mut at_next, mut max_seq) = (0, 0, 0);
    let started = Instant::now();
    for round in 0..KILLS {
        let (mut child, lines) = spawn("save-loop", root.path());
        let ready = lines.recv_timeout(Duration::from_secs(10)).expect("the child started");
        let start: u64 = ready.strip_prefix("ready ").and_then(|n| n.parse().ok()).expect("ready line");
        let last_ack = Arc::new(AtomicU64::new(start));
        // Let it save for a random moment (0–4 ms, most saves take well under one), then kill.
        std::thread::sleep(Duration::from_micros(rng.below(4000)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for line in lines.iter() {
            if let Ok(n) = line.parse::<u64>() {
                last_ack.store(n, Ordering::SeqCst);
            }
        }
        let acked = last_ack.load(Ordering::SeqCst);
        let state = block_on(FileSessionStore::open(root.path()).unwrap().records().load())
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): the file is torn after a kill: {e}"));
        let on_disk = state.as_ref().map_or(0, |s| seq_of(&s.memory_ref));
        assert!(
            on_disk == acked || on_disk == acked + 1,
            "round {round} (seed {seed}): on disk seq {on_disk}, last acknowledged {acked}"
        );
        if let Some(s) = &state {
            assert_eq!(s.last_execution_plan_hash, Digest::of(&on_disk.to_be_bytes()), "fields from one save only");
        }
        if on_disk == acked {
            at_ack += 1
        } else {
            at_next += 1
        }
        max_seq = max_seq.max(on_disk);
    }
    println!(
        "crash: {KILLS} SIGKILLs in {:.1?}: {at_ack} left the acknowledged state, {at_next} the next one, none torn; {max_seq} saves in all (seed {seed})",
        started.elapsed()
    );
}

fn killed_intervention_saves_leave_the_last_acknowledged_record_or_the_next() {
    let root = tempfile::tempdir().unwrap();
    let seed = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    let mut rng = Rng(seed);
    let started = Instant::now();
    let (mut at_ack, mut at_next) = (0, 0);
    for round in 0..INTERVENTION_KILLS {
        let (mut child, lines) = spawn("pause-loop", root.path());
        let ready = lines.recv_timeout(Duration::from_secs(10)).expect("the child started");
        let mut acked: u64 = ready.strip_prefix("ready ").and_then(|n| n.parse().ok()).expect("ready line");
        std::thread::sleep(Duration::from_micros(rng.below(4000)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        for line in lines.iter() {
            if let Ok(n) = line.parse::<u64>() {
                acked = n;
            }
        }
        let saved = block_on(FileSessionStore::open(root.path()).unwrap().records().load_intervention())
            .unwrap_or_else(|e| panic!("round {round} (seed {seed}): the record is torn after a kill: {e}"));
        let on_disk = saved.as_ref().map_or(0, |r| r.cycle);
        assert!(
            on_disk == acked || on_disk == acked + 1,
            "round {round} (seed {seed}): on disk record {on_disk}, last acknowledged {acked}"
        );
        if let Some(r) = &saved {
            let expected = record(on_disk);
            assert_eq!(
                (&r.step_id, &r.plan_hash, &r.reason),
                (&expected.step_id, &expected.plan_hash, &expected.reason)
            );
        }
        if on_disk == acked { at_ack += 1 } else { at_next += 1 }
    }
    println!(
        "crash: {INTERVENTION_KILLS} SIGKILLs during intervention saves in {:.1?}: {at_ack} left the acknowledged record, {at_next} the next one, none torn (seed {seed})",
        started.elapsed()
    );
}

fn a_cycle_killed_after_its_write_writes_once_when_run_again() {
    let data = tempfile::tempdir().unwrap();
    let root = data.path().join("session");
    std::fs::create_dir(&root).unwrap();
    let dir = data.path().join("policy/profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["modes.yaml", "triggers.yaml", "bundles.yaml"] {
        std::fs::write(dir.join(f), "{}\n").unwrap();
    }
    let (mut child, lines) = spawn("cycle-killed", &root);
    assert_eq!(lines.recv_timeout(Duration::from_secs(30)).expect("the write happened"), "wrote");
    child.kill().unwrap(); // SIGKILL after the memory write, before the cycle completed
    child.wait().unwrap();
    assert!(!root.join(planlock::session::SESSION_FILE).exists(), "the killed cycle saved no session");
    let (mut again, lines) = spawn("cycle", &root);
    assert_eq!(lines.recv_timeout(Duration::from_secs(30)).expect("the cycle ran"), "done 1");
    again.wait().unwrap();
    let calls = std::fs::read_to_string(data.path().join("calls.txt")).unwrap();
    let writes = std::fs::read_to_string(data.path().join("writes.txt")).unwrap();
    let calls: Vec<_> = calls.lines().collect();
    assert_eq!(calls.len(), 2, "cycle 1 ran its write twice");
    assert_eq!(calls[0], calls[1], "under the same key, in two processes");
    assert_eq!(writes.lines().count(), 1, "so it was written once");
    println!("crash: a cycle killed after its write ran again in a new process under the same key; written once");
}

fn two_processes_write_one_sqlite_database_at_once() {
    let data = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let writers: Vec<_> = (1..=2)
        .map(|w| {
            let root = data.path().join(format!("root-{w}"));
            std::fs::create_dir(&root).unwrap();
            let mut cmd = Command::new(std::env::current_exe().unwrap());
            cmd.env("PLANLOCK_CHILD", "sqlite-writer")
                .env("PLANLOCK_ROOT", &root)
                .env("PLANLOCK_WRITER", w.to_string());
            cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap()
        })
        .collect();
    for w in writers {
        let out = w.wait_with_output().unwrap();
        assert!(out.status.success(), "a writer failed: {}", String::from_utf8_lossy(&out.stdout));
    }
    let db = SqliteStore::at(data.path().join("shared.sqlite3"));
    let all = planlock::block_on(db.search(&Call::new(), "", 10_000)).unwrap();
    assert_eq!(all.len() as u64, 2 * SHARED_WRITES, "every write of both processes, each once");
    println!(
        "sqlite: two processes wrote {} memories into one database at once in {:.1?}, each once, none lost",
        all.len(),
        started.elapsed()
    );
}

fn a_second_process_on_the_same_root_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let (mut holder, lines) = spawn("hold-lock", root.path());
    assert_eq!(lines.recv_timeout(Duration::from_secs(10)).unwrap(), "locked");
    let err = FileSessionStore::open(root.path()).unwrap_err();
    assert_eq!(err.code(), "session-in-use");
    // Another process is refused the same way.
    let (mut second, lines2) = spawn("hold-lock", root.path());
    assert_eq!(lines2.recv_timeout(Duration::from_secs(10)).unwrap(), "error session-in-use");
    assert_eq!(second.wait().unwrap().code(), Some(7));
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "the lock created nothing");
    holder.kill().unwrap();
    holder.wait().unwrap();
    // The kernel released the dead holder's lock.
    FileSessionStore::open(root.path()).unwrap();
    println!("two processes: the second was refused while the first held the root; free after it died");
}

fn main() {
    if let Ok(mode) = std::env::var("PLANLOCK_CHILD") {
        let root = std::env::var("PLANLOCK_ROOT").expect("PLANLOCK_ROOT");
        child(&mode, Path::new(&root));
        return;
    }
    let tests: [(&str, fn()); 5] = [
        ("two_processes_write_one_sqlite_database_at_once", two_processes_write_one_sqlite_database_at_once),
        (
            "killed_saves_leave_the_last_acknowledged_state_or_the_next",
            killed_saves_leave_the_last_acknowledged_state_or_the_next,
        ),
        (
            "killed_intervention_saves_leave_the_last_acknowledged_record_or_the_next",
            killed_intervention_saves_leave_the_last_acknowledged_record_or_the_next,
        ),
        (
            "a_cycle_killed_after_its_write_writes_once_when_run_again",
            a_cycle_killed_after_its_write_writes_once_when_run_again,
        ),
        ("a_second_process_on_the_same_root_is_refused", a_second_process_on_the_same_root_is_refused),
    ];
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let mut passed = 0;
    for (name, test) in tests {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        println!("test {name} ...");
        test();
        passed += 1;
    }
    println!("crash: {passed} passed, 0 failed");
}
