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

mod decisions;
mod index;
mod memory;

use std::cmp::Ordering;
use std::collections::HashMap;
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension, params};

pub use decisions::SemanticDecisions;
pub use index::MAX_INDEX_BYTES;
pub use memory::SemanticMemory;

use super::backend;
use crate::embed::{Embedder, Purpose, check_vectors, degenerate};
use crate::store::StoreError;

/// The memory provider's id.
pub const MEMORY_PROVIDER: &str = "sqlite-semantic";

/// The strategy's id.
pub const STRATEGY: &str = "semantic-sql";

/// How many of each ranking's best are fused.
pub const CANDIDATES: usize = 50;

/// A word in at least this many memories (or a tenth of them, if more) is common: left out of
/// the word ranking.
pub const COMMON_AT: i64 = 1000;

/// How many common words a provider remembers (`memory::CommonWords`); past it, it starts over.
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

/// A stored vector, if it can be ranked by: `dimension` numbers, none of them NaN or infinite,
/// of a usable length (CONTRACT §11: a row may have been edited).
fn usable(b: &[u8], dimension: usize) -> Option<Vec<f32>> {
    let v: Vec<f32> = (b.len() == dimension * 4)
        .then(|| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())?;
    degenerate(&v).is_none().then_some(v)
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

/// Vectors for texts, each checked as a server's answer is (one per text, the dimension, none
/// degenerate), whatever the embedder: a NaN vector would rank first for every query.
async fn embed_checked(
    embedder: &dyn Embedder,
    texts: &[String],
    purpose: Purpose,
    deadline: Option<Instant>,
) -> Result<Vec<Vec<f32>>, StoreError> {
    let vectors = embedder.embed(texts, purpose, deadline).await?;
    check_vectors(embedder.model(), embedder.dimension(), texts.len(), &vectors)?;
    Ok(vectors)
}

/// One vector for one text.
async fn embed_one(
    embedder: &dyn Embedder,
    text: String,
    purpose: Purpose,
    deadline: Option<Instant>,
) -> Result<Vec<f32>, StoreError> {
    let mut vectors = embed_checked(embedder, &[text], purpose, deadline).await?;
    vectors.pop().ok_or_else(|| StoreError::Backend(format!("the embedder `{}` returned no vector", embedder.model())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_being_high_in_both_rankings() {
        // 7 is first by words only, 3 second in both: both rankings agreeing wins.
        let fused = fuse(&[&[1, 3, 5][..], &[7, 3, 9][..]], 3, |a: &i64, b| b.cmp(a));
        assert_eq!(fused[0], 3);
        // An exact identifier found only by words still makes the top.
        assert!(fused.contains(&7));
    }

    #[test]
    fn a_stored_vector_is_used_only_when_it_can_be_ranked_by() {
        let bytes = |v: &[f32]| blob(v);
        assert_eq!(usable(&bytes(&[0.6, 0.8]), 2), Some(vec![0.6, 0.8]));
        assert_eq!(usable(&bytes(&[0.6, 0.8]), 3), None, "another length");
        assert_eq!(usable(&bytes(&[f32::NAN, 1.0]), 2), None);
        assert_eq!(usable(&bytes(&[0.0, 0.0]), 2), None);
    }
}
