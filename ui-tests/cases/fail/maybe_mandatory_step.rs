#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock_contract::{PlanBuilder, schema::*};
use prelude::*;

// Mandatory steps have no `maybe_` form.
fn main() {
    let _ = PlanBuilder::new("profiles/default", "chat").maybe_context_select("ctx", Some(ctx()));
}
