//! The conformance suite every implementation of the ports runs: the rules of docs/CONTRACT.md,
//! "Storage behind ports", as assertions. Call [`run`] from a test with a function that makes an
//! empty store; it panics, naming the rule, at the first one broken.
//!
//! ```
//! planlock::store::conformance::run(planlock::store::memory::InMemoryStore::new);
//! ```

use uuid::Uuid;

use super::{
    Call, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Storage, StoreError,
};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::contract::value::PositiveInt;
use crate::hash::{Digest, IdempotencyKey};

/// Runs every check, each on a fresh store from `empty`.
pub fn run<P, F>(empty: F)
where
    P: Storage,
    F: Fn() -> P,
{
    memories(&empty());
    decisions(&empty());
}

/// [`run`] for a store that ranks by meaning as well as by words (`sqlite-semantic`,
/// `postgres-semantic`): a search finds the nearest memories even when no word matches, so
/// where [`run`] asserts that only the memories matching a word are found, this asserts that
/// they come first.
pub fn run_by_meaning<P, F>(empty: F)
where
    P: Storage,
    F: Fn() -> P,
{
    memories_ranked(&empty(), Ranking::MeaningAndWords);
    decisions(&empty());
}

/// How a store ranks its memories.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ranking {
    Words,
    MeaningAndWords,
}

/// The first `n` ids of a search's answer.
fn first(found: &[crate::contract::schema::MemoryItem], n: usize) -> Vec<&str> {
    found.iter().take(n).map(|m| m.id.as_str()).collect()
}

/// A key for write `n` of a test.
pub fn key(n: u64) -> IdempotencyKey {
    IdempotencyKey::derive(Uuid::nil(), &Digest::of(b"conformance"), n, "step")
}

fn block<T>(f: impl std::future::Future<Output = T>) -> T {
    crate::io::block_on(f)
}

fn memory<'a>(summary: &'a str, keywords: &'a [String]) -> NewMemory<'a> {
    NewMemory { session_ref: "s1", summary, keywords }
}

/// A decision of root `root`, version `version`, following `previous`.
pub fn decision(id: &str, root: &str, version: u64, scope: &str, previous: Option<&str>) -> Decision {
    Decision {
        id: id.into(),
        root_id: root.into(),
        version: PositiveInt::new(version).unwrap_or(PositiveInt::MIN),
        text: format!("text of {id}"),
        strength: "must".into(),
        scope: scope.into(),
        is_active: true,
        previous_version_id: previous.map(Into::into),
    }
}

fn refused<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::Refused(_)) => {}
        other => panic!("{what}: expected a refusal, got {other:?}"),
    }
}

fn conflict<T: std::fmt::Debug>(r: Result<T, StoreError>, what: &str) {
    match r {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("{what}: expected a conflict, got {other:?}"),
    }
}

/// Memories: keyed puts, search by words (never a query language), ranking, limits.
pub fn memories<P: MemoryRepositoryPort>(store: &P) {
    memories_ranked(store, Ranking::Words);
}

fn memories_ranked<P: MemoryRepositoryPort>(store: &P, ranking: Ranking) {
    let words_only = ranking == Ranking::Words;
    assert!(block(store.search(&Call::new(), "anything", 10)).unwrap().is_empty(), "an empty store finds nothing");
    let none: Vec<String> = vec![];
    let (k1, k2, k3, k4) = (key(1), key(2), key(3), key(4));
    let rotate =
        block(store.put(&Call::new().keyed(k1), memory("Rotate the API key in the vault", &["security".into()])))
            .unwrap();
    let again =
        block(store.put(&Call::new().keyed(k1), memory("Rotate the API key in the vault", &["security".into()])))
            .unwrap();
    assert_eq!(rotate, again, "a put under the same key returns the first id");
    assert_eq!(block(store.search(&Call::new(), "", 10)).unwrap().len(), 1, "and stores nothing more");
    let deploy =
        block(store.put(&Call::new().keyed(k2), memory("Deploy on Fridays only with approval", &none))).unwrap();
    let older = block(store.put(&Call::new().keyed(k3), memory("Lunch menu", &["food".into()]))).unwrap();
    let newer = block(store.put(&Call::new().keyed(k4), memory("Lunch menu", &["food".into()]))).unwrap();
    assert_ne!(older, newer, "two keys, two memories");
    refused(block(store.put(&Call::new(), memory("No key", &none))), "a put without a key");
    assert!(
        block(store.search(&Call::new(), "key", 10)).unwrap().iter().all(|m| m.summary != "No key"),
        "stores nothing"
    );

    let found = block(store.search(&Call::new(), "how do I rotate the key?", 10)).unwrap();
    assert_eq!(found.first().map(|m| m.id.as_str()), Some(rotate.as_str()), "a matching memory is found");
    if words_only {
        assert!(found.iter().all(|m| m.id != deploy), "one that matches no word is not: {found:?}");
    }
    let by_keyword = block(store.search(&Call::new(), "SECURITY", 10)).unwrap();
    match ranking {
        Ranking::Words => assert_eq!(by_keyword.len(), 1, "keywords are searched, whatever the case"),
        Ranking::MeaningAndWords => {
            assert_eq!(first(&by_keyword, 1), [rotate.as_str()], "keywords are searched, whatever the case")
        }
    }
    let ties = block(store.search(&Call::new(), "lunch", 10)).unwrap();
    let n = if words_only { ties.len() } else { 2 };
    assert_eq!(first(&ties, n), [newer.as_str(), older.as_str()], "equal relevance: the most recent first");
    assert_eq!(block(store.search(&Call::new(), "lunch menu food", 1)).unwrap().len(), 1, "at most top_k");
    let recent = block(store.search(&Call::new(), "  ?! ", 2)).unwrap();
    let ids: Vec<_> = recent.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, [newer.as_str(), older.as_str()], "no words: the most recent top_k");
    for text in ["\"", "*", "NEAR(a b)", "-lunch", "a OR b AND (c", "lunch\"", "key^2", "col:rotate", "\u{0}"] {
        assert!(block(store.search(&Call::new(), text, 5)).is_ok(), "query syntax in the text is text: {text:?}");
    }
    assert!(!block(store.search(&Call::new(), "NOT lunch", 5)).unwrap().is_empty(), "NOT is a word, not an operator");
    assert!(found.iter().all(|m| !m.timestamp.is_empty()), "every memory has its timestamp");
}

/// Decisions: versions, the one active version per root, compare-and-set, scopes, anchors.
pub fn decisions<P: DecisionContextProviderPort + DecisionWritePort>(store: &P) {
    let ctx = block(store.load(&Call::new(), "anything", None)).unwrap();
    assert!(ctx.decisions.is_empty() && ctx.anchors.is_empty(), "an empty store has no context");
    let v1 = decision("d1", "d", 1, "global", None);
    refused(block(store.persist_decision(&Call::new(), &v1)), "a decision written without a key");
    assert!(block(store.load(&Call::new(), "anything", None)).unwrap().decisions.is_empty(), "writes nothing");
    assert_eq!(block(store.persist_decision(&Call::new().keyed(key(10)), &v1)).unwrap(), "d1");
    assert_eq!(
        block(store.persist_decision(&Call::new().keyed(key(10)), &v1)).unwrap(),
        "d1",
        "a retry under the same key"
    );
    assert_eq!(
        block(store.persist_decision(&Call::new().keyed(key(11)), &v1)).unwrap(),
        "d1",
        "the same write in a later cycle"
    );
    let mut changed = v1.clone();
    changed.text = "another text".into();
    conflict(block(store.persist_decision(&Call::new().keyed(key(12)), &changed)), "the same id with other content");
    // Key 11's write found its content stored and wrote nothing, but it is recorded all the same:
    // a retry under key 11 answers what the first try answered, whatever it carries now.
    assert_eq!(
        block(store.persist_decision(&Call::new().keyed(key(11)), &changed)).unwrap(),
        "d1",
        "a key whose write found identical content stored is recorded like any other"
    );
    conflict(
        block(store.persist_decision(&Call::new().keyed(key(13)), &decision("d1b", "d", 1, "global", None))),
        "a second root start",
    );
    conflict(
        block(store.persist_decision(&Call::new().keyed(key(14)), &decision("x1", "x", 2, "axis", None))),
        "a new root not at version 1",
    );
    conflict(
        block(store.persist_decision(&Call::new().keyed(key(15)), &decision("d2", "d", 3, "global", Some("d1")))),
        "a version skipped",
    );
    let v2 = decision("d2", "d", 2, "global", Some("d1"));
    assert_eq!(block(store.persist_decision(&Call::new().keyed(key(16)), &v2)).unwrap(), "d2");
    conflict(
        block(store.persist_decision(&Call::new().keyed(key(17)), &decision("d2b", "d", 2, "global", Some("d1")))),
        "following a version that is no longer active (compare-and-set)",
    );
    let ctx = block(store.load(&Call::new(), "anything", None)).unwrap();
    let ids: Vec<_> = ctx.decisions.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["d2"], "only the active version is loaded");
    assert!(ctx.decisions[0].is_active);
    assert_eq!(
        block(store.persist_decision(&Call::new().keyed(key(18)), &v1)).unwrap(),
        "d1",
        "an old version re-sent is no conflict"
    );

    block(store.persist_decision(&Call::new().keyed(key(20)), &decision("a1", "a", 1, "axis", None))).unwrap();
    block(store.persist_decision(&Call::new().keyed(key(21)), &decision("s1", "s", 1, "domain:security", None)))
        .unwrap();
    block(store.persist_decision(&Call::new().keyed(key(22)), &decision("b1", "b", 1, "domain:billing", None)))
        .unwrap();
    let scoped = |domain| {
        let ctx = block(store.load(&Call::new(), "anything", domain)).unwrap();
        ctx.decisions.iter().map(|d| d.id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(scoped(None), ["d2", "a1"], "without a domain: global, then axis");
    assert_eq!(scoped(Some("security")), ["d2", "a1", "s1"], "with one: global, axis, that domain");

    let evidence = Evidence { id: "e1".into(), summary: "an audit".into(), source: "ci".into() };
    assert_eq!(block(store.persist_evidence(&Call::new().keyed(key(30)), &evidence)).unwrap(), "e1");
    assert_eq!(
        block(store.persist_evidence(&Call::new().keyed(key(31)), &evidence)).unwrap(),
        "e1",
        "the same evidence again"
    );
    let other = Evidence { summary: "another audit".into(), ..evidence.clone() };
    conflict(
        block(store.persist_evidence(&Call::new().keyed(key(32)), &other)),
        "the same evidence id with other content",
    );
    let link = |d: &str, e: &str| Anchor { decision_id: d.into(), evidence_id: e.into() };
    assert_eq!(block(store.link(&Call::new().keyed(key(40)), &link("s1", "e1"))).unwrap(), "linked");
    assert_eq!(
        block(store.link(&Call::new().keyed(key(41)), &link("s1", "e1"))).unwrap(),
        "linked",
        "a link again is one link"
    );
    block(store.link(&Call::new().keyed(key(42)), &link("b1", "e1"))).unwrap();
    match block(store.link(&Call::new().keyed(key(43)), &link("missing", "e1"))) {
        Err(StoreError::NotFound(_)) => {}
        other => panic!("a link to a missing decision: expected not found, got {other:?}"),
    }
    match block(store.link(&Call::new().keyed(key(44)), &link("s1", "missing"))) {
        Err(StoreError::NotFound(_)) => {}
        other => panic!("a link to missing evidence: expected not found, got {other:?}"),
    }
    let ctx = block(store.load(&Call::new(), "anything", Some("security"))).unwrap();
    assert_eq!(ctx.anchors, [link("s1", "e1")], "the anchors of the loaded decisions only, each once");
}
