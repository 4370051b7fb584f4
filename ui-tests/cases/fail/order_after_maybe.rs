#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

// A `maybe_` step that was left out still holds its place in the order.
fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat")
        .top_k(3)
        .context_select("ctx", ctx())
        .maybe_retrieve_decision_context("decisions", None)
        .retrieve_memory("memory", "query");
}
