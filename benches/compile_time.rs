//! Compile time of the typestate builder: `cargo check` of a generated crate with 1,000
//! builder-built plans against the same 1,000 plans written as `ExecutionPlan` struct literals.
//! Target (issue 3): at most 2× the struct-literal time.
//!
//! Run: `cargo bench --bench compile_time` (about two minutes: it builds a scratch crate in a
//! temporary directory, then times three alternating rounds of each variant and prints medians).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PLANS: usize = 1000;
const ROUNDS: usize = 3;

/// `(builder method, StepPayload variant, payload expression, optional)` in canonical order:
/// the four mandatory steps and six optional ones, so 64 shapes repeat across the 1,000 plans.
const STEPS: &[(&str, &str, &str, bool)] = &[
    ("repo_scan", "RepoScan", "RepoScanPayload { repo_path: \"{i}\".into() }", true),
    (
        "context_select",
        "ContextSelect",
        "ContextSelectPayload { input: \"{i}\".into(), sources: vec![\"repo\".into()] }",
        false,
    ),
    (
        "retrieve_decision_context",
        "RetrieveDecisionContext",
        "RetrieveDecisionContextPayload { input: \"{i}\".into(), current_domain: None }",
        true,
    ),
    (
        "prompt_assemble",
        "PromptAssemble",
        "PromptAssemblePayload { template: \"{i}\".into(), vars: AnyObject::new() }",
        false,
    ),
    ("llm_call", "LLMCall", "LlmCallPayload { prompt: \"{i}\".into(), config: AnyObject::new() }", false),
    ("summarize_memory", "SummarizeMemory", "SummarizeMemoryPayload { response: \"{i}\".into() }", true),
    (
        "persist_memory",
        "PersistMemory",
        "PersistMemoryPayload { summary: \"{i}\".into(), keywords: vec![], session_ref: \"s\".into() }",
        true,
    ),
    (
        "persist_evidence",
        "PersistEvidence",
        "PersistEvidencePayload { evidence: Evidence { id: \"{i}\".into(), summary: \"s\".into(), source: \"x\".into() } }",
        true,
    ),
    (
        "link_decision_evidence",
        "LinkDecisionEvidence",
        "LinkDecisionEvidencePayload { decision_id: \"d\".into(), evidence_id: \"{i}\".into() }",
        true,
    ),
    (
        "persist_session",
        "PersistSession",
        "PersistSessionPayload { session_ref: \"{i}\".into(), meta: AnyObject::new() }",
        false,
    ),
];

fn chosen(i: usize) -> Vec<(&'static str, &'static str, String)> {
    let mut bit = 0;
    STEPS
        .iter()
        .filter(|(_, _, _, optional)| {
            if !optional {
                return true;
            }
            bit += 1;
            i & (1 << (bit - 1)) != 0
        })
        .map(|(m, v, p, _)| (*m, *v, p.replace("{i}", &i.to_string())))
        .collect()
}

fn generate(builder: bool) -> String {
    let mut src = String::from("#![allow(dead_code)]\nuse planlock::schema::*;\nuse planlock::*;\n\n");
    for i in 0..PLANS {
        if builder {
            let _ = write!(
                src,
                "pub fn plan_{i}() -> Result<ValidPlan, Rejection> {{\n    PlanBuilder::new(\"p\", \"chat\")"
            );
            for (method, _, payload) in chosen(i) {
                let _ = write!(src, "\n        .{method}(\"{method}\", {payload})");
            }
            src.push_str("\n        .build()\n}\n\n");
        } else {
            let _ = write!(
                src,
                "pub fn plan_{i}() -> ExecutionPlan {{\n    ExecutionPlan {{\n        step_contract_version: ContractVersion,\n        extensions: Extensions,\n        metadata: PlanMetadata {{ policy_profile: \"p\".into(), mode: \"chat\".into(), top_k: None, timeouts: None, budgets: None }},\n        validators: vec![],\n        post_validators: vec![],\n        steps: vec!["
            );
            for (method, variant, payload) in chosen(i) {
                let _ = write!(
                    src,
                    "\n            StepDefinition {{ id: \"{method}\".into(), payload: StepPayload::{variant}({payload}) }},"
                );
            }
            src.push_str("\n        ],\n    }\n}\n\n");
        }
    }
    src.push_str("fn main() {}\n");
    src
}

fn check(dir: &Path, bin: &str) -> Duration {
    let file = dir.join(format!("src/bin/{bin}.rs"));
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text).unwrap(); // a new mtime, so cargo checks it again
    let start = Instant::now();
    let status = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--bin", bin])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .status()
        .unwrap();
    assert!(status.success(), "cargo check --bin {bin} failed");
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` and `--list` must not run a two-minute benchmark
    }
    let dir = std::env::temp_dir().join(format!("planlock-compile-time-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    let manifest = format!(
        "[package]\nname = \"ct\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n[dependencies]\nplanlock = {{ path = {:?} }}\n\n[workspace]\n",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/bin/builder.rs"), generate(true)).unwrap();
    std::fs::write(dir.join("src/bin/literal.rs"), generate(false)).unwrap();
    // Warm: dependencies and both files once.
    check(&dir, "literal");
    check(&dir, "builder");
    let (mut b, mut l) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        l.push(check(&dir, "literal"));
        b.push(check(&dir, "builder"));
    }
    let (b, l) = (median(b), median(l));
    println!(
        "cargo check, {PLANS} plans: struct literals {l:?}, typestate builder {b:?}, ratio {:.2}",
        b.as_secs_f64() / l.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
