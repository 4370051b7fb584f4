#![allow(unused_imports, dead_code)]
#[path = "../prelude.rs"]
mod prelude;
use planlock::{PlanBuilder, schema::*};
use prelude::*;

use std::num::NonZeroU32;

fn main() {
    let k = NonZeroU32::new(5).unwrap();
    let _ = PlanBuilder::new("profiles/default", "chat").top_k(k).top_k(k);
}
