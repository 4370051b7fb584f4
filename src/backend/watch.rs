//! Watching for decisions (CONTRACT §21): a backend tells a [`Wake`] which session had a decision
//! recorded, as it happens — PostgreSQL through `LISTEN planlock_decided` (schema 18's trigger
//! sends it with the decision's commit), files through the file system's own notices (`notify`,
//! inotify on Linux) — for as long as the [`Watch`] it gives back lives. A backend that cannot
//! watch gives none, and a worker finds its decisions by polling alone.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// The most session names a [`Wake`] keeps between two takes: past it, it keeps none and says
/// that every session may have one ([`Woken::All`]), so a flood of notices costs no memory.
pub const MAX_WOKEN: usize = 4096;

/// Which sessions had a decision since the last [`take`](Wake::take): a few names, or all of
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Woken {
    /// These sessions (names or keys), each once.
    Sessions(Vec<String>),
    /// More than [`MAX_WOKEN`], or a watch that lost track (a watcher's error): look at every
    /// session.
    All,
}

#[derive(Debug, Default)]
struct Pending {
    names: BTreeSet<String>,
    all: bool,
    /// The task waiting in [`Wake::next`], woken with the first name.
    waiting: Option<std::task::Waker>,
}

/// The sessions a watch woke, kept until the worker takes them; cloned into the watch that
/// fills it. Bounded ([`MAX_WOKEN`]).
///
/// ```
/// use planlock::backend::{Wake, Woken};
/// let wake = Wake::default();
/// wake.session("support-7");
/// wake.session("support-7");
/// assert_eq!(wake.take(), Some(Woken::Sessions(vec!["support-7".to_owned()])));
/// assert_eq!(wake.take(), None, "taken");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Wake {
    pending: Arc<Mutex<Pending>>,
}

impl Wake {
    /// Session `name` had a decision.
    pub fn session(&self, name: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.all && !pending.names.contains(name) {
            if pending.names.len() >= MAX_WOKEN {
                (pending.all, pending.names) = (true, BTreeSet::new());
            } else {
                pending.names.insert(name.to_owned());
            }
        }
        if let Some(waiting) = pending.waiting.take() {
            waiting.wake();
        }
    }

    /// Any session may have had one (the watch lost track).
    pub fn all(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        (pending.all, pending.names) = (true, BTreeSet::new());
        if let Some(waiting) = pending.waiting.take() {
            waiting.wake();
        }
    }

    /// What was woken since the last take, if anything.
    pub fn take(&self) -> Option<Woken> {
        Self::take_from(&mut self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn take_from(pending: &mut Pending) -> Option<Woken> {
        let (all, names) = (std::mem::take(&mut pending.all), std::mem::take(&mut pending.names));
        match (all, names.is_empty()) {
            (true, _) => Some(Woken::All),
            (false, true) => None,
            (false, false) => Some(Woken::Sessions(names.into_iter().collect())),
        }
    }

    /// Waits until something is woken, then takes it (on any executor: the waiting task is
    /// woken by the watch).
    pub async fn next(&self) -> Woken {
        std::future::poll_fn(|cx| {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match Self::take_from(&mut pending) {
                Some(woken) => std::task::Poll::Ready(woken),
                None => {
                    pending.waiting = Some(cx.waker().clone());
                    std::task::Poll::Pending
                }
            }
        })
        .await
    }
}

/// A watch for decisions, running while this value lives; dropping it stops the watch.
pub struct Watch {
    _running: Box<dyn Send + Sync>,
}

impl Watch {
    /// A watch kept running by `running` (a watcher, a task's abort guard), stopped when it is
    /// dropped.
    pub fn new(running: impl Send + Sync + 'static) -> Watch {
        Watch { _running: Box::new(running) }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}
