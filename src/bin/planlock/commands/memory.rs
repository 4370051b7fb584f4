//! `planlock memory search`: what `RetrieveMemory` would find, searched with the session's pinned
//! providers (by meaning with the pinned embedder under a `sqlite-semantic` pin). A read:
//! nothing written, no lock or lease taken.

use std::sync::Arc;

use planlock::Failure as _;
use planlock::embed::{DemoEmbedder, Embedder};
use planlock::handlers::{EmbedConfig, OpenAiEmbedder};
use planlock::schema::MemoryItem;
use planlock::session::{FileRecords, SessionRecords};
use planlock::store::MemoryRepositoryPort;
use planlock::store::bundle::BundleManifest;
use planlock::store::provider::ResolvedStore;
use planlock::store::sqlite::SqliteStore;
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
    let store = match semantic_memories_of(place, embed)? {
        Some(store) => store,
        None => place.place().read_stores().map_err(|e| CliError::of_place(&e))?,
    };
    let items =
        planlock::block_on(store.search(text, top_k)).map_err(|e| CliError::fail_fast(e.code(), e.to_string()))?;
    out.report(&SearchReport { items });
    Ok(EXIT_VALID)
}

/// The memories of a session root whose pin names the provider `sqlite-semantic`: searched as
/// `RetrieveMemory` searches them, by meaning with the pinned embedder (the one the flags name,
/// or the demo's), read-only. `None` for any other root.
fn semantic_memories_of(place: &SessionPlace, embed: &EmbedArgs) -> Result<Option<ResolvedStore>, CliError> {
    use planlock::store::sqlite::semantic::{MEMORY_PROVIDER, SemanticMemory};
    let fail_fast = |e: &dyn std::fmt::Display| CliError::fail_fast("embedder-mismatch", e.to_string());
    let Some(root) = &place.root else { return Ok(None) };
    let pin = match planlock::block_on(FileRecords::new(root).load_pin()) {
        Ok(Some(pin)) if pin.memory_provider_id.as_deref() == Some(MEMORY_PROVIDER) => pin,
        Ok(_) => return Ok(None),
        Err(e) => return Err(CliError::of(&e)),
    };
    let manifest: BundleManifest = serde_json::from_value(serde_json::json!({
        "bundle_id": pin.bundle_id, "version": "pinned", "memory_provider_id": MEMORY_PROVIDER,
    }))
    .map_err(|e| fail_fast(&e))?;
    // The search is RetrieveMemory's.
    let (resolver, _) = embed.resolver(&manifest, |_| Some(planlock::StepType::RetrieveMemory))?;
    let (model, dimension) = resolver.embedder_of(&manifest).unwrap_or(("", 0));
    if pin.embedder_model.as_deref() != Some(model) || pin.embedder_dimension != Some(dimension as u64) {
        return Err(fail_fast(&format_args!(
            "the session's memories were embedded with `{}` ({} dimensions), not `{model}` ({dimension}); pass its --embed-url and --embed-model",
            pin.embedder_model.as_deref().map(planlock::printable).unwrap_or_default(),
            pin.embedder_dimension.unwrap_or(0)
        )));
    }
    let embedder: Arc<dyn Embedder> = match (&embed.embed_url, &embed.embed_model) {
        (Some(url), Some(name)) => Arc::new(OpenAiEmbedder::with_dimension(
            EmbedConfig::new(url, name).api_key_env(&embed.embed_api_key_env).purpose_member("input_type"),
            dimension,
        )),
        _ => Arc::new(DemoEmbedder::new()),
    };
    let memory = SemanticMemory::new(SqliteStore::open(root).read_only(), embedder);
    Ok(Some(ResolvedStore::new(Arc::new(memory), Arc::new(planlock::store::memory::InMemoryStore::new()))))
}
