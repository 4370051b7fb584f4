//! The memories' vectors held in memory for the exact scan, and the best-n selection.

use rusqlite::{Connection, OptionalExtension, params};

use super::has_vectors;
use crate::embed::dot;
use crate::store::StoreError;
use crate::store::meaning::{best, mismatch, usable};

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
