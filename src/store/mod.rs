//! Storage behind ports (D-021; docs/CONTRACT.md, "Storage behind ports"): the memories and the
//! versioned decisions that the Retrieve and Persist steps read and write, behind two ports the
//! handlers use ([`MemoryRepositoryPort`], [`DecisionContextProviderPort`] with its writes,
//! [`DecisionWritePort`]). The executor never knows which implementation was chosen.
//!
//! Implementations: [`memory::InMemoryStore`] (for tests and examples) and, with the default
//! `sqlite` feature, `sqlite::SqliteStore`, the embedded default; with the `postgres` feature,
//! `postgres::PgStore`, shared by many workers. [`StoreHandlers`] are the six
//! step handlers over any implementation; `conformance` (feature `testing`) is the suite every
//! implementation must pass.
//!
//! Layer 5, beside the session store (CONTRIBUTING.md, "The layers"; `tests/it/layers.rs`
//! holds them).

pub mod bundle;
mod call;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod conformance;
mod error;
mod handlers;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod meaning;
pub mod memory;
mod ports;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod provider;
mod query;
mod scope;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod write;

pub use call::Call;
pub use error::StoreError;
pub use handlers::StoreHandlers;
pub(crate) use handlers::step_failure;
pub(crate) use ports::now;
pub use ports::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Storage,
};
pub use query::{MAX_QUERY_WORD_BYTES, MAX_QUERY_WORDS, query_words};
pub(crate) use scope::Scope;

/// What each built-in backend beside the session roots adds to every
/// [`StrategyResolver::default`](bundle::StrategyResolver) (its memory providers and strategies):
/// listed here, where the backends' modules are declared, so that the resolver names none.
const BACKEND_PROVIDERS: &[fn(bundle::StrategyResolver) -> bundle::StrategyResolver] = &[
    #[cfg(feature = "postgres")]
    postgres::providers::register,
];
