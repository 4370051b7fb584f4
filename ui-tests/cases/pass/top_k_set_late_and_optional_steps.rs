#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let plan = PlanBuilder::new("profiles/default", "chat")
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() })
        .context_select("ctx", ctx())
        .top_k(3)
        .retrieve_memory("memory", "query")
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm())
        .link_decision_evidence("link", LinkDecisionEvidencePayload { decision_id: "d".into(), evidence_id: "e".into() })
        .persist_session("save", save())
        .build()
        .unwrap();
    assert_eq!(plan.steps().len(), 7);
}
