//! Test fixtures: a policy and plan, worker processes and what they say, the rows a run left.

use super::*;
use planlock::block_on;

pub(super) struct Fixture {
    pub(super) _dir: tempfile::TempDir,
    pub(super) policy: PathBuf,
    pub(super) plan_file: PathBuf,
    pub(super) plan: ValidPlan,
}

/// A policy and the demo plan without its RepoScan (cycles stay cheap), timeouts as the demo has them.
pub(super) fn fixture() -> Fixture {
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

pub(super) fn spawn_worker(mode: &str, url: &str, fx: &Fixture, keys: &[String], lease_ms: u64) -> Child {
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
pub(super) fn lines(child: &mut Child) -> mpsc::Receiver<String> {
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

pub(super) fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill").args([sig, &child.id().to_string()]).status().unwrap().success();
    assert!(ok, "kill {sig} failed");
}

pub(super) fn worker_env_for(url: &str, fx: &Fixture, lease_ms: u64) -> WorkerEnv {
    WorkerEnv {
        url: url.to_owned(),
        policy: fx.policy.clone(),
        plan: fx.plan.clone(),
        lease: Duration::from_millis(lease_ms),
        keys: vec![],
    }
}

pub(super) fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// Every record of every session reads back strictly; the session's completed cycles.
pub(super) fn check_rows(db: &PgDatabase, keys: &[String], lease: Duration) -> BTreeMap<String, u64> {
    std::thread::sleep(lease + Duration::from_millis(100));
    let mut cycles = BTreeMap::new();
    for key in keys {
        let store = PgSessionStore::open_with_lease(db, key, lease).unwrap_or_else(|e| panic!("{key}: {e}"));
        let state = block_on(store.records().load()).unwrap_or_else(|e| panic!("{key}: {e}"));
        block_on(store.records().load_intervention()).unwrap();
        block_on(store.records().load_reserved()).unwrap();
        block_on(store.records().load_pin()).unwrap();
        cycles.insert(key.clone(), state.map_or(0, |s| s.cycle));
    }
    cycles
}

pub(super) fn memory_rows(url: &str, key: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query_one("SELECT count(*) FROM planlock_memories WHERE namespace = $1", &[&key]).unwrap().get(0)
}

pub(super) fn pin() -> planlock::session::BundlePinV1 {
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

/// Rows a session's cycles wrote: memories, and keyed writes (decision, evidence, link).
pub(super) fn written_rows(url: &str, key: &str) -> (i64, i64) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut count = |table: &str| -> i64 {
        client.query_one(&format!("SELECT count(*) FROM {table} WHERE namespace = $1"), &[&key]).unwrap().get(0)
    };
    (count("planlock_memories"), count("planlock_writes"))
}
