//! The console's templates (`templates/*.html`, minijinja): every value a page prints is escaped
//! for HTML by default — `& < > " ' /` as entities, after control, bidi and zero-width characters
//! are made visible (`\u{202e}`), so a value from a plan, a record, a store or a server can
//! neither end its element nor reorder what a person reads. Only what a template itself rendered
//! (a page's main part, a pause's block) is passed on as safe. No page is built with `format!`.

use std::sync::LazyLock;

use crate::session::Timestamp;
use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, Output, State, UndefinedBehavior};
use serde::Serialize;

/// The templates, named as their files are.
const TEMPLATES: &[(&str, &str)] = &[
    ("page.html", include_str!("templates/page.html")),
    ("refused.html", include_str!("templates/refused.html")),
    ("ended.html", include_str!("templates/ended.html")),
    ("login.html", include_str!("templates/login.html")),
    ("problems.html", include_str!("templates/problems.html")),
    ("sessions.html", include_str!("templates/sessions.html")),
    ("session.html", include_str!("templates/session.html")),
    ("pause.html", include_str!("templates/pause.html")),
    ("inbox.html", include_str!("templates/inbox.html")),
];

static ENV: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    // A name a template misspells is an error its test sees, not an empty cell.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_formatter(visible_then_escaped);
    for (name, source) in TEMPLATES {
        // The templates are part of the program; `tests` renders every one.
        env.add_template(name, source).expect("a console template parses");
    }
    env
});

/// The formatter: a string that is not marked safe has its invisible characters shown
/// (`crate::text::escape_invisible`) before minijinja's HTML escaping.
fn visible_then_escaped(
    out: &mut Output<'_>,
    state: &mut State<'_, '_>,
    value: &Value,
) -> Result<(), minijinja::Error> {
    match value.as_str() {
        Some(text) if !value.is_safe() => {
            let shown = crate::text::escape_invisible(text);
            minijinja::escape_formatter(out, state, &Value::from(shown.as_ref()))
        }
        _ => minijinja::escape_formatter(out, state, value),
    }
}

const NOT_RENDERED: &str = "<p class=\"error\">This part of the page could not be rendered.</p>";

/// Template `name` rendered with `view`, as HTML that later templates take as it is.
pub fn render(name: &str, view: impl Serialize) -> Value {
    let html = ENV
        .get_template(name)
        .and_then(|t| t.render(Value::from(minijinja::value::Serde(view))))
        // Only a defect of a template lands here (every one is rendered by the tests); the
        // page says so rather than showing half of itself.
        .unwrap_or_else(|_| NOT_RENDERED.to_owned());
    Value::from_safe_string(html)
}

/// The signed-in person, as every page's header shows them (with the sign-out form's CSRF token).
#[derive(Serialize)]
pub struct Viewer<'a> {
    pub name: &'a str,
    pub verified: bool,
    pub csrf: &'a str,
    /// The console serves no action: every page says so at its top.
    pub read_only: bool,
    /// Why the access file as written now is not in force (the last good rules are): every page
    /// says so at its top.
    pub rules_problem: Option<&'a str>,
}

/// A whole page: `title`, the navigation with the pending count and who is signed in (with the
/// sign-out form), and `main` (rendered).
pub fn page(title: &str, pending: usize, viewer: Option<Viewer<'_>>, main: Value) -> String {
    #[derive(Serialize)]
    struct Page<'a> {
        title: &'a str,
        pending: usize,
        viewer: Option<Viewer<'a>>,
        main: Value,
    }
    render("page.html", Page { title, pending, viewer, main }).to_string()
}

/// A page that refuses a request, saying why.
pub fn refused(why: &str) -> String {
    #[derive(Serialize)]
    struct Refused<'a> {
        why: &'a str,
    }
    page("Refused", 0, None, render("refused.html", Refused { why }))
}

/// The page of a pause that no longer waits: `what` became of it (and its `outcome`, a status's
/// name, once it has one), with links to its session and to the pause waiting there now, if one
/// is (`current`: its cycle and step).
pub fn ended(session: &str, (what, outcome): (&str, Option<&str>), current: Option<(u64, &str)>) -> String {
    #[derive(Serialize)]
    struct Current<'a> {
        cycle: u64,
        step: String,
        step_id: &'a str,
    }
    #[derive(Serialize)]
    struct Ended<'a> {
        session: &'a str,
        segment: String,
        what: &'a str,
        outcome: Option<&'a str>,
        current: Option<Current<'a>>,
    }
    let current = current.map(|(cycle, step_id)| Current { cycle, step: url_segment(step_id), step_id });
    let view = Ended { session, segment: url_segment(session), what, outcome, current };
    page("Pause ended", 0, None, render("ended.html", view))
}

/// A time as a template shows it: exact (`at`, for `datetime` and `title`) and as a person reads
/// it beside now (`ago`: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`).
#[derive(Serialize)]
pub struct Ago {
    at: String,
    ago: String,
}

impl Ago {
    pub fn of(at: Timestamp, now: Timestamp) -> Ago {
        let secs = now.since(at).as_secs();
        let (n, unit) = match secs {
            0..60 => (secs, "s"),
            60..3600 => (secs / 60, "min"),
            3600..86_400 => (secs / 3600, "h"),
            _ => (secs / 86_400, "d"),
        };
        Ago { at: at.to_string(), ago: [n.to_string(), unit.to_owned(), "ago".to_owned()].join(" ") }
    }
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded (no `/`,
/// no `..` that a browser would resolve).
pub fn url_segment(text: &str) -> String {
    const RESERVED: &percent_encoding::AsciiSet =
        &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');
    percent_encoding::utf8_percent_encode(text, RESERVED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_cannot_leave_their_context_or_hide() {
        let text = |s: &str| render("refused.html", serde_json::json!({ "why": s })).to_string();
        assert_eq!(text("<script>x</script>"), "<h1>Refused</h1><p>&lt;script&gt;x&lt;&#x2f;script&gt;</p>");
        assert!(text("\"onmouseover=alert(1)").contains("&quot;onmouseover=alert(1)"));
        assert!(text("a\u{1b}[31mb\u{202e}c").contains("a\\u{1b}[31mb\\u{202e}c"));
        assert_eq!(url_segment("a/../b c?é"), "a%2F..%2Fb%20c%3F%C3%A9");
    }

    #[test]
    fn every_template_parses() {
        for (name, _) in TEMPLATES {
            assert!(ENV.get_template(name).is_ok(), "{name}");
        }
    }
}
