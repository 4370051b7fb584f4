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
            "<table><thead><tr><th>Session</th><th>Status</th><th>Cycles</th><th>Last cycle</th>\
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
                "<tr><td><a href=\"/sessions/{href}\">{name}</a></td><td>{status}</td><td>{cycles}</td>\
                 <td>{last}</td><td>{updated}</td></tr>",
                href = url_segment(&s.session),
                name = esc(&s.session),
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
    history: &[CycleEntry],
    paused: Option<&PendingPause>,
    log: &ApprovalLog,
    forms: &Forms<'_>,
    pending: usize,
) -> String {
    let now = Timestamp::now();
    let mut main = format!("<h1>Session <code>{}</code></h1>", esc(name));
    if let Some(pause) = paused {
        main.push_str("<h2>Waiting for a person</h2>");
        pause_block(&mut main, pause, forms, now);
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
        for event in log.events.iter().rev() {
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
    }
    page(&format!("Session {name}"), pending, &main)
}

/// A pause: where, why, since when, until when, what it shows (with its digest), and the forms.
fn pause_block(main: &mut String, pause: &PendingPause, forms: &Forms<'_>, now: Timestamp) {
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
    match (&r.shown, &r.shown_digest) {
        (Some(shown), Some(digest)) => {
            let pretty = serde_json::to_string_pretty(shown).unwrap_or_default();
            let _ = write!(
                main,
                "<p>What is being approved (digest <code class=\"digest\">{digest}</code>):</p><pre class=\"shown\">{}</pre>",
                esc_lines(&pretty)
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
    } else if !forms.read_only {
        let digest = r.shown_digest.map(|d| d.to_string()).unwrap_or_default();
        for (verdict, label) in [("approve", "Approve"), ("reject", "Reject")] {
            if verdict == "approve" && pause.expired {
                continue;
            }
            let _ = write!(
                main,
                "<form class=\"decide {verdict}\" method=\"post\" action=\"/inbox/{href}/{verdict}\">\
                 <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
                 <input type=\"hidden\" name=\"digest\" value=\"{digest}\">\
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

pub fn inbox(listing: &InboxListing, forms: &Forms<'_>, notice: Option<&str>) -> String {
    let now = Timestamp::now();
    let pending = undecided(listing);
    let mut main = format!("<h1>Inbox <span class=\"count\">{pending}</span></h1>");
    if let Some(notice) = notice {
        let _ = write!(main, "<p class=\"notice\">{}</p>", esc(notice));
    }
    if listing.pauses.is_empty() {
        main.push_str("<p class=\"empty\">Nothing waits for a person.</p>");
    }
    for pause in &listing.pauses {
        pause_block(&mut main, pause, forms, now);
    }
    if listing.more > 0 {
        let _ = write!(main, "<p>{} more, older ones first: decide on these to see them.</p>", listing.more);
    }
    problems(&mut main, listing.problems.iter().map(|p| (&p.session, p.code, &p.message)));
    page("Inbox", pending, &main)
}
