//! Decisions, evidence and their links in the SQLite store (docs/CONTRACT.md, "Storage behind
//! ports"): the hierarchical load (global, axis, then the current domain; active versions) and
//! the versioned, idempotent writes.

use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::{SqliteStore, backend};
use crate::contract::schema::{Anchor, Decision, Evidence};
use crate::contract::value::PositiveInt;
use crate::hash::IdempotencyKey;
use crate::store::write::{self, Answer, Change, End, Read, RowByRow};
use crate::store::{Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, Scope, StoreError};

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
    /// The decisions in scope, the query interrupted at the call's deadline.
    async fn load(
        &self,
        call: &Call<'_>,
        _input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        let domain = current_domain.map(str::to_owned);
        let context = self
            .read_within(call.deadline(), move |conn| {
                let in_scope = "is_active = 1 AND (scope_kind IN ('global', 'axis') OR (scope_kind = 'domain' AND scope_domain = ?1))";
                let sql = format!(
                    "SELECT {DECISION_COLUMNS} FROM decisions WHERE {in_scope}
                     ORDER BY CASE scope_kind WHEN 'global' THEN 0 WHEN 'axis' THEN 1 ELSE 2 END, rowid"
                );
                let decisions =
                    conn.prepare_cached(&sql)?.query_map(params![domain], decision_row)?.collect::<Result<Vec<_>, _>>()?;
                let sql = "SELECT de.decision_id, de.evidence_id FROM decision_evidence de JOIN decisions d ON d.id = de.decision_id
                     WHERE d.is_active = 1 AND (d.scope_kind IN ('global', 'axis') OR (d.scope_kind = 'domain' AND d.scope_domain = ?1))
                     ORDER BY de.rowid";
                let anchors = conn
                    .prepare_cached(sql)?
                    .query_map(params![domain], |r| Ok(Anchor { decision_id: r.get(0)?, evidence_id: r.get(1)? }))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(DecisionContext { decisions, anchors })
            })
            .await?;
        Ok(context.unwrap_or_default())
    }
}

impl DecisionWritePort for SqliteStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        let (decision, key) = (decision.clone(), *call.key()?);
        self.keyed("storing a decision", move |rows| {
            crate::io::block_on(write::persist_decision(rows, &decision, &key))
        })
        .await
    }

    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        let (evidence, key) = (evidence.clone(), *call.key()?);
        self.keyed("storing evidence", move |rows| crate::io::block_on(write::persist_evidence(rows, &evidence, &key)))
            .await
    }

    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        let (anchor, key) = (anchor.clone(), *call.key()?);
        self.keyed("linking", move |rows| crate::io::block_on(write::link(rows, &anchor, &key))).await
    }
}

impl SqliteStore {
    /// One keyed write in one immediate transaction, committed when it returns `Ok`.
    async fn keyed(
        &self,
        doing: &'static str,
        write: impl FnOnce(&mut Rows<'_, '_>) -> Result<String, StoreError> + Send + 'static,
    ) -> Result<String, StoreError> {
        let done = self
            .with(true, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend(doing))?;
                let out = write(&mut Rows { tx: &tx, doing })?;
                tx.commit().map_err(backend(doing))?;
                Ok(out)
            })
            .await?;
        done.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }
}

/// The decision rows of one transaction, read and written in place on the blocking thread that
/// holds it.
struct Rows<'t, 'c> {
    tx: &'t rusqlite::Transaction<'c>,
    doing: &'static str,
}

impl RowByRow for Rows<'_, '_> {
    fn written(&mut self, key: &IdempotencyKey) -> Result<Option<String>, StoreError> {
        written(self.tx, &key.to_string())
    }

    fn record_write(&mut self, key: &IdempotencyKey, result: &str) -> Result<(), StoreError> {
        record_write(self.tx, &key.to_string(), result)
    }

    fn read_one(&mut self, read: Read<'_>) -> Result<Answer, StoreError> {
        let failed = backend(self.doing);
        match read {
            Read::Decision(id) => {
                let sql = format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE id = ?1");
                self.tx.query_row(&sql, params![id], decision_row).optional().map(Answer::Decision).map_err(failed)
            }
            Read::ActiveVersions(root_id) => {
                // The transaction is immediate: no other writer runs until it ends.
                let sql = format!("SELECT {DECISION_COLUMNS} FROM decisions WHERE root_id = ?1 AND is_active = 1");
                let mut stmt = self.tx.prepare_cached(&sql).map_err(backend(self.doing))?;
                stmt.query_map(params![root_id], decision_row)
                    .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                    .map(Answer::ActiveVersions)
                    .map_err(failed)
            }
            Read::Evidence(id) => self
                .tx
                .query_row("SELECT summary, source FROM evidence WHERE id = ?1", params![id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map(Answer::Evidence)
                .map_err(failed),
            Read::Exists(end, id) => {
                let table = match end {
                    End::Decision => "decisions",
                    End::Evidence => "evidence",
                };
                self.tx
                    .query_row(&format!("SELECT 1 FROM {table} WHERE id = ?1"), params![id], |_| Ok(()))
                    .optional()
                    .map(|row| Answer::Exists(row.is_some()))
                    .map_err(failed)
            }
        }
    }

    fn change(&mut self, change: Change<'_>) -> Result<bool, StoreError> {
        let changed = match change {
            Change::Deactivate(id) => {
                self.tx.execute("UPDATE decisions SET is_active = 0 WHERE id = ?1 AND is_active = 1", params![id])
            }
            Change::InsertDecision(decision) => {
                let (kind, domain) = Scope::of(&decision.scope).columns();
                self.tx.execute(
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
            }
            Change::InsertEvidence(evidence) => self.tx.execute(
                "INSERT OR IGNORE INTO evidence (id, summary, source) VALUES (?1, ?2, ?3)",
                params![evidence.id, evidence.summary, evidence.source],
            ),
            Change::InsertLink(anchor) => self.tx.execute(
                "INSERT OR IGNORE INTO decision_evidence (decision_id, evidence_id) VALUES (?1, ?2)",
                params![anchor.decision_id, anchor.evidence_id],
            ),
        };
        changed.map(|n| n == 1).map_err(backend(self.doing))
    }
}
