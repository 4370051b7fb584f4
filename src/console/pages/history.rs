//! A session's page (CONTRACT §15): its id, its pause, and each cycle once — a resumed cycle
//! with its pause and the decision inside it, an abandoned one saying who ended it and why, a
//! failed one with its failure's message, code, class and step — step ids with their types,
//! and a link to each cycle's trace when the console knows the trace UI.

use std::collections::BTreeMap;

use crate::review::inbox::PendingPause;
use crate::session::{ApprovalEvent, ApprovalLog, CycleEnd, CycleEntry, Timestamp};
use minijinja::value::Value;
use serde::Serialize;

use super::super::templates::{Ago, page, render};
use super::Forms;
use super::inbox::PauseLink;

/// The approval log's newest events a session page lists.
pub const LOG_EVENTS: usize = 200;

#[derive(Serialize)]
struct Usage {
    input: u64,
    output: u64,
}

#[derive(Serialize)]
struct Step {
    index: usize,
    label: String,
    status: String,
    duration: String,
    usage: Option<Usage>,
    warnings: Vec<String>,
}

/// One thing that happened to a cycle, in time order: an attempt's end or a decision on it.
#[derive(Serialize)]
struct Line {
    at: Ago,
    kind: &'static str,
    text: String,
    message: Option<String>,
}

#[derive(Serialize)]
struct Attempt {
    end: &'static str,
    finished: Ago,
    steps: Vec<Step>,
}

#[derive(Serialize)]
struct Cycle {
    cycle: u64,
    end: &'static str,
    finished: Ago,
    usage: Option<Usage>,
    trace: Option<String>,
    lines: Vec<Line>,
    steps: Vec<Step>,
    earlier: Vec<Attempt>,
}

fn steps_of(entry: &CycleEntry) -> Vec<Step> {
    (entry.report.steps.iter())
        .map(|step| Step {
            index: step.index,
            label: step.label(),
            status: format!("{:?}", step.status).to_lowercase(),
            duration: format!("{:.1?}", step.duration),
            usage: step.usage.map(|u| Usage { input: u.input, output: u.output }),
            warnings: step.warnings.iter().map(|w| w.message.clone()).collect(),
        })
        .collect()
}

/// What an attempt's end says: `paused at remember (PersistMemory) by demo-review: …`,
/// `failed: model-unreachable (CycleFail) at step llm`, with the failure's message.
fn end_line(entry: &CycleEntry, now: Timestamp) -> Line {
    let (text, message) = match entry.end {
        CycleEnd::Paused => {
            let paused = entry.report.interventions.last().map(|i| {
                ["at ", &i.step_id, " (", &i.step_type.to_string(), ") by ", &i.validator_id, ": ", &i.reason].concat()
            });
            (["paused ", paused.as_deref().unwrap_or("")].concat(), None)
        }
        CycleEnd::Failed => match &entry.failure {
            Some(f) => {
                let at = f.step_id.as_ref().map(|s| [" at step ", s].concat()).unwrap_or_default();
                (format!("failed: {} ({:?}){at}", f.code, f.class), f.message.clone())
            }
            None => ("failed".to_owned(), None),
        },
        CycleEnd::Completed => ("completed".to_owned(), None),
        CycleEnd::Abandoned => ("abandoned".to_owned(), None),
    };
    Line { at: Ago::of(entry.finished_at, now), kind: entry.end.as_str(), text, message }
}

/// What a log event says on a cycle's page: `approved by ada: checked`, `rejected by bob: …`,
/// `approval 1 of 2 by ada: …`, `abandoned`, `consumed by cycle 3` …
fn event_line(event: &ApprovalEvent, now: Timestamp) -> Option<Line> {
    let text = match event {
        ApprovalEvent::Decided { decision } => {
            let by = super::who(decision);
            [decision.verdict.past(), " by ", &by, ": ", &decision.justification].concat()
        }
        ApprovalEvent::Voted { decision, count, required } => {
            format!("approval {count} of {required} by {}: {}", super::who(decision), decision.justification)
        }
        ApprovalEvent::Consumed { completed, .. } => {
            ["approval used by the re-run", if *completed { ", which completed" } else { "" }].concat()
        }
        ApprovalEvent::Stale { .. } => "approval stale: the re-run met something else".to_owned(),
        ApprovalEvent::Expired { .. } => "the decision came after the pause expired".to_owned(),
        ApprovalEvent::Abandoned { .. } => "abandoned".to_owned(),
        ApprovalEvent::Superseded { .. } => "the re-run did not need the decision".to_owned(),
        ApprovalEvent::Paused { .. } | ApprovalEvent::ExpiryNoticed { .. } => return None,
    };
    Some(Line { at: Ago::of(event.at(), now), kind: event.name(), text, message: None })
}

/// `history`'s entries (newest first) as cycles, each once, newest first: its attempts and the
/// log's events on it in time order.
fn cycles(history: &[CycleEntry], log: &ApprovalLog, trace_url: Option<&str>, now: Timestamp) -> Vec<Cycle> {
    // Oldest first, grouped by the cycle's identity (a failed cycle's number runs again: its
    // attempts are one cycle's).
    let mut groups: BTreeMap<(uuid::Uuid, u64), Vec<&CycleEntry>> = BTreeMap::new();
    let mut order = Vec::new();
    for entry in history.iter().rev() {
        let key = (entry.session_id, entry.cycle);
        if !groups.contains_key(&key) {
            order.push(key);
        }
        groups.entry(key).or_default().push(entry);
    }
    let mut cycles: Vec<Cycle> = order
        .into_iter()
        .filter_map(|key| {
            let attempts = groups.remove(&key)?;
            let last = *attempts.last()?;
            let mut timed: Vec<(Timestamp, Line)> =
                attempts.iter().map(|e| (e.finished_at, end_line(e, now))).collect();
            let first = attempts.first().map_or(last.started_at, |e| e.started_at);
            // An abandoned attempt's entry says so; the log's `abandoned` would say it twice.
            let has_abandoned = attempts.iter().any(|e| e.end == CycleEnd::Abandoned);
            let events = log.events.iter().filter(|e| {
                let p = e.pause();
                let twice = has_abandoned && matches!(e, ApprovalEvent::Abandoned { .. });
                p.session_id == key.0 && p.cycle == key.1 && e.at() >= first && !twice
            });
            timed.extend(events.filter_map(|e| Some((e.at(), event_line(e, now)?))));
            timed.sort_by_key(|(at, _)| *at);
            // A trace per cycle: a resumed cycle continues its pause's, so any attempt's names it.
            let trace_id = attempts.iter().rev().find_map(|e| e.report.trace_id.clone());
            let usage = attempts.iter().filter_map(|e| e.report.usage()).reduce(|a, b| a + b);
            let earlier = attempts[..attempts.len() - 1]
                .iter()
                .rev()
                .map(|e| Attempt { end: e.end.as_str(), finished: Ago::of(e.finished_at, now), steps: steps_of(e) })
                .collect();
            Some(Cycle {
                cycle: key.1,
                end: last.end.as_str(),
                finished: Ago::of(last.finished_at, now),
                usage: usage.map(|u| Usage { input: u.input, output: u.output }),
                trace: trace_url.zip(trace_id).map(|(url, id)| url.replace("{traceId}", &id)),
                lines: timed.into_iter().map(|(_, line)| line).collect(),
                steps: steps_of(last),
                earlier,
            })
        })
        .collect();
    cycles.reverse();
    cycles
}

/// The page of session `name`.
#[allow(clippy::too_many_arguments, reason = "one page's parts, named where it is called")]
pub fn session(
    name: &str,
    session_id: Option<uuid::Uuid>,
    history: &[CycleEntry],
    paused: Option<&PendingPause>,
    log: &ApprovalLog,
    forms: &Forms<'_>,
    pending: usize,
    trace_url: Option<&str>,
) -> String {
    #[derive(Serialize)]
    struct Event<'a> {
        event: &'static str,
        cycle: u64,
        step: &'a str,
        detail: String,
    }
    #[derive(Serialize)]
    struct Pause<'a> {
        link: PauseLink,
        step: &'a str,
        step_type: String,
        validator: &'a str,
        reason: &'a str,
        tone: &'static str,
        state: String,
        created: Ago,
    }
    #[derive(Serialize)]
    struct Session<'a> {
        name: &'a str,
        session_id: Option<String>,
        pause: Option<Pause<'a>>,
        cycles: Vec<Cycle>,
        log: Vec<Event<'a>>,
        log_total: usize,
    }
    let now = Timestamp::now();
    let log_events = (log.events.iter().rev().filter(|e| !e.is_notice()).take(LOG_EVENTS))
        .map(|event| {
            let pause = event.pause();
            let detail = event_line(event, now).map(|l| l.text).unwrap_or_default();
            Event { event: event.name(), cycle: pause.cycle, step: &pause.step_id, detail }
        })
        .collect();
    let view = Session {
        name,
        // The id telemetry files its traces under (`session.id`, `gen_ai.conversation.id`).
        session_id: session_id.map(|id| id.to_string()),
        pause: paused.map(|p| (p, super::standing(p, forms))).map(|(p, (tone, state))| Pause {
            link: PauseLink::to(&p.session, p.record.cycle, &p.record.step_id),
            step: &p.record.step_id,
            step_type: p.record.step_type.to_string(),
            validator: &p.record.validator.id,
            reason: &p.record.reason,
            tone,
            state,
            created: Ago::of(p.record.created_at, now),
        }),
        cycles: cycles(history, log, trace_url, now),
        log: log_events,
        log_total: log.events.len(),
    };
    let main: Value = render("session.html", view);
    page(&["Session ", name].concat(), pending, Some(forms.viewer()), main)
}
