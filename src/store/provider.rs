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
use std::time::Instant;

use super::{
    DecisionContext, DecisionContextProviderPort, DecisionWritePort, Found, MemoryRepositoryPort, NewMemory, Storage,
    StoreError,
};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};
use crate::embed::Embedder;
use crate::hash::IdempotencyKey;

/// A boxed future of a provider's call.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a provider opens its store, as the session's place says.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum ProviderPlace<'a> {
    /// Files under a session root (`ops/store/…`).
    Root(&'a Path),
    /// A session of a shared PostgreSQL database: its namespace (the session key) and its
    /// cycle, which a store opened with [`PgStore::of_session`](crate::store::postgres::PgStore::of_session)
    /// joins, so the store's writes are durable with the session save.
    #[cfg(feature = "postgres")]
    Session(&'a crate::pg::PgSession),
}

/// What a provider's factory gets to open its store: the session's place, the bundle's folder
/// for the provider's own configuration files (none for the default bundle), and the embedder
/// the resolver was given, for providers that rank by meaning.
#[derive(Clone, Copy)]
pub struct ProviderContext<'a> {
    /// Where the session lives.
    pub place: ProviderPlace<'a>,
    /// The bundle directory that holds `manifest.json`.
    pub bundle_dir: Option<&'a Path>,
    /// The embedder ([`StrategyResolver::embedder`](super::bundle::StrategyResolver::embedder)).
    pub embedder: Option<&'a Arc<dyn Embedder>>,
    /// Opened only to read ([`StrategyResolver::resolve_to_read`](super::bundle::StrategyResolver::resolve_to_read)):
    /// a provider creates nothing and refuses to write (the built-in SQLite ones open the
    /// database read-only).
    pub read_only: bool,
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
    /// [`MemoryRepositoryPort::search_reporting`].
    fn search_reporting<'a>(
        &'a self,
        query: &'a str,
        top_k: u64,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<Found<Vec<MemoryItem>>, StoreError>>;
    /// [`MemoryRepositoryPort::put_within`].
    fn put_within<'a>(
        &'a self,
        memory: NewMemory<'a>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<String, StoreError>>;
}

impl<T: MemoryRepositoryPort> DynMemoryProvider for T {
    fn search_reporting<'a>(
        &'a self,
        query: &'a str,
        top_k: u64,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<Found<Vec<MemoryItem>>, StoreError>> {
        Box::pin(MemoryRepositoryPort::search_reporting(self, query, top_k, deadline))
    }
    fn put_within<'a>(
        &'a self,
        memory: NewMemory<'a>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(MemoryRepositoryPort::put_within(self, memory, deadline))
    }
}

/// The object-safe form of a strategy provider: [`DecisionContextProviderPort`] and the
/// decision writes it reads back ([`DecisionWritePort`]); every implementation of both is one.
pub trait DynStrategyProvider: Send + Sync + 'static {
    /// [`DecisionContextProviderPort::load_reporting`].
    fn load_reporting<'a>(
        &'a self,
        input: &'a str,
        current_domain: Option<&'a str>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<Found<DecisionContext>, StoreError>>;
    /// [`DecisionWritePort::persist_decision_within`].
    fn persist_decision_within<'a>(
        &'a self,
        decision: &'a Decision,
        key: &'a IdempotencyKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<String, StoreError>>;
    /// [`DecisionWritePort::persist_evidence`].
    fn persist_evidence<'a>(
        &'a self,
        evidence: &'a Evidence,
        key: &'a IdempotencyKey,
    ) -> BoxFuture<'a, Result<String, StoreError>>;
    /// [`DecisionWritePort::link`].
    fn link<'a>(&'a self, anchor: &'a Anchor, key: &'a IdempotencyKey) -> BoxFuture<'a, Result<String, StoreError>>;
}

impl<T: DecisionContextProviderPort + DecisionWritePort> DynStrategyProvider for T {
    fn load_reporting<'a>(
        &'a self,
        input: &'a str,
        current_domain: Option<&'a str>,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<Found<DecisionContext>, StoreError>> {
        Box::pin(DecisionContextProviderPort::load_reporting(self, input, current_domain, deadline))
    }
    fn persist_decision_within<'a>(
        &'a self,
        decision: &'a Decision,
        key: &'a IdempotencyKey,
        deadline: Option<Instant>,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::persist_decision_within(self, decision, key, deadline))
    }
    fn persist_evidence<'a>(
        &'a self,
        evidence: &'a Evidence,
        key: &'a IdempotencyKey,
    ) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::persist_evidence(self, evidence, key))
    }
    fn link<'a>(&'a self, anchor: &'a Anchor, key: &'a IdempotencyKey) -> BoxFuture<'a, Result<String, StoreError>> {
        Box::pin(DecisionWritePort::link(self, anchor, key))
    }
}

/// The providers a resolver chose: memories through one, decisions through the other. It
/// implements the three ports, so the storage handlers take it like any store
/// (`StoreHandlers::new(resolved)`), and never see which providers they are.
///
/// ```
/// use planlock::store::provider::ResolvedStore;
/// use planlock::store::memory::InMemoryStore;
/// use planlock::store::{MemoryRepositoryPort, StoreHandlers};
/// // One store that implements every port serves as both providers.
/// let resolved = ResolvedStore::single(InMemoryStore::new());
/// assert!(planlock::block_on(resolved.search("keys", 5))?.is_empty());
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
    async fn search(&self, query: &str, top_k: u64) -> Result<Vec<MemoryItem>, StoreError> {
        self.search_within(query, top_k, None).await
    }
    async fn search_within(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<Instant>,
    ) -> Result<Vec<MemoryItem>, StoreError> {
        Ok(self.memory.search_reporting(query, top_k, deadline).await?.value)
    }
    async fn search_reporting(
        &self,
        query: &str,
        top_k: u64,
        deadline: Option<Instant>,
    ) -> Result<Found<Vec<MemoryItem>>, StoreError> {
        self.memory.search_reporting(query, top_k, deadline).await
    }
    async fn put(&self, memory: NewMemory<'_>) -> Result<String, StoreError> {
        self.memory.put_within(memory, None).await
    }
    async fn put_within(&self, memory: NewMemory<'_>, deadline: Option<Instant>) -> Result<String, StoreError> {
        self.memory.put_within(memory, deadline).await
    }
}

impl DecisionContextProviderPort for ResolvedStore {
    async fn load(&self, input: &str, current_domain: Option<&str>) -> Result<DecisionContext, StoreError> {
        Ok(self.strategy.load_reporting(input, current_domain, None).await?.value)
    }
    async fn load_reporting(
        &self,
        input: &str,
        current_domain: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Found<DecisionContext>, StoreError> {
        self.strategy.load_reporting(input, current_domain, deadline).await
    }
}

impl DecisionWritePort for ResolvedStore {
    async fn persist_decision(&self, decision: &Decision, key: &IdempotencyKey) -> Result<String, StoreError> {
        self.strategy.persist_decision_within(decision, key, None).await
    }
    async fn persist_decision_within(
        &self,
        decision: &Decision,
        key: &IdempotencyKey,
        deadline: Option<Instant>,
    ) -> Result<String, StoreError> {
        self.strategy.persist_decision_within(decision, key, deadline).await
    }
    async fn persist_evidence(&self, evidence: &Evidence, key: &IdempotencyKey) -> Result<String, StoreError> {
        self.strategy.persist_evidence(evidence, key).await
    }
    async fn link(&self, anchor: &Anchor, key: &IdempotencyKey) -> Result<String, StoreError> {
        self.strategy.link(anchor, key).await
    }
}
