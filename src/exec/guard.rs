//! What bounds a handler call: the step's deadline, a caught panic, a late result.
//!
//! Layer 4, with the executor.

use std::future::{Future, poll_fn};
use std::panic::AssertUnwindSafe;
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::contract::plan::PlanMetadata;
use crate::contract::registry::{StepClass, StepType};
use crate::exec::validator::Verdict;

/// `PromptAssemble`'s deadline: the plan sets none for a computation, but a template is input
/// from outside (CONTRACT §11), so its render stops here at the latest.
pub const DEFAULT_PROMPT_DEADLINE: Duration = Duration::from_secs(10);

/// The step's deadline and where it comes from: the metadata's by the step's class, else the
/// step type's default; none when neither sets one.
pub(crate) fn deadline(ty: StepType, metadata: &PlanMetadata) -> Option<(Duration, &'static str)> {
    if ty == StepType::PromptAssemble {
        return Some((DEFAULT_PROMPT_DEADLINE, "the default PromptAssemble deadline"));
    }
    let timeouts = metadata.timeouts.as_ref()?;
    let (limit, key) = match ty.class() {
        StepClass::Llm => (timeouts.llm_ms, "metadata.timeouts.llmMs"),
        StepClass::Io => (timeouts.io_ms, "metadata.timeouts.ioMs"),
        StepClass::Compute => return None,
    };
    limit.map(|ms| (Duration::from_millis(ms.get()), key))
}

/// How a guarded handler call ended.
pub(crate) enum Called<T> {
    /// It returned in time (when, if a deadline made the clock be read).
    Done(T, Option<Instant>),
    /// It panicked, saying this.
    Panicked(String),
    /// Its deadline passed first, or its result came after it.
    Late,
}

/// Polls a handler's future to its end, catching a panic and keeping the deadline, which runs
/// from `deadline.0` for `deadline.1` and bounds the call only (not the validators before it). A result that
/// arrives after it is late even when the handler never yielded, so a blocking handler cannot
/// outrun its deadline; one that yields is stopped by a timer on a helper thread (armed only if
/// the first poll is pending), which works under any async runtime and under `block_on`.
pub(crate) async fn guarded_call<F: Future>(fut: F, deadline: Option<(Instant, Duration)>) -> Called<F::Output> {
    let started = deadline;
    let mut fut = pin!(fut);
    let mut timer: Option<futures_timer::Delay> = None;
    poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Err(payload) => return Poll::Ready(Called::Panicked(panic_message(payload.as_ref()))),
            Ok(Poll::Ready(out)) => {
                let Some((at, limit)) = started else { return Poll::Ready(Called::Done(out, None)) };
                let now = Instant::now();
                let late = now.duration_since(at) > limit;
                return Poll::Ready(if late { Called::Late } else { Called::Done(out, Some(now)) });
            }
            Ok(Poll::Pending) => {}
        }
        let Some((at, limit)) = started else { return Poll::Pending };
        let timer = timer.get_or_insert_with(|| futures_timer::Delay::new(limit.saturating_sub(at.elapsed())));
        if Pin::new(timer).poll(cx).is_ready() {
            return Poll::Ready(Called::Late);
        }
        Poll::Pending
    })
    .await
}

/// Runs a validator, catching a panic: `Err` holds what it said.
pub(crate) fn guard(judge: impl FnOnce() -> Verdict) -> Result<Verdict, String> {
    std::panic::catch_unwind(AssertUnwindSafe(judge)).map_err(|payload| panic_message(payload.as_ref()))
}

/// What a panic said, when it said it with a string.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => (*s).to_owned(),
        (_, Some(s)) => s.clone(),
        _ => "a panic with a non-string payload".to_owned(),
    }
}
