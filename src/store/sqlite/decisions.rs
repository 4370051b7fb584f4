//! Decisions, evidence and their links in the SQLite store (docs/CONTRACT.md, "Storage behind
//! ports"): the hierarchical load (global, axis, then the current domain; active versions) and
//! the versioned, idempotent writes.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{SqliteStore, backend};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::contract::value::PositiveInt;
use crate::hash::IdempotencyKey;
use crate::store::{DecisionContext, DecisionContextProviderPort, DecisionWritePort, Scope, StoreError};

/// What the write under `key` returned, if it happened.
fn written(tx: &rusqlite::Transaction<'_>, key: &str) -> Result<Option<String>, StoreError> {
    tx.query_row("SELECT result FROM writes WHERE idem_key = ?1", params![key], |r| r.get(0))
        .optional()
        .map_err(backend("reading the idempotency keys"))
}

fn record_write(tx: &rusqlite::Transaction<'_>, key: &str, result: &str) -> Result<(), StoreError> {
    tx.execute("INSERT INTO writes (idem_key, result) VALUES (?1, ?2)", params![key, result])
        .map(drop)
        .map_err(backend("recording the idempotency key"))
}

const DECISION_COLUMNS: &str =
    "id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id";

fn decision_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Decision> {
    // The scope is rebuilt from its two columns, reading the kind without copying it.
    let scope = match (r.get_ref(5)?.as_str()?, r.get_ref(6)?.as_str_or_null()?) {
        ("domain", Some(name)) => format!("domain:{name}"),
        (kind, _) => kind.to_owned(),
    };
    let version: i64 = r.get(2)?;
    Ok(Decision {
        id: r.get(0)?,
        root_id: r.get(1)?,
        version: PositiveInt::new(u64::try_from(version).unwrap_or(0)).unwrap_or(PositiveInt::MIN),
        text: r.get(3)?,
        strength: r.get(4)?,
        scope,
        is_active: r.get(7)?,
        previous_version_id: r.get(8)?,
    })
}

impl DecisionContextProviderPort for SqliteStore {
    async fn load(&self, _input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        let domain = current_domain.map(str::to_owned);
        let context = self
            .with(false, move |conn| {
                let in_scope = "is_active = 1 AND (scope_kind IN ('global', 'axis') OR (scope_kind = 'domain' AND scope_domain = ?1))";
                let sql = format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE {in_scope}
                     ORDER BY CASE scope_kind WHEN 'global' THEN 0 WHEN 'axis' THEN 1 ELSE 2 END, rowid"
                );
                let mut stmt = conn.prepare_cached(&sql).map_err(backend("loading decisions"))?;
                let decisions = stmt
                    .query_map(params![domain], decision_row)
                    .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                    .map_err(backend("loading decisions"))?;
                let sql = "SELECT de.decision_id, de.evidence_id FROM decision_evidence de JOIN decisions d ON d.id = de.decision_id
                     WHERE d.is_active = 1 AND (d.scope_kind IN ('global', 'axis') OR (d.scope_kind = 'domain' AND d.scope_domain = ?1))
                     ORDER BY de.rowid";
                let mut stmt = conn.prepare_cached(sql).map_err(backend("loading anchors"))?;
                let anchors = stmt
                    .query_map(params![domain], |r| Ok(Anchor { decision_id: r.get(0)?, evidence_id: r.get(1)? }))
                    .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                    .map_err(backend("loading anchors"))?;
                Ok(DecisionContext { decisions, anchors })
            })
            .await?;
        Ok(context.unwrap_or_default())
    }
}

impl DecisionWritePort for SqliteStore {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (decision, key) = (decision.clone(), key.to_string());
        let id = self
            .with(true, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend("storing a decision"))?;
                if let Some(id) = written(&tx, &key)? {
                    return Ok(id);
                }
                let stored = tx
                    .query_row(&format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE id = ?1"), params![decision.id], decision_row)
                    .optional()
                    .map_err(backend("storing a decision"))?;
                if let Some(stored) = stored {
                    if crate::store::same_decision(&stored, &decision) {
                        record_write(&tx, &key, &decision.id)?;
                        tx.commit().map_err(backend("storing a decision"))?;
                        return Ok(decision.id);
                    }
                    return Err(StoreError::Conflict(format!("decision `{}` is stored with other content", decision.id)));
                }
                let active = tx
                    .query_row(
                        &format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE root_id = ?1 AND is_active = 1"),
                        params![decision.root_id],
                        decision_row,
                    )
                    .optional()
                    .map_err(backend("storing a decision"))?;
                crate::store::check_version(active.as_slice(), &decision)?;
                if let Some(previous) = &decision.previous_version_id {
                    // Compare-and-set: the previous version must still be the active one.
                    let changed = tx
                        .execute("UPDATE decisions SET is_active = 0 WHERE id = ?1 AND is_active = 1", params![previous])
                        .map_err(backend("storing a decision"))?;
                    if changed != 1 {
                        return Err(StoreError::Conflict(format!("`{previous}` is no longer the active version")));
                    }
                }
                let (kind, domain) = Scope::of(&decision.scope).columns();
                tx.execute(
                    "INSERT INTO decisions (id, root_id, version, text, strength, scope_kind, scope_domain, is_active, previous_version_id, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9)",
                    params![
                        decision.id,
                        decision.root_id,
                        i64::try_from(decision.version.get()).unwrap_or(i64::MAX),
                        decision.text,
                        decision.strength,
                        kind,
                        domain,
                        decision.previous_version_id,
                        crate::store::now()
                    ],
                )
                .map_err(backend("storing a decision"))?;
                record_write(&tx, &key, &decision.id)?;
                tx.commit().map_err(backend("storing a decision"))?;
                Ok(decision.id)
            })
            .await?;
        id.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }

    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (evidence, key) = (evidence.clone(), key.to_string());
        let id = self
            .with(true, move |conn| {
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(backend("storing evidence"))?;
                if let Some(id) = written(&tx, &key)? {
                    return Ok(id);
                }
                let stored: Option<(String, String)> = tx
                    .query_row("SELECT summary, source FROM evidence WHERE id = ?1", params![evidence.id], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })
                    .optional()
                    .map_err(backend("storing evidence"))?;
                match stored {
                    Some((summary, source)) if summary == evidence.summary && source == evidence.source => {}
                    Some(_) => {
                        return Err(StoreError::Conflict(format!(
                            "evidence `{}` is stored with other content",
                            evidence.id
                        )));
                    }
                    None => {
                        tx.execute(
                            "INSERT INTO evidence (id, summary, source) VALUES (?1, ?2, ?3)",
                            params![evidence.id, evidence.summary, evidence.source],
                        )
                        .map_err(backend("storing evidence"))?;
                    }
                }
                record_write(&tx, &key, &evidence.id)?;
                tx.commit().map_err(backend("storing evidence"))?;
                Ok(evidence.id)
            })
            .await?;
        id.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }

    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        let (anchor, key) = (anchor.clone(), key.to_string());
        let status = self
            .with(true, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend("linking"))?;
                if let Some(status) = written(&tx, &key)? {
                    return Ok(status);
                }
                let exists = |table: &str, id: &str| -> Result<bool, StoreError> {
                    tx.query_row(&format!("SELECT 1 FROM {table} WHERE id = ?1"), params![id], |_| Ok(()))
                        .optional()
                        .map(|row| row.is_some())
                        .map_err(backend("linking"))
                };
                if !exists("decisions", &anchor.decision_id)? {
                    return Err(StoreError::NotFound(format!("decision `{}` to link", anchor.decision_id)));
                }
                if !exists("evidence", &anchor.evidence_id)? {
                    return Err(StoreError::NotFound(format!("evidence `{}` to link", anchor.evidence_id)));
                }
                tx.execute(
                    "INSERT OR IGNORE INTO decision_evidence (decision_id, evidence_id) VALUES (?1, ?2)",
                    params![anchor.decision_id, anchor.evidence_id],
                )
                .map_err(backend("linking"))?;
                record_write(&tx, &key, "linked")?;
                tx.commit().map_err(backend("linking"))?;
                Ok("linked".to_owned())
            })
            .await?;
        status.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }
}
