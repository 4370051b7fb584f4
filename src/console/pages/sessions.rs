//! The sessions page: every session, paused first, filterable, searchable, paged.

use minijinja::value::Value;
use serde::Serialize;

use super::super::templates::{Ago, page, render, url_segment};
use super::Forms;
use crate::review::inbox::InboxProblem;
use crate::review::overview::{SessionStatus, SessionsPage};
use crate::session::Timestamp;

/// Sessions a page lists.
pub const PER_PAGE: usize = 50;

/// The sessions whose records could not be read, listed below a page.
pub(super) fn problems(problems: &[InboxProblem]) -> Value {
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
