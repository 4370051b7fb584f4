//! A session store that forwards every call to another and calls a hook at the named points
//! around its writes: `before-save` and `after-save` (around the end of a cycle: its pin, its
//! state or pause, its history entry), `before-removal`, `after-removal`. The crash tests stop
//! or abort the process there.

use planlock::session::{CycleGuard, EndOfCycle, SessionState, SessionStore, StoreFuture};

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
            (self.hook)("before-save");
            let saved = self.inner.end_cycle(end, cycle).await?;
            (self.hook)("after-save");
            Ok(saved)
        })
    }
    fn remove_intervention(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            (self.hook)("before-removal");
            self.inner.remove_intervention().await?;
            (self.hook)("after-removal");
            Ok(())
        })
    }
    planlock::forward_session_store!(this => this.inner;
        claim, begin_cycle, notices_with_record, save_reserved, record_cycle, records);
}
