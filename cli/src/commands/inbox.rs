//! `planlock inbox`: the pauses waiting for a person across sessions (list, show), a decision
//! on one (approve, reject), a session's approval log. A decision is recorded without the
//! session's lock or lease; the session acts on it at its next `run`.

use planlock::Failure;
use planlock::review::access::Access;
use planlock::review::inbox::{Inbox, InboxFilter, InboxListing, PendingPause};
use planlock::review::{Decided, Turn, decide_shown, read_pause};
use planlock::session::{ApprovalEvent, ApprovalLog, Recorded, ReviewDecision, ReviewVerdict, Via};
use serde::Serialize;

use crate::args::{InboxCommand, OnPause, SessionsArgs};
use crate::error::{CliError, EXIT_CYCLE_FAIL, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

pub fn inbox(out: &mut Output, command: InboxCommand) -> Result<u8, CliError> {
    match command {
        InboxCommand::List { sessions, validator, step_type, older_than, state, expired, q, newest_first } => {
            // The console's inbox reads the same parameters into the same filter.
            let mut filter = InboxFilter { validator, step_type, older_than, newest_first, ..InboxFilter::default() };
            let state = if expired { Some("expired") } else { state.as_deref() };
            for (name, value) in [("state", state), ("q", q.as_deref())] {
                filter.set(name, value.unwrap_or_default()).map_err(|e| CliError::usage(e.code(), e.to_string()))?;
            }
            let listing = planlock::block_on(open(&sessions)?.list(&filter)).map_err(|e| CliError::of(&e))?;
            out.report(&ListReport(listing));
            Ok(EXIT_VALID)
        }
        InboxCommand::Show { sessions, session } => {
            let pause = paused(&open(&sessions)?, &session)?;
            out.report(&ShowReport(pause));
            Ok(EXIT_VALID)
        }
        InboxCommand::Approve { on, digest } => decide_on(out, on, ReviewVerdict::Approve, (digest, None)),
        InboxCommand::Edit { on, payload } => decide_on(out, on, ReviewVerdict::Approve, (None, Some(payload))),
        InboxCommand::Reject { on } => decide_on(out, on, ReviewVerdict::Reject, (None, None)),
        InboxCommand::Abandon { on } => decide_on(out, on, ReviewVerdict::Abandon, (None, None)),
        InboxCommand::Log { sessions, session } => {
            let inbox = open(&sessions)?;
            let records = planlock::block_on(inbox.records(&session)).map_err(|e| CliError::of(&e))?;
            let log = planlock::block_on(records.approval_log()).map_err(|e| CliError::of(&e))?;
            out.report(&LogReport { session, log });
            Ok(EXIT_VALID)
        }
    }
}

/// The inbox of the sessions the flags name (`crate::place`: one backend, whose database pool
/// the whole command shares).
pub(super) fn open(args: &SessionsArgs) -> Result<Inbox, CliError> {
    Ok(Inbox::new(args.backend()?))
}

/// The pause of `session`, or why there is none.
fn paused(inbox: &Inbox, session: &str) -> Result<PendingPause, CliError> {
    planlock::block_on(inbox.show(session)).map_err(|e| CliError::of(&e))?.ok_or_else(|| nothing_paused(session))
}

/// Why there is nothing to show or decide in `session`.
fn nothing_paused(session: &str) -> CliError {
    CliError {
        exit: EXIT_CYCLE_FAIL,
        code: "nothing-paused",
        message: format!("nothing is paused in session `{}`", planlock::printable(session)),
    }
}

/// Records `verdict` on the pause `on` names, by its decider; an approval bound to `digest`
/// when given (what `inbox show` printed).
/// Decides `verdict` on the pause `on` names, on `digest` (else what the record shows), editing
/// the step's payload to the JSON in `edit`'s file for an edit.
fn decide_on(
    out: &mut Output,
    on: OnPause,
    verdict: ReviewVerdict,
    (digest, edit): (Option<String>, Option<std::path::PathBuf>),
) -> Result<u8, CliError> {
    let OnPause { sessions, decider, pause: pause_id, session } = on;
    let access = decider.access.as_deref().map(Access::load).transpose().map_err(|e| CliError::of(&e))?;
    // The session's records, and its pause read once for the whole command.
    let inbox = open(&sessions)?;
    let records = planlock::block_on(inbox.records(&session)).map_err(|e| CliError::of(&e))?;
    let record = planlock::block_on(read_pause(records.as_ref())).map_err(|e| CliError::of(&e))?;
    let Some(record) = record else { return Err(nothing_paused(&session)) };
    let mut decision = ReviewDecision::new(&record, verdict, decider.by, decider.reason).via(Via::Cli);
    let digest_given = digest.clone();
    if let Some(hex) = digest {
        let parsed =
            hex.parse().map_err(|_| CliError::usage("usage", format!("--digest `{hex}` is not 64 hex digits")))?;
        decision.shown_digest = Some(parsed);
    }
    if let Some(id) = pause_id {
        decision = decision.on_pause(&id).map_err(|e| CliError::of(&e))?;
    }
    // Without --digest, on what the pause stands on now: its latest edit, once one was made
    // (`inbox show` prints it and its diff), else what its record shows.
    if digest_given.is_none() {
        let now = planlock::block_on(records.decisions_on(&decision.pause)).map_err(|e| CliError::of(&e))?;
        if let Some(latest) = now.edit {
            decision.shown_digest = Some(latest.digest);
        }
    }
    if let Some(file) = edit {
        let payload = read_payload(&file)?;
        let edit = planlock::block_on(planlock::review::edit_of(records.as_ref(), &record, payload));
        decision = decision.editing(edit.map_err(|e| CliError::of(&e))?);
    }
    // The rules installed where the session lives apply; `--access` only where none are.
    let decided = decide_shown(records.as_ref(), &record, &decision, access.as_ref());
    let Decided { recorded, verified, turn } = planlock::block_on(decided).map_err(|e| CliError::of(&e))?;
    decision.verified = Some(verified);
    let (again, counted) = match recorded {
        Recorded::New => (false, None),
        Recorded::Again => (true, None),
        Recorded::Counted { approvals, required } => (false, Some((approvals, required))),
    };
    out.report(&DecidedReport { session, decision, again, counted, turn });
    Ok(EXIT_VALID)
}

/// `list`.
#[derive(Serialize)]
#[serde(transparent)]
struct ListReport(InboxListing);

impl Report for ListReport {
    fn text(&self, out: &mut Text) {
        let listing = &self.0;
        if listing.pauses.is_empty() {
            line!(out, "no pause is waiting for a person");
        } else {
            line!(
                out,
                "{:<24} {:>5}  {:<28} {:<14} {:>8}  {:<10} {}",
                "SESSION",
                "CYCLE",
                "STEP",
                "VALIDATOR",
                "WAITING",
                "STATE",
                "REASON"
            );
        }
        for p in &listing.pauses {
            let r = &p.record;
            let state = p.state();
            line!(
                out,
                "{:<24} {:>5}  {:<28} {:<14} {:>8}  {:<10} {}",
                p.session,
                r.cycle,
                format!("{} ({})", r.step_id, r.step_type),
                r.validator.id,
                age(p.age_seconds),
                state,
                planlock::printable(&r.reason)
            );
        }
        if listing.more > 0 {
            line!(out, "… and {} more (filter with --validator, --step-type, --older-than)", listing.more);
        }
        for problem in &listing.problems {
            line!(out, "cannot read session `{}`: {} ({})", problem.session, problem.message, problem.code);
        }
    }
}

/// A duration as a person reads it: `42s`, `17m`, `5h`, `3d`.
fn age(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// `show`.
#[derive(Serialize)]
#[serde(transparent)]
struct ShowReport(PendingPause);

impl Report for ShowReport {
    fn text(&self, out: &mut Text) {
        let p = &self.0;
        let r = &p.record;
        line!(out, "session:    {}", p.session);
        line!(out, "cycle:      {} (waiting {})", r.cycle, age(p.age_seconds));
        line!(
            out,
            "step:       `{}` ({}), {} the step",
            r.step_id,
            r.step_type,
            match r.phase {
                planlock::session::BlockPhase::Pre => "before",
                planlock::session::BlockPhase::Post => "after",
            }
        );
        line!(out, "validator:  `{}` version {}", r.validator.id, r.validator.version);
        line!(out, "reason:     {}", r.reason);
        line!(out, "created:    {}", r.created_at);
        match (&r.expires_at, p.expired) {
            (Some(at), true) => line!(out, "expired:    {at} (it can only be abandoned)"),
            (Some(at), false) => line!(out, "expires:    {at}"),
            (None, _) => line!(out, "expires:    never"),
        }
        match &p.decision {
            Some(d) => line!(out, "decision:   {} by {} at {}: {}", d.verdict, d.who(), d.at, d.justification),
            None if p.turn.is_some() => line!(out, "decision:   {}", p.state()),
            None if !p.approvals.is_empty() => line!(out, "decision:   approved {}, waiting for more", p.state()),
            None => line!(out, "decision:   none yet"),
        }
        match (&r.shown, &r.shown_digest) {
            (Some(shown), Some(digest)) => {
                let cut = if r.shown_truncated { " (cut at 64 KiB; the digest covers the whole)" } else { "" };
                line!(out, "shown:      digest {digest}{cut}");
                let pretty = match shown {
                    serde_json::Value::String(start) if r.shown_truncated => start.clone(),
                    value => serde_json::to_string_pretty(value).unwrap_or_default(),
                };
                for l in pretty.lines() {
                    line!(out, "  {l}");
                }
                // A pending edit (CONTRACT §22): what the approvals are of now, as a diff.
                let digest = match &p.edit {
                    Some(edit) => {
                        line!(out, "edited:     digest {} (approve this one), against what was shown:", edit.digest);
                        for l in planlock::review::edit_diff(r, edit) {
                            line!(out, "  {}{}", l.tag, l.text);
                        }
                        edit.digest
                    }
                    None => *digest,
                };
                line!(
                    out,
                    "to decide:  planlock inbox approve|reject --by NAME --reason TEXT --pause {} --digest {digest} {}",
                    planlock::session::PauseRef::of(r).id(),
                    p.session
                );
                if r.phase == planlock::session::BlockPhase::Pre && !r.shown_truncated {
                    line!(
                        out,
                        "to edit:    planlock inbox edit --by NAME --reason TEXT --payload FILE --pause {} {}",
                        planlock::session::PauseRef::of(r).id(),
                        p.session
                    );
                }
            }
            _ => line!(out, "shown:      not recorded (a record of an older planlock version)"),
        }
    }
}

/// `approve` and `reject`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DecidedReport {
    session: String,
    decision: ReviewDecision,
    /// The same decision was already recorded; nothing changed.
    again: bool,
    /// An approval of a pause that needs several: how many it has, of how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    counted: Option<(usize, usize)>,
    /// Who approved it so far, and who may still.
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<Turn>,
}

impl Report for DecidedReport {
    fn text(&self, out: &mut Text) {
        let d = &self.decision;
        if let Some((approvals, required)) = self.counted {
            return line!(
                out,
                "approval {approvals} of {required} by `{}` of cycle {} at step `{}` in session `{}` is recorded; the pause waits for {} more ({})",
                d.by,
                d.pause.cycle,
                d.pause.step_id,
                self.session,
                required.saturating_sub(approvals),
                self.turn.as_ref().map_or_else(String::new, Turn::to_string)
            );
        }
        let what = if self.again { "was already recorded (nothing changed)" } else { "is recorded" };
        line!(
            out,
            "{} by `{}` of cycle {} at step `{}` in session `{}` {what}",
            d.verdict,
            d.by,
            d.pause.cycle,
            d.pause.step_id,
            self.session
        );
        match d.verdict {
            ReviewVerdict::Approve => {
                line!(out, "the session resumes the step at its next run, while it meets what was approved")
            }
            ReviewVerdict::Reject | ReviewVerdict::Abandon => {
                line!(out, "the session abandons the paused cycle at its next run")
            }
        }
    }
}

/// `log`.
#[derive(Serialize)]
struct LogReport {
    session: String,
    #[serde(flatten)]
    log: ApprovalLog,
}

impl Report for LogReport {
    fn text(&self, out: &mut Text) {
        if self.log.events.is_empty() {
            line!(out, "the approval log of `{}` is empty", self.session);
        }
        for event in &self.log.events {
            let p = event.pause();
            let detail = match event {
                ApprovalEvent::Decided { decision: d } => {
                    format!("decided: {} by {} at {}: {}", d.verdict, d.who(), d.at, d.justification)
                }
                ApprovalEvent::Paused { reason, expires_at, .. } => match expires_at {
                    Some(at) => format!("paused: {reason} (expires {at})"),
                    None => format!("paused: {reason}"),
                },
                ApprovalEvent::ExpiryNoticed { at, .. } => format!("seen expired and undecided at {at}"),
                ApprovalEvent::Voted { decision: d, count, required } => {
                    format!("approval {count} of {required} by {} at {}: {}", d.who(), d.at, d.justification)
                }
                ApprovalEvent::Consumed { cycle, completed, at, .. } => {
                    format!("consumed by cycle {cycle} at {at}{}", if *completed { ", which completed" } else { "" })
                }
                ApprovalEvent::Stale { met, at, .. } => format!("stale at {at}: the re-run met what has digest {met}"),
                ApprovalEvent::Expired { at, .. } => format!("expired at {at}"),
                ApprovalEvent::Abandoned { at, .. } => format!("abandoned at {at}"),
                ApprovalEvent::Superseded { at, .. } => format!("superseded at {at}: the pause ended without it"),
            };
            line!(out, "cycle {} step `{}` ({}): {detail}", p.cycle, p.step_id, p.validator_id);
        }
        if self.log.unreadable > 0 {
            line!(out, "({} line(s) of the log could not be read)", self.log.unreadable);
        }
    }
}

/// The JSON of an edit's payload from `file`: at most 64 KiB, strictly one JSON value.
fn read_payload(file: &std::path::Path) -> Result<serde_json::Value, CliError> {
    use std::io::Read;
    let limit = planlock::executor::MAX_SHOWN_BYTES as u64;
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|e| CliError::usage("usage", format!("--payload {}: {e}", file.display())))?;
    if bytes.len() as u64 > limit {
        return Err(CliError::usage("usage", format!("--payload {}: past 64 KiB, an edit is refused", file.display())));
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| CliError::usage("usage", format!("--payload {}: not JSON ({e})", file.display())))
}
