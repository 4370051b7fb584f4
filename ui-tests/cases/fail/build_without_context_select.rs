#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .repo_scan("scan", RepoScanPayload { repo_path: ".".into() })
        .build();
}
