//! Plan hash and session store, each side by side with its floor (issue 5 targets):
//! - hashing a 12-step plan with its profile vs SHA-256 alone over the same canonical bytes (≤ 3×);
//! - a durable save vs the bare recipe written by hand: temp file, write, fsync, rename,
//!   directory fsync (≤ 1.2×), for the session file and for a paused cycle's record (issue 11);
//! - boot's session load (read, verify, compare) vs reading and parsing the file with serde_json
//!   (≤ 2×).
//!
//! The store benchmarks write under `target/`, a real disk, so the fsyncs are real.

use planlock::block_on;
use planlock::session::CycleGuard;
use std::hint::black_box;
use std::io::Write;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};

#[path = "common/paired.rs"]
mod paired;
use planlock::session::{
    BlockPhase, CompletedStep, EndOfCycle, FileSessionStore, InterventionRecord, SessionStore, SessionUpdate,
};
use planlock::{Digest, HashParts, PolicyProfile, ValidPlan, plan_hash};
use serde_json::json;

fn profile() -> PolicyProfile {
    PolicyProfile {
        path: "profiles/default".into(),
        modes: json!({"chat": {"tone": "friendly", "topK": 5}, "voice": {"tone": "calm"}}),
        triggers: json!([{"on": "greeting", "mode": "chat"}, {"on": "call", "mode": "voice"}]),
        bundles: json!({"default": {"strategy_provider_id": "hierarchical-sql", "memory_provider_id": "sqlite"}}),
    }
}

fn hand_save(dir: &Path, bytes: &[u8]) {
    let mut temp = tempfile::NamedTempFile::new_in(dir).unwrap();
    temp.write_all(bytes).unwrap();
    temp.as_file().sync_all().unwrap();
    temp.persist(dir.join("session_state.json")).unwrap();
    std::fs::File::open(dir).unwrap().sync_all().unwrap();
}

fn bench(c: &mut Criterion) {
    let plan = ValidPlan::from_str(include_str!("../tests/fixtures/full_plan.json")).unwrap();
    let profile = profile();
    let canonical = planlock::hash::hash_document_bytes(&profile, &plan).unwrap();
    assert_eq!(plan_hash(&profile, &plan), Digest::of(&canonical));

    let mut g = c.benchmark_group("plan_hash_12_steps");
    g.bench_function("floor_sha256_of_canonical_bytes", |b| b.iter(|| Digest::of(black_box(&canonical))));
    g.bench_function("reference_serde_json_to_vec_of_the_plan", |b| {
        b.iter(|| serde_json::to_vec(black_box(plan.plan())).unwrap())
    });
    // The general (serde-based) canonical writer, which `plan_hash` does not use for the plan.
    g.bench_function("canonical_json_of_the_hash_document_via_serde", |b| {
        b.iter(|| planlock::hash::hash_document_bytes(black_box(&profile), black_box(&plan)).unwrap())
    });
    g.bench_function("plan_hash", |b| b.iter(|| plan_hash(black_box(&profile), black_box(&plan))));
    g.bench_function("hash_parts", |b| b.iter(|| HashParts::of(black_box(&profile), black_box(&plan))));
    g.finish();
    paired::report(
        "plan_hash_12_steps",
        &mut [
            ("floor_sha256_of_canonical_bytes", &mut || {
                black_box(Digest::of(black_box(&canonical)));
            }),
            ("plan_hash", &mut || {
                black_box(plan_hash(black_box(&profile), black_box(&plan)));
            }),
        ],
    );

    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-session");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(base.join("store")).unwrap();
    std::fs::create_dir_all(base.join("hand")).unwrap();
    let store = FileSessionStore::open(base.join("store")).unwrap();
    let parts = HashParts::of(&profile, &plan);
    let update = SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: Some("mem-1".into()),
        repo_scan_version: Some("scan-1".into()),
        last_execution_plan_hash: plan_hash(&profile, &plan),
        hash_parts: Some(parts),
        cycle: 1,
    };
    let saved = block_on(store.end_cycle(EndOfCycle::saving(update.clone()), CycleGuard::none())).unwrap().unwrap();
    let bytes = std::fs::read(store.path()).unwrap();
    let hand_dir = base.join("hand");

    let mut g = c.benchmark_group("durable_save");
    g.sample_size(30);
    g.bench_function("floor_hand_written_recipe", |b| b.iter(|| hand_save(&hand_dir, black_box(&bytes))));
    g.bench_function("file_session_store_save", |b| {
        b.iter(|| {
            block_on(store.end_cycle(EndOfCycle::saving(black_box(update.clone())), CycleGuard::none()))
                .unwrap()
                .unwrap()
        })
    });
    g.finish();
    paired::report(
        "durable_save",
        &mut [
            ("floor_hand_written_recipe", &mut || hand_save(&hand_dir, black_box(&bytes))),
            ("file_session_store_save", &mut || {
                drop(black_box(
                    block_on(store.end_cycle(EndOfCycle::saving(black_box(update.clone())), CycleGuard::none()))
                        .unwrap()
                        .unwrap(),
                ))
            }),
        ],
    );

    // The record of a paused cycle, with the results of five completed steps, saved the same way.
    let record = intervention(&plan, &saved);
    let _ = block_on(store.end_cycle(EndOfCycle::pausing(record.clone()), CycleGuard::none())).unwrap();
    let record_bytes = std::fs::read(base.join("store").join(planlock::session::INTERVENTION_FILE)).unwrap();
    let mut g = c.benchmark_group("intervention_save");
    g.sample_size(30);
    g.bench_function("floor_hand_written_recipe", |b| b.iter(|| hand_save(&hand_dir, black_box(&record_bytes))));
    g.bench_function("file_session_store_save_intervention", |b| {
        b.iter(|| {
            block_on(store.end_cycle(EndOfCycle::pausing(black_box(&record).clone()), CycleGuard::none())).unwrap()
        })
    });
    g.finish();
    paired::report(
        "intervention_save",
        &mut [
            ("floor_hand_written_recipe", &mut || hand_save(&hand_dir, black_box(&record_bytes))),
            ("file_session_store_save_intervention", &mut || {
                let ended =
                    block_on(store.end_cycle(EndOfCycle::pausing(black_box(&record).clone()), CycleGuard::none()));
                black_box(ended.unwrap());
            }),
        ],
    );

    let expected = saved.last_execution_plan_hash;
    let mut g = c.benchmark_group("boot_load");
    g.bench_function("floor_read_and_serde_json_parse", |b| {
        b.iter(|| {
            serde_json::from_slice::<serde_json::Value>(&std::fs::read(black_box(store.path())).unwrap()).unwrap()
        })
    });
    g.bench_function("file_session_store_load_and_compare", |b| {
        b.iter(|| {
            block_on(store.records().load()).unwrap().is_some_and(|s| s.last_execution_plan_hash == black_box(expected))
        })
    });
    g.finish();
    paired::report(
        "boot_load",
        &mut [
            ("floor_read_and_serde_json_parse", &mut || {
                let bytes = std::fs::read(black_box(store.path())).unwrap();
                drop(black_box(serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()));
            }),
            ("file_session_store_load_and_compare", &mut || {
                black_box(
                    block_on(store.records().load())
                        .unwrap()
                        .is_some_and(|s| s.last_execution_plan_hash == black_box(expected)),
                );
            }),
        ],
    );
}

/// A paused cycle's record as the runtime writes it: blocked at the sixth step, the five before
/// it with their results.
fn intervention(plan: &planlock::ValidPlan, saved: &planlock::session::SessionState) -> InterventionRecord {
    let completed = plan.steps()[..5]
        .iter()
        .map(|s| CompletedStep {
            id: s.id.clone(),
            step_type: s.step_type(),
            result: serde_json::json!({"prompt": "Answer the question with the repository's context", "n": 1}),
        })
        .collect();
    InterventionRecord {
        session_id: saved.session_id,
        plan_hash: saved.last_execution_plan_hash,
        cycle: 1,
        step_id: plan.steps()[5].id.clone(),
        step_type: plan.steps()[5].step_type(),
        phase: BlockPhase::Pre,
        validator: planlock::ValidatorSignature {
            id: "pii-guard".into(),
            version: "2".into(),
            config_hash: planlock::config_hash(&serde_json::json!({})).to_string(),
        },
        reason: "the prompt may carry personal data".into(),
        completed,
        created_at: planlock::session::Timestamp::now(),
        shown: Some(serde_json::json!({"payload": {"prompt": "Answer", "config": {}}, "results": {}})),
        shown_digest: Some(planlock::Digest::of(b"shown")),
        shown_truncated: false,
        expires_at: None,
        trace_parent: None,
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
