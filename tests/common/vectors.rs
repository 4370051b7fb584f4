//! Synthetic clustered unit vectors, written into a planlock database as its write functions
//! would (rows, bytes, the namespace's embedder and count): the pgvector tier's recall gate
//! (`tests/postgres/pgvector.rs`) and `benches/pg_vectors.rs`.

use std::collections::HashMap;

use planlock::embed::{EmbedFuture, Embedder, Purpose};

/// Their dimension (multilingual-e5-small's and the demo embedder's).
pub const DIMENSION: usize = 384;

/// Clustered unit vectors: `n` around `centers`.
pub fn clustered(rng: &mut fastrand::Rng, centers: &[Vec<f32>], n: usize, spread: f32) -> Vec<Vec<f32>> {
    (0..n)
        .map(|i| {
            let c = &centers[i % centers.len()];
            let v: Vec<f32> = c.iter().map(|x| x + spread * (rng.f32() - 0.5)).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter().map(|x| x / norm).collect()
        })
        .collect()
}

/// `n` random centers.
pub fn centers(rng: &mut fastrand::Rng, n: usize) -> Vec<Vec<f32>> {
    (0..n).map(|_| (0..DIMENSION).map(|_| rng.f32() - 0.5).collect()).collect()
}

/// Writes `vectors` as the memories of `namespace`, as the write functions would (rows, bytes,
/// meta), in one statement per table.
pub fn load(client: &mut postgres::Client, namespace: &str, model: &str, vectors: &[Vec<f32>]) {
    let ids: Vec<String> = (0..vectors.len()).map(|i| format!("m-{namespace}-{i}")).collect();
    let positions: Vec<i64> = (1..=vectors.len() as i64).collect();
    let bytes: Vec<Vec<u8>> = vectors.iter().map(|v| v.iter().flat_map(|x| x.to_le_bytes()).collect()).collect();
    client
        .execute(
            "INSERT INTO planlock_memories (namespace, id, idem_key, session_ref, summary, keywords, created_at)
             SELECT $1, id, id, 's', 'memory', '', '2026-11-27T00:00:00Z' FROM unnest($2::text[]) id",
            &[&namespace, &ids],
        )
        .unwrap();
    client
        .execute(
            "INSERT INTO planlock_memory_vectors (namespace, position, memory_id, vector)
             SELECT $1, p, id, v FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS t(p, id, v)",
            &[&namespace, &positions, &ids, &bytes],
        )
        .unwrap();
    client
        .execute(
            "INSERT INTO planlock_vector_meta (namespace, model, dimension, memories) VALUES ($1, $2, $3, $4)",
            &[&namespace, &model, &(DIMENSION as i32), &(vectors.len() as i64)],
        )
        .unwrap();
}

/// Vectors of a table, looked up by their text: the recall test's queries.
pub struct Table(pub HashMap<String, Vec<f32>>);

impl Embedder for Table {
    fn model(&self) -> &str {
        "synthetic"
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn embed<'a>(&'a self, texts: &'a [String], _: Purpose, _: Option<std::time::Instant>) -> EmbedFuture<'a> {
        let vectors = texts.iter().map(|t| self.0.get(t).cloned().unwrap_or_else(|| vec![1.0; DIMENSION])).collect();
        Box::pin(std::future::ready(Ok(vectors)))
    }
}
