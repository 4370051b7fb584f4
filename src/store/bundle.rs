//! Bundles and strategy resolution (D-021; docs/CONTRACT.md, "Storage behind ports"): a bundle's
//! `manifest.json` names a strategy provider and a memory provider; [`StrategyResolver`] maps the
//! ids to implementations of the ports; a session pins the ids (`BundlePinV1`, saved by the
//! runtime with its first completed cycle) and never silently switches.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::memory::InMemoryStore;
use super::provider::{DynMemoryProvider, DynStrategyProvider, ProviderContext, ResolvedStore};
#[cfg(feature = "sqlite")]
use super::sqlite::SqliteStore;
use crate::contract::registry::StepType;
use crate::embed::Embedder;
use crate::exec::SessionAt;
use crate::fsread::{self, ReadError};

/// The manifest file in a bundle directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// The strategy a manifest that names none gets: the hierarchical SQL strategy.
pub const DEFAULT_STRATEGY: &str = "hierarchical-sql";

/// The memory provider a manifest that names none gets: the embedded SQLite store.
pub const DEFAULT_MEMORY: &str = "sqlite";

/// The memory provider of a shared PostgreSQL database (feature `postgres`), resolved with
/// `StrategyResolver::resolve_for_session`.
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
    /// The folder the manifest was loaded from, given to the providers' factories.
    #[serde(skip)]
    dir: Option<PathBuf>,
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
    /// The providers `postgres`, `postgres-semantic` and `postgres-pgvector` live in a shared
    /// database, not under a session root.
    #[error(
        "the memory providers `postgres`, `postgres-semantic` and `postgres-pgvector` need a database: give one (`--database`, or `StrategyResolver::resolve_for_session`)"
    )]
    NeedsDatabase,
    /// An id nobody registered with the resolver.
    #[error(
        "the {role} provider `{id}` is not registered (registered: {known}); register it with StrategyResolver::{role}"
    )]
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
    /// A registered provider's factory could not open its store.
    #[error("the {role} provider `{id}` could not be opened: {source}")]
    Factory {
        /// `strategy` or `memory`.
        role: &'static str,
        /// The id.
        id: String,
        /// What the factory said.
        source: FactoryError,
    },
}

impl crate::contract::registry::Failure for BundleError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            BundleError::Manifest { .. } => "bundle-manifest",
            BundleError::UnknownProvider { .. } => "unknown-provider",
            BundleError::NeedsDatabase => "bundle-needs-database",
            BundleError::Store(e) => e.code(),
            // A factory that refused for a reason of ours says so through its source.
            BundleError::Factory { source, .. } => match source.downcast_ref::<BundleError>() {
                Some(inner) => inner.code(),
                None => "provider-factory",
            },
        }
    }

    /// FailFast: a session cannot run on a bundle that does not open.
    fn kind(&self) -> crate::contract::registry::FailureKind {
        crate::contract::registry::FailureKind::FailFast
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
        let manifest: BundleManifest = serde_json::from_slice(&bytes)
            .map_err(|e| problem(crate::text::printable(&format!("not a valid manifest: {e}")).into_owned()))?;
        Ok(BundleManifest { dir: Some(dir.to_owned()), ..manifest })
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
            dir: None,
        }
    }

    /// The manifest of the bundle a session's pin names: `bundle_id` with these providers
    /// (version `pinned`, no folder), as a read of the session resolves them.
    pub fn pinned(bundle_id: &str, strategy_provider_id: &str, memory_provider_id: &str) -> BundleManifest {
        BundleManifest {
            bundle_id: bundle_id.to_owned(),
            version: "pinned".into(),
            strategy_provider_id: Some(strategy_provider_id.to_owned()),
            memory_provider_id: Some(memory_provider_id.to_owned()),
            dir: None,
        }
    }

    /// The folder the manifest was loaded from (none for a built-in default).
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
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

/// Builds a provider from what it needs to open its store.
pub(crate) type Factory<P> = Arc<dyn Fn(&ProviderContext<'_>) -> Result<P, FactoryError> + Send + Sync>;

/// Why a provider's factory could not open its store.
pub type FactoryError = Box<dyn std::error::Error + Send + Sync>;

/// Maps provider ids to the factories that open them (D-021 §5: "the implementation matching the
/// id"). The built-in providers are registered by default — the strategy `hierarchical-sql`, the
/// memory providers `sqlite` (feature `sqlite`), `postgres` (feature `postgres`) and `in-memory`
/// — and a caller registers its own without changing planlock; the runtime never names one.
///
/// ```
/// use planlock::store::bundle::{BundleManifest, StrategyResolver};
/// use planlock::store::memory::InMemoryStore;
///
/// // A team's own strategy, registered by id; a bundle's manifest names it.
/// let resolver = StrategyResolver::default().strategy("team-decisions", |_cx| Ok(InMemoryStore::new()));
/// assert!(resolver.strategy_ids().any(|id| id == "team-decisions"));
/// let manifest: BundleManifest = serde_json::from_str(
///     r#"{"bundle_id": "team", "version": "1", "strategy_provider_id": "team-decisions", "memory_provider_id": "in-memory"}"#,
/// )?;
/// let root = tempfile::tempdir()?;
/// let _store = resolver.resolve(&manifest, root.path())?;
/// // An id nobody registered is refused, naming the ones that are.
/// let err = StrategyResolver::default().check("team-decisions", "sqlite").unwrap_err();
/// assert!(err.to_string().contains("`team-decisions`") && err.to_string().contains("hierarchical-sql"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct StrategyResolver {
    pub(crate) strategies: BTreeMap<String, Factory<Arc<dyn DynStrategyProvider>>>,
    memories: BTreeMap<String, Factory<Arc<dyn DynMemoryProvider>>>,
    /// The ids of the providers that rank with the embedder (and so pin it).
    embedding: BTreeSet<String>,
    embedder: Option<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for StrategyResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyResolver")
            .field("strategies", &self.strategies.keys().collect::<Vec<_>>())
            .field("memories", &self.memories.keys().collect::<Vec<_>>())
            .field("embedder", &self.embedder.as_ref().map(|e| e.model()))
            .finish()
    }
}

impl Default for StrategyResolver {
    /// The built-in providers.
    fn default() -> Self {
        let mut resolver = StrategyResolver::empty().memory("in-memory", |_| Ok(InMemoryStore::new()));
        resolver.strategies.insert(DEFAULT_STRATEGY.to_owned(), Arc::new(builtin_store));
        #[cfg(feature = "sqlite")]
        let resolver = semantic_providers(resolver);
        #[cfg(feature = "sqlite")]
        let resolver = resolver.memory("sqlite", |cx| match cx.root() {
            Some(root) => Ok(sqlite_at(root, cx.read_only)?),
            None => {
                Err("it keeps its file under a session root; with a database, use the memory provider `postgres`"
                    .into())
            }
        });
        super::BACKEND_PROVIDERS.iter().fold(resolver, |resolver, register| register(resolver))
    }
}

/// `sqlite-semantic` and `semantic-sql`: under a session root, and only with an embedder.
#[cfg(feature = "sqlite")]
fn semantic_providers(resolver: StrategyResolver) -> StrategyResolver {
    use super::sqlite::semantic::{MEMORY_PROVIDER, STRATEGY, SemanticDecisions, SemanticMemory};
    fn parts(cx: &ProviderContext<'_>) -> Result<(SqliteStore, Arc<dyn Embedder>), FactoryError> {
        let embedder = cx.embedder.cloned().ok_or(
            "it ranks by meaning and needs an embedder: give one with StrategyResolver::embedder \
             (CLI: --embed-url and --embed-model, else the demo embedder)",
        )?;
        match cx.root() {
            Some(root) => Ok((sqlite_at(root, cx.read_only)?, embedder)),
            None => Err("it is SQLite-only: with a shared PostgreSQL database, \
                 use `postgres-semantic` (as the memory provider and the strategy)"
                .into()),
        }
    }
    resolver
        .memory(MEMORY_PROVIDER, |cx| parts(cx).map(|(store, e)| SemanticMemory::new(store, e)))
        .strategy(STRATEGY, |cx| parts(cx).map(|(store, e)| SemanticDecisions::new(store, e)))
        .uses_embedder(MEMORY_PROVIDER)
        .uses_embedder(STRATEGY)
}

/// The store of the built-in strategy: the session root's SQLite database (an in-memory store
/// without the `sqlite` feature); in a database session, the session's namespace of the shared
/// database (`store::postgres`'s providers wrap this one).
#[cfg_attr(not(feature = "sqlite"), expect(unused_variables, reason = "in memory"))]
fn builtin_store(cx: &ProviderContext<'_>) -> Result<Arc<dyn DynStrategyProvider>, FactoryError> {
    #[cfg(feature = "sqlite")]
    if let Some(root) = cx.root() {
        return Ok(Arc::new(sqlite_at(root, cx.read_only)?));
    }
    Ok(Arc::new(InMemoryStore::new()))
}

/// The session root's SQLite store: to read, opened read-only (nothing created); to run, checked
/// before use (no link, planlock's own file).
#[cfg(feature = "sqlite")]
fn sqlite_at(root: &Path, read_only: bool) -> Result<SqliteStore, BundleError> {
    if read_only {
        return Ok(SqliteStore::open(root).read_only());
    }
    let store = SqliteStore::open(root);
    store.verify().map_err(BundleError::Store)?;
    Ok(store)
}

impl StrategyResolver {
    /// A resolver with no provider registered.
    pub fn empty() -> StrategyResolver {
        StrategyResolver {
            strategies: BTreeMap::new(),
            memories: BTreeMap::new(),
            embedding: BTreeSet::new(),
            embedder: None,
        }
    }

    /// The embedder the providers that rank by meaning get (through
    /// [`ProviderContext::embedder`]); a session using one of them is pinned to its model and
    /// dimension.
    pub fn embedder(mut self, embedder: Arc<dyn Embedder>) -> StrategyResolver {
        self.embedder = Some(embedder);
        self
    }

    /// Marks the provider `id` as one that ranks with the embedder, so that a session using it
    /// is pinned to the embedder's model and dimension.
    pub fn uses_embedder(mut self, id: impl Into<String>) -> StrategyResolver {
        self.embedding.insert(id.into());
        self
    }

    /// Whether one of `manifest`'s providers ranks with the embedder (so the session is pinned
    /// to it, and it is worth making).
    ///
    /// ```
    /// use planlock::store::bundle::{BundleManifest, StrategyResolver};
    /// assert!(!StrategyResolver::default().ranks_by_meaning(&BundleManifest::default_bundle()));
    /// ```
    pub fn ranks_by_meaning(&self, manifest: &BundleManifest) -> bool {
        [manifest.strategy_id(), manifest.memory_id()].iter().any(|id| self.embedding.contains(*id))
    }

    /// The step types whose handlers ask `manifest`'s embedder: the memory steps when its memory
    /// provider ranks by meaning, the decision steps when its strategy does, in canonical order.
    /// A failure to make the embedder before the first cycle has the class of the first of these
    /// in the plan, as it would have met it there.
    ///
    /// ```
    /// use planlock::StepType;
    /// use planlock::store::bundle::{BundleManifest, StrategyResolver};
    /// let semantic: BundleManifest = serde_json::from_str(
    ///     r#"{"bundle_id": "b", "version": "1", "memory_provider_id": "sqlite-semantic"}"#)?;
    /// let steps = StrategyResolver::default().embedding_steps(&semantic);
    /// assert_eq!(steps, [StepType::RetrieveMemory, StepType::PersistMemory]);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn embedding_steps(&self, manifest: &BundleManifest) -> Vec<StepType> {
        let memory = self.embedding.contains(manifest.memory_id());
        let strategy = self.embedding.contains(manifest.strategy_id());
        StepType::ALL
            .iter()
            .copied()
            .filter(|t| match t {
                StepType::RetrieveMemory | StepType::PersistMemory => memory,
                StepType::RetrieveDecisionContext | StepType::PersistDecision => strategy,
                _ => false,
            })
            .collect()
    }

    /// The embedder `manifest`'s providers rank with, as pinned: `(model, dimension)`; none when
    /// neither uses one.
    pub fn embedder_of(&self, manifest: &BundleManifest) -> Option<(&str, usize)> {
        match &self.embedder {
            Some(e) if self.ranks_by_meaning(manifest) => Some((e.model(), e.dimension())),
            _ => None,
        }
    }

    /// Registers the strategy provider `id` (replacing one of that id): `factory` opens its
    /// store, which answers `RetrieveDecisionContext` and keeps the decisions, evidence and links
    /// the Persist steps write.
    pub fn strategy<P, F>(mut self, id: impl Into<String>, factory: F) -> StrategyResolver
    where
        P: DynStrategyProvider + Sized,
        F: Fn(&ProviderContext<'_>) -> Result<P, FactoryError> + Send + Sync + 'static,
    {
        let factory: Factory<Arc<dyn DynStrategyProvider>> = Arc::new(move |cx| {
            let provider: Arc<dyn DynStrategyProvider> = Arc::new(factory(cx)?);
            Ok(provider)
        });
        self.strategies.insert(id.into(), factory);
        self
    }

    /// Registers the memory provider `id` (replacing one of that id): `factory` opens its store,
    /// which answers `RetrieveMemory` and keeps what `PersistMemory` writes.
    pub fn memory<P, F>(mut self, id: impl Into<String>, factory: F) -> StrategyResolver
    where
        P: DynMemoryProvider + Sized,
        F: Fn(&ProviderContext<'_>) -> Result<P, FactoryError> + Send + Sync + 'static,
    {
        let factory: Factory<Arc<dyn DynMemoryProvider>> = Arc::new(move |cx| {
            let provider: Arc<dyn DynMemoryProvider> = Arc::new(factory(cx)?);
            Ok(provider)
        });
        self.memories.insert(id.into(), factory);
        self
    }

    /// The registered strategy ids, in order.
    pub fn strategy_ids(&self) -> impl Iterator<Item = &str> {
        self.strategies.keys().map(String::as_str)
    }

    /// The registered memory provider ids, in order.
    pub fn memory_ids(&self) -> impl Iterator<Item = &str> {
        self.memories.keys().map(String::as_str)
    }

    /// Refuses an id nobody registered, naming it and the registered ones (FailFast).
    pub fn check(&self, strategy: &str, memory: &str) -> Result<(), BundleError> {
        let unknown = |role, id: &str, known: Vec<&str>| BundleError::UnknownProvider {
            role,
            id: crate::text::printable(id).into_owned(),
            known: known.join(", "),
        };
        if !self.strategies.contains_key(strategy) {
            return Err(unknown("strategy", strategy, self.strategy_ids().collect()));
        }
        if !self.memories.contains_key(memory) {
            return Err(unknown("memory", memory, self.memory_ids().collect()));
        }
        Ok(())
    }

    /// Opens `manifest`'s providers in `cx`: each factory's failure is FailFast, with its error
    /// as the source.
    pub fn open(&self, manifest: &BundleManifest, cx: &ProviderContext<'_>) -> Result<ResolvedStore, BundleError> {
        let (strategy, memory) = (manifest.strategy_id(), manifest.memory_id());
        self.check(strategy, memory)?;
        let failed = |role, id: &str| {
            let id = crate::text::printable(id).into_owned();
            move |source| BundleError::Factory { role, id, source }
        };
        let memory = self.memories[memory](cx).map_err(failed("memory", memory))?;
        let strategy = self.strategies[strategy](cx).map_err(failed("strategy", strategy))?;
        Ok(ResolvedStore::new(memory, strategy))
    }

    /// `manifest`'s providers for the session root `root` (the bundle's folder as the manifest
    /// was loaded from).
    pub fn resolve(&self, manifest: &BundleManifest, root: &Path) -> Result<ResolvedStore, BundleError> {
        self.open(manifest, &self.context(manifest, SessionAt::Root(root), false))
    }

    /// `manifest`'s providers at `place`, opened only to read (see
    /// [`ProviderContext::read_only`]): what a command that reads a session uses
    /// (`backend::read_stores`, the one way in).
    pub(crate) fn resolve_to_read(
        &self,
        manifest: &BundleManifest,
        place: SessionAt<'_>,
    ) -> Result<ResolvedStore, BundleError> {
        self.open(manifest, &self.context(manifest, place, true))
    }

    /// What the factories of `manifest`'s providers get at `place`.
    pub(crate) fn context<'a>(
        &'a self,
        manifest: &'a BundleManifest,
        place: SessionAt<'a>,
        read_only: bool,
    ) -> ProviderContext<'a> {
        ProviderContext { place, bundle_dir: manifest.dir(), embedder: self.embedder.as_ref(), read_only }
    }
}
