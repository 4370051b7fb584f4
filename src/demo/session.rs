//! A session's runtime with the demo handlers, said once: what the examples and the benches boot
//! an opened session with.

use std::path::PathBuf;

use super::{Demo, ReviewGate};
use crate::backend::OpenedSession;
use crate::exec::handler::Boxed;
use crate::runtime::{Runtime, RuntimeBuilder};
use crate::session::SessionStore;
use crate::store::StoreHandlers;
use crate::store::bundle::{BundleError, BundleManifest, StrategyResolver};
use crate::validate::ValidPlan;

impl Demo {
    /// The runtime builder of the `opened` session for `plan` (its policy under `policy_root`):
    /// these demo handlers over the stores `manifest`'s providers open where the session lives
    /// (the default resolver's), and the [`ReviewGate`], which pauses a cycle before its memory
    /// is written.
    ///
    /// ```
    /// use planlock::demo::Demo;
    /// # planlock::block_on(async {
    /// let dir = tempfile::tempdir()?;
    /// std::fs::create_dir(dir.path().join("s1"))?;
    /// let sessions = planlock::backend::connect(dir.path().to_str().unwrap(), None).await?;
    /// let plan = planlock::ValidPlan::from_str(include_str!("../../examples/plans/reviewed_plan.json"))?;
    /// let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    /// let builder = Demo::new().session_runtime(policy, plan, sessions.open("s1").await?, sessions.default_bundle())?;
    /// let mut runtime = builder.boot().await?;
    /// assert!(runtime.pending().is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn session_runtime(
        &self,
        policy_root: impl Into<PathBuf>,
        plan: ValidPlan,
        opened: Box<dyn OpenedSession>,
        manifest: BundleManifest,
    ) -> Result<RuntimeBuilder<Box<dyn SessionStore>, Boxed>, BundleError> {
        let storage = opened.resolve(&StrategyResolver::default(), &manifest)?;
        Ok(Runtime::builder(policy_root, plan, opened.into_session_store())
            .handlers(self.with_store(&StoreHandlers::new(storage)).boxed())
            .bundle(manifest)
            .validator(ReviewGate::ID, ReviewGate::VERSION, &serde_json::json!({}), ReviewGate))
    }
}
