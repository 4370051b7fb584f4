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

use std::future::Future;

use crate::contract::schema::{Anchor, Decision, Evidence, MemoryItem};

pub mod bundle;
mod call;
#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod conformance;
mod handlers;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod meaning;
pub mod memory;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod provider;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod write;

pub use call::Call;
pub use handlers::StoreHandlers;
pub(crate) use handlers::step_failure;

/// What each built-in backend beside the session roots adds to every
/// [`StrategyResolver::default`](bundle::StrategyResolver) (its memory providers and strategies):
/// listed here, where the backends' modules are declared, so that the resolver names none.
const BACKEND_PROVIDERS: &[fn(bundle::StrategyResolver) -> bundle::StrategyResolver] = &[
    #[cfg(feature = "postgres")]
    postgres::providers::register,
];

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

/// Why a storage operation failed. The step that called it fails with its kind from the
/// registry (reads CycleFail, writes FailFast); this says what went wrong and where.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A write that contradicts what is stored: the same id with other content, a new version
    /// whose previous one is no longer the active one, a version that is not the next.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A write that names something that is not stored (a link to a missing decision).
    #[error("not found: {0}")]
    NotFound(String),
    /// The store itself failed: I/O, a corrupt database file, a lock held too long.
    #[error("{0}")]
    Backend(String),
    /// The store will not open what is at its path: a symbolic link, another program's
    /// database, or a write through a read-only store. Nothing was changed.
    #[error("{0}")]
    Refused(String),
    /// The embedder of a provider that ranks by meaning failed: its code and class are the
    /// embedder's (a server's: `model-http-status`, `model-redirect`, …).
    #[error("{message}")]
    Embedder {
        /// The embedder's code.
        code: &'static str,
        /// The embedder's class.
        kind: crate::contract::registry::FailureKind,
        /// What it said, its cause included.
        message: String,
    },
}

impl From<crate::embed::EmbedError> for StoreError {
    fn from(e: crate::embed::EmbedError) -> StoreError {
        StoreError::Embedder { code: e.code, kind: e.kind, message: e.to_string() }
    }
}

impl crate::contract::registry::Failure for StoreError {
    /// A stable machine-readable code.
    fn code(&self) -> &'static str {
        match self {
            StoreError::Conflict(_) => "store-conflict",
            StoreError::NotFound(_) => "store-not-found",
            StoreError::Backend(_) => "store-backend",
            StoreError::Refused(_) => "store-refused",
            StoreError::Embedder { code, .. } => code,
        }
    }

    /// CycleFail for what this write or read found (a conflict, something missing): another
    /// cycle may go differently; FailFast when the store itself failed or refused.
    fn kind(&self) -> crate::contract::registry::FailureKind {
        use crate::contract::registry::FailureKind;
        match self {
            StoreError::Conflict(_) | StoreError::NotFound(_) => FailureKind::CycleFail,
            StoreError::Backend(_) | StoreError::Refused(_) => FailureKind::FailFast,
            StoreError::Embedder { kind, .. } => *kind,
        }
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

/// A store behind all three ports: what [`StoreHandlers`] runs the storage steps on. Every type
/// that implements the three implements it.
///
/// ```
/// fn takes_a_store<S: planlock::store::Storage>(_: &S) {}
/// takes_a_store(&planlock::store::memory::InMemoryStore::new());
/// ```
pub trait Storage: MemoryRepositoryPort + DecisionContextProviderPort + DecisionWritePort {}

impl<T: MemoryRepositoryPort + DecisionContextProviderPort + DecisionWritePort> Storage for T {}

/// The most distinct words of a search query that are searched for; later ones are ignored.
pub const MAX_QUERY_WORDS: usize = 32;

/// The longest word searched for, in bytes; a longer one is no word and is ignored.
pub const MAX_QUERY_WORD_BYTES: usize = 64;

/// The words of a search query, as plain text: split on anything that is not a letter or digit,
/// so no character of the input can reach a query language; each word once, in the order of
/// its first use, at most [`MAX_QUERY_WORDS`] of them, none longer than
/// [`MAX_QUERY_WORD_BYTES`]. So a query's cost is bounded whatever its text (CONTRACT §11).
///
/// ```
/// use planlock::store::{query_words, MAX_QUERY_WORDS};
/// assert_eq!(query_words("rotate the key; rotate it!"), ["rotate", "the", "key", "it"]);
/// let long = (0..10_000).map(|n| format!("w{}", n % 1000)).collect::<Vec<_>>().join(" ");
/// assert_eq!(query_words(&long).len(), MAX_QUERY_WORDS);
/// ```
pub fn query_words(query: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || word.len() > MAX_QUERY_WORD_BYTES || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}

/// Now, as an RFC 3339 UTC timestamp (a memory's `timestamp`).
pub(crate) fn now() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.format(&time::format_description::well_known::Rfc3339).unwrap_or_else(|_| now.unix_timestamp().to_string())
}

/// The scope of a decision, parsed: `global`, `axis`, or `domain:<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope<'a> {
    Global,
    Axis,
    Domain(&'a str),
}

impl<'a> Scope<'a> {
    /// The scope of `scope`, which the contract already checked (`rules::decision_scope`).
    pub(crate) fn of(scope: &'a str) -> Scope<'a> {
        match scope {
            "global" => Scope::Global,
            "axis" => Scope::Axis,
            other => Scope::Domain(other.strip_prefix("domain:").unwrap_or(other)),
        }
    }

    /// The scope as SQL stores it: a kind (`global`, `axis`, `domain`) and the domain's name.
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn columns(self) -> (&'static str, Option<&'a str>) {
        match self {
            Scope::Global => ("global", None),
            Scope::Axis => ("axis", None),
            Scope::Domain(name) => ("domain", Some(name)),
        }
    }

    /// Where a loaded decision of this scope sorts: global, axis, domain.
    pub(crate) fn rank(self) -> u8 {
        match self {
            Scope::Global => 0,
            Scope::Axis => 1,
            Scope::Domain(_) => 2,
        }
    }
}

/// Whether two versions are the same write (whether one is still active is the store's business).
pub(crate) fn same_decision(a: &Decision, b: &Decision) -> bool {
    (&a.id, &a.root_id, a.version, &a.text, &a.strength, &a.scope, &a.previous_version_id)
        == (&b.id, &b.root_id, b.version, &b.text, &b.strength, &b.scope, &b.previous_version_id)
}

/// The version rules of a new decision against the stored ones (docs/CONTRACT.md, "Storage
/// behind ports"): a new root starts at version 1 with no active version; a next version names
/// the root's active version and carries its version + 1.
pub(crate) fn check_version(stored: &[Decision], decision: &Decision) -> Result<(), StoreError> {
    let active = stored.iter().find(|d| d.root_id == decision.root_id && d.is_active);
    match (&decision.previous_version_id, active) {
        (None, None) if decision.version.get() == 1 => Ok(()),
        (None, None) => Err(StoreError::Conflict(format!(
            "decision `{}` starts root `{}` but has version {}, not 1",
            decision.id,
            decision.root_id,
            decision.version.get()
        ))),
        (None, Some(a)) => Err(StoreError::Conflict(format!(
            "decision `{}` starts root `{}`, which already has the active version `{}`; name it as previousVersionId",
            decision.id, decision.root_id, a.id
        ))),
        (Some(previous), Some(a)) if &a.id == previous => {
            if decision.version.get() == a.version.get() + 1 {
                Ok(())
            } else {
                Err(StoreError::Conflict(format!(
                    "decision `{}` follows version {} of root `{}` but has version {}",
                    decision.id,
                    a.version.get(),
                    decision.root_id,
                    decision.version.get()
                )))
            }
        }
        (Some(previous), _) => Err(StoreError::Conflict(format!(
            "decision `{}` follows `{previous}`, which is not the active version of root `{}`",
            decision.id, decision.root_id
        ))),
    }
}
