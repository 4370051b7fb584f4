#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .prompt_assemble("prompt", prompt())
        .llm_call("llm", llm())
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() });
}
