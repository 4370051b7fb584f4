//! The console's pages as answers: each reads what it shows through the console's views
//! (`view.rs`: at most [`FRESH`](super::cache::FRESH) old, measured from the request) and renders
//! it (`pages/`); a session or pause that is not there is a 404 naming it.

use std::sync::Arc;

use hyper::StatusCode;
use hyper::header::{self, HeaderValue};

use super::answer::{Answer, html, refused, respond_with};
use super::events;
use super::flash::Flash;
use super::pages::{self, Forms, PAUSES_PER_PAGE, PER_PAGE};
use super::state::State;
use crate::contract::registry::Failure;
use crate::review::inbox::{InboxError, InboxFilter, PendingPause, Show};
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
        Ok(list) => {
            html(StatusCode::OK, pages::sessions(&list, status, words, page, console.pending(forms).await, forms))
        }
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
    let mine = forms.show(&filter) == Show::Mine;
    let keep = |p: &PendingPause| !mine || forms.waits_for_me(p);
    match console.inbox_page(&filter, keep, page * PAUSES_PER_PAGE, PAUSES_PER_PAGE).await {
        Ok((listing, total)) => {
            let pending = console.pending(forms).await;
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
        let waiting = console.inbox.show(session).await?;
        let log = console.inbox.records(session).await?.approval_log().await?;
        Ok::<_, InboxError>((waiting, log))
    };
    match read.await {
        Ok((Some(pause), log)) if pause.record.cycle == cycle && pause.record.step_id == step => {
            let flash = console.flash(forms, flash);
            html(
                StatusCode::OK,
                pages::pause_page(&pause, &log, forms, console.pending(forms).await, back, (flash, None)),
            )
        }
        // It ended: say what became of it, with the way to its session and the pause there now.
        Ok((waiting, log)) => {
            let (what, outcome) = what_became_of(&log, cycle, step);
            let current = waiting.as_ref().map(|p| (p.record.cycle, p.record.step_id.as_str()));
            html(StatusCode::NOT_FOUND, super::templates::ended(session, (&what, outcome), current))
        }
        Err(e) => failed(&e),
    }
}

/// What the approval log says became of the latest pause at `cycle` and `step`, and how it
/// ended as a status names it (`completed`, `failed`, `rejected`, `abandoned`, `expired`), once
/// it did.
fn what_became_of(log: &crate::session::ApprovalLog, cycle: u64, step: &str) -> (String, Option<&'static str>) {
    use crate::session::ApprovalEvent;
    let step_shown = crate::text::printable(step);
    let mine = |e: &&ApprovalEvent| e.pause().cycle == cycle && e.pause().step_id == step;
    let mut said = Vec::new();
    let mut outcome = None;
    for event in log.events.iter().filter(mine) {
        match event {
            ApprovalEvent::Decided { decision } => {
                said.push(format!("{} by {} at {}", decision.verdict.past(), decision.who(), decision.at));
                if decision.verdict == crate::session::ReviewVerdict::Reject {
                    outcome = Some("rejected");
                }
            }
            ApprovalEvent::Consumed { cycle: by, completed, .. } => {
                outcome = Some(if *completed { "completed" } else { "failed" });
                said.push(format!(
                    "acted on by cycle {by}{}",
                    if *completed { ", which completed" } else { ", which failed after it" }
                ))
            }
            ApprovalEvent::Stale { .. } => {
                said.push("stale: the re-run met something other than what was approved".into())
            }
            ApprovalEvent::Superseded { .. } => said.push("superseded: the re-run did not need it".into()),
            ApprovalEvent::Abandoned { at, .. } => {
                outcome = Some("abandoned");
                said.push(format!("abandoned at {at}"))
            }
            ApprovalEvent::Expired { at, .. } => {
                outcome = Some("expired");
                said.push(format!("expired at {at}"))
            }
            _ => {}
        }
    }
    let what = match said.is_empty() {
        true => format!("Nothing waits at step {step_shown} of cycle {cycle}: no pause there is on record."),
        false => format!("The pause at step {step_shown} of cycle {cycle} was {}.", said.join("; then ")),
    };
    (what, outcome)
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
            let pending = console.pending(forms).await;
            let trace_url = console.trace_url.as_deref();
            let page = pages::session(name, id, &history.entries, paused.as_ref(), &log, forms, pending, trace_url);
            html(StatusCode::OK, page)
        }
        Err(e) => failed(&e),
    }
}

/// `GET /events`: the pulse of the sessions, as a `text/event-stream`
/// ([`events`](mod@super::events)).
pub(super) fn events(console: &Arc<State>, login: String) -> Answer {
    let stream = events::stream(console.clone(), login);
    let mut response = respond_with(StatusCode::OK, "text/event-stream", stream);
    // A proxy in front must not hold the stream back to buffer it.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
