//! Notifications (issue 41 §4), each beside its floor in the same run (interleaved, best of
//! rounds):
//!
//! 1. A pause as the runtime writes it, with the outbox of its `pause.created`, against the
//!    record alone. On both stores the record is the event's durable cause: the event is made
//!    from it when it is logged (by the first sender that sees the pause, or first by the pause's
//!    outcome), so the pause's write is its record alone. PostgreSQL: the store's statement is
//!    the bare update of the record; beside it, schema 6's way (a copy of the event kept on the
//!    row by the same statement) and the store's whole path. Files: beside the record, the
//!    record with its notice written at once (the cost that moved). Target ≤ 1.2×.
//! 2. A sender's throughput: 300 notifications delivered to a local receiver (hyper, answering
//!    204 at once), in events per second.
//! 3. The delay from a notice's write to its delivery by a running sender (polling every second,
//!    the default), p50 and p99 over 40 notices written at random moments.
//!
//! Run: `cargo bench --bench notify`. `--quick`: fewer rounds (a smoke run).

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use planlock::block_on;
use planlock::review::access::Access;
use planlock::review::notify::{Notifier, NotifyOptions};
use planlock::session::{
    ApprovalEvent, CycleGuard, EndOfCycle, FileRecords, FileSessionStore, InterventionRecord, SessionRecords,
    SessionStore,
};

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "common/paired.rs"]
mod paired;
#[path = "common/pause.rs"]
mod pause;
use pause::record;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A receiver on 127.0.0.1 answering 204 at once, keeping when each `webhook-id` first arrived.
fn receiver() -> (String, Arc<Mutex<HashMap<String, Instant>>>) {
    use hyper::{Response, body::Incoming};
    let arrived: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let kept = arrived.clone();
    let runtime = planlock::io_handle().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    runtime.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let kept = kept.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let id = req.headers().get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                    kept.lock().unwrap().entry(id).or_insert_with(Instant::now);
                    async {
                        Ok::<_, std::convert::Infallible>(Response::builder().status(204).body(String::new()).unwrap())
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
            });
        }
    });
    (url, arrived)
}

fn access(url: &str) -> Access {
    let text = format!(
        "users:\n  ada: {{ tokenSha256: \"{}\" }}\nwebhooks:\n  - {{ url: \"{url}\", secretEnv: BENCH_HOOK_SECRET, events: [pause.created, pause.decided, pause.expired, pause.resolved] }}\n",
        "0".repeat(64)
    );
    Access::parse("bench.yaml", &text).unwrap()
}

fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
}

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-notify");
    let _ = std::fs::remove_dir_all(&base);

    // 1. Files: the pause's path writes the record alone (a notifier logs its notice later, off
    // the cycle's path): the record's write beside the record with the notice written at once
    // (what the pause would cost if it logged the notice itself), for the record.
    let root = base.join("sessions/pausing");
    std::fs::create_dir_all(&root).unwrap();
    let store = FileSessionStore::open(&root).unwrap();
    let records = FileRecords::new(&root);
    let save = |store: &FileSessionStore, r: &InterventionRecord| {
        drop(black_box(block_on(store.end_cycle(EndOfCycle::pausing(r.clone()), CycleGuard::none())).unwrap()));
    };
    let (mut n, mut m) = (0u64, 1_000_000u64);
    paired::report_always(
        "pause_files",
        &mut [
            ("pause_record_as_the_runtime_writes_it", &mut || {
                n += 1;
                save(&store, &record(n));
            }),
            ("pause_record_and_its_notice_at_once", &mut || {
                m += 1;
                let r = record(m);
                save(&store, &r);
                black_box(block_on(records.log_notice(&ApprovalEvent::paused(&r))).unwrap());
            }),
        ],
        if quick() { 4 } else { 40 },
    );
    drop(store);

    // 1b. PostgreSQL: the record and its notice in one transaction, one round trip, against the
    // floor of the record's bare compare-and-set update (autocommit).
    match common::pg::PgServer::start_with(true) {
        Some(server) => {
            use planlock::session::postgres::PgSessionStore;
            let url = server.database("notify");
            let db = planlock::pg::PgDatabase::connect(&url).unwrap();
            let store = PgSessionStore::open(&db, "pausing").unwrap();
            let mut floor = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            // The record's own write as the store sends it (the lease-checked compare-and-set, its
            // version aside), without the notice.
            let update = floor
                .prepare(
                    "WITH written AS (
                       UPDATE planlock_sessions
                       SET intervention = $2, row_version = row_version + 1,
                           lease_until = now() + make_interval(secs => 30::float8), updated_at = now()
                       WHERE session_key = $1 AND row_version = row_version AND lease_owner IS NOT NULL
                       RETURNING row_version)
                     SELECT COALESCE((SELECT row_version FROM written), planlock_fenced($1))",
                )
                .unwrap();
            // Schema 6's way, for comparison: the same statement with a copy of the pause's event
            // kept beside the record (a column of the bench's own: schema 7 dropped it).
            let mut floor_copy = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            floor_copy.batch_execute("ALTER TABLE planlock_sessions ADD COLUMN bench_event_copy text").unwrap();
            let with_copy = floor_copy
                .prepare(
                    "WITH written AS (
                       UPDATE planlock_sessions
                       SET intervention = $2, bench_event_copy = $3, row_version = row_version + 1,
                           lease_until = now() + make_interval(secs => 30::float8), updated_at = now()
                       WHERE session_key = $1 AND row_version = row_version AND lease_owner IS NOT NULL
                       RETURNING row_version)
                     SELECT COALESCE((SELECT row_version FROM written), planlock_fenced($1))",
                )
                .unwrap();
            let mut k = 0u64;
            let text = serde_json::to_string(&record(1)).unwrap();
            let key = "floor".to_owned();
            let _leased = PgSessionStore::open(&db, &key).unwrap();
            let mut n = 0u64;
            // The pause's own write: the record alone (its event is made from it when logged),
            // the store's whole path beside it, and schema 6's copy for comparison.
            paired::report_always(
                "pause_postgres",
                &mut [
                    ("floor_the_record_alone", &mut || {
                        black_box(floor.query(&update, &[&key, &text]).unwrap());
                    }),
                    ("schema_6_the_record_with_a_copy_of_its_event", &mut || {
                        k += 1;
                        let notice = ApprovalEvent::paused(&record(2_000_000 + k));
                        let event = serde_json::to_string(&notice).unwrap();
                        black_box(floor_copy.query(&with_copy, &[&key, &text, &event]).unwrap());
                    }),
                    ("pause_record_as_the_store_writes_it", &mut || {
                        n += 1;
                        let r = record(n);
                        drop(black_box(
                            block_on(store.end_cycle(EndOfCycle::pausing(r.clone()), CycleGuard::none())).unwrap(),
                        ));
                    }),
                ],
                if quick() { 4 } else { 40 },
            );
        }
        None => {
            assert!(std::env::var("CI").is_err(), "no PostgreSQL server: .ci/run installs it");
            println!("pause_postgres: SKIPPED (no PostgreSQL server installed)");
        }
    }

    // 2. Throughput: notices of many pauses, delivered by one look at the outbox.
    let (url, arrived) = receiver();
    let sessions = base.join("throughput");
    let count = if quick() { 60 } else { 300 };
    for s in 0..10 {
        let root = sessions.join(format!("s{s}"));
        std::fs::create_dir_all(root.join("ops/runtime")).unwrap();
        let records = FileRecords::new(&root);
        for i in 0..count / 10 {
            block_on(records.log_notice(&ApprovalEvent::paused(&record(i as u64 + 1)))).unwrap();
        }
    }
    let backend: Arc<dyn planlock::backend::Backend> = Arc::new(planlock::backend::FilesBackend::new(&sessions));
    let notifier =
        Notifier::with_secrets(backend, &access(&url), NotifyOptions::default(), |_| Some(SECRET.to_owned())).unwrap();
    let started = Instant::now();
    let sent = block_on(notifier.once()).unwrap();
    let took = started.elapsed();
    assert_eq!(sent.iter().filter(|a| a.outcome == "delivered").count(), count);
    println!(
        "notify_throughput: {count} notifications delivered in {:.2} s: {:.0} events/s (files, one sender, one receiver)",
        took.as_secs_f64(),
        count as f64 / took.as_secs_f64()
    );

    // 3. The delay from a notice's write to its delivery by a running sender.
    let watched = base.join("delay");
    let root = watched.join("s0");
    std::fs::create_dir_all(root.join("ops/runtime")).unwrap();
    let backend: Arc<dyn planlock::backend::Backend> = Arc::new(planlock::backend::FilesBackend::new(&watched));
    let notifier =
        Notifier::with_secrets(backend, &access(&url), NotifyOptions::default(), |_| Some(SECRET.to_owned())).unwrap();
    let runtime = planlock::io_handle().unwrap();
    let report: Arc<dyn Fn(&planlock::review::notify::Attempted) + Send + Sync> = Arc::new(|_| {});
    let sender = runtime.spawn(notifier.run(report));
    let records = FileRecords::new(&root);
    let samples = if quick() { 8 } else { 40 };
    let mut written = Vec::new();
    for i in 0..samples {
        // At a random point of the sender's poll.
        let mut byte = [0u8; 1];
        getrandom::fill(&mut byte).unwrap();
        std::thread::sleep(Duration::from_millis(u64::from(byte[0]) * 4));
        let r = record(5_000_000 + i);
        let at = Instant::now();
        block_on(records.log_notice(&ApprovalEvent::paused(&r))).unwrap();
        let logged = planlock::backend::Logged { session: "s0".into(), event: ApprovalEvent::paused(&r) };
        written.push((planlock::review::notify::Notification::of(&logged, None).id, at));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut delays: Vec<Duration> = Vec::new();
    while Instant::now() < deadline {
        let got = arrived.lock().unwrap();
        if written.iter().all(|(id, _)| got.contains_key(id)) {
            delays = written.iter().map(|(id, at)| got[id].duration_since(*at)).collect();
            break;
        }
        drop(got);
        std::thread::sleep(Duration::from_millis(20));
    }
    sender.abort();
    assert_eq!(delays.len(), written.len(), "every notice delivered");
    delays.sort_unstable();
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize];
    println!(
        "notify_delay: from the notice's write to its delivery, p50 {:.0} ms, p99 {:.0} ms ({} notices, poll 1 s)",
        at(0.5).as_secs_f64() * 1000.0,
        at(0.99).as_secs_f64() * 1000.0,
        delays.len()
    );
}
