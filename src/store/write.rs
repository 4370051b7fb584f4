//! The decision ports' writes, written once for the embedded backends (docs/CONTRACT.md,
//! "Storage behind ports" and "Sessions and the runtime", exactly-once effects): what an
//! idempotency key means, the order of the checks and the version rules live here; a backend
//! supplies only its rows ([`WriteRows`]), inside one transaction that it commits when the write
//! returns `Ok` and drops otherwise, so a refused write leaves nothing behind.
//!
//! PostgreSQL runs the same rules in the server, one function per write (`src/pg/v8.sql`), so
//! that a cycle's writes can travel with its session save in one round trip; its messages are
//! these word for word (`tests/postgres`, `the_write_functions_answer_as_the_embedded_stores_do`,
//! holds the two to the same answers).
//!
//! Each write has two phases: it reads everything its checks need at once
//! ([`WriteRows::read`], after claiming the key), the checks decide here, and it makes its
//! changes and records its key at once ([`WriteRows::apply`]). A backend that reads and writes in
//! place implements [`RowByRow`], one row at a time.
//!
//! Layer 5, with the stores.

use std::future::Future;

use super::StoreError;
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::hash::IdempotencyKey;

/// One end of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// A decision.
    Decision,
    /// Evidence.
    Evidence,
}

/// What a write's checks read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Read<'a> {
    /// The stored decision with this id.
    Decision(&'a str),
    /// The active versions of a root (a list, to check, though the rules allow one), locked
    /// until the transaction ends where the backend can.
    ActiveVersions(&'a str),
    /// The stored evidence's summary and source.
    Evidence(&'a str),
    /// Whether a decision or evidence with this id is stored.
    Exists(End, &'a str),
}

/// What a [`Read`] found, in the same order.
#[derive(Debug, Clone)]
pub(crate) enum Answer {
    /// [`Read::Decision`].
    Decision(Option<Decision>),
    /// [`Read::ActiveVersions`].
    ActiveVersions(Vec<Decision>),
    /// [`Read::Evidence`].
    Evidence(Option<(String, String)>),
    /// [`Read::Exists`].
    Exists(bool),
}

/// A change a write makes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'a> {
    /// Compare-and-set: marks decision `id` inactive if it is active.
    Deactivate(&'a str),
    /// Inserts a new decision as the active version of its root.
    InsertDecision(&'a Decision),
    /// Inserts the evidence unless one with its id is stored.
    InsertEvidence(&'a Evidence),
    /// Links a decision and evidence unless they are linked.
    InsertLink(&'a Anchor),
}

/// The rows a backend reads and writes for the decision ports, all inside the write's one
/// transaction, each phase in one go where the backend can.
pub(crate) trait WriteRows {
    /// What the write under `key` returned, if it happened (with a key; without one, `None`),
    /// and what `reads` found, in order. A backend shared by many writers first locks the key
    /// for the rest of the transaction, so two writes of one key serialize.
    fn read(
        &mut self,
        key: Option<&IdempotencyKey>,
        reads: &[Read<'_>],
    ) -> impl Future<Output = Result<(Option<String>, Vec<Answer>), StoreError>>;
    /// Makes `changes` in order and records `result` as what the write under `key` returned;
    /// whether each change changed a row.
    fn apply(
        &mut self,
        changes: &[Change<'_>],
        key: &IdempotencyKey,
        result: &str,
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>>;
}

/// The rows of a backend that reads and writes in place, one at a time (SQLite's, in memory):
/// a [`WriteRows`] through the blanket implementation.
pub(crate) trait RowByRow {
    /// What the write under `key` returned, if it happened.
    fn written(&mut self, key: &IdempotencyKey) -> Result<Option<String>, StoreError>;
    /// Records what the write under `key` returned.
    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> Result<(), StoreError>;
    /// Reads one [`Read`].
    fn read_one(&mut self, read: Read<'_>) -> Result<Answer, StoreError>;
    /// Makes one [`Change`]; whether it changed a row.
    fn change(&mut self, change: Change<'_>) -> Result<bool, StoreError>;
}

impl<R: RowByRow> WriteRows for R {
    async fn read(
        &mut self,
        key: Option<&IdempotencyKey>,
        reads: &[Read<'_>],
    ) -> Result<(Option<String>, Vec<Answer>), StoreError> {
        if let Some(key) = key
            && let Some(done) = self.written(key)?
        {
            return Ok((Some(done), Vec::new()));
        }
        let found = reads.iter().map(|read| self.read_one(*read)).collect::<Result<_, _>>()?;
        Ok((None, found))
    }

    async fn apply(
        &mut self,
        changes: &[Change<'_>],
        key: &IdempotencyKey,
        result: &str,
    ) -> Result<Vec<bool>, StoreError> {
        let changed = changes.iter().map(|change| self.change(*change)).collect::<Result<_, _>>()?;
        self.record_write(key, result)?;
        Ok(changed)
    }
}

/// A backend that answered a read with something else: its bug, said as a failure.
fn unexpected(found: &[Answer]) -> StoreError {
    StoreError::Backend(format!("the store answered the write's reads with {found:?}"))
}

/// `DecisionWritePort::persist_decision`: a decision stored with the same content is the same
/// write (its key is recorded); with other content, a conflict. A new one follows the version
/// rules ([`check_version`]) and deactivates the version it follows by compare-and-set.
pub(crate) async fn persist_decision<R: WriteRows>(
    rows: &mut R,
    decision: &Decision,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    let reads = [Read::Decision(&decision.id), Read::ActiveVersions(&decision.root_id)];
    let (done, found) = rows.read(Some(key), &reads).await?;
    if let Some(done) = done {
        return Ok(done);
    }
    let [Answer::Decision(stored), Answer::ActiveVersions(active)] = &found[..] else { return Err(unexpected(&found)) };
    if let Some(stored) = stored {
        if same_decision(stored, decision) {
            rows.apply(&[], key, &decision.id).await?;
            return Ok(decision.id.clone());
        }
        return Err(StoreError::Conflict(format!("decision `{}` is stored with other content", decision.id)));
    }
    check_version(active, decision)?;
    let mut changes = Vec::with_capacity(2);
    if let Some(previous) = &decision.previous_version_id {
        changes.push(Change::Deactivate(previous));
    }
    changes.push(Change::InsertDecision(decision));
    let changed = rows.apply(&changes, key, &decision.id).await?;
    // The active version was read under a lock, so this holds; a backend that cannot lock
    // finds out here, and the write (its transaction) is dropped.
    if let Some(previous) = &decision.previous_version_id
        && changed.first() != Some(&true)
    {
        return Err(StoreError::Conflict(format!("`{previous}` is no longer the active version")));
    }
    Ok(decision.id.clone())
}

/// `DecisionWritePort::persist_evidence`: evidence stored with the same content is the same
/// write; with other content, a conflict.
pub(crate) async fn persist_evidence<R: WriteRows>(
    rows: &mut R,
    evidence: &Evidence,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    let (done, found) = rows.read(Some(key), &[Read::Evidence(&evidence.id)]).await?;
    if let Some(done) = done {
        return Ok(done);
    }
    let conflict = || StoreError::Conflict(format!("evidence `{}` is stored with other content", evidence.id));
    let same = |stored: &(String, String)| stored.0 == evidence.summary && stored.1 == evidence.source;
    match &found[..] {
        [Answer::Evidence(Some(stored))] if same(stored) => {
            rows.apply(&[], key, &evidence.id).await?;
        }
        [Answer::Evidence(Some(_))] => return Err(conflict()),
        [Answer::Evidence(None)] => {
            let changed = rows.apply(&[Change::InsertEvidence(evidence)], key, &evidence.id).await?;
            // Another write (under another key) stored the same id in between: the same
            // content is the same evidence.
            if changed.first() != Some(&true) {
                let (_, found) = rows.read(None, &[Read::Evidence(&evidence.id)]).await?;
                if !matches!(&found[..], [Answer::Evidence(Some(stored))] if same(stored)) {
                    return Err(conflict());
                }
            }
        }
        _ => return Err(unexpected(&found)),
    }
    Ok(evidence.id.clone())
}

/// `DecisionWritePort::link`: both ends must be stored; linking twice is one link.
pub(crate) async fn link<R: WriteRows>(
    rows: &mut R,
    anchor: &Anchor,
    key: &IdempotencyKey,
) -> Result<String, StoreError> {
    let reads = [Read::Exists(End::Decision, &anchor.decision_id), Read::Exists(End::Evidence, &anchor.evidence_id)];
    let (done, found) = rows.read(Some(key), &reads).await?;
    if let Some(done) = done {
        return Ok(done);
    }
    let [Answer::Exists(decision), Answer::Exists(evidence)] = &found[..] else { return Err(unexpected(&found)) };
    for (stored, what, id) in [(decision, "decision", &anchor.decision_id), (evidence, "evidence", &anchor.evidence_id)]
    {
        if !stored {
            return Err(StoreError::NotFound(format!("{what} `{id}` to link")));
        }
    }
    rows.apply(&[Change::InsertLink(anchor)], key, "linked").await?;
    Ok("linked".to_owned())
}

/// Whether two versions are the same write (whether one is still active is the store's business).
fn same_decision(a: &Decision, b: &Decision) -> bool {
    (&a.id, &a.root_id, a.version, &a.text, &a.strength, &a.scope, &a.previous_version_id)
        == (&b.id, &b.root_id, b.version, &b.text, &b.strength, &b.scope, &b.previous_version_id)
}

/// The version rules of a new decision against the stored ones (docs/CONTRACT.md, "Storage
/// behind ports"): a new root starts at version 1 with no active version; a next version names
/// the root's active version and carries its version + 1.
fn check_version(stored: &[Decision], decision: &Decision) -> Result<(), StoreError> {
    let active = stored.iter().find(|d| d.root_id == decision.root_id && d.is_active);
    match (&decision.previous_version_id, active) {
        (None, None) if decision.version.get() == 1 => Ok(()),
        (None, None) => Err(StoreError::Conflict(format!(
            "decision `{}` starts root `{}` but has version {}, not 1",
            decision.id,
            decision.root_id,
            decision.version.get()
        ))),
        (None, Some(a)) => Err(StoreError::Conflict(format!(
            "decision `{}` starts root `{}`, which already has the active version `{}`; name it as previousVersionId",
            decision.id, decision.root_id, a.id
        ))),
        (Some(previous), Some(a)) if &a.id == previous => {
            if decision.version.get() == a.version.get() + 1 {
                Ok(())
            } else {
                Err(StoreError::Conflict(format!(
                    "decision `{}` follows version {} of root `{}` but has version {}",
                    decision.id,
                    a.version.get(),
                    decision.root_id,
                    decision.version.get()
                )))
            }
        }
        (Some(previous), _) => Err(StoreError::Conflict(format!(
            "decision `{}` follows `{previous}`, which is not the active version of root `{}`",
            decision.id, decision.root_id
        ))),
    }
}
