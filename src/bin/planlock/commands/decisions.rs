//! `planlock decisions`: the active decisions a cycle would retrieve, with their evidence links.

use std::fmt::Write as _;

use planlock::Failure as _;
use planlock::schema::{Anchor, Decision};
use planlock::store::DecisionContextProviderPort;
use serde::Serialize;

use crate::args::{Format, SessionPlace};
use crate::error::{CliError, EXIT_VALID};
use crate::report::line;

/// The JSON report: the decisions in scope and their evidence links.
#[derive(Serialize)]
struct DecisionsReport<'a> {
    decisions: &'a [Decision],
    anchors: &'a [Anchor],
}

pub fn decisions(out: &mut String, place: &SessionPlace, domain: Option<&str>, format: Format) -> Result<u8, CliError> {
    let store = place.place().read_stores().map_err(|e| CliError::of_place(&e))?;
    let context =
        pollster::block_on(store.load("", domain)).map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    match format {
        Format::Json => {
            let report = DecisionsReport { decisions: &context.decisions, anchors: &context.anchors };
            line!(out, "{}", serde_json::to_string(&report).unwrap_or_default())
        }
        Format::Text if context.decisions.is_empty() => line!(out, "no active decision in scope"),
        Format::Text => {
            for d in &context.decisions {
                line!(out, "{} v{} [{}] {} ({})", d.root_id, d.version, d.scope, d.text, d.strength);
                for a in context.anchors.iter().filter(|a| a.decision_id == d.id) {
                    line!(out, "    evidence {}", a.evidence_id);
                }
            }
        }
    }
    Ok(EXIT_VALID)
}
