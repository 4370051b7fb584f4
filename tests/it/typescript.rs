//! The producers' side, end to end: the committed JSON Schema is what planlock generates; the
//! committed TypeScript types are what json-schema-to-typescript generates from it; the
//! TypeScript producer in `examples/typescript/` type-checks against them (its wrong plans must
//! not), and the plan it writes is one planlock accepts, with the plan hash planlock computes.
//!
//! Needs node and npm (npm packages come from `examples/typescript/package-lock.json`, installed
//! here when `node_modules` is missing). Without node the TypeScript test is skipped with a loud
//! message; `.ci/run` makes sure node is there.

use std::path::{Path, PathBuf};
use std::process::Command;

use planlock::{PolicyProfile, ValidPlan};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_schema_is_the_generated_one() {
    let committed = std::fs::read_to_string(root().join("schema/plan-v1.schema.json")).unwrap();
    let generated = format!("{:#}\n", planlock::plan_json_schema());
    assert!(
        committed == generated,
        "schema/plan-v1.schema.json differs from what planlock generates; run\n  \
         cargo run -p planlock-cli -- schema > schema/plan-v1.schema.json\n  \
         (cd examples/typescript && npm run generate)\nand commit both"
    );
}

/// Runs `program args` in `dir`; panics with its output when it fails.
fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`{program} {}` failed in {}:\n{text}", args.join(" "), dir.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn node_version() -> Option<String> {
    let out = Command::new("node").arg("--version").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn a_typescript_producer_writes_a_plan_planlock_accepts_with_the_same_hash() {
    let Some(version) = node_version() else {
        eprintln!(
            "\n\n    ==================== SKIPPED ====================\n    \
             node is not installed: the TypeScript producer test did not run.\n    \
             Install Node.js >= 18 and npm (`.ci/run` does) to run it.\n    \
             =================================================\n"
        );
        return;
    };
    eprintln!("node {version}");
    let dir = root().join("examples/typescript");
    if !dir.join("node_modules/.package-lock.json").exists() {
        run(&dir, "npm", &["ci", "--no-audit", "--no-fund", "--prefer-offline"]);
    }
    // The committed .d.ts is what json-schema-to-typescript makes of the committed schema.
    run(&dir, "node", &["scripts/types.mjs", "--check"]);
    // The producer and the wrong plans type-check as they must (each @ts-expect-error line in
    // src/wrong-plans.ts has to be an error).
    run(&dir, "node", &["node_modules/typescript/bin/tsc", "-p", "."]);

    let tmp = tempfile::tempdir().unwrap();
    let plan_file = tmp.path().join("plan.json");
    let hash_file = tmp.path().join("plan.hash");
    let policy_root = root().join("examples/policy");
    let printed = run(
        &dir,
        "node",
        &[
            "dist/producer.js",
            "--policy-root",
            policy_root.to_str().unwrap(),
            "--out",
            plan_file.to_str().unwrap(),
            "--hash-out",
            hash_file.to_str().unwrap(),
        ],
    );

    let text = std::fs::read_to_string(&plan_file).unwrap();
    let plan =
        ValidPlan::from_str(&text).unwrap_or_else(|e| panic!("planlock rejects the TypeScript plan: {e}\n{text}"));
    let profile = PolicyProfile::load(&policy_root, &plan.metadata().policy_profile).unwrap();
    let ours = planlock::plan_hash(&profile, &plan).to_string();
    let theirs = std::fs::read_to_string(&hash_file).unwrap();
    assert_eq!(theirs.trim(), ours, "the TypeScript producer's plan hash differs from planlock's");
    assert_eq!(printed.trim(), ours);

    // The plan exercises what a careless canonical form gets wrong: doubles and non-ASCII keys.
    let vars = &plan.plan().steps[3].payload;
    let vars = serde_json::to_value(vars).unwrap();
    assert_eq!(vars["vars"]["weights"][1], 1e-7);
    assert!(vars["vars"].get("\u{1f600}").is_some());
}
