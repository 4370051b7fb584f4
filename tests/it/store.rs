//! Storage behind ports: both implementations pass the conformance suite; the SQLite store is
//! created by its first write, refuses a file that is not its database, fails a locked write
//! with a clear error, and keeps a session's memories across cycles without duplicates.
#![cfg(feature = "sqlite")]

use planlock::store::Call;
use std::time::Duration;

use planlock::demo::Demo;
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::FileSessionStore;
use planlock::store::memory::InMemoryStore;
use planlock::store::sqlite::{DATABASE_FILE, SqliteStore};
use planlock::store::{MemoryRepositoryPort, NewMemory, StoreError, StoreHandlers, conformance};
use planlock::{Failure, FailureKind, StepType};

use crate::common;
use common::{plan_with, policy};

#[test]
fn the_in_memory_store_conforms() {
    conformance::run(InMemoryStore::new);
}

#[test]
fn the_sqlite_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    conformance::run(|| {
        let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        SqliteStore::open(dir.path().join(format!("root-{i}")))
    });
}

#[test]
fn the_database_is_created_by_the_first_write_never_by_a_read() {
    let root = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(root.path());
    assert!(planlock::block_on(store.search(&Call::new(), "anything", 5)).unwrap().is_empty());
    assert!(!root.path().join(DATABASE_FILE).exists(), "a read created nothing");
    let key = conformance::key(1);
    let memory = NewMemory { session_ref: "s", summary: "first", keywords: &[] };
    planlock::block_on(store.put(&Call::new().keyed(key), memory)).unwrap();
    assert!(root.path().join(DATABASE_FILE).exists());
    // Another store on the same file sees it.
    let again = SqliteStore::open(root.path());
    assert_eq!(planlock::block_on(again.search(&Call::new(), "first", 5)).unwrap().len(), 1);
}

/// A file the store cannot use: not a database at all (SQLite's error), or refused by the store.
#[test]
fn a_store_error_has_a_class_like_every_other_failure() {
    // What a write or read found may go differently next cycle; a store that failed or refused will not.
    let classes = [
        (StoreError::Conflict("key".into()), "store-conflict", FailureKind::CycleFail),
        (StoreError::NotFound("id".into()), "store-not-found", FailureKind::CycleFail),
        (StoreError::Backend("disk".into()), "store-backend", FailureKind::FailFast),
        (StoreError::Refused("file".into()), "store-refused", FailureKind::FailFast),
    ];
    for (err, code, kind) in classes {
        assert_eq!((err.code(), err.kind()), (code, kind), "{err}");
    }
}

fn backend_error<T: std::fmt::Debug>(r: Result<T, StoreError>) -> String {
    match r {
        Err(e @ (StoreError::Backend(_) | StoreError::Refused(_))) => e.to_string(),
        other => panic!("expected a backend error or a refusal, got {other:?}"),
    }
}

#[test]
fn a_file_that_is_not_the_database_is_refused_naming_it() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join(DATABASE_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = b"this is not a database, just text that is long enough to look like a header";
    std::fs::write(&path, text).unwrap();
    let store = SqliteStore::open(root.path());
    let message = backend_error(planlock::block_on(store.search(&Call::new(), "x", 5)));
    assert!(message.contains("planlock.sqlite3"), "{message}");
    assert_eq!(std::fs::read(&path).unwrap(), text, "the file was not changed");

    // A SQLite database of another schema version is refused too.
    let other = tempfile::tempdir().unwrap();
    let path = other.path().join(DATABASE_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let message = backend_error(planlock::block_on(SqliteStore::open(other.path()).search(&Call::new(), "x", 5)));
    assert!(message.contains("schema version is not one this library knows (found 99"), "{message}");
}

#[test]
fn a_write_locked_out_past_the_busy_timeout_fails_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(root.path()).busy_timeout(Duration::from_millis(200));
    let key = conformance::key(1);
    planlock::block_on(
        store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "first", keywords: &[] }),
    )
    .unwrap();
    // Another connection (as another process would) holds the write lock.
    let other = rusqlite::Connection::open(root.path().join(DATABASE_FILE)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let key = conformance::key(2);
    let blocked = planlock::block_on(
        store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "second", keywords: &[] }),
    );
    let message = backend_error(blocked);
    assert!(message.contains("locked") || message.contains("busy"), "{message}");
    other.execute_batch("ROLLBACK").unwrap();
    assert_eq!(planlock::block_on(store.search(&Call::new(), "", 10)).unwrap().len(), 1, "nothing half-written");
}

fn runtime(
    pol: &std::path::Path,
    root: &std::path::Path,
    demo: &Demo,
) -> Runtime<FileSessionStore, planlock::handler::Boxed> {
    let storage = StoreHandlers::new(SqliteStore::open(root));
    crate::common::runtime_on(pol, root, plan_with(|_| {}))
        .handlers(demo.with_store(&storage).boxed())
        .boot_blocking()
        .unwrap()
}

#[test]
fn cycles_accumulate_memories_and_retrieve_them_and_a_rerun_writes_once() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    assert!(!root.path().join(DATABASE_FILE).exists());
    // Cycle 1 fails after its memory write (the decision write fails: FailFast).
    let mut first = runtime(pol.path(), root.path(), &Demo::new().failing([StepType::PersistDecision]));
    assert_eq!(first.run_cycle_blocking().unwrap_err().kind(), FailureKind::FailFast);
    drop(first);
    let mut rt = runtime(pol.path(), root.path(), &Demo::new());
    for _ in 0..3 {
        let RunOutcome::Completed(_) = rt.run_cycle_blocking().unwrap() else { panic!("paused") };
    }
    let store = SqliteStore::open(root.path());
    let all = planlock::block_on(store.search(&Call::new(), "", 100)).unwrap();
    assert_eq!(all.len(), 3, "three cycles, three memories; the failed run of cycle 1 wrote once: {all:?}");
    // The fourth cycle's RetrieveMemory finds them (the demo plan asks about key rotation).
    let RunOutcome::Completed(done) = rt.run_cycle_blocking().unwrap() else { panic!("paused") };
    let retrieved = done.ledger.get::<planlock::steps::RetrieveMemory>().unwrap();
    assert!(!retrieved.items.is_empty(), "the memories of earlier cycles are retrieved");
    let decisions = done.ledger.get::<planlock::steps::RetrieveDecisionContext>().unwrap();
    assert!(!decisions.decisions.is_empty(), "so are the decisions: {decisions:?}");
}

#[test]
fn a_store_failure_is_the_steps_failure_with_its_kind() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let path = root.path().join(DATABASE_FILE);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let mut rt = runtime(pol.path(), root.path(), &Demo::new());
    let err = rt.run_cycle_blocking().unwrap_err();
    // The first storage step is RetrieveMemory, a read: CycleFail, naming the file.
    assert_eq!(err.kind(), FailureKind::CycleFail, "{err}");
    assert!(err.to_string().contains("`memory`") && err.to_string().contains("planlock.sqlite3"), "{err}");
}

#[test]
fn a_full_disk_fails_the_write_and_leaves_nothing_half_written() {
    let root = tempfile::tempdir().unwrap();
    // The database may not grow past 96 KiB: as a full disk would, SQLite refuses the write.
    let store = SqliteStore::open(root.path()).max_size(96 * 1024);
    let summary = "a long memory ".repeat(300);
    let mut stored = 0;
    let failure = loop {
        let key = conformance::key(stored + 1);
        let memory = NewMemory { session_ref: "s", summary: &summary, keywords: &[] };
        match planlock::block_on(store.put(&Call::new().keyed(key), memory)) {
            Ok(_) => stored += 1,
            Err(e) => break e,
        }
        assert!(stored < 1000, "the size limit never took effect");
    };
    assert_eq!(failure.code(), "store-backend");
    assert!(failure.to_string().contains("full"), "{failure}");
    // Every acknowledged write is there, searchable, and the failed one left no trace.
    let all = planlock::block_on(store.search(&Call::new(), "", 10_000)).unwrap();
    assert_eq!(all.len() as u64, stored);
    assert_eq!(planlock::block_on(store.search(&Call::new(), "memory", 10_000)).unwrap().len() as u64, stored);
    assert!(stored > 0);
}

/// A store holding `n` memories that all match `rotate key`, loaded in bulk.
fn bulk(n: u64) -> (tempfile::TempDir, SqliteStore) {
    let root = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(root.path());
    let key = conformance::key(0);
    planlock::block_on(
        store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "seed", keywords: &[] }),
    )
    .unwrap();
    let mut conn = rusqlite::Connection::open(store.path()).unwrap();
    let tx = conn.transaction().unwrap();
    for i in 1..n {
        tx.execute(
            "INSERT INTO memories (id, idem_key, session_ref, summary, keywords, created_at) VALUES (?1, ?2, 's', ?3, 'key', 't')",
            rusqlite::params![format!("m-{i}"), format!("k-{i}"), format!("rotate the key {i}")],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    (root, store)
}

#[test]
fn a_search_past_its_deadline_is_interrupted_on_its_thread() {
    let (_root, store) = bulk(5_000);
    let err =
        planlock::block_on(store.search(&Call::new().until(std::time::Instant::now()), "rotate key", 10)).unwrap_err();
    assert!(err.to_string().contains("stopped at the step's deadline"), "{err}");
    // The connection is usable again, with no handler left behind.
    assert_eq!(planlock::block_on(store.search(&Call::new(), "rotate key", 10)).unwrap().len(), 10);
    let later = std::time::Instant::now() + Duration::from_secs(60);
    assert_eq!(planlock::block_on(store.search(&Call::new().until(later), "rotate key", 10)).unwrap().len(), 10);
}

#[test]
fn a_query_of_20000_words_searches_its_first_distinct_ones() {
    let (_root, store) = bulk(200);
    let text: Vec<String> = (0..20_000).map(|n| format!("w{}", n % 1000)).collect();
    let joined = text.join(" ");
    let words = planlock::store::query_words(&joined);
    assert_eq!(words.len(), planlock::store::MAX_QUERY_WORDS);
    assert_eq!(words[..3], ["w0", "w1", "w2"]);
    // Words past the cap are not searched: `rotate` after 1,000 distinct others finds nothing…
    let found = planlock::block_on(store.search(&Call::new(), &format!("{} rotate", text.join(" ")), 5)).unwrap();
    assert!(found.is_empty(), "{found:?}");
    // …and the same word first does.
    let found = planlock::block_on(store.search(&Call::new(), &format!("rotate {}", text.join(" ")), 5)).unwrap();
    assert_eq!(found.len(), 5);
}
