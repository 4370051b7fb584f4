//! Where sessions live (CONTRACT §12, §14, §15): one [`Backend`] — files under a directory, or a
//! PostgreSQL database — made from one place with [`connect`](fn@connect) (`./sessions` or
//! `postgres://…`), as object_store makes a store from a URL. Whatever a program does with sessions
//! goes through it: open one to run its cycles (its store, with the lock or lease), read one's
//! records without disturbing a worker, read its memories and decisions through the providers its
//! pin names, list the paused ones and every one at a glance. The CLI parses its flags into one,
//! the console holds one, an embedding program calls the same [`connect`](fn@connect).
//!
//! The difference between the places lives in the two backend files only ([`FilesBackend`],
//! `PgBackend` with the feature `postgres`); what is the same everywhere (the pin and embedder
//! check of a read) is written once, in `read_stores.rs`.
//!
//! Layer 6 (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs` holds them).

mod access;
mod budgets;
mod connect;
mod error;
mod files;
mod listing;
mod outbox;
#[cfg(feature = "postgres")]
mod postgres;
mod read_stores;
mod traits;
mod watch;

pub use access::AccessBook;
pub use budgets::BudgetBook;
pub use connect::{connect, is_database_url};
pub use error::{BackendError, DatabaseError};
pub use files::FilesBackend;
pub use outbox::{DeliveryClaim, DeliveryOutcome, Logged, Outbox};
#[cfg(feature = "postgres")]
#[cfg_attr(docsrs, doc(cfg(feature = "postgres")))]
pub use postgres::PgBackend;
pub use read_stores::read_stores;
pub use traits::{Backend, BackendFuture, Glance, Glances, Listed, OpenedSession, PausedSession};
pub use watch::{MAX_WOKEN, Wake, Watch, Woken};

/// How this build makes the backend of a database URL ([`connect`](fn@connect) calls it):
/// PostgreSQL's with the feature `postgres`, none without. Said here, where the backends' modules
/// are declared, so that `connect` names no backend.
#[cfg(feature = "postgres")]
const DATABASE: Option<connect::Connector> = Some(postgres::PgBackend::connect_url);
#[cfg(not(feature = "postgres"))]
const DATABASE: Option<connect::Connector> = None;
