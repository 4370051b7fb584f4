//! Approvals and the inbox (issue 31), each beside its floor in the same run (interleaved, best
//! of rounds):
//!
//! 1. A decision's durable write — one line appended to the session's approval log under the
//!    log's lock, the pause's earlier lines checked first — against a bare durable append of the
//!    same bytes (open, write, fdatasync). On PostgreSQL: the decision's insert (one statement,
//!    the unique index decides) against a bare insert of the same text into a table without
//!    indexes. Target ≤ 1.3×.
//! 2. The inbox over 10,000 session roots, 100 of them paused: against the floor of opening each
//!    root's record path (the same directory walk and opens, nothing read or parsed). On
//!    PostgreSQL, 10,000 sessions, 100 paused: against a bare `SELECT` of the paused records.
//!    Reported as times: "well under a second".
//!
//! Writes under `target/bench-approvals` (a real disk, real fsyncs); the PostgreSQL server is
//! started here with its durable defaults (`fsync` on).
//!
//! Run: `cargo bench --bench approvals --features postgres`.

use planlock::block_on;
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use planlock::review::inbox::{Inbox, InboxFilter};
use planlock::session::{FileRecords, ReviewDecision, ReviewVerdict, SessionRecords, Timestamp};

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "common/paired.rs"]
mod paired;
#[path = "common/pause.rs"]
mod pause;
use pause::record;

/// A decision on a new pause each time (one decision per pause): `base` on cycle `n + 1`.
fn fresh_decision(base: &ReviewDecision, n: &mut u64) -> ReviewDecision {
    *n += 1;
    let mut decision = base.clone();
    decision.pause.cycle = *n;
    decision.pause.created_at = Timestamp::now();
    decision
}

fn bare_append(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
    file.sync_data().unwrap();
}

fn bench(c: &mut Criterion) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-approvals");
    let _ = std::fs::remove_dir_all(&base);
    let root = base.join("session");
    std::fs::create_dir_all(root.join("ops/runtime")).unwrap();
    let records = FileRecords::new(&root);
    let template = ReviewDecision::new(&record(1), ReviewVerdict::Approve, "ada", "no personal data in it");
    let mut n = 0;
    let line = {
        let mut line = serde_json::to_vec(&planlock::session::ApprovalEvent::Decided {
            decision: fresh_decision(&template, &mut n),
        })
        .unwrap();
        line.push(b'\n');
        line
    };
    let floor = base.join("floor.jsonl");

    let mut g = c.benchmark_group("decision_write_files");
    g.sample_size(30);
    g.bench_function("floor_bare_durable_append", |b| b.iter(|| bare_append(&floor, black_box(&line))));
    g.bench_function("record_decision", |b| {
        b.iter(|| block_on(records.record_decision(black_box(&fresh_decision(&template, &mut n)), 1)).unwrap())
    });
    g.finish();
    paired::report(
        "decision_write_files",
        &mut [
            ("floor_bare_durable_append", &mut || bare_append(&floor, black_box(&line))),
            ("record_decision", &mut || {
                black_box(block_on(records.record_decision(&fresh_decision(&template, &mut n), 1)).unwrap());
            }),
        ],
    );

    // The inbox over 10,000 roots, 100 paused (every 100th).
    let dir = base.join("roots");
    let text = serde_json::to_vec_pretty(&record(1)).unwrap();
    for i in 0..10_000 {
        let root = dir.join(format!("session-{i:05}"));
        std::fs::create_dir_all(&root).unwrap();
        if i % 100 == 0 {
            std::fs::create_dir_all(root.join("ops/runtime")).unwrap();
            std::fs::write(root.join(planlock::session::INTERVENTION_FILE), &text).unwrap();
        }
    }
    let inbox = Inbox::new(planlock::backend::FilesBackend::new(dir.clone()));
    assert_eq!(block_on(inbox.list(&InboxFilter::default())).unwrap().pauses.len(), 100);
    let walk = |dir: &PathBuf| {
        let mut found = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path().join(planlock::session::INTERVENTION_FILE);
            found += usize::from(std::fs::File::open(path).is_ok());
        }
        found
    };
    let mut g = c.benchmark_group("inbox_10000_roots");
    g.sample_size(10);
    g.bench_function("floor_walk_and_open", |b| b.iter(|| walk(black_box(&dir))));
    g.bench_function("inbox_list", |b| b.iter(|| block_on(inbox.list(black_box(&InboxFilter::default()))).unwrap()));
    g.finish();
    paired::report(
        "inbox_10000_roots",
        &mut [
            ("floor_walk_and_open", &mut || {
                black_box(walk(&dir));
            }),
            ("inbox_list", &mut || drop(black_box(block_on(inbox.list(&InboxFilter::default())).unwrap()))),
        ],
    );

    postgres(c);
}

/// The same on PostgreSQL.
fn postgres(c: &mut Criterion) {
    use planlock::pg::PgDatabase;
    use planlock::session::postgres::{PgRecords, PgSessionStore};
    let Some(server) = common::pg::PgServer::start_with(true) else {
        assert!(std::env::var("CI").is_err(), "no PostgreSQL server: .ci/run installs it");
        println!("approvals: SKIPPED the PostgreSQL half (no server installed)");
        return;
    };
    let url = server.database("approvals");
    let db = PgDatabase::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client.batch_execute("CREATE TABLE bench_floor (session_key text, pause text, kind text, event text)").unwrap();
    // 10,000 sessions, every 100th paused.
    let text = serde_json::to_string(&record(1)).unwrap();
    for i in 0..10_000 {
        let key = format!("tenant/{i:05}");
        drop(PgSessionStore::open(&db, &key).unwrap());
        if i % 100 == 0 {
            client
                .execute("UPDATE planlock_sessions SET intervention = $2 WHERE session_key = $1", &[&key, &text])
                .unwrap();
        }
    }
    let records = PgRecords::new(&db, "tenant/00001").unwrap();
    let template = ReviewDecision::new(&record(1), ReviewVerdict::Approve, "ada", "no personal data in it");
    let mut n = 0;
    let event = serde_json::to_string(&planlock::session::ApprovalEvent::Decided {
        decision: fresh_decision(&template, &mut n),
    })
    .unwrap();
    let pause = "{\"pause\":1}".to_owned();
    let mut floor = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let insert = floor
        .prepare("INSERT INTO bench_floor (session_key, pause, kind, event) VALUES ($1, $2, 'decided', $3)")
        .unwrap();
    let key = "tenant/00001".to_owned();
    let mut g = c.benchmark_group("decision_write_postgres");
    g.sample_size(30);
    g.bench_function("floor_bare_insert", |b| b.iter(|| floor.execute(&insert, &[&key, &pause, &event]).unwrap()));
    g.bench_function("record_decision", |b| {
        b.iter(|| block_on(records.record_decision(&fresh_decision(&template, &mut n), 1)).unwrap())
    });
    g.finish();
    paired::report(
        "decision_write_postgres",
        &mut [
            ("floor_bare_insert", &mut || {
                black_box(floor.execute(&insert, &[&key, &pause, &event]).unwrap());
            }),
            ("record_decision", &mut || {
                black_box(block_on(records.record_decision(&fresh_decision(&template, &mut n), 1)).unwrap());
            }),
        ],
    );

    let inbox = Inbox::new(planlock::backend::PgBackend::new(db.clone()));
    assert_eq!(block_on(inbox.list(&InboxFilter::default())).unwrap().pauses.len(), 100);
    let select = floor
        .prepare("SELECT session_key, intervention FROM planlock_sessions WHERE intervention IS NOT NULL")
        .unwrap();
    let mut g = c.benchmark_group("inbox_10000_sessions_postgres");
    g.sample_size(20);
    g.bench_function("floor_bare_select", |b| b.iter(|| floor.query(&select, &[]).unwrap()));
    g.bench_function("inbox_list", |b| b.iter(|| block_on(inbox.list(&InboxFilter::default())).unwrap()));
    g.finish();
    paired::report(
        "inbox_10000_sessions_postgres",
        &mut [
            ("floor_bare_select", &mut || drop(floor.query(&select, &[]).unwrap())),
            ("inbox_list", &mut || drop(black_box(block_on(inbox.list(&InboxFilter::default())).unwrap()))),
        ],
    );
    drop(server);
}

criterion_group!(benches, bench);
criterion_main!(benches);
