//! [`SqliteStore`]: the embedded default, one SQLite database per session root at
//! `ops/store/planlock.sqlite3` (docs/CONTRACT.md, "Storage behind ports"). The file is created
//! by the first write, never at boot; a read before it finds nothing. WAL, `synchronous=FULL`,
//! foreign keys on, every write in one immediate transaction. Memories are searched with FTS5 and
//! BM25, every word of the input quoted, so no text reaches the query syntax.
//!
//! The store opens only its own file (CONTRACT §11): the database and the folders between the root
//! and it are never followed through a symbolic link, and a file that is not planlock's database
//! (another program's, by its tables or `application_id`) is refused before anything is written to
//! it ([`StoreError::Refused`](crate::store::StoreError::Refused)). A
//! [read-only](SqliteStore::read_only) store, as the CLI's `memory search` and `decisions` use,
//! opens the file read-only: no WAL switch, no schema, no file created.
//!
//! SQLite calls block, so each runs on a thread where blocking is allowed (the `blocking`
//! crate's pool) and is awaited: an async executor is never stalled, and a step's deadline still
//! fires while the call runs (the call itself then finishes on its thread; a write retried under
//! the same idempotency key writes nothing twice).

mod decisions;
mod open;
pub mod semantic;
mod store;

use store::{APPLICATION_ID, SCHEMA, SCHEMA_VERSION, TABLES, backend};
pub use store::{BUSY_TIMEOUT, DATABASE_FILE, SqliteStore};
