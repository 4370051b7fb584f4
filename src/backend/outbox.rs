//! The outbox of notifications (CONTRACT §18), as each backend keeps it: the events are the
//! sessions' own records — the approval log (decisions and outcomes) and the notices (a pause
//! made, a pause seen expired) — written with what causes them; beside them, each event's
//! delivery to each receiver (attempts, when to try again, done), claimed by one sender at a
//! time.
//!
//! Files: a receiver's deliveries of a session are `ops/runtime/deliveries-<hook>.jsonl` under
//! its root, one line an attempt; a sender holds that file's lock while it delivers (another
//! sender skips the session for that receiver meanwhile). PostgreSQL: a row an event and
//! receiver (`planlock_deliveries`), claimed with a lease.
//!
//! Layer 6, with the backends.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::session::{ApprovalEvent, SessionError, Timestamp};

/// The most session roots one read of the recent events looks at (as the inbox's listing).
pub(crate) const MAX_SESSIONS_SCANNED: usize = 100_000;

/// The deliveries of a backend's outbox: each event's delivery to each receiver, claimed by
/// one sender at a time (CONTRACT §18). The events themselves are the sessions' records
/// ([`Backend::recent_events`](super::Backend::recent_events)).
pub trait Outbox: Send + Sync {
    /// Claims the delivery of event `id` of session `session` to receiver `hook`, when it is due
    /// (not done, its retry time come) and no other sender holds it; a claim held past `hold`
    /// (its sender stopped) may be taken by another. `None`: not now.
    fn claim_delivery<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        hook: &'a str,
        hold: std::time::Duration,
    ) -> super::BackendFuture<'a, Option<DeliveryClaim>>;

    /// Ends a claimed attempt with `outcome`, durably. A claim another backend made is refused
    /// ([`BackendError::ForeignClaim`](super::BackendError::ForeignClaim)).
    fn finish_delivery(&self, claim: DeliveryClaim, outcome: DeliveryOutcome) -> super::BackendFuture<'_, ()>;
}

/// One event of a session's records, as a sender reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    /// The session's name.
    pub session: String,
    /// The event.
    pub event: ApprovalEvent,
}

/// An event's delivery to one receiver, claimed by this sender: nobody else delivers it until
/// it is finished (or, on a database, until the claim's lease runs out, should this sender stop).
pub struct DeliveryClaim {
    /// The session.
    pub session: String,
    /// The event's id.
    pub id: String,
    /// The receiver's id.
    pub hook: String,
    /// How many attempts came before this one.
    pub attempts: u32,
    /// What holds the claim: one case per backend.
    pub(crate) holder: ClaimHolder,
}

/// What holds a [`DeliveryClaim`]: the receiver's attempts file, locked (files), or a token
/// the outbox wrote with the claim (a database's lease owner, or an outbox of your own's). An
/// outbox finishes only a claim of its own case.
#[derive(Debug)]
pub(crate) enum ClaimHolder {
    /// The locked attempts file of a session root.
    File(File),
    /// The token written with the claim (PostgreSQL: the claimed row's lease owner).
    Token(uuid::Uuid),
}

impl DeliveryClaim {
    /// A claim an [`Outbox`] made and holds by `token`, which it wrote with the claim and checks
    /// when the claim is finished ([`token`](Self::token)): how an outbox of your own makes the
    /// claims it returns.
    ///
    /// ```
    /// use planlock::backend::DeliveryClaim;
    /// let token = uuid::Uuid::new_v4();
    /// let claim = DeliveryClaim::held_by("support-7", "evt-1", "hook-a", 0, token);
    /// assert_eq!((claim.token(), claim.attempts), (Some(token), 0));
    /// ```
    pub fn held_by(session: &str, id: &str, hook: &str, attempts: u32, token: uuid::Uuid) -> DeliveryClaim {
        let (session, id, hook) = (session.to_owned(), id.to_owned(), hook.to_owned());
        DeliveryClaim { session, id, hook, attempts, holder: ClaimHolder::Token(token) }
    }

    /// The token of a claim made by [`held_by`](Self::held_by); `None` for a claim of the files
    /// backend, which holds its attempts file's lock instead.
    pub fn token(&self) -> Option<uuid::Uuid> {
        match self.holder {
            ClaimHolder::Token(token) => Some(token),
            ClaimHolder::File(_) => None,
        }
    }
}

impl std::fmt::Debug for DeliveryClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryClaim")
            .field("session", &self.session)
            .field("id", &self.id)
            .field("hook", &self.hook)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx: done.
    Delivered,
    /// It did not: try again at this time.
    RetryAt(Timestamp),
    /// It did not, and the event is too old to try again: done, given up.
    GivenUp,
}

/// One line of a files delivery log.
#[derive(Debug, Serialize, Deserialize)]
struct Attempt {
    id: String,
    attempts: u32,
    next: Option<Timestamp>,
    done: bool,
}

/// The deliveries file of receiver `hook` under `root`.
fn deliveries_file(root: &Path, hook: &str) -> std::path::PathBuf {
    root.join(format!("ops/runtime/deliveries-{hook}.jsonl"))
}

/// The most of a deliveries file read back: its newest attempts.
const MAX_DELIVERIES_BYTES: u64 = 4 << 20;

/// Claims the delivery of event `id` to `hook` in the session root `root`, if it is due: the
/// receiver's deliveries file locked (not waited for: another sender holds it, `None`) and its
/// attempts for the event read.
pub(crate) fn claim_in_root(
    root: &Path,
    session: &str,
    id: &str,
    hook: &str,
    now: Timestamp,
) -> Result<Option<DeliveryClaim>, SessionError> {
    let path = deliveries_file(root, hook);
    let io = |op: &'static str| {
        let file = path.clone();
        move |source| SessionError::Io { file, op, source }
    };
    if !path.parent().is_some_and(Path::is_dir) {
        return Ok(None);
    }
    let mut file = crate::session::open_log(&path).map_err(io("open"))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(fs::TryLockError::WouldBlock) => return Ok(None),
        Err(fs::TryLockError::Error(e)) => return Err(io("lock")(e)),
    }
    let text = crate::session::read_log(&mut file, &path, MAX_DELIVERIES_BYTES)?;
    let last = text
        .lines()
        .rev()
        .filter(|line| line.contains(id))
        .filter_map(|line| serde_json::from_str::<Attempt>(line).ok())
        .find(|a| a.id == id);
    let attempts = match last {
        Some(a) if a.done => return Ok(None),
        Some(a) if a.next.is_some_and(|next| next > now) => return Ok(None),
        Some(a) => a.attempts,
        None => 0,
    };
    let holder = ClaimHolder::File(file);
    Ok(Some(DeliveryClaim { session: session.to_owned(), id: id.to_owned(), hook: hook.to_owned(), attempts, holder }))
}

/// Ends a claim of [`claim_in_root`]: the attempt appended and synced, the lock let go.
pub(crate) fn finish_in_root(claim: DeliveryClaim, outcome: DeliveryOutcome) -> Result<(), SessionError> {
    let ClaimHolder::File(mut file) = claim.holder else {
        let source = std::io::Error::other("a claim of another backend");
        return Err(SessionError::Io { file: format!("deliveries-{}.jsonl", claim.hook).into(), op: "finish", source });
    };
    let (next, done) = match outcome {
        DeliveryOutcome::Delivered | DeliveryOutcome::GivenUp => (None, true),
        DeliveryOutcome::RetryAt(at) => (Some(at), false),
    };
    let line = Attempt { id: claim.id, attempts: claim.attempts + 1, next, done };
    let mut text = serde_json::to_vec(&line).unwrap_or_default();
    text.push(b'\n');
    let failed =
        |source| SessionError::Io { file: format!("deliveries-{}.jsonl", claim.hook).into(), op: "append", source };
    file.write_all(&text).and_then(|()| file.sync_data()).map_err(failed)
}
