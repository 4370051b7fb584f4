//! `POST /inbox/{session}/{verdict}`: a decision on a session's pause — approve, reject or
//! abandon — by the signed-in person, where they may decide, bound to the pause and to what its
//! page showed. The answer returns to the inbox, to the row acted on, with the result shown once
//! ([`Flash`]): a success, or an error naming the session and step.

use std::sync::Arc;

use hyper::StatusCode;

use super::answer::{Answer, redirect, refused};
use super::auth::{Auth, Login};
use super::flash::Flash;
use super::pages::{EditKept, row_anchor};
use super::posted::Posted;
use super::rules::Rules;
use super::state::State;
use super::templates::url_segment;
use crate::contract::registry::Failure;
use crate::review::inbox::{InboxError, InboxFilter};
use crate::review::{DecideError, Decided, decide_shown, edit_of, read_pause};
use crate::session::{Recorded, ReviewDecision, ReviewVerdict, Via};
use crate::text::printable;

/// Decides `verdict` on `session`'s pause for `login`, with the `form` its page posted; see the
/// module docs.
pub(super) async fn decide_on(
    console: &Arc<State>,
    session: String,
    verdict: ReviewVerdict,
    (login, rules): (&Login, &Rules),
    form: Posted,
) -> Answer {
    act_on(console, session, Action::Decide(verdict), (login, rules), form).await
}

/// `POST /inbox/{session}/edit`: edit and approve (CONTRACT §22) — the form's `payload` (JSON)
/// in place of the paused step's, checked by the plan's validator. A payload the validator
/// refuses is answered with the pause's page (422): its problems beside the form, the text and
/// the reason kept.
pub(super) async fn edit_on(
    console: &Arc<State>,
    session: String,
    (login, rules): (&Login, &Rules),
    form: Posted,
) -> Answer {
    act_on(console, session, Action::Edit, (login, rules), form).await
}

/// What a decision's form asks for.
#[derive(Clone, Copy)]
enum Action {
    Decide(ReviewVerdict),
    Edit,
}

async fn act_on(
    console: &Arc<State>,
    session: String,
    action: Action,
    (login, rules): (&Login, &Rules),
    form: Posted,
) -> Answer {
    let verdict = match action {
        Action::Decide(verdict) => verdict,
        Action::Edit => ReviewVerdict::Approve,
    };
    if console.read_only {
        return refused(StatusCode::FORBIDDEN, "this console is read-only");
    }
    let fields = form.fields;
    let Some(name) = console.session_name(session) else { return refused(StatusCode::NOT_FOUND, "no such session") };
    let Some(pause_id) = fields.get("pause") else {
        return refused(StatusCode::BAD_REQUEST, "the form does not name the pause it was shown for");
    };
    // Where to return: the inbox as the page had it filtered, read as a filter (nothing else of
    // the form goes into the address).
    let back = fields.get("back").map(String::as_str).unwrap_or("");
    let back = InboxFilter::from_pairs(
        form_urlencoded::parse(back.as_bytes()).collect::<Vec<_>>().iter().map(|(k, v)| (k.as_ref(), v.as_ref())),
    )
    .map(|f| f.to_query())
    .unwrap_or_default();
    let reason = fields.get("reason").cloned().unwrap_or_default();
    let shown_digest = fields.get("digest").and_then(|d| d.parse().ok());
    let outcome = async {
        // The session's records, and its pause read once for the whole request.
        let records = console.inbox.records(&name).await?;
        let Some(record) = read_pause(records.as_ref()).await? else {
            let text = format!("Not recorded: nothing is paused in {} any more.", printable(&name));
            return Ok::<_, InboxError>(Some(Outcome::Done(Flash::error(text), Back::Inbox(String::new()))));
        };
        let r = &record;
        let at = format!("{} at step {} ({})", printable(&name), printable(&r.step_id), r.step_type);
        let anchor = row_anchor(&name, r.cycle, &r.step_id);
        // Only where the login may decide: refused before anything is read further.
        if !Auth::may_decide(login, &r.validator.id, rules.access.as_deref()) {
            return Ok(None);
        }
        let mut decision = ReviewDecision::new(r, verdict, login.name.clone(), reason.clone()).via(Via::Console);
        // Bound to what this page showed: a pause that changed since is refused.
        decision.shown_digest = shown_digest;
        // An edit's text as it was typed: a refusal shows it again.
        let typed = matches!(action, Action::Edit).then(|| fields.get("payload").cloned().unwrap_or_default());
        if let Some(text) = &typed {
            let edit = match serde_json::from_str(text) {
                Ok(payload) => edit_of(records.as_ref(), r, payload).await,
                Err(e) => Err(DecideError::Invalid(format!("the payload is not JSON: {e}"))),
            };
            match edit {
                Ok(edit) => decision = decision.editing(edit),
                // Refused: the pause's page again, the problems beside the text kept as typed.
                Err(e) => {
                    let refusal = Flash::error(format!("Not recorded on {at}: {e} ({})", e.code()));
                    let kept = EditKept::of(&e, text.clone(), reason);
                    return Ok(Some(Outcome::EditRefused(refusal, Box::new(kept))));
                }
            }
        }
        // And to the pause it showed: a later one of the same session is not decided by it.
        let decision = match decision.on_pause(pause_id) {
            Ok(decision) => decision,
            Err(e) => {
                let refusal = Flash::error(format!("Not recorded on {at}: {e} ({})", e.code()));
                return Ok(Some(Outcome::Done(refusal, Back::Inbox(String::new()))));
            }
        };
        // Installed rules are read by `decide` itself; rules given to this console are passed.
        let given = if console.rules.installed() { None } else { rules.access.as_deref() };
        let flash = match decide_shown(records.as_ref(), r, &decision, given).await {
            Ok(Decided { recorded: Recorded::Counted { approvals, required }, turn, .. }) => {
                let turn = turn.map(|t| format!(" ({t})")).unwrap_or_default();
                Flash::ok(format!(
                    "Recorded: approval {approvals} of {required} on {at}; it waits for {} more{turn}.",
                    required.saturating_sub(approvals)
                ))
            }
            Ok(_) => Flash::ok(format!(
                "Recorded: {} on {at} (a running worker acts on it at once; without one, the session's next run does).",
                if decision.edit.is_some() { "your edit, approved," } else { decision.verdict.as_str() }
            )),
            // Refused (a blank reason, a pause decided meanwhile): back to the pause's page, the
            // refusal beside the form and the reason as it was typed.
            Err(e) => {
                let refusal = Flash::error(format!("Not recorded on {at}: {e} ({})", e.code()));
                if let Some(text) = typed {
                    return Ok(Some(Outcome::EditRefused(refusal, Box::new(EditKept::of(&e, text, reason)))));
                }
                let page = format!("/inbox/{}/{}/{}", url_segment(&name), r.cycle, url_segment(&r.step_id));
                return Ok(Some(Outcome::Done(refusal.keeping(verdict.as_str(), reason), Back::Pause(page))));
            }
        };
        Ok(Some(Outcome::Done(flash, Back::Inbox(anchor))))
    };
    match outcome.await {
        // A refused edit's text may be 64 KiB: it is not kept on the server, the page is answered.
        Ok(Some(Outcome::EditRefused(flash, kept))) => {
            let page = console.inbox.show(&name).await.ok().flatten();
            let log = match console.inbox.records(&name).await {
                Ok(records) => records.approval_log().await.unwrap_or_default(),
                Err(_) => Default::default(),
            };
            let forms = console.forms(login, rules);
            match page {
                Some(pause) => {
                    let pending = console.pending(&forms).await;
                    let page =
                        super::pages::pause_page(&pause, &log, &forms, pending, &back, (Some(flash), Some(&kept)));
                    super::answer::html(StatusCode::UNPROCESSABLE_ENTITY, page)
                }
                None => refused(StatusCode::NOT_FOUND, &flash.text),
            }
        }
        Ok(None) => refused(
            StatusCode::FORBIDDEN,
            &format!(
                "{} may not decide on this pause: the access file does not list them among its validator's approvers (not-an-approver)",
                printable(&login.name)
            ),
        ),
        Ok(Some(Outcome::Done(flash, to))) => {
            console.decided();
            let id = console.flashes.put(&login.csrf, flash);
            let query = [back.as_str(), &["flash=", &id].concat()]
                .iter()
                .filter(|p| !p.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join("&");
            match to {
                Back::Inbox(anchor) if anchor.is_empty() => redirect(&["/inbox?", &query].concat()),
                Back::Inbox(anchor) => redirect(&["/inbox?", &query, "#", &anchor].concat()),
                Back::Pause(page) => redirect(&[page.as_str(), "?", &query].concat()),
            }
        }
        // A name that is no session here: nothing was read or written.
        Err(e) if e.code() == "unknown-session" => refused(StatusCode::NOT_FOUND, &e.to_string()),
        Err(e) => refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// Where a decision's answer returns to: the inbox at a row's anchor (empty: its top), a
/// pause's own page (a refusal, beside its form).
enum Back {
    Inbox(String),
    Pause(String),
}

/// What a decision's form led to: a result shown where `Back` says, or a refused edit, answered
/// with the pause's page at once.
enum Outcome {
    Done(Flash, Back),
    EditRefused(Flash, Box<EditKept>),
}
