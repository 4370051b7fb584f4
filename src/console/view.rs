//! What the pages show, read for each request from a database (one statement a page), or, for a
//! directory of session roots, from a snapshot of every root: read once and served from memory for
//! at most [`FRESH`](super::cache::FRESH); a request that finds it older reads it again before it
//! answers (one read at a time: requests that arrive meanwhile take what it read), and a decision
//! from this console has the next request read it again. Past half of
//! [`FRESH`](super::cache::FRESH), a request starts a read in the background (and is answered from
//! what is kept), so in steady use no request waits for one. A page over a directory is so at most
//! [`FRESH`](super::cache::FRESH) behind what a worker wrote, and so is a database's listing that
//! the count of pauses waiting for a person (the number in the title) is taken from; an idle
//! console reads nothing.

use std::sync::Arc;

use crate::review::inbox::{InboxError, InboxFilter, InboxListing, PendingPause};
use crate::review::overview::{SessionStatus, SessionsPage};

use super::cache::{Pulse, Snapshot, fingerprint};
use super::state::State;

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
    /// [`FRESH`](super::cache::FRESH) ago: what the count in the title of each person's pages is
    /// taken from, so that a page of a database does not list every pause to show one number.
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

    /// The pulse of the sessions, read at most [`FRESH`](super::cache::FRESH) ago (for every
    /// `/events` stream at once).
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
