//! Token budgets in the database (CONTRACT §20): 64 concurrent cycles on 4 workers against a
//! budget that fits exactly 10 calls make exactly 10 model calls; a killed worker's reservation
//! is charged once its lease runs out; a tenant's budget is its own.

use super::*;
use crate::common::chat::calls;
use planlock::block_on;
use planlock::budget::TokenBudget;
use planlock::handlers::{ModelConfig, OpenAiModel};
use planlock::session::postgres::PgBudget;
use planlock::steps::LLMCall;
use std::sync::Arc;
use wiremock::MockServer;

/// Each call asks for this many tokens to be written (`max_tokens`); the server reports
/// [`REPORTED`] used, more than any estimate, so a settlement never frees tokens.
const MAX_TOKENS: u64 = 10_000;
const REPORTED: u64 = 10_100;

/// The killed worker's lease.
const LEASE_MS: u64 = 3_000;

/// A model server on 127.0.0.1 answering every chat request after `delay`, counting them; the
/// tokio runtime that serves it.
fn counting_model(delay: Duration) -> (tokio::runtime::Runtime, MockServer) {
    crate::common::chat::counting(200, delay, (REPORTED - MAX_TOKENS, MAX_TOKENS))
}

/// The fixture's plan, its model call asking for [`MAX_TOKENS`].
fn budget_plan(fx: &Fixture) -> ValidPlan {
    let mut v: Value = serde_json::from_str(&fx.plan.to_json()).unwrap();
    for step in v["steps"].as_array_mut().unwrap() {
        if step["type"] == "LLMCall" {
            step["payload"]["config"] = json!({ "max_tokens": MAX_TOKENS });
        }
    }
    ValidPlan::from_value(&v).unwrap()
}

/// A runtime of `store`'s session whose `LLMCall` goes to `model_url`, under the session's budget.
fn budgeted(fx: &Fixture, plan: &ValidPlan, store: PgSessionStore, model_url: &str) -> WorkerRuntime {
    with_model(fx, plan, store, model_url, false)
}

/// [`budgeted`], the `SummarizeMemory` step going to the model too when `summary` says so.
fn with_model(fx: &Fixture, plan: &ValidPlan, store: PgSessionStore, model_url: &str, summary: bool) -> WorkerRuntime {
    let manifest = BundleManifest::default_shared_bundle();
    let resolved = StrategyResolver::default().resolve_for_session(&manifest, store.session()).unwrap();
    let model = OpenAiModel::new(ModelConfig::new(model_url, "m"));
    let budget: Arc<dyn TokenBudget> = Arc::new(PgBudget::of(&store));
    let handlers = Demo::new().with_store(&StoreHandlers::new(resolved)).on::<LLMCall>(model.clone());
    let handlers = match summary {
        true => handlers.on::<planlock::steps::SummarizeMemory>(model).boxed(),
        false => handlers.boxed(),
    };
    Runtime::builder(&fx.policy, plan.clone(), store)
        .handlers(handlers)
        .bundle(manifest)
        .budget(budget)
        .boot_blocking()
        .unwrap()
}

/// What budget `prefix` has used and holds, as `budget show` reads it.
fn budget_row(url: &str, prefix: &str) -> (i64, i64) {
    let db = PgDatabase::connect(url).unwrap();
    let shown = block_on(planlock::session::postgres::budgets(&db)).unwrap();
    let b = shown.into_iter().find(|b| b.prefix == prefix).unwrap();
    (i64::try_from(b.used).unwrap(), i64::try_from(b.reserved).unwrap())
}

pub(super) fn sixty_four_cycles_on_four_workers_make_exactly_the_calls_the_budget_fits(server: &PgServer) {
    let url = server.database("budget_fleet");
    let fx = fixture();
    let plan = budget_plan(&fx);
    let (rt, model) = counting_model(Duration::from_millis(300));
    let model_url = format!("{}/v1", model.uri());
    let setup = PgDatabase::connect(&url).unwrap();
    block_on(planlock::session::postgres::set_budget(&setup, "", 10 * REPORTED, Duration::from_secs(86_400))).unwrap();

    // 4 workers (a pool each), 16 sessions each, every cycle started at once.
    let start = Arc::new(std::sync::Barrier::new(64));
    let outcomes: Vec<Result<u64, String>> = std::thread::scope(|scope| {
        let mut running = Vec::new();
        for worker in 0..4 {
            let db = PgDatabase::connect(&url).unwrap();
            for session in 0..16 {
                let (db, fx, plan, model_url, start) = (db.clone(), &fx, &plan, &model_url, start.clone());
                running.push(scope.spawn(move || {
                    let store = PgSessionStore::open(&db, &format!("w{worker}-s{session:02}")).unwrap();
                    let mut runtime = budgeted(fx, plan, store, model_url);
                    start.wait();
                    run(&mut runtime)
                }));
            }
        }
        running.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let completed = outcomes.iter().filter(|o| o.is_ok()).count();
    let refused: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert_eq!(calls(&rt, &model), 10, "the model was called exactly as often as the budget fits");
    assert_eq!(completed, 10, "{refused:?}");
    for line in &refused {
        assert!(line.starts_with("budget-exhausted CycleFail LLMCall |"), "{line}");
        assert!(line.contains("it resets at") && line.contains(&format!("of {}", 10 * REPORTED)), "{line}");
    }
    // Every reservation settled to what the server reported; nothing held.
    assert_eq!(budget_row(&url, ""), (i64::try_from(10 * REPORTED).unwrap(), 0));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let held: i64 =
        client.query_one("SELECT count(*) FROM planlock_budget_holds WHERE state = 'held'", &[]).unwrap().get(0);
    assert_eq!(held, 0, "every reservation is settled");
    // A refused session runs its cycle again later: refused again, still nothing sent.
    let store = PgSessionStore::open(&setup, "w0-late").unwrap();
    let mut runtime = budgeted(&fx, &plan, store, &model_url);
    let again = run(&mut runtime).unwrap_err();
    assert!(again.starts_with("budget-exhausted"), "{again}");
    assert_eq!(calls(&rt, &model), 10);
}

pub(super) fn a_killed_workers_reservation_is_charged_when_its_lease_runs_out(server: &PgServer) {
    let url = server.database("budget_killed");
    let fx = fixture();
    let plan = budget_plan(&fx);
    let plan_file = fx.plan_file.with_file_name("budget-plan.json");
    std::fs::write(&plan_file, plan.to_json()).unwrap();
    // A server that takes a minute: the worker dies with its call in flight.
    let (rt, slow) = counting_model(Duration::from_secs(60));
    let setup = PgDatabase::connect(&url).unwrap();
    block_on(planlock::session::postgres::set_budget(&setup, "", 2 * REPORTED, Duration::from_secs(86_400))).unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("PLANLOCK_PG_WORKER", "budget-call")
        .env("PLANLOCK_PG_URL", &url)
        .env("PLANLOCK_PG_POLICY", &fx.policy)
        .env("PLANLOCK_PG_PLAN", &plan_file)
        .env("PLANLOCK_PG_LEASE_MS", LEASE_MS.to_string())
        .env("PLANLOCK_PG_KEYS", "doomed")
        .env("PLANLOCK_PG_MODEL", format!("{}/v1", slow.uri()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while calls(&rt, &slow) == 0 {
        assert!(Instant::now() < deadline, "the worker never called the model");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, reserved) = budget_row(&url, "");
    assert!(reserved > 0, "the call in flight holds its reservation");
    child.kill().unwrap();
    child.wait().unwrap();

    let killed = Instant::now();

    // While the dead worker's lease runs, its reservation stands: one more call fits, the next
    // does not.
    let (rt2, fast) = counting_model(Duration::ZERO);
    let fast_url = format!("{}/v1", fast.uri());
    let cycle = |key: &str| {
        let store = PgSessionStore::open(&setup, key).unwrap();
        let mut runtime = budgeted(&fx, &plan, store, &fast_url);
        run(&mut runtime)
    };
    assert_eq!(cycle("alive-0"), Ok(1));
    let refused = cycle("alive-1").unwrap_err();
    assert!(refused.starts_with("budget-exhausted"), "{refused}");
    assert!(refused.contains(&format!("({reserved} reserved by calls in flight)")), "{refused}");
    assert!(killed.elapsed() < Duration::from_millis(LEASE_MS), "the test ran past the lease");
    // Once the lease has run out, the next reservation charges it whole (its call was sent:
    // over-charged by a crash, never overspent), and the call it could not cover is refused.
    std::thread::sleep(Duration::from_millis(LEASE_MS + 200));
    let refused = cycle("alive-1").unwrap_err();
    assert!(refused.starts_with("budget-exhausted"), "the dead worker's call is charged: {refused}");
    assert_eq!(calls(&rt2, &fast), 1);
    assert_eq!(budget_row(&url, ""), (reserved + i64::try_from(REPORTED).unwrap(), 0));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let state: String =
        client.query_one("SELECT state FROM planlock_budget_holds WHERE session_key = 'doomed'", &[]).unwrap().get(0);
    assert_eq!(state, "charged");
}

/// The worker of [`a_killed_workers_reservation_is_charged_when_its_lease_runs_out`]: one cycle
/// of its session, its model call to `PLANLOCK_PG_MODEL`.
pub(super) fn budget_call_worker(env: &WorkerEnv, db: &PgDatabase) {
    let fx = Fixture {
        _dir: tempfile::tempdir().unwrap(),
        policy: env.policy.clone(),
        plan_file: PathBuf::new(),
        plan: env.plan.clone(),
    };
    let store = PgSessionStore::open_with_lease(db, &env.keys[0], env.lease).unwrap();
    let model = std::env::var("PLANLOCK_PG_MODEL").unwrap();
    let mut runtime = budgeted(&fx, &env.plan, store, &model);
    let _ = run(&mut runtime);
}

pub(super) fn a_tenants_budget_is_its_own_and_a_prefix_budget_narrows_it(server: &PgServer) {
    let url = app_database(server, "budget_tenants");
    let fx = fixture();
    let plan = budget_plan(&fx);
    let (rt, model) = counting_model(Duration::ZERO);
    let model_url = format!("{}/v1", model.uri());
    let acme = tenant_db(&url, "acme");
    let globex = tenant_db(&url, "globex");
    // acme: two calls for the tenant, one for its `team-a/` sessions; globex: none set.
    block_on(planlock::session::postgres::set_budget(&acme, "", 2 * REPORTED, Duration::from_secs(3_600))).unwrap();
    block_on(planlock::session::postgres::set_budget(&acme, "team-a/", REPORTED, Duration::from_secs(3_600))).unwrap();
    let cycle = |db: &PgDatabase, key: &str| {
        let mut runtime = budgeted(&fx, &plan, PgSessionStore::open(db, key).unwrap(), &model_url);
        run(&mut runtime)
    };
    assert_eq!(cycle(&acme, "team-a/1"), Ok(1));
    let refused = cycle(&acme, "team-a/2").unwrap_err();
    assert!(refused.starts_with("budget-exhausted") && refused.contains("sessions `team-a/…`"), "{refused}");
    assert_eq!(cycle(&acme, "team-b/1"), Ok(1), "the tenant's budget had one call left");
    let refused = cycle(&acme, "team-b/2").unwrap_err();
    assert!(refused.contains("budget for every session"), "{refused}");
    for i in 0..3 {
        assert_eq!(cycle(&globex, &format!("team-a/{i}")), Ok(1), "globex has no budget: acme's is not its");
    }
    assert_eq!(calls(&rt, &model), 5);
    let shown = block_on(planlock::session::postgres::budgets(&globex)).unwrap();
    assert!(shown.is_empty(), "globex sees no budget of acme's: {shown:?}");
    let shown = block_on(planlock::session::postgres::budgets(&acme)).unwrap();
    assert_eq!(shown.iter().map(|b| (b.prefix.as_str(), b.left())).collect::<Vec<_>>(), [("", 0), ("team-a/", 0)]);

    // A day instead of an hour, with a call in flight: the new period starts at midnight UTC,
    // and the call's reservation goes with it and settles.
    let store = PgSessionStore::open(&acme, "team-c/1").unwrap();
    let budget = PgBudget::of(&store);
    block_on(planlock::session::postgres::set_budget(&acme, "team-c/", 100, Duration::from_secs(3_600))).unwrap();
    let id = uuid::Uuid::new_v4();
    let ask = planlock::budget::TokenAsk { id, tokens: 60, cycle: 1, step_id: "llm" };
    // The tenant-wide budget is spent: lift it for this.
    block_on(planlock::session::postgres::remove_budget(&acme, "")).unwrap();
    block_on(budget.reserve(ask)).unwrap();
    block_on(planlock::session::postgres::set_budget(&acme, "team-c/", 100, Duration::from_secs(86_400))).unwrap();
    let team_c = |db: &PgDatabase| {
        let shown = block_on(planlock::session::postgres::budgets(db)).unwrap();
        shown.into_iter().find(|b| b.prefix == "team-c/").unwrap()
    };
    let moved = team_c(&acme);
    assert!(moved.resets_at.ends_with("T00:00:00Z") && moved.reserved == 60, "{moved:?}");
    let charge = planlock::budget::Charge { id, reserved: 60, used: 42 };
    block_on(budget.settle(&[charge], None)).unwrap();
    let settled = team_c(&acme);
    assert_eq!((settled.used, settled.reserved), (42, 0));
    // An hour again: what this period used is kept.
    block_on(planlock::session::postgres::set_budget(&acme, "team-c/", 100, Duration::from_secs(3_600))).unwrap();
    assert_eq!(team_c(&acme).used, 42);

    // Two reservations settled in one call: each charged what its own call used.
    let asks = [(uuid::Uuid::new_v4(), 20, 5), (uuid::Uuid::new_v4(), 30, 17)];
    for (id, tokens, _) in asks {
        block_on(budget.reserve(planlock::budget::TokenAsk { id, tokens, cycle: 2, step_id: "llm" })).unwrap();
    }
    assert_eq!(team_c(&acme).reserved, 50);
    let charges = asks.map(|(id, reserved, used)| planlock::budget::Charge { id, reserved, used });
    block_on(budget.settle(&charges, None)).unwrap();
    let settled = team_c(&acme);
    assert_eq!((settled.used, settled.reserved), (42 + 5 + 17, 0));
}

/// What a budget costs a cycle on a warm worker: no round trip. The cycle's reservation goes
/// with its first read (the memory search's batch) and its settlement with the save's batch: 2
/// round trips, as a cycle without a budget takes (CONTRACT §20: a cycle reserves once).
pub(super) fn a_budget_costs_a_warm_cycle_no_round_trip(server: &PgServer) {
    let url = server.database("budget_trips");
    let fx = fixture();
    let plan = budget_plan(&fx);
    let (_rt, model) = counting_model(Duration::ZERO);
    let model_url = format!("{}/v1", model.uri());
    let db = PgDatabase::connect(&url).unwrap();
    block_on(planlock::session::postgres::set_budget(&db, "", 1_000 * REPORTED, Duration::from_secs(86_400))).unwrap();
    let mut runtime = budgeted(&fx, &plan, PgSessionStore::open(&db, "trips").unwrap(), &model_url);
    let mut trips = Vec::new();
    for _ in 0..6 {
        let before = db.round_trips();
        assert_eq!(run(&mut runtime), Ok(u64::try_from(trips.len()).unwrap() + 1));
        trips.push(db.round_trips() - before);
    }
    assert_eq!(trips[2..], [2, 2, 2, 2], "round trips per cycle: {trips:?}");
    assert_eq!(budget_row(&url, ""), (i64::try_from(6 * REPORTED).unwrap(), 0));
}

/// A cycle with two model calls against a budget that covers the first but not both sends
/// nothing, however often it runs (CONTRACT §20: the cycle reserves both at its start). On the
/// old code each run spent its first call and failed at the second.
pub(super) fn a_cycle_the_budget_cannot_cover_sends_nothing(server: &PgServer) {
    let url = server.database("budget_cycle");
    let fx = fixture();
    let plan = budget_plan(&fx);
    let (rt, model) = counting_model(Duration::ZERO);
    let model_url = format!("{}/v1", model.uri());
    let db = PgDatabase::connect(&url).unwrap();
    let set = |tokens: u64| {
        block_on(planlock::session::postgres::set_budget(&db, "", tokens, Duration::from_secs(86_400))).unwrap();
    };
    // What the cycle reserves, as a budget of one token's refusal says it.
    set(1);
    let mut runtime = with_model(&fx, &plan, PgSessionStore::open(&db, "probe").unwrap(), &model_url, true);
    let refused = run(&mut runtime).unwrap_err();
    let asked = refused.split("nothing of which was sent: ").nth(1).and_then(|m| m.split(' ').next());
    let asked: u64 = asked.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{refused}"));
    assert!(asked > MAX_TOKENS, "the LLMCall's and the summary's estimates: {asked}");
    set(asked - 1);
    let mut runtime = with_model(&fx, &plan, PgSessionStore::open(&db, "short").unwrap(), &model_url, true);
    for _ in 0..3 {
        let refused = run(&mut runtime).unwrap_err();
        assert!(refused.starts_with("budget-exhausted CycleFail LLMCall"), "{refused}");
    }
    assert_eq!(calls(&rt, &model), 0, "not the first call either");
    assert_eq!(budget_row(&url, ""), (0, 0));
    // With room for both, the cycle runs and is charged what the server reported.
    set(asked);
    assert_eq!(run(&mut runtime), Ok(1));
    assert_eq!(calls(&rt, &model), 2);
    assert_eq!(budget_row(&url, "").0, i64::try_from(REPORTED + crate::common::chat::SUMMARY_REPORTED).unwrap());
}
