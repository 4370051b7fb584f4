//! PostgreSQL for many workers on many machines, against a real server this harness starts
//! (`initdb`/`pg_ctl` from the Debian `postgresql` package, in a temporary directory, on a Unix
//! socket), never a mock:
//!
//! - migrations: idempotent, concurrent, a newer schema refused;
//! - the storage ports pass the same conformance suite as SQLite;
//! - the lease and fencing: "session in use", take-over after expiry, a fenced worker writes
//!   nothing; bad session keys;
//! - 8 worker processes × 64 sessions × 20 cycles pulling keys from a queue table
//!   (`FOR UPDATE SKIP LOCKED`): every session's cycle equals its completed cycles, no cycle
//!   number missing or repeated, one memory per completed cycle;
//! - a worker SIGSTOPped while holding a lease is taken over and, continued, refused;
//! - workers SIGKILLed mid-cycle (100 times): no row torn, every session resumes;
//! - the server stopped and restarted mid-run: failures carry their step's kind, nothing
//!   acknowledged is lost;
//! - bad connections: a wrong password or URL, a server that never answers (bounded by the
//!   connect timeout), and the CLI's exit codes for them.
//!
//! This file is its own harness (one server for all tests, stopped at the end); run with a
//! `PLANLOCK_PG_WORKER` variable it is a worker process.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use planlock::demo::Demo;
use planlock::pg::{PgDatabase, PgError, PgOptions};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::postgres::PgSessionStore;
use planlock::session::{BeforeSave, SessionError, SessionStore, SessionUpdate};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::postgres::PgStore;
use planlock::{Failure, FailureKind, StepType, ValidPlan};
use serde_json::{Value, json};

mod common;
use common::pg::PgServer;

// ---------------------------------------------------------------- the worker process

/// What a worker needs, from its environment.
struct WorkerEnv {
    url: String,
    policy: PathBuf,
    plan: ValidPlan,
    lease: Duration,
    keys: Vec<String>,
}

fn worker_env() -> WorkerEnv {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let plan = ValidPlan::from_str(&std::fs::read_to_string(var("PLANLOCK_PG_PLAN")).unwrap()).unwrap();
    WorkerEnv {
        url: var("PLANLOCK_PG_URL"),
        policy: PathBuf::from(var("PLANLOCK_PG_POLICY")),
        plan,
        lease: Duration::from_millis(var("PLANLOCK_PG_LEASE_MS").parse().unwrap_or(30_000)),
        keys: var("PLANLOCK_PG_KEYS").split(',').filter(|k| !k.is_empty()).map(str::to_owned).collect(),
    }
}

/// A failure as a worker reports it: its code, its kind, and the step it failed at.
fn failure(e: &dyn Failure, step: Option<StepType>) -> String {
    let step = step.map_or("-", StepType::wire_name);
    format!("{} {} {step} | {e}", e.code(), e.kind())
}

/// Boots `key`'s runtime (taking its lease) and runs one cycle: its number, or a failure line.
fn one_cycle(db: &PgDatabase, env: &WorkerEnv, key: &str) -> Result<u64, String> {
    let store = PgSessionStore::open_with_lease(db, key, env.lease).map_err(|e| failure(&e, None))?;
    let mut runtime = boot(db, env, key, store)?;
    run(&mut runtime)
}

type WorkerRuntime = Runtime<PgSessionStore, planlock::handler::Boxed>;

fn boot(db: &PgDatabase, env: &WorkerEnv, key: &str, store: PgSessionStore) -> Result<WorkerRuntime, String> {
    let manifest = BundleManifest::default_shared_bundle();
    let resolved = StrategyResolver::default()
        .resolve_in_database(&manifest, db, key)
        .map_err(|e| format!("{} FailFast -", e.code()))?;
    Runtime::builder(&env.policy, env.plan.clone(), store)
        .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
        .bundle(manifest)
        .boot()
        .map_err(|e| failure(&e, None))
}

fn run(runtime: &mut WorkerRuntime) -> Result<u64, String> {
    match runtime.run_cycle_blocking() {
        Ok(RunOutcome::Completed(_)) => Ok(runtime.cycle()),
        Ok(RunOutcome::Paused(_)) => Err("paused - -".into()),
        Err(e) => {
            let step = match &e {
                planlock::runtime::RuntimeError::Exec(planlock::ExecError::StepFailed { step_type, .. }) => {
                    Some(*step_type)
                }
                _ => None,
            };
            Err(failure(&e, step))
        }
    }
}

fn say(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn worker(mode: &str) {
    let env = worker_env();
    let db = PgDatabase::connect(&env.url).unwrap_or_else(|e| {
        say(format_args!("CONNECT {}", e.code()));
        std::process::exit(3)
    });
    match mode {
        // Pulls session keys from the queue table until every session has had its cycles.
        "queue" => {
            let mut queue = postgres::Client::connect(&env.url, postgres::NoTls).unwrap();
            loop {
                let mut tx = queue.transaction().unwrap();
                let row = tx
                    .query_opt(
                        "SELECT session_key FROM test_queue WHERE remaining > 0 ORDER BY session_key FOR UPDATE SKIP LOCKED LIMIT 1",
                        &[],
                    )
                    .unwrap();
                let Some(row) = row else {
                    drop(tx);
                    let left: i64 =
                        queue.query_one("SELECT count(*) FROM test_queue WHERE remaining > 0", &[]).unwrap().get(0);
                    if left == 0 {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                let key: String = row.get(0);
                match one_cycle(&db, &env, &key) {
                    Ok(cycle) => {
                        tx.execute("UPDATE test_queue SET remaining = remaining - 1 WHERE session_key = $1", &[&key])
                            .unwrap();
                        tx.execute(
                            "INSERT INTO test_log (session_key, cycle) VALUES ($1, $2)",
                            &[&key, &i64::try_from(cycle).unwrap()],
                        )
                        .unwrap();
                        tx.commit().unwrap();
                        say(format_args!("DONE {key} {cycle}"));
                    }
                    Err(line) => say(format_args!("FAIL {key} {line}")),
                }
            }
        }
        // Runs cycles round the keys until killed.
        "churn" => {
            for n in 0usize.. {
                let key = &env.keys[n % env.keys.len()];
                match one_cycle(&db, &env, key) {
                    Ok(cycle) => say(format_args!("DONE {key} {cycle}")),
                    Err(line) => {
                        say(format_args!("FAIL {key} {line}"));
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        }
        // One cycle, then waits for a line on stdin (stalled, holding the lease), then another.
        "stall" => {
            let key = &env.keys[0];
            let store = PgSessionStore::open_with_lease(&db, key, env.lease).unwrap();
            let mut runtime = boot(&db, &env, key, store).unwrap();
            let first = run(&mut runtime).unwrap();
            say(format_args!("READY {first}"));
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            match run(&mut runtime) {
                Ok(cycle) => say(format_args!("DONE {key} {cycle}")),
                Err(line) => {
                    say(format_args!("FAIL {key} {line}"));
                    std::process::exit(3)
                }
            }
        }
        // Two cycles; the second dies (abort) at its save, after all of its store writes.
        "die-before-save" => {
            let key = &env.keys[0];
            let store = PgSessionStore::open_with_lease(&db, key, env.lease).unwrap();
            let store = BeforeSave::new(store, |update: &SessionUpdate| {
                if update.cycle == 2 {
                    say(format_args!("SAVING 2"));
                    std::process::abort();
                }
                Ok(())
            });
            let manifest = BundleManifest::default_shared_bundle();
            let resolved = StrategyResolver::default().resolve_in_database(&manifest, &db, key).unwrap();
            let mut runtime = Runtime::builder(&env.policy, env.plan.clone(), store)
                .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
                .bundle(manifest)
                .boot()
                .unwrap();
            for _ in 0..2 {
                let outcome = runtime.run_cycle_blocking();
                assert!(matches!(outcome, Ok(RunOutcome::Completed(_))), "{outcome:?}");
                say(format_args!("DONE {key} {}", runtime.cycle()));
            }
        }
        other => panic!("unknown worker mode {other}"),
    }
}

// ---------------------------------------------------------------- test fixtures

struct Fixture {
    _dir: tempfile::TempDir,
    policy: PathBuf,
    plan_file: PathBuf,
    plan: ValidPlan,
}

/// A policy and the demo plan without its RepoScan (cycles stay cheap), timeouts as the demo has them.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy");
    common::policy(&policy, "friendly");
    let mut v: Value = serde_json::from_str(common::DEMO_PLAN).unwrap();
    v["steps"].as_array_mut().unwrap().remove(0);
    let plan = ValidPlan::from_value(&v).unwrap();
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_json()).unwrap();
    Fixture { _dir: dir, policy, plan_file, plan }
}

fn spawn_worker(mode: &str, url: &str, fx: &Fixture, keys: &[String], lease_ms: u64) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .env("PLANLOCK_PG_WORKER", mode)
        .env("PLANLOCK_PG_URL", url)
        .env("PLANLOCK_PG_POLICY", &fx.policy)
        .env("PLANLOCK_PG_PLAN", &fx.plan_file)
        .env("PLANLOCK_PG_LEASE_MS", lease_ms.to_string())
        .env("PLANLOCK_PG_KEYS", keys.join(","))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// A worker's stdout, line by line, on a channel.
fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} failed");
}

fn worker_env_for(url: &str, fx: &Fixture, lease_ms: u64) -> WorkerEnv {
    WorkerEnv {
        url: url.to_owned(),
        policy: fx.policy.clone(),
        plan: fx.plan.clone(),
        lease: Duration::from_millis(lease_ms),
        keys: vec![],
    }
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// Every record of every session reads back strictly; the session's completed cycles.
fn check_rows(db: &PgDatabase, keys: &[String], lease: Duration) -> BTreeMap<String, u64> {
    std::thread::sleep(lease + Duration::from_millis(100));
    let mut cycles = BTreeMap::new();
    for key in keys {
        let store = PgSessionStore::open_with_lease(db, key, lease).unwrap_or_else(|e| panic!("{key}: {e}"));
        let state = store.load().unwrap_or_else(|e| panic!("{key}: {e}"));
        store.load_intervention().unwrap();
        store.load_reserved().unwrap();
        store.load_pin().unwrap();
        cycles.insert(key.clone(), state.map_or(0, |s| s.cycle));
    }
    cycles
}

fn memory_rows(url: &str, key: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query_one("SELECT count(*) FROM planlock_memories WHERE namespace = $1", &[&key]).unwrap().get(0)
}

// ---------------------------------------------------------------- the tests

fn migrations_are_idempotent_concurrent_and_refuse_a_newer_schema(server: &PgServer) {
    let url = server.database("migrations");
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || PgDatabase::connect(&url).map(|db| db.schema_version()))
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().unwrap().unwrap(), planlock::pg::SCHEMA_VERSION);
    }
    let db = PgDatabase::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let applied: i64 = client.query_one("SELECT count(*) FROM planlock_schema_migrations", &[]).unwrap().get(0);
    assert_eq!(applied, 1, "each migration once");
    drop(db);
    client.execute("INSERT INTO planlock_schema_migrations (version) VALUES (2)", &[]).unwrap();
    let err = PgDatabase::connect(&url).unwrap_err();
    assert!(matches!(err, PgError::SchemaTooNew { found: 2, known: 1, .. }), "{err}");
    assert_eq!(err.code(), "pg-schema-too-new");
    assert!(err.to_string().contains("upgrade planlock"), "{err}");
    assert_eq!(err.kind(), FailureKind::FailFast);
    // The CLI refuses it too: FailFast, exit 3, nothing written.
    let fx = fixture();
    let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["run", "--database", &url, "--session", "k", "--policy-root"])
        .arg(&fx.policy)
        .arg(&fx.plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("newer than this library's 1"));
    let sessions: i64 = client.query_one("SELECT count(*) FROM planlock_sessions", &[]).unwrap().get(0);
    assert_eq!(sessions, 0);
}

fn the_storage_ports_pass_the_conformance_suite(server: &PgServer) {
    let db = PgDatabase::connect(&server.database("conformance")).unwrap();
    let n = std::sync::atomic::AtomicU64::new(0);
    planlock::store::conformance::run(|| {
        PgStore::new(&db, format!("ns-{}", n.fetch_add(1, std::sync::atomic::Ordering::Relaxed)))
    });
    // Namespaces do not see each other.
    assert!(n.into_inner() >= 2);
    // The semantic providers are SQLite-only here (no pgvector): the combination is refused.
    let semantic =
        BundleManifest::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic")))
            .unwrap();
    let resolver = StrategyResolver::default().embedder(std::sync::Arc::new(planlock::embed::DemoEmbedder::new()));
    let err = resolver.resolve_in_database(&semantic, &db, "ns-semantic").unwrap_err();
    assert!(err.to_string().contains("SQLite-only"), "{err}");
}

fn a_search_past_its_deadline_is_cancelled_by_the_server(server: &PgServer) {
    use planlock::store::{MemoryRepositoryPort, NewMemory};
    let url = server.database("deadline");
    let db = PgDatabase::connect(&url).unwrap();
    let store = PgStore::new(&db, "big");
    let key = planlock::store::conformance::key(1);
    pollster::block_on(store.put(NewMemory { key: &key, session_ref: "s", summary: "seed", keywords: &[] })).unwrap();
    // 300,000 memories that all match, so ranking them takes the server well over a millisecond.
    server.sql(
        "deadline",
        "INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
         SELECT 'big', 'm-' || n, 'k-' || n, 's', 'rotate the key ' || n, 'key', '2026-01-01T00:00:00Z'
         FROM generate_series(1, 300000) n",
    );
    let words = "rotate key the";
    let started = std::time::Instant::now();
    let err = pollster::block_on(store.search_within(words, 10, Some(std::time::Instant::now()))).unwrap_err();
    assert!(err.to_string().contains("stopped at the step's deadline"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "cancelled, not run to its end");
    assert_eq!(pollster::block_on(store.search_within(words, 10, None)).unwrap().len(), 10);
    say(format_args!("postgres: a search past its deadline was cancelled in {:?}", started.elapsed()));
}

fn the_lease_refuses_a_second_worker_and_fences_a_stalled_one(server: &PgServer) {
    let db = PgDatabase::connect(&server.database("lease")).unwrap();
    let lease = Duration::from_millis(1_500);
    let a = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    let update = |cycle| planlock::session::SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: None,
        repo_scan_version: None,
        last_execution_plan_hash: planlock::Digest::of(b"plan"),
        hash_parts: None,
        cycle,
    };
    a.save(update(1)).unwrap();
    let err = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap_err();
    assert!(matches!(err, SessionError::LeaseHeld { .. }), "{err}");
    assert_eq!((err.code(), err.kind()), ("session-in-use", FailureKind::FailFast));
    assert!(err.to_string().contains(&a.owner().to_string()), "{err}");
    // A renewal keeps it.
    std::thread::sleep(lease / 2);
    a.renew().unwrap();
    std::thread::sleep(lease / 2);
    assert!(PgSessionStore::open_with_lease(&db, "conv-1", lease).is_err());
    // Stalled past its lease: another worker takes over, and the stalled one can write nothing.
    std::thread::sleep(lease + Duration::from_millis(50));
    let b = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    b.save(update(2)).unwrap();
    for result in [a.save(update(9)).map(drop), a.save_pin(&pin()), a.remove_intervention(), a.renew()] {
        let err = result.unwrap_err();
        assert!(matches!(err, SessionError::Fenced { .. }), "{err}");
        assert_eq!(err.code(), "session-fenced");
    }
    assert_eq!(b.load().unwrap().unwrap().cycle, 2, "the fenced worker wrote nothing");
    assert!(b.load_pin().unwrap().is_none());
    // Dropping a store gives its lease back at once.
    drop(b);
    let c = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    assert_eq!(c.load().unwrap().unwrap().cycle, 2);
    // Keys: 1 to 256 bytes.
    for bad in [String::new(), "k".repeat(257)] {
        let err = PgSessionStore::open(&db, &bad).unwrap_err();
        assert_eq!(err.code(), "session-key", "{err}");
    }
    PgSessionStore::open(&db, &"é".repeat(128)).unwrap();
}

fn pin() -> planlock::session::BundlePinV1 {
    planlock::session::BundlePinV1 {
        version: planlock::session::PinVersion,
        bundle_id: "b".into(),
        strategy_provider_id: Some("hierarchical-sql".into()),
        memory_provider_id: Some("postgres".into()),
        embedder_model: None,
        embedder_dimension: None,
        pinned_at: planlock::session::Timestamp::now(),
    }
}

fn eight_workers_run_64_sessions_20_cycles_each_exactly(server: &PgServer) {
    let url = server.database("workers");
    let fx = fixture();
    drop(PgDatabase::connect(&url).unwrap());
    let sessions = keys("s", 64);
    server.sql(
        "workers",
        "CREATE TABLE test_queue (session_key text PRIMARY KEY, remaining integer NOT NULL);
         CREATE TABLE test_log (session_key text NOT NULL, cycle bigint NOT NULL, UNIQUE (session_key, cycle));",
    );
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for key in &sessions {
        client.execute("INSERT INTO test_queue VALUES ($1, 20)", &[key]).unwrap();
    }
    let started = Instant::now();
    let mut workers: Vec<Child> = (0..8).map(|_| spawn_worker("queue", &url, &fx, &[], 30_000)).collect();
    let outputs: Vec<_> = workers.iter_mut().map(lines).collect();
    for w in &mut workers {
        assert!(w.wait().unwrap().success());
    }
    let failures: Vec<String> = outputs.iter().flat_map(|rx| rx.try_iter()).filter(|l| l.starts_with("FAIL")).collect();
    println!(
        "    8 workers, 64 sessions x 20 cycles in {:.1} s ({} refused or failed attempts retried)",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    // Only "in use" (a lease still held between a commit and the drop) may have been retried.
    assert!(failures.iter().all(|l| l.contains("session-in-use")), "{failures:?}");
    let db = PgDatabase::connect(&url).unwrap();
    let cycles = check_rows(&db, &sessions, Duration::ZERO);
    for key in &sessions {
        let logged: Vec<i64> = client
            .query("SELECT cycle FROM test_log WHERE session_key = $1 ORDER BY cycle", &[key])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(logged, (1..=20).collect::<Vec<i64>>(), "{key}: cycle numbers with no gap or repeat");
        assert_eq!(cycles[key], 20, "{key}");
        assert_eq!(memory_rows(&url, key), 20, "{key}: one memory per completed cycle");
    }
}

fn a_stopped_worker_is_taken_over_and_refused_when_it_continues(server: &PgServer) {
    let url = server.database("stall");
    let fx = fixture();
    let key = vec!["stalled".to_owned()];
    let lease_ms = 800;
    let mut child = spawn_worker("stall", &url, &fx, &key, lease_ms);
    let rx = lines(&mut child);
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "READY 1");
    signal(&child, "-STOP");
    std::thread::sleep(Duration::from_millis(lease_ms + 200));
    // Another worker takes the session over and runs cycle 2.
    let db = PgDatabase::connect(&url).unwrap();
    let env = worker_env_for(&url, &fx, lease_ms);
    assert_eq!(one_cycle(&db, &env, "stalled"), Ok(2));
    let before = memory_rows(&url, "stalled");
    signal(&child, "-CONT");
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let said = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    // The runtime saves the session as the PersistSession step: that step fails, FailFast, fenced.
    assert!(said.starts_with("FAIL stalled step-failed FailFast PersistSession"), "{said}");
    assert!(said.contains("taken over by another worker"), "{said}");
    assert_eq!(child.wait().unwrap().code(), Some(3));
    // It wrote nothing: the session is at the new owner's cycle, its memory write (same cycle,
    // same idempotency key) found the new owner's.
    let cycles = check_rows(&db, &key, Duration::ZERO);
    assert_eq!(cycles["stalled"], 2);
    assert_eq!(memory_rows(&url, "stalled"), before);
}

fn workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes(server: &PgServer) {
    let url = server.database("kills");
    let fx = fixture();
    let sessions = keys("k", 8);
    let lease_ms = 200;
    let mut done = 0;
    for kill in 0..100u64 {
        let mut child = spawn_worker("churn", &url, &fx, &sessions, lease_ms);
        let rx = lines(&mut child);
        // Killed at a different moment each time, most of them inside a cycle.
        std::thread::sleep(Duration::from_millis(60 + (kill * 37) % 90));
        child.kill().unwrap();
        child.wait().unwrap();
        done += rx.try_iter().filter(|l| l.starts_with("DONE")).count();
    }
    println!("    100 kills; {done} cycles completed between them");
    let db = PgDatabase::connect(&url).unwrap();
    let before = check_rows(&db, &sessions, Duration::from_millis(lease_ms));
    let env = worker_env_for(&url, &fx, lease_ms);
    for key in &sessions {
        assert_eq!(one_cycle(&db, &env, key), Ok(before[key] + 1), "{key} resumes");
        assert!(memory_rows(&url, key) <= i64::try_from(before[key] + 1).unwrap(), "{key}: no memory twice");
    }
}

fn a_server_restart_fails_cycles_with_their_kind_and_loses_nothing(server: &PgServer) {
    // A short connect timeout: the pool waits at most 1 s for the server, so an outage longer
    // than that fails the cycles that run into it instead of holding them.
    let url = server.database("restart") + " connect_timeout=1";
    let fx = fixture();
    let sessions = keys("r", 4);
    let mut child = spawn_worker("churn", &url, &fx, &sessions, 1_000);
    let rx = lines(&mut child);
    let mut seen = Vec::new();
    let wait_for_done = |n: usize, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut count = 0;
        while count < n && Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                count += usize::from(line.starts_with("DONE"));
                seen.push(line);
            }
        }
        assert!(count >= n, "only {count} cycles completed: {seen:?}");
    };
    wait_for_done(10, &mut seen);
    server.pg_ctl_stop();
    std::thread::sleep(Duration::from_millis(2_500));
    server.pg_ctl_start();
    wait_for_done(10, &mut seen);
    child.kill().unwrap();
    child.wait().unwrap();
    seen.extend(rx.try_iter());

    let failures: Vec<&String> = seen.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert!(!failures.is_empty(), "the restart failed no cycle: {seen:?}");
    for line in &failures {
        // FAIL key code kind step
        let parts: Vec<&str> = line.split(' ').collect();
        let (kind, step) = (parts[3], parts[4]);
        match StepType::from_wire(step) {
            Some(ty) => assert_eq!(kind, ty.failure_kind().as_str(), "{line}: a step fails with its registry kind"),
            None => assert_eq!(kind, "FailFast", "{line}: a session store or boot failure is FailFast"),
        }
    }
    // Nothing acknowledged is lost: each session has at least its last acknowledged cycle.
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    for line in seen.iter().filter(|l| l.starts_with("DONE")) {
        let parts: Vec<&str> = line.split(' ').collect();
        let cycle: u64 = parts[2].parse().unwrap();
        let last = acked.entry(parts[1].to_owned()).or_default();
        assert!(cycle > *last, "{line}: cycle numbers only go up");
        *last = cycle;
    }
    let db = PgDatabase::connect(&url).unwrap();
    let cycles = check_rows(&db, &sessions, Duration::from_millis(1_000));
    for (key, last) in &acked {
        assert!(cycles[key] >= *last, "{key}: acknowledged cycle {last}, stored {}", cycles[key]);
    }
    println!("    {} cycles acknowledged, {} failed across the restart", seen.len() - failures.len(), failures.len());
}

fn bad_connections_fail_clearly_and_quickly_without_the_password(server: &PgServer) {
    server.database("auth");
    server.sql("auth", "CREATE ROLE tester LOGIN PASSWORD 'right-pass'; ALTER SCHEMA public OWNER TO tester");
    let tcp = |password: &str| format!("postgres://tester:{password}@127.0.0.1:{}/auth?connect_timeout=3", server.port);
    assert!(PgDatabase::connect(&tcp("right-pass")).is_ok());
    let err = PgDatabase::connect(&tcp("wrong-pass-4711")).unwrap_err();
    assert_eq!(err.code(), "pg-connect");
    let text = format!("{err} {err:?}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(text.contains("127.0.0.1") && text.contains("tester"), "it names host and user: {text}");
    assert!(!text.contains("wrong-pass-4711"), "{text}");

    let err = PgDatabase::connect("postgres://tester:secret@127.0.0.1:notaport/x").unwrap_err();
    assert_eq!(err.code(), "pg-url");
    assert!(!err.to_string().contains("secret"), "{err}");

    // A server that accepts the connection and never answers: the connect timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let err =
        PgDatabase::connect(&format!("postgres://tester:secret@127.0.0.1:{port}/x?connect_timeout=1")).unwrap_err();
    assert_eq!(err.code(), "pg-connect");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // The CLI: exit 3 for a refused login, 2 for a bad URL or key; never the password.
    let fx = fixture();
    let cli = |database: &str, key: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
            .args(["run", "--format", "json", "--database", database, "--session", key, "--policy-root"])
            .arg(&fx.policy)
            .arg(&fx.plan_file)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, said) = cli(&tcp("wrong-pass-4711"), "k");
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("password authentication failed") && !said.contains("wrong-pass-4711"), "{said}");
    assert_eq!(cli("postgres://u:secret@host:port/x", "k").0, Some(2));
    assert_eq!(cli(&tcp("right-pass"), "").0, Some(2));
    assert_eq!(cli(&tcp("right-pass"), &"k".repeat(257)).0, Some(2));
}

fn the_cli_runs_and_resumes_a_session_in_the_database(server: &PgServer) {
    let url = server.database("cli");
    let fx = fixture();
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
            .args(["run", "--format", "json", "--session", "tenant-7/conv-42", "--policy-root"])
            .arg(&fx.policy)
            .args(extra)
            .arg(&fx.plan_file)
            .env("PLANLOCK_DATABASE_URL", &url)
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), json)
    };
    let (code, json) = run(&[]);
    assert_eq!((code, json["boot"].as_str(), json["cycle"].as_u64()), (Some(0), Some("cold"), Some(1)), "{json}");
    let (code, json) = run(&[]);
    assert_eq!((code, json["boot"].as_str(), json["cycle"].as_u64()), (Some(0), Some("resume"), Some(2)), "{json}");
    // A write that fails is FailFast, and the session stays at cycle 2.
    let (code, json) = run(&["--fail", "PersistMemory"]);
    assert_eq!((code, json["outcome"].as_str()), (Some(3), Some("FailFast")), "{json}");
    // `status` and `abandon` find the session by its key too.
    let status = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["status", "--format", "json", "--session", "tenant-7/conv-42", "--database", &url])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
    assert_eq!((status.status.code(), json["session"]["cycle"].as_u64()), (Some(0), Some(2)), "{json}");
    assert_eq!(json["intervention"], Value::Null);
    let abandon = Command::new(env!("CARGO_BIN_EXE_planlock"))
        .args(["abandon", "--session", "tenant-7/conv-42", "--database", &url])
        .output()
        .unwrap();
    assert_eq!(abandon.status.code(), Some(1), "nothing is paused");
    // The session's memories and decisions, read from the database as the Retrieve steps would.
    let planlock = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_planlock"))
            .args(args)
            .env("PLANLOCK_DATABASE_URL", &url)
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null))
    };
    let (code, json) =
        planlock(&["memory", "search", "--session", "tenant-7/conv-42", "--format", "json", "key rotation"]);
    assert_eq!((code, json["items"].as_array().map(Vec::len)), (Some(0), Some(2)), "{json}");
    let (code, json) =
        planlock(&["decisions", "--session", "tenant-7/conv-42", "--domain", "security", "--format", "json"]);
    assert_eq!((code, &json["decisions"][0]["id"]), (Some(0), &json!("d-1")), "{json}");
    assert!(String::from_utf8_lossy(&abandon.stderr).contains("session `tenant-7/conv-42`"));
    let db = PgDatabase::connect(&url).unwrap();
    let store = PgSessionStore::open(&db, "tenant-7/conv-42").unwrap();
    assert_eq!(store.load().unwrap().unwrap().cycle, 2);
    assert_eq!(memory_rows(&url, "tenant-7/conv-42"), 2);
    assert_eq!(
        store.load_pin().unwrap().map(|p| serde_json::to_value(p).unwrap()["memory_provider_id"].clone()),
        Some(json!("postgres"))
    );
}

fn the_workers_example_runs_its_queue_to_the_end(server: &PgServer) {
    let url = server.database("example");
    // `cargo test` builds the examples beside the test binaries.
    let deps = std::env::current_exe().unwrap();
    let example = deps.parent().and_then(|d| d.parent()).unwrap().join("examples/workers");
    assert!(
        example.exists(),
        "{} is not built: `cargo test` builds it; alone, `cargo build --example workers --features postgres`",
        example.display()
    );
    let out = Command::new(&example).args([url.as_str(), "3", "6", "4"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("3 workers ran 6 sessions x 4 cycles"), "{said}");
    assert!(said.contains("6 sessions stored, 24 memories; 0 worker(s) failed"), "{said}");
}

// ---------------------------------------------------------------- the harness

type Test = fn(&PgServer);

/// A worker keeps many sessions open at once (each under its lease) on a pool of two
/// connections: a session holds a connection only while it reads or writes.
fn many_open_sessions_share_a_small_pool(server: &PgServer) {
    let url = server.database("small_pool");
    let options = PgOptions { connect_timeout: Duration::from_secs(2), max_connections: 2 };
    let db = PgDatabase::connect_with(&url, options).unwrap();
    let fx = fixture();
    let mut runtimes: Vec<WorkerRuntime> = keys("pool", 12)
        .iter()
        .map(|key| {
            let store = PgSessionStore::open(&db, key).unwrap_or_else(|e| panic!("{key}: {e}"));
            boot(&db, &worker_env_for(&url, &fx, 30_000), key, store).unwrap()
        })
        .collect();
    for round in 1..=2 {
        for runtime in &mut runtimes {
            assert_eq!(run(runtime), Ok(round));
        }
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let held: i64 =
        client.query_one("SELECT count(*) FROM planlock_sessions WHERE lease_owner IS NOT NULL", &[]).unwrap().get(0);
    assert_eq!(held, 12, "every session is still leased to this worker");
}

/// Sessions in the database run from async code on tokio, as in a server built on it: the
/// synchronous client is never called on the runtime's own thread (it would panic there). Twelve
/// sessions run at once on one thread and a pool of two connections, through their first cycles
/// (which make synchronous calls on that thread) and the next: the cycles held open never take
/// the last connection, so nothing waits on a thread that is itself waiting.
fn cycles_run_inside_a_tokio_runtime(server: &PgServer) {
    let url = server.database("on_tokio");
    let options = PgOptions { connect_timeout: Duration::from_secs(2), max_connections: 2 };
    let db = PgDatabase::connect_with(&url, options).unwrap();
    let fx = fixture();
    let env = worker_env_for(&url, &fx, 30_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let tasks: Vec<_> = keys("tokio", 12)
        .into_iter()
        .map(|key| {
            let store = PgSessionStore::open(&db, &key).unwrap();
            let mut runtime = boot(&db, &env, &key, store).unwrap();
            local.spawn_local(async move {
                for _ in 0..2 {
                    let outcome = runtime.run_cycle().await;
                    assert!(matches!(outcome, Ok(RunOutcome::Completed(_))), "{key}: {outcome:?}");
                }
                runtime.cycle()
            })
        })
        .collect();
    let cycles = local.block_on(&rt, async {
        let mut cycles = Vec::new();
        for task in tasks {
            cycles.push(task.await.unwrap());
        }
        cycles
    });
    assert_eq!(cycles, vec![2; 12]);
}

/// Rows a session's cycles wrote: memories, and keyed writes (decision, evidence, link).
fn written_rows(url: &str, key: &str) -> (i64, i64) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut count = |table: &str| -> i64 {
        client.query_one(&format!("SELECT count(*) FROM {table} WHERE namespace = $1"), &[&key]).unwrap().get(0)
    };
    (count("planlock_memories"), count("planlock_writes"))
}

/// A cycle's store writes and its session save are one transaction (CONTRACT §13): a worker
/// killed at the save leaves none of that cycle's writes; a cycle that fails after some writes
/// leaves none either, and holds no transaction open.
fn a_cycles_writes_are_durable_with_its_save_or_not_at_all(server: &PgServer) {
    let url = server.database("one_transaction");
    let fx = fixture();
    let key = "atomic-1".to_owned();
    let mut child = spawn_worker("die-before-save", &url, &fx, std::slice::from_ref(&key), 500);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the worker died at its second save");
    let one_cycle = written_rows(&url, &key);
    assert_eq!(one_cycle.0, 1, "the memory of cycle 1 only: cycle 2's went with its save");
    assert!(one_cycle.1 >= 1, "cycle 1's keyed writes are there: {one_cycle:?}");
    // The next worker takes the session over (the dead one's lease runs out) and redoes cycle 2.
    std::thread::sleep(Duration::from_millis(700));
    let db = PgDatabase::connect(&url).unwrap();
    let env = worker_env_for(&url, &fx, 30_000);
    let mut runtime = boot(&db, &env, &key, PgSessionStore::open(&db, &key).unwrap()).unwrap();
    assert_eq!(run(&mut runtime), Ok(2));
    assert_eq!(written_rows(&url, &key), (2, 2 * one_cycle.1), "cycle 2 written once, by its re-run");

    // A cycle failing at its last store write: the writes before it are rolled back at once.
    let manifest = BundleManifest::default_shared_bundle();
    let resolved = StrategyResolver::default().resolve_in_database(&manifest, &db, "atomic-2").unwrap();
    let mut failing = Runtime::builder(&env.policy, env.plan.clone(), PgSessionStore::open(&db, "atomic-2").unwrap())
        .handlers(
            Demo::new().failing([StepType::LinkDecisionEvidence]).with_store(&StoreHandlers::new(resolved)).boxed(),
        )
        .bundle(manifest)
        .boot()
        .unwrap();
    assert!(failing.run_cycle_blocking().is_err());
    assert_eq!(written_rows(&url, "atomic-2"), (0, 0));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let open: i64 = client
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(open, 0, "no transaction is left open by the failed cycle");
    drop(failing);
}

const TESTS: &[(&str, Test)] = &[
    (
        "a_cycles_writes_are_durable_with_its_save_or_not_at_all",
        a_cycles_writes_are_durable_with_its_save_or_not_at_all,
    ),
    ("cycles_run_inside_a_tokio_runtime", cycles_run_inside_a_tokio_runtime),
    ("many_open_sessions_share_a_small_pool", many_open_sessions_share_a_small_pool),
    (
        "migrations_are_idempotent_concurrent_and_refuse_a_newer_schema",
        migrations_are_idempotent_concurrent_and_refuse_a_newer_schema,
    ),
    ("the_storage_ports_pass_the_conformance_suite", the_storage_ports_pass_the_conformance_suite),
    ("a_search_past_its_deadline_is_cancelled_by_the_server", a_search_past_its_deadline_is_cancelled_by_the_server),
    (
        "the_lease_refuses_a_second_worker_and_fences_a_stalled_one",
        the_lease_refuses_a_second_worker_and_fences_a_stalled_one,
    ),
    ("the_cli_runs_and_resumes_a_session_in_the_database", the_cli_runs_and_resumes_a_session_in_the_database),
    (
        "bad_connections_fail_clearly_and_quickly_without_the_password",
        bad_connections_fail_clearly_and_quickly_without_the_password,
    ),
    (
        "a_stopped_worker_is_taken_over_and_refused_when_it_continues",
        a_stopped_worker_is_taken_over_and_refused_when_it_continues,
    ),
    ("the_workers_example_runs_its_queue_to_the_end", the_workers_example_runs_its_queue_to_the_end),
    ("eight_workers_run_64_sessions_20_cycles_each_exactly", eight_workers_run_64_sessions_20_cycles_each_exactly),
    (
        "workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes",
        workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes,
    ),
    (
        "a_server_restart_fails_cycles_with_their_kind_and_loses_nothing",
        a_server_restart_fails_cycles_with_their_kind_and_loses_nothing,
    ),
];

fn main() {
    if let Ok(mode) = std::env::var("PLANLOCK_PG_WORKER") {
        return worker(&mode);
    }
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let Some(server) = PgServer::start() else {
        assert!(
            std::env::var("CI").is_err(),
            "no PostgreSQL server is installed; .ci/run installs the `postgresql` package"
        );
        eprintln!(
            "\n    ==================== SKIPPED ====================\n    \
             No PostgreSQL server (/usr/lib/postgresql/*/bin/pg_ctl): the PostgreSQL tests did not run.\n    \
             Install Debian's `postgresql` package (`.ci/run` does) to run them.\n    \
             =================================================\n"
        );
        return;
    };
    let mut failed = Vec::new();
    for (name, test) in
        TESTS.iter().filter(|(name, _)| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())))
    {
        println!("test {name} ...");
        let started = Instant::now();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&server))) {
            Ok(()) => println!("test {name} ... ok ({:.1} s)", started.elapsed().as_secs_f64()),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    drop(server);
    if !failed.is_empty() {
        eprintln!("failed: {failed:?}");
        std::process::exit(101);
    }
}
