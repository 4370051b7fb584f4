//! The console's three pages and its login form, rendered on the server from the library's
//! reads: the sessions (paused first, filterable, paged), one session (its cycles with every
//! step, its pause and its approval log), the inbox (every pending pause with what it shows,
//! and the forms that decide on it). Each page is a view — a plain struct of what it shows — and
//! a template (`templates.rs`) that escapes every value of it.

use crate::review::inbox::{InboxListing, InboxProblem, PendingPause};
use crate::review::overview::{SessionStatus, SessionsPage};
use crate::session::{ApprovalEvent, ApprovalLog, CycleEntry, PauseRef, Timestamp};
use minijinja::value::Value;
use serde::Serialize;

use super::auth::{Auth, Login};
use super::templates::{Ago, Viewer, page, render, url_segment};

/// Sessions a page lists.
pub const PER_PAGE: usize = 50;

/// Pauses an inbox page lists.
pub const PAUSES_PER_PAGE: usize = 20;

/// The most of what a pause shows that the inbox's list puts on its page, in bytes of pretty
/// JSON: the rest is on the pause's session page, which shows it whole (at most the record's
/// 64 KiB), and where one that does not fit is decided.
pub const PREVIEW_BYTES: usize = 2048;

/// The approval log's newest events a session page lists.
pub const LOG_EVENTS: usize = 200;

/// Who is looking, and what their forms need: the login (its CSRF token, its name), whether
/// actions are served, and where the login may decide.
pub struct Forms<'a> {
    pub login: &'a Login,
    pub read_only: bool,
    pub auth: &'a Auth,
}

impl Forms<'_> {
    /// The signed-in person as the header shows them, with the sign-out form.
    fn viewer(&self) -> Viewer<'_> {
        Viewer { name: &self.login.name, verified: self.login.verified, csrf: &self.login.csrf }
    }
}

/// The sign-in page: a personal token (with an access file), or the console's token and a name
/// (one operator, names unverified).
pub fn login(error: Option<&str>, personal: bool) -> String {
    #[derive(Serialize)]
    struct Login<'a> {
        error: Option<&'a str>,
        personal: bool,
    }
    page("Sign in", 0, None, render("login.html", Login { error, personal }))
}

/// The sessions whose records could not be read, listed below a page.
fn problems(problems: &[InboxProblem]) -> Value {
    #[derive(Serialize)]
    struct Problems<'a> {
        problems: &'a [InboxProblem],
    }
    render("problems.html", Problems { problems })
}

pub fn sessions(
    list: &SessionsPage,
    filter: Option<SessionStatus>,
    at: usize,
    pending: usize,
    forms: &Forms<'_>,
) -> String {
    #[derive(Serialize)]
    struct Filter {
        name: &'static str,
        current: bool,
    }
    #[derive(Serialize)]
    struct Last<'a> {
        cycle: u64,
        end: &'static str,
        failure: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct Row<'a> {
        href: String,
        name: &'a str,
        id: String,
        status: &'static str,
        cycles: u64,
        last: Option<Last<'a>>,
        active: Option<Ago>,
    }
    #[derive(Serialize)]
    struct Sessions<'a> {
        filters: Vec<Filter>,
        rows: Vec<Row<'a>>,
        status: Option<&'static str>,
        newer: Option<usize>,
        more: Option<usize>,
        shown: usize,
        total: usize,
        problems: Value,
    }
    let now = Timestamp::now();
    let current = filter.map_or("all", SessionStatus::as_str);
    let filters = ["all", "paused", "expired", "halted", "ready"]
        .into_iter()
        .map(|name| Filter { name, current: name == current })
        .collect();
    let rows = list
        .sessions
        .iter()
        .map(|s| Row {
            href: url_segment(&s.session),
            name: &s.session,
            id: s.session_id.map(|id| id.to_string()).unwrap_or_default(),
            status: s.status.as_str(),
            cycles: s.cycles,
            last: s.last.as_ref().map(|l| Last {
                cycle: l.cycle,
                end: l.end.as_str(),
                failure: l.failure.as_ref().map(|f| f.code.as_str()),
            }),
            active: s.last.as_ref().map(|l| l.finished_at).max(s.updated_at).map(|t| Ago::of(t, now)),
        })
        .collect();
    let shown = (at * PER_PAGE + list.sessions.len()).min(list.total);
    let view = Sessions {
        filters,
        rows,
        status: filter.map(SessionStatus::as_str),
        newer: at.checked_sub(1),
        more: (shown < list.total).then_some(at + 1),
        shown,
        total: list.total,
        problems: problems(&list.problems),
    };
    page("Sessions", pending, Some(forms.viewer()), render("sessions.html", view))
}

pub fn session(
    name: &str,
    session_id: Option<uuid::Uuid>,
    history: &[CycleEntry],
    paused: Option<&PendingPause>,
    log: &ApprovalLog,
    forms: &Forms<'_>,
    pending: usize,
) -> String {
    #[derive(Serialize)]
    struct Usage {
        input: u64,
        output: u64,
    }
    #[derive(Serialize)]
    struct Failure<'a> {
        code: &'a str,
        class: String,
        step: Option<&'a str>,
    }
    #[derive(Serialize)]
    struct Step<'a> {
        index: usize,
        step_type: String,
        status: String,
        duration: String,
        usage: Option<Usage>,
        warnings: Vec<&'a str>,
    }
    #[derive(Serialize)]
    struct Intervention<'a> {
        step_id: &'a str,
        validator_id: &'a str,
        reason: &'a str,
    }
    #[derive(Serialize)]
    struct Override<'a> {
        step_id: &'a str,
        by: Option<&'a str>,
        justification: &'a str,
    }
    #[derive(Serialize)]
    struct Cycle<'a> {
        cycle: u64,
        end: &'static str,
        finished: Ago,
        usage: Option<Usage>,
        failure: Option<Failure<'a>>,
        steps: Vec<Step<'a>>,
        interventions: Vec<Intervention<'a>>,
        overrides: Vec<Override<'a>>,
    }
    #[derive(Serialize)]
    struct Event<'a> {
        event: &'static str,
        cycle: u64,
        step: &'a str,
        detail: String,
    }
    #[derive(Serialize)]
    struct Session<'a> {
        name: &'a str,
        session_id: Option<String>,
        pause: Option<Value>,
        cycles: Vec<Cycle<'a>>,
        log: Vec<Event<'a>>,
        log_total: usize,
    }
    let now = Timestamp::now();
    let cycles = history
        .iter()
        .map(|entry| Cycle {
            cycle: entry.cycle,
            end: entry.end.as_str(),
            finished: Ago::of(entry.finished_at, now),
            usage: entry.report.usage().map(|u| Usage { input: u.input, output: u.output }),
            failure: entry.failure.as_ref().map(|f| Failure {
                code: &f.code,
                class: format!("{:?}", f.class),
                step: f.step_id.as_deref(),
            }),
            steps: entry
                .report
                .steps
                .iter()
                .map(|step| Step {
                    index: step.index,
                    step_type: step.step_type.to_string(),
                    status: format!("{:?}", step.status).to_lowercase(),
                    duration: format!("{:.1?}", step.duration),
                    usage: step.usage.map(|u| Usage { input: u.input, output: u.output }),
                    warnings: step.warnings.iter().map(|w| w.message.as_str()).collect(),
                })
                .collect(),
            interventions: (entry.report.interventions.iter())
                .map(|i| Intervention { step_id: &i.step_id, validator_id: &i.validator_id, reason: &i.reason })
                .collect(),
            overrides: (entry.report.overrides.iter())
                .map(|o| Override { step_id: &o.step_id, by: o.by.as_deref(), justification: &o.justification })
                .collect(),
        })
        .collect();
    let log_events = log
        .events
        .iter()
        .rev()
        .take(LOG_EVENTS)
        .map(|event| {
            let pause = event.pause();
            let detail = match event {
                ApprovalEvent::Decided { decision } => {
                    format!("{} by {}: {}", decision.verdict, decision.by, decision.justification)
                }
                ApprovalEvent::Consumed { cycle, completed, .. } => {
                    format!("by cycle {cycle}{}", if *completed { ", completed" } else { "" })
                }
                _ => String::new(),
            };
            Event { event: event.name(), cycle: pause.cycle, step: &pause.step_id, detail }
        })
        .collect();
    let view = Session {
        name,
        // The id telemetry files its traces under (`session.id`, `gen_ai.conversation.id`).
        session_id: session_id.map(|id| id.to_string()),
        pause: paused.map(|pause| pause_block(pause, forms, now, Shown::Whole)),
        cycles,
        log: log_events,
        log_total: log.events.len(),
    };
    page(&format!("Session {name}"), pending, Some(forms.viewer()), render("session.html", view))
}

/// How much of what a pause shows a page puts on it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    /// All of it (the session page: where a pause is decided).
    Whole,
    /// At most [`PREVIEW_BYTES`] (the inbox's list): a pause that shows more is decided on its
    /// session page, so that nobody approves what the page did not show.
    Preview,
}

/// A pause: where, why, since when, until when, what it shows (with its digest), and the forms.
fn pause_block(pause: &PendingPause, forms: &Forms<'_>, now: Timestamp, how: Shown) -> Value {
    #[derive(Serialize)]
    struct Form {
        verdict: &'static str,
        label: &'static str,
    }
    #[derive(Serialize)]
    struct Decision<'a> {
        verdict: String,
        by: &'a str,
        justification: &'a str,
    }
    #[derive(Serialize)]
    struct Pause<'a> {
        href: String,
        session: &'a str,
        cycle: u64,
        step: &'a str,
        step_type: String,
        validator: &'a str,
        created: Ago,
        expires: Option<Ago>,
        expired: bool,
        reason: &'a str,
        digest: Option<String>,
        shown: Vec<&'a str>,
        cut: bool,
        decision: Option<Decision<'a>>,
        forms: Vec<Form>,
        decide_there: bool,
        csrf: &'a str,
        pause_id: String,
        approvals: Option<String>,
        not_yours: bool,
    }
    let r = &pause.record;
    let pretty = r.shown.as_ref().map(|shown| serde_json::to_string_pretty(shown).unwrap_or_default());
    let mut cut = false;
    let shown = match (&pretty, &r.shown_digest) {
        (Some(pretty), Some(_)) => {
            let end = if how == Shown::Preview && pretty.len() > PREVIEW_BYTES {
                cut = true;
                (0..=PREVIEW_BYTES).rev().find(|at| pretty.is_char_boundary(*at)).unwrap_or(0)
            } else {
                pretty.len()
            };
            pretty[..end].split('\n').collect()
        }
        _ => Vec::new(),
    };
    let decided = pause.decision.is_some();
    // The forms name the pause they were shown for: a later pause of the same session (the
    // re-run of a rejected cycle may show the same thing) is not decided by them.
    let may = forms.auth.may_decide(forms.login, &r.validator.id);
    let forms_shown = if decided || forms.read_only || cut || !may {
        Vec::new()
    } else {
        [("approve", "Approve"), ("reject", "Reject")]
            .into_iter()
            .filter(|(verdict, _)| !(*verdict == "approve" && pause.expired))
            .map(|(verdict, label)| Form { verdict, label })
            .collect()
    };
    let view = Pause {
        href: url_segment(&pause.session),
        session: &pause.session,
        cycle: r.cycle,
        step: &r.step_id,
        step_type: r.step_type.to_string(),
        validator: &r.validator.id,
        created: Ago::of(r.created_at, now),
        expires: r.expires_at.map(|at| Ago::of(at, now)),
        expired: pause.expired,
        reason: &r.reason,
        digest: r.shown.as_ref().and(r.shown_digest).map(|d| d.to_string()),
        shown,
        cut,
        decision: pause.decision.as_ref().map(|d| Decision {
            verdict: d.verdict.to_string(),
            by: &d.by,
            justification: &d.justification,
        }),
        forms: forms_shown,
        decide_there: !decided && cut && !forms.read_only && may,
        csrf: &forms.login.csrf,
        approvals: (!pause.approvals.is_empty()).then(|| pause.state()),
        not_yours: !decided && !may,
        pause_id: PauseRef::of(r).id(),
    };
    render("pause.html", view)
}

/// The pauses of `listing` waiting for a decision (one decided waits only for its session's next
/// run).
pub fn undecided(listing: &InboxListing) -> usize {
    listing.pauses.iter().filter(|p| p.decision.is_none()).count() + listing.more
}

/// A page of the inbox: `listing` holds the page's pauses (page `at`), of `total` waiting in
/// all; `pending` of them wait for a decision.
pub fn inbox(
    listing: &InboxListing,
    at: usize,
    total: usize,
    pending: usize,
    forms: &Forms<'_>,
    notice: Option<&str>,
) -> String {
    #[derive(Serialize)]
    struct Inbox<'a> {
        pending: usize,
        notice: Option<&'a str>,
        pauses: Vec<Value>,
        older: Option<usize>,
        newer: Option<usize>,
        shown: usize,
        total: usize,
        more: usize,
        problems: Value,
    }
    let now = Timestamp::now();
    let shown = (at * PAUSES_PER_PAGE + listing.pauses.len()).min(total);
    let view = Inbox {
        pending,
        notice,
        pauses: listing.pauses.iter().map(|p| pause_block(p, forms, now, Shown::Preview)).collect(),
        older: at.checked_sub(1),
        newer: (shown < total.saturating_sub(listing.more)).then_some(at + 1),
        shown,
        total,
        more: listing.more,
        problems: problems(&listing.problems),
    };
    page("Inbox", pending, Some(forms.viewer()), render("inbox.html", view))
}
