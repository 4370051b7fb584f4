//! Validating a realistic 12-step plan from bytes, side by side with:
//! the floor (serde_json into the typed model, no plan checks), `serde_json::Value` parsing, and
//! the `jsonschema` crate (parse + validate against the producers' schema, `schema/plan-v1.schema.json`). The floor is
//! also given the way `ValidPlan::from_slice` parses (UTF-8 checked once, then from a `str`), so
//! accepting can be compared with both.
//!
//! Run: `cargo bench --bench validate`. Targets (issue 2): accept ≤ 1.3× floor and ≥ 2× faster
//! than jsonschema; a full rejection report ≤ 3× floor.

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/paired.rs"]
mod paired;
use planlock::{ExecutionPlan, ValidPlan};
use std::hint::black_box;

const PLAN: &[u8] = include_bytes!("../tests/fixtures/full_plan.json");
const SCHEMA: &str = include_str!("../schema/plan-v1.schema.json");

fn bad_plan() -> Vec<u8> {
    String::from_utf8_lossy(PLAN)
        .replace(r#""mode": "chat""#, r#""mode": "chat", "retries": 3"#)
        .replace(r#""id": "memory""#, r#""id": "scan""#)
        .replace(r#""type": "PromptAssemble""#, r#""type": "PromptAssembly""#)
        .replace(r#""onSuccess""#, "")
        .into_bytes()
}

fn bench(c: &mut Criterion) {
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(ValidPlan::from_slice(PLAN).is_ok());
    assert!(validator.is_valid(&serde_json::from_slice(PLAN).unwrap()));
    let bad = bad_plan();
    assert_eq!(ValidPlan::from_slice(&bad).unwrap_err().problems().len(), 3);

    let mut g = c.benchmark_group("validate_12_step_plan");
    g.bench_function("floor_serde_typed", |b| {
        b.iter(|| serde_json::from_slice::<ExecutionPlan>(black_box(PLAN)).unwrap())
    });
    // The floor again, with the one trick `ValidPlan::from_slice` uses: UTF-8 checked once for
    // the whole document, then parsed as a `str` (no per-string UTF-8 check).
    g.bench_function("floor_serde_typed_via_str", |b| {
        b.iter(|| serde_json::from_str::<ExecutionPlan>(std::str::from_utf8(black_box(PLAN)).unwrap()).unwrap())
    });
    g.bench_function("parse_only_ignored_any", |b| {
        b.iter(|| serde_json::from_slice::<serde::de::IgnoredAny>(black_box(PLAN)).unwrap())
    });
    g.bench_function("serde_json_value", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Value>(black_box(PLAN)).unwrap())
    });
    g.bench_function("jsonschema_parse_and_validate", |b| {
        b.iter(|| validator.is_valid(&serde_json::from_slice::<serde_json::Value>(black_box(PLAN)).unwrap()))
    });
    g.bench_function("planlock_accept", |b| b.iter(|| ValidPlan::from_slice(black_box(PLAN)).unwrap()));
    g.bench_function("planlock_reject_full_report", |b| b.iter(|| ValidPlan::from_slice(black_box(&bad)).unwrap_err()));
    g.finish();
    paired::report(
        "validate_12_step_plan",
        &mut [
            ("floor_serde_typed", &mut || drop(black_box(serde_json::from_slice::<ExecutionPlan>(black_box(PLAN))))),
            ("planlock_accept", &mut || drop(black_box(ValidPlan::from_slice(black_box(PLAN))))),
            ("jsonschema_parse_and_validate", &mut || {
                black_box(validator.is_valid(&serde_json::from_slice::<serde_json::Value>(black_box(PLAN)).unwrap()));
            }),
            ("planlock_reject_full_report", &mut || drop(black_box(ValidPlan::from_slice(black_box(&bad))))),
        ],
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
