//! [`PgStore`]: memories and decisions in PostgreSQL, shared by many workers (docs/CONTRACT.md,
//! "More than one machine"). The same ports and the same conformance suite as the SQLite store;
//! each store works in a namespace (by default a session key: what one session root's SQLite
//! database holds).
//!
//! Memories are searched with `tsvector` and `ts_rank` over `summary` and `keywords` (the
//! `simple` configuration: no stemming, any language), every word of the input joined with `|`
//! (the words hold only letters and digits, so no operator of the input reaches the query).
//! One active version per decision root is a partial unique index. Every keyed write is one
//! statement, a write function of the schema (`v8.sql`: it claims the key, checks, changes and
//! records it, the rules of `store::write`), and never happens twice under its key.
//!
//! A call made in a cycle of the store's session (the cycle its session store began, handed to the
//! store with the call: [`Call::cycle`](crate::store::Call::cycle)) joins that cycle: its writes
//! are kept in the cycle and travel with the session save and its COMMIT, in one round trip
//! (CONTRACT §13; see `crate::pg::writes`), or go with the record of a pause; and its memory search
//! reads ahead, in the same read-only transaction, the decision context for the cycle's decision
//! load and which of the cycle's keys are written. A call outside such a cycle writes in a
//! transaction of its own: `BEGIN`, the statement and `COMMIT`, one round trip.
//!
//! With an embedder ([`PgStore::by_meaning`]: the provider `postgres-semantic`) the store also
//! ranks by meaning, exactly, fused with the words (see `meaning`'s docs and docs/CONTRACT.md,
//! "Retrieval by meaning").
//!
//! Every call is a future on planlock's I/O runtime: a wait for a connection or the server holds
//! no thread.

mod decisions;
mod meaning;
mod memories;
pub mod pgvector;
pub(crate) mod providers;
mod store;

pub use decisions::MAX_READ_AHEAD;
pub use meaning::MAX_EXACT_VECTORS;
use store::{Begin, KeyedWrite, WRITTEN, backend};
pub use store::{PGVECTOR_PROVIDER, PgStore, SEMANTIC_PROVIDER};
