//! Retrieval by meaning in the embedded SQLite store (docs/CONTRACT.md, "Retrieval by meaning";
//! CONTRACT §12): the memory provider `sqlite-semantic` ([`SemanticMemory`]) and the strategy
//! `semantic-sql` ([`SemanticDecisions`]). Both keep one vector per memory or decision beside it
//! in the session root's database and rank hybrid: the vector ranking (cosine) is fused with the
//! word ranking (BM25) by reciprocal rank fusion, so an exact identifier still wins.
//!
//! - Vectors: `memory_vectors(memory_rowid, vector)` and `decision_vectors(decision_id, vector)`,
//!   little-endian `f32`, normalized; `vector_meta` names the model and dimension they belong to,
//!   and a store of another model's vectors is refused (they would mean something else).
//! - Search: an exact scan over the vectors held in memory, contiguous (loaded once per process,
//!   then only the rows added since, so another process's writes are seen), on a thread of its
//!   own while the word ranking runs on the connection's. Measured against the
//!   `sqlite-vec` alternative in the note of issue 19: a scan of 100,000 × 384 takes a few
//!   milliseconds, which an index does not need to beat at this size.
//! - Fusion: the best [`CANDIDATES`] of each ranking; a memory's score is the sum over the
//!   rankings it is in of `1 / (RRF_K + rank)` (rank from 1); ties go to the more recent. The word
//!   ranking leaves out words in more than a tenth of the memories (at least [`COMMON_AT`]): they
//!   weigh almost nothing in BM25, and ranking every memory they are in would cost more than the
//!   whole vector scan. A word found common is remembered (memories are never deleted, so it
//!   stays common until the store outgrows its count), sparing the count on the next query.
//! - A memory is written with its vector in one transaction. A decision's vector is written
//!   after it; one missing (written by `hierarchical-sql`, or a crash between) is embedded when
//!   the decision is loaded, and not written by that read.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, backend};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::embed::{Embedder, Purpose, dot};
use crate::hash::IdempotencyKey;
use crate::store::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, StoreError,
    query_words,
};

/// The memory provider's id.
pub const MEMORY_PROVIDER: &str = "sqlite-semantic";

/// The strategy's id.
pub const STRATEGY: &str = "semantic-sql";

/// How many of each ranking's best are fused.
pub const CANDIDATES: usize = 50;

/// A word in at least this many memories (or a tenth of them, if more) is common: left out of
/// the word ranking.
pub const COMMON_AT: i64 = 1000;

/// How many common words a provider remembers (see [`CommonWords`]); past it, it starts over.
const MAX_COMMON_WORDS: usize = 4096;

/// The constant of reciprocal rank fusion (the usual 60).
pub const RRF_K: f32 = 60.0;

const VECTOR_TABLES: &str = "
CREATE TABLE IF NOT EXISTS vector_meta (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL, dimension INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memory_vectors (memory_rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS decision_vectors (decision_id TEXT PRIMARY KEY, vector BLOB NOT NULL);
";

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn unblob(b: &[u8], dimension: usize) -> Option<Vec<f32>> {
    (b.len() == dimension * 4)
        .then(|| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Creates the vector tables in a write, and refuses vectors of another model.
fn ensure_vectors(tx: &rusqlite::Transaction<'_>, model: &str, dimension: usize) -> Result<(), StoreError> {
    tx.execute_batch(VECTOR_TABLES).map_err(backend("creating the vector tables"))?;
    let stored: Option<(String, i64)> = tx
        .query_row("SELECT model, dimension FROM vector_meta WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
        .map_err(backend("reading the vector model"))?;
    match stored {
        None => tx
            .execute(
                "INSERT INTO vector_meta (id, model, dimension) VALUES (1, ?1, ?2)",
                params![model, dimension as i64],
            )
            .map(drop)
            .map_err(backend("recording the vector model")),
        Some((m, d)) if m == model && d == dimension as i64 => Ok(()),
        Some((m, d)) => Err(mismatch(&m, d, model, dimension)),
    }
}

fn mismatch(stored: &str, stored_dim: i64, model: &str, dimension: usize) -> StoreError {
    StoreError::Conflict(format!(
        "the store holds vectors of `{}` ({stored_dim} dimensions), but the embedder is `{}` ({dimension}); \
         vectors of another model mean something else",
        crate::text::printable(stored),
        crate::text::printable(model)
    ))
}

/// Whether the vector tables exist (a read creates nothing).
fn has_vectors(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'vector_meta'", [], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}

/// The most bytes of vectors a process holds for the scan by default: about 700,000 memories of
/// 384 dimensions. A store holding more (a file under the root may be anything) is refused, not
/// read into memory without end.
pub const MAX_INDEX_BYTES: usize = 1 << 30;

/// The vectors of the memories, in memory and contiguous, with the rowid each belongs to.
#[derive(Debug)]
struct Index {
    rowids: Vec<i64>,
    vectors: Vec<f32>,
    last: i64,
    limit_bytes: usize,
}

impl Default for Index {
    fn default() -> Self {
        Index { rowids: Vec::new(), vectors: Vec::new(), last: 0, limit_bytes: MAX_INDEX_BYTES }
    }
}

impl Index {
    /// Loads the rows added since the last load.
    fn refresh(
        &mut self,
        conn: &Connection,
        model: &str,
        dimension: usize,
    ) -> rusqlite::Result<Result<(), StoreError>> {
        if !has_vectors(conn)? {
            return Ok(Ok(()));
        }
        let meta: Option<(String, i64)> = conn
            .query_row("SELECT model, dimension FROM vector_meta WHERE id = 1", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((m, d)) = meta
            && (m != model || d != dimension as i64)
        {
            return Ok(Err(mismatch(&m, d, model, dimension)));
        }
        let mut stmt = conn.prepare_cached(
            "SELECT memory_rowid, vector FROM memory_vectors WHERE memory_rowid > ?1 ORDER BY memory_rowid",
        )?;
        let mut rows = stmt.query(params![self.last])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            // Read in place: a row of another length is no vector of this model (and is not
            // copied, whatever its size); it is left out of the scan.
            if let Some(v) = row.get_ref(1)?.as_blob().ok().and_then(|b| unblob(b, dimension)) {
                if (self.vectors.len() + v.len()) * 4 > self.limit_bytes {
                    return Ok(Err(StoreError::Backend(format!(
                        "the store holds more vectors than the in-memory scan takes ({} bytes, MAX_INDEX_BYTES or \
                         SemanticMemory::max_index_bytes); search fewer memories per store",
                        self.limit_bytes
                    ))));
                }
                self.rowids.push(rowid);
                self.vectors.extend_from_slice(&v);
            }
            self.last = rowid;
        }
        Ok(Ok(()))
    }

    /// The best `n` rowids by cosine with `query`, best first.
    fn nearest(&self, query: &[f32], n: usize) -> Vec<i64> {
        best(n, self.rowids.iter().zip(self.vectors.chunks_exact(query.len().max(1))).map(|(r, v)| (dot(query, v), *r)))
    }
}

/// The best `n` of `(score, rowid)`, best first; equal scores go to the higher rowid (the more
/// recent).
fn best(n: usize, scored: impl Iterator<Item = (f32, i64)>) -> Vec<i64> {
    #[derive(PartialEq)]
    struct Worst(f32, i64);
    impl Eq for Worst {}
    impl PartialOrd for Worst {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Worst {
        // The heap's top is the worst kept: the lowest score, then the lowest rowid.
        fn cmp(&self, other: &Self) -> Ordering {
            other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
        }
    }
    if n == 0 {
        return Vec::new();
    }
    let mut heap = BinaryHeap::with_capacity(n + 1);
    for (score, rowid) in scored {
        // Most rows are no better than the worst kept: one comparison, no heap work.
        if heap.len() == n && heap.peek().is_some_and(|worst: &Worst| Worst(score, rowid) >= *worst) {
            continue;
        }
        heap.push(Worst(score, rowid));
        if heap.len() > n {
            heap.pop();
        }
    }
    heap.into_sorted_vec().into_iter().map(|w| w.1).collect()
}

/// Reciprocal rank fusion of rankings (each best first) of the same kind of key: the best `n`,
/// ties to the key that `tie` orders first.
fn fuse<K: Copy + Eq + std::hash::Hash>(rankings: &[&[K]], n: usize, tie: impl Fn(&K, &K) -> Ordering) -> Vec<K> {
    let mut scores: HashMap<K, f32> = HashMap::new();
    for ranking in rankings {
        for (rank, key) in ranking.iter().enumerate() {
            *scores.entry(*key).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(K, f32)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| tie(&a.0, &b.0)));
    fused.into_iter().take(n).map(|(k, _)| k).collect()
}

/// Words found common, each with how many memories it was counted in (at least). Memories are
/// never deleted, so a word's count only grows: while what was counted still passes the
/// threshold of the store's present size, the word is common without a recount (counting a
/// common word reads 1,000 or more of its postings: half a millisecond each time).
#[derive(Debug, Default)]
struct CommonWords(HashMap<String, i64>);

impl CommonWords {
    /// Whether `word` is known to be in more than `common` memories.
    fn known(&self, word: &str, common: i64) -> bool {
        self.0.get(word).is_some_and(|counted| *counted > common)
    }
    fn remember(&mut self, word: &str, counted: i64) {
        if self.0.len() >= MAX_COMMON_WORDS {
            self.0.clear();
        }
        self.0.insert(word.to_owned(), counted);
    }
}

/// The word ranking's candidates: the best [`CANDIDATES`] by BM25, from the query's words that
/// are not in more than a tenth of the memories (at least [`COMMON_AT`]). Such a word weighs
/// almost nothing in BM25 (its inverse document frequency is near zero), but ranking every
/// memory it is in costs a read of each; left out, the word ranking costs what the rarer words
/// cost. The vector ranking still reads the whole query.
fn word_ranking(conn: &Connection, words: &[String], known: &mut CommonWords) -> rusqlite::Result<Vec<i64>> {
    let total: i64 = conn.query_row("SELECT coalesce(max(rowid), 0) FROM memories", [], |r| r.get(0))?;
    let common = (total / 10).max(COMMON_AT);
    // How many memories a word is in, counted up to the threshold: a bounded read of its
    // postings. (FTS5's vocabulary table counts a common word's documents by reading all of
    // them: 2.2 ms for a word in 100,000 memories, against 0.5 ms here.)
    let mut count = conn
        .prepare_cached("SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 LIMIT ?2)")?;
    let mut kept = Vec::new();
    for word in words {
        if known.known(word, common) {
            continue;
        }
        let quoted = format!("\"{word}\"");
        let n: i64 = count.query_row(params![quoted, common + 1], |r| r.get(0))?;
        if n <= common {
            kept.push(quoted);
        } else {
            known.remember(word, n);
        }
    }
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    conn.prepare_cached(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank, rowid DESC LIMIT ?2",
    )?
    .query_map(params![kept.join(" OR "), CANDIDATES as i64], |r| r.get(0))?
    .collect()
}

/// One vector for one text.
async fn embed_one(
    embedder: &dyn Embedder,
    text: String,
    purpose: Purpose,
    deadline: Option<Instant>,
) -> Result<Vec<f32>, StoreError> {
    let texts = [text];
    let mut vectors =
        embedder.embed(&texts, purpose, deadline).await.map_err(|e| StoreError::Backend(e.to_string()))?;
    vectors.pop().ok_or_else(|| StoreError::Backend(format!("the embedder `{}` returned no vector", embedder.model())))
}

/// The memory provider `sqlite-semantic`: memories in the session root's SQLite store, each
/// with its vector, searched by meaning and words together (see the module docs).
#[derive(Clone)]
pub struct SemanticMemory {
    store: SqliteStore,
    embedder: Arc<dyn Embedder>,
    index: Arc<Mutex<Index>>,
    common: Arc<Mutex<CommonWords>>,
    /// Whether this process has made sure of the vector tables and their model: once is enough
    /// (tables are never dropped, and `vector_meta` never changes).
    tables_ready: Arc<std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for SemanticMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticMemory").field("store", &self.store).field("model", &self.embedder.model()).finish()
    }
}

impl SemanticMemory {
    /// The provider over `store`, embedding with `embedder`.
    pub fn new(store: SqliteStore, embedder: Arc<dyn Embedder>) -> SemanticMemory {
        SemanticMemory { store, embedder, index: Arc::default(), common: Arc::default(), tables_ready: Arc::default() }
    }

    /// Holds at most `bytes` of vectors for the scan (default [`MAX_INDEX_BYTES`]); a search of
    /// a store that holds more fails, naming the bound.
    pub fn max_index_bytes(self, bytes: usize) -> SemanticMemory {
        let index = Index { limit_bytes: bytes, ..Index::default() };
        SemanticMemory { index: Arc::new(Mutex::new(index)), ..self }
    }
}

impl MemoryRepositoryPort for SemanticMemory {
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        self.search_within(query, top_k, None).await
    }

    async fn search_within(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<Instant>,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query);
        if words.is_empty() {
            // No words: the most recent, as every memory provider does.
            return self.store.search_within(query, top_k, deadline).await;
        }
        // The query as the word ranking reads it: its bounded words, nothing else.
        let vector = embed_one(&*self.embedder, words.join(" "), Purpose::Query, deadline).await?;
        let (index, common) = (self.index.clone(), self.common.clone());
        let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
        let (model, dimension) = (self.embedder.model().to_owned(), self.embedder.dimension());
        let n = usize::try_from(top_k).unwrap_or(usize::MAX);
        let found = self
            .store
            .read_within(deadline, move |conn| {
                let mut index = index.lock().map_err(|_| rusqlite::Error::InvalidQuery)?;
                if let Err(e) = index.refresh(conn, &model, dimension)? {
                    return Ok(Err(e));
                }
                // The scan and the word ranking run at once: the scan on a thread of its own, the
                // ranking on this one, which holds the connection. (Where no thread can be had,
                // one after the other.)
                let index = &*index;
                let (by_meaning, by_words) = std::thread::scope(|scope| {
                    let scan = std::thread::Builder::new().spawn_scoped(scope, || index.nearest(&vector, CANDIDATES));
                    let mut common = common.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    let by_words = word_ranking(conn, &words, &mut common);
                    let by_meaning = match scan {
                        Ok(handle) => handle.join().unwrap_or_else(|_| index.nearest(&vector, CANDIDATES)),
                        Err(_) => index.nearest(&vector, CANDIDATES),
                    };
                    (by_meaning, by_words)
                });
                let by_words = by_words?;
                let fused = fuse(&[&by_meaning, &by_words], n, |a, b| b.cmp(a));
                let mut stmt = conn.prepare_cached("SELECT id, summary, created_at FROM memories WHERE rowid = ?1")?;
                let mut items = Vec::with_capacity(fused.len());
                for rowid in fused {
                    let item = stmt.query_row(params![rowid], |r| {
                        Ok(MemoryItem { id: r.get(0)?, summary: r.get(1)?, timestamp: r.get(2)? })
                    });
                    items.push(item?);
                }
                Ok(Ok(items))
            })
            .await?;
        match found {
            None => Ok(Vec::new()),
            Some(result) => result,
        }
    }

    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let text = std::iter::once(memory.summary)
            .chain(memory.keywords.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let vector = embed_one(&*self.embedder, text, Purpose::Passage, None).await?;
        let (model, dimension) = (self.embedder.model().to_owned(), self.embedder.dimension());
        let ready = self.tables_ready.clone();
        let stored = self
            .store
            .put_with(memory, move |tx, rowid| {
                if !ready.load(std::sync::atomic::Ordering::Acquire) {
                    ensure_vectors(tx, &model, dimension)?;
                }
                tx.prepare_cached("INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?1, ?2)")
                    .and_then(|mut insert| insert.execute(params![rowid, blob(&vector)]))
                    .map(drop)
                    .map_err(backend("storing a memory's vector"))
            })
            .await?;
        // Committed: the tables and their model are there for every later put of this process.
        self.tables_ready.store(true, std::sync::atomic::Ordering::Release);
        Ok(stored)
    }
}

/// The strategy `semantic-sql`: the decisions `hierarchical-sql` would load (the same scopes, the
/// active versions), ordered by meaning and words together instead of by scope (see the module
/// docs); their anchors as before.
#[derive(Clone)]
pub struct SemanticDecisions {
    store: SqliteStore,
    embedder: Arc<dyn Embedder>,
}

impl std::fmt::Debug for SemanticDecisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticDecisions").field("store", &self.store).field("model", &self.embedder.model()).finish()
    }
}

impl SemanticDecisions {
    /// The strategy over `store`, embedding with `embedder`.
    pub fn new(store: SqliteStore, embedder: Arc<dyn Embedder>) -> SemanticDecisions {
        SemanticDecisions { store, embedder }
    }
}

/// BM25 (k1 = 1.2, b = 0.75) of each text for `words`, the texts themselves the corpus.
fn bm25(texts: &[Vec<String>], words: &[String]) -> Vec<f32> {
    let n = texts.len() as f32;
    let average = texts.iter().map(Vec::len).sum::<usize>() as f32 / n.max(1.0);
    let idf = |w: &String| {
        let having = texts.iter().filter(|t| t.contains(w)).count() as f32;
        ((n - having + 0.5) / (having + 0.5) + 1.0).ln()
    };
    let weights: Vec<f32> = words.iter().map(idf).collect();
    texts
        .iter()
        .map(|t| {
            let length = t.len() as f32;
            words
                .iter()
                .zip(&weights)
                .map(|(w, idf)| {
                    let f = t.iter().filter(|x| *x == w).count() as f32;
                    idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / average.max(1.0)))
                })
                .sum()
        })
        .collect()
}

fn lower_words(text: &str) -> Vec<String> {
    query_words(text).iter().map(|w| w.to_lowercase()).collect()
}

impl DecisionContextProviderPort for SemanticDecisions {
    async fn load(&self, input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        let mut context = self.store.load(input, current_domain).await?;
        let words = lower_words(input);
        if words.is_empty() || context.decisions.len() < 2 {
            return Ok(context);
        }
        let ids: Vec<String> = context.decisions.iter().map(|d| d.id.clone()).collect();
        let dimension = self.embedder.dimension();
        let stored = self
            .store
            .read_within(None, move |conn| {
                let mut out = vec![None; ids.len()];
                if !has_vectors(conn)? {
                    return Ok(out);
                }
                let mut stmt = conn.prepare_cached("SELECT vector FROM decision_vectors WHERE decision_id = ?1")?;
                for (slot, id) in out.iter_mut().zip(&ids) {
                    let bytes: Option<Vec<u8>> = stmt.query_row(params![id], |r| r.get(0)).optional()?;
                    *slot = bytes.and_then(|b| unblob(&b, dimension));
                }
                Ok(out)
            })
            .await?
            .unwrap_or_default();
        // Decisions without a stored vector are embedded now (nothing is written by a read).
        let missing: Vec<String> = context
            .decisions
            .iter()
            .zip(stored.iter().chain(std::iter::repeat(&None)))
            .filter(|(_, v)| v.is_none())
            .map(|(d, _)| d.text.clone())
            .collect();
        let mut fresh = if missing.is_empty() {
            Vec::new().into_iter()
        } else {
            self.embedder
                .embed(&missing, Purpose::Passage, None)
                .await
                .map_err(|e| StoreError::Backend(e.to_string()))?
                .into_iter()
        };
        let vectors: Vec<Vec<f32>> = stored
            .into_iter()
            .chain(std::iter::repeat(None))
            .take(context.decisions.len())
            .map(|v| v.or_else(|| fresh.next()).unwrap_or_default())
            .collect();
        let query = embed_one(&*self.embedder, words.join(" "), Purpose::Query, None).await?;
        let positions: Vec<usize> = (0..context.decisions.len()).collect();
        let by_meaning = {
            let mut p = positions.clone();
            p.sort_by(|a, b| dot(&query, &vectors[*b]).total_cmp(&dot(&query, &vectors[*a])).then(a.cmp(b)));
            p
        };
        let scores = bm25(&context.decisions.iter().map(|d| lower_words(&d.text)).collect::<Vec<_>>(), &words);
        let by_words: Vec<usize> = {
            let mut p: Vec<usize> = positions.iter().copied().filter(|i| scores[*i] > 0.0).collect();
            p.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
            p
        };
        // Ties keep the hierarchical order (global, axis, domain).
        let order = fuse(&[&by_meaning, &by_words], positions.len(), |a, b| a.cmp(b));
        let mut decisions: Vec<Option<Decision>> = context.decisions.into_iter().map(Some).collect();
        context.decisions = order.into_iter().filter_map(|i| decisions[i].take()).collect();
        Ok(context)
    }
}

impl DecisionWritePort for SemanticDecisions {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        let vector = embed_one(&*self.embedder, decision.text.clone(), Purpose::Passage, None).await?;
        let id = self.store.persist_decision(decision, key).await?;
        let (model, dimension, decision_id) = (self.embedder.model().to_owned(), self.embedder.dimension(), id.clone());
        self.store
            .write(move |tx| {
                ensure_vectors(tx, &model, dimension)?;
                tx.execute(
                    "INSERT OR REPLACE INTO decision_vectors (decision_id, vector) VALUES (?1, ?2)",
                    params![decision_id, blob(&vector)],
                )
                .map(drop)
                .map_err(backend("storing a decision's vector"))
            })
            .await?;
        Ok(id)
    }
    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        self.store.persist_evidence(evidence, key).await
    }
    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        self.store.link(anchor, key).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_keeps_the_top_scores_and_breaks_ties_by_recency() {
        let scored = [(0.5, 1), (0.9, 2), (0.5, 3), (0.1, 4), (0.9, 5)];
        assert_eq!(best(3, scored.into_iter()), [5, 2, 3]);
        assert_eq!(best(10, std::iter::empty()), Vec::<i64>::new());
    }

    #[test]
    fn fusion_rewards_being_high_in_both_rankings() {
        // 7 is first by words only, 3 second in both: both rankings agreeing wins.
        let fused = fuse(&[&[1, 3, 5][..], &[7, 3, 9][..]], 3, |a: &i64, b| b.cmp(a));
        assert_eq!(fused[0], 3);
        // An exact identifier found only by words still makes the top.
        assert!(fused.contains(&7));
    }

    #[test]
    fn bm25_prefers_the_text_with_the_rare_word() {
        let texts = vec![vec!["rotate".into(), "keys".into()], vec!["deploy".into(), "keys".into()]];
        let s = bm25(&texts, &["rotate".into()]);
        assert!(s[0] > 0.0 && s[1] == 0.0);
    }

    #[test]
    fn a_word_remembered_common_is_counted_again_once_the_store_outgrows_it() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE memories (summary TEXT, keywords TEXT);
             CREATE VIRTUAL TABLE memories_fts USING fts5(summary, keywords, content = 'memories', content_rowid = 'rowid');
             CREATE TRIGGER i AFTER INSERT ON memories BEGIN
                 INSERT INTO memories_fts (rowid, summary, keywords) VALUES (new.rowid, new.summary, new.keywords);
             END;",
        )
        .unwrap();
        let add = |n: usize, text: &str| {
            conn.execute_batch("BEGIN").unwrap();
            for _ in 0..n {
                conn.execute("INSERT INTO memories VALUES (?1, '')", [text]).unwrap();
            }
            conn.execute_batch("COMMIT").unwrap();
        };
        let words = ["alpha".to_owned()];
        add(1100, "alpha");
        let mut known = CommonWords::default();
        assert!(word_ranking(&conn, &words, &mut known).unwrap().is_empty(), "in 1,100 of 1,100: common");
        assert!(known.known("alpha", 1000), "and remembered");
        // Still common at 1,100 of 10,999 (the threshold is 1,099): no recount, same answer.
        add(9899, "beta");
        assert!(word_ranking(&conn, &words, &mut known).unwrap().is_empty());
        // At 1,100 of 11,100 it is no longer common: counted again and ranked.
        add(101, "beta");
        assert_eq!(word_ranking(&conn, &words, &mut known).unwrap().len(), CANDIDATES);
    }
}
