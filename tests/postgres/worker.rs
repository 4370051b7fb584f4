//! The worker process: the same test binary, run with `PLANLOCK_PG_WORKER`, drives sessions
//! and says what it did on stdout.

use super::*;

/// What a worker needs, from its environment.
pub(super) struct WorkerEnv {
    pub(super) url: String,
    pub(super) policy: PathBuf,
    pub(super) plan: ValidPlan,
    pub(super) lease: Duration,
    pub(super) keys: Vec<String>,
}

pub(super) fn worker_env() -> WorkerEnv {
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
pub(super) fn failure(e: &dyn Failure, step: Option<StepType>) -> String {
    let step = step.map_or("-", StepType::wire_name);
    format!("{} {} {step} | {e}", e.code(), e.kind())
}

/// Boots `key`'s runtime (taking its lease) and runs one cycle: its number, or a failure line.
pub(super) fn one_cycle(db: &PgDatabase, env: &WorkerEnv, key: &str) -> Result<u64, String> {
    let store = PgSessionStore::open_with_lease(db, key, env.lease).map_err(|e| failure(&e, None))?;
    let mut runtime = boot(env, store)?;
    run(&mut runtime)
}

pub(super) type WorkerRuntime = Runtime<PgSessionStore, planlock::handler::Boxed>;

pub(super) fn boot(env: &WorkerEnv, store: PgSessionStore) -> Result<WorkerRuntime, String> {
    let manifest = BundleManifest::default_shared_bundle();
    let resolved = StrategyResolver::default()
        .resolve_for_session(&manifest, store.session())
        .map_err(|e| format!("{} FailFast -", e.code()))?;
    Runtime::builder(&env.policy, env.plan.clone(), store)
        .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
        .bundle(manifest)
        .boot_blocking()
        .map_err(|e| failure(&e, None))
}

pub(super) fn run(runtime: &mut WorkerRuntime) -> Result<u64, String> {
    match runtime.run_cycle_blocking() {
        Ok(RunOutcome::Completed(_)) => Ok(runtime.cycle()),
        Ok(RunOutcome::Paused { .. }) => Err("paused - -".into()),
        Ok(RunOutcome::Abandoned(_)) => Err("abandoned - -".into()),
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

pub(super) fn say(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

pub(super) fn worker(mode: &str) {
    let env = worker_env();
    let db = PgDatabase::connect(&env.url).unwrap_or_else(|e| {
        say(format_args!("CONNECT {}", e.code()));
        std::process::exit(3)
    });
    match mode {
        "budget-call" => budget_call_worker(&env, &db),
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
            let mut runtime = boot(&env, store).unwrap();
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
        // Acts on the recorded decision of the reviewed plan's paused cycle, and dies at
        // `PLANLOCK_PG_POINT`: before the end of its cycle (its writes kept for it), or after
        // it (`after-removal`: the state saved, the outcome logged and the record removed, in
        // one transaction).
        "approved" => {
            let key = &env.keys[0];
            let point = std::env::var("PLANLOCK_PG_POINT").unwrap_or_else(|_| "before-save".into());
            let store = Around::at(PgSessionStore::open_with_lease(&db, key, env.lease).unwrap(), &point, die_at);
            let fx = Fixture {
                _dir: tempfile::tempdir().unwrap(),
                policy: env.policy.clone(),
                plan_file: PathBuf::new(),
                plan: env.plan.clone(),
            };
            let mut runtime = super::approvals::reviewed_runtime(&fx, store, |s| &s.inner);
            let outcome = runtime.run_cycle_blocking();
            say(format_args!("NOT KILLED {outcome:?}"));
        }
        // Two cycles; the second dies (abort) at its save, after all of its store writes.
        "die-before-save" => {
            let key = &env.keys[0];
            let store = PgSessionStore::open_with_lease(&db, key, env.lease).unwrap();
            let manifest = BundleManifest::default_shared_bundle();
            let resolved = StrategyResolver::default().resolve_for_session(&manifest, store.session()).unwrap();
            let store = BeforeSave::new(store, |update: &SessionUpdate| {
                if update.cycle == 2 {
                    say(format_args!("SAVING 2"));
                    std::process::abort();
                }
                Ok(())
            });
            let mut runtime = Runtime::builder(&env.policy, env.plan.clone(), store)
                .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
                .bundle(manifest)
                .boot_blocking()
                .unwrap();
            for _ in 0..2 {
                let outcome = runtime.run_cycle_blocking();
                assert!(matches!(outcome, Ok(RunOutcome::Completed(_))), "{outcome:?}");
                say(format_args!("DONE {key} {}", runtime.cycle()));
            }
        }
        // Every key's session at once on one thread and a pool of four connections, two cycles
        // each; says how many cycles completed and what failed.
        "crowd" => {
            let options =
                PgOptions { connect_timeout: Duration::from_secs(2), max_connections: 4, ..PgOptions::default() };
            let db = PgDatabase::connect_with(&env.url, options).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let local = tokio::task::LocalSet::new();
            let tasks: Vec<_> = env
                .keys
                .iter()
                .map(|key| {
                    let store = PgSessionStore::open_with_lease(&db, key, env.lease).unwrap();
                    let mut runtime = boot(&env, store).unwrap();
                    local.spawn_local(async move {
                        let mut failures = Vec::new();
                        for _ in 0..2 {
                            if let Err(e) = runtime.run_cycle().await {
                                failures.push(e.to_string());
                                break;
                            }
                        }
                        (runtime.cycle(), failures)
                    })
                })
                .collect();
            let (mut cycles, mut failures) = (0, Vec::new());
            local.block_on(&rt, async {
                for task in tasks {
                    let (done, failed) = task.await.unwrap();
                    cycles += done;
                    failures.extend(failed);
                }
            });
            for failure in &failures {
                say(format_args!("FAIL {failure}"));
            }
            say(format_args!("CYCLES {cycles}"));
        }
        other => panic!("unknown worker mode {other}"),
    }
}

/// Says where it is and aborts the process.
fn die_at(point: &str) {
    say(format_args!("AT {point}"));
    std::process::abort();
}
