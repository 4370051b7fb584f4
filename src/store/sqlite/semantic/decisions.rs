//! The strategy `semantic-sql`: the decisions `hierarchical-sql` loads, ordered by meaning and
//! words together.

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};

use super::{blob, embed_checked, embed_one, ensure_vectors, fuse, has_vectors, usable};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::embed::{Embedder, Purpose, dot};
use crate::store::sqlite::{SqliteStore, backend};
use crate::store::{Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, StoreError, query_words};

/// The strategy `semantic-sql`: the decisions `hierarchical-sql` would load (the same scopes, the
/// active versions), ordered by meaning and words together instead of by scope (see the module
/// docs); their anchors as before.
#[derive(Clone)]
pub struct SemanticDecisions {
    store: SqliteStore,
    embedder: Arc<dyn Embedder>,
}

impl std::fmt::Debug for SemanticDecisions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticDecisions").field("store", &self.store).field("model", &self.embedder.model()).finish()
    }
}

impl SemanticDecisions {
    /// The strategy over `store`, embedding with `embedder`.
    pub fn new(store: SqliteStore, embedder: Arc<dyn Embedder>) -> SemanticDecisions {
        SemanticDecisions { store, embedder }
    }
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

fn lower_words(text: &str) -> Vec<String> {
    query_words(text).iter().map(|w| w.to_lowercase()).collect()
}

impl DecisionContextProviderPort for SemanticDecisions {
    /// The load, bounded by the call's deadline in its reads and its embeddings, passing over
    /// a stored vector that cannot be used (another length, degenerate; said on the call): that
    /// decision is embedded again for this read, as one without a vector is.
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        let deadline = call.deadline();
        let mut context = self.store.load(call, input, current_domain).await?;
        let words = lower_words(input);
        if words.is_empty() || context.decisions.len() < 2 {
            return Ok(context);
        }
        let ids: Vec<String> = context.decisions.iter().map(|d| d.id.clone()).collect();
        let dimension = self.embedder.dimension();
        let (stored, passed_over) = self
            .store
            .read_within(deadline, move |conn| {
                let mut out = vec![None; ids.len()];
                let mut passed_over = 0;
                if !has_vectors(conn)? {
                    return Ok((out, passed_over));
                }
                // The blob's length is read before the blob: one of another length is not loaded.
                let mut stmt = conn.prepare_cached(
                    "SELECT CASE WHEN length(vector) = ?2 THEN vector END FROM decision_vectors WHERE decision_id = ?1",
                )?;
                for (slot, id) in out.iter_mut().zip(&ids) {
                    let row: Option<Option<Vec<u8>>> =
                        stmt.query_row(params![id, (dimension * 4) as i64], |r| r.get(0)).optional()?;
                    *slot = match row {
                        None => None,
                        Some(blob) => {
                            let v = blob.and_then(|b| usable(&b, dimension));
                            passed_over += usize::from(v.is_none());
                            v
                        }
                    };
                }
                Ok((out, passed_over))
            })
            .await?
            .unwrap_or_default();
        // Decisions without a usable stored vector are embedded now (nothing is written by a read).
        let missing: Vec<String> = context
            .decisions
            .iter()
            .zip(stored.iter().chain(std::iter::repeat(&None)))
            .filter(|(_, v)| v.is_none())
            .map(|(d, _)| d.text.clone())
            .collect();
        let mut fresh = if missing.is_empty() {
            Vec::new().into_iter()
        } else {
            embed_checked(&*self.embedder, &missing, Purpose::Passage, deadline).await?.into_iter()
        };
        let vectors: Vec<Vec<f32>> = stored
            .into_iter()
            .chain(std::iter::repeat(None))
            .take(context.decisions.len())
            .map(|v| v.or_else(|| fresh.next()).unwrap_or_default())
            .collect();
        let query = embed_one(&*self.embedder, words.join(" "), Purpose::Query, deadline).await?;
        let positions: Vec<usize> = (0..context.decisions.len()).collect();
        let by_meaning = {
            let mut p = positions.clone();
            p.sort_by(|a, b| dot(&query, &vectors[*b]).total_cmp(&dot(&query, &vectors[*a])).then(a.cmp(b)));
            p
        };
        let scores = bm25(&context.decisions.iter().map(|d| lower_words(&d.text)).collect::<Vec<_>>(), &words);
        let by_words: Vec<usize> = {
            let mut p: Vec<usize> = positions.iter().copied().filter(|i| scores[*i] > 0.0).collect();
            p.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
            p
        };
        // Ties keep the hierarchical order (global, axis, domain).
        let order = fuse(&[&by_meaning, &by_words], positions.len(), |a, b| a.cmp(b));
        let mut decisions: Vec<Option<Decision>> = context.decisions.into_iter().map(Some).collect();
        context.decisions = order.into_iter().filter_map(|i| decisions[i].take()).collect();
        call.passed_over(passed_over, "decision vectors");
        Ok(context)
    }
}

impl DecisionWritePort for SemanticDecisions {
    /// A key written already answers before anything is embedded (a re-run pays for no
    /// embedding); a new decision is embedded within the call's deadline.
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        if let Some(done) = self.store.written(call.key()?).await? {
            return Ok(done);
        }
        let vector = embed_one(&*self.embedder, decision.text.clone(), Purpose::Passage, call.deadline()).await?;
        let id = self.store.persist_decision(call, decision).await?;
        let (model, dimension, decision_id) = (self.embedder.model().to_owned(), self.embedder.dimension(), id.clone());
        self.store
            .write(move |tx| {
                ensure_vectors(tx, &model, dimension)?;
                tx.execute(
                    "INSERT OR REPLACE INTO decision_vectors (decision_id, vector) VALUES (?1, ?2)",
                    params![decision_id, blob(&vector)],
                )
                .map(drop)
                .map_err(backend("storing a decision's vector"))
            })
            .await?;
        Ok(id)
    }
    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        self.store.persist_evidence(call, evidence).await
    }
    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        self.store.link(call, anchor).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_prefers_the_text_with_the_rare_word() {
        let texts = vec![vec!["rotate".into(), "keys".into()], vec!["deploy".into(), "keys".into()]];
        let s = bm25(&texts, &["rotate".into()]);
        assert!(s[0] > 0.0 && s[1] == 0.0);
    }
}
