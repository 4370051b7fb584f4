#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock::{CycleSession, Digest, PlanBuilder, schema::*};
use prelude::*;

// A session's identity and hash are the runtime's: a caller cannot make one up.
fn main() {
    let _ = CycleSession { session_id: uuid::Uuid::nil(), plan_hash: Digest::of(b"any"), cycle: 1 };
}
