//! The SQLite store opens only its own file, and reads never write (CONTRACT §11): a link at the
//! database or its folder, another program's database and an empty file are each met by `run`,
//! `memory search`, `decisions` and `status`; the target's SHA-256 is compared before and after,
//! and no file appears anywhere.
#![cfg(unix)]

use crate::common;
use planlock::store::Call;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use planlock::Failure as _;
use sha2::{Digest as _, Sha256};

use common::plan_with;

/// Every file under `dir` (links not followed) with the SHA-256 of its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut all = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return all };
    for entry in entries {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            all.extend(snapshot(&path));
        } else if meta.is_file() {
            let digest = Sha256::digest(std::fs::read(&path).unwrap());
            all.insert(path, digest.iter().map(|b| format!("{b:02x}")).collect());
        } else {
            all.insert(path, "(link or special)".into());
        }
    }
    all
}

use crate::common::cli::CliSession as Case;

fn case() -> Case {
    Case::new(&plan_with(|_| {}).to_json())
}

impl Case {
    fn planlock(&self, args: &[&str]) -> Output {
        self.cli(args)
    }

    fn store_dir(&self) -> PathBuf {
        self.root().join("ops/store")
    }
}

const READS: [&[&str]; 3] = [&["memory", "search", "rotation"], &["decisions"], &["status"]];

/// Another program's SQLite database, with a table and `user_version` 1 as many programs set.
fn foreign_database(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO accounts (name) VALUES ('ada'); PRAGMA user_version = 1;").unwrap();
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_link_at_the_database_path_is_refused_and_its_target_untouched() {
    let c = case();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("app.db");
    foreign_database(&target);
    std::fs::create_dir_all(c.store_dir()).unwrap();
    std::os::unix::fs::symlink(&target, c.store_dir().join("planlock.sqlite3")).unwrap();
    let before = snapshot(elsewhere.path());
    for args in [&["run"][..], READS[0], READS[1]] {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("planlock.sqlite3 is a symbolic link"), "{args:?}: {}", text(&out));
        assert_eq!(snapshot(elsewhere.path()), before, "{args:?}: the target or its folder changed");
    }
}

#[test]
fn a_link_at_the_store_folder_is_refused_and_nothing_is_created_outside() {
    let c = case();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(c.root().join("ops")).unwrap();
    std::os::unix::fs::symlink(outside.path(), c.store_dir()).unwrap();
    for args in [&["run"][..], READS[0], READS[1]] {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("its folder") && text(&out).contains("is a symbolic link"), "{}", text(&out));
        assert!(snapshot(outside.path()).is_empty(), "{args:?}: a file was created outside the root");
    }
}

#[test]
fn another_programs_database_is_refused_untouched() {
    let c = case();
    std::fs::create_dir_all(c.store_dir()).unwrap();
    foreign_database(&c.store_dir().join("planlock.sqlite3"));
    let before = snapshot(c.root());
    for args in [&["run"][..], READS[0], READS[1]] {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", text(&out));
        assert!(text(&out).contains("is not planlock's database"), "{args:?}: {}", text(&out));
        assert_eq!(snapshot(c.root()), before, "{args:?}");
    }
}

#[test]
fn reads_of_an_empty_file_or_no_file_find_nothing_and_write_nothing() {
    let c = case();
    for args in READS {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(!c.root().join("ops").exists(), "{args:?} created the store");
    }
    std::fs::create_dir_all(c.store_dir()).unwrap();
    std::fs::write(c.store_dir().join("planlock.sqlite3"), b"").unwrap();
    let before = snapshot(c.root());
    for (args, says) in READS.iter().zip(["no memory matches", "no active decision in scope", ""]) {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        assert_eq!(snapshot(c.root()), before, "{args:?} wrote into the root");
    }
    // A write still sets the empty file up as planlock's database.
    assert_eq!(c.planlock(&["run"]).status.code(), Some(0));
}

#[test]
fn reading_a_real_store_changes_no_byte_under_the_root() {
    let c = case();
    assert_eq!(c.planlock(&["run"]).status.code(), Some(0));
    let before = snapshot(c.root());
    assert!(before.keys().any(|p| p.ends_with("planlock.sqlite3")));
    for args in READS {
        let out = c.planlock(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        assert_eq!(snapshot(c.root()), before, "{args:?} wrote under the root (a WAL or SHM file?)");
    }
    let out = c.planlock(READS[0]);
    assert!(text(&out).contains("key rotation"), "the read found the memory: {}", text(&out));
}

#[test]
fn a_read_only_store_refuses_every_write() {
    use planlock::store::MemoryRepositoryPort;
    use planlock::store::sqlite::SqliteStore;
    let root = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(root.path()).read_only();
    let key = planlock::IdempotencyKey::derive(uuid::Uuid::nil(), &planlock::Digest::of(b"p"), 1, "remember");
    let memory = planlock::store::NewMemory { session_ref: "s", summary: "x", keywords: &[] };
    let err = planlock::block_on(store.put(&Call::new().keyed(key), memory)).unwrap_err();
    assert_eq!(err.code(), "store-refused", "{err}");
    assert!(!root.path().join("ops").exists());
}

/// Two processes (here: connections on threads, as SQLite treats them alike) opening one new
/// database at once: one creates the schema, the other must see it whole, never half (tables
/// without the `application_id` that marks them planlock's), and neither may refuse the file.
#[test]
fn connections_opening_one_new_database_at_once_all_accept_it() {
    use planlock::store::MemoryRepositoryPort;
    use planlock::store::sqlite::SqliteStore;
    let dir = tempfile::tempdir().unwrap();
    for round in 0..60 {
        let file = dir.path().join(format!("new-{round}.sqlite3"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(4));
        let openers: Vec<_> = (0..4)
            .map(|n| {
                let (file, start) = (file.clone(), start.clone());
                std::thread::spawn(move || {
                    let store = SqliteStore::at(file);
                    start.wait();
                    let key = planlock::IdempotencyKey::derive(uuid::Uuid::nil(), &planlock::Digest::of(b"p"), n, "m");
                    let memory = planlock::store::NewMemory { session_ref: "s", summary: "x", keywords: &[] };
                    planlock::block_on(store.put(&Call::new().keyed(key), memory)).map(drop)
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().unwrap();
            assert!(opened.is_ok(), "round {round}: a new database was refused: {}", opened.unwrap_err());
        }
    }
}
