#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = up_to_llm_call()
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() });
}
