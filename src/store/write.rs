//! The decision ports' writes, written once for every backend (docs/CONTRACT.md, "Storage behind
//! ports" and "Sessions and the runtime", exactly-once effects): what an idempotency key means,
//! the order of the checks and the version rules live here; a backend supplies only its rows
//! ([`WriteRows`]), inside one transaction that it commits when the write returns `Ok` and drops
//! otherwise, so a refused write leaves nothing behind.
//!
//! Layer 5, with the stores.

use super::{StoreError, check_version, same_decision};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::hash::IdempotencyKey;

/// The rows a backend reads and writes for the decision ports, all inside the write's one
/// transaction.
pub(crate) trait WriteRows {
    /// What the write under `key` returned, if it happened. A backend shared by many writers
    /// first locks the key for the rest of the transaction, so two writes of one key serialize.
    fn written(&mut self, key: &IdempotencyKey) -> Result<Option<String>, StoreError>;
    /// Records what the write under `key` returned.
    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> Result<(), StoreError>;
    /// The stored decision with this id.
    fn decision(&mut self, id: &str) -> Result<Option<Decision>, StoreError>;
    /// The active version of a root (a list, to check, though the rules allow one), locked until
    /// the transaction ends where the backend can.
    fn active_versions(&mut self, root_id: &str) -> Result<Vec<Decision>, StoreError>;
    /// Compare-and-set: marks decision `id` inactive if it is active; whether it was.
    fn deactivate(&mut self, id: &str) -> Result<bool, StoreError>;
    /// Inserts a new decision as the active version of its root.
    fn insert_decision(&mut self, decision: &Decision) -> Result<(), StoreError>;
    /// Inserts the evidence unless one with its id is stored; whether it inserted.
    fn insert_evidence(&mut self, evidence: &Evidence) -> Result<bool, StoreError>;
    /// The stored evidence's summary and source.
    fn evidence(&mut self, id: &str) -> Result<Option<(String, String)>, StoreError>;
    /// Whether a decision or evidence with this id is stored.
    fn exists(&mut self, end: End, id: &str) -> Result<bool, StoreError>;
    /// Links a decision and evidence unless they are linked.
    fn insert_link(&mut self, anchor: &Anchor) -> Result<(), StoreError>;
}

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// A decision.
    Decision,
    /// Evidence.
    Evidence,
}

/// A write under an idempotency key: a key already written returns what its write returned and
/// writes nothing; otherwise `write` runs and its result is recorded under the key.
fn keyed<R: WriteRows + ?Sized>(
    rows: &mut R,
    key: &IdempotencyKey,
    write: impl FnOnce(&mut R) -> Result<String, StoreError>,
) -> Result<String, StoreError> {
    if let Some(done) = rows.written(key)? {
        return Ok(done);
    }
    let result = write(rows)?;
    rows.record_write(key, &result)?;
    Ok(result)
}

/// `DecisionWritePort::persist_decision`: a decision stored with the same content is the same
/// write (its key is recorded); with other content, a conflict. A new one follows the version
/// rules ([`check_version`]) and deactivates the version it follows by compare-and-set.
pub(crate) fn persist_decision<R: WriteRows + ?Sized>(
    rows: &mut R,
    decision: &Decision,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed(rows, key, |rows| {
        if let Some(stored) = rows.decision(&decision.id)? {
            if same_decision(&stored, decision) {
                return Ok(decision.id.clone());
            }
            return Err(StoreError::Conflict(format!("decision `{}` is stored with other content", decision.id)));
        }
        check_version(&rows.active_versions(&decision.root_id)?, decision)?;
        if let Some(previous) = &decision.previous_version_id
            && !rows.deactivate(previous)?
        {
            return Err(StoreError::Conflict(format!("`{previous}` is no longer the active version")));
        }
        rows.insert_decision(decision)?;
        Ok(decision.id.clone())
    })
}

/// `DecisionWritePort::persist_evidence`: evidence stored with the same content is the same
/// write; with other content, a conflict.
pub(crate) fn persist_evidence<R: WriteRows + ?Sized>(
    rows: &mut R,
    evidence: &Evidence,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed(rows, key, |rows| {
        if !rows.insert_evidence(evidence)? {
            match rows.evidence(&evidence.id)? {
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
pub(crate) fn link<R: WriteRows + ?Sized>(
    rows: &mut R,
    anchor: &Anchor,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    keyed(rows, key, |rows| {
        for (end, id, what) in
            [(End::Decision, &anchor.decision_id, "decision"), (End::Evidence, &anchor.evidence_id, "evidence")]
        {
            if !rows.exists(end, id)? {
                return Err(StoreError::NotFound(format!("{what} `{id}` to link")));
            }
        }
        rows.insert_link(anchor)?;
        Ok("linked".to_owned())
    })
}
