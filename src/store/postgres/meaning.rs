//! Retrieval by meaning in PostgreSQL (CONTRACT §20): what [`PgStore::by_meaning`] adds to the
//! store, the provider `postgres-semantic`.
//!
//! - Vectors: each memory's and decision's vector is written by the same statement as the row
//!   (`planlock_put_memory_vector`, `planlock_persist_decision_vector`, schema 9), so in a cycle
//!   it travels with the save. A namespace's vectors are of one embedder, pinned by the first
//!   write (`planlock_vector_meta`); another is refused, by a write and by a search.
//! - Search: exact. The store holds its namespace's vectors in memory, contiguous, and reads
//!   only the ones written since, as two more statements of the search's batch (the same round
//!   trip as the word ranking, the cycle's reads ahead and its commit; the server stops them at
//!   the step's deadline). The memories' positions are dense and in commit order (given under
//!   the namespace's meta row lock), so nothing written is missed.
//! - Bounded: the newest [`MAX_EXACT_VECTORS`] of a namespace (or
//!   [`PgStore::max_exact_vectors`]). Older memories are still found by their words, never by
//!   meaning; a search of such a namespace says so on its call (a warning on the step).
//! - Fusion: the best [`CANDIDATES`] by meaning and the best [`CANDIDATES`] by words
//!   (`ts_rank`), by reciprocal rank fusion as on SQLite; ties to the more recent. The fused
//!   memories not already read with the word ranking are read in one more round trip.
//! - Decisions: the context `hierarchical-sql` loads, ordered by meaning and words as
//!   `semantic-sql` orders it on SQLite, with the decisions' stored vectors (read in one round
//!   trip; one missing or unusable is embedded for that read).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_postgres::Row;

use super::PgStore;
use crate::contract::schema::MemoryItem;
use crate::embed::{Embedder, Purpose, dot};
use crate::store::meaning::{CANDIDATES, best, blob, embed_one, fuse, mismatch, usable};
use crate::store::{Call, StoreError};

/// The most vectors of one namespace a store ranks exactly by default: the newest 100,000
/// (about 150 MiB at 384 dimensions). Older memories are found by words only.
pub const MAX_EXACT_VECTORS: usize = 100_000;

/// The namespace's embedder and how many memory vectors it has.
pub(super) const VECTOR_META: &str = "SELECT model, dimension, memories FROM planlock_vector_meta WHERE namespace = $1";

/// The memory vectors after position `$2`, at most the newest `$4`; a vector not `$3` bytes
/// long is read as NULL (its bytes are not sent).
pub(super) const VECTORS_SINCE: &str = "SELECT position, memory_id, CASE WHEN octet_length(vector) = $3 THEN vector END
     FROM planlock_memory_vectors
     WHERE namespace = $1 AND position > greatest($2,
         (SELECT coalesce(max(memories), 0) FROM planlock_vector_meta WHERE namespace = $1) - $4)
     ORDER BY position";

/// The stored vectors of some decisions (`$2`); one not `$3` bytes long is read as NULL.
const DECISION_VECTORS: &str =
    "SELECT decision_id, CASE WHEN octet_length(vector) = $3 THEN vector END FROM planlock_decision_vectors
     WHERE namespace = $1 AND decision_id = ANY($2)";

/// The embedder and the vectors a store holds for the exact ranking.
pub(super) struct Meaning {
    pub(super) embedder: Arc<dyn Embedder>,
    cap: usize,
    held: Mutex<Held>,
}

impl std::fmt::Debug for Meaning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meaning").field("model", &self.embedder.model()).field("cap", &self.cap).finish()
    }
}

/// A namespace's newest memory vectors, by position.
#[derive(Debug, Default)]
struct Held {
    /// The lowest position the window covers (0 when empty).
    from: i64,
    /// The highest position read.
    last: i64,
    positions: Vec<i64>,
    ids: Vec<String>,
    vectors: Vec<f32>,
    /// Rows of the window whose vector cannot be used (another length, degenerate).
    passed_over: usize,
}

/// What a search read for the exact ranking: the statements' rows, and where it read from.
pub(super) struct Since {
    pub(super) last: i64,
    pub(super) bytes: i32,
    pub(super) cap: i64,
}

impl Meaning {
    pub(super) fn new(embedder: Arc<dyn Embedder>) -> Meaning {
        Meaning { embedder, cap: MAX_EXACT_VECTORS, held: Mutex::default() }
    }

    pub(super) fn with_cap(&self, cap: usize) -> Meaning {
        Meaning { embedder: self.embedder.clone(), cap: cap.max(1), held: Mutex::default() }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What the search's batch reads: the vectors after the last one held.
    pub(super) fn since(&self) -> Since {
        Since {
            last: self.held().last,
            bytes: i32::try_from(self.embedder.dimension() * 4).unwrap_or(i32::MAX),
            cap: i64::try_from(self.cap).unwrap_or(i64::MAX),
        }
    }

    /// The query's vector.
    pub(super) async fn embed_query(&self, words: &[&str], deadline: Option<Instant>) -> Result<Vec<f32>, StoreError> {
        embed_one(&*self.embedder, words.join(" "), Purpose::Query, deadline).await
    }

    /// A passage's vector, as stored bytes with the embedder's model and dimension.
    pub(super) async fn embed_passage(
        &self,
        text: String,
        deadline: Option<Instant>,
    ) -> Result<Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>, StoreError> {
        let vector = embed_one(&*self.embedder, text, Purpose::Passage, deadline).await?;
        Ok(vec![
            Box::new(self.embedder.model().to_owned()),
            Box::new(i32::try_from(self.embedder.dimension()).unwrap_or(i32::MAX)),
            Box::new(blob(&vector)),
        ])
    }

    /// Refuses a namespace pinned to another embedder (`meta`: [`VECTOR_META`]'s rows).
    fn check(&self, meta: &[Row]) -> Result<(), StoreError> {
        if let Some(row) = meta.first() {
            let (model, dimension): (&str, i32) = (row.get(0), row.get(1));
            if model != self.embedder.model() || usize::try_from(dimension).ok() != Some(self.embedder.dimension()) {
                return Err(mismatch(model, i64::from(dimension), self.embedder.model(), self.embedder.dimension()));
            }
        }
        Ok(())
    }

    /// The fused ranking for `query` out of the word ranking (`words`: memory rows, best first)
    /// and the exact scan over the held vectors brought up to date with `meta` and `vectors`
    /// (the batch's rows): memory ids, best first, more than `top_k` so that rows that cannot be
    /// read leave the best that can.
    pub(super) fn rank(
        &self,
        call: &Call<'_>,
        query: &[f32],
        words: &[MemoryItem],
        meta: &[Row],
        vectors: &[Row],
    ) -> Result<Vec<String>, StoreError> {
        self.check(meta)?;
        let dimension = self.embedder.dimension();
        let mut held = self.held();
        for row in vectors {
            let (position, id, bytes): (i64, String, Option<&[u8]>) = (row.get(0), row.get(1), row.get(2));
            if position > held.last + 1 || held.from == 0 {
                // Rows between were past the cap: the window starts again here.
                *held = Held { from: position, ..Held::default() };
            }
            held.last = position;
            match bytes.and_then(|b| usable(b, dimension)) {
                Some(v) => {
                    held.positions.push(position);
                    held.ids.push(id);
                    held.vectors.extend_from_slice(&v);
                }
                None => held.passed_over += 1,
            }
        }
        // The newest `cap` only.
        let over = held.positions.len().saturating_sub(self.cap);
        if over > 0 {
            held.positions.drain(..over);
            held.ids.drain(..over);
            held.vectors.drain(..over * dimension);
            held.from = held.positions.first().copied().unwrap_or(held.last + 1);
        }
        let older = usize::try_from(held.from.saturating_sub(1)).unwrap_or(0);
        if older > 0 {
            call.warn(format!(
                "{older} older memories of this namespace are past the exact ranking's bound of {} vectors \
                 (MAX_EXACT_VECTORS, PgStore::max_exact_vectors): they were searched by words only",
                self.cap
            ));
        }
        call.passed_over(held.passed_over, "memory vectors");
        let scored =
            held.positions.iter().zip(held.vectors.chunks_exact(dimension.max(1))).map(|(p, v)| (dot(query, v), *p));
        let nearest = best(CANDIDATES, scored);
        let index: HashMap<i64, usize> = held.positions.iter().enumerate().map(|(i, p)| (*p, i)).collect();
        let position_of: HashMap<&str, i64> =
            held.ids.iter().map(String::as_str).zip(held.positions.iter().copied()).collect();
        let by_meaning: Vec<String> =
            nearest.iter().filter_map(|p| index.get(p)).map(|i| held.ids[*i].clone()).collect();
        let by_words: Vec<String> = words.iter().map(|m| m.id.clone()).collect();
        // Ties to the more recent: a memory without a held vector counts as the oldest.
        let recency = |id: &String| position_of.get(id.as_str()).copied().unwrap_or(0);
        Ok(fuse(&[&by_meaning, &by_words], CANDIDATES * 2, |a, b| recency(b).cmp(&recency(a))))
    }

    /// Orders `decisions` (the context `hierarchical-sql` loads) for `input` with their stored
    /// vectors, read in one round trip.
    pub(super) async fn order(
        &self,
        store: &PgStore,
        call: &Call<'_>,
        decisions: &mut Vec<crate::contract::schema::Decision>,
        input: &str,
    ) -> Result<(), StoreError> {
        if crate::store::meaning::lower_words(input).is_empty() || decisions.len() < 2 {
            return Ok(());
        }
        let ids: Vec<String> = decisions.iter().map(|d| d.id.clone()).collect();
        let dimension = self.embedder.dimension();
        let bytes = i32::try_from(dimension * 4).unwrap_or(i32::MAX);
        let namespace = store.namespace();
        let mut conn = store.connection().await?;
        let rows = conn
            .pipeline(
                &[
                    crate::pg::Query::new(VECTOR_META, &[&namespace]),
                    crate::pg::Query::new(DECISION_VECTORS, &[&namespace, &ids, &bytes]),
                ],
                crate::pg::Then::Stay,
            )
            .await
            .map_err(super::backend("reading the decisions' vectors"))?;
        self.check(&rows[0])?;
        let mut stored: HashMap<String, Option<Vec<f32>>> = HashMap::new();
        let mut passed_over = 0;
        for row in &rows[1] {
            let v = row.get::<_, Option<&[u8]>>(1).and_then(|b| usable(b, dimension));
            passed_over += usize::from(v.is_none());
            stored.insert(row.get(0), v);
        }
        let stored = ids.iter().map(|id| stored.remove(id).flatten()).collect();
        crate::store::meaning::order_decisions(decisions, stored, &*self.embedder, input, call.deadline()).await?;
        call.passed_over(passed_over, "decision vectors");
        Ok(())
    }
}
