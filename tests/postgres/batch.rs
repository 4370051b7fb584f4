//! A cycle's writes travel with its session save (CONTRACT §13, amended): one round trip for the
//! writes, the save and the COMMIT; each write's failure still its step's.

use super::*;
use planlock::block_on;
use planlock::session::EndOfCycle;
use planlock::store::conformance::{decision, key};
use planlock::store::{Call, DecisionWritePort};

/// A session's update for cycle `cycle`, of a plan these tests do not run.
fn update(cycle: u64) -> planlock::session::SessionUpdate {
    planlock::session::SessionUpdate {
        session_id: uuid::Uuid::nil(),
        memory_ref: None,
        repo_scan_version: None,
        last_execution_plan_hash: planlock::Digest::of(b"plan"),
        hash_parts: None,
        cycle,
    }
}

fn runtime_on(db: &PgDatabase, env: &WorkerEnv, key: &str, store: PgStore) -> WorkerRuntime {
    let session = PgSessionStore::open(db, key).unwrap();
    Runtime::builder(&env.policy, env.plan.clone(), session)
        .handlers(Demo::new().with_store(&StoreHandlers::new(store)).boxed())
        .bundle(BundleManifest::default_shared_bundle())
        .boot_blocking()
        .unwrap()
}

/// The demo plan's cycle on a warm worker: the search with its reads ahead, then the writes, the
/// save and its COMMIT: two round trips (CONTRACT §13's ≤ 3), where each keyed write used to
/// take two of its own.
pub(super) fn a_cycles_writes_travel_with_its_save_in_one_round_trip(server: &PgServer) {
    let url = server.database("batch_trips");
    let fx = fixture();
    let env = worker_env_for(&url, &fx, 30_000);
    let db = PgDatabase::connect(&url).unwrap();
    let mut runtime = runtime_on(&db, &env, "trips", PgStore::new(&db, "trips"));
    let mut trips = Vec::new();
    for _ in 0..6 {
        let before = db.round_trips();
        assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
        trips.push(db.round_trips() - before);
    }
    // The first cycles prepare their statements on the connections (a round trip each) and
    // save the bundle pin.
    assert_eq!(trips[2..], [2, 2, 2, 2], "round trips per cycle: {trips:?}");
    // Each cycle wrote once: a memory per cycle, and the decision, evidence and link keys.
    assert_eq!(written_rows(&url, "trips"), (6, 18));
    // The end of a cycle is one round trip whether a bundle pin is due with it or not: the pin
    // rides in the same compare-and-set (it took a round trip of its own before issue 57 §2).
    let store = PgSessionStore::open(&db, "ends").unwrap();
    let mut ends = Vec::new();
    for (cycle, due) in [(1, Some(pin())), (2, None), (3, Some(pin())), (4, None)] {
        let cycle_guard = block_on(store.begin_cycle()).unwrap();
        let before = db.round_trips();
        let saved = block_on(store.end_cycle(EndOfCycle::saving(update(cycle)).with_pin(due), cycle_guard)).unwrap();
        ends.push(db.round_trips() - before);
        assert_eq!(saved.map(|s| s.cycle), Some(cycle));
    }
    assert_eq!(ends[1..], [1, 1, 1], "round trips per end of a cycle: {ends:?}");
    let pinned = block_on(store.records().load_pin()).unwrap();
    assert_eq!(pinned.map(|p| p.bundle_id), Some("b".to_owned()), "a later end without a pin keeps it");
}

/// A write that fails when the save sends it is its step's failure, as it is where the write
/// runs at its step (a database store in a cycle of a files session, which holds no transaction,
/// writes alone): the same code, class, step, message and report; nothing of the cycle is
/// written and no transaction stays open.
pub(super) fn a_write_failing_in_the_batch_fails_its_own_step(server: &PgServer) {
    let url = server.database("batch_failure");
    let fx = fixture();
    let env = worker_env_for(&url, &fx, 30_000);
    let db = PgDatabase::connect(&url).unwrap();
    // The plan's decision `d-1`, stored before with other content, in both namespaces.
    let mut other = decision("d-1", "d-1", 1, "domain:security", None);
    other.text = "Rotate keys every 30 days".into();
    for namespace in ["batched", "alone-ns"] {
        let store = PgStore::new(&db, namespace);
        block_on(store.persist_decision(&Call::new().keyed(key(1)), &other)).unwrap();
    }
    let failed = |key: &str, ran: Result<RunOutcome, planlock::runtime::RuntimeError>| match ran {
        Err(e) => e,
        Ok(_) => panic!("{key}: the cycle should fail at its decision"),
    };
    let batched =
        failed("batched", runtime_on(&db, &env, "batched", PgStore::new(&db, "batched")).run_cycle_blocking());
    let files = tempfile::tempdir().unwrap();
    let session = planlock::session::FileSessionStore::open(files.path()).unwrap();
    let mut on_files = Runtime::builder(&env.policy, env.plan.clone(), session)
        .handlers(Demo::new().with_store(&StoreHandlers::new(PgStore::new(&db, "alone-ns"))).boxed())
        .boot_blocking()
        .unwrap();
    let alone = failed("alone", on_files.run_cycle_blocking());
    let shape = |e: &planlock::runtime::RuntimeError| {
        let report = e.report().unwrap();
        let steps: Vec<_> = report.steps.iter().map(|s| (s.id.clone(), s.status)).collect();
        (e.code(), e.kind(), e.to_string(), steps)
    };
    assert_eq!(shape(&batched), shape(&alone));
    let (code, kind, message, steps) = shape(&batched);
    assert_eq!((code, kind), ("step-failed", FailureKind::FailFast), "{message}");
    assert!(
        message.contains("step `decide` (PersistDecision) failed [FailFast]")
            && message.contains("conflict: decision `d-1` is stored with other content"),
        "{message}"
    );
    assert_eq!(steps.last().map(|(id, status)| (id.as_str(), *status)), Some(("decide", StepStatus::Failed)));
    // Nothing of the batched cycle: its memory went with the failed batch, the session is new.
    assert_eq!(written_rows(&url, "batched"), (0, 1), "only the decision stored before, under its key");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let state: Option<String> =
        client.query_one("SELECT state FROM planlock_sessions WHERE session_key = 'batched'", &[]).unwrap().get(0);
    assert_eq!(state, None, "the session was not saved");
    let open: i64 = client
        .query_one("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'", &[])
        .unwrap()
        .get(0);
    assert_eq!(open, 0);
}

/// The result a step goes on with is the one the database holds: a key written before gives
/// what it returned and sends nothing; a key written by someone else after the cycle read its
/// keys fails the batch (PLW01), naming the write, and nothing of the cycle is written.
pub(super) fn a_batched_write_returns_what_its_key_holds(server: &PgServer) {
    let url = server.database("batch_keys");
    let db = PgDatabase::connect(&url).unwrap();
    let session = PgSessionStore::open(&db, "keys").unwrap();
    let store = PgStore::new(&db, "keys");
    let outside = PgStore::new(&PgDatabase::connect(&url).unwrap(), "keys");
    block_on(outside.persist_decision(&Call::new().keyed(key(7)), &decision("d7", "r7", 1, "global", None))).unwrap();
    let stored = |id: &str| -> i64 {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client.query_one("SELECT count(*) FROM planlock_decisions WHERE id = $1", &[&id]).unwrap().get(0)
    };

    let cycle = block_on(session.begin_cycle()).unwrap();
    let call = |n| Call::new().in_cycle(&cycle).keyed(key(n));
    let again = block_on(store.persist_decision(&call(7), &decision("d7-other", "r7b", 1, "global", None)));
    assert_eq!(again.unwrap(), "d7", "written before: what the key's write returned");
    let new = block_on(store.persist_decision(&call(8), &decision("d8", "r8", 1, "global", None)));
    assert_eq!(new.unwrap(), "d8");
    assert_eq!(stored("d8"), 0, "kept for the save");
    let twice = block_on(store.persist_decision(&call(8), &decision("d8-other", "r8b", 1, "global", None)));
    assert_eq!(twice.unwrap(), "d8", "one write per key in a cycle too");
    let _ = block_on(session.end_cycle(EndOfCycle::saving(update(1)), cycle)).unwrap();
    assert_eq!((stored("d7-other"), stored("d8"), stored("d8-other")), (0, 1, 0));

    // Another writer takes key 9 between the cycle's read of its keys and its save.
    let cycle = block_on(session.begin_cycle()).unwrap();
    let call = |n| Call::new().in_cycle(&cycle).keyed(key(n));
    block_on(store.persist_decision(&call(10), &decision("d10", "r10", 1, "global", None))).unwrap();
    assert_eq!(block_on(store.persist_decision(&call(9), &decision("d9", "r9", 1, "global", None))).unwrap(), "d9");
    block_on(outside.persist_decision(&Call::new().keyed(key(9)), &decision("d9-x", "r9x", 1, "global", None)))
        .unwrap();
    let err = block_on(session.end_cycle(EndOfCycle::saving(update(2)), cycle)).unwrap_err();
    match &err {
        SessionError::StepWrite { step_id: None, source: planlock::session::WriteFailure::Conflict(m), .. } => {
            assert!(m.contains("returned `d9-x`, not `d9`"), "{m}")
        }
        other => panic!("expected the write's failure, got {other:?}"),
    }
    assert_eq!((stored("d10"), stored("d9")), (0, 0), "nothing of the cycle: {err}");
    // The session was not written: its next save, from what this worker saw, goes through.
    let cycle = block_on(session.begin_cycle()).unwrap();
    let _ = block_on(session.end_cycle(EndOfCycle::saving(update(2)), cycle)).unwrap();
}

/// One write of the decision ports.
enum Write {
    Decision(planlock::schema::Decision),
    Evidence(planlock::schema::Evidence),
    Link(planlock::schema::Anchor),
}

impl Write {
    fn on<S: DecisionWritePort>(&self, store: &S, call: &Call<'_>) -> Result<String, String> {
        block_on(async {
            match self {
                Write::Decision(d) => store.persist_decision(call, d).await,
                Write::Evidence(e) => store.persist_evidence(call, e).await,
                Write::Link(a) => store.link(call, a).await,
            }
        })
        .map_err(|e| e.to_string())
    }
}

/// The write functions (schema 8) hold the rules of `src/store/write.rs`, which the in-memory and
/// SQLite stores run: the same sequence of writes gets the same answers, word for word, from
/// each, whether a write is sent alone or with a cycle's save.
pub(super) fn the_write_functions_answer_as_the_embedded_stores_do(server: &PgServer) {
    use planlock::schema::{Anchor, Evidence};
    let url = server.database("batch_rules");
    let db = PgDatabase::connect(&url).unwrap();
    let evidence =
        |id: &str, summary: &str| Evidence { id: id.into(), summary: summary.into(), source: "audit".into() };
    let anchor = |d: &str, e: &str| Anchor { decision_id: d.into(), evidence_id: e.into() };
    let mut other_text = decision("d1", "r1", 1, "global", None);
    other_text.text = "another text".into();
    let writes = [
        Write::Decision(decision("d1", "r1", 1, "global", None)),
        Write::Decision(decision("d1", "r1", 1, "global", None)),
        Write::Decision(other_text),
        Write::Decision(decision("d2", "r2", 2, "axis", None)),
        Write::Decision(decision("d3", "r1", 1, "global", None)),
        Write::Decision(decision("d4", "r1", 3, "global", Some("d1"))),
        Write::Decision(decision("d5", "r1", 2, "global", Some("dx"))),
        Write::Decision(decision("d6", "r1", 2, "domain:billing", Some("d1"))),
        Write::Decision(decision("d7", "r1", 3, "domain:billing", Some("d1"))),
        Write::Evidence(evidence("e1", "seen")),
        Write::Evidence(evidence("e1", "seen")),
        Write::Evidence(evidence("e1", "seen otherwise")),
        Write::Link(anchor("d-missing", "e1")),
        Write::Link(anchor("d6", "e-missing")),
        Write::Link(anchor("d6", "e1")),
        Write::Link(anchor("d6", "e1")),
    ];
    // Each write under its own key, on a fresh store of each kind.
    let embedded = planlock::store::memory::InMemoryStore::new();
    let expected: Vec<_> = writes.iter().zip(1..).map(|(w, n)| w.on(&embedded, &Call::new().keyed(key(n)))).collect();
    assert!(expected.iter().any(Result::is_ok) && expected.iter().filter(|r| r.is_err()).count() >= 7, "{expected:#?}");
    let alone = PgStore::new(&db, "alone");
    let sent_alone: Vec<_> = writes.iter().zip(1..).map(|(w, n)| w.on(&alone, &Call::new().keyed(key(n)))).collect();
    assert_eq!(sent_alone, expected, "each write sent alone");
    // Each write in a cycle of its own, sent with the cycle's save.
    let session = PgSessionStore::open(&db, "batched").unwrap();
    let batched = PgStore::new(&db, "batched");
    let sent_with_save: Vec<_> = writes
        .iter()
        .zip(1..)
        .map(|(w, n)| {
            let cycle = block_on(session.begin_cycle()).unwrap();
            let result = w.on(&batched, &Call::new().in_cycle(&cycle).keyed(key(n)));
            match block_on(session.end_cycle(EndOfCycle::saving(update(n)), cycle)) {
                Ok(_) => result,
                // Said as the store says it at the step.
                Err(SessionError::StepWrite { source, .. }) => Err(source.to_string()),
                Err(e) => panic!("write {n}: {e}"),
            }
        })
        .collect();
    assert_eq!(sent_with_save, expected, "each write sent with its cycle's save");
}

/// A store handed a cycle another session's store began refuses it (issue 57 §1): the session
/// save, the memory store's write, the budget, and a file store handed a database's cycle. Never
/// a write alone, outside the cycle: the refused save writes nothing, and the cycle's own writes
/// are rolled back with it.
pub(super) fn a_store_refuses_another_sessions_cycle(server: &PgServer) {
    use planlock::budget::{TokenAsk, TokenBudget};
    use planlock::session::FileSessionStore;
    use planlock::session::postgres::PgBudget;
    let url = server.database("foreign_cycle");
    let db = PgDatabase::connect(&url).unwrap();
    let (mine, theirs) = (PgSessionStore::open(&db, "mine").unwrap(), PgSessionStore::open(&db, "theirs").unwrap());
    let (my_store, their_store) = (PgStore::new(&db, "mine"), PgStore::new(&db, "theirs"));
    let count = |sql: &str| -> i64 {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        client.query_one(sql, &[]).unwrap().get(0)
    };

    // Their cycle, with a write of theirs kept for their save.
    let cycle = block_on(theirs.begin_cycle()).unwrap();
    assert!(cycle.holds());
    let theirs_call = Call::new().in_cycle(&cycle).keyed(key(1));
    block_on(their_store.persist_decision(&theirs_call, &decision("d-theirs", "r", 1, "global", None))).unwrap();
    // My memory store, in their cycle: refused, nothing sent.
    let mine_call = Call::new().in_cycle(&cycle).keyed(key(2));
    let err = block_on(my_store.persist_decision(&mine_call, &decision("d-mine", "r", 1, "global", None))).unwrap_err();
    assert_eq!(err.code(), "store-backend");
    assert!(err.to_string().contains("another session's cycle"), "{err}");
    // My budget, in their cycle: refused.
    let ask = TokenAsk { id: uuid::Uuid::new_v4(), tokens: 10, cycle: 1, step_id: "" };
    let refused = block_on(PgBudget::of(&mine).reserve_ahead(ask, &cycle)).unwrap_err();
    assert!(refused.to_string().contains("another session's"), "{refused}");
    // My save, handed their cycle: refused; it writes nothing, and their write goes with the
    // dropped cycle.
    let err = block_on(mine.end_cycle(EndOfCycle::saving(update(1)), cycle)).unwrap_err();
    assert!(matches!(err, SessionError::ForeignCycle { .. }), "{err:?}");
    assert_eq!((err.code(), err.kind()), ("session-foreign-cycle", FailureKind::FailFast));
    assert_eq!(count("SELECT count(*) FROM planlock_sessions WHERE session_key = 'mine' AND state IS NOT NULL"), 0);
    assert_eq!(count("SELECT count(*) FROM planlock_decisions WHERE id IN ('d-theirs', 'd-mine')"), 0);

    // A file store handed a database's cycle: refused, its file not written.
    let dir = tempfile::tempdir().unwrap();
    let files = FileSessionStore::open(dir.path()).unwrap();
    let err =
        block_on(files.end_cycle(EndOfCycle::saving(update(1)), block_on(theirs.begin_cycle()).unwrap())).unwrap_err();
    assert_eq!(err.code(), "session-foreign-cycle", "{err}");
    assert!(block_on(files.records().load()).unwrap().is_none(), "nothing written");

    // Each store's own cycle saves, as always.
    let own = block_on(mine.begin_cycle()).unwrap();
    let _ = block_on(mine.end_cycle(EndOfCycle::saving(update(1)), own)).unwrap();
    assert_eq!(count("SELECT count(*) FROM planlock_sessions WHERE session_key = 'mine' AND state IS NOT NULL"), 1);
}
