//! The [`SqliteStore`] itself: its database file, its schema, how it opens and searches.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::open::{Place, connect};
use crate::contract::schema::MemoryItem;
use crate::store::{Call, MemoryRepositoryPort, NewMemory, StoreError, query_words};

/// The database file, relative to the session root.
pub const DATABASE_FILE: &str = "ops/store/planlock.sqlite3";

/// How long a write waits for another process's lock before it fails.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this library writes (`PRAGMA user_version`).
pub(super) const SCHEMA_VERSION: i64 = 1;

/// planlock's `PRAGMA application_id` ("PLCK"), set when the schema is created. A database made
/// before it was set has 0 and is recognized by its tables.
pub(super) const APPLICATION_ID: i64 = 0x504c_434b;

/// The tables a planlock database has.
pub(super) const TABLES: [&str; 5] = ["memories", "decisions", "evidence", "decision_evidence", "writes"];

pub(super) const SCHEMA: &str = "
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
    /// The folders between the session root and the file, checked not to be links.
    folders: Vec<PathBuf>,
    read_only: bool,
    busy_timeout: Duration,
    max_bytes: Option<u64>,
    conn: Arc<Mutex<Option<Connection>>>,
}

impl SqliteStore {
    /// The store of the session root `root`: `root/ops/store/planlock.sqlite3`. Opens nothing and
    /// creates nothing until it is used.
    pub fn open(root: impl AsRef<Path>) -> SqliteStore {
        let root = root.as_ref();
        let mut store = SqliteStore::at(root.join(DATABASE_FILE));
        store.folders = Path::new(DATABASE_FILE)
            .ancestors()
            .skip(1)
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| root.join(p))
            .collect();
        store.folders.reverse();
        store
    }

    /// The store in the database file `path` (the file itself is not followed through a link;
    /// its folder is the caller's choice).
    pub fn at(path: impl Into<PathBuf>) -> SqliteStore {
        SqliteStore {
            path: path.into(),
            folders: Vec::new(),
            read_only: false,
            busy_timeout: BUSY_TIMEOUT,
            max_bytes: None,
            conn: Arc::new(Mutex::new(None)),
        }
    }

    /// Opens the database read-only: reads find what is stored (nothing when there is no file,
    /// or an empty one), and every write is refused. Nothing is created or changed.
    ///
    /// ```
    /// use planlock::store::sqlite::SqliteStore;
    /// use planlock::store::{Call, MemoryRepositoryPort};
    /// let root = tempfile::tempdir()?;
    /// let store = SqliteStore::open(root.path()).read_only();
    /// assert!(planlock::block_on(store.search(&Call::new(), "keys", 5))?.is_empty());
    /// assert!(!root.path().join("ops").exists());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_only(mut self) -> SqliteStore {
        self.read_only = true;
        self
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

    /// Checks, without writing anything, that the store can use what is at its path: no link
    /// on the way, and a file (if there is one) that is planlock's database. A runtime calls it
    /// before the first cycle, so that such a file is refused up front (FailFast) instead of by
    /// the first step that touches it.
    pub fn verify(&self) -> Result<(), StoreError> {
        let place = Place { file: self.path.clone(), folders: self.folders.clone(), read_only: true };
        if !place.check(false)? {
            return Ok(());
        }
        connect(&place, self.busy_timeout).map(drop)
    }

    /// Runs `f` on the connection, on a thread where blocking is allowed. `None` when the
    /// database does not exist and `create` is false (a read before the first write).
    pub(super) async fn with<T: Send + 'static>(
        &self,
        create: bool,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        if create && self.read_only {
            let path = self.path.display();
            return Err(StoreError::Refused(format!("database {path}: this store is read-only; nothing was written")));
        }
        let (place, conn) = (
            Place { file: self.path.clone(), folders: self.folders.clone(), read_only: self.read_only },
            self.conn.clone(),
        );
        let (busy, max_bytes) = (self.busy_timeout, self.max_bytes);
        crate::io::blocking(move || {
            let mut guard = conn.lock().map_err(|_| StoreError::Backend("the database lock is poisoned".into()))?;
            if guard.is_none() {
                if !place.check(create)? {
                    return Ok(None);
                }
                let Some(conn) = connect(&place, busy)? else { return Ok(None) };
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
        .map_err(StoreError::Backend)?
    }
}

/// A SQLite failure, naming the operation; a broken uniqueness rule is a conflict.
pub(super) fn backend(doing: &'static str) -> impl Fn(rusqlite::Error) -> StoreError {
    move |e| match &e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            StoreError::Conflict(format!("{doing}: {e}"))
        }
        _ => StoreError::Backend(format!("{doing}: {e}")),
    }
}

/// The memories an FTS5 `expression` matches, ranked by BM25, ties by rowid (recency) inside
/// FTS5; the most recent without one.
fn search_rows(conn: &Connection, expression: Option<&str>, limit: i64) -> rusqlite::Result<Vec<MemoryItem>> {
    let item = |r: &rusqlite::Row<'_>| Ok(MemoryItem { id: r.get(0)?, summary: r.get(1)?, timestamp: r.get(2)? });
    match expression {
        Some(expression) => {
            let sql = "SELECT m.id, m.summary, m.created_at FROM
                (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rank, rowid DESC LIMIT ?2) f
                JOIN memories m ON m.rowid = f.rowid";
            conn.prepare_cached(sql)?.query_map(params![expression, limit], item)?.collect()
        }
        None => {
            let sql = "SELECT id, summary, created_at FROM memories ORDER BY rowid DESC LIMIT ?1";
            conn.prepare_cached(sql)?.query_map(params![limit], item)?.collect()
        }
    }
}

/// The FTS5 query for `text`: every word quoted, any of them (the words hold only letters and
/// digits, so no quote or operator of the input survives).
fn match_expression(text: &str) -> Option<String> {
    let words = query_words(text);
    (!words.is_empty()).then(|| words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(" OR "))
}

/// A search stopped at its deadline: SQLite's progress handler, called every this many virtual
/// machine instructions, reads the clock.
const PROGRESS_STEPS: std::ffi::c_int = 1000;

impl MemoryRepositoryPort for SqliteStore {
    /// The query is interrupted at the call's deadline.
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        let expression = match_expression(query);
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let search = self.read_within(call.deadline(), move |conn| search_rows(conn, expression.as_deref(), limit));
        Ok(search.await?.unwrap_or_default())
    }

    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        self.put_with(call.key()?, memory, |_, _| Ok(())).await
    }
}

impl SqliteStore {
    /// Runs the read `f` on the connection, interrupted when `deadline` passes (SQLite's progress
    /// handler reads the clock), so that no query goes on after its step failed; `None` when
    /// there is no database yet.
    pub(crate) async fn read_within<T: Send + 'static>(
        &self,
        deadline: Option<std::time::Instant>,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<Option<T>, StoreError> {
        self.with(false, move |conn| {
            if let Some(deadline) = deadline {
                let late = move || std::time::Instant::now() >= deadline;
                conn.progress_handler(PROGRESS_STEPS, Some(late)).map_err(backend("reading the store"))?;
            }
            let rows = f(conn);
            if deadline.is_some() {
                conn.progress_handler(0, None::<fn() -> bool>).map_err(backend("reading the store"))?;
            }
            match rows {
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) => {
                    Err(StoreError::Backend("the read was stopped at the step's deadline".into()))
                }
                rows => rows.map_err(backend("reading the store")),
            }
        })
        .await
    }

    /// Runs `f` in one immediate write transaction, committed when it returns `Ok`.
    pub(crate) async fn write(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<(), StoreError> {
        self.with(true, move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(backend("writing"))?;
            f(&tx)?;
            tx.commit().map_err(backend("writing"))
        })
        .await
        .map(drop)
    }

    /// The id of the memory stored under `key`, if one is (a read: `None` without a database).
    pub(crate) async fn stored_memory(&self, key: &crate::hash::IdempotencyKey) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        let sql = "SELECT id FROM memories WHERE idem_key = ?1";
        let found = self.read_within(None, move |conn| conn.query_row(sql, params![key], |r| r.get(0)).optional());
        Ok(found.await?.flatten())
    }

    /// What the write under `key` returned, if it happened (a read: `None` without a database).
    pub(crate) async fn written(&self, key: &crate::hash::IdempotencyKey) -> Result<Option<String>, StoreError> {
        let key = key.to_string();
        let sql = "SELECT result FROM writes WHERE idem_key = ?1";
        let found = self.read_within(None, move |conn| conn.query_row(sql, params![key], |r| r.get(0)).optional());
        Ok(found.await?.flatten())
    }

    /// Stores a memory as [`MemoryRepositoryPort::put`] does, and runs `also` in the same
    /// transaction with the new memory's rowid (not when the key was already stored): what a
    /// provider keeps beside a memory is written with it or not at all.
    pub(crate) async fn put_with(
        &self,
        key: &crate::hash::IdempotencyKey,
        memory: NewMemory<'_>,
        also: impl FnOnce(&rusqlite::Transaction<'_>, i64) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<String, StoreError> {
        let key = key.to_string();
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
                    params![id, key, session_ref, summary, keywords, crate::store::now()],
                )
                .map_err(backend("storing a memory"))?;
                also(&tx, tx.last_insert_rowid())?;
                tx.commit().map_err(backend("storing a memory"))?;
                Ok(id)
            })
            .await?;
        id.ok_or_else(|| StoreError::Backend("the database was not created".into()))
    }
}
