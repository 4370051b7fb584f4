//! Retrieval by meaning against its floors (issue 19), interleaved in one run:
//! - `sqlite-semantic` top-10 over 100,000 memories of 384 dimensions (the exact scan, the word
//!   ranking, their fusion and the rows read) vs a plain exact scan of the same vectors in memory
//!   (target ≤ 1.3×);
//! - `PersistMemory` with its vector written in the same transaction vs today's `PersistMemory`
//!   (target: throughput ≥ 0.8×, so time ≤ 1.25×).
//!
//! The embedder is fixed (it returns one precomputed vector), so no embedding time is counted.
//! `cargo bench --bench semantic`; with `-- --quick`-style filters as for every bench here.

use planlock::store::Call;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use planlock::embed::{EmbedFuture, Embedder, Purpose, dot, normalized};
use planlock::hash::{Digest, IdempotencyKey};
use planlock::store::sqlite::SqliteStore;
use planlock::store::sqlite::semantic::SemanticMemory;
use planlock::store::{MemoryRepositoryPort, NewMemory};
use rusqlite::{Connection, params};

#[path = "common/paired.rs"]
mod paired;

const MEMORIES: u64 = 100_000;
const DIMENSION: usize = 384;

/// Returns one fixed vector for every text: the bench counts planlock's work, not a model's.
struct Fixed(Vec<f32>);

impl Embedder for Fixed {
    fn model(&self) -> &str {
        "fixed"
    }
    fn dimension(&self) -> usize {
        DIMENSION
    }
    fn embed<'a>(&'a self, texts: &'a [String], _: Purpose, _: Option<std::time::Instant>) -> EmbedFuture<'a> {
        Box::pin(std::future::ready(Ok(texts.iter().map(|_| self.0.clone()).collect())))
    }
}

/// A deterministic spread of unit vectors (xorshift).
fn vectors(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    (0..n).map(|_| normalized((0..DIMENSION).map(|_| next()).collect())).collect()
}

fn key(n: u64) -> IdempotencyKey {
    IdempotencyKey::derive(uuid::Uuid::nil(), &Digest::of(b"semantic"), n, "remember")
}

/// 100,000 memories with their vectors, loaded in bulk into the schema the provider created.
fn loaded(dir: &Path, embedder: Arc<Fixed>) -> (SemanticMemory, Vec<f32>) {
    let store = SqliteStore::open(dir);
    let semantic = SemanticMemory::new(store.clone(), embedder);
    let k = key(0);
    planlock::block_on(
        semantic.put(&Call::new().keyed(k), NewMemory { session_ref: "s", summary: "seed", keywords: &[] }),
    )
    .unwrap();
    let all = vectors(MEMORIES as usize, 7);
    let mut conn = Connection::open(store.path()).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut memory = tx
            .prepare("INSERT INTO memories (id, idem_key, session_ref, summary, keywords, created_at) VALUES (?1, ?2, 's', ?3, '', 't')")
            .unwrap();
        let mut vector = tx.prepare("INSERT INTO memory_vectors (memory_rowid, vector) VALUES (?1, ?2)").unwrap();
        for (n, v) in all.iter().enumerate().skip(1) {
            memory
                .execute(params![format!("m-{n}"), format!("k-{n}"), format!("note {n} about topic {}", n % 97)])
                .unwrap();
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            vector.execute(params![tx.last_insert_rowid(), bytes]).unwrap();
        }
    }
    tx.commit().unwrap();
    (semantic, all.concat())
}

/// The floor: a plain exact scan of the vectors in memory, keeping the best 10.
fn scan(vectors: &[f32], query: &[f32]) -> [usize; 10] {
    let mut best = [(f32::MIN, 0usize); 10];
    for (i, v) in vectors.chunks_exact(DIMENSION).enumerate() {
        let score = dot(query, v);
        if score > best[9].0 {
            best[9] = (score, i);
            best.sort_by(|a, b| b.0.total_cmp(&a.0));
        }
    }
    best.map(|(_, i)| i)
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-semantic");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let query = vectors(1, 99).pop().unwrap();
    let embedder = Arc::new(Fixed(query.clone()));
    let (semantic, flat) = loaded(&dir, embedder.clone());
    // A word in 1% of the memories (`42`, in `topic 42`) and two in all of them; and a query of
    // rare words (an identifier, as a note's number).
    let text = "note about topic 42";
    let rare = "note 4711";
    // The first search loads the vectors; the bench measures searches after it, as a worker's.
    assert_eq!(planlock::block_on(semantic.search(&Call::new(), text, 10)).unwrap().len(), 10);

    let mut g = c.benchmark_group("semantic_top10_of_100k_384d");
    g.sample_size(20);
    g.bench_function("floor_plain_exact_scan", |b| b.iter(|| black_box(scan(&flat, black_box(&query)))));
    g.bench_function("sqlite_semantic_search", |b| {
        b.iter(|| black_box(planlock::block_on(semantic.search(&Call::new(), black_box(text), 10)).unwrap()))
    });
    g.finish();
    paired::report(
        "semantic_top10_of_100k_384d",
        &mut [
            ("floor_plain_exact_scan", &mut || {
                black_box(scan(&flat, black_box(&query)));
            }),
            ("sqlite_semantic_search", &mut || {
                drop(black_box(planlock::block_on(semantic.search(&Call::new(), black_box(text), 10)).unwrap()))
            }),
            ("sqlite_semantic_search_rare_words", &mut || {
                drop(black_box(planlock::block_on(semantic.search(&Call::new(), black_box(rare), 10)).unwrap()))
            }),
        ],
    );

    let plain = SqliteStore::open(dir.join("plain"));
    let with_vector = SemanticMemory::new(SqliteStore::open(dir.join("vectors")), embedder);
    let (mut n, mut m) = (1_000_000u64, 2_000_000u64);
    let mut put_plain = || {
        n += 1;
        let k = key(n);
        black_box(
            planlock::block_on(
                plain.put(&Call::new().keyed(k), NewMemory { session_ref: "s", summary: "a memory", keywords: &[] }),
            )
            .unwrap(),
        );
    };
    let mut put_vector = || {
        m += 1;
        let k = key(m);
        let memory = NewMemory { session_ref: "s", summary: "a memory", keywords: &[] };
        black_box(planlock::block_on(with_vector.put(&Call::new().keyed(k), memory)).unwrap());
    };
    let mut g = c.benchmark_group("persist_memory_with_vector");
    g.sample_size(20);
    g.bench_function("floor_sqlite_put", |b| b.iter(&mut put_plain));
    g.bench_function("sqlite_semantic_put", |b| b.iter(&mut put_vector));
    g.finish();
    paired::report(
        "persist_memory_with_vector",
        &mut [("floor_sqlite_put", &mut put_plain), ("sqlite_semantic_put", &mut put_vector)],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
