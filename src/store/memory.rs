//! [`InMemoryStore`]: every port in memory, with the same rules as the SQLite store (the
//! [`conformance`](super::conformance) suite holds both to them). For tests and examples; nothing
//! survives the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Scope,
    StoreError, check_version, query_words, same_decision,
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
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
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

    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let mut inner = self.lock()?;
        if let Some(id) = inner.writes.get(memory.key) {
            return Ok(id.clone());
        }
        let id = format!("mem-{}", &memory.key.to_string()[..16]);
        let text = format!("{} {}", memory.summary, memory.keywords.join(" "));
        let words = query_words(&text).into_iter().map(str::to_lowercase).collect();
        let timestamp = super::now();
        let item = MemoryItem { id: id.clone(), summary: memory.summary.to_owned(), timestamp };
        inner.memories.push(StoredMemory { item, words });
        inner.writes.insert(*memory.key, id.clone());
        Ok(id)
    }
}

impl DecisionContextProviderPort for InMemoryStore {
    async fn load(&self, _input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        let inner = self.lock()?;
        let in_scope = |d: &&Decision| match Scope::of(&d.scope) {
            Scope::Global | Scope::Axis => true,
            Scope::Domain(name) => current_domain == Some(name),
        };
        let mut decisions: Vec<Decision> =
            inner.decisions.iter().filter(|d| d.is_active).filter(in_scope).cloned().collect();
        decisions.sort_by_key(|d| Scope::of(&d.scope).rank());
        let anchors = inner.links.iter().filter(|a| decisions.iter().any(|d| d.id == a.decision_id)).cloned().collect();
        Ok(DecisionContext { decisions, anchors })
    }
}

impl DecisionWritePort for InMemoryStore {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        let mut inner = self.lock()?;
        if let Some(id) = inner.writes.get(key) {
            return Ok(id.clone());
        }
        if let Some(stored) = inner.decisions.iter().find(|d| d.id == decision.id) {
            if same_decision(stored, decision) {
                inner.writes.insert(*key, decision.id.clone());
                return Ok(decision.id.clone());
            }
            return Err(StoreError::Conflict(format!("decision `{}` is stored with other content", decision.id)));
        }
        check_version(&inner.decisions, decision)?;
        if let Some(previous) = &decision.previous_version_id
            && let Some(p) = inner.decisions.iter_mut().find(|d| &d.id == previous)
        {
            p.is_active = false;
        }
        let mut stored = decision.clone();
        stored.is_active = true;
        inner.decisions.push(stored);
        inner.writes.insert(*key, decision.id.clone());
        Ok(decision.id.clone())
    }

    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        let mut inner = self.lock()?;
        if let Some(id) = inner.writes.get(key) {
            return Ok(id.clone());
        }
        match inner.evidence.iter().find(|e| e.id == evidence.id) {
            Some(stored) if stored == evidence => {}
            Some(_) => {
                return Err(StoreError::Conflict(format!("evidence `{}` is stored with other content", evidence.id)));
            }
            None => inner.evidence.push(evidence.clone()),
        }
        inner.writes.insert(*key, evidence.id.clone());
        Ok(evidence.id.clone())
    }

    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        let mut inner = self.lock()?;
        if let Some(status) = inner.writes.get(key) {
            return Ok(status.clone());
        }
        if !inner.decisions.iter().any(|d| d.id == anchor.decision_id) {
            return Err(StoreError::NotFound(format!("decision `{}` to link", anchor.decision_id)));
        }
        if !inner.evidence.iter().any(|e| e.id == anchor.evidence_id) {
            return Err(StoreError::NotFound(format!("evidence `{}` to link", anchor.evidence_id)));
        }
        if !inner.links.contains(anchor) {
            inner.links.push(anchor.clone());
        }
        inner.writes.insert(*key, "linked".into());
        Ok("linked".into())
    }
}
