//! The console's three pages and its login form, rendered on the server from the library's
//! reads: the sessions (paused first, filterable, paged), one session (its cycles with every
//! step, its pause and its approval log), the inbox (every pending pause with what it shows,
//! and the forms that decide on it).

use std::fmt::Write as _;

use planlock::session::inbox::{InboxListing, PendingPause};
use planlock::session::overview::{SessionStatus, SessionsPage};
use planlock::session::{ApprovalEvent, ApprovalLog, CycleEntry, Timestamp};

use super::html::{ago, esc, esc_lines, page, url_segment};

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

/// What a form needs to be accepted: the login's CSRF token, and whether actions are served.
pub struct Forms<'a> {
    pub csrf: &'a str,
    pub read_only: bool,
}

pub fn login(error: Option<&str>) -> String {
    let error = error.map(|e| format!("<p class=\"error\">{}</p>", esc(e))).unwrap_or_default();
    let main = format!(
        "<h1>Sign in</h1>{error}<form class=\"login\" method=\"post\" action=\"/login\">\
         <label>Console token <input name=\"token\" type=\"password\" autocomplete=\"off\" required></label>\
         <label>Your name (recorded with your decisions) <input name=\"name\" maxlength=\"200\" required></label>\
         <button type=\"submit\">Sign in</button></form>\
         <p class=\"hint\">The token was printed when the console started (or is in <code>PLANLOCK_CONSOLE_TOKEN</code>).</p>"
    );
    page("Sign in", 0, &main)
}

fn status_badge(status: SessionStatus) -> String {
    format!("<span class=\"status {0}\">{0}</span>", status.as_str())
}

pub fn sessions(list: &SessionsPage, filter: Option<SessionStatus>, at: usize, pending: usize) -> String {
    let now = Timestamp::now();
    let mut main = String::from("<h1>Sessions</h1><p class=\"filters\">");
    let current = filter.map_or("all", SessionStatus::as_str);
    for name in ["all", "paused", "expired", "halted", "ready"] {
        let class = if name == current { " class=\"current\"" } else { "" };
        let href = if name == "all" { "/sessions".to_owned() } else { format!("/sessions?status={name}") };
        let _ = write!(main, "<a{class} href=\"{href}\">{name}</a>");
    }
    main.push_str("</p>");
    if list.sessions.is_empty() {
        main.push_str("<p class=\"empty\">No session here.</p>");
    } else {
        main.push_str(
            "<table><thead><tr><th>Session</th><th>Id</th><th>Status</th><th>Cycles</th><th>Last cycle</th>\
             <th>Active</th></tr></thead><tbody>",
        );
        for s in &list.sessions {
            let last = match &s.last {
                Some(l) => {
                    let failure =
                        l.failure.as_ref().map(|f| format!(" <code>{}</code>", esc(&f.code))).unwrap_or_default();
                    format!("{} {}{failure}", l.cycle, esc(l.end.as_str()))
                }
                None => "—".into(),
            };
            let active = s.last.as_ref().map(|l| l.finished_at).max(s.updated_at);
            let updated = active.map_or("—".into(), |t| ago(t, now));
            let _ = write!(
                main,
                "<tr><td><a href=\"/sessions/{href}\">{name}</a></td><td><code class=\"session-id\">{id}</code></td>\
                 <td>{status}</td><td>{cycles}</td><td>{last}</td><td>{updated}</td></tr>",
                href = url_segment(&s.session),
                name = esc(&s.session),
                id = s.session_id.map(|id| id.to_string()).unwrap_or_default(),
                status = status_badge(s.status),
                cycles = s.cycles,
            );
        }
        main.push_str("</tbody></table>");
    }
    let status = filter.map(|s| format!("&status={}", s.as_str())).unwrap_or_default();
    main.push_str("<p class=\"pages\">");
    if at > 0 {
        let _ = write!(main, "<a href=\"/sessions?page={}{status}\">newer</a>", at - 1);
    }
    let shown = (at * PER_PAGE + list.sessions.len()).min(list.total);
    let _ = write!(main, " {shown} of {} ", list.total);
    if shown < list.total {
        let _ = write!(main, "<a href=\"/sessions?page={}{status}\">more</a>", at + 1);
    }
    main.push_str("</p>");
    problems(&mut main, list.problems.iter().map(|p| (&p.session, p.code, &p.message)));
    page("Sessions", pending, &main)
}

fn problems<'a>(main: &mut String, problems: impl Iterator<Item = (&'a String, &'static str, &'a String)>) {
    let mut any = false;
    for (session, code, message) in problems {
        if !any {
            main.push_str("<h2>Sessions that cannot be read</h2><ul class=\"problems\">");
            any = true;
        }
        let _ = write!(main, "<li>{}: <code>{code}</code> {}</li>", esc(session), esc(message));
    }
    if any {
        main.push_str("</ul>");
    }
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
    let now = Timestamp::now();
    let mut main = format!("<h1>Session <code>{}</code></h1>", esc(name));
    if let Some(id) = session_id {
        // The id telemetry files its traces under (`session.id`, `gen_ai.conversation.id`).
        let _ = write!(main, "<p class=\"session-id\">Session id <code>{id}</code></p>");
    }
    if let Some(pause) = paused {
        main.push_str("<h2>Waiting for a person</h2>");
        pause_block(&mut main, pause, forms, now, Shown::Whole);
    }
    main.push_str("<h2>Cycles</h2>");
    if history.is_empty() {
        main.push_str("<p class=\"empty\">No finished cycle in its history yet.</p>");
    }
    for entry in history {
        let usage = entry.report.usage().map(|u| format!(", {} tokens in, {} out", u.input, u.output));
        let _ = write!(
            main,
            "<section class=\"cycle {end}\"><h3>Cycle {cycle} <span class=\"status {end}\">{end}</span> {at}{usage}</h3>",
            end = entry.end.as_str(),
            cycle = entry.cycle,
            at = ago(entry.finished_at, now),
            usage = usage.unwrap_or_default(),
        );
        if let Some(f) = &entry.failure {
            let step = f.step_id.as_ref().map(|s| format!(" at step <code>{}</code>", esc(s))).unwrap_or_default();
            let _ = write!(main, "<p class=\"failure\"><code>{}</code> ({:?}){step}</p>", esc(&f.code), f.class);
        }
        main.push_str(
            "<table><thead><tr><th>#</th><th>Step</th><th>Status</th><th>Duration</th><th>Tokens</th>\
             <th>Warnings</th></tr></thead><tbody>",
        );
        for step in &entry.report.steps {
            let tokens = step.usage.map(|u| format!("{} / {}", u.input, u.output)).unwrap_or_default();
            let warnings: Vec<String> = step.warnings.iter().map(|w| esc(&w.message)).collect();
            let status = format!("{:?}", step.status).to_lowercase();
            let _ = write!(
                main,
                "<tr><td>{}</td><td>{}</td><td><span class=\"status {status}\">{status}</span></td>\
                 <td>{:.1?}</td><td>{tokens}</td><td>{}</td></tr>",
                step.index,
                step.step_type,
                step.duration,
                warnings.join("<br>"),
            );
        }
        main.push_str("</tbody></table>");
        for i in &entry.report.interventions {
            let _ = write!(
                main,
                "<p class=\"intervention\">Paused at <code>{}</code> by <code>{}</code>: {}</p>",
                esc(&i.step_id),
                esc(&i.validator_id),
                esc(&i.reason)
            );
        }
        for o in &entry.report.overrides {
            let by = o.by.as_deref().map(|b| format!(" by {}", esc(b))).unwrap_or_default();
            let _ = write!(
                main,
                "<p class=\"override\">Approved at <code>{}</code>{by}: {}</p>",
                esc(&o.step_id),
                esc(&o.justification)
            );
        }
        main.push_str("</section>");
    }
    main.push_str("<h2>Approval log</h2>");
    if log.events.is_empty() {
        main.push_str("<p class=\"empty\">No decision yet.</p>");
    } else {
        main.push_str("<table><thead><tr><th>Event</th><th>Cycle</th><th>Step</th><th>Detail</th></tr></thead><tbody>");
        for event in log.events.iter().rev().take(LOG_EVENTS) {
            let pause = event.pause();
            let detail = match event {
                ApprovalEvent::Decided { decision } => {
                    format!("{} by {}: {}", decision.verdict, esc(&decision.by), esc(&decision.justification))
                }
                ApprovalEvent::Consumed { cycle, completed, .. } => {
                    format!("by cycle {cycle}{}", if *completed { ", completed" } else { "" })
                }
                _ => String::new(),
            };
            let _ = write!(
                main,
                "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{detail}</td></tr>",
                event.name(),
                pause.cycle,
                esc(&pause.step_id)
            );
        }
        main.push_str("</tbody></table>");
        if log.events.len() > LOG_EVENTS {
            let _ = write!(
                main,
                "<p>The newest {LOG_EVENTS} of {} events; <code>planlock inbox log</code> lists them all.</p>",
                log.events.len()
            );
        }
    }
    page(&format!("Session {name}"), pending, &main)
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
fn pause_block(main: &mut String, pause: &PendingPause, forms: &Forms<'_>, now: Timestamp, how: Shown) {
    let r = &pause.record;
    let expires = match (r.expires_at, pause.expired) {
        (Some(at), true) => format!("<span class=\"status expired\">expired</span> {}", ago(at, now)),
        (Some(at), false) => format!("expires <time datetime=\"{at}\" title=\"{at}\">{at}</time>"),
        (None, _) => "no expiry".into(),
    };
    let _ = write!(
        main,
        "<div class=\"pause\"><p><a href=\"/sessions/{href}\"><code>{session}</code></a> · cycle {cycle} · step \
         <code>{step}</code> ({ty}) · validator <code>{validator}</code> · {age} · {expires}</p>\
         <p class=\"reason\">{reason}</p>",
        href = url_segment(&pause.session),
        session = esc(&pause.session),
        cycle = r.cycle,
        step = esc(&r.step_id),
        ty = r.step_type,
        validator = esc(&r.validator.id),
        age = ago(r.created_at, now),
        reason = esc(&r.reason),
    );
    let mut cut = false;
    match (&r.shown, &r.shown_digest) {
        (Some(shown), Some(digest)) => {
            let pretty = serde_json::to_string_pretty(shown).unwrap_or_default();
            let end = if how == Shown::Preview && pretty.len() > PREVIEW_BYTES {
                cut = true;
                (0..=PREVIEW_BYTES).rev().find(|at| pretty.is_char_boundary(*at)).unwrap_or(0)
            } else {
                pretty.len()
            };
            let _ = write!(
                main,
                "<p>What is being approved (digest <code class=\"digest\">{digest}</code>):</p><pre class=\"shown\">{}{}</pre>",
                esc_lines(&pretty[..end]),
                if cut { "\n…" } else { "" }
            );
        }
        _ => main.push_str("<p>This pause shows nothing (a record of an older version).</p>"),
    }
    if let Some(d) = &pause.decision {
        let _ = write!(
            main,
            "<p class=\"decided\">Decided: {} by {}: {} (acted on at the session's next run)</p>",
            d.verdict,
            esc(&d.by),
            esc(&d.justification)
        );
    } else if cut && !forms.read_only {
        let _ = write!(
            main,
            "<p class=\"more\">It shows more than this list holds: <a href=\"/sessions/{}\">read it whole and decide there</a>.</p>",
            url_segment(&pause.session)
        );
    } else if !forms.read_only {
        let digest = r.shown_digest.map(|d| d.to_string()).unwrap_or_default();
        // The form names the pause it was shown for: a later pause of the same session (the
        // re-run of a rejected cycle may show the same thing) is not decided by it.
        let pause_id = esc(&planlock::session::PauseRef::of(r).id());
        for (verdict, label) in [("approve", "Approve"), ("reject", "Reject")] {
            if verdict == "approve" && pause.expired {
                continue;
            }
            let _ = write!(
                main,
                "<form class=\"decide {verdict}\" method=\"post\" action=\"/inbox/{href}/{verdict}\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <input type=\"hidden\" name=\"digest\" value=\"{digest}\">\
                 <input type=\"hidden\" name=\"pause\" value=\"{pause_id}\">\
                 <input name=\"reason\" placeholder=\"Why ({verdict})\" maxlength=\"2000\" required>\
                 <button type=\"submit\">{label}</button></form>",
                href = url_segment(&pause.session),
                csrf = esc(forms.csrf),
            );
        }
    }
    main.push_str("</div>");
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
    let now = Timestamp::now();
    let mut main = format!("<h1>Inbox <span class=\"count\">{pending}</span></h1>");
    if let Some(notice) = notice {
        let _ = write!(main, "<p class=\"notice\">{}</p>", esc(notice));
    }
    if listing.pauses.is_empty() {
        main.push_str("<p class=\"empty\">Nothing waits for a person.</p>");
    }
    for pause in &listing.pauses {
        pause_block(&mut main, pause, forms, now, Shown::Preview);
    }
    let shown = (at * PAUSES_PER_PAGE + listing.pauses.len()).min(total);
    main.push_str("<p class=\"pages\">");
    if at > 0 {
        let _ = write!(main, "<a href=\"/inbox?page={}\">older</a>", at - 1);
    }
    let _ = write!(main, " {shown} of {total} ");
    if shown < total.saturating_sub(listing.more) {
        let _ = write!(main, "<a href=\"/inbox?page={}\">newer</a>", at + 1);
    }
    main.push_str("</p>");
    if listing.more > 0 {
        let _ = write!(main, "<p>{} more, older ones first: decide on these to see them.</p>", listing.more);
    }
    problems(&mut main, listing.problems.iter().map(|p| (&p.session, p.code, &p.message)));
    page("Inbox", pending, &main)
}
