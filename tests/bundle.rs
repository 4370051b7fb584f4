//! Bundles and pins: a strict manifest, ids resolved to implementations, the pin written with the
//! first completed cycle (never at boot), an older pin upgraded, a changed bundle refused.
#![cfg(feature = "sqlite")]

use std::path::Path;

use planlock::demo::Demo;
use planlock::runtime::{BootError, Runtime};
use planlock::session::{BundlePinV1, FileSessionStore, PIN_FILE};
use planlock::store::StoreHandlers;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::{Failure, FailureKind};

mod common;
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
    let storage = StoreHandlers::new(StrategyResolver.resolve(&manifest, root).map_err(BootError::from)?);
    Runtime::builder(pol, plan_with(|_| {}), FileSessionStore::open(root).unwrap())
        .handlers(Demo::new().with_store(&storage).boxed())
        .bundle(manifest)
        .boot()
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
    let err = StrategyResolver.resolve(&unknown, dir.path()).unwrap_err();
    assert_eq!(err.code(), "unknown-provider");
    let known = StrategyResolver::MEMORY.join(", ");
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
    let err = StrategyResolver.resolve(&shared, dir.path()).unwrap_err();
    assert_eq!(err.code(), "bundle-needs-database");
    assert!(err.to_string().contains("--database"), "{err}");
}
