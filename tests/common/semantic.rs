//! The tests of retrieval by meaning that every provider ranking by meaning passes, whatever
//! holds its vectors: `sqlite-semantic`/`semantic-sql` (`tests/it/semantic.rs`) and
//! `postgres-semantic` (`tests/postgres/meaning.rs`). Each takes a way to open the provider on
//! one store (the same data each time it is called) with a given embedder.

use std::sync::Arc;

use planlock::PositiveInt;
use planlock::embed::{DemoEmbedder, EmbedError, EmbedFuture, Embedder, Purpose};
use planlock::schema::Decision;
use planlock::store::{
    Call, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, StoreError,
};

pub fn put(store: &impl MemoryRepositoryPort, n: u64, summary: &str) -> Result<String, StoreError> {
    let key = planlock::store::conformance::key(n);
    planlock::block_on(store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary, keywords: &[] }))
}

pub fn search(
    store: &impl MemoryRepositoryPort,
    query: &str,
    n: u64,
) -> Result<Vec<planlock::schema::MemoryItem>, StoreError> {
    planlock::block_on(store.search(&Call::new(), query, n))
}

/// An embedder of another model (or one that fails), for the refusals.
pub struct Other {
    pub model: &'static str,
    pub fail: bool,
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

pub fn demo() -> Arc<dyn Embedder> {
    Arc::new(DemoEmbedder::new())
}

/// Meaning and words fused: a memory sharing no word with the query is found, an exact
/// identifier still wins, and no words gives the most recent.
pub fn meaning_and_words_are_fused_and_an_exact_identifier_wins<S: MemoryRepositoryPort>(
    open: impl Fn(Arc<dyn Embedder>) -> S,
) {
    let store = open(demo());
    put(&store, 1, "rotation of the api keys in the vault").unwrap();
    put(&store, 2, "lunch menu for friday").unwrap();
    put(&store, 3, "incident INC4711 postmortem").unwrap();
    put(&store, 4, "deploying the web frontend").unwrap();
    // `rotating` shares no word with the first memory, only pieces of one (the demo embedder).
    let found = search(&store, "rotating keys", 2).unwrap();
    assert_eq!(found[0].summary, "rotation of the api keys in the vault", "{found:?}");
    let found = search(&store, "INC4711", 1).unwrap();
    assert_eq!(found[0].summary, "incident INC4711 postmortem");
    // No words: the most recent, as every provider does.
    let found = search(&store, "", 1).unwrap();
    assert_eq!(found[0].summary, "deploying the web frontend");
    // A key written again answers what it answered, and adds no memory.
    put(&store, 4, "deploying the web frontend").unwrap();
    assert_eq!(
        search(&store, "frontend deploying", 10).unwrap().iter().filter(|m| m.summary.contains("frontend")).count(),
        1
    );
}

/// Equal scores go to the most recent, every time; another instance (another process) sees the
/// rows added since.
pub fn ties_go_to_the_most_recent_every_time<S: MemoryRepositoryPort>(open: impl Fn(Arc<dyn Embedder>) -> S) {
    let store = open(demo());
    let ids: Vec<String> = (1..=4).map(|n| put(&store, n, "the same text").unwrap()).collect();
    for _ in 0..3 {
        let found: Vec<String> = search(&store, "same text", 4).unwrap().into_iter().map(|m| m.id).collect();
        assert_eq!(found, ids.iter().rev().cloned().collect::<Vec<_>>());
    }
    let other = open(demo());
    assert_eq!(search(&other, "same text", 9).unwrap().len(), 4);
    put(&store, 9, "the same text").unwrap();
    assert_eq!(search(&other, "same text", 9).unwrap().len(), 5);
}

/// A failed embedding writes nothing; a store of one model's vectors refuses another's, on a
/// write and on a search, naming both.
pub fn a_failed_embedding_writes_nothing_and_another_models_vectors_are_refused<S: MemoryRepositoryPort>(
    open: impl Fn(Arc<dyn Embedder>) -> S,
) {
    let failing = open(Arc::new(Other { model: "m", fail: true }));
    let err = put(&failing, 1, "never stored").unwrap_err();
    assert!(err.to_string().contains("the server is down"), "{err}");
    assert!(search(&open(demo()), "", 5).unwrap().is_empty());

    put(&open(demo()), 2, "stored with the demo").unwrap();
    let other = open(Arc::new(Other { model: "another-model", fail: false }));
    for err in [put(&other, 3, "refused").unwrap_err(), search(&other, "stored", 5).unwrap_err()] {
        assert!(
            err.to_string().contains("planlock-demo-embedder") && err.to_string().contains("another-model"),
            "{err}"
        );
    }
    assert_eq!(search(&open(demo()), "", 5).unwrap().len(), 1, "the refused write left nothing");
}

/// The decisions in scope (hierarchical-sql's scopes), ordered by meaning and words; without
/// words, the hierarchical order.
pub fn decisions_in_scope_are_ordered_by_meaning_and_words<S: DecisionContextProviderPort + DecisionWritePort>(
    open: impl Fn(Arc<dyn Embedder>) -> S,
) {
    let strategy = open(demo());
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
