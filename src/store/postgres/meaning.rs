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

use super::{KeyedWrite, PgStore};
use crate::contract::schema::MemoryItem;
use crate::embed::{Embedder, Purpose, dot};
use crate::pg::cycle::KeptVectors;
use crate::pg::{Query, Then};
use crate::store::meaning::{CANDIDATES, best, blob, embed_one, fuse, mismatch, usable};
use crate::store::{Call, StoreError};

/// The most vectors of one namespace a store ranks exactly by default: the newest 100,000
/// (about 150 MiB at 384 dimensions). Older memories are found by words only.
pub const MAX_EXACT_VECTORS: usize = 100_000;

/// The namespace's embedder and how many memory vectors it has.
pub(super) const VECTOR_META: &str =
    "SELECT model, dimension, memories FROM planlock_vector_meta WHERE planlock_mine(tenant) AND namespace = $1";

/// The memory vectors after position `$2`, at most the newest `$4`, newest first (a backward
/// scan of the namespace's positions: it reads no more than it returns); a vector not `$3` bytes
/// long is read as NULL (its bytes are not sent).
pub(super) const VECTORS_SINCE: &str = "SELECT position, CASE WHEN octet_length(memory_id) <= 256 THEN memory_id END,
         CASE WHEN octet_length(vector) = $3 THEN vector END
     FROM planlock_memory_vectors WHERE planlock_mine(tenant) AND namespace = $1 AND position > $2
     ORDER BY position DESC LIMIT $4";

/// The stored vectors of a namespace's active decisions (at most `$3`), read ahead with them by
/// a cycle's memory search; one not `$2` bytes long is read as NULL.
pub(super) const ACTIVE_DECISION_VECTORS: &str =
    "SELECT v.decision_id, CASE WHEN octet_length(v.vector) = $2 THEN v.vector END
     FROM planlock_decision_vectors v
     JOIN planlock_decisions d ON d.namespace = v.namespace AND d.id = v.decision_id AND d.tenant = v.tenant
     WHERE planlock_mine(v.tenant) AND v.namespace = $1 AND d.is_active LIMIT $3";

/// Plans the next statements for their parameters.
const CUSTOM_PLAN: &str = "SET LOCAL plan_cache_mode = force_custom_plan";

/// The stored vectors of some decisions (`$2`); one not `$3` bytes long is read as NULL.
const DECISION_VECTORS: &str =
    "SELECT decision_id, CASE WHEN octet_length(vector) = $3 THEN vector END FROM planlock_decision_vectors
     WHERE planlock_mine(tenant) AND namespace = $1 AND decision_id = ANY($2)";

/// The embedder and the vectors a store holds for the exact ranking.
pub(super) struct Meaning {
    pub(super) embedder: Arc<dyn Embedder>,
    cap: usize,
    held: Mutex<Held>,
    tier: Tier,
}

/// How the vector ranking is made.
#[derive(Debug, Clone)]
enum Tier {
    /// Exactly, over the vectors the store holds.
    Exact,
    /// By the server's HNSW index (the pgvector tier): `SET LOCAL hnsw.ef_search = …`.
    Hnsw { set_ef_search: String },
}

/// `hnsw.iterative_scan` for the pgvector tier: a filtered scan goes on until it has the rows
/// asked for (or `hnsw.max_scan_tuples`), in order.
const ITERATIVE_SCAN: &str = "SET LOCAL hnsw.iterative_scan = strict_order";

/// The planner takes the HNSW index, not a scan of the table and a sort (`super::pgvector`).
const INDEX_ONLY: &str = "SET LOCAL enable_seqscan = off";

/// The pgvector tier's nearest memories of a namespace (`$2`: the query in pgvector's text),
/// each with its position: equal distances go to the more recent, as in the exact ranking.
const NEAREST: &str = "SELECT CASE WHEN octet_length(n.memory_id) <= 256 THEN n.memory_id END, v.position FROM (
         SELECT memory_id, embedding <#> $2::text::vector AS distance FROM planlock_memory_embeddings
         WHERE planlock_mine(tenant) AND namespace = $1 ORDER BY distance LIMIT $3) n
     JOIN planlock_memory_vectors v ON planlock_mine(v.tenant) AND v.namespace = $1 AND v.memory_id = n.memory_id
     ORDER BY n.distance, v.position DESC";

/// The same, ranked exactly by the server (the `OFFSET 0` keeps the index out): when the index
/// scan stopped short.
const NEAREST_EXACTLY: &str =
    "SELECT CASE WHEN octet_length(n.memory_id) <= 256 THEN n.memory_id END, v.position FROM (
         SELECT memory_id, embedding <#> $2::text::vector AS distance FROM (
             SELECT memory_id, embedding FROM planlock_memory_embeddings WHERE planlock_mine(tenant) AND namespace = $1 OFFSET 0) s
         ORDER BY distance LIMIT $3) n
     JOIN planlock_memory_vectors v ON planlock_mine(v.tenant) AND v.namespace = $1 AND v.memory_id = n.memory_id
     ORDER BY n.distance, v.position DESC";

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

/// The statements a search adds to its batch for the vector ranking, with their parameters.
pub(super) enum Reads<'a> {
    /// The namespace's embedder, and the vectors after position `last`, at most the newest `cap`.
    Exact { last: i64, bytes: i32, cap: i64 },
    /// The namespace's embedder, the scan's settings and the index's nearest.
    Hnsw { set_ef_search: &'a str, query: String, limit: i64 },
}

/// What those statements read.
pub(super) struct Read {
    meta: Vec<Row>,
    rows: Vec<Row>,
}

impl Reads<'_> {
    /// The statements, for `namespace`.
    pub(super) fn queries<'q>(&'q self, namespace: &'q &'q str) -> Vec<Query<'q>> {
        match self {
            Reads::Exact { last, bytes, cap } => vec![
                Query::new(VECTOR_META, &[namespace]),
                // Planned for its parameters: a generic plan cannot know that few rows follow
                // `last`, and may scan the table.
                Query::new(CUSTOM_PLAN, &[]),
                Query::new(VECTORS_SINCE, &[namespace, last, bytes, cap]),
            ],
            Reads::Hnsw { set_ef_search, query, limit } => vec![
                Query::new(VECTOR_META, &[namespace]),
                Query::new(set_ef_search, &[]),
                Query::new(ITERATIVE_SCAN, &[]),
                Query::new(INDEX_ONLY, &[]),
                Query::new(NEAREST, &[namespace, query, limit]),
            ],
        }
    }

    /// Their rows, taken off the end of the batch's.
    pub(super) fn take(&self, batch: &mut Vec<Vec<Row>>) -> Read {
        let n = match self {
            Reads::Exact { .. } => 3,
            Reads::Hnsw { .. } => 5,
        };
        let mut mine = batch.split_off(batch.len().saturating_sub(n));
        let rows = mine.pop().unwrap_or_default();
        Read { meta: mine.into_iter().next().unwrap_or_default(), rows }
    }
}

impl Meaning {
    pub(super) fn new(embedder: Arc<dyn Embedder>) -> Meaning {
        Meaning { embedder, cap: MAX_EXACT_VECTORS, held: Mutex::default(), tier: Tier::Exact }
    }

    pub(super) fn with_cap(&self, cap: usize) -> Meaning {
        Meaning { embedder: self.embedder.clone(), cap: cap.max(1), held: Mutex::default(), tier: self.tier.clone() }
    }

    pub(super) fn with_hnsw(&self, ef_search: u32) -> Meaning {
        let tier = Tier::Hnsw { set_ef_search: format!("SET LOCAL hnsw.ef_search = {}", ef_search.clamp(1, 1000)) };
        Meaning { embedder: self.embedder.clone(), cap: self.cap, held: Mutex::default(), tier }
    }

    /// Whether the ranking is the pgvector tier's.
    pub(super) fn is_hnsw(&self) -> bool {
        matches!(self.tier, Tier::Hnsw { .. })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// What the search's batch reads for the vector ranking of `query`.
    pub(super) fn reads(&self, query: &[f32]) -> Reads<'_> {
        match &self.tier {
            Tier::Exact => Reads::Exact {
                last: self.held().last,
                bytes: i32::try_from(self.embedder.dimension() * 4).unwrap_or(i32::MAX),
                cap: i64::try_from(self.cap).unwrap_or(i64::MAX),
            },
            Tier::Hnsw { set_ef_search } => Reads::Hnsw {
                set_ef_search,
                query: crate::store::postgres::pgvector::vector_text(query),
                limit: i64::try_from(CANDIDATES).unwrap_or(i64::MAX),
            },
        }
    }

    /// The query's vector.
    pub(super) async fn embed_query(&self, words: &[&str], deadline: Option<Instant>) -> Result<Vec<f32>, StoreError> {
        embed_one(&*self.embedder, words.join(" "), Purpose::Query, deadline).await
    }

    /// Makes `write` (a memory's, `text` its words) carry the memory's vector, embedded within
    /// `deadline`; with the pgvector tier, its embedding too, in the same statement.
    pub(super) async fn memory_write(
        &self,
        write: &mut KeyedWrite,
        text: String,
        deadline: Option<Instant>,
    ) -> Result<(), StoreError> {
        let vector = self.carry(write, text, deadline).await?;
        write.sql = "SELECT planlock_put_memory_vector($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";
        if self.is_hnsw() {
            // `$11` the embedding, `$12` the result expected.
            write.values.push(Box::new(crate::store::postgres::pgvector::vector_text(&vector)));
            write.sql = "WITH w AS MATERIALIZED (
                    SELECT planlock_put_memory_vector($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12) AS r),
                 e AS (INSERT INTO planlock_memory_embeddings (namespace, memory_id, embedding)
                    SELECT $1, r, $11::text::vector FROM w WHERE r = $3 ON CONFLICT DO NOTHING)
                 SELECT r FROM w";
        }
        Ok(())
    }

    /// Makes `write` (a decision's, `text` its text) carry the decision's vector.
    pub(super) async fn decision_write(
        &self,
        write: &mut KeyedWrite,
        text: String,
        deadline: Option<Instant>,
    ) -> Result<(), StoreError> {
        self.carry(write, text, deadline).await?;
        write.sql =
            "SELECT planlock_persist_decision_vector($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";
        Ok(())
    }

    /// Embeds `text` as a passage and adds the vector's parameters to `write` (the model, the
    /// dimension, the bytes, as the write functions take them); the vector.
    async fn carry(
        &self,
        write: &mut KeyedWrite,
        text: String,
        deadline: Option<Instant>,
    ) -> Result<Vec<f32>, StoreError> {
        let vector = embed_one(&*self.embedder, text, Purpose::Passage, deadline).await?;
        write.values.push(Box::new(self.embedder.model().to_owned()));
        write.values.push(Box::new(i32::try_from(self.embedder.dimension()).unwrap_or(i32::MAX)));
        write.values.push(Box::new(blob(&vector)));
        Ok(vector)
    }

    /// Refuses a namespace pinned to another embedder (`meta`: [`VECTOR_META`]'s rows).
    fn check(&self, meta: &[Row]) -> Result<(), StoreError> {
        match meta.first() {
            Some(row) => self.check_embedder(row.get(0), row.get(1)),
            None => Ok(()),
        }
    }

    /// Refuses vectors of `model` and `dimension` if they are not this embedder's.
    fn check_embedder(&self, model: &str, dimension: i32) -> Result<(), StoreError> {
        if model != self.embedder.model() || usize::try_from(dimension).ok() != Some(self.embedder.dimension()) {
            return Err(mismatch(model, i64::from(dimension), self.embedder.model(), self.embedder.dimension()));
        }
        Ok(())
    }

    /// The bytes a stored vector of this embedder has.
    pub(super) fn bytes(&self) -> i32 {
        i32::try_from(self.embedder.dimension() * 4).unwrap_or(i32::MAX)
    }

    /// What a cycle's memory search read ahead for the decisions' order (`meta`: [`VECTOR_META`]'s
    /// rows; `rows`: [`ACTIVE_DECISION_VECTORS`]'s, `limit` at most): none past the limit.
    pub(super) fn kept(meta: &[Row], rows: &[Row], limit: i64) -> Option<KeptVectors> {
        if i64::try_from(rows.len()).unwrap_or(i64::MAX) >= limit {
            return None;
        }
        let embedder = meta.first().map(|row| (row.get::<_, String>(0), row.get::<_, i32>(1)));
        let stored = rows.iter().map(|row| (row.get(0), row.get::<_, Option<Vec<u8>>>(1))).collect();
        Some(KeptVectors { embedder, stored })
    }

    /// The fused ranking for `query` out of the word ranking (`words`: memory rows, best first)
    /// and the vector ranking (`read`: what [`Reads`] read in the batch): memory ids, best
    /// first, more than asked so that rows that cannot be read leave the best that can.
    pub(super) async fn rank(
        &self,
        store: &PgStore,
        call: &Call<'_>,
        query: &[f32],
        words: &[MemoryItem],
        read: Read,
    ) -> Result<Vec<String>, StoreError> {
        self.check(&read.meta)?;
        let by_words: Vec<String> = words.iter().map(|m| m.id.clone()).collect();
        if self.is_hnsw() {
            let mut rows = read.rows;
            // The index scan stopped short of what the namespace has: rank it exactly.
            let stored = read.meta.first().map_or(0, |m| m.get::<_, i64>(2));
            if rows.len() < CANDIDATES.min(usize::try_from(stored).unwrap_or(usize::MAX)) {
                let (text, limit) = (crate::store::postgres::pgvector::vector_text(query), CANDIDATES as i64);
                let mut conn = store.connection().await?;
                rows = conn.query(NEAREST_EXACTLY, &[&store.namespace(), &text, &limit]).await.map_err(hnsw_failure)?;
            }
            // An id longer than planlock's (an edited row) is passed over.
            let ids: Vec<(String, i64)> =
                rows.iter().filter_map(|r| Some((r.get::<_, Option<String>>(0)?, r.get(1)))).collect();
            call.passed_over(rows.len() - ids.len(), "memory vectors");
            let by_meaning: Vec<String> = ids.iter().map(|(id, _)| id.clone()).collect();
            let position_of: HashMap<String, i64> = ids.into_iter().collect();
            let recency = |id: &String| position_of.get(id).copied().unwrap_or(0);
            return Ok(fuse(&[&by_meaning, &by_words], CANDIDATES * 2, |a, b| recency(b).cmp(&recency(a))));
        }
        // Newest first as read: held oldest first.
        let vectors = read.rows.iter().rev();
        let dimension = self.embedder.dimension();
        let mut held = self.held();
        for row in vectors {
            let (position, id, bytes): (i64, Option<String>, Option<&[u8]>) = (row.get(0), row.get(1), row.get(2));
            if position > held.last + 1 || held.from == 0 {
                // Rows between were past the cap: the window starts again here.
                *held = Held { from: position, ..Held::default() };
            }
            held.last = position;
            // A vector of another length or degenerate, or an id longer than planlock's (an
            // edited row), is passed over.
            match (id, bytes.and_then(|b| usable(b, dimension))) {
                (Some(id), Some(v)) => {
                    held.positions.push(position);
                    held.ids.push(id);
                    held.vectors.extend_from_slice(&v);
                }
                _ => held.passed_over += 1,
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
        // Positions are held in ascending order: the nearest are found by a binary search, and
        // only they are looked up (not every held vector, on every search).
        let position_of: HashMap<String, i64> = nearest
            .iter()
            .filter_map(|p| held.positions.binary_search(p).ok().map(|i| (held.ids[i].clone(), *p)))
            .collect();
        let by_meaning: Vec<String> =
            nearest.iter().filter_map(|p| held.positions.binary_search(p).ok()).map(|i| held.ids[i].clone()).collect();
        // Ties to the more recent: a memory without a held vector counts as the oldest.
        let recency = |id: &String| position_of.get(id).copied().unwrap_or(0);
        Ok(fuse(&[&by_meaning, &by_words], CANDIDATES * 2, |a, b| recency(b).cmp(&recency(a))))
    }

    /// Orders `decisions` (the context `hierarchical-sql` loads) for `input` with their stored
    /// vectors: those a cycle's search read ahead (`kept`), or read now in one round trip.
    pub(super) async fn order(
        &self,
        store: &PgStore,
        call: &Call<'_>,
        decisions: &mut Vec<crate::contract::schema::Decision>,
        input: &str,
        kept: Option<KeptVectors>,
    ) -> Result<(), StoreError> {
        if crate::store::meaning::lower_words(input).is_empty() || decisions.len() < 2 {
            return Ok(());
        }
        let ids: Vec<String> = decisions.iter().map(|d| d.id.clone()).collect();
        let kept = match kept {
            Some(kept) => kept,
            None => {
                let (namespace, bytes) = (store.namespace(), self.bytes());
                let mut conn = store.connection().await?;
                let reads =
                    [Query::new(VECTOR_META, &[&namespace]), Query::new(DECISION_VECTORS, &[&namespace, &ids, &bytes])];
                let rows = conn.pipeline(&reads, Then::Stay).await;
                let rows = rows.map_err(super::backend("reading the decisions' vectors"))?;
                Meaning::kept(&rows[0], &rows[1], i64::MAX).unwrap_or_default()
            }
        };
        if let Some((model, dimension)) = &kept.embedder {
            self.check_embedder(model, *dimension)?;
        }
        let dimension = self.embedder.dimension();
        let mut stored: HashMap<String, Option<Vec<f32>>> = HashMap::new();
        let mut passed_over = 0;
        for (id, bytes) in kept.stored {
            if !ids.contains(&id) {
                continue;
            }
            let v = bytes.and_then(|b| usable(&b, dimension));
            passed_over += usize::from(v.is_none());
            stored.insert(id, v);
        }
        let stored = ids.iter().map(|id| stored.remove(id).flatten()).collect();
        crate::store::meaning::order_decisions(decisions, stored, &*self.embedder, input, call.deadline()).await?;
        call.passed_over(passed_over, "decision vectors");
        Ok(())
    }
}

/// A failure of the pgvector tier's search; a database without the tier says what to do.
pub(super) fn hnsw_failure(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
        return StoreError::Backend(
            "the provider `postgres-pgvector` needs the pgvector tier in this database: install it with \
             `planlock pgvector --dimension N` (PgDatabase::install_pgvector), or rank exactly with `postgres-semantic`"
                .into(),
        );
    }
    super::backend("searching by meaning with pgvector")(e)
}
