//! PostgreSQL against its baselines, side by side in one run, on a throw-away server started
//! here with PostgreSQL's durable defaults (`fsync` on), as the file store is durable too:
//!
//! 1. Cycles per second with 1, 2, 4 and 8 workers on 64 sessions (the demo plan without its
//!    RepoScan, demo handlers, memories and decisions in the session's store): PostgreSQL
//!    (`PgSessionStore` + `PgStore`) against the file store and SQLite with one root per session.
//!    Each cycle boots the session's runtime (taking the lease, or the root's lock), runs, saves,
//!    and drops it, as a worker pulling sessions from a queue does. Workers are threads here.
//! 2. The session save's compare-and-set (`UPDATE … WHERE row_version AND lease_owner`) against a
//!    bare `UPDATE … WHERE session_key = $1` writing the same text (interleaved, best of rounds).
//!
//! Run: `cargo bench --bench postgres --features postgres`. Targets (issue 14): the CAS save
//! ≤ 1.3× the bare update; throughput grows with workers until the 2 cores are saturated.

use planlock::block_on;
use planlock::session::CycleGuard;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use planlock::demo::Demo;
use planlock::pg::{PgDatabase, PgOptions};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::postgres::PgSessionStore;
use planlock::session::{EndOfCycle, FileSessionStore, SessionStore, SessionUpdate};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::{Digest, ValidPlan};

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "common/paired.rs"]
mod paired;

const SESSIONS: usize = 64;
const WINDOW: Duration = Duration::from_secs(4);

#[derive(Clone, Copy, PartialEq)]
enum Backend {
    Postgres,
    Files,
}

fn plan() -> ValidPlan {
    let mut v: serde_json::Value = serde_json::from_str(common::DEMO_PLAN).unwrap();
    v["steps"].as_array_mut().unwrap().remove(0);
    ValidPlan::from_value(&v).unwrap()
}

/// One cycle of session `n`: boot (lease or lock), run, save, drop.
fn cycle(
    backend: Backend,
    db: &PgDatabase,
    roots: &[PathBuf],
    policy: &std::path::Path,
    plan: &ValidPlan,
    n: usize,
) -> bool {
    let key = format!("bench-{n:03}");
    match backend {
        Backend::Postgres => {
            let Ok(store) = PgSessionStore::open(db, &key) else { return false };
            let manifest = BundleManifest::default_shared_bundle();
            let storage = StoreHandlers::new(
                StrategyResolver::default().resolve_for_session(&manifest, store.session()).unwrap(),
            );
            let runtime = Runtime::builder(policy, plan.clone(), store)
                .handlers(Demo::new().with_store(&storage))
                .bundle(manifest)
                .boot_blocking();
            matches!(runtime.map(|mut r| r.run_cycle_blocking()), Ok(Ok(RunOutcome::Completed(_))))
        }
        Backend::Files => {
            let Ok(store) = FileSessionStore::open(&roots[n]) else { return false };
            let manifest = BundleManifest::default_bundle();
            let storage = StoreHandlers::new(StrategyResolver::default().resolve(&manifest, &roots[n]).unwrap());
            let runtime = Runtime::builder(policy, plan.clone(), store)
                .handlers(Demo::new().with_store(&storage))
                .bundle(manifest)
                .boot_blocking();
            matches!(runtime.map(|mut r| r.run_cycle_blocking()), Ok(Ok(RunOutcome::Completed(_))))
        }
    }
}

/// Completed cycles per second with `workers` threads, each on its own share of the sessions.
fn throughput(
    backend: Backend,
    workers: usize,
    url: &str,
    roots: &[PathBuf],
    policy: &std::path::Path,
    plan: &ValidPlan,
) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(workers + 1));
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let (done, stop, start) = (done.clone(), stop.clone(), start.clone());
            let (url, roots, policy, plan) = (url.to_owned(), roots.to_vec(), policy.to_path_buf(), plan.clone());
            std::thread::spawn(move || {
                // Each worker has its own pool, as a worker process would.
                let db =
                    PgDatabase::connect_with(&url, PgOptions { max_connections: 2, ..PgOptions::default() }).unwrap();
                start.wait();
                let mine: Vec<usize> = (w..SESSIONS).step_by(workers).collect();
                for n in mine.iter().cycle() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if cycle(backend, &db, &roots, &policy, &plan, *n) {
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let before = done.load(Ordering::Relaxed);
    std::thread::sleep(WINDOW);
    let cycles = done.load(Ordering::Relaxed) - before;
    let elapsed = began.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    cycles as f64 / elapsed
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let Some(server) = common::pg::PgServer::start_with(true) else {
        eprintln!("no PostgreSQL server is installed (Debian's `postgresql`); nothing to measure");
        return;
    };
    let url = server.database("bench");
    let db = PgDatabase::connect(&url).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy");
    common::policy(&policy, "friendly");
    let roots: Vec<PathBuf> = (0..SESSIONS).map(|n| dir.path().join(format!("root-{n:03}"))).collect();
    for root in &roots {
        std::fs::create_dir_all(root).unwrap();
    }
    let plan = plan();

    println!("cycles per second, 64 sessions, {} s windows (threads as workers, 2 cores)", WINDOW.as_secs());
    println!("  {:>7}  {:>12}  {:>18}  {:>6}", "workers", "PostgreSQL", "files + SQLite", "ratio");
    for workers in [1, 2, 4, 8] {
        let pg = throughput(Backend::Postgres, workers, &url, &roots, &policy, &plan);
        let files = throughput(Backend::Files, workers, &url, &roots, &policy, &plan);
        println!("  {workers:>7}  {pg:>12.1}  {files:>18.1}  {:>5.2}x", pg / files);
    }

    // The save's compare-and-set against a bare update of the same row with the same text.
    let store = PgSessionStore::open(&db, "bench-save").unwrap();
    let update = SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: Some("memory".into()),
        repo_scan_version: None,
        last_execution_plan_hash: Digest::of(b"plan"),
        hash_parts: None,
        cycle: 1,
    };
    let text = serde_json::to_string(
        &block_on(store.end_cycle(EndOfCycle::saving(update.clone()), CycleGuard::none())).unwrap().unwrap(),
    )
    .unwrap();
    let mut bare = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let statement = bare.prepare("UPDATE planlock_sessions SET state = $2 WHERE session_key = $1").unwrap();
    paired::report(
        "session save",
        &mut [
            ("bare UPDATE ... WHERE session_key = $1", &mut || {
                bare.execute(&statement, &[&"bench-save", &text]).unwrap();
            }),
            ("PgSessionStore::save (compare-and-set)", &mut || {
                let _ = block_on(store.end_cycle(EndOfCycle::saving(update.clone()), CycleGuard::none())).unwrap();
            }),
        ],
    );
}
