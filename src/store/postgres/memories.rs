//! [`PgStore`]'s memories: the search (by words, and by meaning with an embedder), in one
//! round trip with a cycle's reads ahead, and the keyed put.

use super::decisions::{ActiveQueries, MAX_READ_AHEAD, Which};
use super::{Begin, KeyedWrite, PgStore, WRITTEN, backend, meaning};
use crate::contract::schema::MemoryItem;
use crate::pg::{Conn, Query, Then};
use crate::store::{Call, MemoryRepositoryPort, NewMemory, StoreError, query_words};

fn item(row: &tokio_postgres::Row) -> MemoryItem {
    MemoryItem { id: row.get(0), summary: row.get(1), timestamp: row.get(2) }
}

impl PgStore {
    /// The best `top_k` memories of a fused ranking (ids, best first) that can be read: those
    /// the word ranking read already, the others in one round trip. An id whose memory is gone
    /// is passed over (said on the call).
    async fn read_ranked(
        &self,
        call: &Call<'_>,
        fused: Vec<String>,
        read: Vec<MemoryItem>,
        top_k: u64,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        let mut known: std::collections::HashMap<String, MemoryItem> =
            read.into_iter().map(|m| (m.id.clone(), m)).collect();
        let missing: Vec<&String> = fused.iter().filter(|id| !known.contains_key(*id)).collect();
        if !missing.is_empty() {
            let mut conn = self.connection().await?;
            let rows = conn
                .query(
                    "SELECT id, summary, created_at FROM planlock_memories WHERE planlock_mine(tenant) AND namespace = $1 AND id = ANY($2)",
                    &[&self.namespace, &missing],
                )
                .await
                .map_err(backend("reading the memories found by meaning"))?;
            known.extend(rows.iter().map(item).map(|m| (m.id.clone(), m)));
        }
        let n = usize::try_from(top_k).unwrap_or(usize::MAX);
        let mut found = Vec::with_capacity(n.min(fused.len()));
        let mut gone = 0;
        for id in fused {
            if found.len() == n {
                break;
            }
            match known.remove(&id) {
                Some(m) => found.push(m),
                None => gone += 1,
            }
        }
        call.passed_over(gone, "memories");
        Ok(found)
    }
}

impl MemoryRepositoryPort for PgStore {
    /// The server stops the search at the call's deadline (`statement_timeout`). By meaning
    /// too: see [`PgStore::by_meaning`].
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let words = query_words(query);
        // Without words, the most recent, as every memory provider does.
        let meaning = self.meaning.as_deref().filter(|_| !words.is_empty());
        let query_vector = match meaning {
            Some(m) => Some(m.embed_query(&words, call.deadline()).await?),
            None => None,
        };
        let reads = match (meaning, &query_vector) {
            (Some(m), Some(query)) => Some(m.reads(query)),
            _ => None,
        };
        let words = words.join(" | ");
        // By meaning, the word ranking gives its best CANDIDATES for the fusion.
        let limit = match meaning {
            Some(_) => i64::try_from(crate::store::meaning::CANDIDATES).unwrap_or(i64::MAX),
            None => i64::try_from(top_k).unwrap_or(i64::MAX),
        };
        let in_cycle = self.cycle(call)?;
        // The keys of the cycle's later steps: which are written is read with the search.
        let keys = in_cycle.map(|_| call.keys_ahead()).unwrap_or_default();
        // The cycle's token reservation, made at its start, goes with this batch (CONTRACT §20):
        // its own transaction's rows are locked only until this commit.
        let reservation = match in_cycle {
            Some(cycle) => cycle.reservation_to_send().await,
            None => None,
        };
        let begin = Begin { deadline: call.deadline(), custom_plans: true, async_commit: reservation.is_some() };
        let mut reserved = None;
        let searched = self
            .alone("searching memories", begin, async |tx: &mut Conn, namespace: &str| {
                let search = if words.is_empty() {
                    Query::new(
                        "SELECT id, summary, created_at FROM planlock_memories WHERE planlock_mine(tenant) AND namespace = $1 ORDER BY seq DESC LIMIT $2",
                        &[&namespace, &limit],
                    )
                } else {
                    Query::new(
                        "SELECT id, summary, created_at FROM planlock_memories, to_tsquery('simple', $2) q
                         WHERE planlock_mine(tenant) AND namespace = $1 AND search @@ q
                         ORDER BY ts_rank(search, q) DESC, seq DESC LIMIT $3",
                        &[&namespace, &words, &limit],
                    )
                };
                // In a session's cycle, the decision context is read in this transaction too, for
                // the cycle's RetrieveDecisionContext step, and which of the cycle's keys are
                // written, for its writes: the search, the reads ahead and the commit go in one
                // round trip. A namespace with more than MAX_READ_AHEAD active decisions keeps
                // no decisions.
                let ahead = ActiveQueries::new(Which::Ahead);
                // Only the search needs its plan made for its parameters (see `Begin`): the
                // statements after it use their cached plans.
                let mut batch = vec![search, Query::new("SET LOCAL plan_cache_mode = auto", &[])];
                // By meaning, the decisions' order needs their vectors: read ahead too.
                let decision_vectors = in_cycle.and(self.meaning.as_deref());
                let (bytes, vector_limit) = (decision_vectors.map_or(0, |m| m.bytes()), MAX_READ_AHEAD + 1);
                if in_cycle.is_some() {
                    batch.extend(ahead.queries(&namespace));
                    batch.push(Query::new(WRITTEN, &[&namespace, &keys]));
                }
                if decision_vectors.is_some() {
                    batch.push(Query::new(meaning::VECTOR_META, &[&namespace]));
                    batch.push(Query::new(meaning::ACTIVE_DECISION_VECTORS, &[&namespace, &bytes, &vector_limit]));
                }
                // By meaning, the namespace's embedder and the vector ranking's reads (the vectors
                // written since the last search, or the pgvector tier's nearest): last.
                if let Some(reads) = &reads {
                    batch.extend(reads.queries(&namespace));
                }
                // Last, so the reads' rows keep their places (its transaction begun to commit
                // without waiting for the WAL flush: `Begin::async_commit`).
                if let Some(reservation) = &reservation {
                    batch.push(reservation.query());
                }
                let ran = tx.pipeline(&batch, Then::Commit).await;
                let mut rows = match ran {
                    Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::QUERY_CANCELED) => {
                        return Err(StoreError::Backend("the search was stopped at the step's deadline".into()));
                    }
                    Err(e) if meaning.is_some_and(|m| m.is_hnsw()) => return Err(meaning::hnsw_failure(e)),
                    rows => rows.map_err(backend("searching memories"))?,
                };
                // The reservation's answer, last: taken off before the reads' rows, which end there.
                if reservation.is_some() {
                    reserved = rows.pop();
                }
                let read = reads.as_ref().map(|reads| reads.take(&mut rows));
                let items: Vec<MemoryItem> = rows[0].iter().map(item).collect();
                let (ahead, written) = match in_cycle {
                    Some(_) => {
                        let written = rows[4].iter().map(|row| (row.get(0), row.get(1))).collect::<Vec<_>>();
                        let mut kept = ahead.kept(&rows[2], &rows[3]);
                        if let (Some(kept), Some(_)) = (&mut kept, decision_vectors) {
                            kept.vectors = meaning::Meaning::kept(&rows[5], &rows[6], vector_limit);
                        }
                        (kept, written)
                    }
                    None => (None, Vec::new()),
                };
                Ok((items, ahead, written, read))
            })
            .await;
        // Back in the cycle whatever became of the search: with its answer, or to be sent again.
        if let (Some(cycle), Some(reservation)) = (in_cycle, reservation) {
            cycle.answered(reservation, reserved).await;
        }
        let (items, ahead, written, read) = searched?;
        if let Some(cycle) = in_cycle {
            cycle.learn(&keys, written).await;
            if let Some(ahead) = ahead {
                cycle.keep(ahead).await;
            }
        }
        match (meaning, query_vector, read) {
            (Some(m), Some(query), Some(read)) => {
                let fused = m.rank(self, call, &query, &items, read).await?;
                self.read_ranked(call, fused, items, top_k).await
            }
            _ => Ok(items),
        }
    }

    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        // A memory's id is made from its key: what a put again under the key finds.
        let id = format!("mem-{}", &call.key()?.to_string()[..16]);
        let mut write = KeyedWrite {
            doing: "storing a memory",
            sql: "SELECT planlock_put_memory($1, $2, $3, $4, $5, $6, $7, $8)",
            values: vec![
                Box::new(id.clone()),
                Box::new(memory.session_ref.to_owned()),
                Box::new(memory.summary.to_owned()),
                Box::new(memory.keywords.join(" ")),
                Box::new(crate::store::now()),
            ],
            expected: id,
        };
        // By meaning, with its vector (embedded within the call's deadline).
        if let Some(m) = &self.meaning {
            let text = crate::store::meaning::memory_text(memory.summary, memory.keywords);
            m.memory_write(&mut write, text, call.deadline()).await?;
        }
        self.write(call, write).await
    }
}
