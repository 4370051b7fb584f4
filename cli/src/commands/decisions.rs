//! `planlock decisions`: the active decisions a cycle would retrieve, with their evidence links,
//! through the session's pinned strategy. A read: nothing written, no lock or lease taken.

use planlock::Failure as _;
use planlock::schema::{Anchor, Decision};
use planlock::store::{Call, DecisionContextProviderPort};
use serde::Serialize;

use crate::args::SessionPlace;
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The report: the decisions in scope and their evidence links.
#[derive(Serialize)]
struct DecisionsReport {
    decisions: Vec<Decision>,
    anchors: Vec<Anchor>,
}

impl Report for DecisionsReport {
    fn text(&self, out: &mut Text) {
        if self.decisions.is_empty() {
            return line!(out, "no active decision in scope");
        }
        for d in &self.decisions {
            line!(out, "{} v{} [{}] {} ({})", d.root_id, d.version, d.scope, d.text, d.strength);
            for a in self.anchors.iter().filter(|a| a.decision_id == d.id) {
                line!(out, "    evidence {}", a.evidence_id);
            }
        }
    }
}

pub fn decisions(out: &mut Output, place: &SessionPlace, domain: Option<&str>) -> Result<u8, CliError> {
    let store = super::read_stores(&place.locate()?, None)?;
    let context = planlock::block_on(store.load(&Call::new(), "", domain))
        .map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    out.report(&DecisionsReport { decisions: context.decisions, anchors: context.anchors });
    Ok(EXIT_VALID)
}
