//! The memories' vectors held in memory for the exact scan, and the best-n selection.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rusqlite::{Connection, OptionalExtension, params};

use super::{has_vectors, mismatch, usable};
use crate::embed::dot;
use crate::store::StoreError;

/// The most bytes of vectors a process holds for the scan by default: about 700,000 memories of
/// 384 dimensions. A store holding more (a file under the root may be anything) is refused, not
/// read into memory without end.
pub const MAX_INDEX_BYTES: usize = 1 << 30;

/// The vectors of the memories, in memory and contiguous, with the rowid each belongs to.
#[derive(Debug)]
pub(super) struct Index {
    rowids: Vec<i64>,
    vectors: Vec<f32>,
    last: i64,
    limit_bytes: usize,
    /// Rows left out of the scan because their vector could not be used (another length,
    /// degenerate): every search reports them, since they can never be found by meaning.
    pub(super) passed_over: usize,
}

impl Default for Index {
    fn default() -> Self {
        Index { rowids: Vec::new(), vectors: Vec::new(), last: 0, limit_bytes: MAX_INDEX_BYTES, passed_over: 0 }
    }
}

impl Index {
    /// An empty index holding at most `limit_bytes` of vectors.
    pub(super) fn bounded(limit_bytes: usize) -> Index {
        Index { limit_bytes, ..Index::default() }
    }

    /// Loads the rows added since the last load. A row whose blob is not `dimension` numbers long
    /// is told apart by its length in SQL (`length()` reads the record's header): it is neither
    /// loaded nor copied, whatever its size.
    pub(super) fn refresh(
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
            "SELECT memory_rowid, CASE WHEN length(vector) = ?2 THEN vector END FROM memory_vectors
             WHERE memory_rowid > ?1 ORDER BY memory_rowid",
        )?;
        let mut rows = stmt.query(params![self.last, (dimension * 4) as i64])?;
        while let Some(row) = rows.next()? {
            let rowid: i64 = row.get(0)?;
            self.last = rowid;
            let blob = row.get_ref(1)?.as_blob_or_null()?;
            let Some(v) = blob.and_then(|b| usable(b, dimension)) else {
                self.passed_over += 1;
                continue;
            };
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
        Ok(Ok(()))
    }

    /// The best `n` rowids by cosine with `query`, best first.
    pub(super) fn nearest(&self, query: &[f32], n: usize) -> Vec<i64> {
        best(n, self.rowids.iter().zip(self.vectors.chunks_exact(query.len().max(1))).map(|(r, v)| (dot(query, v), *r)))
    }
}

/// The best `n` of `(score, rowid)`, best first; equal scores go to the higher rowid (the more
/// recent).
pub(super) fn best(n: usize, scored: impl Iterator<Item = (f32, i64)>) -> Vec<i64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_keeps_the_top_scores_and_breaks_ties_by_recency() {
        let scored = [(0.5, 1), (0.9, 2), (0.5, 3), (0.1, 4), (0.9, 5)];
        assert_eq!(best(3, scored.into_iter()), [5, 2, 3]);
        assert_eq!(best(10, std::iter::empty()), Vec::<i64>::new());
    }
}
