//! [`InMemoryStore`]: every port in memory, with the same rules as the SQLite store (the
//! `conformance` suite, feature `testing`, holds both to them). For tests and examples; nothing
//! survives the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::write::{self, Answer, Change, End, Read, RowByRow};
use super::{
    Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, StoreError,
    query_words,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::hash::IdempotencyKey;

/// Memories, decisions, evidence and links in memory. Clones share the same data.
#[derive(Debug, Clone, Default)]
pub struct InMemoryStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Oldest first: the position is the recency.
    memories: Vec<StoredMemory>,
    decisions: Vec<Decision>,
    evidence: Vec<Evidence>,
    links: Vec<Anchor>,
    /// What each idempotency key's write returned.
    writes: HashMap<IdempotencyKey, String>,
}

#[derive(Debug)]
struct StoredMemory {
    item: MemoryItem,
    /// Lowercased words of the summary and keywords.
    words: Vec<String>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> InMemoryStore {
        InMemoryStore::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner.lock().map_err(|_| StoreError::Backend("the in-memory store's lock is poisoned".into()))
    }
}

impl MemoryRepositoryPort for InMemoryStore {
    async fn search(&self, _call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let inner = self.lock()?;
        let words: Vec<String> = query_words(query).into_iter().map(str::to_lowercase).collect();
        let top_k = usize::try_from(top_k).unwrap_or(usize::MAX);
        let newest_first = inner.memories.iter().enumerate().rev();
        if words.is_empty() {
            return Ok(newest_first.take(top_k).map(|(_, m)| m.item.clone()).collect());
        }
        // Relevance: how many of the query's words the memory holds; then recency.
        let mut hits: Vec<(usize, usize, &StoredMemory)> = newest_first
            .map(|(at, m)| (words.iter().filter(|w| m.words.contains(w)).count(), at, m))
            .filter(|(score, _, _)| *score > 0)
            .collect();
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
        Ok(hits.into_iter().take(top_k).map(|(_, _, m)| m.item.clone()).collect())
    }

    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let key = call.key()?;
        let mut inner = self.lock()?;
        if let Some(id) = inner.writes.get(key) {
            return Ok(id.clone());
        }
        let id = format!("mem-{}", &key.to_string()[..16]);
        let text = format!("{} {}", memory.summary, memory.keywords.join(" "));
        let words = query_words(&text).into_iter().map(str::to_lowercase).collect();
        let timestamp = super::now();
        let item = MemoryItem { id: id.clone(), summary: memory.summary.to_owned(), timestamp };
        inner.memories.push(StoredMemory { item, words });
        inner.writes.insert(*key, id.clone());
        Ok(id)
    }
}

impl DecisionContextProviderPort for InMemoryStore {
    async fn load(
        &self,
        _call: &Call<'_>,
        _input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        let inner = self.lock()?;
        Ok(DecisionContext::in_scope(&inner.decisions, &inner.links, current_domain))
    }
}

impl DecisionWritePort for InMemoryStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        let key = call.key()?;
        let mut inner = self.lock()?;
        // The rows are in memory: the write is ready at once.
        crate::io::block_on(write::persist_decision(&mut *inner, decision, key))
    }

    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        let key = call.key()?;
        let mut inner = self.lock()?;
        // The rows are in memory: the write is ready at once.
        crate::io::block_on(write::persist_evidence(&mut *inner, evidence, key))
    }

    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        let key = call.key()?;
        let mut inner = self.lock()?;
        // The rows are in memory: the write is ready at once.
        crate::io::block_on(write::link(&mut *inner, anchor, key))
    }
}

/// The rows in memory. A write that fails changes nothing before it fails: its changes and
/// the record of its key come after its checks and do not fail.
impl RowByRow for Inner {
    fn written(&mut self, key: &IdempotencyKey) -> Result<Option<String>, StoreError> {
        Ok(self.writes.get(key).cloned())
    }

    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> Result<(), StoreError> {
        self.writes.insert(*key, result.to_owned());
        Ok(())
    }

    fn read_one(&mut self, read: Read<'_>) -> Result<Answer, StoreError> {
        Ok(match read {
            Read::Decision(id) => Answer::Decision(self.decisions.iter().find(|d| d.id == id).cloned()),
            Read::ActiveVersions(root) => Answer::ActiveVersions(
                self.decisions.iter().filter(|d| d.root_id == root && d.is_active).cloned().collect(),
            ),
            Read::Evidence(id) => Answer::Evidence(
                self.evidence.iter().find(|e| e.id == id).map(|e| (e.summary.clone(), e.source.clone())),
            ),
            Read::Exists(End::Decision, id) => Answer::Exists(self.decisions.iter().any(|d| d.id == id)),
            Read::Exists(End::Evidence, id) => Answer::Exists(self.evidence.iter().any(|e| e.id == id)),
        })
    }

    fn change(&mut self, change: Change<'_>) -> Result<bool, StoreError> {
        Ok(match change {
            Change::Deactivate(id) => match self.decisions.iter_mut().find(|d| d.id == id && d.is_active) {
                Some(d) => {
                    d.is_active = false;
                    true
                }
                None => false,
            },
            Change::InsertDecision(decision) => {
                self.decisions.push(Decision { is_active: true, ..decision.clone() });
                true
            }
            Change::InsertEvidence(evidence) if self.evidence.iter().any(|e| e.id == evidence.id) => false,
            Change::InsertEvidence(evidence) => {
                self.evidence.push(evidence.clone());
                true
            }
            Change::InsertLink(anchor) if self.links.contains(anchor) => false,
            Change::InsertLink(anchor) => {
                self.links.push(anchor.clone());
                true
            }
        })
    }
}
