//! The inbox as a reviewer triages it (CONTRACT §15): a row per pause with its own page's link,
//! filters and search a link carries, and a pause's page — what it shows (the payload first,
//! the earlier results folded), its digest, the forms the signed-in person may use, and what was
//! decided on the same step of that session before.

use crate::review::inbox::{InboxFilter, InboxListing, PauseState, PendingPause, Show};
use crate::session::{ApprovalEvent, ApprovalLog, PauseRef, ReviewVerdict, Timestamp};
use minijinja::value::Value;
use serde::Serialize;
use serde_json::Value as Json;

use super::super::flash::Flash;
use super::super::templates::{Ago, page, render, url_segment};
use super::{Forms, problems};

/// Pauses an inbox page lists.
pub const PAUSES_PER_PAGE: usize = 50;

/// The most characters of a reason a row shows (its page shows it whole).
const REASON_CHARS: usize = 160;

/// The most earlier events on a step a pause's page lists, newest first.
const EARLIER_EVENTS: usize = 50;

/// A pause's own page, `/inbox/{session}/{cycle}/{step}`, as a template writes it: the path
/// segments (percent-encoded) after the literal `/inbox/`.
#[derive(Serialize)]
pub struct PauseLink {
    session: String,
    cycle: u64,
    step: String,
}

impl PauseLink {
    /// The link to the pause of `session` at `cycle` and `step`.
    pub fn to(session: &str, cycle: u64, step: &str) -> PauseLink {
        PauseLink { session: url_segment(session), cycle, step: url_segment(step) }
    }
}

/// The anchor of a pause's row: what the inbox returns to after an action on it.
pub fn row_anchor(session: &str, cycle: u64, step: &str) -> String {
    let digest = crate::hash::Digest::of([session, &cycle.to_string(), step].join("\n").as_bytes()).to_string();
    ["p-", &digest[..16]].concat()
}

/// A page of the inbox: `listing` holds the page's pauses (page `at`) of `total` that `filter`
/// asks for; `pending` wait for a decision in all.
#[allow(clippy::too_many_arguments, reason = "one page's parts, named where it is called")]
pub fn inbox(
    listing: &InboxListing,
    filter: &InboxFilter,
    filter_error: Option<&str>,
    at: usize,
    total: usize,
    pending: usize,
    forms: &Forms<'_>,
    flash: Option<Flash>,
) -> String {
    #[derive(Serialize)]
    struct Row<'a> {
        anchor: String,
        link: PauseLink,
        session: &'a str,
        cycle: u64,
        step: &'a str,
        step_type: String,
        validator: &'a str,
        reason: String,
        created: Ago,
        expires: Option<Ago>,
        tone: &'static str,
        state_text: String,
    }
    #[derive(Serialize)]
    struct Choice {
        value: String,
        current: bool,
    }
    #[derive(Serialize)]
    struct Inbox<'a> {
        pending: usize,
        flash: Option<Flash>,
        filter_error: Option<&'a str>,
        rows: Vec<Row<'a>>,
        validators: Vec<Choice>,
        step_types: Vec<Choice>,
        states: Vec<Choice>,
        older_than: String,
        q: String,
        newest_first: bool,
        filtered: bool,
        /// Only the pauses waiting for the viewer are listed.
        mine: bool,
        /// The query of every pause these filters ask for.
        all_query: String,
        query: String,
        older: Option<usize>,
        newer: Option<usize>,
        shown: usize,
        total: usize,
        more: usize,
        problems: Value,
    }
    let now = Timestamp::now();
    let shown = (at * PAUSES_PER_PAGE + listing.pauses.len()).min(total);
    // A row's link carries the filter (`query`), for the pause's page to return to.
    let query = filter.to_query();
    let rows = listing
        .pauses
        .iter()
        .map(|p| {
            let r = &p.record;
            let mut reason: String = r.reason.chars().take(REASON_CHARS).collect();
            if r.reason.chars().count() > REASON_CHARS {
                reason.push('…');
            }
            let (tone, state_text) = super::standing(p, forms);
            Row {
                anchor: row_anchor(&p.session, r.cycle, &r.step_id),
                link: PauseLink::to(&p.session, r.cycle, &r.step_id),
                session: &p.session,
                cycle: r.cycle,
                step: &r.step_id,
                step_type: r.step_type.to_string(),
                validator: &r.validator.id,
                reason,
                created: Ago::of(r.created_at, now),
                expires: r.expires_at.map(|at| Ago::of(at, now)),
                tone,
                state_text,
            }
        })
        .collect();
    // The choices offered: the validators of the pauses listed, and every step type.
    let mut validators: Vec<String> = listing.pauses.iter().map(|p| p.record.validator.id.clone()).collect();
    validators.extend(filter.validator.clone());
    validators.sort();
    validators.dedup();
    let choice = |value: String, current: bool| Choice { value, current };
    let view = Inbox {
        pending,
        flash,
        filter_error,
        rows,
        validators: validators.into_iter().map(|v| choice(v.clone(), filter.validator.as_ref() == Some(&v))).collect(),
        step_types: crate::contract::registry::StepType::ALL
            .iter()
            .map(|t| choice(t.wire_name().to_owned(), filter.step_type == Some(*t)))
            .collect(),
        states: PauseState::ALL.iter().map(|s| choice(s.as_str().to_owned(), filter.state == Some(*s))).collect(),
        older_than: filter.older_than.map(|d| format!("{}s", d.as_secs())).unwrap_or_default(),
        q: filter.q.join(" "),
        newest_first: filter.newest_first,
        filtered: InboxFilter { show: None, ..filter.clone() } != InboxFilter::default(),
        mine: forms.show(filter) == Show::Mine,
        all_query: InboxFilter { show: Some(Show::All), ..filter.clone() }.to_query(),
        query,
        older: at.checked_sub(1),
        newer: (shown < total).then_some(at + 1),
        shown,
        total,
        more: listing.more,
        problems: problems(&listing.problems),
    };
    page("Inbox", pending, Some(forms.viewer()), render("inbox.html", view))
}

/// An edit the console refused (CONTRACT §22), shown again in its form: the text as typed, the
/// reason, and the validator's problems (code, JSON Pointer, message) when it found any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditKept {
    payload: String,
    reason: String,
    problems: Vec<(&'static str, String, String)>,
}

impl EditKept {
    /// The refused edit `payload`, with `reason`, and what `refused` says of it.
    pub fn of(refused: &crate::review::DecideError, payload: String, reason: String) -> EditKept {
        let problems = match refused {
            crate::review::DecideError::EditInvalid(rejection) => rejection
                .problems()
                .iter()
                .map(|p| (p.code().as_str(), p.pointer().to_owned(), p.message().to_owned()))
                .collect(),
            _ => Vec::new(),
        };
        EditKept { payload, reason, problems }
    }
}

/// A pause's own page: where, why, since when, until when, what it shows (the payload first,
/// the earlier results folded), its digest, the forms `forms`' login may use (an edit of the
/// step's payload among them, and a pending edit's diff), and what `log` holds on the same step
/// before; `back` is the inbox query it returns to; `flash` the result shown once, and `kept` a
/// refused edit shown again.
pub fn pause_page(
    pause: &PendingPause,
    log: &ApprovalLog,
    forms: &Forms<'_>,
    pending: usize,
    back: &str,
    (flash, kept): (Option<Flash>, Option<&EditKept>),
) -> String {
    /// The edit form: the payload as pretty JSON (or as typed, refused), the reason, and the
    /// validator's problems.
    #[derive(Serialize)]
    struct EditForm<'a> {
        /// The text's lines (the template puts the line breaks: a value's own control
        /// characters are shown as escapes).
        lines: Vec<String>,
        reason: &'a str,
        problems: &'a [(&'static str, String, String)],
        open: bool,
    }
    /// A pending edit: who made it, its digest, and its diff against what was shown.
    #[derive(Serialize)]
    struct Edited {
        by: String,
        digest: String,
        diff: Vec<crate::review::DiffLine>,
    }
    /// A part of what is shown, as lines of pretty JSON (the template puts the line breaks: a
    /// value's own control characters are shown as escapes).
    #[derive(Serialize)]
    struct Part {
        name: String,
        lines: Vec<String>,
    }
    /// A button of the decision form: one verdict that may be taken.
    #[derive(Serialize)]
    struct Verdict {
        verdict: &'static str,
        label: &'static str,
        hint: &'static str,
    }
    #[derive(Serialize)]
    struct Earlier {
        at: Ago,
        what: String,
        by: String,
        why: String,
        this_pause: bool,
    }
    #[derive(Serialize)]
    struct Pause<'a> {
        session: &'a str,
        /// The session's name as a path segment.
        segment: String,
        cycle: u64,
        step: &'a str,
        step_type: String,
        validator: &'a str,
        created: Ago,
        expires: Option<Ago>,
        tone: &'static str,
        state_text: String,
        reason: &'a str,
        digest: Option<String>,
        payload: Option<Part>,
        results: Vec<Part>,
        cut: bool,
        decision: Option<Earlier>,
        /// The verdicts the viewer may take, as the buttons of one form (one reason for all).
        verdicts: Vec<Verdict>,
        /// The reason typed for a refused decision, shown again in the form.
        kept: Option<String>,
        csrf: &'a str,
        pause_id: String,
        back: &'a str,
        anchor: String,
        not_yours: bool,
        read_only: bool,
        earlier: Vec<Earlier>,
        flash: Option<Flash>,
        /// The flash is a refusal shown beside the form that kept its reason.
        beside_form: bool,
        /// A refused decision's reason that no form shows again (the pause was decided).
        kept_reason: Option<String>,
        /// The viewer approved this pause already: who it waits for (issue 58).
        you_approved: Option<String>,
        /// The digest the decision form binds to: the pending edit's, else what is shown.
        current_digest: Option<String>,
        edit_form: Option<EditForm<'a>>,
        edited: Option<Edited>,
    }
    let now = Timestamp::now();
    let r = &pause.record;
    let pretty = |value: &Json| {
        serde_json::to_string_pretty(value).unwrap_or_default().split('\n').map(str::to_owned).collect::<Vec<_>>()
    };
    // What it shows: a step's input is `{payload, results}`, shown payload first; anything else
    // (a step's result, a record cut to 64 KiB) whole.
    let (payload, results) = match (&r.shown, r.shown_truncated) {
        (Some(Json::Object(shown)), false) if shown.contains_key("payload") => {
            let results = match shown.get("results") {
                Some(Json::Object(results)) => {
                    results.iter().map(|(name, value)| Part { name: name.clone(), lines: pretty(value) }).collect()
                }
                _ => Vec::new(),
            };
            (shown.get("payload").map(|p| Part { name: "payload".into(), lines: pretty(p) }), results)
        }
        (Some(value), _) => (Some(Part { name: "shown".into(), lines: pretty(value) }), Vec::new()),
        (None, _) => (None, Vec::new()),
    };
    let decided = pause.decision.is_some();
    let may = forms.may_decide(&r.validator.id) && !forms.read_only;
    // One who approved is not offered Approve again: the page says who it waits for.
    let approved = !decided && pause.approvals.contains(&forms.login.name);
    let turn = forms.turn(pause);
    let you_approved = approved.then(|| match &turn {
        Some(turn) => format!("You approved; waiting for {}.", turn.waiting_for()),
        None => "You approved; waiting for the other approvers.".to_owned(),
    });
    // Only the buttons that can be taken: an expired pause can only be abandoned.
    let offered = if decided || !may {
        Vec::new()
    } else {
        ReviewVerdict::ALL
            .into_iter()
            .filter(|v| !(approved && *v == ReviewVerdict::Approve))
            .filter(|v| *v == ReviewVerdict::Abandon || (!pause.expired && r.shown_digest.is_some()))
            .map(|v| Verdict {
                verdict: v.as_str(),
                label: match v {
                    ReviewVerdict::Approve => "Approve",
                    ReviewVerdict::Reject => "Reject",
                    ReviewVerdict::Abandon => "Abandon",
                },
                hint: match v {
                    ReviewVerdict::Approve => "the step runs on what is shown here",
                    ReviewVerdict::Reject => "what is shown is refused: the cycle is abandoned",
                    ReviewVerdict::Abandon => "the cycle is given up, without a judgement on what it shows",
                },
            })
            .collect()
    };
    let this = PauseRef::of(r);
    let earlier = log
        .events
        .iter()
        .rev()
        .filter(|e| {
            e.pause().step_id == r.step_id
                && matches!(
                    e,
                    ApprovalEvent::Decided { .. }
                        | ApprovalEvent::Voted { .. }
                        | ApprovalEvent::Abandoned { .. }
                        | ApprovalEvent::Expired { .. }
                )
        })
        .take(EARLIER_EVENTS)
        .map(|e| {
            let (by, why) = match e {
                ApprovalEvent::Decided { decision } | ApprovalEvent::Voted { decision, .. } => {
                    (super::who(decision), decision.justification.clone())
                }
                _ => (String::new(), String::new()),
            };
            let what = match e {
                ApprovalEvent::Decided { decision } => decision.verdict.past().to_owned(),
                ApprovalEvent::Voted { count, required, .. } => format!("approval {count} of {required}"),
                other => other.name().to_owned(),
            };
            Earlier { at: Ago::of(e.at(), now), what, by, why, this_pause: *e.pause() == this }
        })
        .collect();
    // A refused decision's reason goes back into the form, or, where no form is offered any
    // more (the pause was decided meanwhile), above it.
    let kept_edit = kept;
    let kept = flash.as_ref().and_then(|f| f.kept.clone()).map(|(_, reason)| reason);
    let beside_form = (kept.is_some() && !offered.is_empty()) || kept_edit.is_some();
    let kept_reason = kept.clone().filter(|_| !beside_form);
    // A pending edit (CONTRACT §22): the approvals are of it now; its diff against what was shown.
    let edited = pause.edit.as_ref().map(|edit| Edited {
        by: log
            .events
            .iter()
            .rev()
            .find_map(|e| match e {
                ApprovalEvent::Voted { decision, .. } | ApprovalEvent::Decided { decision }
                    if decision.pause == this && decision.edit.is_some() =>
                {
                    Some(super::who(decision))
                }
                _ => None,
            })
            .unwrap_or_default(),
        digest: edit.digest.to_string(),
        diff: crate::review::edit_diff(r, edit),
    });
    let current_digest = pause.edit.as_ref().map(|e| Some(e.digest)).unwrap_or(r.shown.as_ref().and(r.shown_digest));
    // Edit and approve: where the viewer may approve, before the step ran, on a whole input.
    let editable = offered.iter().any(|v| v.verdict == "approve" || approved)
        && r.phase == crate::session::BlockPhase::Pre
        && !r.shown_truncated
        && r.shown.is_some();
    let edit_form = editable.then(|| EditForm {
        lines: match kept_edit {
            Some(kept) => kept.payload.clone(),
            None => {
                let now =
                    pause.edit.as_ref().map(|e| &e.payload).or_else(|| r.shown.as_ref().and_then(|s| s.get("payload")));
                now.map(|p| serde_json::to_string_pretty(p).unwrap_or_default()).unwrap_or_default()
            }
        }
        .split('\n')
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect(),
        reason: kept_edit.map_or("", |k| k.reason.as_str()),
        problems: kept_edit.map_or(&[][..], |k| k.problems.as_slice()),
        open: kept_edit.is_some(),
    });
    let (tone, state_text) = super::standing(pause, forms);
    let view = Pause {
        session: &pause.session,
        segment: url_segment(&pause.session),
        cycle: r.cycle,
        step: &r.step_id,
        step_type: r.step_type.to_string(),
        validator: &r.validator.id,
        created: Ago::of(r.created_at, now),
        expires: r.expires_at.map(|at| Ago::of(at, now)),
        tone,
        state_text,
        reason: &r.reason,
        digest: r.shown.as_ref().and(r.shown_digest).map(|d| d.to_string()),
        payload,
        results,
        cut: r.shown_truncated,
        decision: pause.decision.as_ref().map(|d| Earlier {
            at: Ago::of(d.at, now),
            what: d.verdict.past().to_owned(),
            by: super::who(d),
            why: d.justification.clone(),
            this_pause: true,
        }),
        verdicts: offered,
        kept: kept.filter(|_| beside_form),
        csrf: &forms.login.csrf,
        pause_id: this.id(),
        back,
        anchor: row_anchor(&pause.session, r.cycle, &r.step_id),
        not_yours: !decided && !forms.read_only && !forms.may_decide(&r.validator.id),
        read_only: forms.read_only,
        earlier,
        beside_form,
        kept_reason,
        you_approved,
        current_digest: current_digest.map(|d| d.to_string()),
        edit_form,
        edited,
        flash,
    };
    let title = ["Pause: ", &r.step_id, " in ", &pause.session].concat();
    page(&title, pending, Some(forms.viewer()), render("pause.html", view))
}
