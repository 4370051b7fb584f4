//! What the pages show, read for each request from a database (one statement a page), or, for a
//! directory of session roots, from a snapshot of every root: read once and served from memory
//! for at most [`FRESH`]; a request that finds it older reads it again before it answers (one
//! read at a time: requests that arrive meanwhile take what it read), and a decision from this
//! console has the next request read it again. Past half of [`FRESH`], a request starts a read
//! in the background (and is answered from what is kept), so in steady use no request waits for
//! one. A page over a directory is so at most [`FRESH`]
//! behind what a worker wrote, and so is a database's listing that the count of pauses waiting
//! for a person (the number in the title) is taken from; an idle console reads nothing.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::review::inbox::{InboxError, InboxFilter, InboxListing, PendingPause};
use crate::review::overview::{SessionStatus, SessionsPage};

use super::service::State;

/// How old what a page shows may be: a snapshot older than this is read again before a request
/// is answered.
pub const FRESH: Duration = Duration::from_secs(2);

/// Every root under a directory, as last read.
pub struct Snapshot {
    sessions: SessionsPage,
    inbox: Arc<InboxListing>,
}

/// The snapshot (of a directory), and the listing and pulse (of a database).
#[derive(Default)]
pub struct Cache {
    snapshot: Kept<Arc<Snapshot>>,
    listing: Kept<Arc<InboxListing>>,
    pulse: Kept<Pulse>,
}

/// Every pause (each person's count is taken from it), and a fingerprint of what the pages
/// show: every pause's state and the sessions' first page. A change of either is what `/events`
/// reports.
pub type Pulse = (Arc<InboxListing>, u64);

/// The fingerprint of `inbox` and `sessions`.
fn fingerprint(inbox: &InboxListing, sessions: &SessionsPage) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hash = std::collections::hash_map::DefaultHasher::new();
    for pause in &inbox.pauses {
        (&pause.session, pause.record.cycle, &pause.record.step_id, pause.record.created_at.to_string())
            .hash(&mut hash);
        (pause.state(), pause.decision.as_ref().map(|d| d.verdict.as_str())).hash(&mut hash);
    }
    inbox.more.hash(&mut hash);
    for s in &sessions.sessions {
        (&s.session, s.status.as_str(), s.cycles, s.last.as_ref().map(|l| (l.cycle, l.end.as_str()))).hash(&mut hash);
    }
    sessions.total.hash(&mut hash);
    hash.finish()
}

/// A value as last read and when, and the lock that makes its reads one at a time.
pub struct Kept<T> {
    value: Mutex<Option<(Instant, T)>>,
    reading: tokio::sync::Mutex<()>,
    /// A read ahead is under way in the background.
    ahead: AtomicBool,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept { value: Mutex::new(None), reading: tokio::sync::Mutex::new(()), ahead: AtomicBool::new(false) }
    }
}

impl<T: Clone> Kept<T> {
    /// The value if it was read at most [`FRESH`] ago.
    fn current(&self) -> Option<T> {
        let kept = self.value.lock().unwrap_or_else(|p| p.into_inner());
        kept.as_ref().filter(|(at, _)| at.elapsed() <= FRESH).map(|(_, value)| value.clone())
    }

    /// The value, read again by `read` first when it is older than [`FRESH`]. A read under way
    /// is waited for and its value taken, not repeated.
    async fn fresh<E, Read>(&self, read: impl FnOnce() -> Read) -> Result<T, E>
    where
        Read: Future<Output = Result<T, E>>,
    {
        if let Some(value) = self.current() {
            return Ok(value);
        }
        let _one = self.reading.lock().await;
        if let Some(value) = self.current() {
            return Ok(value);
        }
        let value = read().await?;
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), value.clone()));
        Ok(value)
    }

    /// Whether the caller is to read the value again ahead, in the background: it is past half
    /// of [`FRESH`] and no read ahead is under way (the caller's is, from now). So in steady use
    /// a request finds the value fresh and no request waits for a read.
    fn due_ahead(&self) -> bool {
        let kept = self.value.lock().unwrap_or_else(|p| p.into_inner());
        let aging = kept.as_ref().is_some_and(|(at, _)| at.elapsed() > FRESH / 2);
        drop(kept);
        aging && !self.ahead.swap(true, Ordering::AcqRel)
    }

    /// Reads the value again with `read` (one read at a time), ending the read ahead.
    async fn read_ahead<E, Read>(&self, read: impl FnOnce() -> Read)
    where
        Read: Future<Output = Result<T, E>>,
    {
        let one = self.reading.lock().await;
        if let Ok(value) = read().await {
            *self.value.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), value));
        }
        drop(one);
        self.ahead.store(false, Ordering::Release);
    }

    /// Forgets the value: the next request reads it again.
    fn forget(&self) {
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl State {
    /// The page of sessions with `status` whose names hold `words`, from `offset`.
    pub async fn sessions_page(
        self: &Arc<Self>,
        status: Option<SessionStatus>,
        words: &[String],
        offset: usize,
        limit: usize,
    ) -> Result<SessionsPage, InboxError> {
        match self.inbox.backend().lists_by_reading_each() {
            true => Ok(self.snapshot().await?.sessions.find(status, words, offset, limit)),
            false => self.inbox.find_sessions(status, words, offset, limit).await,
        }
    }

    /// The page of at most `limit` pauses that `filter` asks for from `offset`, of those `keep`
    /// keeps (the person's part of the filter: [`Forms::waits_for_me`](super::pages::Forms)), a
    /// copy of those only (a listing's records may hold 64 KiB each), and how many it asks for
    /// in all.
    pub async fn inbox_page(
        self: &Arc<Self>,
        filter: &InboxFilter,
        keep: impl Fn(&PendingPause) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(InboxListing, usize), InboxError> {
        let page = |all: &InboxListing, filter: Option<&InboxFilter>| {
            let mut matching: Vec<&PendingPause> =
                all.pauses.iter().filter(|p| filter.is_none_or(|f| f.matches(p)) && keep(p)).collect();
            if filter.is_some_and(|f| f.newest_first) {
                matching.reverse();
            }
            let unlisted = matching.len() == all.pauses.len() && filter.is_none();
            let total = matching.len() + if unlisted { all.more } else { 0 };
            let listing = InboxListing {
                pauses: matching.into_iter().skip(offset).take(limit).cloned().collect(),
                more: all.more,
                problems: all.problems.clone(),
            };
            (listing, total)
        };
        match self.inbox.backend().lists_by_reading_each() {
            // The snapshot holds every pause, oldest first: the filter is the one `list` uses.
            true => Ok(page(&self.snapshot().await?.inbox, Some(filter))),
            false => Ok(page(&self.inbox.list(filter).await?, None)),
        }
    }

    /// Every pause (the oldest [`MAX_INBOX`](crate::review::inbox::MAX_INBOX)), read at most
    /// [`FRESH`] ago: what the count in the title of each person's pages is taken from, so that
    /// a page of a database does not list every pause to show one number.
    pub async fn listing(self: &Arc<Self>) -> Arc<InboxListing> {
        if self.inbox.backend().lists_by_reading_each() {
            return self.snapshot().await.map(|s| s.inbox.clone()).unwrap_or_default();
        }
        if self.cache.listing.due_ahead() {
            let me = self.clone();
            tokio::spawn(async move { me.cache.listing.read_ahead(|| me.clone().read_listing()).await });
        }
        self.cache.listing.fresh(|| self.clone().read_listing()).await.unwrap_or_default()
    }

    /// How many pauses wait for `forms`' login (the number in the title and the navigation).
    pub async fn pending(self: &Arc<Self>, forms: &super::pages::Forms<'_>) -> usize {
        forms.pending(&*self.listing().await)
    }

    /// Every pause, read now.
    async fn read_listing(self: Arc<Self>) -> Result<Arc<InboxListing>, InboxError> {
        Ok(Arc::new(self.inbox.list(&InboxFilter::default()).await?))
    }

    /// The pulse of the sessions, read at most [`FRESH`] ago (for every `/events` stream at
    /// once).
    pub async fn pulse(self: &Arc<Self>) -> Pulse {
        if self.inbox.backend().lists_by_reading_each() {
            return match self.snapshot().await {
                Ok(s) => (s.inbox.clone(), fingerprint(&s.inbox, &s.sessions)),
                Err(_) => Pulse::default(),
            };
        }
        let read = || {
            let me = self.clone();
            async move {
                let inbox = me.inbox.list(&InboxFilter::default()).await?;
                let sessions = me.inbox.sessions(None, 0, super::pages::PER_PAGE).await?;
                let fingerprint = fingerprint(&inbox, &sessions);
                Ok::<_, InboxError>((Arc::new(inbox), fingerprint))
            }
        };
        self.cache.pulse.fresh(read).await.unwrap_or_default()
    }

    /// After a decision here: the next page reads again, and shows it.
    pub fn decided(&self) {
        self.cache.snapshot.forget();
        self.cache.listing.forget();
        self.cache.pulse.forget();
    }

    async fn snapshot(self: &Arc<Self>) -> Result<Arc<Snapshot>, InboxError> {
        if self.cache.snapshot.due_ahead() {
            let me = self.clone();
            tokio::spawn(async move { me.cache.snapshot.read_ahead(|| me.clone().read_snapshot()).await });
        }
        self.cache.snapshot.fresh(|| self.clone().read_snapshot()).await
    }

    /// Every root read now.
    async fn read_snapshot(self: Arc<Self>) -> Result<Arc<Snapshot>, InboxError> {
        let sessions = self.inbox.all_sessions().await?;
        let inbox = Arc::new(self.inbox.list(&InboxFilter::default()).await?);
        Ok(Arc::new(Snapshot { sessions, inbox }))
    }
}
