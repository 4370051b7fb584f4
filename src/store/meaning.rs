//! Ranking by meaning, the same on every store that does it (docs/CONTRACT.md, "Retrieval by
//! meaning"; CONTRACT §12, §20): vectors stored as little-endian `f32` bytes, an exact best-n
//! scan, reciprocal rank fusion with the word ranking, and the order of a decision context by
//! meaning and words. The SQLite providers (`sqlite-semantic`, `semantic-sql`) and PostgreSQL's
//! (`postgres-semantic`) differ only in where they read the vectors and the words from.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use crate::contract::schema::Decision;
use crate::embed::{Embedder, Purpose, check_vectors, degenerate, dot};
use crate::store::{StoreError, query_words};

/// How many of each ranking's best are fused.
pub const CANDIDATES: usize = 50;

/// The constant of reciprocal rank fusion (the usual 60).
pub const RRF_K: f32 = 60.0;

/// A vector as it is stored: little-endian `f32`s.
pub(crate) fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector, if it can be ranked by: `dimension` numbers, none of them NaN or infinite,
/// of a usable length (CONTRACT §11: a row may have been edited).
pub(crate) fn usable(b: &[u8], dimension: usize) -> Option<Vec<f32>> {
    let v: Vec<f32> = (b.len() == dimension * 4)
        .then(|| b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())?;
    degenerate(&v).is_none().then_some(v)
}

/// Vectors of another embedder than the one asked for are refused: they mean something else.
pub(crate) fn mismatch(stored: &str, stored_dim: i64, model: &str, dimension: usize) -> StoreError {
    StoreError::Conflict(format!(
        "the store holds vectors of `{}` ({stored_dim} dimensions), but the embedder is `{}` ({dimension}); \
         vectors of another model mean something else",
        crate::text::printable(stored),
        crate::text::printable(model)
    ))
}

/// Reciprocal rank fusion of rankings (each best first) of the same kind of key: the best `n`,
/// ties to the key that `tie` orders first. A key's score is the sum over the rankings it is in
/// of `1 / (RRF_K + rank)`, rank from 1.
pub(crate) fn fuse<K: Clone + Eq + std::hash::Hash>(
    rankings: &[&[K]],
    n: usize,
    tie: impl Fn(&K, &K) -> Ordering,
) -> Vec<K> {
    let mut scores: HashMap<K, f32> = HashMap::new();
    for ranking in rankings {
        for (rank, key) in ranking.iter().enumerate() {
            *scores.entry(key.clone()).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut fused: Vec<(K, f32)> = scores.into_iter().collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| tie(&a.0, &b.0)));
    fused.into_iter().take(n).map(|(k, _)| k).collect()
}

/// The best `n` of `(score, position)`, best first; equal scores go to the higher position (the
/// more recent).
pub(crate) fn best(n: usize, scored: impl Iterator<Item = (f32, i64)>) -> Vec<i64> {
    #[derive(PartialEq)]
    struct Worst(f32, i64);
    impl Eq for Worst {}
    impl PartialOrd for Worst {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Worst {
        // The heap's top is the worst kept: the lowest score, then the lowest position.
        fn cmp(&self, other: &Self) -> Ordering {
            other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
        }
    }
    if n == 0 {
        return Vec::new();
    }
    let mut heap = BinaryHeap::with_capacity(n + 1);
    for (score, position) in scored {
        // Most rows are no better than the worst kept: one comparison, no heap work.
        if heap.len() == n && heap.peek().is_some_and(|worst: &Worst| Worst(score, position) >= *worst) {
            continue;
        }
        heap.push(Worst(score, position));
        if heap.len() > n {
            heap.pop();
        }
    }
    heap.into_sorted_vec().into_iter().map(|w| w.1).collect()
}

/// Vectors for texts, each checked as a server's answer is (one per text, the dimension, none
/// degenerate), whatever the embedder: a NaN vector would rank first for every query.
pub(crate) async fn embed_checked(
    embedder: &dyn Embedder,
    texts: &[String],
    purpose: Purpose,
    deadline: Option<Instant>,
) -> Result<Vec<Vec<f32>>, StoreError> {
    let vectors = embedder.embed(texts, purpose, deadline).await?;
    check_vectors(embedder.model(), embedder.dimension(), texts.len(), &vectors)?;
    Ok(vectors)
}

/// One vector for one text.
pub(crate) async fn embed_one(
    embedder: &dyn Embedder,
    text: String,
    purpose: Purpose,
    deadline: Option<Instant>,
) -> Result<Vec<f32>, StoreError> {
    let mut vectors = embed_checked(embedder, &[text], purpose, deadline).await?;
    vectors.pop().ok_or_else(|| StoreError::Backend(format!("the embedder `{}` returned no vector", embedder.model())))
}

/// The text a memory is embedded from: its summary and its keywords.
pub(crate) fn memory_text(summary: &str, keywords: &[String]) -> String {
    std::iter::once(summary).chain(keywords.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
}

/// BM25 (k1 = 1.2, b = 0.75) of each text for `words`, the texts themselves the corpus.
fn bm25(texts: &[Vec<String>], words: &[String]) -> Vec<f32> {
    let n = texts.len() as f32;
    let average = texts.iter().map(Vec::len).sum::<usize>() as f32 / n.max(1.0);
    let idf = |w: &String| {
        let having = texts.iter().filter(|t| t.contains(w)).count() as f32;
        ((n - having + 0.5) / (having + 0.5) + 1.0).ln()
    };
    let weights: Vec<f32> = words.iter().map(idf).collect();
    texts
        .iter()
        .map(|t| {
            let length = t.len() as f32;
            words
                .iter()
                .zip(&weights)
                .map(|(w, idf)| {
                    let f = t.iter().filter(|x| *x == w).count() as f32;
                    idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / average.max(1.0)))
                })
                .sum()
        })
        .collect()
}

/// A text's words, lower case, as a query reads them.
pub(crate) fn lower_words(text: &str) -> Vec<String> {
    query_words(text).iter().map(|w| w.to_lowercase()).collect()
}

/// Orders a decision context's decisions (in the hierarchical order) by meaning and words for
/// `input`, fused as memories are; ties keep the hierarchical order. `stored` holds each
/// decision's stored vector where there is a usable one; the others are embedded now, for this
/// read only. Without words, or with fewer than two decisions, nothing moves.
pub(crate) async fn order_decisions(
    decisions: &mut Vec<Decision>,
    stored: Vec<Option<Vec<f32>>>,
    embedder: &dyn Embedder,
    input: &str,
    deadline: Option<Instant>,
) -> Result<(), StoreError> {
    let words = lower_words(input);
    if words.is_empty() || decisions.len() < 2 {
        return Ok(());
    }
    let stored: Vec<Option<Vec<f32>>> =
        stored.into_iter().chain(std::iter::repeat(None)).take(decisions.len()).collect();
    let missing: Vec<String> =
        decisions.iter().zip(&stored).filter(|(_, v)| v.is_none()).map(|(d, _)| d.text.clone()).collect();
    let mut fresh = if missing.is_empty() {
        Vec::new().into_iter()
    } else {
        embed_checked(embedder, &missing, Purpose::Passage, deadline).await?.into_iter()
    };
    let vectors: Vec<Vec<f32>> = stored.into_iter().map(|v| v.or_else(|| fresh.next()).unwrap_or_default()).collect();
    let query = embed_one(embedder, words.join(" "), Purpose::Query, deadline).await?;
    let positions: Vec<usize> = (0..decisions.len()).collect();
    let by_meaning = {
        let mut p = positions.clone();
        p.sort_by(|a, b| dot(&query, &vectors[*b]).total_cmp(&dot(&query, &vectors[*a])).then(a.cmp(b)));
        p
    };
    let scores = bm25(&decisions.iter().map(|d| lower_words(&d.text)).collect::<Vec<_>>(), &words);
    let by_words: Vec<usize> = {
        let mut p: Vec<usize> = positions.iter().copied().filter(|i| scores[*i] > 0.0).collect();
        p.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        p
    };
    let order = fuse(&[&by_meaning, &by_words], positions.len(), |a, b| a.cmp(b));
    let mut taken: Vec<Option<Decision>> = std::mem::take(decisions).into_iter().map(Some).collect();
    *decisions = order.into_iter().filter_map(|i| taken[i].take()).collect();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_being_high_in_both_rankings() {
        // 7 is first by words only, 3 second in both: both rankings agreeing wins.
        let fused = fuse(&[&[1, 3, 5][..], &[7, 3, 9][..]], 3, |a: &i64, b| b.cmp(a));
        assert_eq!(fused[0], 3);
        // An exact identifier found only by words still makes the top.
        assert!(fused.contains(&7));
    }

    #[test]
    fn a_stored_vector_is_used_only_when_it_can_be_ranked_by() {
        let bytes = |v: &[f32]| blob(v);
        assert_eq!(usable(&bytes(&[0.6, 0.8]), 2), Some(vec![0.6, 0.8]));
        assert_eq!(usable(&bytes(&[0.6, 0.8]), 3), None, "another length");
        assert_eq!(usable(&bytes(&[f32::NAN, 1.0]), 2), None);
        assert_eq!(usable(&bytes(&[0.0, 0.0]), 2), None);
    }

    #[test]
    fn best_keeps_the_top_scores_and_breaks_ties_by_recency() {
        let scored = [(0.5, 1), (0.9, 2), (0.5, 3), (0.1, 4), (0.9, 5)];
        assert_eq!(best(3, scored.into_iter()), [5, 2, 3]);
        assert_eq!(best(10, std::iter::empty()), Vec::<i64>::new());
    }

    #[test]
    fn bm25_prefers_the_text_with_the_rare_word() {
        let texts = vec![vec!["rotate".into(), "keys".into()], vec!["deploy".into(), "keys".into()]];
        let s = bm25(&texts, &["rotate".into()]);
        assert!(s[0] > 0.0 && s[1] == 0.0);
    }
}
