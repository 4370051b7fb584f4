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
mod vectors;

pub use decisions::{STRATEGY, SemanticDecisions};
pub use index::MAX_INDEX_BYTES;
pub use memory::{COMMON_AT, MEMORY_PROVIDER, SemanticMemory};
use vectors::{ensure_vectors, has_vectors};

pub use crate::store::meaning::{CANDIDATES, RRF_K};
