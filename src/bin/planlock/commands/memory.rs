//! `planlock memory search`: what `RetrieveMemory` would find, searched with the session's pinned
//! providers (by meaning with the pinned embedder under a `sqlite-semantic` pin). A read:
//! nothing written, no lock or lease taken.

use planlock::Failure as _;
use planlock::schema::MemoryItem;
use planlock::store::MemoryRepositoryPort;
use serde::Serialize;

use crate::args::{EmbedArgs, SessionPlace};
use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The report: the memories found, best first.
#[derive(Serialize)]
struct SearchReport {
    items: Vec<MemoryItem>,
}

impl Report for SearchReport {
    fn text(&self, out: &mut Text) {
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
    let store = super::read_stores(&place.place(), Some(embed))?;
    let items =
        planlock::block_on(store.search(text, top_k)).map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    out.report(&SearchReport { items });
    Ok(EXIT_VALID)
}
