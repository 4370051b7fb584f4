//! Instruction counts for the validation benchmark, for ratios that do not depend on machine
//! noise. `cargo bench --bench validate_counts` runs every case once as a smoke check; to count:
//!
//! ```text
//! cargo bench --no-run --bench validate_counts
//! for m in floor floor_str value jsonschema accept reject; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/deps/validate_counts-* $m 2>&1 | grep refs
//! done
//! ```

use planlock::{ExecutionPlan, ValidPlan};
use std::hint::black_box;

const PLAN: &[u8] = include_bytes!("../tests/fixtures/full_plan.json");
const SCHEMA: &str = include_str!("../schema/plan-v1.schema.json");
const ITERATIONS: usize = 2000;

fn main() {
    let bad = String::from_utf8_lossy(PLAN)
        .replace(r#""mode": "chat""#, r#""mode": "chat", "retries": 3"#)
        .replace(r#""id": "memory""#, r#""id": "scan""#)
        .replace(r#""type": "PromptAssemble""#, r#""type": "PromptAssembly""#);
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let modes: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let all = ["floor", "floor_str", "value", "jsonschema", "accept", "reject"].map(String::from).to_vec();
    let (modes, n) = if modes.is_empty() { (all, 1) } else { (modes, ITERATIONS) };
    for mode in &modes {
        for _ in 0..n {
            match mode.as_str() {
                "floor" => drop(black_box(serde_json::from_slice::<ExecutionPlan>(black_box(PLAN)).unwrap())),
                "floor_str" => {
                    let json = std::str::from_utf8(black_box(PLAN)).unwrap();
                    drop(black_box(serde_json::from_str::<ExecutionPlan>(json).unwrap()))
                }
                "value" => drop(black_box(serde_json::from_slice::<serde_json::Value>(black_box(PLAN)).unwrap())),
                "jsonschema" => {
                    let v: serde_json::Value = serde_json::from_slice(black_box(PLAN)).unwrap();
                    assert!(validator.is_valid(black_box(&v)));
                }
                "accept" => drop(black_box(ValidPlan::from_slice(black_box(PLAN)).unwrap())),
                "reject" => drop(black_box(ValidPlan::from_str(black_box(&bad)).unwrap_err())),
                other => panic!("unknown mode {other}"),
            }
        }
    }
}
