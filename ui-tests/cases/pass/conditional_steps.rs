#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

use planlock_contract::builder::{CanAdd, TopKState};
use planlock_contract::steps::PersistEvidence;

struct Config {
    memory: bool,
    scan: Option<String>,
}

// A helper that adds a step in any state that allows it: one bound.
fn with_evidence<S: CanAdd<PersistEvidence>, M: TopKState>(
    builder: PlanBuilder<S, M>,
) -> PlanBuilder<PersistEvidence, M> {
    let evidence = Evidence { id: "e".into(), summary: "s".into(), source: "ci".into() };
    builder.persist_evidence("evidence", PersistEvidencePayload { evidence })
}

fn plan(cfg: &Config) -> planlock_contract::ValidPlan {
    let scan = cfg.scan.clone().map(|repo_path| RepoScanPayload { repo_path });
    let b = PlanBuilder::new("profiles/default", "chat")
        .top_k(3)
        .maybe_repo_scan("scan", scan)
        .context_select("ctx", ctx())
        .maybe_retrieve_memory("memory", cfg.memory.then(|| "query".to_string()))
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm());
    with_evidence(b).persist_session("save", save()).build().unwrap()
}

fn main() {
    assert_eq!(plan(&Config { memory: true, scan: Some(".".into()) }).steps().len(), 7);
    assert_eq!(plan(&Config { memory: false, scan: None }).steps().len(), 5);
}
