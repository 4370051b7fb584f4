//! What the pages show, read for each request from a database (one statement a page), or, for a
//! directory of session roots, from a snapshot of every root: read once, served from memory, read
//! again in the background when a request finds it older than [`FRESH`] (the request is not kept
//! waiting), and at once after a decision from this console. A page over a directory can so be up
//! to a few seconds behind what a worker wrote, and so can a database's pending count (the
//! number in the title); an idle console reads nothing.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use planlock::session::inbox::{InboxError, InboxFilter, InboxListing, Sessions};
use planlock::session::overview::{SessionStatus, SessionsPage};

use super::Console;

/// How old a snapshot of a directory may be before a request has it read again.
pub const FRESH: Duration = Duration::from_secs(2);

/// Every root under a directory, as last read.
pub struct Snapshot {
    sessions: SessionsPage,
    inbox: InboxListing,
}

/// The snapshot (of a directory) and the pending count (of a database).
#[derive(Default)]
pub struct Cache {
    snapshot: Kept<Arc<Snapshot>>,
    pending: Kept<usize>,
}

/// A value as last read, when it was read, and whether a read is under way.
pub struct Kept<T>(Mutex<Option<(Instant, T, bool)>>);

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept(Mutex::new(None))
    }
}

impl<T: Clone> Kept<T> {
    /// The value, and whether the caller is to read it again (it is older than [`FRESH`] and no
    /// read is under way: the caller's is, from now); `None` before the first read.
    fn get(&self) -> Option<(T, bool)> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (at, value, reading) = kept.as_mut()?;
        let stale = at.elapsed() > FRESH && !*reading;
        *reading |= stale;
        Some((value.clone(), stale))
    }

    /// Keeps what a read gave (`None`: it failed, and the value stays as it was); the value kept.
    fn put(&self, read: Option<T>) -> Option<T> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match read {
            Some(value) => *kept = Some((Instant::now(), value, false)),
            None => {
                if let Some((_, _, reading)) = kept.as_mut() {
                    *reading = false;
                }
            }
        }
        kept.as_ref().map(|(_, value, _)| value.clone())
    }
}

impl Console {
    /// The page of sessions with `status` from `offset`.
    pub async fn sessions_page(
        self: &Arc<Self>,
        status: Option<SessionStatus>,
        offset: usize,
        limit: usize,
    ) -> Result<SessionsPage, InboxError> {
        match self.inbox.place() {
            Sessions::Dir(_) => Ok(self.snapshot().await?.sessions.page(status, offset, limit)),
            _ => self.inbox.sessions(status, offset, limit).await,
        }
    }

    /// The page of at most `limit` pauses waiting for a person from `offset` (a copy of those
    /// only: a listing's records may hold 64 KiB each), and how many wait in all.
    pub async fn inbox_page(
        self: &Arc<Self>,
        offset: usize,
        limit: usize,
    ) -> Result<(InboxListing, usize), InboxError> {
        let page = |all: &InboxListing| {
            let listing = InboxListing {
                pauses: all.pauses.iter().skip(offset).take(limit).cloned().collect(),
                more: all.more,
                problems: all.problems.clone(),
            };
            (listing, all.pauses.len() + all.more)
        };
        match self.inbox.place() {
            Sessions::Dir(_) => Ok(page(&self.snapshot().await?.inbox)),
            _ => Ok(page(&self.inbox.list(&InboxFilter::default()).await?)),
        }
    }

    /// How many pauses wait for a decision (for the title and the navigation): of a database, as
    /// counted at most [`FRESH`] ago (counted again in the background, as a directory's snapshot
    /// is read), so that a page does not list every pause to show one number.
    pub async fn pending(self: &Arc<Self>) -> usize {
        if matches!(self.inbox.place(), Sessions::Dir(_)) {
            return self.snapshot().await.map_or(0, |s| super::pages::undecided(&s.inbox));
        }
        match self.served(&self.cache.pending, |me| async move { me.count_again().await }) {
            Some(count) => count,
            None => self.count_again().await,
        }
    }

    /// What `kept` holds, and when it is older than [`FRESH`], `again` reads it in the background
    /// (the request is not kept waiting); `None` before the first read.
    fn served<T: Clone, Again>(self: &Arc<Self>, kept: &Kept<T>, again: impl FnOnce(Arc<Console>) -> Again) -> Option<T>
    where
        Again: Future<Output: Send> + Send + 'static,
    {
        let (value, stale) = kept.get()?;
        if stale {
            tokio::spawn(again(self.clone()));
        }
        Some(value)
    }

    async fn count_again(&self) -> usize {
        let count = self.inbox.list(&InboxFilter::default()).await.map(|l| super::pages::undecided(&l));
        self.cache.pending.put(count.ok()).unwrap_or(0)
    }

    /// After a decision here: what the next page shows includes it.
    pub async fn decided(self: &Arc<Self>) {
        match self.inbox.place() {
            Sessions::Dir(_) => drop(self.read_again().await),
            _ => drop(self.count_again().await),
        }
    }

    async fn snapshot(self: &Arc<Self>) -> Result<Arc<Snapshot>, InboxError> {
        match self.served(&self.cache.snapshot, |me| async move { me.read_again().await }) {
            Some(snapshot) => Ok(snapshot),
            None => self.read_again().await,
        }
    }

    async fn read_again(&self) -> Result<Arc<Snapshot>, InboxError> {
        let read = async {
            let sessions = self.inbox.all_sessions().await?;
            let inbox = self.inbox.list(&InboxFilter::default()).await?;
            Ok(Arc::new(Snapshot { sessions, inbox }))
        };
        let read: Result<Arc<Snapshot>, InboxError> = read.await;
        match read {
            Ok(snapshot) => {
                self.cache.snapshot.put(Some(snapshot.clone()));
                Ok(snapshot)
            }
            // Kept as it was, to be read again by the next request.
            Err(e) => {
                self.cache.snapshot.put(None);
                Err(e)
            }
        }
    }
}
