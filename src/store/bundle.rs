//! Bundles and strategy resolution (D-021; docs/CONTRACT.md, "Storage behind ports"): a bundle's
//! `manifest.json` names a strategy provider and a memory provider; [`StrategyResolver`] maps the
//! ids to implementations of the ports; a session pins the ids (`BundlePinV1`, saved by the
//! runtime with its first completed cycle) and never silently switches.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::memory::InMemoryStore;
#[cfg(feature = "sqlite")]
use super::sqlite::SqliteStore;
use super::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, StoreError,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::fsread::{self, ReadError};
use crate::hash::IdempotencyKey;

/// The manifest file in a bundle directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The strategy a manifest that names none gets: the hierarchical SQL strategy.
pub const DEFAULT_STRATEGY: &str = "hierarchical-sql";

/// The memory provider a manifest that names none gets: the embedded SQLite store.
pub const DEFAULT_MEMORY: &str = "sqlite";

/// The memory provider of a shared PostgreSQL database (feature `postgres`), resolved with
/// `StrategyResolver::resolve_in_database`.
pub const POSTGRES_MEMORY: &str = "postgres";

/// A bundle's manifest: `{ "bundle_id", "version", "strategy_provider_id"?, "memory_provider_id"? }`,
/// strict (unknown fields refused).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, remote = "Self")]
pub struct BundleManifest {
    /// The bundle's id.
    pub bundle_id: String,
    /// The bundle's version.
    pub version: String,
    /// The strategy provider; [`DEFAULT_STRATEGY`] when absent.
    #[serde(default, deserialize_with = "crate::contract::object::present")]
    pub strategy_provider_id: Option<String>,
    /// The memory provider; [`DEFAULT_MEMORY`] when absent.
    #[serde(default, deserialize_with = "crate::contract::object::present")]
    pub memory_provider_id: Option<String>,
}

crate::contract::object::map_only_serde!(@deserialize BundleManifest);

/// A bundle that cannot be used. Always FailFast: the session's providers would be unknown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BundleError {
    /// The manifest cannot be read, or is not a manifest.
    #[error("bundle manifest {}: {problem}", file.display())]
    Manifest {
        /// The manifest file.
        file: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The memory provider `postgres` lives in a shared database, not under a session root.
    #[error(
        "the memory provider `postgres` needs a database: give one (`--database`, or `StrategyResolver::resolve_in_database`)"
    )]
    NeedsDatabase,
    /// An id the resolver has no implementation for.
    #[error("the {role} provider `{id}` has no implementation here (known: {known})")]
    UnknownProvider {
        /// `strategy` or `memory`.
        role: &'static str,
        /// The id.
        id: String,
        /// The ids that are known.
        known: String,
    },
    /// The store the bundle names cannot be used: a link at its path, another program's
    /// database. Nothing was changed.
    #[error("the memory store cannot be used: {0}")]
    Store(#[source] super::StoreError),
}

impl BundleError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            BundleError::Manifest { .. } => "bundle-manifest",
            BundleError::UnknownProvider { .. } => "unknown-provider",
            BundleError::NeedsDatabase => "bundle-needs-database",
            BundleError::Store(e) => e.code(),
        }
    }
}

impl BundleManifest {
    /// The manifest of the bundle directory `dir` (at most 64 KiB, a regular file).
    pub fn load(dir: &Path) -> Result<BundleManifest, BundleError> {
        let file = dir.join(MANIFEST_FILE);
        let problem = |problem: String| BundleError::Manifest { file: file.clone(), problem };
        let bytes = fsread::read_regular(&file, 64 * 1024).map_err(|e| {
            problem(match e {
                ReadError::NotFound => "not found".into(),
                ReadError::NotRegular(what) => what.into(),
                ReadError::TooLarge => "larger than 64 KiB".into(),
                ReadError::Io(op, e) => format!("{op} failed: {e}"),
            })
        })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| problem(crate::json::printable(&format!("not a valid manifest: {e}")).into_owned()))
    }

    /// The bundle used with a shared database when none is given: `default`, version `1`, the
    /// default strategy and the `postgres` memory provider.
    pub fn default_shared_bundle() -> BundleManifest {
        BundleManifest { memory_provider_id: Some(POSTGRES_MEMORY.to_owned()), ..BundleManifest::default_bundle() }
    }

    /// The bundle used when none is given: `default`, version `1`, the default providers.
    pub fn default_bundle() -> BundleManifest {
        BundleManifest {
            bundle_id: "default".into(),
            version: "1".into(),
            strategy_provider_id: None,
            memory_provider_id: None,
        }
    }

    /// The strategy provider's id, the default filled in.
    pub fn strategy_id(&self) -> &str {
        self.strategy_provider_id.as_deref().unwrap_or(DEFAULT_STRATEGY)
    }

    /// The memory provider's id, the default filled in.
    pub fn memory_id(&self) -> &str {
        self.memory_provider_id.as_deref().unwrap_or(DEFAULT_MEMORY)
    }
}

/// Maps provider ids to implementations of the ports: the strategy `hierarchical-sql`, and the
/// memory providers `sqlite` (with the `sqlite` feature) and `in-memory`.
#[derive(Debug, Clone, Copy, Default)]
pub struct StrategyResolver;

impl StrategyResolver {
    /// The strategy ids it knows.
    pub const STRATEGIES: &'static [&'static str] = &[DEFAULT_STRATEGY];

    /// The memory provider ids it knows: `sqlite` and `postgres` with their features, and
    /// `in-memory`.
    pub const MEMORY: &'static [&'static str] = &[
        #[cfg(feature = "sqlite")]
        "sqlite",
        #[cfg(feature = "postgres")]
        POSTGRES_MEMORY,
        "in-memory",
    ];

    /// Refuses an id it has no implementation for.
    pub fn check(&self, strategy: &str, memory: &str) -> Result<(), BundleError> {
        let unknown = |role, id: &str, known: &[&str]| BundleError::UnknownProvider {
            role,
            id: crate::json::printable(id).into_owned(),
            known: known.join(", "),
        };
        if !Self::STRATEGIES.contains(&strategy) {
            return Err(unknown("strategy", strategy, Self::STRATEGIES));
        }
        if !Self::MEMORY.contains(&memory) {
            return Err(unknown("memory", memory, Self::MEMORY));
        }
        Ok(())
    }

    /// The implementation of `manifest`'s providers for the session root `root`.
    pub fn resolve(&self, manifest: &BundleManifest, root: &Path) -> Result<ResolvedStore, BundleError> {
        self.check(manifest.strategy_id(), manifest.memory_id())?;
        #[cfg(not(feature = "sqlite"))]
        let _ = root;
        match manifest.memory_id() {
            #[cfg(feature = "sqlite")]
            "sqlite" => {
                let store = SqliteStore::open(root);
                store.verify().map_err(BundleError::Store)?;
                Ok(ResolvedStore::Sqlite(store))
            }
            #[cfg(feature = "postgres")]
            POSTGRES_MEMORY => Err(BundleError::NeedsDatabase),
            _ => Ok(ResolvedStore::InMemory(InMemoryStore::new())),
        }
    }

    /// The implementation of `manifest`'s providers in a shared database, for the memories of
    /// `namespace` (a session key): its memory provider must be `postgres`.
    #[cfg(feature = "postgres")]
    pub fn resolve_in_database(
        &self,
        manifest: &BundleManifest,
        db: &crate::pg::PgDatabase,
        namespace: &str,
    ) -> Result<ResolvedStore, BundleError> {
        self.check(manifest.strategy_id(), manifest.memory_id())?;
        match manifest.memory_id() {
            POSTGRES_MEMORY => Ok(ResolvedStore::Postgres(super::postgres::PgStore::new(db, namespace))),
            other => Err(BundleError::UnknownProvider {
                role: "memory",
                id: crate::json::printable(other).into_owned(),
                known: POSTGRES_MEMORY.to_owned(),
            }),
        }
    }
}

/// The implementation a resolver chose; the handlers use it through the ports and never see
/// which one it is.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ResolvedStore {
    /// The embedded SQLite store of the session root.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteStore),
    /// Memory only: nothing survives the process.
    InMemory(InMemoryStore),
    /// A namespace of a shared PostgreSQL database.
    #[cfg(feature = "postgres")]
    Postgres(super::postgres::PgStore),
}

/// Calls the same method on whichever store was resolved.
macro_rules! delegate {
    ($self:ident, $store:ident => $call:expr) => {
        match $self {
            #[cfg(feature = "sqlite")]
            ResolvedStore::Sqlite($store) => $call.await,
            ResolvedStore::InMemory($store) => $call.await,
            #[cfg(feature = "postgres")]
            ResolvedStore::Postgres($store) => $call.await,
        }
    };
}

impl MemoryRepositoryPort for ResolvedStore {
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        delegate!(self, s => s.search(query, top_k))
    }
    async fn search_within(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<std::time::Instant>,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        delegate!(self, s => s.search_within(query, top_k, deadline))
    }
    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        delegate!(self, s => s.put(memory))
    }
}

impl DecisionContextProviderPort for ResolvedStore {
    async fn load(&self, input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        delegate!(self, s => s.load(input, current_domain))
    }
}

impl DecisionWritePort for ResolvedStore {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        delegate!(self, s => s.persist_decision(decision, key))
    }
    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        delegate!(self, s => s.persist_evidence(evidence, key))
    }
    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        delegate!(self, s => s.link(anchor, key))
    }
}
