//! The memory provider `sqlite-semantic`: memories searched by meaning and words together.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::ensure_vectors;
use super::index::Index;
use crate::contract::schema::MemoryItem;
use crate::embed::{Embedder, Purpose};
use crate::store::meaning::{CANDIDATES, blob, embed_one, fuse, memory_text};
use crate::store::sqlite::{SqliteStore, backend};
use crate::store::{Call, MemoryRepositoryPort, NewMemory, StoreError, query_words};

/// The memory provider's id.
pub const MEMORY_PROVIDER: &str = "sqlite-semantic";

/// A word in at least this many memories (or a tenth of them, if more) is common: left out of
/// the word ranking.
pub const COMMON_AT: i64 = 1000;

/// How many common words a provider remembers (`memory::CommonWords`); past it, it starts over.
const MAX_COMMON_WORDS: usize = 4096;

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

    /// Holds at most `bytes` of vectors for the scan (default [`MAX_INDEX_BYTES`](super::MAX_INDEX_BYTES)); a search of
    /// a store that holds more fails, naming the bound.
    pub fn max_index_bytes(self, bytes: usize) -> SemanticMemory {
        let index = Index::bounded(bytes);
        SemanticMemory { index: Arc::new(Mutex::new(index)), ..self }
    }
}

impl MemoryRepositoryPort for SemanticMemory {
    /// The search, within the call's deadline, passing over what cannot be read (said on the
    /// call): a vector row whose memory is gone (or a word match whose row is), a vector of
    /// another length or a degenerate one.
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query);
        let deadline = call.deadline();
        if words.is_empty() {
            // No words: the most recent, as every memory provider does.
            return self.store.search(call, query, top_k).await;
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
                // Fused over more than asked, so that rows passed over below leave the best
                // `top_k` that can be read.
                let fused = fuse(&[&by_meaning, &by_words], CANDIDATES * 2, |a, b| b.cmp(a));
                let mut stmt = conn.prepare_cached("SELECT id, summary, created_at FROM memories WHERE rowid = ?1")?;
                let mut found = (Vec::with_capacity(n.min(fused.len())), index.passed_over);
                for rowid in fused {
                    if found.0.len() == n {
                        break;
                    }
                    let item = stmt
                        .query_row(params![rowid], |r| {
                            Ok(MemoryItem { id: r.get(0)?, summary: r.get(1)?, timestamp: r.get(2)? })
                        })
                        .optional()?;
                    match item {
                        Some(item) => found.0.push(item),
                        None => found.1 += 1,
                    }
                }
                Ok(Ok(found))
            })
            .await?;
        match found {
            None => Ok(Vec::new()),
            Some(result) => {
                let (items, passed_over) = result?;
                call.passed_over(passed_over, "memories");
                Ok(items)
            }
        }
    }

    /// A key stored already answers before anything is embedded (a re-run pays for no
    /// embedding); a new memory is embedded within the call's deadline.
    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let key = call.key()?;
        if let Some(id) = self.store.stored_memory(key).await? {
            return Ok(id);
        }
        let text = memory_text(memory.summary, memory.keywords);
        let vector = embed_one(&*self.embedder, text, Purpose::Passage, call.deadline()).await?;
        let (model, dimension) = (self.embedder.model().to_owned(), self.embedder.dimension());
        let ready = self.tables_ready.clone();
        let stored = self
            .store
            .put_with(key, memory, move |tx, rowid| {
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

#[cfg(test)]
mod tests {
    use super::*;

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
