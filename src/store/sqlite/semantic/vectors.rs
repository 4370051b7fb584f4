//! The vectors both providers keep beside the store's tables, and the model they belong to.

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::StoreError;
use crate::store::meaning::mismatch;
use crate::store::sqlite::backend;

/// The vector tables, beside the store's own.
const VECTOR_TABLES: &str = "
CREATE TABLE IF NOT EXISTS vector_meta (id INTEGER PRIMARY KEY CHECK (id = 1), model TEXT NOT NULL, dimension INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS memory_vectors (memory_rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS decision_vectors (decision_id TEXT PRIMARY KEY, vector BLOB NOT NULL);
";

/// Creates the vector tables in a write, and refuses vectors of another model.
pub(super) fn ensure_vectors(tx: &rusqlite::Transaction<'_>, model: &str, dimension: usize) -> Result<(), StoreError> {
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
pub(super) fn has_vectors(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'vector_meta'", [], |r| r.get::<_, i64>(0))
        .map(|n| n > 0)
}
