//! What a backend is: the [`Backend`] a program holds, the [`OpenedSession`] it opens, and what
//! their calls return. The listings are provided from [`Backend::sessions`]
//! (`backend/listing.rs`), so a backend writes only its own reads.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::{AccessBook, BackendError, BudgetBook, Logged, Outbox, Wake, Watch, listing, outbox};
use crate::exec::budget::TokenBudget;
use crate::session::{
    CycleEntry, Decisions, InstalledAccess, InterventionRecord, SessionError, SessionRecords, SessionState,
    SessionStore, Timestamp,
};
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::store::provider::ResolvedStore;

/// What a [`Backend`] method returns: a boxed future, so that backends are objects.
pub type BackendFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BackendError>> + Send + 'a>>;

/// A session as [`Backend::sessions`] lists it: its name and its records.
pub type Listed = (String, Box<dyn SessionRecords>);

/// A paused session as a listing reads it: its name, and its pause's record with what is decided
/// on it so far, or why they cannot be read.
pub type PausedSession = (String, Result<(InterventionRecord, Decisions), SessionError>);

/// What one session's records hold, as the overview reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct Glance {
    /// Its saved session, if a cycle has completed.
    pub state: Option<SessionState>,
    /// Its pause, if a cycle waits for a person.
    pub paused: Option<InterventionRecord>,
    /// Its history's last entry.
    pub last: Option<CycleEntry>,
}

/// Sessions at a glance: each one's name and records (or why they cannot be read), and, when the
/// backend filtered and paged them itself (one statement), how many matched in all.
#[derive(Debug, Default)]
pub struct Glances {
    /// The sessions.
    pub sessions: Vec<(String, Result<Glance, SessionError>)>,
    /// `Some(total)`: these are the page asked for, of `total`; `None`: these are every session,
    /// for the caller to filter and page.
    pub paged_total: Option<usize>,
}

/// A session opened to run its cycles: its store (the lock or lease held while it lives), and
/// where its bundle's providers open their stores.
pub trait OpenedSession: fmt::Debug + Send + Sync {
    /// The stores of `manifest`'s providers, opened by `resolver` where the session is: under its
    /// root, or in the database session's namespace and cycles.
    fn resolve(&self, resolver: &StrategyResolver, manifest: &BundleManifest) -> Result<ResolvedStore, BundleError>;

    /// The session store, to boot a runtime on.
    fn into_session_store(self: Box<Self>) -> Box<dyn SessionStore>;

    /// The session's token budgets (CONTRACT §20), for
    /// [`RuntimeBuilder::budget`](crate::runtime::RuntimeBuilder::budget): its tenant's in the
    /// database, the directory's beside file sessions. A place with no budget set reserves
    /// nothing (one statement or one locked read a model call).
    fn budget(&self) -> Arc<dyn TokenBudget>;
}

/// Where sessions live; see the [module docs](super). Two implementations:
/// [`FilesBackend`](super::FilesBackend) and `PgBackend` (feature `postgres`).
///
/// ```
/// # planlock::block_on(async {
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("support-7"))?;
/// let sessions = planlock::backend::connect(dir.path().to_str().unwrap(), None).await?;
/// let opened = sessions.open("support-7").await?;
/// assert!(opened.into_session_store().records().load().await?.is_none(), "a new session holds nothing yet");
/// assert_eq!(sessions.default_bundle().bundle_id, "default");
/// assert!(sessions.records("no-such-session").await.is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait Backend: fmt::Debug + Send + Sync {
    /// What messages call session `name`: its root's path, or "session `KEY`" (never a URL).
    fn describe(&self, name: &str) -> String;

    /// Whether `name` can name a session here: a plain name of a root under the directory (one
    /// rule, [`is_root_name`](crate::session::is_root_name)), or a key of 1 to 256 bytes.
    fn is_session_name(&self, name: &str) -> bool;

    /// The bundle a session here uses when none is named: providers `hierarchical-sql` and
    /// `sqlite` under a directory, their PostgreSQL counterparts in a database.
    fn default_bundle(&self) -> BundleManifest;

    /// Opens session `name` to run its cycles (its lock or lease taken). Under a directory the
    /// root must exist; a database makes the session's row.
    fn open<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn OpenedSession>>;

    /// Session `name`'s records, for reading or deciding on its pause without taking the session:
    /// no lock, no lease, so a worker running a cycle is not disturbed. A name that is no session
    /// here is [`BackendError::Unknown`].
    fn records<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn SessionRecords>>;

    /// The stores of `manifest`'s providers for session `name`, opened only to read (nothing
    /// created, no lock, no lease). See [`read_stores`](fn@super::read_stores) for the pinned bundle.
    fn stores_to_read<'a>(
        &'a self,
        name: &'a str,
        resolver: &'a StrategyResolver,
        manifest: &'a BundleManifest,
    ) -> BackendFuture<'a, ResolvedStore>;

    /// The token budgets kept here (CONTRACT §20), or `None` where this backend keeps none (then
    /// `planlock budget` says so, and its sessions' model calls reserve nothing). No default: a
    /// backend says which.
    fn budgets(&self) -> Option<&dyn BudgetBook>;

    /// The outbox of notifications here (CONTRACT §18): the claims of each event's delivery to
    /// each receiver, or `None` where this backend keeps none (then notifications cannot be
    /// sent from it, and the notifier says so). No default: a backend says which.
    fn outbox(&self) -> Option<&dyn Outbox>;

    /// Every session here (at most `max` looked at), each with its records, for reading: what
    /// the listings below are made of ([`paused`](Self::paused), [`glances`](Self::glances),
    /// [`recent_events`](Self::recent_events)), unless a backend says them in one statement.
    fn sessions(&self, max: usize) -> BackendFuture<'_, Vec<Listed>>;

    /// The access file kept here (CONTRACT §18, amended), or `None` where this backend keeps
    /// none (then none is ever installed: one operator, names unverified, and `planlock access
    /// install` is refused, `backend-lacks`). No default: a backend says which.
    fn access(&self) -> Option<&dyn AccessBook>;

    /// The access file installed here (beside the session roots, or the tenant's in the
    /// database); `None` when none is, or the backend keeps none.
    fn installed_access(&self) -> BackendFuture<'_, Option<InstalledAccess>> {
        match self.access() {
            Some(book) => book.installed_access(),
            None => Box::pin(std::future::ready(Ok(None))),
        }
    }

    /// Watches for decisions (CONTRACT §21): tells `wake` which session had a decision recorded,
    /// as it happens, for as long as the returned [`Watch`] lives. `None`: this backend cannot
    /// watch, and a worker finds its decisions by polling alone (the default).
    fn watch_decisions(&self, wake: Wake) -> BackendFuture<'_, Option<Watch>> {
        let _ = wake;
        Box::pin(std::future::ready(Ok(None)))
    }

    /// Every paused session (at most `max` sessions looked at), with its record and decision.
    /// By default, read from each of [`sessions`](Self::sessions).
    fn paused(&self, max: usize) -> BackendFuture<'_, Vec<PausedSession>> {
        Box::pin(async move { listing::paused(self.sessions(max).await?).await })
    }

    /// The events of every session's records (its approval log and its notices: the outbox of
    /// notifications, CONTRACT §18) at or after `since`, at most `max` of them, oldest first
    /// within a session. By default, read from each of [`sessions`](Self::sessions).
    fn recent_events(&self, since: Timestamp, max: usize) -> BackendFuture<'_, Vec<Logged>> {
        Box::pin(
            async move { listing::recent_events(self.sessions(outbox::MAX_SESSIONS_SCANNED).await?, since, max).await },
        )
    }

    /// Whether listing sessions here reads each one's records (a reader of many keeps a
    /// snapshot), rather than one statement a page: true unless a backend overrides
    /// [`glances`](Self::glances) with a statement of its own.
    fn lists_by_reading_each(&self) -> bool {
        true
    }

    /// Sessions at a glance: the page of `limit` from `offset` of those whose status is `status`
    /// (`paused`, `expired`, `halted`, `ready`; every one with `None`) and whose name holds every
    /// one of `words` (lowercase; in any case) where one statement can say it, else every session
    /// (at most `max`) for the caller to filter and page — which is what the default does, from
    /// each of [`sessions`](Self::sessions).
    fn glances<'a>(
        &'a self,
        status: Option<&'a str>,
        words: &'a [String],
        offset: usize,
        limit: usize,
        max: usize,
    ) -> BackendFuture<'a, Glances> {
        let _ = (status, words, offset, limit);
        Box::pin(async move { listing::glances(self.sessions(max).await?).await })
    }
}
