//! The ports of D-021 (docs/CONTRACT.md, "Storage behind ports"): what a memory store and a
//! decision store answer, and what the handlers hand them.

use std::future::Future;

use super::{Call, Scope, StoreError};
use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};

/// A memory to store: what `PersistMemory` carries (stored under its call's idempotency key).
#[derive(Debug, Clone, Copy)]
pub struct NewMemory<'a> {
    /// The policy's session reference, passed through.
    pub session_ref: &'a str,
    /// The summary, searched.
    pub summary: &'a str,
    /// The keywords, searched.
    pub keywords: &'a [String],
}

/// What a decision-context load returns: the active decisions in scope, ordered global, axis,
/// domain, and the links of those decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DecisionContext {
    /// The decisions.
    pub decisions: Vec<Decision>,
    /// Their decision–evidence links.
    pub anchors: Vec<Anchor>,
}

impl DecisionContext {
    /// The context for `current_domain` out of a store's active decisions (in the order they
    /// were stored) and links (in the order they were made): the scope rule of
    /// [`DecisionContextProviderPort::load`], for the stores that apply it outside SQL.
    pub(crate) fn in_scope<'a>(
        active: impl IntoIterator<Item = &'a Decision>,
        links: impl IntoIterator<Item = &'a Anchor>,
        current_domain: Option<&str>,
    ) -> DecisionContext {
        let in_scope = |d: &&Decision| match Scope::of(&d.scope) {
            Scope::Global | Scope::Axis => true,
            Scope::Domain(name) => current_domain == Some(name),
        };
        let mut decisions: Vec<Decision> =
            active.into_iter().filter(|d| d.is_active).filter(in_scope).cloned().collect();
        // Stable: within a scope, the order they were stored in.
        decisions.sort_by_key(|d| Scope::of(&d.scope).rank());
        let anchors = links.into_iter().filter(|a| decisions.iter().any(|d| d.id == a.decision_id)).cloned().collect();
        DecisionContext { decisions, anchors }
    }
}

/// Memories: searched by text with a top-k limit, stored under an idempotency key (D-021
/// `MemoryRepositoryPort`). Each operation takes its [`Call`]: the step's key, deadline, cycle
/// and warnings.
pub trait MemoryRepositoryPort: Send + Sync + 'static {
    /// At most `top_k` memories matching `query`, best first (by relevance, then the most
    /// recent); a query with no words returns the most recent `top_k`. The query is text, never
    /// a query language. A store whose queries can be interrupted stops at the call's deadline
    /// (so no query outlives its step); stored entries it cannot read (a memory row deleted
    /// under its vector, a damaged vector) are left out and said once
    /// ([`Call::passed_over`]), never a failure.
    fn search(
        &self,
        call: &Call<'_>,
        query: &str,
        top_k: u64,
    ) -> impl Future<Output = Result<Vec<MemoryItem>, StoreError>> + Send;
    /// Stores a memory under the call's key ([`Call::key`]); returns its id. Put again under the
    /// same key, it returns the first id and stores nothing. A store that embeds what it stores
    /// waits for its embedder within the call's deadline, and only for a key not stored yet.
    fn put(&self, call: &Call<'_>, memory: NewMemory<'_>) -> impl Future<Output = Result<String, StoreError>> + Send;
}

/// Decisions in scope for an input (D-021 `DecisionContextProviderPort`).
pub trait DecisionContextProviderPort: Send + Sync + 'static {
    /// The active decisions with scope `global` and `axis`, and `domain:<current_domain>` when
    /// one is named, ordered global, axis, domain; and the links of those decisions. Within the
    /// call's deadline; what it passes over as unreadable said as
    /// [`MemoryRepositoryPort::search`] says it.
    fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> impl Future<Output = Result<DecisionContext, StoreError>> + Send;
}

/// The decision writes: versioned decisions, evidence and their links, each under the call's
/// idempotency key ([`Call::key`]). Each write is one transaction (or joins the call's cycle's)
/// and idempotent: the same write again (a re-run under the same key, or the same plan's next
/// cycle) returns the first result and writes nothing; the same id with other content is a
/// [`StoreError::Conflict`].
pub trait DecisionWritePort: Send + Sync + 'static {
    /// Stores a decision version. With `previousVersionId` it must name the active version of
    /// the same `rootId` and carry its version + 1, and that version is deactivated in the same
    /// transaction (compare-and-set); without it, the decision starts a root at version 1. A
    /// strategy that embeds decisions waits for its embedder within the call's deadline, and
    /// only for a key not written yet.
    fn persist_decision(
        &self,
        call: &Call<'_>,
        decision: &Decision,
    ) -> impl Future<Output = Result<String, StoreError>> + Send;
    /// Stores evidence; returns its id.
    fn persist_evidence(
        &self,
        call: &Call<'_>,
        evidence: &Evidence,
    ) -> impl Future<Output = Result<String, StoreError>> + Send;
    /// Links a stored decision and stored evidence; returns a status (`"linked"`).
    fn link(&self, call: &Call<'_>, anchor: &Anchor) -> impl Future<Output = Result<String, StoreError>> + Send;
}

/// A store behind all three ports: what [`StoreHandlers`](super::StoreHandlers) runs the storage
/// steps on. Every type that implements the three implements it.
///
/// ```
/// fn takes_a_store<S: planlock::store::Storage>(_: &S) {}
/// takes_a_store(&planlock::store::memory::InMemoryStore::new());
/// ```
pub trait Storage: MemoryRepositoryPort + DecisionContextProviderPort + DecisionWritePort {}

impl<T: MemoryRepositoryPort + DecisionContextProviderPort + DecisionWritePort> Storage for T {}

/// Now, as an RFC 3339 UTC timestamp (a memory's `timestamp`).
pub(crate) fn now() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| now.unix_timestamp().to_string())
}
