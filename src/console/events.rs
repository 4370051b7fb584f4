//! `GET /events`: the pages' live updates (CONTRACT §15), a `text/event-stream` a page's script
//! opens with `EventSource`. Twice a second the stream looks at the console's pulse — how many
//! pauses wait, and a fingerprint of every pause's state and the sessions' first page — read at
//! most once per [`FRESH`](super::cache::FRESH) for all streams together; when it changed (or
//! the count of pauses waiting for the stream's person did), it sends `{"pending": N,
//! "version": "…"}` and the page reads the rows that changed. A stream is
//! a task and a channel of four messages: no thread, a few hundred bytes, and it ends when the
//! browser goes (its next send fails).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Bytes, Frame};

use super::state::State;

/// How often a stream looks at the pulse (kept for all streams, at most 2 s old): a change is
/// sent within 2.5 s.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// How often a stream with nothing to say sends a comment (proxies close silent streams).
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// The messages a stream holds for a slow reader; past them it waits.
const CHANNEL: usize = 4;

/// The body of an event stream: what its task sends, as it sends it.
pub struct EventBody {
    messages: tokio::sync::mpsc::Receiver<Bytes>,
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.messages.poll_recv(cx).map(|message| message.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// A stream of `console`'s pulse, from now until the browser goes or the login of cookie id
/// `login` ends (signed out, expired, or its person removed from the rules).
pub fn stream(console: Arc<State>, login: String) -> EventBody {
    let (send, messages) = tokio::sync::mpsc::channel(CHANNEL);
    tokio::spawn(async move {
        // A browser that loses the stream opens it again after a second.
        if send.send(Bytes::from_static(b"retry: 1000\n\n")).await.is_err() {
            return;
        }
        let mut last = None;
        let mut quiet = Duration::ZERO;
        loop {
            // The rules as the last request read them: a stream reads no file of its own.
            let rules = console.rules.last();
            let Some(person) = console.auth.live(&login, rules.access.as_deref()) else { return };
            let (listing, version) = console.pulse().await;
            // The count is the person's own: the pauses waiting for them.
            let pulse = (console.forms(&person, &rules).pending(&listing), version);
            let message = match last == Some(pulse) {
                true if quiet >= KEEP_ALIVE => Some(": still here\n\n".to_owned()),
                true => None,
                false => Some(format!(
                    "event: pulse\ndata: {{\"pending\":{},\"version\":\"{:016x}\"}}\n\n",
                    pulse.0, pulse.1
                )),
            };
            if let Some(message) = message {
                quiet = Duration::ZERO;
                if send.send(Bytes::from(message)).await.is_err() {
                    return;
                }
            }
            last = Some(pulse);
            tokio::time::sleep(LOOK_EVERY).await;
            quiet += LOOK_EVERY;
        }
    });
    EventBody { messages }
}
