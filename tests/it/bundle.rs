//! Bundles and pins: a strict manifest, ids resolved to implementations, the pin written with the
//! first completed cycle (never at boot), an older pin upgraded, a changed bundle refused.
#![cfg(feature = "sqlite")]

use planlock::store::Call;
use std::path::Path;

use planlock::demo::Demo;
use planlock::runtime::{BootError, Runtime};
use planlock::session::{BundlePinV1, FileSessionStore, PIN_FILE};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::{Failure, FailureKind};

use crate::common;
use common::{plan_with, policy};

fn manifest(dir: &Path, json: &str) -> Result<BundleManifest, planlock::store::bundle::BundleError> {
    std::fs::write(dir.join("manifest.json"), json).unwrap();
    BundleManifest::load(dir)
}

fn boot(
    pol: &Path,
    root: &Path,
    manifest: BundleManifest,
) -> Result<Runtime<FileSessionStore, planlock::handler::Boxed>, BootError> {
    let storage = StoreHandlers::new(StrategyResolver::default().resolve(&manifest, root).map_err(BootError::from)?);
    crate::common::runtime_on(pol, root, plan_with(|_| {}))
        .handlers(Demo::new().with_store(&storage).boxed())
        .bundle(manifest)
        .boot_blocking()
}

/// The pin as it is on disk (read directly: the runtime holds the store's lock).
fn pin(root: &Path) -> Option<BundlePinV1> {
    let text = std::fs::read_to_string(root.join(PIN_FILE)).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

#[test]
fn manifests_are_strict_and_default_their_providers() {
    let dir = tempfile::tempdir().unwrap();
    let m = manifest(dir.path(), r#"{"bundle_id": "support", "version": "3"}"#).unwrap();
    assert_eq!((m.strategy_id(), m.memory_id()), ("hierarchical-sql", "sqlite"));
    for bad in [
        r#"{"bundle_id": "b", "version": "1", "extra": true}"#,
        r#"{"version": "1"}"#,
        r#"{"bundle_id": "b", "version": "1", "memory_provider_id": null}"#,
        r#"["b", "1"]"#,
        "{",
    ] {
        let err = match manifest(dir.path(), bad) {
            Err(e) => e,
            Ok(m) => panic!("{bad} was accepted: {m:?}"),
        };
        assert_eq!(err.code(), "bundle-manifest", "{bad}: {err}");
        assert!(err.to_string().contains("manifest.json"), "{err}");
    }
    let missing = BundleManifest::load(&dir.path().join("nowhere")).unwrap_err();
    assert!(missing.to_string().contains("not found"), "{missing}");
    let unknown = manifest(dir.path(), r#"{"bundle_id": "b", "version": "1", "memory_provider_id": "redis"}"#).unwrap();
    let err = StrategyResolver::default().resolve(&unknown, dir.path()).unwrap_err();
    assert_eq!(err.code(), "unknown-provider");
    let known = StrategyResolver::default().memory_ids().collect::<Vec<_>>().join(", ");
    assert!(err.to_string().contains("`redis`") && err.to_string().contains(&known), "{err}");
}

#[test]
fn the_first_completed_cycle_pins_the_providers_and_a_changed_bundle_is_refused() {
    let (pol, root, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let mut rt = boot(pol.path(), root.path(), BundleManifest::default_bundle()).unwrap();
    assert!(pin(root.path()).is_none(), "boot pins nothing");
    rt.run_cycle_blocking().unwrap();
    drop(rt);
    let pinned = pin(root.path()).unwrap();
    assert_eq!(
        (pinned.bundle_id.as_str(), pinned.strategy_provider_id.as_deref(), pinned.memory_provider_id.as_deref()),
        ("default", Some("hierarchical-sql"), Some("sqlite"))
    );
    // The same providers boot again; other ones are refused, naming both.
    boot(pol.path(), root.path(), BundleManifest::default_bundle()).unwrap();
    let other =
        manifest(b.path(), r#"{"bundle_id": "default", "version": "2", "memory_provider_id": "in-memory"}"#).unwrap();
    let err = boot(pol.path(), root.path(), other).unwrap_err();
    assert_eq!((err.code(), err.kind()), ("pin-mismatch", FailureKind::FailFast));
    assert!(err.to_string().contains("`sqlite`") && err.to_string().contains("`in-memory`"), "{err}");
}

#[test]
fn an_older_pin_without_ids_is_upgraded_with_the_manifests() {
    let (pol, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let file = root.path().join(PIN_FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, r#"{"version": 1, "bundle_id": "default", "pinned_at": "2026-01-01T00:00:00Z"}"#).unwrap();
    let mut rt = boot(pol.path(), root.path(), BundleManifest::default_bundle()).unwrap();
    assert!(
        pin(root.path()).unwrap().memory_provider_id.is_none(),
        "upgraded with the next completed cycle, not at boot"
    );
    rt.run_cycle_blocking().unwrap();
    let upgraded = pin(root.path()).unwrap();
    assert_eq!(upgraded.memory_provider_id.as_deref(), Some("sqlite"));
    assert_eq!(upgraded.pinned_at.to_string(), "2026-01-01T00:00:00Z", "it keeps when the session was pinned");
    // A pin of another format version, or with unknown fields, is refused like a bad session file.
    std::fs::write(&file, r#"{"version": 2, "bundle_id": "default", "pinned_at": "2026-01-01T00:00:00Z"}"#).unwrap();
    drop(rt);
    let err = boot(pol.path(), root.path(), BundleManifest::default_bundle()).unwrap_err();
    assert_eq!(err.code(), "session-corrupt", "{err}");
}

/// The memory provider `postgres` lives in a shared database: resolved under a session root it
/// says so instead of silently falling back to another store.
#[cfg(feature = "postgres")]
#[test]
fn the_postgres_memory_provider_needs_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let shared = BundleManifest::default_shared_bundle();
    assert_eq!(shared.memory_id(), "postgres");
    let err = StrategyResolver::default().resolve(&shared, dir.path()).unwrap_err();
    assert_eq!(err.code(), "bundle-needs-database");
    assert!(err.to_string().contains("--database"), "{err}");
}

/// A strategy from outside planlock: decisions kept in memory, and every load counted.
#[derive(Clone, Default)]
struct Counting {
    store: planlock::store::memory::InMemoryStore,
    loads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl planlock::store::DecisionContextProviderPort for Counting {
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        domain: Option<&str>,
    ) -> Result<planlock::store::DecisionContext, planlock::store::StoreError> {
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.store.load(call, input, domain).await
    }
}

impl planlock::store::DecisionWritePort for Counting {
    async fn persist_decision(
        &self,
        call: &Call<'_>,
        d: &planlock::schema::Decision,
    ) -> Result<String, planlock::store::StoreError> {
        self.store.persist_decision(call, d).await
    }
    async fn persist_evidence(
        &self,
        call: &Call<'_>,
        e: &planlock::schema::Evidence,
    ) -> Result<String, planlock::store::StoreError> {
        self.store.persist_evidence(call, e).await
    }
    async fn link(&self, call: &Call<'_>, a: &planlock::schema::Anchor) -> Result<String, planlock::store::StoreError> {
        self.store.link(call, a).await
    }
}

#[test]
fn a_provider_from_outside_runs_through_a_bundle_and_is_pinned() {
    let (pol, root, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(pol.path(), "friendly");
    let counting = Counting::default();
    let seen_bundle = std::sync::Arc::new(std::sync::Mutex::new(None));
    let (provider, seen) = (counting.clone(), seen_bundle.clone());
    let resolver = StrategyResolver::default().strategy("counting", move |cx| {
        assert!(cx.root().is_some());
        *seen.lock().unwrap() = cx.bundle_dir.map(Path::to_owned);
        Ok(provider.clone())
    });
    let m =
        manifest(b.path(), r#"{"bundle_id": "outside", "version": "1", "strategy_provider_id": "counting"}"#).unwrap();
    let storage = StoreHandlers::new(resolver.resolve(&m, root.path()).unwrap());
    let mut rt = crate::common::runtime_on(pol.path(), root.path(), plan_with(|_| {}))
        .handlers(Demo::new().with_store(&storage).boxed())
        .bundle(m.clone())
        .resolver(resolver.clone())
        .boot_blocking()
        .unwrap();
    rt.run_cycle_blocking().unwrap();
    assert_eq!(counting.loads.load(std::sync::atomic::Ordering::SeqCst), 1, "RetrieveDecisionContext used it");
    assert_eq!(seen_bundle.lock().unwrap().as_deref(), Some(b.path()), "the factory got the bundle's folder");
    drop(rt);
    assert_eq!(pin(root.path()).unwrap().strategy_provider_id.as_deref(), Some("counting"));
    // Without the registration, the same bundle is refused at boot, naming the registered ids.
    let err = crate::common::runtime_on(pol.path(), root.path(), plan_with(|_| {}))
        .handlers(Demo::new().handlers().boxed())
        .bundle(m.clone())
        .boot_blocking()
        .unwrap_err();
    assert_eq!((err.code(), err.kind()), ("unknown-provider", FailureKind::FailFast), "{err}");
    assert!(err.to_string().contains("`counting`") && err.to_string().contains("hierarchical-sql"), "{err}");
}

#[test]
fn a_factory_that_fails_is_fail_fast_with_its_error_as_source() {
    let root = tempfile::tempdir().unwrap();
    let resolver = StrategyResolver::default()
        .memory("flaky", |_| -> Result<planlock::store::memory::InMemoryStore, _> {
            Err("the vault is sealed".into())
        });
    let m: BundleManifest =
        serde_json::from_str(r#"{"bundle_id": "b", "version": "1", "memory_provider_id": "flaky"}"#).unwrap();
    let err = resolver.resolve(&m, root.path()).unwrap_err();
    assert_eq!(err.code(), "provider-factory");
    assert!(err.to_string().contains("`flaky` could not be opened"), "{err}");
    let source = std::error::Error::source(&err).expect("the factory's error as source");
    assert_eq!(source.to_string(), "the vault is sealed");
}

#[test]
fn the_custom_strategy_example_runs() {
    // `cargo test` builds the examples beside the test binaries.
    let deps = std::env::current_exe().unwrap();
    let example = deps.parent().and_then(|d| d.parent()).unwrap().join("examples/custom_strategy");
    assert!(example.exists(), "{} is not built: `cargo test` builds it", example.display());
    let out = std::process::Command::new(&example).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("process 2: cycle 2 completed through `recent-first`"), "{said}");
    assert!(said.contains("\"strategy_provider_id\": \"recent-first\""), "{said}");
    // The registered ids, whatever features the example was built with (`postgres` adds two).
    let refused = "`vector-magic` is not registered (registered: hierarchical-sql, ";
    assert!(said.contains(refused) && said.contains("recent-first, semantic-sql)"), "{said}");
}

/// A read of a session (`backend::read_stores`: what `planlock memory search` and `decisions`
/// use) goes through the providers its pin names, with the embedder it was pinned with, and
/// creates nothing.
#[test]
fn a_read_goes_through_the_pinned_providers_with_the_pinned_embedder() {
    use std::sync::Arc;

    use planlock::backend::FilesBackend;
    use planlock::embed::DemoEmbedder;
    use planlock::session::{PinVersion, SessionStore, Timestamp};
    use planlock::store::sqlite::SqliteStore;
    use planlock::store::sqlite::semantic::SemanticMemory;
    use planlock::store::{MemoryRepositoryPort, NewMemory};

    // A root nothing ran in: read, nothing is created.
    let empty = tempfile::tempdir().unwrap();
    let demo = || StrategyResolver::default().embedder(Arc::new(DemoEmbedder::new()));
    // The stores of the session at `root`, as its cycles read them, through its files backend.
    let read_at = |root: &std::path::Path, resolver: &StrategyResolver| {
        let (backend, name) = FilesBackend::of_root(root).unwrap();
        planlock::block_on(planlock::backend::read_stores(&backend, &name, resolver))
    };
    let found = planlock::block_on(read_at(empty.path(), &demo()).unwrap().search(&Call::new(), "x", 5));
    assert!(found.unwrap().is_empty());
    assert_eq!(std::fs::read_dir(empty.path()).unwrap().count(), 0, "nothing created");

    // A session pinned to the semantic providers with the demo embedder.
    let root = tempfile::tempdir().unwrap();
    let memory = SemanticMemory::new(SqliteStore::open(root.path()), Arc::new(DemoEmbedder::new()));
    for (n, summary) in [(1, "rotation of the api keys in the vault"), (2, "lunch menu for friday")] {
        let key = planlock::store::conformance::key(n);
        planlock::block_on(memory.put(&Call::new().keyed(key), NewMemory { session_ref: "s", summary, keywords: &[] }))
            .unwrap();
    }
    let pin = BundlePinV1 {
        version: PinVersion,
        bundle_id: "semantic".into(),
        strategy_provider_id: Some("semantic-sql".into()),
        memory_provider_id: Some("sqlite-semantic".into()),
        embedder_model: Some(DemoEmbedder::MODEL.into()),
        embedder_dimension: Some(DemoEmbedder::DIMENSION as u64),
        pinned_at: Timestamp::now(),
    };
    // Pinned as a first cycle pins it: with the session's first save.
    let update = planlock::session::SessionUpdate::new(uuid::Uuid::new_v4(), planlock::Digest::of(b"plan"), 1);
    let end = planlock::session::EndOfCycle::saving(update).with_pin(Some(pin));
    planlock::block_on(
        FileSessionStore::open(root.path()).unwrap().end_cycle(end, planlock::session::CycleGuard::none()),
    )
    .unwrap();
    // By meaning, as RetrieveMemory searches it: `rotating` is no word of the memory.
    let found = planlock::block_on(read_at(root.path(), &demo()).unwrap().search(&Call::new(), "rotating", 1)).unwrap();
    assert_eq!(found.len(), 1, "found by meaning, not by words");
    assert_eq!(found[0].summary, "rotation of the api keys in the vault");
    // Another embedder's vectors would mean something else: refused, naming both.
    let other = planlock::embed::Unavailable::new("other-model", 8, "refused before anything is embedded");
    let err = read_at(root.path(), &StrategyResolver::default().embedder(Arc::new(other))).unwrap_err();
    assert_eq!(err.code(), "embedder-mismatch", "{err}");
    assert!(err.to_string().contains("other-model") && err.to_string().contains(DemoEmbedder::MODEL), "{err}");
}
