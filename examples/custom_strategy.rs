//! A strategy of your own, chosen by id through a bundle, without changing planlock (D-021 §2,
//! §5): `recent-first` keeps decisions in the session root's SQLite store and returns the most
//! recent ones first. It is registered with the resolver, named by a bundle's `manifest.json`,
//! pinned with the session's first cycle, and runs cycle after cycle like a built-in one.
//!
//! Run it with `cargo run --example custom_strategy`.

use std::path::Path;

use planlock::ValidPlan;
use planlock::demo::Demo;
use planlock::runtime::{RunOutcome, Runtime};
use planlock::schema::{Anchor, Decision, Evidence};
use planlock::session::FileSessionStore;
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::sqlite::SqliteStore;
use planlock::store::{
    Call, DecisionContext, DecisionContextProviderPort, DecisionWritePort, StoreError, StoreHandlers,
};

/// Decisions in the session root's SQLite store, the most recent first.
struct RecentFirst(SqliteStore);

impl DecisionContextProviderPort for RecentFirst {
    async fn load(
        &self,
        call: &Call<'_>,
        input: &str,
        current_domain: Option<&str>,
    ) -> Result<DecisionContext, StoreError> {
        let mut context = self.0.load(call, input, current_domain).await?;
        // The store returns them in the order they were written; newest first is this strategy.
        context.decisions.reverse();
        Ok(context)
    }
}

impl DecisionWritePort for RecentFirst {
    async fn persist_decision(&self, call: &Call<'_>, decision: &Decision) -> Result<String, StoreError> {
        self.0.persist_decision(call, decision).await
    }
    async fn persist_evidence(&self, call: &Call<'_>, evidence: &Evidence) -> Result<String, StoreError> {
        self.0.persist_evidence(call, evidence).await
    }
    async fn link(&self, call: &Call<'_>, anchor: &Anchor) -> Result<String, StoreError> {
        self.0.link(call, anchor).await
    }
}

fn write_policy(root: &Path) -> std::io::Result<()> {
    let dir = root.join("profiles/default");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("modes.yaml"), "chat:\n  tone: plain\n")?;
    std::fs::write(dir.join("triggers.yaml"), "[]\n")?;
    std::fs::write(dir.join("bundles.yaml"), "team:\n  strategy_provider_id: recent-first\n")
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (policy, session, bundle) = (tempfile::tempdir()?, tempfile::tempdir()?, tempfile::tempdir()?);
    write_policy(policy.path())?;
    std::fs::write(
        bundle.path().join("manifest.json"),
        r#"{"bundle_id": "team", "version": "1", "strategy_provider_id": "recent-first"}"#,
    )?;

    // 1. Register the strategy by id. The factory gets the session (its root here) and the bundle folder.
    let resolver = StrategyResolver::default().strategy("recent-first", |cx| match cx.root() {
        Some(root) => Ok(RecentFirst(SqliteStore::open(root))),
        None => Err("recent-first keeps its decisions under a session root".into()),
    });
    println!("registered strategies: {}", resolver.strategy_ids().collect::<Vec<_>>().join(", "));

    // 2. A bundle names it; the resolver opens it; the runtime pins it.
    let manifest = BundleManifest::load(bundle.path())?;
    let plan = ValidPlan::from_str(include_str!("plans/demo_plan.json"))?;
    for run in 1..=2 {
        let storage = StoreHandlers::new(resolver.resolve(&manifest, session.path())?);
        let mut runtime = Runtime::builder(policy.path(), plan.clone(), FileSessionStore::open(session.path())?)
            .handlers(Demo::new().repo_base(concat!(env!("CARGO_MANIFEST_DIR"), "/src")).with_store(&storage).boxed())
            .bundle(manifest.clone())
            .resolver(resolver.clone())
            .boot_blocking()?;
        match runtime.run_cycle_blocking()? {
            RunOutcome::Completed(done) => {
                let decisions =
                    done.ledger.get::<planlock::steps::RetrieveDecisionContext>().map_or(0, |d| d.decisions.len());
                println!(
                    "process {run}: cycle {} completed through `recent-first` ({decisions} decision(s) retrieved)",
                    runtime.cycle()
                );
            }
            RunOutcome::Paused { record, .. } => println!("process {run}: paused at {}", record.step_id),
            RunOutcome::Abandoned(record) => println!("process {run}: cycle {} rejected", record.cycle),
        }
    }
    let pin = std::fs::read_to_string(session.path().join(planlock::session::PIN_FILE))?;
    println!("the session is pinned: {pin}");

    // 3. A bundle naming an id nobody registered is refused, naming the ones that are.
    let unknown: BundleManifest =
        serde_json::from_str(r#"{"bundle_id": "team", "version": "2", "strategy_provider_id": "vector-magic"}"#)?;
    let err = resolver.resolve(&unknown, session.path()).unwrap_err();
    println!("an unknown id: {err}");
    Ok(())
}
