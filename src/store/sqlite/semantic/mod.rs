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

use rusqlite::{Connection, OptionalExtension, params};

pub use decisions::SemanticDecisions;
pub use index::MAX_INDEX_BYTES;
pub use memory::SemanticMemory;

use super::backend;
use crate::store::StoreError;
use crate::store::meaning::mismatch;
pub use crate::store::meaning::{CANDIDATES, RRF_K};

/// The memory provider's id.
pub const MEMORY_PROVIDER: &str = "sqlite-semantic";

/// The strategy's id.
pub const STRATEGY: &str = "semantic-sql";

/// A word in at least this many memories (or a tenth of them, if more) is common: left out of
/// the word ranking.
pub const COMMON_AT: i64 = 1000;

/// How many common words a provider remembers (`memory::CommonWords`); past it, it starts over.
const MAX_COMMON_WORDS: usize = 4096;

const VECTOR_TABLES: &str = "
CREATE TABLE IF NOT EXISTS vector_meta (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL, dimension INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memory_vectors (memory_rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS decision_vectors (decision_id TEXT PRIMARY KEY, vector BLOB NOT NULL);
";

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

/// Whether the vector tables exist (a read creates nothing).
fn has_vectors(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'vector_meta'", [], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}
