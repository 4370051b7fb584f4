//! A session store that forwards every call to another and calls a hook at the named points
//! around the end of a cycle: before it, `before-removal` for an end that gives a pause up and
//! `before-save` for any other; after it, `after-removal` for an end that removed the pause's
//! record (a completed cycle's, or one that gave a pause up) and `after-save` for a pause's
//! (and a failed cycle's). The crash tests stop or abort the process there.

use planlock::session::{CycleGuard, EndOfCycle, Leaves, SessionState, SessionStore, StoreFuture};

/// `inner`, with `hook` called at every point (it decides which one it acts on).
pub struct Around<S> {
    pub inner: S,
    pub hook: Box<dyn Fn(&str) + Send + Sync>,
}

impl<S: SessionStore> Around<S> {
    /// `inner`, calling `act` at `point` only.
    pub fn at(inner: S, point: &str, act: fn(&str)) -> Self {
        let point = point.to_owned();
        Around {
            inner,
            hook: Box::new(move |p| {
                if p == point {
                    act(p)
                }
            }),
        }
    }
}

impl<S: SessionStore> SessionStore for Around<S> {
    fn end_cycle(&self, end: EndOfCycle, cycle: CycleGuard) -> StoreFuture<'_, Option<SessionState>> {
        Box::pin(async move {
            let (before, after) = match end.leaves {
                Leaves::Unpaused => ("before-removal", "after-removal"),
                Leaves::Session(_) => ("before-save", "after-removal"),
                Leaves::Pause(_) | Leaves::AsItWas => ("before-save", "after-save"),
            };
            (self.hook)(before);
            let saved = self.inner.end_cycle(end, cycle).await?;
            (self.hook)(after);
            Ok(saved)
        })
    }
    planlock::forward_session_store!(this => this.inner;
        claim, begin_cycle, save_reserved, records);
}
