//! Retrieval by meaning on PostgreSQL (CONTRACT §20): `postgres-semantic` passes the storage
//! conformance suite and the semantic tests SQLite's providers pass (`tests/common/semantic.rs`);
//! a cycle writes each vector with its row, in the save's round trip; the exact ranking is
//! bounded and says what it left to the words; stored vectors that cannot be used are passed
//! over; the embedder is pinned with the session.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use planlock::block_on;
use planlock::embed::{DemoEmbedder, Embedder};
use planlock::store::conformance::key;
use planlock::store::postgres::PgStore;
use planlock::store::{Call, MemoryRepositoryPort};

use super::*;
use crate::common::semantic::{self, Other, put};

fn semantic_bundle() -> BundleManifest {
    BundleManifest::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/bundles/postgres-semantic"
    )))
    .unwrap()
}

fn count(url: &str, sql: &str, namespace: &str) -> i64 {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client.query_one(sql, &[&namespace]).unwrap().get(0)
}

pub(super) fn postgres_semantic_passes_the_conformance_suite_and_the_semantic_tests(server: &PgServer) {
    let db = PgDatabase::connect(&server.database("meaning")).unwrap();
    let n = AtomicU64::new(0);
    let fresh = || format!("ns-{}", n.fetch_add(1, Ordering::Relaxed));
    planlock::store::conformance::run_by_meaning(|| PgStore::new(&db, fresh()).by_meaning(semantic::demo()));
    let db = &db;
    let on = |namespace: String| move |e: Arc<dyn Embedder>| PgStore::new(db, namespace.clone()).by_meaning(e);
    semantic::meaning_and_words_are_fused_and_an_exact_identifier_wins(on(fresh()));
    semantic::ties_go_to_the_most_recent_every_time(on(fresh()));
    semantic::a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused(on(fresh()));
    semantic::decisions_in_scope_are_ordered_by_meaning_and_words(on(fresh()));
    // Without an embedder the provider cannot be opened, and says why; under a session root it
    // needs a database.
    let session = PgSessionStore::open(db, "no-embedder").unwrap();
    let err = StrategyResolver::default().resolve_for_session(&semantic_bundle(), session.session()).unwrap_err();
    assert!(err.to_string().contains("needs an embedder"), "{err}");
    let root = tempfile::tempdir().unwrap();
    let err =
        StrategyResolver::default().embedder(semantic::demo()).resolve(&semantic_bundle(), root.path()).unwrap_err();
    assert_eq!(err.code(), "bundle-needs-database", "{err}");
}

/// A cycle of a `postgres-semantic` session writes each memory's and decision's vector with its
/// row, in the save's batch: one vector per memory, the round trips of a words-only cycle plus
/// at most the one that reads what the fusion found; the session is pinned to the embedder, and
/// another is refused at boot.
pub(super) fn a_semantic_cycle_writes_its_vectors_with_its_save(server: &PgServer) {
    let url = server.database("meaning_cycle");
    let fx = fixture();
    let env = worker_env_for(&url, &fx, 30_000);
    let db = PgDatabase::connect(&url).unwrap();
    let manifest = semantic_bundle();
    // A short lease: the session is opened again once this runtime is gone.
    let lease = std::time::Duration::from_secs(1);
    let boot = |embedder: Arc<dyn Embedder>| {
        let session = PgSessionStore::open_with_lease(&db, "sem", lease).unwrap();
        let resolver = StrategyResolver::default().embedder(embedder);
        let resolved = resolver.resolve_for_session(&manifest, session.session()).unwrap();
        Runtime::builder(&env.policy, env.plan.clone(), session)
            .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
            .bundle(manifest.clone())
            .resolver(resolver)
            .boot_blocking()
    };
    // Two decisions in every scope before the first cycle: the load orders them by meaning, with
    // the vectors the search read ahead.
    let seeded = PgStore::new(&db, "sem").by_meaning(semantic::demo());
    for (n, text) in ["rotate the api keys every 90 days", "write tests before merging"].iter().enumerate() {
        let mut d =
            planlock::store::conformance::decision(&format!("seed-{n}"), &format!("seed-{n}"), 1, "global", None);
        d.text = (*text).into();
        block_on(planlock::store::DecisionWritePort::persist_decision(
            &seeded,
            &Call::new().keyed(key(90 + n as u64)),
            &d,
        ))
        .unwrap();
    }
    let mut runtime = boot(semantic::demo()).unwrap();
    let mut trips = Vec::new();
    for _ in 0..5 {
        let before = db.round_trips();
        assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Completed(_)));
        trips.push(db.round_trips() - before);
    }
    drop(runtime);
    std::thread::sleep(lease + std::time::Duration::from_millis(200));
    let memories = memory_rows(&url, "sem");
    assert_eq!(memories, 5);
    let vectors = count(&url, "SELECT count(*) FROM planlock_memory_vectors WHERE namespace = $1", "sem");
    assert_eq!(vectors, memories, "one vector per memory, written with it");
    let positions = count(&url, "SELECT max(position) FROM planlock_memory_vectors WHERE namespace = $1", "sem");
    assert_eq!(positions, 5, "positions are dense");
    assert_eq!(count(&url, "SELECT count(*) FROM planlock_decision_vectors WHERE namespace = $1", "sem"), 3);
    // As by words (tests/postgres/batch.rs): the search with its reads ahead (the decisions'
    // vectors among them), then the save. (A search whose fusion finds memories the word
    // ranking did not read takes one more.)
    assert_eq!(trips[2..], [2, 2, 2], "round trips per cycle: {trips:?}");
    println!("postgres-semantic: round trips per cycle {trips:?}");
    let stored = PgSessionStore::open_with_lease(&db, "sem", lease).unwrap();
    let pin = block_on(stored.records().load_pin()).unwrap().unwrap();
    drop(stored);
    std::thread::sleep(lease + std::time::Duration::from_millis(200));
    assert_eq!(
        (pin.memory_provider_id.as_deref(), pin.embedder_model.as_deref(), pin.embedder_dimension),
        (Some("postgres-semantic"), Some("planlock-demo-embedder"), Some(384))
    );
    let err = match boot(Arc::new(Other { model: "another-model", fail: false })) {
        Err(e) => e,
        Ok(_) => panic!("another embedder boots a pinned session"),
    };
    assert_eq!((err.code(), err.kind()), ("embedder-mismatch", FailureKind::FailFast), "{err}");
}

/// The exact ranking holds the newest `max_exact_vectors` of a namespace; a search past it says
/// so and still finds the older memories by their words. Vectors written by another store (a
/// worker elsewhere) after a search are read by the next one.
pub(super) fn the_exact_ranking_is_bounded_and_says_what_it_left_to_the_words(server: &PgServer) {
    let db = PgDatabase::connect(&server.database("meaning_bound")).unwrap();
    let writer = PgStore::new(&db, "bound").by_meaning(semantic::demo());
    put(&writer, 1, "rotation of the api keys in the vault").unwrap();
    put(&writer, 2, "lunch menu for friday").unwrap();
    let reader = PgStore::new(&db, "bound").by_meaning(semantic::demo()).max_exact_vectors(2);
    let call = Call::new();
    let found = block_on(MemoryRepositoryPort::search(&reader, &call, "rotating keys", 1)).unwrap();
    assert_eq!(found[0].summary, "rotation of the api keys in the vault");
    assert!(call.warnings().is_empty(), "{:?}", call.warnings());
    put(&writer, 3, "deploying the web frontend").unwrap();
    put(&writer, 4, "incident postmortem for the outage").unwrap();
    let call = Call::new();
    // `rotating` is not a word of the oldest memory: past the bound, it cannot be found by
    // meaning; `keys` is, so the words still find it.
    let found = block_on(MemoryRepositoryPort::search(&reader, &call, "rotating keys", 4)).unwrap();
    assert!(found.iter().any(|m| m.summary.starts_with("rotation")), "{found:?}");
    let warnings = call.warnings();
    assert!(warnings.iter().any(|w| w.contains("2 older memories") && w.contains("MAX_EXACT_VECTORS")), "{warnings:?}");
    let found = block_on(MemoryRepositoryPort::search(&reader, &Call::new(), "deploying frontend", 1)).unwrap();
    assert_eq!(found[0].summary, "deploying the web frontend");
}

/// Stored vectors that cannot be ranked by (edited to another length, to NaN, to zeros) and a
/// vector whose memory is gone are passed over and said, never ranked, never a panic.
pub(super) fn damaged_vectors_are_passed_over(server: &PgServer) {
    let url = server.database("meaning_damaged");
    let db = PgDatabase::connect(&url).unwrap();
    let store = PgStore::new(&db, "damaged").by_meaning(semantic::demo());
    for (n, text) in ["api keys rotation", "keys of the vault", "lunch keys", "keys for deploys"].iter().enumerate() {
        put(&store, n as u64 + 1, text).unwrap();
    }
    let nan: Vec<u8> = std::iter::repeat_n(f32::NAN.to_le_bytes(), DemoEmbedder::DIMENSION).flatten().collect();
    let zeros = vec![0u8; DemoEmbedder::DIMENSION * 4];
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let set = "UPDATE planlock_memory_vectors SET vector = $2 WHERE namespace = 'damaged' AND position = $1";
    client.execute(set, &[&1i64, &vec![1u8, 2, 3]]).unwrap();
    client.execute(set, &[&2i64, &nan]).unwrap();
    client.execute(set, &[&3i64, &zeros]).unwrap();
    // A vector row left without its memory (only an edit can do this).
    client
        .execute(
            "UPDATE planlock_memory_vectors SET memory_id = 'mem-gone' WHERE namespace = 'damaged' AND position = 4",
            &[],
        )
        .unwrap();
    // And a fifth whose vector row names an id longer than planlock's (the unique index bounds it
    // to a few kilobytes): never read into the held ids.
    put(&store, 5, "keys again").unwrap();
    client
        .execute(
            "UPDATE planlock_memory_vectors SET memory_id = repeat('x', 5000) WHERE namespace = 'damaged' AND position = 5",
            &[],
        )
        .unwrap();
    let fresh = PgStore::new(&db, "damaged").by_meaning(semantic::demo());
    let call = Call::new();
    let found = block_on(MemoryRepositoryPort::search(&fresh, &call, "keys", 10)).unwrap();
    // All five are still found by their words.
    assert_eq!(found.len(), 5, "{found:?}");
    let warnings = call.warnings().join("\n");
    assert!(warnings.contains("4 stored memory vectors could not be read"), "{warnings}");
    assert!(warnings.contains("1 stored memories could not be read"), "{warnings}");
}

/// A search by meaning in a cycle that carries its token reservation (CONTRACT §20: sent with
/// the cycle's first read) finds what the same search finds outside a cycle, and the reservation
/// is made: the reservation's answer, last in the batch, is not read as the ranking's rows.
pub(super) fn a_search_by_meaning_under_a_budget_reads_its_own_rows(server: &PgServer) {
    use planlock::budget::CycleBudget;
    use planlock::session::postgres::{PgBudget, budgets, set_budget};
    let url = server.database("meaning_budget");
    let db = PgDatabase::connect(&url).unwrap();
    block_on(set_budget(&db, "", 1_000_000, std::time::Duration::from_secs(86_400))).unwrap();
    let store = PgStore::new(&db, "mb").by_meaning(semantic::demo());
    for (n, summary) in [(1, "rotation of the api keys in the vault"), (2, "lunch menu for friday")] {
        put(&store, n, summary).unwrap();
    }
    let ids = |found: Vec<planlock::schema::MemoryItem>| found.into_iter().map(|m| m.id).collect::<Vec<_>>();
    // Each search by a store of its own, whose first search reads every vector.
    let fresh = || PgStore::new(&db, "mb").by_meaning(semantic::demo());
    let outside = ids(block_on(fresh().search(&Call::new(), "rotating", 2)).unwrap());
    assert_eq!(outside.len(), 2);
    let session = PgSessionStore::open(&db, "mb").unwrap();
    let cycle = block_on(session.begin_cycle()).unwrap();
    let account = CycleBudget::new(Arc::new(PgBudget::of(&session)), 1);
    block_on(account.reserve_ahead(100, &cycle));
    let inside = ids(block_on(fresh().search(&Call::new().in_cycle(&cycle), "rotating", 2)).unwrap());
    assert_eq!(inside, outside, "the same ranking in the cycle's batch");
    let hold = block_on(account.reserve(60, "llm", Some(&cycle))).unwrap();
    hold.answered(Some(10));
    let reserved: Vec<u64> = block_on(budgets(&db)).unwrap().iter().map(|b| b.reserved).collect();
    assert_eq!(reserved, [100], "reserved with the search");
}
