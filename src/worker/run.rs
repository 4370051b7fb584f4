//! [`Worker`]: the loop that finds decided pauses and acts on them — woken by the backend's
//! watch, and looking at every session on a slow poll.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::backend::{Backend, Wake, Woken};
use crate::contract::registry::Failure;

use super::act::{Boot, act_on};
use super::event::WorkerEvent;

/// How often a worker looks at every session by default, whatever woke it: what a lost
/// notification costs at most.
pub const DEFAULT_POLL: Duration = Duration::from_secs(10);

/// The most sessions one poll looks at.
const MAX_SESSIONS: usize = 100_000;

/// Acts on the decided pauses of the sessions of one [`Backend`] (CONTRACT §21), each as soon
/// as its decision is complete: the session's next cycle runs on a runtime `boot` builds for
/// it, with the plan the session keeps.
///
/// ```no_run
/// use planlock::demo::{Demo, ReviewGate};
/// use planlock::runtime::Runtime;
/// use planlock::worker::{ToRun, Worker};
///
/// # planlock::block_on(async {
/// let sessions = planlock::backend::connect("./sessions", None).await?;
/// let worker = Worker::new(sessions, |s: ToRun| {
///     let store = s.opened.into_session_store();
///     Ok(Runtime::builder("./policy", s.plan, store)
///         .handlers(Demo::new().handlers())
///         .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate))
/// });
/// // Until Ctrl-C, say; here: until the future never completes.
/// worker.run(std::future::pending(), |event| println!("{event}")).await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub struct Worker<B> {
    backend: Arc<dyn Backend>,
    boot: B,
    poll: Duration,
    watch: bool,
}

impl<B> std::fmt::Debug for Worker<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("backend", &self.backend).field("poll", &self.poll).finish_non_exhaustive()
    }
}

/// What a worker's wait ended with.
enum Then {
    Stop,
    Woke(Woken),
    Poll,
}

impl<B: Boot> Worker<B> {
    /// A worker for the sessions of `backend`, booting each session's runtime with `boot`.
    pub fn new(backend: Arc<dyn Backend>, boot: B) -> Worker<B> {
        Worker { backend, boot, poll: DEFAULT_POLL, watch: true }
    }

    /// Whether it is woken by each decision (the default) or finds them by polling alone: for a
    /// file system where watching does not work (a network one), or to measure the poll.
    pub fn watching(self, watch: bool) -> Worker<B> {
        Worker { watch, ..self }
    }

    /// Looks at every session this often (at least a second), whatever woke it.
    pub fn poll_every(self, poll: Duration) -> Worker<B> {
        Worker { poll: poll.max(Duration::from_secs(1)), ..self }
    }

    /// Acts on every decided pause there is now (one poll), reporting each event to `report`.
    pub async fn act_on_decided(&self, report: &mut impl FnMut(WorkerEvent)) {
        let paused = match self.backend.paused(MAX_SESSIONS).await {
            Ok(paused) => paused,
            Err(e) => return report(WorkerEvent::Failed { code: e.code(), message: e.to_string() }),
        };
        // A decided pause, or one that expired (its rule may be to abandon it).
        let now = crate::session::Timestamp::now();
        for (name, listed) in paused {
            if matches!(&listed, Ok((record, decided)) if decided.decision.is_some() || record.expired_at(now)) {
                self.act_on(&name, report).await;
            }
        }
    }

    /// Acts on session `name`, if its pause is decided.
    pub async fn act_on(&self, name: &str, report: &mut impl FnMut(WorkerEvent)) {
        if let Some(event) = act_on(self.backend.as_ref(), &self.boot, name).await {
            report(event);
        }
    }

    /// Runs until `stop` completes: acts on what is decided now, then on each decision as the
    /// backend's watch reports it, and on every decided pause at each poll. Stops between two
    /// sessions (a cycle in flight finishes first). Every event goes to `report`.
    pub async fn run(&self, stop: impl Future<Output = ()>, mut report: impl FnMut(WorkerEvent)) {
        let wake = Wake::default();
        let watching = match self.watch {
            true => self.backend.watch_decisions(wake.clone()).await,
            false => Ok(None),
        };
        let watch = match watching {
            Ok(watch) => watch,
            Err(e) => {
                report(WorkerEvent::Failed { code: e.code(), message: format!("cannot watch for decisions: {e}") });
                None
            }
        };
        report(WorkerEvent::Started { watching: watch.is_some(), poll: self.poll });
        let mut stop = pin!(stop);
        let mut woken = Some(Woken::All);
        let mut next_poll = Instant::now() + self.poll;
        loop {
            match woken.take() {
                Some(Woken::All) => {
                    self.act_on_decided(&mut report).await;
                    next_poll = Instant::now() + self.poll;
                }
                Some(Woken::Sessions(names)) => {
                    for name in names {
                        self.act_on(&name, &mut report).await;
                    }
                }
                None => {}
            }
            let mut next = pin!(wake.next());
            let mut delay = pin!(futures_timer::Delay::new(next_poll.saturating_duration_since(Instant::now())));
            let then = std::future::poll_fn(|cx| {
                if stop.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Then::Stop);
                }
                if let Poll::Ready(woken) = next.as_mut().poll(cx) {
                    return Poll::Ready(Then::Woke(woken));
                }
                match delay.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Then::Poll),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match then {
                Then::Stop => break,
                Then::Woke(w) => woken = Some(w),
                Then::Poll => woken = Some(Woken::All),
            }
        }
        drop(watch);
        report(WorkerEvent::Stopped);
    }
}
