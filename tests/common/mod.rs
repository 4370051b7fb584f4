//! Helpers shared by the lifecycle and CLI tests.
#![allow(dead_code)]

use std::path::Path;

use planlock::ValidPlan;
use serde_json::{Value, json};

pub const DEMO_PLAN: &str = include_str!("../../examples/plans/demo_plan.json");

pub fn policy(root: &Path, tone: &str) {
    let dir = root.join("profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.yaml"), format!("chat:\n  tone: {tone}\n")).unwrap();
    std::fs::write(dir.join("triggers.yaml"), "[]\n").unwrap();
    std::fs::write(dir.join("bundles.yaml"), "{}\n").unwrap();
}

pub fn plan_with(f: impl FnOnce(&mut Value)) -> ValidPlan {
    let mut v: Value = serde_json::from_str(DEMO_PLAN).unwrap();
    v["steps"][0]["payload"]["repoPath"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    f(&mut v);
    ValidPlan::from_value(&v).unwrap()
}
