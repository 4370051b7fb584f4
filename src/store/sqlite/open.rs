//! Opening the database (docs/CONTRACT.md, "Storage behind ports"; CONTRACT §11): only
//! planlock's own file, never through a link, identified before anything is written to it, and
//! read-only without creating anything for a read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{APPLICATION_ID, SCHEMA, SCHEMA_VERSION, TABLES};
use crate::store::StoreError;

/// Where the database is, and how it may be opened.
pub(super) struct Place {
    pub(super) file: PathBuf,
    pub(super) folders: Vec<PathBuf>,
    pub(super) read_only: bool,
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
    pub(super) fn check(&self, create: bool) -> Result<bool, StoreError> {
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
pub(super) fn connect(place: &Place, busy_timeout: Duration) -> Result<Option<Connection>, StoreError> {
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

/// Reads the identity in one read transaction: read statement by statement, a reader could see
/// the header before another process's schema transaction commits and its tables after, and
/// refuse a new planlock database as foreign.
fn identify_now(conn: &mut Connection) -> rusqlite::Result<Identity> {
    let snapshot = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let identity = identify(&snapshot)?;
    snapshot.commit()?;
    Ok(identity)
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
    match identify_now(&mut conn)? {
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
