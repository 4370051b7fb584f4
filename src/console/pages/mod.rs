//! The console's pages and its login form, rendered on the server from the library's reads: the
//! sessions (paused first, filterable, searchable, paged), one session ([`history`]: each cycle
//! once, with its pause, decisions and failure), the inbox ([`inbox`]: a row per pause, filters
//! and search) and a pause's own page (what it shows, the forms that decide on it, what was
//! decided on its step before). Each page is a view — a plain struct of what it shows — and a
//! template (`templates.rs`) that escapes every value of it.

mod history;
mod inbox;

pub use history::session;
pub use inbox::{EditKept, PAUSES_PER_PAGE, inbox, pause_page, row_anchor};

use crate::review::inbox::{InboxFilter, InboxListing, InboxProblem, PendingPause, Show};
use crate::review::overview::{SessionStatus, SessionsPage};
use crate::session::Timestamp;
use minijinja::value::Value;
use serde::Serialize;

use super::auth::{Auth, Login};
use super::rules::Rules;
use super::templates::{Ago, Viewer, page, render, url_segment};

/// Who decided, as a page shows it: the approvers (or `by`), and "(unverified name)" after a
/// name no rules vouched for (CONTRACT §18: wherever a decision is shown).
fn who(decision: &crate::session::ReviewDecision) -> String {
    let names = decision.approved_by().join(", ");
    match decision.verified {
        Some(false) => format!("{names} (unverified name)"),
        _ => names,
    }
}

/// How a pause stands as a page shows it (issue 58): the class its colour is by — `waiting`,
/// `partial` (some of several approvals), `approved` (green), `rejected` and `abandoned` (red),
/// `expired` — and its words. A decided pause is on its way: approved, it runs ("approved —
/// running"); rejected or abandoned, its cycle ends.
/// A partial approval names who approved and who may still (CONTRACT §18) under the rules in
/// force here: installed ones (the listing's turn), or the console's own access file.
fn standing(pause: &PendingPause, forms: &Forms<'_>) -> (&'static str, String) {
    use crate::session::ReviewVerdict;
    let turn = forms.turn(pause).filter(|_| !pause.approvals.is_empty());
    match &pause.decision {
        _ if pause.expired => ("expired", pause.state()),
        Some(d) => match d.verdict {
            ReviewVerdict::Approve => ("approved", format!("{} — running", pause.state())),
            ReviewVerdict::Reject => ("rejected", format!("{} — ending the cycle", pause.state())),
            ReviewVerdict::Abandon => ("abandoned", format!("{} — ending the cycle", pause.state())),
        },
        None if let Some(turn) = turn => ("partial", turn.to_string()),
        None if !pause.approvals.is_empty() => ("partial", pause.state()),
        None => ("waiting", pause.state()),
    }
}

/// Sessions a page lists.
pub const PER_PAGE: usize = 50;

/// Who is looking, and what their forms need: the login (its CSRF token, its name), whether
/// actions are served, and where the login may decide.
pub struct Forms<'a> {
    pub login: &'a Login,
    pub read_only: bool,
    pub rules: &'a Rules,
}

impl Forms<'_> {
    /// The signed-in person as the header shows them, with the sign-out form.
    fn viewer(&self) -> Viewer<'_> {
        Viewer {
            name: &self.login.name,
            verified: self.login.verified,
            csrf: &self.login.csrf,
            read_only: self.read_only,
            rules_problem: self.rules.problem.as_deref(),
        }
    }

    /// Whether the login may decide on `validator`'s pauses under the rules in force.
    pub fn may_decide(&self, validator: &str) -> bool {
        Auth::may_decide(self.login, validator, self.rules.access.as_deref())
    }

    /// Whose turn it is on `pause` under the rules in force here: installed ones (the listing's
    /// turn), or the console's own access file; `None` once it is decided, or without rules.
    pub fn turn(&self, pause: &PendingPause) -> Option<crate::review::Turn> {
        match (&pause.turn, self.rules.access.as_deref()) {
            _ if pause.decision.is_some() => None,
            (Some(turn), _) => Some(turn.clone()),
            (None, Some(rules)) => {
                Some(crate::review::Turn::of(&rules.rule(&pause.record.validator.id), pause.approvals.clone()))
            }
            (None, None) => None,
        }
    }

    /// Whether `pause` waits for the login (issue 58): one they may decide, not expired, not
    /// decided, and not approved by them already. What the inbox's count counts, and what its
    /// default view ([`Show::Mine`]) lists.
    pub fn waits_for_me(&self, pause: &PendingPause) -> bool {
        !self.read_only
            && !pause.expired
            && pause.decision.is_none()
            && !pause.approvals.contains(&self.login.name)
            && self.may_decide(&pause.record.validator.id)
    }

    /// How many of `listing`'s pauses wait for the login (the number in the title and the
    /// navigation; a listing holds the oldest [`MAX_INBOX`](crate::review::inbox::MAX_INBOX)).
    pub fn pending(&self, listing: &InboxListing) -> usize {
        listing.pauses.iter().filter(|p| self.waits_for_me(p)).count()
    }

    /// Whose pauses `filter` lists for the login: what it says, else only theirs — every pause
    /// for a read-only console's reader, who decides none.
    pub fn show(&self, filter: &InboxFilter) -> Show {
        filter.show.unwrap_or(if self.read_only { Show::All } else { Show::Mine })
    }
}

/// The sign-in page: a personal token (with an access file), or the console's token and a name
/// (one operator, names unverified); `next` is the page it lands on after.
pub fn login(error: Option<&str>, (personal, read_only): (bool, bool), next: Option<&str>) -> String {
    #[derive(Serialize)]
    struct Login<'a> {
        error: Option<&'a str>,
        personal: bool,
        read_only: bool,
        next: Option<&'a str>,
    }
    page("Sign in", 0, None, render("login.html", Login { error, personal, read_only, next }))
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
    words: &[String],
    at: usize,
    pending: usize,
    forms: &Forms<'_>,
) -> String {
    #[derive(Serialize)]
    struct Filter {
        name: &'static str,
        current: bool,
        query: String,
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
        q: String,
        /// The query of the page's links: its status and words.
        query: String,
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
        .map(|name| {
            let mut query = form_urlencoded::Serializer::new(String::new());
            (name != "all").then(|| query.append_pair("status", name));
            (!words.is_empty()).then(|| query.append_pair("q", &words.join(" ")));
            Filter { name, current: name == current, query: query.finish() }
        })
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
        q: words.join(" "),
        query: {
            let mut query = form_urlencoded::Serializer::new(String::new());
            filter.map(|s| query.append_pair("status", s.as_str()));
            (!words.is_empty()).then(|| query.append_pair("q", &words.join(" ")));
            query.finish()
        },
        newer: at.checked_sub(1),
        more: (shown < list.total).then_some(at + 1),
        shown,
        total: list.total,
        problems: problems(&list.problems),
    };
    page("Sessions", pending, Some(forms.viewer()), render("sessions.html", view))
}
