//! The built-in backends as the layers below `backend/` name them: one case per backend that
//! keeps something of its own at the seam between the runtime and where sessions live. What a
//! backend holds for a cycle ([`Held`], inside every
//! [`CycleGuard`](crate::session::CycleGuard)) and where a session of it is for the providers
//! that open its stores ([`SessionAt`], inside every
//! [`ProviderContext`](crate::store::provider::ProviderContext)) are closed sets, typed so that a
//! store reads back only its own backend's case (no downcast). They are defined here, once: below
//! the backends, a backend's feature gate appears only where modules are declared and in this
//! file.

use std::path::Path;

/// Runs its function when dropped: what [`CycleGuard::ending`](crate::session::CycleGuard::ending)
/// holds.
pub(crate) struct OnDrop(pub(super) Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(end) = self.0.take() {
            end();
        }
    }
}

/// What a backend holds open for a cycle: one case per backend that holds anything.
pub(crate) enum Held {
    /// Nothing: the store's writes commit on their own (files, and stores outside planlock).
    Nothing,
    /// Nothing but what to run when the cycle ends
    /// ([`CycleGuard::ending`](crate::session::CycleGuard::ending)): kept only to be dropped with
    /// the guard.
    Ending(#[expect(dead_code, reason = "held for its Drop")] OnDrop),
    /// A PostgreSQL session's cycle: its kept writes and what its first read kept.
    #[cfg(feature = "postgres")]
    Pg(Box<crate::pg::cycle::PgCycle>),
}

impl Held {
    /// Whether the backend holds writes kept for the cycle's end.
    pub(super) fn holds(&self) -> bool {
        match self {
            Held::Nothing | Held::Ending(_) => false,
            #[cfg(feature = "postgres")]
            Held::Pg(_) => true,
        }
    }
}

/// Where a session lives, as its providers' factories are given it: a provider asks its context
/// (`ProviderContext::root`, `ProviderContext::database_session`) for the place it can use.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SessionAt<'a> {
    /// Files under a session root (`ops/store/…`).
    Root(&'a Path),
    /// A session of a shared PostgreSQL database.
    #[cfg(feature = "postgres")]
    Database(&'a crate::pg::PgSession),
}

impl<'a> SessionAt<'a> {
    /// The session root, for a session of files.
    pub(crate) fn root(self) -> Option<&'a Path> {
        match self {
            SessionAt::Root(root) => Some(root),
            #[cfg(feature = "postgres")]
            SessionAt::Database(_) => None,
        }
    }
}

/// Why a store refuses the cycle it was handed: it is another session's, or another
/// database's. Never written alone instead (the cycle's writes would then not commit together).
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ForeignCycle;

#[cfg(feature = "postgres")]
impl Held {
    /// A PostgreSQL session's cycle.
    pub(crate) fn pg(cycle: crate::pg::cycle::PgCycle) -> Held {
        Held::Pg(Box::new(cycle))
    }

    /// The PostgreSQL cycle of session `key` in database `db`: `Ok(None)` when the guard holds
    /// nothing (no cycle: write alone), refused when it holds another session's or database's.
    pub(crate) fn pg_of(
        &self,
        db: &crate::pg::PgDatabase,
        key: &str,
    ) -> Result<Option<&crate::pg::cycle::PgCycle>, ForeignCycle> {
        match self {
            Held::Nothing | Held::Ending(_) => Ok(None),
            Held::Pg(cycle) if cycle.is_of(db, key) => Ok(Some(cycle)),
            Held::Pg(_) => Err(ForeignCycle),
        }
    }

    /// [`pg_of`](Self::pg_of), taking the cycle out.
    pub(crate) fn into_pg_of(
        self,
        db: &crate::pg::PgDatabase,
        key: &str,
    ) -> Result<Option<Box<crate::pg::cycle::PgCycle>>, ForeignCycle> {
        match self {
            Held::Nothing | Held::Ending(_) => Ok(None),
            Held::Pg(cycle) if cycle.is_of(db, key) => Ok(Some(cycle)),
            Held::Pg(_) => Err(ForeignCycle),
        }
    }
}
