//! Retrieval by meaning without a server (CONTRACT §12): the providers `sqlite-semantic` and
//! `semantic-sql` with the demo embedder and with embedders defined here — hybrid ranking (an
//! exact identifier still wins), deterministic ties, a memory and its vector written together,
//! vectors of another model refused, the embedder pinned with the session and a different one
//! refused at boot. `tests/models.rs` does the same with a real embedding model.
#![cfg(feature = "sqlite")]

use planlock::store::Call;
use std::sync::Arc;

use planlock::demo::Demo;
use planlock::embed::{DemoEmbedder, EmbedError, EmbedFuture, Embedder, Purpose};
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::sqlite::SqliteStore;
use planlock::store::sqlite::semantic::{SemanticDecisions, SemanticMemory};
use planlock::store::{DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, StoreHandlers};
use planlock::{Failure, FailureKind};

use crate::common;
use common::{plan_with, policy};

fn put(store: &impl MemoryRepositoryPort, n: u64, summary: &str) -> Result<String, planlock::store::StoreError> {
    let key = planlock::store::conformance::key(n);
    planlock::block_on(store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary, keywords: &[] }))
}

fn semantic(root: &std::path::Path, embedder: Arc<dyn Embedder>) -> SemanticMemory {
    SemanticMemory::new(SqliteStore::open(root), embedder)
}

#[test]
fn meaning_and_words_are_fused_and_an_exact_identifier_wins() {
    let root = tempfile::tempdir().unwrap();
    let store = semantic(root.path(), Arc::new(DemoEmbedder::new()));
    put(&store, 1, "rotation of the api keys in the vault").unwrap();
    put(&store, 2, "lunch menu for friday").unwrap();
    put(&store, 3, "incident INC4711 postmortem").unwrap();
    put(&store, 4, "deploying the web frontend").unwrap();
    // `rotating` shares no word with the first memory, only pieces of one (the demo embedder).
    let found = planlock::block_on(store.search(&Call::new(), "rotating keys", 2)).unwrap();
    assert_eq!(found[0].summary, "rotation of the api keys in the vault", "{found:?}");
    let found = planlock::block_on(store.search(&Call::new(), "INC4711", 1)).unwrap();
    assert_eq!(found[0].summary, "incident INC4711 postmortem");
    // No words: the most recent, as every provider does.
    let found = planlock::block_on(store.search(&Call::new(), "", 1)).unwrap();
    assert_eq!(found[0].summary, "deploying the web frontend");
}

#[test]
fn ties_go_to_the_most_recent_every_time() {
    let root = tempfile::tempdir().unwrap();
    let store = semantic(root.path(), Arc::new(DemoEmbedder::new()));
    let ids: Vec<String> = (1..=4).map(|n| put(&store, n, "the same text").unwrap()).collect();
    for _ in 0..3 {
        let found: Vec<String> =
            planlock::block_on(store.search(&Call::new(), "same text", 4)).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(found, ids.iter().rev().cloned().collect::<Vec<_>>());
    }
    // Another process (another store on the same file) sees the rows added since.
    let other = semantic(root.path(), Arc::new(DemoEmbedder::new()));
    put(&store, 9, "the same text").unwrap();
    assert_eq!(planlock::block_on(other.search(&Call::new(), "same text", 9)).unwrap().len(), 5);
}

/// An embedder of another model (or one that fails), for the refusals.
struct Other {
    model: &'static str,
    fail: bool,
}

impl Embedder for Other {
    fn model(&self) -> &str {
        self.model
    }
    fn dimension(&self) -> usize {
        DemoEmbedder::DIMENSION
    }
    fn embed<'a>(&'a self, texts: &'a [String], purpose: Purpose, _: Option<std::time::Instant>) -> EmbedFuture<'a> {
        if self.fail {
            let e = EmbedError::new(self.model, "the server is down");
            return Box::pin(std::future::ready(Err(e)));
        }
        Embedder::embed(&DemoEmbedder, texts, purpose, None)
    }
}

#[test]
fn a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let failing = semantic(root.path(), Arc::new(Other { model: "m", fail: true }));
    let err = put(&failing, 1, "never stored").unwrap_err();
    assert!(err.to_string().contains("the server is down"), "{err}");
    assert!(planlock::block_on(SqliteStore::open(root.path()).search(&Call::new(), "", 5)).unwrap().is_empty());

    put(&semantic(root.path(), Arc::new(DemoEmbedder::new())), 2, "stored with the demo").unwrap();
    let other = semantic(root.path(), Arc::new(Other { model: "another-model", fail: false }));
    for err in [
        put(&other, 3, "refused").unwrap_err(),
        planlock::block_on(other.search(&Call::new(), "stored", 5)).unwrap_err(),
    ] {
        assert!(
            err.to_string().contains("planlock-demo-embedder") && err.to_string().contains("another-model"),
            "{err}"
        );
    }
}

#[test]
fn semantic_sql_orders_the_decisions_in_scope_by_meaning_and_words() {
    use planlock::PositiveInt;
    use planlock::schema::Decision;
    let root = tempfile::tempdir().unwrap();
    let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    let decision = |id: &str, text: &str, scope: &str| Decision {
        id: id.into(),
        root_id: id.into(),
        version: PositiveInt::MIN,
        text: text.into(),
        strength: "must".into(),
        scope: scope.into(),
        is_active: true,
        previous_version_id: None,
    };
    let all = [
        decision("g", "write tests before merging", "global"),
        decision("a", "rotate api keys every 90 days", "axis"),
        decision("d", "lunch is at noon", "domain:office"),
        decision("x", "rotate keys in other domains", "domain:elsewhere"),
    ];
    for (n, d) in all.iter().enumerate() {
        planlock::block_on(
            strategy.persist_decision(&Call::new().keyed(planlock::store::conformance::key(n as u64)), d),
        )
        .unwrap();
    }
    let ctx = planlock::block_on(strategy.load(&Call::new(), "how often do we rotate keys", Some("office"))).unwrap();
    let ids: Vec<&str> = ctx.decisions.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids[0], "a", "{ids:?}");
    assert_eq!(ids.len(), 3, "the scopes are hierarchical-sql's: another domain stays out: {ids:?}");
    // Without words, the hierarchical order.
    let ctx = planlock::block_on(strategy.load(&Call::new(), "", Some("office"))).unwrap();
    assert_eq!(ctx.decisions.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(), ["g", "a", "d"]);
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
