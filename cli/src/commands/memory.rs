//! `planlock memory search`: what `RetrieveMemory` would find, searched with the session's pinned
//! providers (by meaning with the pinned embedder under a `sqlite-semantic` pin). A read:
//! nothing written, no lock or lease taken.

use planlock::Failure as _;
use planlock::schema::MemoryItem;
use planlock::store::{Call, MemoryRepositoryPort};
use serde::Serialize;

use crate::args::{EmbedArgs, SessionPlace};
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The report: the memories found, best first, and what the search passed over.
#[derive(Serialize)]
struct SearchReport {
    items: Vec<MemoryItem>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl Report for SearchReport {
    fn text(&self, out: &mut Text) {
        for warning in &self.warnings {
            line!(out, "warning: {warning}");
        }
        if self.items.is_empty() {
            return line!(out, "no memory matches");
        }
        for m in &self.items {
            line!(out, "{}  {}  {}", m.id, m.timestamp, m.summary);
        }
    }
}

pub fn search(
    out: &mut Output,
    place: &SessionPlace,
    top_k: u64,
    embed: &EmbedArgs,
    text: &str,
) -> Result<u8, CliError> {
    let store = super::read_stores(&place.locate()?, Some(embed))?;
    let call = Call::new();
    let items = planlock::block_on(store.search(&call, text, top_k))
        .map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    out.report(&SearchReport { items, warnings: call.warnings() });
    Ok(EXIT_VALID)
}
