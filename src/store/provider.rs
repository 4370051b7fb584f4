//! Providers chosen at run time (D-021 §2, §5; CONTRACT §12): a [`ResolvedStore`] holds the
//! memory provider and the strategy provider a bundle named, behind object-safe forms of the
//! ports, so that the runtime and the handlers use them without knowing which they are, and a
//! caller's own provider runs exactly as a built-in one does.
//!
//! The ports return `impl Future` (no allocation per call for a concrete store); the dynamic
//! forms here box each call's future once, which is what choosing an implementation by id costs.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use super::{
    Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, MemoryRepositoryPort, NewMemory, Storage,
    StoreError,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::embed::Embedder;
use crate::exec::SessionAt;

/// A boxed future of a provider's call.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a provider's factory gets to open its store: the session it serves (a root, or a
/// database session: see [`root`](Self::root) and `database_session` (feature `postgres`)),
/// the bundle's folder for the provider's own configuration files (none for the default bundle),
/// and the embedder the resolver was given, for providers that rank by meaning.
#[derive(Clone, Copy)]
pub struct ProviderContext<'a> {
    /// Where the session lives.
    pub(crate) place: SessionAt<'a>,
    /// The bundle directory that holds `manifest.json`.
    pub bundle_dir: Option<&'a Path>,
    /// The embedder ([`StrategyResolver::embedder`](super::bundle::StrategyResolver::embedder)).
    pub embedder: Option<&'a Arc<dyn Embedder>>,
    /// Opened only to read (`backend::read_stores`): a provider creates nothing and refuses to
    /// write (the built-in SQLite ones open the database read-only).
    pub read_only: bool,
}

impl<'a> ProviderContext<'a> {
    /// The session root a provider keeps its files under (`ops/store/…`); `None` for a session
    /// of a shared database (a provider of files refuses it, naming one that works there).
    ///
    /// ```
    /// use planlock::store::bundle::{BundleManifest, StrategyResolver};
    /// use planlock::store::memory::InMemoryStore;
    /// let resolver = StrategyResolver::default().strategy("beside-the-files", |cx| match cx.root() {
    ///     Some(_root) => Ok(InMemoryStore::new()), // a store under `_root`, in a real provider
    ///     None => Err("it keeps its decisions under a session root".into()),
    /// });
    /// let root = tempfile::tempdir()?;
    /// let manifest = BundleManifest::pinned("b", "beside-the-files", "in-memory");
    /// assert!(resolver.resolve(&manifest, root.path()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn root(&self) -> Option<&'a Path> {
        self.place.root()
    }
}

impl std::fmt::Debug for ProviderContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderContext")
            .field("place", &self.place)
            .field("bundle_dir", &self.bundle_dir)
            .field("embedder", &self.embedder.map(|e| e.model()))
            .field("read_only", &self.read_only)
            .finish()
    }
}

/// The object-safe form of [`MemoryRepositoryPort`]; every implementation of the port is one.
pub trait DynMemoryProvider: Send + Sync + 'static {
    /// [`MemoryRepositoryPort::search`].
    fn search<'a>(
        &'a self,
        call: &'a Call<'_>,
        query: &'a str,
        top_k: u64,
    ) -> BoxFuture<'a, Result<Vec<MemoryItem>, StoreError>>;
    /// [`MemoryRepositoryPort::put`].
    fn put<'a>(&'a self, call: &'a Call<'_>, memory: NewMemory<'a>) -> BoxFuture<'a, Result<String, StoreError>>;
}

impl<T: MemoryRepositoryPort> DynMemoryProvider for T {
    fn search<'a>(
        &'a self,
        call: &'a Call<'_>,
        query: &'a str,
        top_k: u64,
    ) -> BoxFuture<'a, Result<Vec<MemoryItem>, StoreError>> {
        Box::pin(MemoryRepositoryPort::search(self, call, query, top_k))
    }
    fn put<'a>(&'a self, call: &'a Call<'_>, memory: NewMemory<'a>) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(MemoryRepositoryPort::put(self, call, memory))
    }
}

/// The object-safe form of a strategy provider: [`DecisionContextProviderPort`] and the
/// decision writes it reads back ([`DecisionWritePort`]); every implementation of both is one.
pub trait DynStrategyProvider: Send + Sync + 'static {
    /// [`DecisionContextProviderPort::load`].
    fn load<'a>(
        &'a self,
        call: &'a Call<'_>,
        input: &'a str,
        current_domain: Option<&'a str>,
    ) -> BoxFuture<'a, Result<DecisionContext, StoreError>>;
    /// [`DecisionWritePort::persist_decision`].
    fn persist_decision<'a>(
        &'a self,
        call: &'a Call<'_>,
        decision: &'a Decision,
    ) -> BoxFuture<'a, Result<String, StoreError>>;
    /// [`DecisionWritePort::persist_evidence`].
    fn persist_evidence<'a>(
        &'a self,
        call: &'a Call<'_>,
        evidence: &'a Evidence,
    ) -> BoxFuture<'a, Result<String, StoreError>>;
    /// [`DecisionWritePort::link`].
    fn link<'a>(&'a self, call: &'a Call<'_>, anchor: &'a Anchor) -> BoxFuture<'a, Result<String, StoreError>>;
}

impl<T: DecisionContextProviderPort + DecisionWritePort> DynStrategyProvider for T {
    fn load<'a>(
        &'a self,
        call: &'a Call<'_>,
        input: &'a str,
        current_domain: Option<&'a str>,
    ) -> BoxFuture<'a, Result<DecisionContext, StoreError>> {
        Box::pin(DecisionContextProviderPort::load(self, call, input, current_domain))
    }
    fn persist_decision<'a>(
        &'a self,
        call: &'a Call<'_>,
        decision: &'a Decision,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::persist_decision(self, call, decision))
    }
    fn persist_evidence<'a>(
        &'a self,
        call: &'a Call<'_>,
        evidence: &'a Evidence,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::persist_evidence(self, call, evidence))
    }
    fn link<'a>(&'a self, call: &'a Call<'_>, anchor: &'a Anchor) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::link(self, call, anchor))
    }
}

/// The providers a resolver chose: memories through one, decisions through the other. It
/// implements the three ports, so the storage handlers take it like any store
/// (`StoreHandlers::new(resolved)`), and never see which providers they are.
///
/// ```
/// use planlock::store::provider::ResolvedStore;
/// use planlock::store::memory::InMemoryStore;
/// use planlock::store::{Call, MemoryRepositoryPort, StoreHandlers};
/// // One store that implements every port serves as both providers.
/// let resolved = ResolvedStore::single(InMemoryStore::new());
/// assert!(planlock::block_on(resolved.search(&Call::new(), "keys", 5))?.is_empty());
/// let _handlers = StoreHandlers::new(resolved);
/// # Ok::<(), planlock::store::StoreError>(())
/// ```
#[derive(Clone)]
pub struct ResolvedStore {
    memory: Arc<dyn DynMemoryProvider>,
    strategy: Arc<dyn DynStrategyProvider>,
}

impl std::fmt::Debug for ResolvedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedStore").finish_non_exhaustive()
    }
}

impl ResolvedStore {
    /// Memories through `memory`, decisions through `strategy`.
    pub fn new(memory: Arc<dyn DynMemoryProvider>, strategy: Arc<dyn DynStrategyProvider>) -> ResolvedStore {
        ResolvedStore { memory, strategy }
    }

    /// One store for both roles.
    pub fn single<S>(store: S) -> ResolvedStore
    where
        S: Storage,
    {
        let store = Arc::new(store);
        ResolvedStore { memory: store.clone(), strategy: store }
    }
}

impl MemoryRepositoryPort for ResolvedStore {
    async fn search(&self, call: &Call<'_>, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        self.memory.search(call, query, top_k).await
    }
    async fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> Result<String, StoreError> {
        self.memory.put(call, memory).await
    }
}

impl DecisionContextProviderPort for ResolvedStore {
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        self.strategy.load(call, input, current_domain).await
    }
}

impl DecisionWritePort for ResolvedStore {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        self.strategy.persist_decision(call, decision).await
    }
    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        self.strategy.persist_evidence(call, evidence).await
    }
    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        self.strategy.link(call, anchor).await
    }
}
