//! The console's pages as answers: each reads what it shows through the console's views
//! (`view.rs`: at most [`FRESH`](super::view::FRESH) old, measured from the request) and renders
//! it (`pages/`); a session or pause that is not there is a 404 naming it.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::{self, HeaderValue};

use super::flash::Flash;
use super::pages::{self, Forms, PAUSES_PER_PAGE, PER_PAGE};
use super::{Answer, State, events, html, refused};
use crate::contract::registry::Failure;
use crate::review::inbox::{InboxError, InboxFilter};
use crate::review::overview::SessionStatus;

impl State {
    /// The result `id` kept for `forms`' login, once.
    fn flash(&self, forms: &Forms<'_>, id: Option<&str>) -> Option<Flash> {
        id.and_then(|id| self.flashes.take(&forms.login.csrf, id))
    }
}

/// An error of reading: a session that is not there is a 404, anything else a 500.
fn failed(e: &InboxError) -> Answer {
    match e.code() {
        "unknown-session" => refused(StatusCode::NOT_FOUND, &e.to_string()),
        _ => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `GET /sessions`.
pub(super) async fn sessions(
    console: &Arc<State>,
    status: Option<SessionStatus>,
    words: &[String],
    page: usize,
    forms: &Forms<'_>,
) -> Answer {
    match console.sessions_page(status, words, page * PER_PAGE, PER_PAGE).await {
        Ok(list) => html(StatusCode::OK, pages::sessions(&list, status, words, page, console.pending().await, forms)),
        Err(e) => failed(&e),
    }
}

/// `GET /inbox`: the rows `filter` asks for (or, for parameters that are not a filter, every
/// row and why).
pub(super) async fn inbox(
    console: &Arc<State>,
    filter: Result<InboxFilter, crate::review::inbox::FilterError>,
    page: usize,
    flash: Option<&str>,
    forms: &Forms<'_>,
) -> Answer {
    let (filter, error) = match filter {
        Ok(filter) => (filter, None),
        Err(e) => (InboxFilter::default(), Some(e.to_string())),
    };
    match console.inbox_page(&filter, page * PAUSES_PER_PAGE, PAUSES_PER_PAGE).await {
        Ok((listing, total)) => {
            let pending = console.pending().await;
            let flash = console.flash(forms, flash);
            let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
            html(status, pages::inbox(&listing, &filter, error.as_deref(), page, total, pending, forms, flash))
        }
        Err(e) => failed(&e),
    }
}

/// `GET /inbox/{session}/{cycle}/{step}`: the pause of `session` at `cycle` and `step`, while it
/// waits (a pause that has ended is a 404 that says so and links to the session).
pub(super) async fn pause(
    console: &Arc<State>,
    session: &str,
    cycle: u64,
    step: &str,
    (flash, back): (Option<&str>, &str),
    forms: &Forms<'_>,
) -> Answer {
    let read = async {
        let paused = console.inbox.show(session).await?;
        let paused = paused.filter(|p| p.record.cycle == cycle && p.record.step_id == step);
        let log = match &paused {
            Some(_) => Some(console.inbox.records(session).await?.approval_log().await?),
            None => None,
        };
        Ok::<_, InboxError>(paused.zip(log))
    };
    match read.await {
        Ok(Some((pause, log))) => {
            let flash = console.flash(forms, flash);
            html(StatusCode::OK, pages::pause_page(&pause, &log, forms, console.pending().await, back, flash))
        }
        Ok(None) => refused(
            StatusCode::NOT_FOUND,
            &format!(
                "Nothing waits at step {step} of cycle {cycle} in session {} now: it was decided and acted on, or \
                 never paused there. Its session's page (/sessions/{}) shows what became of it.",
                crate::text::printable(session),
                super::templates::url_segment(session)
            ),
        ),
        Err(e) => failed(&e),
    }
}

/// `GET /sessions/{name}`.
pub(super) async fn session(console: &Arc<State>, name: &str, forms: &Forms<'_>) -> Answer {
    let read = async {
        let records = console.inbox.records(name).await?;
        let history = records.history(100).await?;
        let log = records.approval_log().await?;
        let paused = console.inbox.show(name).await?;
        let id = match (&paused, records.load().await?) {
            (Some(p), _) => Some(p.record.session_id),
            (None, Some(state)) => Some(state.session_id),
            (None, None) => history.entries.first().map(|e| e.session_id),
        };
        Ok::<_, InboxError>((history, log, paused, id))
    };
    match read.await {
        Ok((history, log, paused, id)) => {
            let pending = console.pending().await;
            let trace_url = console.trace_url.as_deref();
            let page = pages::session(name, id, &history.entries, paused.as_ref(), &log, forms, pending, trace_url);
            html(StatusCode::OK, page)
        }
        Err(e) => failed(&e),
    }
}

/// `GET /events`: the pulse of the sessions, as a `text/event-stream` ([`events`]).
pub(super) fn events(console: &Arc<State>, login: String) -> Answer {
    let stream = events::stream(console.clone(), login);
    let mut response = super::respond_with(StatusCode::OK, "text/event-stream", stream);
    // A proxy in front must not hold the stream back to buffer it.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
