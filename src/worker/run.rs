//! [`Worker`]: the loop that finds decided pauses and acts on them — woken by the backend's
//! watch, and looking at every session on a slow poll.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::backend::{Backend, Wake, Woken};
use crate::contract::registry::Failure;

use super::act::{Boot, act_on};
use super::event::{Said, WorkerEvent};
use super::scan::{Found, Scan};

/// How often a worker looks at every session by default, whatever woke it: what a lost
/// notification costs at most.
pub const DEFAULT_POLL: Duration = Duration::from_secs(10);

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
    Passed(Found),
    Poll,
}

/// A pass over every session ([`Scan::pass`]) on a thread of its own: its result, once
/// there, and the task waiting for it.
struct Pass(Arc<Mutex<(Option<Found>, Option<Waker>)>>);

impl Pass {
    /// A pass over `backend`'s sessions that goes on from what `scan` saw (one pass at a time).
    fn start(backend: Arc<dyn Backend>, scan: Arc<Mutex<Scan>>) -> Pass {
        let slot: Arc<Mutex<(Option<Found>, Option<Waker>)>> = Arc::default();
        let done = slot.clone();
        let listing = move || {
            let mut scan = scan.lock().unwrap_or_else(PoisonError::into_inner);
            let found = crate::io::block_on(scan.pass(backend.as_ref()));
            drop(scan);
            let mut slot = done.lock().unwrap_or_else(PoisonError::into_inner);
            slot.0 = Some(found);
            if let Some(waiting) = slot.1.take() {
                waiting.wake();
            }
        };
        if let Err(e) = std::thread::Builder::new().name("planlock-worker-pass".into()).spawn(listing) {
            let failed = WorkerEvent::Failed { code: "worker-thread", message: format!("cannot start a pass: {e}") };
            slot.lock().unwrap_or_else(PoisonError::into_inner).0 = Some(Err(failed));
        }
        Pass(slot)
    }

    fn poll_done(&self, cx: &mut std::task::Context<'_>) -> Poll<Found> {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match slot.0.take() {
            Some(done) => Poll::Ready(done),
            None => {
                slot.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Whether `future` is done, without waiting for it.
async fn is_ready<F: Future + ?Sized>(mut future: std::pin::Pin<&mut F>) -> bool {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx).is_ready())).await
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
        match Scan::default().pass(self.backend.as_ref()).await {
            Ok(names) => {
                for name in names {
                    self.act_on(&name, report).await;
                }
            }
            Err(failed) => report(failed),
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
    /// sessions (a cycle in flight finishes first). Every event goes to `report` (a session skipped, once until its reason changes or it is acted on).
    pub async fn run(&self, stop: impl Future<Output = ()>, mut report: impl FnMut(WorkerEvent)) {
        // A session skipped is said once, not at every poll, until something changes.
        let mut said = Said::default();
        let mut report = move |event: WorkerEvent| {
            if said.is_new(&event) {
                report(event)
            }
        };
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
        // The poll's pass over every session lists on a thread of its own (a directory of many
        // roots is read in place), so a decision that wakes the worker meanwhile is acted on at
        // once; what the pass finds is acted on after what woke the worker.
        let scan = Arc::new(Mutex::new(Scan::default()));
        let start = || Pass::start(self.backend.clone(), scan.clone());
        let mut pass = Some(start());
        let mut found: VecDeque<String> = VecDeque::new();
        let mut next_poll = Instant::now() + self.poll;
        loop {
            if is_ready(stop.as_mut()).await {
                break;
            }
            match wake.take() {
                Some(Woken::Sessions(names)) => {
                    for name in names {
                        self.act_on(&name, &mut report).await;
                    }
                    continue;
                }
                Some(Woken::All) => {
                    pass.get_or_insert_with(start);
                }
                None => {}
            }
            if let Some(name) = found.pop_front() {
                self.act_on(&name, &mut report).await;
                continue;
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
                if let Some(listed) = &pass {
                    return match listed.poll_done(cx) {
                        Poll::Ready(done) => Poll::Ready(Then::Passed(done)),
                        Poll::Pending => Poll::Pending,
                    };
                }
                match delay.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Then::Poll),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await;
            match then {
                Then::Stop => break,
                // Put back for the loop's next turn, which acts on it.
                Then::Woke(Woken::Sessions(names)) => names.iter().for_each(|name| wake.session(name)),
                Then::Woke(Woken::All) => wake.all(),
                Then::Passed(done) => {
                    pass = None;
                    next_poll = Instant::now() + self.poll;
                    match done {
                        Ok(names) => found.extend(names),
                        Err(failed) => report(failed),
                    }
                }
                Then::Poll => pass = Some(start()),
            }
        }
        drop(watch);
        report(WorkerEvent::Stopped);
    }
}
