//! Retrieval by meaning on PostgreSQL (issue 45, CONTRACT §20): a memory search's latency,
//! p50 and p99, at 10,000 and 100,000 vectors in one namespace, interleaved in one run:
//!
//! - `floor`: the exact top 10 over the same vectors held in this process (no database): what
//!   any exact ranking costs at least; and `postgres`, the same search by words only (what the
//!   database's part costs);
//! - `postgres-semantic`: the whole search, exact, on a warm store (its batch, the scan of the
//!   held vectors, the fusion, the rows read);
//! - `postgres-pgvector`: the whole search with the pgvector tier's HNSW index (ef_search 200,
//!   strict iterative scans), and its recall@10 against the exact ranking.
//!
//! The vectors are clustered, 384 numbers; the embedder returns each query's vector from a
//! table (no model time). The namespace shares its index with 4 others of a tenth its size.
//! PostgreSQL 18 with pgvector from `.ci/pgvector` (`PLANLOCK_PGVECTOR`); without it, Debian's
//! server and the exact tier only, said so.
//!
//! `cargo bench --bench pg_vectors --all-features` (`PG_VECTORS_SIZES=10000,100000`,
//! `PG_VECTORS_SEARCHES=200`); `-- --quick` (CI's smoke run): 2,000 vectors, 30 searches.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use planlock::embed::{Embedder, dot};
use planlock::pg::PgDatabase;
use planlock::store::postgres::PgStore;
use planlock::store::{Call, MemoryRepositoryPort};

#[path = "../tests/common/mod.rs"]
mod common;
use common::pg::PgServer;
use common::vectors::{DIMENSION, Table, centers, clustered, load};

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// The exact top 10 of `vectors` (flat) for `query`.
fn floor(vectors: &[f32], query: &[f32]) -> Vec<usize> {
    let mut best: Vec<(f32, usize)> = Vec::with_capacity(11);
    for (i, v) in vectors.chunks_exact(DIMENSION).enumerate() {
        let score = dot(query, v);
        if best.len() < 10 || score > best[best.len() - 1].0 {
            best.push((score, i));
            best.sort_by(|a, b| b.0.total_cmp(&a.0));
            best.truncate(10);
        }
    }
    best.into_iter().map(|(_, i)| i).collect()
}

fn percentile(times: &mut [Duration], p: f64) -> f64 {
    times.sort();
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn ids(store: &PgStore, query: &str) -> Vec<String> {
    planlock::block_on(store.search(&Call::new(), query, 10)).unwrap().into_iter().map(|m| m.id).collect()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes = if quick { vec![2_000] } else { env_list("PG_VECTORS_SIZES", &[10_000, 100_000]) };
    let searches = if quick { 30 } else { env_list("PG_VECTORS_SEARCHES", &[200])[0] };
    let pgvector = common::pg::pgvector_bin();
    let server = match &pgvector {
        Some(bin) => PgServer::start_at(bin, true),
        None => {
            println!("pg_vectors: no PostgreSQL with pgvector (PLANLOCK_PGVECTOR, .ci/pgvector): the exact tier only");
            match PgServer::start_with(true) {
                Some(server) => server,
                None => {
                    assert!(std::env::var("CI").is_err(), "no PostgreSQL server");
                    println!("pg_vectors: SKIPPED, no PostgreSQL server");
                    return;
                }
            }
        }
    };
    println!("| vectors | search | p50 ms | p99 ms | × floor (p50) | recall@10 |");
    println!("|---:|---|---:|---:|---:|---:|");
    for size in sizes {
        let url = server.database(&format!("vectors_{size}"));
        let db = PgDatabase::connect(&url).unwrap();
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let mut rng = fastrand::Rng::with_seed(size as u64);
        let centers = centers(&mut rng, 64);
        let vectors = clustered(&mut rng, &centers, size, 0.6);
        let started = Instant::now();
        load(&mut client, "bench", "synthetic", &vectors);
        for other in 0..4 {
            load(&mut client, &format!("other-{other}"), "synthetic", &clustered(&mut rng, &centers, size / 10, 0.6));
        }
        let loaded = started.elapsed();
        let has_tier = pgvector.is_some();
        let indexed = has_tier.then(|| {
            let started = Instant::now();
            db.install_pgvector(DIMENSION).unwrap();
            started.elapsed()
        });
        println!(
            "pg_vectors: {size} vectors loaded in {:.1} s{}",
            loaded.as_secs_f64(),
            indexed.map_or(String::new(), |d| format!(", indexed (HNSW) in {:.1} s", d.as_secs_f64()))
        );
        let queries: Vec<String> = (0..searches).map(|i| format!("q{i}")).collect();
        let query_vectors = clustered(&mut rng, &centers, searches, 0.6);
        let table: HashMap<String, Vec<f32>> = queries.iter().cloned().zip(query_vectors.iter().cloned()).collect();
        let embedder: Arc<dyn Embedder> = Arc::new(Table(table));
        let exact = PgStore::new(&db, "bench").by_meaning(embedder.clone());
        let tier = PgStore::new(&db, "bench")
            .by_meaning(embedder)
            .pgvector(planlock::store::postgres::pgvector::DEFAULT_EF_SEARCH);
        let flat: Vec<f32> = vectors.concat();
        // Warm: the exact store holds the vectors after its first search, as a worker's does.
        black_box(ids(&exact, &queries[0]));
        let words = PgStore::new(&db, "bench");
        let (mut t_floor, mut t_exact, mut t_tier, mut t_words) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let trips = db.round_trips();
        let mut hits = 0usize;
        // Interleaved: each query through each case in turn.
        for (q, v) in queries.iter().zip(&query_vectors) {
            let started = Instant::now();
            black_box(floor(&flat, v));
            t_floor.push(started.elapsed());
            let started = Instant::now();
            black_box(ids(&words, q));
            t_words.push(started.elapsed());
            let started = Instant::now();
            let truth = ids(&exact, q);
            t_exact.push(started.elapsed());
            if has_tier {
                let started = Instant::now();
                let found = ids(&tier, q);
                t_tier.push(started.elapsed());
                hits += found.iter().filter(|id| truth.contains(id)).count();
            }
        }
        let per_search = (db.round_trips() - trips) as f64 / searches as f64;
        println!("pg_vectors: {per_search:.1} round trips per query, all cases together");
        let floor_p50 = percentile(&mut t_floor, 0.5);
        let row = |name: &str, times: &mut Vec<Duration>, recall: &str| {
            let (p50, p99) = (percentile(times, 0.5), percentile(times, 0.99));
            println!("| {size} | {name} | {p50:.2} | {p99:.2} | {:.1}× | {recall} |", p50 / floor_p50.max(1e-9));
        };
        row("floor: exact scan in memory", &mut t_floor, "1 (by definition)");
        row("postgres (words only, no vectors)", &mut t_words, "–");
        row("postgres-semantic (exact)", &mut t_exact, "1");
        if has_tier {
            let recall = hits as f64 / (10 * searches) as f64;
            row("postgres-pgvector (HNSW)", &mut t_tier, &format!("{recall:.3}"));
        }
    }
}
