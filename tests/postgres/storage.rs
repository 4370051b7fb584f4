//! The schema, the storage ports, the pool, and a cycle's writes made durable with its save.

use super::*;
use planlock::block_on;
use planlock::session::EndOfCycle;

pub(super) fn migrations_are_idempotent_concurrent_and_refuse_a_newer_schema(server: &PgServer) {
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
    assert_eq!(applied, i64::from(planlock::pg::SCHEMA_VERSION), "each migration once");
    drop(db);
    let newer = planlock::pg::SCHEMA_VERSION + 1;
    client.execute("INSERT INTO planlock_schema_migrations (version) VALUES ($1)", &[&newer]).unwrap();
    let err = PgDatabase::connect(&url).unwrap_err();
    let known = planlock::pg::SCHEMA_VERSION;
    assert!(matches!(err, PgError::SchemaTooNew { found, known: k, .. } if found == newer && k == known), "{err}");
    assert_eq!(err.code(), "pg-schema-too-new");
    assert!(err.to_string().contains("upgrade planlock"), "{err}");
    assert_eq!(err.kind(), FailureKind::FailFast);
    // The CLI refuses it too: FailFast, exit 3, nothing written.
    let fx = fixture();
    let out = crate::common::cli::planlock()
        .args(["run", "--database", &url, "--session", "k", "--policy-root"])
        .arg(&fx.policy)
        .arg(&fx.plan_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("newer than this library's {known}")));
    let sessions: i64 = client.query_one("SELECT count(*) FROM planlock_sessions", &[]).unwrap().get(0);
    assert_eq!(sessions, 0);
}

pub(super) fn the_storage_ports_pass_the_conformance_suite(server: &PgServer) {
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
    let session = PgSessionStore::open(&db, "ns-semantic").unwrap();
    let err = resolver.resolve_for_session(&semantic, session.session()).unwrap_err();
    assert!(err.to_string().contains("SQLite-only"), "{err}");
}

pub(super) fn a_search_past_its_deadline_is_cancelled_by_the_server(server: &PgServer) {
    use planlock::store::{Call, MemoryRepositoryPort, NewMemory};
    let url = server.database("deadline");
    let db = PgDatabase::connect(&url).unwrap();
    let store = PgStore::new(&db, "big");
    let key = planlock::store::conformance::key(1);
    block_on(store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "seed", keywords: &[] }))
        .unwrap();
    // 300,000 memories that all match, so ranking them takes the server well over a millisecond.
    server.sql(
        "deadline",
        "INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
         SELECT 'big', 'm-' || n, 'k-' || n, 's', 'rotate the key ' || n, 'key', '2026-01-01T00:00:00Z'
         FROM generate_series(1, 300000) n",
    );
    let words = "rotate key the";
    let started = std::time::Instant::now();
    let err = block_on(store.search(&Call::new().until(std::time::Instant::now()), words, 10)).unwrap_err();
    assert!(err.to_string().contains("stopped at the step's deadline"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "cancelled, not run to its end");
    assert_eq!(block_on(store.search(&Call::new(), words, 10)).unwrap().len(), 10);
    say(format_args!("postgres: a search past its deadline was cancelled in {:?}", started.elapsed()));
}

/// A worker keeps many sessions open at once (each under its lease) on a pool of two
/// connections: a session holds a connection only while it reads or writes.
pub(super) fn many_open_sessions_share_a_small_pool(server: &PgServer) {
    let url = server.database("small_pool");
    let options = PgOptions { connect_timeout: Duration::from_secs(2), max_connections: 2, ..PgOptions::default() };
    let db = PgDatabase::connect_with(&url, options).unwrap();
    let fx = fixture();
    let mut runtimes: Vec<WorkerRuntime> = keys("pool", 12)
        .iter()
        .map(|key| {
            let store = PgSessionStore::open(&db, key).unwrap_or_else(|e| panic!("{key}: {e}"));
            boot(&worker_env_for(&url, &fx, 30_000), store).unwrap()
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
pub(super) fn cycles_run_inside_a_tokio_runtime(server: &PgServer) {
    let url = server.database("on_tokio");
    let options = PgOptions { connect_timeout: Duration::from_secs(2), max_connections: 2, ..PgOptions::default() };
    let db = PgDatabase::connect_with(&url, options).unwrap();
    let fx = fixture();
    let env = worker_env_for(&url, &fx, 30_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let local = tokio::task::LocalSet::new();
    let tasks: Vec<_> = keys("tokio", 12)
        .into_iter()
        .map(|key| {
            let store = PgSessionStore::open(&db, &key).unwrap();
            let mut runtime = boot(&env, store).unwrap();
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

/// A cycle's store writes and its session save are one transaction (CONTRACT §13): a worker
/// killed at the save leaves none of that cycle's writes; a cycle that fails after some writes
/// leaves none either, and holds no transaction open.
pub(super) fn a_cycles_writes_are_durable_with_its_save_or_not_at_all(server: &PgServer) {
    let url = server.database("one_transaction");
    let fx = fixture();
    let key = "atomic-1".to_owned();
    let mut child = spawn_worker("die-before-save", &url, &fx, std::slice::from_ref(&key), 500);
    let status = child.wait().unwrap();
    assert!(!status.success(), "the worker died at its second save");
    let one_cycle = written_rows(&url, &key);
    assert_eq!(one_cycle.0, 1, "the memory of cycle 1 only: cycle 2's went with its save");
    let db = PgDatabase::connect(&url).unwrap();
    let history = |key: &str| -> Vec<(u64, &'static str)> {
        let records = planlock::session::postgres::PgRecords::new(&db, key).unwrap();
        let history = block_on(planlock::session::SessionRecords::history(&records, 10)).unwrap();
        history.entries.iter().map(|e| (e.cycle, e.end.as_str())).collect()
    };
    assert_eq!(history(&key), [(1, "completed")], "cycle 2's entry went with its save");
    assert!(one_cycle.1 >= 1, "cycle 1's keyed writes are there: {one_cycle:?}");
    // The next worker takes the session over (the dead one's lease runs out) and redoes cycle 2.
    std::thread::sleep(Duration::from_millis(700));
    let env = worker_env_for(&url, &fx, 30_000);
    let mut runtime = boot(&env, PgSessionStore::open(&db, &key).unwrap()).unwrap();
    assert_eq!(run(&mut runtime), Ok(2));
    assert_eq!(written_rows(&url, &key), (2, 2 * one_cycle.1), "cycle 2 written once, by its re-run");
    assert_eq!(history(&key), [(2, "completed"), (1, "completed")]);
    // The entry costs the save no round trip of its own: a cycle with the history on takes as
    // many as one with it off.
    let trips = |key: &str, keep: usize| {
        let manifest = BundleManifest::default_shared_bundle();
        let session = PgSessionStore::open(&db, key).unwrap();
        let resolved = StrategyResolver::default().resolve_for_session(&manifest, session.session()).unwrap();
        let mut runtime = Runtime::builder(&env.policy, env.plan.clone(), session)
            .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
            .bundle(manifest)
            .history(keep)
            .boot_blocking()
            .unwrap();
        runtime.run_cycle_blocking().unwrap();
        let before = db.round_trips();
        runtime.run_cycle_blocking().unwrap();
        db.round_trips() - before
    };
    assert_eq!(trips("trips-with", 100), trips("trips-without", 0));
    assert_eq!(history("trips-with").len(), 2);
    assert!(history("trips-without").is_empty());

    // A cycle failing at its last store write: the writes before it are rolled back at once.
    let manifest = BundleManifest::default_shared_bundle();
    let session = PgSessionStore::open(&db, "atomic-2").unwrap();
    let resolved = StrategyResolver::default().resolve_for_session(&manifest, session.session()).unwrap();
    let mut failing = Runtime::builder(&env.policy, env.plan.clone(), session)
        .handlers(
            Demo::new().failing([StepType::LinkDecisionEvidence]).with_store(&StoreHandlers::new(resolved)).boxed(),
        )
        .bundle(manifest)
        .boot_blocking()
        .unwrap();
    assert!(failing.run_cycle_blocking().is_err());
    assert_eq!(written_rows(&url, "atomic-2"), (0, 0));
    assert_eq!(history("atomic-2"), [(1, "failed")], "a failed cycle's entry is written after its rollback");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let open: i64 = client
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(open, 0, "no transaction is left open by the failed cycle");
    drop(failing);
}

/// In a worker's cycle the two retrieval steps share one read-only transaction (CONTRACT §13:
/// commits per cycle): the memory search reads the decision context too and the cycle's load
/// takes it from there, once; a later load, or one after the cycle's save, reads afresh.
pub(super) fn a_cycles_two_retrievals_share_one_read(server: &PgServer) {
    use planlock::store::conformance::{decision, key};
    use planlock::store::{Call, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort};
    let url = server.database("one_read");
    let ids = |context: planlock::store::DecisionContext| -> Vec<String> {
        context.decisions.into_iter().map(|d| d.id).collect()
    };
    // Another worker's pool: its writes commit at once, whatever this worker's cycle does.
    let other = PgStore::new(&PgDatabase::connect(&url).unwrap(), "reads");
    block_on(other.persist_decision(&Call::new().keyed(key(1)), &decision("d1", "r1", 1, "global", None))).unwrap();

    let db = PgDatabase::connect(&url).unwrap();
    let session = PgSessionStore::open(&db, "reads").unwrap();
    let store = PgStore::new(session.session().database(), session.session().key());
    // The runtime begins a cycle and hands it to the steps: the store's reads in it are the cycle's.
    let cycle = block_on(session.begin_cycle()).unwrap();
    let in_cycle = Call::new().in_cycle(&cycle);
    block_on(store.search(&in_cycle, "anything", 5)).unwrap();
    block_on(other.persist_decision(&Call::new().keyed(key(2)), &decision("d2", "r2", 1, "global", None))).unwrap();
    let kept = block_on(store.load(&in_cycle, "anything", None)).unwrap();
    assert_eq!(ids(kept), ["d1"], "the load took what the search read, in the search's transaction");
    let fresh = block_on(store.load(&in_cycle, "anything", None)).unwrap();
    assert_eq!(ids(fresh), ["d1", "d2"], "taken once: the next load reads");

    // A domain's decision is in a kept context only for a load naming that domain.
    block_on(other.persist_decision(&Call::new().keyed(key(3)), &decision("d3", "r3", 1, "domain:billing", None)))
        .unwrap();
    block_on(store.search(&in_cycle, "anything", 5)).unwrap();
    assert_eq!(ids(block_on(store.load(&in_cycle, "anything", Some("billing"))).unwrap()), ["d1", "d2", "d3"]);
    block_on(store.search(&in_cycle, "anything", 5)).unwrap();
    assert_eq!(ids(block_on(store.load(&in_cycle, "anything", None)).unwrap()), ["d1", "d2"]);

    // The cycle's save forgets what its search kept: the next cycle's load is its own.
    block_on(store.search(&in_cycle, "anything", 5)).unwrap();
    block_on(other.persist_decision(&Call::new().keyed(key(4)), &decision("d4", "r4", 1, "axis", None))).unwrap();
    let update = planlock::session::SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: None,
        repo_scan_version: None,
        last_execution_plan_hash: planlock::Digest::of(b"plan"),
        hash_parts: None,
        cycle: 1,
    };
    // A store of another pool, or of another session, handed the cycle refuses it (issue 57:
    // never a write alone, outside the cycle), while the session's own store's write waits for
    // the save.
    let evidence = |id: &str| planlock::schema::Evidence { id: id.into(), summary: "s".into(), source: "t".into() };
    let writes = [
        (PgStore::new(&PgDatabase::connect(&url).unwrap(), "reads"), "e-pool", 90),
        (PgStore::new(&db, "other"), "e-other", 91),
        (store.clone(), "e-joined", 92),
    ];
    for (writer, id, n) in &writes {
        let written = block_on(writer.persist_evidence(&Call::new().in_cycle(&cycle).keyed(key(*n)), &evidence(id)));
        match *id {
            "e-joined" => assert_eq!(written.unwrap(), "e-joined"),
            _ => assert!(written.unwrap_err().to_string().contains("another session's cycle"), "{id}"),
        }
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut stored = |id: &str| -> i64 {
        client.query_one("SELECT count(*) FROM planlock_evidence WHERE id = $1", &[&id]).unwrap().get(0)
    };
    assert_eq!((stored("e-pool"), stored("e-other"), stored("e-joined")), (0, 0, 0));
    drop(in_cycle);
    let _ = block_on(session.end_cycle(EndOfCycle::saving(update), cycle)).unwrap();
    assert_eq!(stored("e-joined"), 1, "the joined write is committed with the save");
    assert_eq!(ids(block_on(store.load(&Call::new(), "anything", None)).unwrap()), ["d1", "d2", "d4"]);
    // More active decisions than a search reads ahead: it keeps nothing, and the load reads
    // for itself (here: the decision written after the search).
    let many = planlock::store::postgres::MAX_READ_AHEAD;
    server.sql(
        "one_read",
        &format!(
            "INSERT INTO planlock_decisions (namespace, id, root_id, version, text, strength, scope_kind, is_active, created_at)
             SELECT 'many', 'm' || n, 'mr' || n, 1, 't', 'strong', 'domain', true, '2026-01-01T00:00:00Z'
             FROM generate_series(1, {many} + 1) n"
        ),
    );
    let many_session = PgSessionStore::open(&db, "many").unwrap();
    let crowded = PgStore::new(&db, "many");
    let many_cycle = block_on(many_session.begin_cycle()).unwrap();
    let in_many = Call::new().in_cycle(&many_cycle);
    block_on(crowded.search(&in_many, "anything", 5)).unwrap();
    let late = PgStore::new(&PgDatabase::connect(&url).unwrap(), "many");
    block_on(late.persist_decision(&Call::new().keyed(key(6)), &decision("g1", "g1", 1, "global", None))).unwrap();
    assert_eq!(ids(block_on(crowded.load(&in_many, "anything", None)).unwrap()), ["g1"], "read by the load itself");
    drop(in_many);
    drop((many_cycle, many_session));

    // Outside a cycle a search keeps nothing.
    block_on(store.search(&Call::new(), "anything", 5)).unwrap();
    block_on(other.persist_decision(&Call::new().keyed(key(5)), &decision("d5", "r5", 1, "global", None))).unwrap();
    assert_eq!(ids(block_on(store.load(&Call::new(), "anything", None)).unwrap()), ["d1", "d2", "d5", "d4"]);
}

/// Two workers writing under the same key at once take turns on the key: one writes, the other
/// finds its result; each write happens once.
pub(super) fn the_same_keyed_write_from_two_workers_happens_once(server: &PgServer) {
    use planlock::store::conformance::{decision, key};
    use planlock::store::{Call, DecisionWritePort};
    let url = server.database("same_key");
    let stores: Vec<PgStore> = (0..2).map(|_| PgStore::new(&PgDatabase::connect(&url).unwrap(), "shared")).collect();
    let rounds = 40u64;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = stores
        .into_iter()
        .map(|store| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                (0..rounds)
                    .map(|n| {
                        let evidence = planlock::schema::Evidence {
                            id: format!("e{n}"),
                            summary: "seen".into(),
                            source: "test".into(),
                        };
                        // Errors are kept, not unwrapped: a panic here would leave the other
                        // thread at the barrier for ever.
                        barrier.wait();
                        let e = block_on(store.persist_evidence(&Call::new().keyed(key(1000 + n)), &evidence));
                        barrier.wait();
                        let d = decision(&format!("d{n}"), &format!("r{n}"), 1, "global", None);
                        let d = block_on(store.persist_decision(&Call::new().keyed(key(2000 + n)), &d));
                        (e.map_err(|e| e.to_string()), d.map_err(|e| e.to_string()))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (n, (a, b)) in results[0].iter().zip(&results[1]).enumerate() {
        let expected = (Ok(format!("e{n}")), Ok(format!("d{n}")));
        assert_eq!((a, b), (&expected, &expected), "round {n}: both workers get the one write's results");
    }
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut count = |sql: &str| -> i64 { client.query_one(sql, &[]).unwrap().get(0) };
    assert_eq!(count("SELECT count(*) FROM planlock_writes WHERE namespace = 'shared'"), 2 * rounds as i64);
    assert_eq!(count("SELECT count(*) FROM planlock_decisions WHERE namespace = 'shared'"), rounds as i64);
    assert_eq!(count("SELECT count(*) FROM planlock_evidence WHERE namespace = 'shared'"), rounds as i64);
}

/// A worker drives many more sessions at once than its pool has connections, with no model to
/// wait for, on few threads: a cycle waiting for a place among the open cycles, or a read
/// waiting for a connection, holds no thread, so the cycles holding connections always find a
/// thread for their next write and their save. (When the waits held threads, the waiters took
/// every thread and the holders' steps ran past their deadlines: FailFast, sessions halted.)
pub(super) fn a_crowd_of_sessions_waits_for_connections_without_holding_threads(server: &PgServer) {
    let url = server.database("crowd");
    let fx = fixture();
    let keys = keys("crowd", 48);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("PLANLOCK_PG_WORKER", "crowd")
        .env("PLANLOCK_PG_URL", &url)
        .env("PLANLOCK_PG_POLICY", &fx.policy)
        .env("PLANLOCK_PG_PLAN", &fx.plan_file)
        .env("PLANLOCK_PG_LEASE_MS", "60000")
        .env("PLANLOCK_PG_KEYS", keys.join(","))
        // The blocking pool's threads, fewer than the sessions waiting.
        .env("BLOCKING_MAX_THREADS", "3")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = lines(&mut child);
    let mut said = Vec::new();
    while let Ok(line) = out.recv_timeout(Duration::from_secs(120)) {
        let done = line.starts_with("CYCLES");
        said.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(said, vec![format!("CYCLES {}", 2 * keys.len())], "every session ran both cycles");
}
