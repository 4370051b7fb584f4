//! The pgvector tier (`postgres-pgvector`, CONTRACT §20): refused, saying so, where the server
//! has no pgvector (Debian's PostgreSQL here); where it has (`.ci/pgvector`'s PostgreSQL 18 with
//! pgvector 0.8.5, `PLANLOCK_PGVECTOR`), installed by the CLI with the stored vectors copied in,
//! written with each memory, passing the semantic tests, and its recall against the exact
//! ranking gated at 0.95 on clustered vectors in a shared index, a filter never returning fewer
//! rows than the namespace has.

use std::collections::HashMap;
use std::sync::Arc;

use planlock::block_on;
use planlock::embed::Embedder;
use planlock::store::postgres::PgStore;
use planlock::store::{Call, MemoryRepositoryPort};

use super::*;
use crate::common::semantic::{self, put};
use crate::common::vectors::{DIMENSION, Table, centers, clustered, load};

/// Whether the server has pgvector; `.ci/pgvector`'s must.
fn has_pgvector(server: &PgServer, url: &str) -> bool {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let n: i64 =
        client.query_one("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'", &[]).unwrap().get(0);
    let required = crate::common::pg::pgvector_bin().is_some_and(|bin| bin == server.origin());
    assert!(n == 1 || !required, "the server of PLANLOCK_PGVECTOR has no pgvector");
    n == 1
}

fn cli(args: &[&str]) -> std::process::Output {
    crate::common::cli::planlock().args(args).output().unwrap()
}

pub(super) fn the_pgvector_tier_is_installed_written_and_searched_or_refused(server: &PgServer) {
    let url = server.database("pgvector");
    let db = PgDatabase::connect(&url).unwrap();
    let tier = |namespace: &str| PgStore::new(&db, namespace).by_meaning(semantic::demo()).pgvector(200);
    if !has_pgvector(server, &url) {
        let out = cli(&["pgvector", "--database", &url, "--dimension", "384"]);
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{text}");
        assert!(text.contains("no `vector` extension") && text.contains("postgres-semantic"), "{text}");
        let err = block_on(tier("x").search(&Call::new(), "anything", 5)).unwrap_err();
        assert!(err.to_string().contains("needs the pgvector tier"), "{err}");
        println!("pgvector: not on this server; refused, saying so");
        return;
    }
    // Vectors stored before the tier are copied in by the install.
    let exact = PgStore::new(&db, "before").by_meaning(semantic::demo());
    put(&exact, 1, "rotation of the api keys in the vault").unwrap();
    put(&exact, 2, "lunch menu for friday").unwrap();
    // Not before the install: the search says what to do.
    let err = block_on(tier("before").search(&Call::new(), "rotating", 5)).unwrap_err();
    assert!(err.to_string().contains("needs the pgvector tier"), "{err}");
    let out = cli(&["--format", "json", "pgvector", "--database", &url, "--dimension", "384"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["copiedVectors"], 2, "{report}");
    let found = block_on(tier("before").search(&Call::new(), "rotating keys", 1)).unwrap();
    assert_eq!(found[0].summary, "rotation of the api keys in the vault");
    // Idempotent; another dimension is refused.
    assert_eq!(db.install_pgvector(384).unwrap(), 0);
    let err = db.install_pgvector(768).unwrap_err();
    assert!(err.to_string().contains("installed for vectors of 384 numbers, not 768"), "{err}");
    // The semantic tests, on the tier.
    let on = |namespace: &'static str| {
        let db = &db;
        move |e: Arc<dyn Embedder>| PgStore::new(db, namespace).by_meaning(e).pgvector(200)
    };
    semantic::meaning_and_words_are_fused_and_an_exact_identifier_wins(on("fused"));
    semantic::ties_go_to_the_most_recent_every_time(on("ties"));
    semantic::a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused(on("refused"));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let embeddings: i64 = client
        .query_one("SELECT count(*) FROM planlock_memory_embeddings WHERE namespace = 'fused'", &[])
        .unwrap()
        .get(0);
    assert_eq!(embeddings, 4, "each memory written with its embedding");
    println!("pgvector: installed, written, searched");
}

/// The recall of the tier's top 10 against the exact ranking's, over `queries`.
pub(super) fn recall(exact: &PgStore, tier: &PgStore, queries: &[String]) -> f64 {
    let top = |store: &PgStore, q: &str| -> Vec<String> {
        block_on(store.search(&Call::new(), q, 10)).unwrap().into_iter().map(|m| m.id).collect()
    };
    let mut hits = 0usize;
    for q in queries {
        let truth = top(exact, q);
        assert_eq!(truth.len(), 10);
        hits += top(tier, q).iter().filter(|id| truth.contains(id)).count();
    }
    hits as f64 / (10 * queries.len()) as f64
}

pub(super) fn the_pgvector_tier_recalls_the_exact_ranking(server: &PgServer) {
    let url = server.database("pgvector_recall");
    if !has_pgvector(server, &url) {
        println!("pgvector: not on this server; the recall gate runs on .ci/pgvector's PostgreSQL 18");
        return;
    }
    let mut rng = fastrand::Rng::with_seed(20);
    let centers = centers(&mut rng, 40);
    let db = PgDatabase::connect(&url).unwrap();
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    // One namespace of 4,000 in an index of 12,000 (the others are other sessions'), and one of
    // 5: a filtered scan must still give every row it has.
    load(&mut client, "big", "synthetic", &clustered(&mut rng, &centers, 4_000, 0.6));
    for other in 0..8 {
        load(&mut client, &format!("other-{other}"), "synthetic", &clustered(&mut rng, &centers, 1_000, 0.6));
    }
    load(&mut client, "small", "synthetic", &clustered(&mut rng, &centers, 5, 0.6));
    let started = Instant::now();
    assert_eq!(db.install_pgvector(DIMENSION).unwrap(), 12_005);
    println!("pgvector: 12,005 vectors copied and indexed in {:.1} s", started.elapsed().as_secs_f64());
    let queries: Vec<String> = (0..40).map(|i| format!("q{i}")).collect();
    let table: HashMap<String, Vec<f32>> =
        queries.iter().cloned().zip(clustered(&mut rng, &centers, queries.len(), 0.6)).collect();
    let embedder: Arc<dyn Embedder> = Arc::new(Table(table));
    let exact = PgStore::new(&db, "big").by_meaning(embedder.clone());
    let index_scans = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 'planlock_memory_embeddings_hnsw'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    // Smaller settings recall less: the index, not an exact scan, answers.
    let before = index_scans(&mut client);
    let settings = [10, 40, planlock::store::postgres::pgvector::DEFAULT_EF_SEARCH];
    for ef_search in settings {
        let tier = PgStore::new(&db, "big").by_meaning(embedder.clone()).pgvector(ef_search);
        let r = recall(&exact, &tier, &queries);
        println!("pgvector: recall@10 {r:.3} at ef_search {ef_search}");
        if ef_search == planlock::store::postgres::pgvector::DEFAULT_EF_SEARCH {
            assert!(r >= 0.95, "recall@10 {r:.3} < 0.95");
        }
    }
    let small = PgStore::new(&db, "small")
        .by_meaning(embedder)
        .pgvector(planlock::store::postgres::pgvector::DEFAULT_EF_SEARCH);
    assert_eq!(block_on(small.search(&Call::new(), "q1", 10)).unwrap().len(), 5, "every row the namespace has");
    // Every search of `big` scanned the HNSW index. The pool's connections are closed first: a
    // server process reports its statistics as it ends (an idle one, within about ten seconds).
    drop((small, exact, db));
    let searches = (settings.len() * queries.len()) as i64;
    let waited = Instant::now();
    while index_scans(&mut client) - before < searches && waited.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(250));
    }
    let scans = index_scans(&mut client) - before;
    println!("pgvector: {scans} HNSW index scans for {searches} searches of `big` (and 1 of `small`)");
    assert!(scans >= searches, "the HNSW index answered {scans} of {searches} searches");
}
