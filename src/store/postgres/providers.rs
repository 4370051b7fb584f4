//! The providers a shared PostgreSQL database gives every [`StrategyResolver`] by default: the
//! memory provider `postgres`, `postgres-semantic` and `postgres-pgvector` (each a memory
//! provider and a strategy), the built-in strategy's store in a database session, and how such a
//! session resolves its bundle ([`StrategyResolver::resolve_for_session`]).

use std::sync::Arc;

use super::{PGVECTOR_PROVIDER, PgStore, SEMANTIC_PROVIDER};
use crate::exec::SessionAt;
use crate::pg::PgSession;
use crate::store::bundle::{
    BundleError, BundleManifest, DEFAULT_STRATEGY, Factory, FactoryError, POSTGRES_MEMORY, StrategyResolver,
};
use crate::store::provider::{DynStrategyProvider, ProviderContext, ResolvedStore};

/// `resolver` with the PostgreSQL providers; the built-in strategy opens the session's
/// namespace of the database in a database session, and what it opened before elsewhere.
pub(crate) fn register(resolver: StrategyResolver) -> StrategyResolver {
    fn store(cx: &ProviderContext<'_>) -> Result<PgStore, FactoryError> {
        match cx.database_session() {
            Some(session) => Ok(PgStore::new(session.database(), session.key())),
            None => Err(BundleError::NeedsDatabase.into()),
        }
    }
    fn by_meaning(cx: &ProviderContext<'_>) -> Result<PgStore, FactoryError> {
        let embedder = cx.embedder.cloned().ok_or(
            "it ranks by meaning and needs an embedder: give one with StrategyResolver::embedder \
             (CLI: --embed-url and --embed-model, else the demo embedder)",
        )?;
        Ok(store(cx)?.by_meaning(embedder))
    }
    fn pgvector(cx: &ProviderContext<'_>) -> Result<PgStore, FactoryError> {
        by_meaning(cx).map(|store| store.pgvector(super::pgvector::DEFAULT_EF_SEARCH))
    }
    // The built-in strategy: in a database session, its namespace; elsewhere as before.
    let mut resolver = resolver;
    let before = resolver.strategies.get(DEFAULT_STRATEGY).cloned();
    let builtin: Factory<Arc<dyn DynStrategyProvider>> = Arc::new(move |cx| match (cx.database_session(), &before) {
        (Some(_), _) => Ok(Arc::new(store(cx)?)),
        (None, Some(before)) => before(cx),
        (None, None) => Err(BundleError::NeedsDatabase.into()),
    });
    resolver.strategies.insert(DEFAULT_STRATEGY.to_owned(), builtin);
    resolver
        .memory(POSTGRES_MEMORY, store)
        .memory(SEMANTIC_PROVIDER, by_meaning)
        .strategy(SEMANTIC_PROVIDER, by_meaning)
        .uses_embedder(SEMANTIC_PROVIDER)
        .memory(PGVECTOR_PROVIDER, pgvector)
        .strategy(PGVECTOR_PROVIDER, pgvector)
        .uses_embedder(PGVECTOR_PROVIDER)
}

impl StrategyResolver {
    /// `manifest`'s providers for `session` of a shared database: they work in its namespace
    /// (its key) and in its cycles (their writes durable with its session save).
    pub fn resolve_for_session(
        &self,
        manifest: &BundleManifest,
        session: &PgSession,
    ) -> Result<ResolvedStore, BundleError> {
        self.open(manifest, &self.context(manifest, SessionAt::Database(session), false))
    }
}

impl<'a> ProviderContext<'a> {
    /// The session of a shared PostgreSQL database the provider works in (its namespace is the
    /// session's key, and a [`PgStore`] of it joins the session's cycles); `None` under a
    /// session root.
    pub fn database_session(&self) -> Option<&'a PgSession> {
        match self.place {
            SessionAt::Database(session) => Some(session),
            SessionAt::Root(_) => None,
        }
    }
}
