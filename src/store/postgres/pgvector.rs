//! The pgvector tier of retrieval by meaning (CONTRACT §20; the provider `postgres-pgvector`):
//! an HNSW index over the memories' vectors, for namespaces past what an exact scan serves
//! well. Optional: it needs the `vector` extension on the server, and is installed once per
//! database for one dimension with [`PgDatabase::install_pgvector`] (`planlock pgvector
//! --database URL --dimension N`); where the extension is missing that refuses, saying so.
//!
//! - Table: `planlock_memory_embeddings(namespace, memory_id, embedding vector(n))`, written
//!   with the memory (the same statement as its row and its bytes: a data-modifying `WITH`), and
//!   an HNSW index (`vector_ip_ops`: the vectors are normalized, inner product is cosine) built
//!   with [`HNSW_M`] and [`HNSW_EF_CONSTRUCTION`].
//! - Search: `hnsw.ef_search` (default [`DEFAULT_EF_SEARCH`]) with `hnsw.iterative_scan =
//!   strict_order`, so that the namespace's filter does not leave the index's first candidates
//!   empty; if the scan still returns fewer rows than asked while the namespace has more, the
//!   namespace's vectors are ranked exactly by the server instead (one more round trip). The
//!   table has no index led by the namespace and the search sets `enable_seqscan = off`, so the
//!   planner takes the HNSW index (a namespace's btree scan and a sort would be exact, and as
//!   slow as the exact tier).
//! - Recall against the exact ranking: measured by `tests/postgres` (a gate of 0.95) and by
//!   `benches/pg_vectors.rs`.

use crate::pg::{PgDatabase, PgError};
use crate::store::meaning::usable;

/// HNSW's `m` (links per node).
pub const HNSW_M: u32 = 16;

/// HNSW's `ef_construction`.
pub const HNSW_EF_CONSTRUCTION: u32 = 128;

/// The `hnsw.ef_search` a search sets unless told otherwise: the candidates the scan keeps.
pub const DEFAULT_EF_SEARCH: u32 = 200;

/// How many existing vectors are copied into the index per statement while installing.
const BACKFILL_BATCH: i64 = 1_000;

/// The vector as pgvector's text form, `[x,y,…]`.
pub(crate) fn vector_text(v: &[f32]) -> String {
    let mut text = String::with_capacity(v.len() * 12 + 2);
    text.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&x.to_string());
    }
    text.push(']');
    text
}

impl PgDatabase {
    /// Installs the pgvector tier for vectors of `dimension` numbers: the `vector` extension,
    /// the embeddings table and its HNSW index, and the vectors already stored (of that length)
    /// copied in. Idempotent; refused where the server has no pgvector, or where the tier is
    /// installed for another dimension. Returns how many stored vectors were copied.
    ///
    /// ```no_run
    /// let db = planlock::pg::PgDatabase::connect("postgres://planlock@localhost/planlock")?;
    /// db.install_pgvector(384)?;
    /// # Ok::<(), planlock::pg::PgError>(())
    /// ```
    pub fn install_pgvector(&self, dimension: usize) -> Result<u64, PgError> {
        let refused = |reason: String| PgError::Pgvector { target: self.target().to_owned(), reason };
        if dimension == 0 || dimension > 16_000 {
            return Err(refused(format!("a dimension of {dimension}: pgvector takes 1 to 16,000")));
        }
        crate::io::block_on(async {
            let mut conn = self.connection().await?;
            let available = conn
                .query_opt("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'", &[])
                .await
                .map_err(self.failed("looking for pgvector"))?;
            if available.is_none() {
                return Err(refused(
                    "the server has no `vector` extension (pgvector is not installed); \
                     install it on the server, or rank exactly with `postgres-semantic`"
                        .into(),
                ));
            }
            let sql = format!(
                "CREATE EXTENSION IF NOT EXISTS vector;
                 CREATE TABLE IF NOT EXISTS planlock_memory_embeddings (
                     tenant text NOT NULL DEFAULT planlock_tenant(),
                     namespace text NOT NULL,
                     memory_id text NOT NULL,
                     embedding vector({dimension}) NOT NULL,
                     -- Not led by the namespace: no index but HNSW serves a namespace's filter.
                     PRIMARY KEY (memory_id, namespace, tenant));
                 ALTER TABLE planlock_memory_embeddings ENABLE ROW LEVEL SECURITY;
                 ALTER TABLE planlock_memory_embeddings FORCE ROW LEVEL SECURITY;
                 DROP POLICY IF EXISTS planlock_tenant ON planlock_memory_embeddings;
                 CREATE POLICY planlock_tenant ON planlock_memory_embeddings
                     USING (tenant = planlock_tenant()) WITH CHECK (tenant = planlock_tenant());"
            );
            conn.batch_execute(&sql).await.map_err(self.failed("installing the pgvector tier"))?;
            let installed: i32 = conn
                .query_opt(
                    "SELECT atttypmod FROM pg_attribute
                     WHERE attrelid = 'planlock_memory_embeddings'::regclass AND attname = 'embedding'",
                    &[],
                )
                .await
                .map_err(self.failed("reading the pgvector tier's dimension"))?
                .map_or(0, |row| row.get(0));
            if usize::try_from(installed).ok() != Some(dimension) {
                return Err(refused(format!(
                    "the tier is installed for vectors of {installed} numbers, not {dimension}; one database serves one dimension"
                )));
            }
            // The vectors stored before, in pages by (tenant, namespace, position): every
            // tenant's the installing role can see (a role that bypasses row-level security: all).
            let bytes = i32::try_from(dimension * 4).unwrap_or(i32::MAX);
            let (mut after, mut copied) = ((String::new(), String::new(), 0i64), 0u64);
            loop {
                let rows = conn
                    .query(
                        "SELECT v.tenant, v.namespace, v.position, v.memory_id, v.vector FROM planlock_memory_vectors v
                         WHERE (v.tenant, v.namespace, v.position) > ($1, $2, $3) AND octet_length(v.vector) = $4
                         ORDER BY v.tenant, v.namespace, v.position LIMIT $5",
                        &[&after.0, &after.1, &after.2, &bytes, &BACKFILL_BATCH],
                    )
                    .await
                    .map_err(self.failed("reading the stored vectors"))?;
                let Some(last) = rows.last() else { break };
                after = (last.get(0), last.get(1), last.get(2));
                let (mut tenants, mut namespaces, mut ids, mut texts) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for row in &rows {
                    if let Some(v) = usable(row.get(4), dimension) {
                        tenants.push(row.get::<_, String>(0));
                        namespaces.push(row.get::<_, String>(1));
                        ids.push(row.get::<_, String>(3));
                        texts.push(vector_text(&v));
                    }
                }
                let n = conn
                    .query(
                        "WITH added AS (INSERT INTO planlock_memory_embeddings (tenant, namespace, memory_id, embedding)
                             SELECT t, n, m, e::vector
                             FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS x(t, n, m, e)
                             ON CONFLICT DO NOTHING RETURNING 1)
                         SELECT count(*) FROM added",
                        &[&tenants, &namespaces, &ids, &texts],
                    )
                    .await
                    .map_err(self.failed("copying the stored vectors"))?;
                copied += n.first().map_or(0, |row| u64::try_from(row.get::<_, i64>(0)).unwrap_or(0));
                if i64::try_from(rows.len()).unwrap_or(0) < BACKFILL_BATCH {
                    break;
                }
            }
            // The index after the copy: built at once, faster than row by row.
            let index = format!(
                "CREATE INDEX IF NOT EXISTS planlock_memory_embeddings_hnsw ON planlock_memory_embeddings
                 USING hnsw (embedding vector_ip_ops) WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
            );
            conn.batch_execute(&index).await.map_err(self.failed("building the HNSW index"))?;
            conn.batch_execute("ANALYZE planlock_memory_embeddings").await.map_err(self.failed("analyzing"))?;
            Ok(copied)
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_vector_is_written_as_pgvector_reads_it() {
        assert_eq!(super::vector_text(&[0.5, -1.0, 1e-7]), "[0.5,-1,0.0000001]");
        assert_eq!(super::vector_text(&[]), "[]");
    }
}
