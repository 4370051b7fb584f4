//! A backend of your own is a few hooks (issue 57 §3): the listings (paused sessions, sessions
//! at a glance, recent events) are written once above the backends and read from its
//! `sessions`, and budgets and the outbox are capabilities it has or says it has not — a use
//! that needs one it lacks is refused with `backend-lacks`, never a silent no-op.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use planlock::Failure;
use planlock::backend::{
    AccessBook, Backend, BackendFuture, BudgetBook, DeliveryClaim, DeliveryOutcome, FilesBackend, Listed,
    OpenedSession, Outbox, PausedSession,
};
use planlock::review::notify::Notifier;
use planlock::session::{ReviewDecision, ReviewVerdict, SessionRecords, Timestamp};
use planlock::store::bundle::{BundleManifest, StrategyResolver};
use planlock::store::provider::ResolvedStore;

use crate::approvals::paused_by_the_cli;

/// Sessions under a directory, through the files backend, with no budgets and, unless given
/// one, no outbox: the hooks a new backend writes, and nothing else (the listings are the
/// defaults).
#[derive(Debug)]
struct Bare(FilesBackend, Option<MemoryOutbox>);

/// An outbox of one's own, in memory: each delivery's claim token (while held) and whether it
/// is done.
#[derive(Debug, Default)]
struct MemoryOutbox(Mutex<HashMap<Delivery, Attempts>>);

/// A delivery: the session, the event's id, the receiver.
type Delivery = (String, String, String);

/// Where a delivery stands: the token of the claim holding it, the attempts made, whether done.
type Attempts = (Option<uuid::Uuid>, u32, bool);

impl Outbox for MemoryOutbox {
    fn claim_delivery<'a>(
        &'a self,
        session: &'a str,
        id: &'a str,
        hook: &'a str,
        _hold: Duration,
    ) -> BackendFuture<'a, Option<DeliveryClaim>> {
        let mut deliveries = self.0.lock().unwrap();
        let entry = deliveries.entry((session.into(), id.into(), hook.into())).or_default();
        let claim = match entry {
            (Some(_), _, _) | (_, _, true) => None,
            (held, attempts, false) => {
                let token = uuid::Uuid::new_v4();
                *held = Some(token);
                Some(DeliveryClaim::held_by(session, id, hook, *attempts, token))
            }
        };
        Box::pin(std::future::ready(Ok(claim)))
    }
    fn finish_delivery(&self, claim: DeliveryClaim, outcome: DeliveryOutcome) -> BackendFuture<'_, ()> {
        let mut deliveries = self.0.lock().unwrap();
        let key = (claim.session.clone(), claim.id.clone(), claim.hook.clone());
        let finished = match deliveries.get_mut(&key) {
            Some((held, attempts, done)) if *held == claim.token() && held.is_some() => {
                (*held, *attempts, *done) = (None, *attempts + 1, !matches!(outcome, DeliveryOutcome::RetryAt(_)));
                Ok(())
            }
            _ => Err(planlock::backend::BackendError::ForeignClaim(claim.id)),
        };
        Box::pin(std::future::ready(finished))
    }
}

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
        self.1.as_ref().map(|o| o as &dyn Outbox)
    }
    fn sessions(&self, max: usize) -> BackendFuture<'_, Vec<Listed>> {
        self.0.sessions(max)
    }
    fn access(&self) -> Option<&dyn AccessBook> {
        None
    }
}

#[test]
fn a_backend_of_a_few_hooks_lists_its_sessions_and_says_what_it_lacks() {
    let (s, _) = paused_by_the_cli();
    let bare = Bare(FilesBackend::new(s.sessions.path()), None);
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
    assert!(bare.budgets().is_none() && bare.outbox().is_none() && bare.access().is_none());
    assert!(planlock::block_on(bare.installed_access()).unwrap().is_none(), "none installed where none is kept");
    let access = s.policy.path().join("access.yaml");
    let url = "https://receiver.example.com/hook";
    std::fs::write(
        &access,
        format!("users: {{}}\nwebhooks:\n  - {{ url: \"{url}\", secretEnv: HOOK_SECRET, events: [pause.created] }}\n"),
    )
    .unwrap();
    let access = planlock::review::access::Access::load(&access).unwrap();
    let backend: Arc<dyn Backend> = Arc::new(bare);
    let options = planlock::review::notify::NotifyOptions::default;
    let secret = |_: &str| Some(crate::common::webhooks::SECRET.to_owned());
    let refused = Notifier::with_secrets(backend, &access, options(), secret).unwrap_err();
    assert_eq!(refused.code(), "backend-lacks", "{refused}");
    assert!(refused.to_string().contains("outbox of notifications"), "{refused}");
    // An outbox of its own is enough to send from (its claims made with `DeliveryClaim::held_by`).
    let with_outbox: Arc<dyn Backend> =
        Arc::new(Bare(FilesBackend::new(s.sessions.path()), Some(MemoryOutbox::default())));
    assert!(Notifier::with_secrets(with_outbox.clone(), &access, options(), secret).is_ok());
    let outbox = with_outbox.outbox().unwrap();
    let claim = |outbox: &dyn Outbox| planlock::block_on(outbox.claim_delivery(&name, "e1", "h", Duration::ZERO));
    let held = claim(outbox).unwrap().expect("due");
    assert!(claim(outbox).unwrap().is_none(), "held by one sender at a time");
    let stranger = DeliveryClaim::held_by(&name, "e1", "h", 0, uuid::Uuid::new_v4());
    let foreign = planlock::block_on(outbox.finish_delivery(stranger, DeliveryOutcome::Delivered)).unwrap_err();
    assert_eq!(foreign.code(), "foreign-claim");
    planlock::block_on(outbox.finish_delivery(held, DeliveryOutcome::Delivered)).unwrap();
    assert!(claim(outbox).unwrap().is_none(), "delivered is done");
}
