//! [`SqliteStore`]: the embedded default, one SQLite database per session root at
//! `ops/store/planlock.sqlite3` (docs/CONTRACT.md, "Storage behind ports"). The file is created
//! by the first write, never at boot; a read before it finds nothing. WAL, `synchronous=FULL`,
//! foreign keys on, every write in one immediate transaction. Memories are searched with FTS5 and
//! BM25, every word of the input quoted, so no text reaches the query syntax.
//!
//! SQLite calls block, so each runs on a thread where blocking is allowed (the `blocking`
//! crate's pool) and is awaited: an async executor is never stalled, and a step's deadline still
//! fires while the call runs (the call itself then finishes on its thread; a write retried under
//! the same idempotency key writes nothing twice).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use super::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Scope,
    StoreError, query_words,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::contract::value::PositiveInt;
use crate::hash::IdempotencyKey;

/// The database file, relative to the session root.
pub const DATABASE_FILE: &str = "ops/store/planlock.sqlite3";

/// How long a write waits for another process's lock before it fails.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this library writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE memories (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    idem_key TEXT NOT NULL UNIQUE,
    session_ref TEXT NOT NULL,
    summary TEXT NOT NULL,
    keywords TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE memories_fts USING fts5(summary, keywords, content = 'memories', content_rowid = 'rowid');
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, summary, keywords) VALUES (new.rowid, new.summary, new.keywords);
END;
CREATE TABLE decisions (
    id TEXT PRIMARY KEY,
    root_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    strength TEXT NOT NULL,
    scope_kind TEXT NOT NULL CHECK (scope_kind IN ('global', 'axis', 'domain')),
    scope_domain TEXT,
    is_active INTEGER NOT NULL,
    previous_version_id TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX decisions_one_active_per_root ON decisions (root_id) WHERE is_active = 1;
CREATE TABLE evidence (id TEXT PRIMARY KEY, summary TEXT NOT NULL, source TEXT NOT NULL);
CREATE TABLE decision_evidence (
    decision_id TEXT NOT NULL REFERENCES decisions (id),
    evidence_id TEXT NOT NULL REFERENCES evidence (id),
    PRIMARY KEY (decision_id, evidence_id)
);
CREATE TABLE writes (idem_key TEXT PRIMARY KEY, result TEXT NOT NULL);
";

/// The embedded SQLite store of one session root. Clones share one connection.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    path: PathBuf,
    busy_timeout: Duration,
    max_bytes: Option<u64>,
    conn: Arc<Mutex<Option<Connection>>>,
}

impl SqliteStore {
    /// The store of the session root `root`: `root/ops/store/planlock.sqlite3`. Opens nothing and
    /// creates nothing until it is used.
    pub fn open(root: impl AsRef<Path>) -> SqliteStore {
        SqliteStore::at(root.as_ref().join(DATABASE_FILE))
    }

    /// The store in the database file `path`.
    pub fn at(path: impl Into<PathBuf>) -> SqliteStore {
        SqliteStore { path: path.into(), busy_timeout: BUSY_TIMEOUT, max_bytes: None, conn: Arc::new(Mutex::new(None)) }
    }

    /// Caps the database at about `bytes` (`PRAGMA max_page_count`): a write that would grow it
    /// further fails as on a full disk, and writes nothing.
    pub fn max_size(mut self, bytes: u64) -> SqliteStore {
        self.max_bytes = Some(bytes);
        self
    }

    /// How long a write waits for another process's lock before it fails (default
    /// [`BUSY_TIMEOUT`]).
    pub fn busy_timeout(mut self, timeout: Duration) -> SqliteStore {
        self.busy_timeout = timeout;
        self
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection, on a thread where blocking is allowed. `None` when the
    /// database does not exist and `create` is false (a read before the first write).
    async fn with<T: Send + 'static>(
        &self,
        create: bool,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        let (path, conn, busy, max_bytes) = (self.path.clone(), self.conn.clone(), self.busy_timeout, self.max_bytes);
        blocking::unblock(move || {
            let mut guard = conn.lock().map_err(|_| StoreError::Backend("the database lock is poisoned".into()))?;
            if guard.is_none() {
                if !create && !path.exists() {
                    return Ok(None);
                }
                let conn = connect(&path, create, busy)?;
                if let Some(bytes) = max_bytes {
                    let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).map_err(backend("sizing"))?;
                    let pages = i64::try_from(bytes).unwrap_or(i64::MAX) / page.max(1);
                    conn.query_row(&format!("PRAGMA max_page_count = {}", pages.max(1)), [], |_| Ok(()))
                        .map_err(backend("sizing"))?;
                }
                *guard = Some(conn);
            }
            match guard.as_mut() {
                Some(conn) => f(conn).map(Some),
                None => Ok(None),
            }
        })
        .await
    }
}

/// Opens (and, for `create`, creates) the database, sets it up and checks its schema. Two
/// processes opening a new database at once can find it locked while the other one switches it to
/// WAL or creates the schema (SQLite does not wait on a busy handler for those): that is retried
/// until the busy timeout has passed.
fn connect(path: &Path, create: bool, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let fail = |e: &dyn std::fmt::Display| StoreError::Backend(format!("database {}: {e}", path.display()));
    if create && let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    let started = std::time::Instant::now();
    loop {
        match try_connect(path, create, busy_timeout) {
            Ok(Some(conn)) => return Ok(conn),
            Ok(None) => {
                return Err(fail(&format!(
                    "its schema version is not one this library knows ({SCHEMA_VERSION}); refusing to use it"
                )));
            }
            Err(e) if is_busy(&e) && started.elapsed() < busy_timeout => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(fail(&e)),
        }
    }
}

/// Whether SQLite said another connection holds the lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// One attempt of [`connect`]; `None` for a database of a schema version this library does not
/// know.
fn try_connect(path: &Path, create: bool, busy_timeout: Duration) -> rusqlite::Result<Option<Connection>> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    match version {
        SCHEMA_VERSION => {}
        0 => {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Another process may have created it meanwhile.
            let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version == 0 {
                tx.execute_batch(SCHEMA)?;
                tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            } else if version != SCHEMA_VERSION {
                return Ok(None);
            }
            tx.commit()?;
        }
        _ => return Ok(None),
    }
    Ok(Some(conn))
}

/// A SQLite failure, naming the operation; a broken uniqueness rule is a conflict.
fn backend(doing: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            StoreError::Conflict(format!("{doing}: {e}"))
        }
        _ => StoreError::Backend(format!("{doing}: {e}")),
    }
}

/// The FTS5 query for `text`: every word quoted, any of them (the words hold only letters and
/// digits, so no quote or operator of the input survives).
fn match_expression(text: &str) -> Option<String> {
    let words = query_words(text);
    (!words.is_empty()).then(|| words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR "))
}

impl MemoryRepositoryPort for SqliteStore {
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let expression = match_expression(query);
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let found = self
            .with(false, move |conn| {
                let item = |r: &rusqlite::Row<'_>| Ok(MemoryItem { id: r.get(0)?, summary: r.get(1)?, timestamp: r.get(2)? });
                let rows = match &expression {
                    // Ranked by BM25, ties by rowid (recency) inside FTS5; joined for the columns.
                    Some(expression) => {
                        let sql = "SELECT m.id, m.summary, m.created_at FROM
                            (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank, rowid DESC LIMIT ?2) f
                            JOIN memories m ON m.rowid = f.rowid";
                        let mut stmt = conn.prepare_cached(sql).map_err(backend("searching memories"))?;
                        stmt.query_map(params![expression, limit], item)
                            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                            .map_err(backend("searching memories"))?
                    }
                    None => {
                        let sql = "SELECT id, summary, created_at FROM memories ORDER BY rowid DESC LIMIT ?1";
                        let mut stmt = conn.prepare_cached(sql).map_err(backend("listing memories"))?;
                        stmt.query_map(params![limit], item)
                            .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                            .map_err(backend("listing memories"))?
                    }
                };
                Ok(rows)
            })
            .await?;
        Ok(found.unwrap_or_default())
    }

    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        let key = memory.key.to_string();
        let (session_ref, summary) = (memory.session_ref.to_owned(), memory.summary.to_owned());
        let keywords = memory.keywords.join(" ");
        let id = self
            .with(true, move |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend("storing a memory"))?;
                // A memory's key is its own unique column: a put again under it finds it there.
                let stored: Option<String> = tx
                    .query_row("SELECT id FROM memories WHERE idem_key = ?1", params![key], |r| r.get(0))
                    .optional()
                    .map_err(backend("storing a memory"))?;
                if let Some(id) = stored {
                    return Ok(id);
                }
                let id = format!("mem-{}", &key[..16]);
                tx.execute(
                    "INSERT INTO memories (id, idem_key, session_ref, summary, keywords, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![id, key, session_ref, summary, keywords, super::now()],
                )
                .map_err(backend("storing a memory"))?;
                tx.commit().map_err(backend("storing a memory"))?;
                Ok(id)
            })
            .await?;
        id.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }
}

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
                    if super::same_decision(&stored, &decision) {
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
                super::check_version(active.as_slice(), &decision)?;
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
                        super::now()
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
