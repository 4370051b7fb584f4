//! The decision ports' writes, written once for every backend (docs/CONTRACT.md, "Storage behind
//! ports" and "Sessions and the runtime", exactly-once effects): what an idempotency key means,
//! the order of the checks and the version rules live here; a backend supplies only its rows
//! ([`WriteRows`]), inside one transaction that it commits when the write returns `Ok` and drops
//! otherwise, so a refused write leaves nothing behind.
//!
//! Layer 5, with the stores.

use std::future::Future;

use super::{StoreError, check_version, same_decision};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::hash::IdempotencyKey;

/// The rows a backend reads and writes for the decision ports, all inside the write's one
/// transaction. Each is a future: PostgreSQL's wait on the server, SQLite's are ready at once
/// (they run on a blocking thread already).
pub(crate) trait WriteRows {
    /// What the write under `key` returned, if it happened. A backend shared by many writers
    /// first locks the key for the rest of the transaction, so two writes of one key serialize.
    fn written(&mut self, key: &IdempotencyKey) -> impl Future<Output = Result<Option<String>, StoreError>>;
    /// Records what the write under `key` returned.
    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> impl Future<Output = Result<(), StoreError>>;
    /// The stored decision with this id.
    fn decision(&mut self, id: &str) -> impl Future<Output = Result<Option<Decision>, StoreError>>;
    /// The active version of a root (a list, to check, though the rules allow one), locked until
    /// the transaction ends where the backend can.
    fn active_versions(&mut self, root_id: &str) -> impl Future<Output = Result<Vec<Decision>, StoreError>>;
    /// Compare-and-set: marks decision `id` inactive if it is active; whether it was.
    fn deactivate(&mut self, id: &str) -> impl Future<Output = Result<bool, StoreError>>;
    /// Inserts a new decision as the active version of its root.
    fn insert_decision(&mut self, decision: &Decision) -> impl Future<Output = Result<(), StoreError>>;
    /// Inserts the evidence unless one with its id is stored; whether it inserted.
    fn insert_evidence(&mut self, evidence: &Evidence) -> impl Future<Output = Result<bool, StoreError>>;
    /// The stored evidence's summary and source.
    fn evidence(&mut self, id: &str) -> impl Future<Output = Result<Option<(String, String)>, StoreError>>;
    /// Whether a decision or evidence with this id is stored.
    fn exists(&mut self, end: End, id: &str) -> impl Future<Output = Result<bool, StoreError>>;
    /// Links a decision and evidence unless they are linked.
    fn insert_link(&mut self, anchor: &Anchor) -> impl Future<Output = Result<(), StoreError>>;
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// A decision.
    Decision,
    /// Evidence.
    Evidence,
}

/// A write under an idempotency key, around its body: a key already written returns what its
/// write returned and writes nothing; otherwise the body runs and its result is recorded under
/// the key.
macro_rules! keyed {
    ($rows:expr, $key:expr, $body:block) => {{
        if let Some(done) = $rows.written($key).await? {
            return Ok(done);
        }
        let result: Result<String, StoreError> = async { $body }.await;
        let result = result?;
        $rows.record_write($key, &result).await?;
        Ok(result)
    }};
}

/// `DecisionWritePort::persist_decision`: a decision stored with the same content is the same
/// write (its key is recorded); with other content, a conflict. A new one follows the version
/// rules ([`check_version`]) and deactivates the version it follows by compare-and-set.
pub(crate) async fn persist_decision<R: WriteRows>(
    rows: &mut R,
    decision: &Decision,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed!(rows, key, {
        if let Some(stored) = rows.decision(&decision.id).await? {
            if same_decision(&stored, decision) {
                return Ok(decision.id.clone());
            }
            return Err(StoreError::Conflict(format!("decision `{}` is stored with other content", decision.id)));
        }
        check_version(&rows.active_versions(&decision.root_id).await?, decision)?;
        if let Some(previous) = &decision.previous_version_id
            && !rows.deactivate(previous).await?
        {
            return Err(StoreError::Conflict(format!("`{previous}` is no longer the active version")));
        }
        rows.insert_decision(decision).await?;
        Ok(decision.id.clone())
    })
}

/// `DecisionWritePort::persist_evidence`: evidence stored with the same content is the same
/// write; with other content, a conflict.
pub(crate) async fn persist_evidence<R: WriteRows>(
    rows: &mut R,
    evidence: &Evidence,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed!(rows, key, {
        if !rows.insert_evidence(evidence).await? {
            match rows.evidence(&evidence.id).await? {
                Some((summary, source)) if summary == evidence.summary && source == evidence.source => {}
                _ => {
                    return Err(StoreError::Conflict(format!(
                        "evidence `{}` is stored with other content",
                        evidence.id
                    )));
                }
            }
        }
        Ok(evidence.id.clone())
    })
}

/// `DecisionWritePort::link`: both ends must be stored; linking twice is one link.
pub(crate) async fn link<R: WriteRows>(
    rows: &mut R,
    anchor: &Anchor,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed!(rows, key, {
        for (end, id, what) in
            [(End::Decision, &anchor.decision_id, "decision"), (End::Evidence, &anchor.evidence_id, "evidence")]
        {
            if !rows.exists(end, id).await? {
                return Err(StoreError::NotFound(format!("{what} `{id}` to link")));
            }
        }
        rows.insert_link(anchor).await?;
        Ok("linked".to_owned())
    })
}
