//! The semantic providers' vectors are input too (CONTRACT §11): one bad row never breaks a
//! search (a memory deleted under its vector, a vector without a memory, a NaN or all-zero
//! vector edited into the table: passed over, counted, reported once per search as a warning on
//! the step), a huge blob is told apart by its length before it is loaded, degenerate vectors
//! from an embedder are refused, and so is a dimension past `embed::MAX_DIMENSION` when the pin
//! is made.
#![cfg(all(feature = "sqlite", unix))]

use crate::common;
use planlock::store::Call;

use std::path::Path;
use std::sync::Arc;

use planlock::demo::Demo;
use planlock::embed::{DemoEmbedder, EmbedFuture, Embedder, MAX_DIMENSION, Purpose};
use planlock::executor::WarnedBy;
use planlock::runtime::{RunOutcome, Runtime};
use planlock::session::FileSessionStore;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::sqlite::SqliteStore;
use planlock::store::sqlite::semantic::{SemanticDecisions, SemanticMemory};
use planlock::store::{DecisionContextProviderPort, MemoryRepositoryPort, NewMemory, StoreHandlers};
use planlock::{Failure, StepType};

use common::{plan_with, policy};

fn semantic_bundle() -> BundleManifest {
    BundleManifest::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic"))).unwrap()
}

fn database(root: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(root.join("ops/store/planlock.sqlite3")).unwrap()
}

/// A session root whose semantic store the demo plan has run `cycles` cycles on.
fn session(cycles: usize) -> (tempfile::TempDir, tempfile::TempDir) {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    for _ in 0..cycles {
        let outcome = runtime(pol.path(), root.path(), Arc::new(DemoEmbedder::new())).unwrap().run_cycle_blocking();
        assert!(matches!(outcome, Ok(RunOutcome::Completed(_))), "{outcome:?}");
    }
    (pol, root)
}

fn runtime(
    pol: &Path,
    root: &Path,
    embedder: Arc<dyn Embedder>,
) -> Result<Runtime<FileSessionStore, impl planlock::handler::HandlerSet>, planlock::runtime::BootError> {
    let manifest = semantic_bundle();
    let resolver = StrategyResolver::default().embedder(embedder);
    let storage = StoreHandlers::new(resolver.resolve(&manifest, root).unwrap());
    let plan = plan_with(|v| {
        // Two decisions in scope, so that semantic-sql ranks them (and reads their vectors).
        v["steps"][8]["payload"]["decision"]["scope"] = serde_json::json!("global");
    });
    crate::common::runtime_on(pol, root, plan)
        .handlers(Demo::new().with_store(&storage).boxed())
        .bundle(manifest)
        .resolver(resolver)
        .boot_blocking()
}

/// The warnings the handler of `step` gave in a cycle.
fn handler_warnings(report: &planlock::CycleReport, step: StepType) -> Vec<String> {
    report
        .steps
        .iter()
        .filter(|s| s.step_type == step)
        .flat_map(|s| s.warnings.iter())
        .filter(|w| w.by == WarnedBy::Handler)
        .map(|w| w.message.clone())
        .collect()
}

#[test]
fn bad_vector_rows_are_passed_over_counted_and_reported_once_per_search() {
    let (pol, root) = session(2);
    let db = database(root.path());
    // A memory deleted under its vector, a vector whose memory never was, a NaN vector and an
    // all-zero one over memories that are there.
    db.execute_batch(
        "DELETE FROM memories WHERE rowid = 1;
         INSERT INTO memory_vectors (memory_rowid, vector) VALUES (99, zeroblob(1536));",
    )
    .unwrap();
    let nan: Vec<u8> = (0..384).flat_map(|i| if i == 0 { f32::NAN } else { 0.05 }.to_le_bytes()).collect();
    db.execute("UPDATE memory_vectors SET vector = ?1 WHERE memory_rowid = 2", [nan]).unwrap();
    drop(db);
    // A third cycle: RetrieveMemory completes, and says what it passed over, once.
    let mut rt = runtime(pol.path(), root.path(), Arc::new(DemoEmbedder::new())).unwrap();
    let Ok(RunOutcome::Completed(done)) = rt.run_cycle_blocking() else { panic!("the cycle must complete") };
    let warnings = handler_warnings(&done.report, StepType::RetrieveMemory);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("3 stored memories could not be read"), "{warnings:?}");
    drop(rt);
    // The CLI's search answers too, without the deleted memory.
    let out = crate::common::cli::planlock()
        .args(["memory", "search", "--format", "json", "--root"])
        .arg(root.path())
        .arg("key rotation")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["items"].as_array().unwrap().len(), 2, "{found}");
}

#[test]
fn a_nan_vector_no_longer_ranks_first() {
    let root = tempfile::tempdir().unwrap();
    let store = SemanticMemory::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    for (n, text) in ["lunch menu for friday", "rotation of the api keys"].iter().enumerate() {
        let key = planlock::store::conformance::key(n as u64);
        planlock::block_on(
            store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: text, keywords: &[] }),
        )
        .unwrap();
    }
    let nan: Vec<u8> = std::iter::repeat_n(f32::NAN.to_le_bytes(), 384).flatten().collect();
    database(root.path()).execute("UPDATE memory_vectors SET vector = ?1 WHERE memory_rowid = 1", [nan]).unwrap();
    let reader = SemanticMemory::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    let call = Call::new();
    let found = planlock::block_on(reader.search(&call, "api keys", 1)).unwrap();
    assert_eq!(found[0].summary, "rotation of the api keys");
    assert_eq!(call.warnings().len(), 1, "{:?}", call.warnings());
    assert!(call.warnings()[0].starts_with("1 stored memories could not be read"), "{:?}", call.warnings());
}

#[test]
fn a_huge_vector_blob_is_not_loaded() {
    use planlock::store::DecisionWritePort;
    let (pol, root) = session(1);
    // A second decision in scope, so that semantic-sql ranks them and reads their vectors.
    let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    let second: planlock::schema::Decision = serde_json::from_value(serde_json::json!({
        "id": "d-2", "rootId": "d-2", "version": 1, "text": "keys rotate yearly", "strength": "should",
        "scope": "axis", "isActive": true
    }))
    .unwrap();
    planlock::block_on(strategy.persist_decision(&Call::new().keyed(planlock::store::conformance::key(7)), &second))
        .unwrap();
    // Its connection closed: the journal mode changes below only with none open.
    drop(strategy);
    // A search, and a cycle (its RetrieveMemory and its semantic-sql RetrieveDecisionContext),
    // each in a child whose peak memory is measured: first on sound vectors, for the baseline.
    let plan = pol.path().join("plan.json");
    std::fs::write(
        &plan,
        plan_with(|v| v["steps"][8]["payload"]["decision"]["scope"] = serde_json::json!("global")).to_json(),
    )
    .unwrap();
    let bundle = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic");
    let policy = pol.path().to_str().unwrap();
    let run = ["run", "--bundle", bundle, "--policy-root", policy, plan.to_str().unwrap()];
    let commands = [&["memory", "search", "key rotation"][..], &run[..]];
    let peaks = |root: &Path| -> Vec<i64> {
        let command = |args: &[&str]| {
            let child = crate::common::cli::planlock()
                .args(args)
                .arg("--root")
                .arg(root)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            peak_rss_kib(child)
        };
        commands.iter().map(|args| command(args)).collect()
    };
    let baseline = peaks(root.path());
    // 64 MiB in a memory's vector and in each decision's, told apart by their length in SQL. The
    // rollback journal holds only the pages the update replaces (a WAL would hold the blobs
    // again): about 200 MiB of disk in all.
    const BLOB: i64 = 64 << 20;
    let db = database(root.path());
    let _: String = db.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0)).unwrap();
    db.execute("UPDATE memory_vectors SET vector = zeroblob(?1) WHERE memory_rowid = 1", [BLOB]).unwrap();
    db.execute("UPDATE decision_vectors SET vector = zeroblob(?1)", [BLOB]).unwrap();
    drop(db);
    for ((args, before), after) in commands.iter().zip(&baseline).zip(peaks(root.path())) {
        // A loaded blob would add all of its 64 MiB at least; allow a quarter of that for noise.
        assert!(
            after < before + BLOB / 1024 / 4,
            "{args:?}: peak memory {after} KiB against {before} KiB on sound vectors: a blob was loaded"
        );
    }
}

/// Waits for `child` and returns its peak resident set (`ru_maxrss`, KiB), from `wait4`.
fn peak_rss_kib(child: std::process::Child) -> i64 {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data (all-zero is a valid value), and `wait4` writes only into
    // the two places it is given, for a child of this process that nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the command failed");
    usage.ru_maxrss
}

/// Makes a vector of `n` numbers.
type Make = fn(usize) -> Vec<f32>;

/// An embedder answering degenerate vectors.
struct Degenerate(Make);

impl Embedder for Degenerate {
    fn model(&self) -> &str {
        "degenerate"
    }
    fn dimension(&self) -> usize {
        4
    }
    fn embed<'a>(&'a self, texts: &'a [String], _: Purpose, _: Option<std::time::Instant>) -> EmbedFuture<'a> {
        Box::pin(std::future::ready(Ok(texts.iter().map(|_| (self.0)(4)).collect())))
    }
}

#[test]
fn degenerate_vectors_from_an_embedder_are_refused() {
    let cases: [(Make, &str); 4] = [
        (|n| vec![f32::NAN; n], "not finite"),
        (|n| vec![0.0; n], "all zeros"),
        (|n| vec![1e-40; n], "denormal"),
        (|n| vec![3e38; n], "overflow"),
    ];
    for (vector, why) in cases {
        let root = tempfile::tempdir().unwrap();
        let store = SemanticMemory::new(SqliteStore::open(root.path()), Arc::new(Degenerate(vector)));
        let key = planlock::store::conformance::key(1);
        let err = planlock::block_on(
            store.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "x", keywords: &[] }),
        )
        .unwrap_err();
        assert!(err.to_string().contains(why), "{why}: {err}");
        assert_eq!(err.code(), "embed-answer");
        let err = planlock::block_on(store.search(&Call::new(), "x", 1)).unwrap_err();
        assert!(err.to_string().contains(why), "{why}: {err}");
        let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), Arc::new(Degenerate(vector)));
        assert!(
            planlock::block_on(strategy.load(&Call::new(), "x", None)).is_ok(),
            "nothing to rank, nothing embedded"
        );
    }
}

/// An embedder claiming a dimension past the bound.
struct Wide;

impl Embedder for Wide {
    fn model(&self) -> &str {
        "wide"
    }
    fn dimension(&self) -> usize {
        4_000_000
    }
    fn embed<'a>(&'a self, _: &'a [String], _: Purpose, _: Option<std::time::Instant>) -> EmbedFuture<'a> {
        unreachable!("nothing is embedded by a session that is never pinned")
    }
}

#[test]
fn a_dimension_past_the_bound_is_refused_when_the_pin_is_made() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let err = runtime(pol.path(), root.path(), Arc::new(Wide)).err().expect("refused at boot");
    assert_eq!(err.code(), "embedder-dimension", "{err}");
    assert!(err.to_string().contains(&MAX_DIMENSION.to_string()), "{err}");
    assert!(!root.path().join("ops").exists(), "nothing written");
}

#[test]
fn the_semantic_decision_load_stops_at_the_steps_deadline() {
    use planlock::PositiveInt;
    use planlock::schema::Decision;
    use planlock::store::DecisionWritePort;
    let root = tempfile::tempdir().unwrap();
    let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    for n in 0..300u64 {
        let id = format!("d-{n}");
        let decision = Decision {
            id: id.clone(),
            root_id: id,
            version: PositiveInt::MIN,
            text: format!("rotate key number {n}"),
            strength: "must".into(),
            scope: "global".into(),
            is_active: true,
            previous_version_id: None,
        };
        planlock::block_on(
            strategy.persist_decision(&Call::new().keyed(planlock::store::conformance::key(n)), &decision),
        )
        .unwrap();
    }
    let err = planlock::block_on(strategy.load(&Call::new().until(std::time::Instant::now()), "rotate keys", None))
        .expect_err("a deadline already passed stops the load");
    assert!(err.to_string().contains("stopped at the step's deadline"), "{err}");
    assert_eq!(planlock::block_on(strategy.load(&Call::new(), "rotate keys", None)).unwrap().decisions.len(), 300);
}

/// An embedder that counts its calls and, as a server would, answers only within a deadline: it
/// waits out the deadline and fails, or (without one) takes `slow` to answer.
struct Counting {
    calls: std::sync::atomic::AtomicUsize,
    slow: std::time::Duration,
}

impl Embedder for Counting {
    fn model(&self) -> &str {
        DemoEmbedder::MODEL
    }
    fn dimension(&self) -> usize {
        DemoEmbedder::DIMENSION
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
        purpose: Purpose,
        deadline: Option<std::time::Instant>,
    ) -> EmbedFuture<'a> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            let now = std::time::Instant::now();
            let wait = deadline.map_or(self.slow, |d| d.saturating_duration_since(now).min(self.slow));
            futures_timer::Delay::new(wait).await;
            match deadline {
                Some(d) if std::time::Instant::now() >= d => {
                    Err(planlock::embed::EmbedError::new(self.model(), "no answer before the step's deadline"))
                }
                _ => DemoEmbedder::new().embed(texts, purpose, None).await,
            }
        })
    }
}

fn decision(n: u64) -> planlock::schema::Decision {
    planlock::schema::Decision {
        id: format!("d-{n}"),
        root_id: format!("d-{n}"),
        version: planlock::PositiveInt::MIN,
        text: format!("rotate key number {n}"),
        strength: "must".into(),
        scope: "global".into(),
        is_active: true,
        previous_version_id: None,
    }
}

#[test]
fn a_semantic_write_again_under_its_key_embeds_nothing() {
    use planlock::store::DecisionWritePort;
    let root = tempfile::tempdir().unwrap();
    let embedder = Arc::new(Counting { calls: Default::default(), slow: std::time::Duration::ZERO });
    let calls = || embedder.calls.load(std::sync::atomic::Ordering::SeqCst);
    let memory = SemanticMemory::new(SqliteStore::open(root.path()), embedder.clone());
    let key = planlock::store::conformance::key(1);
    let put = || {
        planlock::block_on(
            memory.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary: "x", keywords: &[] }),
        )
    };
    let first = put().unwrap();
    assert_eq!(calls(), 1);
    assert_eq!(put().unwrap(), first, "the same memory");
    assert_eq!(calls(), 1, "a re-run of the write pays for no embedding");

    let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), embedder.clone());
    let key = planlock::store::conformance::key(2);
    for _ in 0..3 {
        assert_eq!(
            planlock::block_on(strategy.persist_decision(&Call::new().keyed(key), &decision(1))).unwrap(),
            "d-1"
        );
    }
    assert_eq!(calls(), 2, "one embedding for the decision, written once");
}

#[test]
fn the_steps_deadline_reaches_the_embedder_of_a_semantic_write() {
    use planlock::store::DecisionWritePort;
    let root = tempfile::tempdir().unwrap();
    // Without the deadline, each write would wait 20 s for its embedding.
    let embedder = Arc::new(Counting { calls: Default::default(), slow: std::time::Duration::from_secs(20) });
    let memory = SemanticMemory::new(SqliteStore::open(root.path()), embedder.clone());
    let strategy = SemanticDecisions::new(SqliteStore::open(root.path()), embedder.clone());
    let key = planlock::store::conformance::key(1);
    let started = std::time::Instant::now();
    let call = Call::new().keyed(key).until(started + std::time::Duration::from_millis(200));
    let put = memory.put(&call, NewMemory { session_ref: "s", summary: "x", keywords: &[] });
    let err = planlock::block_on(put).unwrap_err();
    assert!(err.to_string().contains("deadline"), "{err}");
    let err = planlock::block_on(strategy.persist_decision(&call, &decision(1))).unwrap_err();
    assert!(err.to_string().contains("deadline"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "stopped at the deadline: {:?}", started.elapsed());
    // Nothing was stored by the writes that failed.
    assert!(planlock::block_on(SqliteStore::open(root.path()).search(&Call::new(), "x", 5)).unwrap().is_empty());
}
