//! A planlock worker process of the fleet bench: claims its sessions, boots a runtime for each
//! and keeps it, then drives them all at once on one thread for the window.

use std::cell::RefCell;
use std::path::Path;
use std::process::Command;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use planlock::ValidPlan;
use planlock::budget::TokenBudget;
use planlock::demo::Demo;
use planlock::handler::Boxed;
use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::pg::{PgDatabase, PgOptions};
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::FileSessionStore;
use planlock::session::SessionStore;
use planlock::session::postgres::{PgBudget, PgSessionStore};
use planlock::steps::{LLMCall, SummarizeMemory};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::provider::ResolvedStore;
use serde_json::json;

use super::{Backend, Config};

/// Connections per worker: a cycle holds one from its first store write to its save, and up to
/// all but one of them are held so at once. 16 keep two cores busy (measured: 32 gave the same
/// cycles/s at latency 0 and 500 ms, and cost each worker 1 MiB more).
const POOL: u32 = 16;

/// How many sessions make their first cycle at once before the window (sessions do not all
/// arrive in the same instant).
const WARM_AT_ONCE: usize = 64;

const QUEUE: &str = "CREATE TABLE IF NOT EXISTS planlock_fleet_queue (
    tag text NOT NULL, session_key text NOT NULL, worker integer, PRIMARY KEY (tag, session_key))";

/// The demo plan, its RepoScan reading the policy folder, written beside it.
pub fn plan_file(dir: &Path, policy: &Path) -> std::path::PathBuf {
    let mut v: serde_json::Value = serde_json::from_str(super::common::DEMO_PLAN).unwrap();
    v["steps"][0]["payload"]["repoPath"] = json!(policy.display().to_string());
    let plan = ValidPlan::from_value(&v).unwrap();
    let file = dir.join("plan.json");
    std::fs::write(&file, plan.to_json()).unwrap();
    file
}

/// Puts the configuration's S sessions in the queue.
pub fn fill_queue(url: &str, tag: &str, sessions: usize) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.batch_execute(QUEUE).unwrap();
    let keys: Vec<String> = (0..sessions).map(|i| format!("{tag}/session-{i:04}")).collect();
    client
        .execute("INSERT INTO planlock_fleet_queue (tag, session_key) SELECT $1, unnest($2::text[])", &[&tag, &keys])
        .unwrap();
}

/// The command that starts worker `index` of `config`.
#[allow(clippy::too_many_arguments)]
pub fn command(
    config: Config,
    index: usize,
    tag: &str,
    place: &str,
    model_url: &str,
    policy: &Path,
    plan: &Path,
    window: Duration,
) -> Command {
    let mut cmd = match std::env::var("FLEET_WRAP") {
        Ok(wrap) => {
            let mut cmd = Command::new(wrap);
            cmd.arg(super::bench_binary());
            cmd
        }
        Err(_) => Command::new(super::bench_binary()),
    };
    cmd.env("PLANLOCK_FLEET_WORKER", config.backend.name())
        .env("FLEET_PLACE", place)
        .env("FLEET_TAG", tag)
        .env("FLEET_INDEX", index.to_string())
        .env("FLEET_WORKERS", config.workers.to_string())
        .env("FLEET_SESSIONS", config.sessions.to_string())
        .env("FLEET_MODEL_URL", model_url)
        .env("FLEET_POLICY", policy)
        .env("FLEET_PLAN", plan)
        .env("FLEET_WINDOW_MS", window.as_millis().to_string())
        .env("FLEET_LATENCY_MS", config.latency_ms.to_string());
    cmd
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn number(name: &str) -> usize {
    var(name).parse().unwrap()
}

/// This process's resident set now, in KiB (`VmRSS`).
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// A figure of this process's `/proc/self/status`, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

/// This process's CPU seconds, and its peak resident set (KiB) so far: `VmHWM`, the peak of this
/// program's own memory (`ru_maxrss` would count the parent's, copied at the fork).
pub fn usage() -> (f64, u64) {
    // SAFETY: `getrusage` writes only into the struct it is given.
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (seconds(u.ru_utime) + seconds(u.ru_stime), status_kib("VmHWM:"))
}

/// The worker's entry point.
pub fn main(backend: &str) {
    // OTLP export when the bench asks for it (`OTEL_EXPORTER_OTLP_ENDPOINT`), as the CLI does;
    // kept for the process's life (it ends with `exit`, whatever is still queued dropped).
    let telemetry = planlock::telemetry::Telemetry::from_env().unwrap();
    if let Some(t) = &telemetry {
        use tracing_subscriber::layer::SubscriberExt;
        t.install();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(t.layer())).unwrap();
    }
    std::mem::forget(telemetry);
    let backend = if backend == "postgres" { Backend::Postgres } else { Backend::Files };
    let plan = ValidPlan::from_str(&std::fs::read_to_string(var("FLEET_PLAN")).unwrap()).unwrap();
    let policy = std::path::PathBuf::from(var("FLEET_POLICY"));
    let (index, workers, sessions) = (number("FLEET_INDEX"), number("FLEET_WORKERS"), number("FLEET_SESSIONS"));
    let model = OpenAiModel::new(
        ModelConfig::new(var("FLEET_MODEL_URL"), "fleet-mock").api_key("not-a-secret").timeout(Duration::from_secs(30)),
    );
    let window = Duration::from_millis(number("FLEET_WINDOW_MS") as u64);
    let place = var("FLEET_PLACE");
    match backend {
        Backend::Postgres => {
            // In a tenant when the parent says so (`fleet/tenants.rs`).
            let tenant = std::env::var("FLEET_TENANT").ok();
            let db =
                PgDatabase::connect_with(&place, PgOptions { max_connections: POOL, tenant, ..PgOptions::default() })
                    .unwrap();
            let mut client = postgres::Client::connect(&place, postgres::NoTls).unwrap();
            let share = sessions.div_ceil(workers) as i64;
            // The worker's share, claimed in one transaction; it keeps them for the whole run.
            let keys: Vec<String> = client
                .query(
                    "UPDATE planlock_fleet_queue SET worker = $1 WHERE (tag, session_key) IN (
                         SELECT tag, session_key FROM planlock_fleet_queue WHERE tag = $2 AND worker IS NULL
                         ORDER BY session_key LIMIT $3 FOR UPDATE SKIP LOCKED)
                     RETURNING session_key",
                    &[&(index as i32), &var("FLEET_TAG"), &share],
                )
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect();
            drop(client);
            let base = rss_kib();
            let manifest = BundleManifest::default_shared_bundle();
            let runtimes = keys
                .iter()
                .map(|key| {
                    let store = PgSessionStore::open(&db, key).unwrap();
                    let storage = StoreHandlers::new(
                        StrategyResolver::default().resolve_for_session(&manifest, store.session()).unwrap(),
                    );
                    // Under the database's budgets when the parent says so (`fleet/switches.rs`).
                    let budget: Option<Arc<dyn TokenBudget>> =
                        std::env::var_os("FLEET_BUDGET").map(|_| Arc::new(PgBudget::of(&store)) as _);
                    boot(&policy, &plan, store, &storage, &model, &manifest, budget)
                })
                .collect();
            drive(runtimes, base, window, || Some(db.round_trips()));
        }
        Backend::Files => {
            let base = rss_kib();
            let manifest = BundleManifest::default_bundle();
            let runtimes = (index..sessions)
                .step_by(workers)
                .map(|i| {
                    let root = Path::new(&place).join(format!("session-{i:04}"));
                    std::fs::create_dir_all(&root).unwrap();
                    let store = FileSessionStore::open(&root).unwrap();
                    let storage = StoreHandlers::new(StrategyResolver::default().resolve(&manifest, &root).unwrap());
                    boot(&policy, &plan, store, &storage, &model, &manifest, None)
                })
                .collect();
            drive(runtimes, base, window, || None);
        }
    }
}

fn boot<S: SessionStore + 'static>(
    policy: &Path,
    plan: &ValidPlan,
    store: S,
    storage: &StoreHandlers<ResolvedStore>,
    model: &OpenAiModel,
    manifest: &BundleManifest,
    budget: Option<Arc<dyn TokenBudget>>,
) -> Runtime<S, Boxed> {
    let handlers =
        Demo::new().with_store(storage).on::<LLMCall>(model.clone()).on::<SummarizeMemory>(model.clone()).boxed();
    let runtime = Runtime::builder(policy, plan.clone(), store).handlers(handlers).bundle(manifest.clone());
    match budget {
        Some(budget) => runtime.budget(budget),
        None => runtime,
    }
    .boot_blocking()
    .unwrap()
}

/// Drives every session at once: cycles start until the window ends, then the cycles in flight
/// finish (so commits and CPU can be divided by whole cycles); reports and exits without
/// dropping anything (the leases run out; their release would count as the run's commits).
/// `round_trips` counts the worker's round trips to PostgreSQL (none on files).
fn drive<S: SessionStore + 'static>(
    runtimes: Vec<Runtime<S, Boxed>>,
    base_kib: u64,
    window: Duration,
    round_trips: impl Fn() -> Option<u64>,
) -> ! {
    let sessions = runtimes.len();
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let local = tokio::task::LocalSet::new();
    // A first cycle for every session before the window, WARM_AT_ONCE at a time: the sessions
    // exist, the pools hold their connections, and the window measures the steady state.
    let mut runtimes = runtimes;
    let mut warmed = Vec::with_capacity(runtimes.len());
    while !runtimes.is_empty() {
        let batch: Vec<Runtime<S, Boxed>> = runtimes.drain(..WARM_AT_ONCE.min(runtimes.len())).collect();
        let tasks: Vec<_> = batch
            .into_iter()
            .map(|mut runtime| {
                local.spawn_local(async move {
                    let outcome = runtime.run_cycle().await;
                    if let Err(e) = &outcome {
                        eprintln!("worker {}: a first cycle failed: {e}", std::process::id());
                    }
                    (runtime, matches!(outcome, Ok(RunOutcome::Completed(_))))
                })
            })
            .collect();
        local.block_on(&rt, async {
            for task in tasks {
                let (runtime, ok) = task.await.unwrap();
                assert!(ok, "a session's first cycle failed");
                warmed.push(runtime);
            }
        });
    }
    let runtimes = warmed;
    println!("READY");
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).unwrap_or(0) == 0 {
        // The bench gave up on this configuration.
        std::process::exit(0);
    }
    let (cpu_before, _) = usage();
    let trips_before = round_trips();
    let end = Instant::now() + window;
    // (wall ms, ended within the window) of every completed cycle.
    let walls = Rc::new(RefCell::new(Vec::new()));
    let errors = Rc::new(RefCell::new(0u64));
    let mut tasks = Vec::new();
    // Sessions do not arrive together: each starts at its own point of one cycle's model time.
    let period = Duration::from_millis(2 * number("FLEET_LATENCY_MS") as u64);
    let n = runtimes.len().max(1) as u32;
    for (i, mut runtime) in runtimes.into_iter().enumerate() {
        let (walls, errors) = (walls.clone(), errors.clone());
        let offset = period * i as u32 / n;
        tasks.push(local.spawn_local(async move {
            tokio::time::sleep(offset).await;
            while Instant::now() < end {
                let started = Instant::now();
                match runtime.run_cycle().await {
                    Ok(RunOutcome::Completed(_)) => {
                        let in_window = Instant::now() <= end;
                        walls.borrow_mut().push((started.elapsed().as_secs_f64() * 1e3, in_window));
                    }
                    Ok(RunOutcome::Paused { .. } | RunOutcome::Abandoned(_)) => {
                        *errors.borrow_mut() += 1;
                        break;
                    }
                    Err(e) => {
                        if *errors.borrow() == 0 {
                            eprintln!("worker {}: a cycle failed: {e}", std::process::id());
                        }
                        *errors.borrow_mut() += 1;
                        break;
                    }
                }
            }
            // Kept, not dropped: a dropped session store gives its lease back, a commit that is
            // no cycle's.
            runtime
        }));
    }
    let mut kept = Vec::with_capacity(tasks.len());
    local.block_on(&rt, async {
        for task in tasks {
            kept.extend(task.await);
        }
    });
    let (cpu_after, peak) = usage();
    let trips = round_trips().zip(trips_before).map(|(after, before)| after - before);
    let walls = walls.borrow();
    let result = json!({
        "cycles": walls.iter().filter(|w| w.1).count(), "all_cycles": walls.len(),
        "walls_ms": walls.iter().map(|w| w.0).collect::<Vec<_>>(), "cpu_s": cpu_after - cpu_before,
        "peak_kib": peak, "base_kib": base_kib, "sessions": sessions, "errors": *errors.borrow(),
        "round_trips": trips,
    });
    println!("RESULT {result}");
    // Exits without running destructors: the kept runtimes' leases simply run out.
    std::process::exit(0);
}
