//! What a console keeps of its reads ([`Kept`]): each value with when it was read, read one at
//! a time, read again ahead in the background past half of [`FRESH`].

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::review::inbox::InboxListing;
use crate::review::overview::SessionsPage;

/// How old what a page shows may be: a snapshot older than this is read again before a request
/// is answered.
pub const FRESH: Duration = Duration::from_secs(2);

/// Every root under a directory, as last read.
pub struct Snapshot {
    pub(super) sessions: SessionsPage,
    pub(super) inbox: Arc<InboxListing>,
}

/// The snapshot (of a directory), and the listing and pulse (of a database).
#[derive(Default)]
pub struct Cache {
    pub(super) snapshot: Kept<Arc<Snapshot>>,
    pub(super) listing: Kept<Arc<InboxListing>>,
    pub(super) pulse: Kept<Pulse>,
}

/// Every pause (each person's count is taken from it), and a fingerprint of what the pages
/// show: every pause's state and the sessions' first page. A change of either is what `/events`
/// reports.
pub type Pulse = (Arc<InboxListing>, u64);

/// The fingerprint of `inbox` and `sessions`.
pub(super) fn fingerprint(inbox: &InboxListing, sessions: &SessionsPage) -> u64 {
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
    pub(super) fn current(&self) -> Option<T> {
        let kept = self.value.lock().unwrap_or_else(|p| p.into_inner());
        kept.as_ref().filter(|(at, _)| at.elapsed() <= FRESH).map(|(_, value)| value.clone())
    }

    /// The value, read again by `read` first when it is older than [`FRESH`]. A read under way
    /// is waited for and its value taken, not repeated.
    pub(super) async fn fresh<E, Read>(&self, read: impl FnOnce() -> Read) -> Result<T, E>
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
    pub(super) fn due_ahead(&self) -> bool {
        let kept = self.value.lock().unwrap_or_else(|p| p.into_inner());
        let aging = kept.as_ref().is_some_and(|(at, _)| at.elapsed() > FRESH / 2);
        drop(kept);
        aging && !self.ahead.swap(true, Ordering::AcqRel)
    }

    /// Reads the value again with `read` (one read at a time), ending the read ahead.
    pub(super) async fn read_ahead<E, Read>(&self, read: impl FnOnce() -> Read)
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
    pub(super) fn forget(&self) {
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}
