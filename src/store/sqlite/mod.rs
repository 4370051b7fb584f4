//! [`SqliteStore`]: the embedded default, one SQLite database per session root at
//! `ops/store/planlock.sqlite3` (docs/CONTRACT.md, "Storage behind ports"). The file is created
//! by the first write, never at boot; a read before it finds nothing. WAL, `synchronous=FULL`,
//! foreign keys on, every write in one immediate transaction. Memories are searched with FTS5 and
//! BM25, every word of the input quoted, so no text reaches the query syntax.
//!
//! The store opens only its own file (CONTRACT §11): the database and the folders between the
//! root and it are never followed through a symbolic link, and a file that is not planlock's
//! database (another program's, by its tables or `application_id`) is refused before anything is
//! written to it ([`StoreError::Refused`]). A [read-only](SqliteStore::read_only) store, as the
//! CLI's `memory search` and `decisions` use, opens the file read-only: no WAL switch, no
//! schema, no file created.
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

pub mod semantic;

/// The database file, relative to the session root.
pub const DATABASE_FILE: &str = "ops/store/planlock.sqlite3";

/// How long a write waits for another process's lock before it fails.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema version this library writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

/// planlock's `PRAGMA application_id` ("PLCK"), set when the schema is created. A database made
/// before it was set has 0 and is recognized by its tables.
const APPLICATION_ID: i64 = 0x504c_434b;

/// The tables a planlock database has.
const TABLES: [&str; 5] = ["memories", "decisions", "evidence", "decision_evidence", "writes"];

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
    /// use planlock::store::MemoryRepositoryPort;
    /// let root = tempfile::tempdir()?;
    /// let store = SqliteStore::open(root.path()).read_only();
    /// assert!(pollster::block_on(store.search("keys", 5))?.is_empty());
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
    async fn with<T: Send + 'static>(
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
        blocking::unblock(move || {
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
    }
}

/// Where the database is, and how it may be opened.
struct Place {
    file: PathBuf,
    folders: Vec<PathBuf>,
    read_only: bool,
}

impl Place {
    fn refused(&self, path: &Path, why: &str) -> StoreError {
        let file = self.file.display();
        StoreError::Refused(if path == self.file {
            format!("database {file} {why}; nothing was changed")
        } else {
            format!("database {file}: its folder {} {why}; nothing was changed", path.display())
        })
    }

    /// Checks the folders and the file are not links, creating missing folders when `create`;
    /// false when there is nothing to read (no file, or an empty one, before the first write).
    fn check(&self, create: bool) -> Result<bool, StoreError> {
        let fail = |e: &dyn std::fmt::Display| StoreError::Backend(format!("database {}: {e}", self.file.display()));
        // The session root itself is the caller's choice; what lies below it is the store's.
        if create && let Some(root) = self.folders.first().and_then(|f| f.parent()) {
            std::fs::create_dir_all(root).map_err(|e| fail(&e))?;
        }
        for folder in &self.folders {
            match std::fs::symlink_metadata(folder) {
                Ok(m) if m.file_type().is_symlink() => return Err(self.refused(folder, "is a symbolic link")),
                Ok(m) if m.is_dir() => {}
                Ok(_) => return Err(self.refused(folder, "is not a directory")),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(folder).map_err(|e| fail(&e))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(fail(&e)),
            }
        }
        match std::fs::symlink_metadata(&self.file) {
            Ok(m) if m.file_type().is_symlink() => Err(self.refused(&self.file, "is a symbolic link")),
            Ok(m) if !m.is_file() => Err(self.refused(&self.file, "is not a regular file")),
            Ok(m) => Ok(create || m.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(create),
            Err(e) => Err(fail(&e)),
        }
    }
}

/// Opens (and, when writable, creates) the database, sets it up and checks its schema. Two
/// processes opening a new database at once can find it locked while the other one switches it to
/// WAL or creates the schema (SQLite does not wait on a busy handler for those): that is retried
/// until the busy timeout has passed.
/// `None` for a read-only store whose file holds no schema yet (a first write cut short).
fn connect(place: &Place, busy_timeout: Duration) -> Result<Option<Connection>, StoreError> {
    let fail = |e: &dyn std::fmt::Display| StoreError::Backend(format!("database {}: {e}", place.file.display()));
    let started = std::time::Instant::now();
    loop {
        match try_connect(place, busy_timeout) {
            Ok(Opened::Connection(conn)) => return Ok(Some(conn)),
            Ok(Opened::Nothing) => return Ok(None),
            Ok(Opened::Refused(why)) => return Err(place.refused(&place.file, &why)),
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

/// What a database file is, read before anything is written to it.
enum Identity {
    /// planlock's, of this schema version.
    Planlock,
    /// No schema at all: a new (or empty) file, planlock's to set up.
    Empty,
    /// Something else; why.
    Foreign(String),
}

fn identify(conn: &Connection) -> rusqlite::Result<Identity> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(match (version, app) {
        (0, 0) if tables.is_empty() => Identity::Empty,
        (SCHEMA_VERSION, APPLICATION_ID | 0) if TABLES.iter().all(|t| tables.iter().any(|n| n == t)) => {
            Identity::Planlock
        }
        (v, APPLICATION_ID | 0) if v > SCHEMA_VERSION => Identity::Foreign(format!(
            "refused: its schema version is not one this library knows (found {v}, this library knows \
             {SCHEMA_VERSION}); use a newer planlock"
        )),
        _ => Identity::Foreign(format!(
            "is not planlock's database (application_id {app}, user_version {version}, {} tables); \
             give planlock its own file",
            tables.len()
        )),
    })
}

/// Opens `file` to read without creating anything next to it. A reader of a WAL database
/// creates its `-wal` and `-shm` files when they are missing (the last writer removed them when
/// it closed): then nothing is being written, and the file is opened `immutable` instead. When
/// they exist, a writer may be at work, and the file is opened read-only as usual.
fn open_for_reading(file: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW | OpenFlags::SQLITE_OPEN_READ_ONLY;
    let mut wal = file.as_os_str().to_owned();
    wal.push("-wal");
    match file.to_str() {
        Some(path) if !Path::new(&wal).exists() => Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_escaped(path)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        ),
        _ => Connection::open_with_flags(file, flags),
    }
}

/// `path` as the path of a `file:` URI: `%`, `?`, `#` and bytes outside printable ASCII escaped.
fn uri_escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        match b {
            b'%' | b'?' | b'#' => out.push_str(&format!("%{b:02X}")),
            0x21..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What one attempt of [`connect`] found.
enum Opened {
    Connection(Connection),
    /// Read-only, and no schema yet.
    Nothing,
    /// A file the store refuses, and why.
    Refused(String),
}

fn try_connect(place: &Place, busy_timeout: Duration) -> rusqlite::Result<Opened> {
    // The file was checked not to be a link; NOFOLLOW closes the window between check and open.
    let mut conn = if place.read_only {
        open_for_reading(&place.file)?
    } else {
        let flags = OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW
            | OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE;
        Connection::open_with_flags(&place.file, flags)?
    };
    conn.busy_timeout(busy_timeout)?;
    // Who the file belongs to is read before anything is written to it.
    match identify(&conn)? {
        Identity::Foreign(why) => return Ok(Opened::Refused(why)),
        Identity::Empty if place.read_only => return Ok(Opened::Nothing),
        Identity::Planlock if place.read_only => {
            conn.execute_batch("PRAGMA query_only = ON;")?;
            return Ok(Opened::Connection(conn));
        }
        Identity::Planlock | Identity::Empty => {}
    }
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have created it meanwhile.
    match identify(&tx)? {
        Identity::Planlock => {}
        Identity::Empty => {
            tx.execute_batch(SCHEMA)?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        Identity::Foreign(why) => return Ok(Opened::Refused(why)),
    }
    tx.commit()?;
    Ok(Opened::Connection(conn))
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
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        self.search_within(query, top_k, None).await
    }

    async fn search_within(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        let expression = match_expression(query);
        let limit = i64::try_from(top_k).unwrap_or(i64::MAX);
        let found = self.read_within(deadline, move |conn| search_rows(conn, expression.as_deref(), limit)).await?;
        Ok(found.unwrap_or_default())
    }

    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        self.put_with(memory, |_, _| Ok(())).await
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
                conn.progress_handler(PROGRESS_STEPS, Some(late)).map_err(backend("searching memories"))?;
            }
            let rows = f(conn);
            if deadline.is_some() {
                conn.progress_handler(0, None::<fn() -> bool>).map_err(backend("searching memories"))?;
            }
            match rows {
                Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) => {
                    Err(StoreError::Backend("the search was stopped at the step's deadline".into()))
                }
                rows => rows.map_err(backend("searching memories")),
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

    /// Stores a memory as [`MemoryRepositoryPort::put`] does, and runs `also` in the same
    /// transaction with the new memory's rowid (not when the key was already stored): what a
    /// provider keeps beside a memory is written with it or not at all.
    pub(crate) async fn put_with(
        &self,
        memory: NewMemory<'_>,
        also: impl FnOnce(&rusqlite::Transaction<'_>, i64) -> Result<(), StoreError> + Send + 'static,
    ) -> Result<String, StoreError> {
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
                also(&tx, tx.last_insert_rowid())?;
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
