//! The strategy `semantic-sql`: the decisions `hierarchical-sql` loads, ordered by meaning and
//! words together.

use std::sync::Arc;

use rusqlite::{OptionalExtension, params};

use super::{ensure_vectors, has_vectors};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::embed::{Embedder, Purpose};
use crate::store::meaning::{blob, embed_one, lower_words, order_decisions, usable};
use crate::store::sqlite::{SqliteStore, backend};
use crate::store::{Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, StoreError};

/// The strategy's id.
pub const STRATEGY: &str = "semantic-sql";

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
        if lower_words(input).is_empty() || context.decisions.len() < 2 {
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
        order_decisions(&mut context.decisions, stored, &*self.embedder, input, deadline).await?;
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
