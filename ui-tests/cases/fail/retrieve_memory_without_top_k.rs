#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .context_select("ctx", ctx())
        .retrieve_memory("memory", "query");
}
