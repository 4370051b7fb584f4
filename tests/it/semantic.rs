//! Retrieval by meaning without a server (CONTRACT §12): the providers `sqlite-semantic` and
//! `semantic-sql` with the demo embedder and with embedders defined here — hybrid ranking (an
//! exact identifier still wins), deterministic ties, a memory and its vector written together,
//! vectors of another model refused, the embedder pinned with the session and a different one
//! refused at boot (the first four are `tests/common/semantic.rs`, which `postgres-semantic`
//! passes too). `tests/models.rs` does the same with a real embedding model.
#![cfg(feature = "sqlite")]

use planlock::store::Call;
use std::sync::Arc;

use planlock::demo::Demo;
use planlock::embed::{DemoEmbedder, Embedder};
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::sqlite::SqliteStore;
use planlock::store::sqlite::semantic::{SemanticDecisions, SemanticMemory};
use planlock::store::{MemoryRepositoryPort, StoreHandlers};
use planlock::{Failure, FailureKind};

use crate::common;
use common::semantic::{self, Other, put};
use common::{plan_with, policy};

fn semantic(root: &std::path::Path, embedder: Arc<dyn Embedder>) -> SemanticMemory {
    SemanticMemory::new(SqliteStore::open(root), embedder)
}

#[test]
fn meaning_and_words_are_fused_and_an_exact_identifier_wins() {
    let root = tempfile::tempdir().unwrap();
    semantic::meaning_and_words_are_fused_and_an_exact_identifier_wins(|e| semantic(root.path(), e));
}

#[test]
fn ties_go_to_the_most_recent_every_time() {
    let root = tempfile::tempdir().unwrap();
    semantic::ties_go_to_the_most_recent_every_time(|e| semantic(root.path(), e));
}

#[test]
fn a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused() {
    let root = tempfile::tempdir().unwrap();
    semantic::a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused(|e| semantic(root.path(), e));
}

#[test]
fn semantic_sql_orders_the_decisions_in_scope_by_meaning_and_words() {
    let root = tempfile::tempdir().unwrap();
    semantic::decisions_in_scope_are_ordered_by_meaning_and_words(|e| {
        SemanticDecisions::new(SqliteStore::open(root.path()), e)
    });
}

#[test]
fn the_embedder_is_pinned_and_another_one_is_refused_at_boot() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let manifest =
        BundleManifest::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic")))
            .unwrap();
    let boot = |embedder: Arc<dyn Embedder>| {
        let resolver = StrategyResolver::default().embedder(embedder);
        let storage = StoreHandlers::new(resolver.resolve(&manifest, root.path()).unwrap());
        crate::common::runtime_on(pol.path(), root.path(), plan_with(|_| {}))
            .handlers(Demo::new().with_store(&storage).boxed())
            .bundle(manifest.clone())
            .resolver(resolver)
            .boot_blocking()
    };
    let mut rt = boot(Arc::new(DemoEmbedder::new())).unwrap();
    rt.run_cycle_blocking().unwrap();
    drop(rt);
    let pin: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.path().join(planlock::session::PIN_FILE)).unwrap()).unwrap();
    assert_eq!(
        (pin["embedder_model"].as_str(), pin["embedder_dimension"].as_u64()),
        (Some("planlock-demo-embedder"), Some(384))
    );
    let err = boot(Arc::new(Other { model: "another-model", fail: false })).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("embedder-mismatch", FailureKind::FailFast), "{err}");
    assert!(err.to_string().contains("planlock-demo-embedder") && err.to_string().contains("another-model"), "{err}");
    // Without an embedder the semantic providers cannot be opened, and say why.
    let err = StrategyResolver::default().resolve(&manifest, root.path()).unwrap_err();
    assert!(err.to_string().contains("needs an embedder"), "{err}");
}

#[test]
fn the_vectors_held_for_the_scan_are_bounded() {
    let root = tempfile::tempdir().unwrap();
    let writer = semantic(root.path(), Arc::new(DemoEmbedder::new()));
    for n in 1..=3 {
        put(&writer, n, "a memory").unwrap();
    }
    // Room for two vectors of 384 numbers, and the store holds three.
    let reader = semantic(root.path(), Arc::new(DemoEmbedder::new())).max_index_bytes(2 * 384 * 4);
    let err = planlock::block_on(reader.search(&Call::new(), "memory", 5)).unwrap_err();
    assert!(err.to_string().contains("MAX_INDEX_BYTES"), "{err}");
    assert_eq!(
        planlock::block_on(semantic(root.path(), Arc::new(DemoEmbedder::new())).search(&Call::new(), "memory", 5))
            .unwrap()
            .len(),
        3
    );
}
