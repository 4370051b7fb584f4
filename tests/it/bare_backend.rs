//! A backend of your own is a few hooks (issue 57 §3): the listings (paused sessions, sessions
//! at a glance, recent events) are written once above the backends and read from its
//! `sessions`, and budgets and the outbox are capabilities it has or says it has not — a use
//! that needs one it lacks is refused with `backend-lacks`, never a silent no-op.

use std::sync::Arc;
use std::time::Duration;

use planlock::Failure;
use planlock::backend::{
    Backend, BackendFuture, BudgetBook, FilesBackend, Listed, OpenedSession, Outbox, PausedSession,
};
use planlock::session::{InstalledAccess, ReviewDecision, ReviewVerdict, SessionRecords, Timestamp};
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::provider::ResolvedStore;

use crate::approvals::paused_by_the_cli;

/// Sessions under a directory, through the files backend, with no budgets and no outbox: the
/// hooks a new backend writes, and nothing else (the listings are the defaults).
#[derive(Debug)]
struct Bare(FilesBackend);

impl Backend for Bare {
    fn describe(&self, name: &str) -> String {
        self.0.describe(name)
    }
    fn is_session_name(&self, name: &str) -> bool {
        self.0.is_session_name(name)
    }
    fn default_bundle(&self) -> BundleManifest {
        self.0.default_bundle()
    }
    fn open<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn OpenedSession>> {
        self.0.open(name)
    }
    fn records<'a>(&'a self, name: &'a str) -> BackendFuture<'a, Box<dyn SessionRecords>> {
        self.0.records(name)
    }
    fn stores_to_read<'a>(
        &'a self,
        name: &'a str,
        resolver: &'a StrategyResolver,
        manifest: &'a BundleManifest,
    ) -> BackendFuture<'a, ResolvedStore> {
        self.0.stores_to_read(name, resolver, manifest)
    }
    fn budgets(&self) -> Option<&dyn BudgetBook> {
        None
    }
    fn outbox(&self) -> Option<&dyn Outbox> {
        None
    }
    fn sessions(&self, max: usize) -> BackendFuture<'_, Vec<Listed>> {
        self.0.sessions(max)
    }
    fn installed_access(&self) -> BackendFuture<'_, Option<InstalledAccess>> {
        self.0.installed_access()
    }
    fn install_access<'a>(&'a self, text: &'a str) -> BackendFuture<'a, ()> {
        self.0.install_access(text)
    }
    fn uninstall_access(&self) -> BackendFuture<'_, bool> {
        self.0.uninstall_access()
    }
}

#[test]
fn a_backend_of_a_few_hooks_lists_its_sessions_and_says_what_it_lacks() {
    let (s, _) = paused_by_the_cli();
    let bare = Bare(FilesBackend::new(s.sessions.path()));
    let name = s.root().file_name().unwrap().to_string_lossy().into_owned();
    // The listings, written once above the backends, read its sessions' records.
    let paused: Vec<PausedSession> = planlock::block_on(bare.paused(100)).unwrap();
    assert_eq!(paused.len(), 1, "the one paused session");
    assert_eq!(paused[0].0, name);
    let (record, decided) = paused[0].1.as_ref().unwrap();
    assert_eq!((record.step_id.as_str(), decided.decision.is_none()), ("remember", true));
    let glances = planlock::block_on(bare.glances(None, &[], 0, 10, 100)).unwrap();
    assert_eq!(glances.paged_total, None, "every session, for the caller to page");
    let glance = glances.sessions.iter().find(|(n, _)| *n == name).unwrap().1.as_ref().unwrap();
    assert!(glance.paused.is_some() && glance.last.is_some(), "{glance:?}");
    let records = planlock::block_on(bare.records(&name)).unwrap();
    let decision = ReviewDecision::new(record, ReviewVerdict::Reject, "ada", "not this one");
    planlock::block_on(planlock::review::decide(records.as_ref(), &decision)).unwrap();
    let since = Timestamp::now().minus(Duration::from_secs(600)).unwrap();
    let events = planlock::block_on(bare.recent_events(since, 10)).unwrap();
    assert!(events.iter().any(|e| e.session == name && e.event.name() == "decided"), "{events:?}");
    // What it lacks is refused by name wherever it is needed.
    assert!(bare.budgets().is_none() && bare.outbox().is_none());
    let access = s.policy.path().join("access.yaml");
    let url = "https://receiver.example.com/hook";
    std::fs::write(
        &access,
        format!("users: {{}}\nwebhooks:\n  - {{ url: \"{url}\", secretEnv: HOOK_SECRET, events: [pause.created] }}\n"),
    )
    .unwrap();
    let access = planlock::review::access::Access::load(&access).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(bare);
    let options = planlock::review::notify::NotifyOptions::default();
    let secret = |_: &str| Some(crate::common::webhooks::SECRET.to_owned());
    let refused = planlock::review::notify::Notifier::with_secrets(backend, &access, options, secret).unwrap_err();
    assert_eq!(refused.code(), "backend-lacks", "{refused}");
    assert!(refused.to_string().contains("outbox of notifications"), "{refused}");
}
