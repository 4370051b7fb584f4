//! Many workers, one PostgreSQL database: the shape a deployment takes.
//!
//! ```sh
//! cargo run --example workers --features postgres -- postgres://user:pass@host/db [WORKERS] [SESSIONS] [CYCLES]
//! ```
//!
//! The parent creates a queue table (`planlock_example_queue`: a session key and how many cycles
//! it still wants), fills it with SESSIONS keys, and starts WORKERS copies of itself as worker
//! processes (default 4 workers, 16 sessions, 5 cycles). Each worker loops:
//!
//! 1. takes one session whose turn it is, `FOR UPDATE SKIP LOCKED`, so no two workers take the
//!    same one and none waits for another;
//! 2. opens its [`PgSessionStore`] (taking the session's lease: a worker on another machine that
//!    still held it would make this one skip it), boots a [`Runtime`] with the demo handlers
//!    and the session's memories in [`PgStore`], and runs one cycle;
//! 3. when the cycle completed, counts it down in the queue and commits; otherwise rolls back,
//!    so the session's turn comes again.
//!
//! A worker that stalls past its lease is fenced: its next save writes nothing and fails
//! FailFast, and whoever took the session over goes on from the saved state.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use planlock::ValidPlan;
use planlock::demo::Demo;
use planlock::pg::PgDatabase;
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::postgres::PgSessionStore;
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};

const QUEUE: &str = "CREATE TABLE IF NOT EXISTS planlock_example_queue (
    session_key text PRIMARY KEY,
    remaining integer NOT NULL CHECK (remaining >= 0)
)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--worker") => worker(args.get(1).map(String::as_str).unwrap_or_default()),
        Some(url) => {
            let number = |i: usize, default: u32| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
            parent(url, number(1, 4), number(2, 16), number(3, 5))
        }
        None => Err("usage: workers DATABASE_URL [WORKERS] [SESSIONS] [CYCLES]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workers: {e}");
            ExitCode::from(2)
        }
    }
}

type Error = Box<dyn std::error::Error>;

/// Fills the queue, starts the workers, waits for them, and says what the database holds.
fn parent(url: &str, workers: u32, sessions: u32, cycles: u32) -> Result<(), Error> {
    // Connecting applies planlock's migrations once, before the workers start.
    drop(PgDatabase::connect(url)?);
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    client.batch_execute(QUEUE)?;
    for n in 0..sessions {
        let key = format!("example/conversation-{n:04}");
        client.execute(
            "INSERT INTO planlock_example_queue VALUES ($1, $2)
             ON CONFLICT (session_key) DO UPDATE SET remaining = EXCLUDED.remaining",
            &[&key, &i32::try_from(cycles)?],
        )?;
    }
    let started = Instant::now();
    let children: Vec<_> = (0..workers)
        .map(|_| Command::new(std::env::current_exe()?).args(["--worker", url]).spawn())
        .collect::<Result<_, _>>()?;
    let mut failed = 0;
    for mut child in children {
        failed += u32::from(!child.wait()?.success());
    }
    let done: i64 =
        client.query_one("SELECT count(*) FROM planlock_sessions WHERE session_key LIKE 'example/%'", &[])?.get(0);
    let memories: i64 =
        client.query_one("SELECT count(*) FROM planlock_memories WHERE namespace LIKE 'example/%'", &[])?.get(0);
    println!(
        "{workers} workers ran {sessions} sessions x {cycles} cycles in {:.1} s: {done} sessions stored, {memories} memories; {failed} worker(s) failed",
        started.elapsed().as_secs_f64()
    );
    if failed > 0 { Err(format!("{failed} worker(s) failed").into()) } else { Ok(()) }
}

/// One worker process: takes sessions from the queue until none wants a cycle.
fn worker(url: &str) -> Result<(), Error> {
    let db = PgDatabase::connect(url)?;
    let mut queue = postgres::Client::connect(url, postgres::NoTls)?;
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples.join("plans/demo_plan.json"))?)?;
    plan["steps"][0]["payload"]["repoPath"] = serde_json::json!(examples.join("policy").display().to_string());
    let plan = ValidPlan::from_value(&plan)?;
    let manifest = BundleManifest::default_shared_bundle();
    let mut ran = 0;
    loop {
        let mut tx = queue.transaction()?;
        let Some(row) = tx.query_opt(
            "SELECT session_key FROM planlock_example_queue WHERE remaining > 0 ORDER BY session_key
             FOR UPDATE SKIP LOCKED LIMIT 1",
            &[],
        )?
        else {
            tx.rollback()?;
            let left: i64 =
                queue.query_one("SELECT count(*) FROM planlock_example_queue WHERE remaining > 0", &[])?.get(0);
            if left == 0 {
                break;
            }
            // Every session that wants a cycle is taken by another worker right now.
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        let key: String = row.get(0);
        let store = match PgSessionStore::open(&db, &key) {
            Ok(store) => store,
            Err(e) => {
                // Held by a worker elsewhere (or the database failed): its turn comes again.
                eprintln!("worker {}: {key}: {e}", std::process::id());
                continue;
            }
        };
        let storage = StoreHandlers::new(StrategyResolver::default().resolve_for_session(&manifest, store.session())?);
        let mut runtime = Runtime::builder(examples.join("policy"), plan.clone(), store)
            .handlers(Demo::new().with_store(&storage))
            .bundle(manifest.clone())
            .boot_blocking()?;
        match runtime.run_cycle_blocking() {
            Ok(RunOutcome::Completed(_)) => {
                tx.execute(
                    "UPDATE planlock_example_queue SET remaining = remaining - 1 WHERE session_key = $1",
                    &[&key],
                )?;
                tx.commit()?;
                ran += 1;
            }
            Ok(RunOutcome::Paused { record, .. }) => {
                eprintln!("worker {}: {key} paused: {}", std::process::id(), record.reason)
            }
            Ok(RunOutcome::Abandoned(record)) => {
                eprintln!("worker {}: {key}: a reviewer rejected cycle {}", std::process::id(), record.cycle)
            }
            Err(e) => eprintln!("worker {}: {key}: {e}", std::process::id()),
        }
    }
    println!("worker {} ran {ran} cycles", std::process::id());
    Ok(())
}
