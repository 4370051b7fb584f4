//! The person who approves, on PostgreSQL (CONTRACT §14): a decision from another process
//! (the CLI's inbox) is picked up by a worker's runtime at its next cycle without a restart; one
//! decision per pause when two decide at once; an approved run killed before or after its save
//! consumes the decision once and writes once.

use super::*;
use planlock::block_on;
use planlock::demo::ReviewGate;
use planlock::session::postgres::PgRecords;
use planlock::session::{ApprovalEvent, CycleEnd, Recorded, ReviewDecision, ReviewVerdict, SessionRecords};

use planlock::review::decide;
/// The fixture's plan with the review gate and one write to review (PersistMemory).
pub(super) fn reviewed_fixture() -> Fixture {
    let fx = fixture();
    let mut v: Value = serde_json::from_str(&fx.plan.to_json()).unwrap();
    common::review_one_write(&mut v);
    let plan = ValidPlan::from_value(&v).unwrap();
    std::fs::write(&fx.plan_file, plan.to_json()).unwrap();
    Fixture { plan, ..fx }
}

/// A runtime with the review gate on `store`, whose storage is `session`'s (`store` itself, or
/// the session store it wraps).
pub(super) fn reviewed_runtime<S: planlock::session::SessionStore>(
    fx: &Fixture,
    store: S,
    session: impl FnOnce(&S) -> &PgSessionStore,
) -> Runtime<S, planlock::handler::Boxed> {
    let manifest = BundleManifest::default_shared_bundle();
    let resolved = StrategyResolver::default().resolve_for_session(&manifest, session(&store).session()).unwrap();
    Runtime::builder(&fx.policy, fx.plan.clone(), store)
        .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &json!({}), ReviewGate)
        .bundle(manifest)
        .boot_blocking()
        .unwrap()
}

fn log_of(db: &PgDatabase, key: &str) -> Vec<&'static str> {
    let log = block_on(PgRecords::new(db, key).unwrap().approval_log()).unwrap();
    log.events.iter().map(ApprovalEvent::name).collect()
}

fn inbox(url: &str, args: &[&str]) -> (Option<i32>, Value) {
    let out = crate::common::cli::planlock()
        .args(["inbox"])
        .args(args)
        .args(["--format", "json", "--database", url])
        .output()
        .unwrap();
    (out.status.code(), serde_json::from_slice(&out.stdout).unwrap_or(Value::Null))
}

pub(super) fn a_worker_acts_on_a_decision_from_another_process_without_a_restart(server: &PgServer) {
    let url = server.database("approvals");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    for (key, verdict) in [("tenant/approved", "approve"), ("tenant/rejected", "reject")] {
        // A worker keeps its runtime: the cycle pauses, and the worker finds nothing to do.
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, key).unwrap(), |s| s);
        assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
        assert!(matches!(runtime.run_cycle_blocking(), Err(planlock::runtime::RuntimeError::Paused { .. })));
        // The session keeps the plan it runs, with its pause (CONTRACT §21).
        let kept = block_on(PgRecords::new(&db, key).unwrap().load_plan()).unwrap().expect("kept with the pause");
        assert_eq!((kept.plan().unwrap(), kept.plan_hash), (fx.plan.clone(), runtime.plan_hash()));
        // The five records read in one statement are the ones read alone.
        let records = PgRecords::new(&db, key).unwrap();
        let read = block_on(records.snapshot()).unwrap();
        assert_eq!(read.plan.map(|p| p.plan_hash), Some(kept.plan_hash));
        let paused = block_on(records.load_intervention()).unwrap().expect("paused");
        assert_eq!(read.intervention.map(|r| (r.cycle, r.step_id)), Some((paused.cycle, paused.step_id)));
        assert_eq!(read.reserved.is_some(), block_on(records.load_reserved()).unwrap().is_some());
        assert_eq!(read.state.is_some(), block_on(records.load()).unwrap().is_some());
        assert_eq!(read.pin.is_some(), block_on(records.load_pin()).unwrap().is_some());
        // The reviewer, in another process, lists the inbox and decides, while the worker holds
        // the lease.
        let (code, list) = inbox(&url, &["list"]);
        let listed: Vec<&str> =
            list["pauses"].as_array().unwrap().iter().map(|p| p["session"].as_str().unwrap()).collect();
        assert!(code == Some(0) && listed.contains(&key), "{list}");
        let (code, decided) = inbox(&url, &[verdict, "--by", "ada", "--reason", "reviewed", key]);
        assert_eq!(code, Some(0), "{decided}");
        // The worker's next cycle acts on it.
        match (verdict, runtime.run_cycle_blocking()) {
            ("approve", Ok(RunOutcome::Completed(_))) => assert_eq!(runtime.cycle(), 1),
            ("reject", Ok(RunOutcome::Abandoned(record))) => assert_eq!(record.cycle, 1),
            (_, other) => panic!("{verdict}: {other:?}"),
        }
        let outcome = if verdict == "approve" { "consumed" } else { "abandoned" };
        assert_eq!(log_of(&db, key), ["decided", outcome]);
        // The cycle's end is in the session's history, an abandoned one too.
        let history = block_on(PgRecords::new(&db, key).unwrap().history(1)).unwrap();
        let end = if verdict == "approve" { CycleEnd::Completed } else { CycleEnd::Abandoned };
        assert_eq!(history.entries.iter().map(|e| e.end).collect::<Vec<_>>(), [end], "{verdict}");
    }
    assert_eq!(memory_rows(&url, "tenant/approved"), 1);
    assert_eq!(memory_rows(&url, "tenant/rejected"), 0);
    // A kept record longer than the file store would read is refused, not read whole.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .execute(
            "UPDATE planlock_sessions SET plan = repeat('x', $1) WHERE session_key = 'tenant/approved'",
            &[&i32::try_from(planlock::session::MAX_PLAN_FILE_BYTES + 1).unwrap()],
        )
        .unwrap();
    let err = block_on(PgRecords::new(&db, "tenant/approved").unwrap().load_plan()).unwrap_err();
    assert!(err.to_string().contains("bytes long"), "{err}");
    let err = block_on(PgRecords::new(&db, "tenant/approved").unwrap().snapshot()).unwrap_err();
    assert!(err.to_string().contains("bytes long"), "{err}");
}

pub(super) fn one_decision_per_pause_when_two_decide_at_once_on_postgres(server: &PgServer) {
    let url = server.database("racing");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    for round in 0..20 {
        let key = format!("race-{round}");
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, &key).unwrap(), |s| s);
        let Ok(RunOutcome::Paused { record, .. }) = runtime.run_cycle_blocking() else { panic!("paused") };
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let results: Vec<_> = [ReviewVerdict::Approve, ReviewVerdict::Reject]
            .into_iter()
            .map(|verdict| {
                let (barrier, record, db, key) = (barrier.clone(), record.clone(), db.clone(), key.clone());
                std::thread::spawn(move || {
                    let decision = ReviewDecision::new(&record, verdict, verdict.as_str(), "decided");
                    barrier.wait();
                    block_on(decide(&PgRecords::new(&db, &key).unwrap(), &decision))
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let won = results.iter().filter(|r| matches!(r, Ok(Recorded::New))).count();
        let lost: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).map(|e| e.code()).collect();
        assert_eq!((won, lost.as_slice()), (1, &["already-decided"][..]), "round {round}: {results:?}");
        assert_eq!(log_of(&db, &key), ["decided"]);
    }
}

/// A worker acting on an approval (plain, or one that edits the step's payload), killed before
/// the end of its cycle or after it: the next one finishes the work, the approved write (with
/// the edited payload) and the decision's outcome once. The end is one
/// transaction (the state, the outcome, the record's removal), so after it nothing is left over.
pub(super) fn an_approved_run_killed_before_or_after_its_save_consumes_once_on_postgres(server: &PgServer) {
    let url = server.database("approved_kills");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    // A plain approval, and one that edits the step's payload (CONTRACT §22).
    for (point, edited) in
        [("before-save", false), ("after-removal", false), ("before-save", true), ("after-removal", true)]
    {
        let key = format!("killed-{point}-{edited}");
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, &key).unwrap(), |s| s);
        let Ok(RunOutcome::Paused { record, .. }) = runtime.run_cycle_blocking() else { panic!("paused") };
        drop(runtime);
        let records = PgRecords::new(&db, &key).unwrap();
        let mut decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "reviewed");
        if edited {
            let mut payload = record.shown.as_ref().unwrap()["payload"].clone();
            payload["summary"] = json!("the reviewer's summary");
            decision = decision.editing(block_on(planlock::review::edit_of(&records, &record, payload)).unwrap());
        }
        block_on(decide(&records, &decision)).unwrap();
        // A worker acts on it and dies at `point`.
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env("PLANLOCK_PG_WORKER", "approved")
            .env("PLANLOCK_PG_POINT", point)
            .env("PLANLOCK_PG_URL", &url)
            .env("PLANLOCK_PG_POLICY", &fx.policy)
            .env("PLANLOCK_PG_PLAN", &fx.plan_file)
            .env("PLANLOCK_PG_KEYS", &key)
            .env("PLANLOCK_PG_LEASE_MS", "300")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let died = child.wait().unwrap();
        assert!(!died.success(), "{point}: the worker was to die");
        let mut out = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
        assert!(out.contains(&format!("AT {point}")), "{point}: {out}");
        // The next worker finishes the work, once the dead one's lease has run out.
        std::thread::sleep(Duration::from_millis(400));
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, &key).unwrap(), |s| s);
        if point == "before-save" {
            assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_))), "{point}");
        } else {
            assert_eq!(runtime.removed_leftover().map(|r| r.cycle), None, "{point}: the end removed the record");
            assert!(runtime.pending().is_none(), "{point}");
        }
        assert_eq!(runtime.cycle(), 1, "{point}");
        assert_eq!(memory_rows(&url, &key), 1, "{point}: the approved write once");
        assert_eq!(log_of(&db, &key), ["decided", "consumed"], "{point}");
        if edited {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
            let row = client.query_one("SELECT summary FROM planlock_memories WHERE namespace = $1", &[&key]).unwrap();
            assert_eq!(row.get::<_, String>(0), "the reviewer's summary", "{point}: with the edited payload");
        }
    }
}

/// The console on a database (CONTRACT §15): a worker's paused session shows in its inbox with
/// what it shows; approved there, the worker's next cycle completes it and its page shows the
/// cycle; a session key with a slash is one path segment.
pub(super) fn the_console_decides_on_a_database_session(server: &PgServer) {
    use common::console::{decide_fields, serve, url_segment};

    let url = server.database("console");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let key = "tenant-7/conv <b>42</b>";
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, key).unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    let console = serve(&["--database".as_ref(), url.as_ref()], &[]);
    let cookie = console.sign_in("ada");
    let inbox = console.get(&cookie, "/inbox").body;
    assert!(
        inbox.contains("<title>(1) Inbox") && inbox.contains("tenant-7&#x2f;conv &lt;b&gt;42&lt;&#x2f;b&gt;"),
        "{inbox}"
    );
    let action = format!("/inbox/{}/approve", url_segment(key));
    let body = format!("{}&reason=fine", decide_fields(&console.pause_page(&cookie, key).body, &action));
    let origin = console.origin();
    let reply = console.request("POST", &action, &[("Cookie", &cookie), ("Origin", &origin)], &body);
    assert!(console.flash(&cookie, &reply).starts_with("ok: Recorded"), "{}", reply.headers);
    assert_eq!(log_of(&db, key), ["decided"]);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_))));
    let page = console.get(&cookie, &format!("/sessions/{}", url_segment(key))).body;
    assert!(page.contains("Cycle 1 <span class=\"status completed\">completed</span>"), "{page}");
    assert!(page.contains("<td>consumed</td>") && page.contains("approved by ada (unverified name): fine"), "{page}");
    let sessions = console.get(&cookie, "/sessions").body;
    assert!(sessions.contains("<span class=\"status ready\">ready</span>"), "{sessions}");

    // With an access file (CONTRACT §18): a personal token signs its person in; one who is not
    // an approver of the validator gets no form and a 403, and nothing is recorded; an approver
    // decides, verified, through the console.
    let access = fx.policy.join("access.yaml");
    let user = |u: &str| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", planlock::review::access::token_sha256(u));
    let rule = "validators:\n  demo-review: { approvers: [ada] }\n";
    std::fs::write(&access, format!("users:\n{}{}{rule}", user("ada"), user("eve"))).unwrap();
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })), "cycle 2 pauses");
    let console = serve(&["--database".as_ref(), url.as_ref(), "--access".as_ref(), access.as_os_str()], &[]);
    let origin = console.origin();
    let sign_in = |token: &str| {
        let reply = console.request("POST", "/login", &[("Origin", &origin)], &format!("token={token}"));
        assert_eq!(reply.status, 303, "{}", reply.body);
        let line = reply.headers.lines().find_map(|l| l.strip_prefix("set-cookie: ")).unwrap().to_owned();
        line.split(';').next().unwrap().to_owned()
    };
    let eve = sign_in("eve");
    let page = console.pause_page(&eve, key).body;
    assert!(!page.contains(&format!("action=\"{action}\"")), "no form for eve");
    let ada = sign_in("ada");
    let page = console.pause_page(&ada, key).body;
    let body = format!("{}&reason=fine", decide_fields(&page, &action));
    let refused = console.request(
        "POST",
        &action,
        &[("Cookie", &eve), ("Origin", &origin)],
        &body.replace(
            common::console::field(&page, &action, "csrf"),
            common::console::field(&console.get(&eve, "/inbox").body, "/logout", "csrf"),
        ),
    );
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(log_of(&db, key), ["decided", "consumed"], "nothing recorded for eve");
    let reply = console.request("POST", &action, &[("Cookie", &ada), ("Origin", &origin)], &body);
    assert!(console.flash(&ada, &reply).starts_with("ok: Recorded"), "{}", reply.headers);
    let log = block_on(PgRecords::new(&db, key).unwrap().approval_log()).unwrap();
    let Some(ApprovalEvent::Decided { decision }) = log.events.last() else { panic!("{log:?}") };
    assert_eq!(
        (decision.by.as_str(), decision.verified, decision.via),
        ("ada", Some(true), Some(planlock::session::Via::Console))
    );
}

/// One backend for where sessions live (issue 40 §2): `backend::connect` makes a database's
/// backend from its URL, with a pool of its own that closes when the backend is dropped (issue
/// 57: no pool map for the process), a session is opened, read and listed through it, and the
/// CLI takes the URL in `--sessions` as it takes a directory.
pub(super) fn one_backend_one_pool_per_url(server: &PgServer) {
    use planlock::backend::{Backend, PgBackend, connect};

    let url = server.database("backend");
    // The same database as a `postgresql://` URL (the server listens on a socket directory).
    let param = |k: &str| url.split(' ').find_map(|p| p.strip_prefix(k)?.strip_prefix('=')).unwrap();
    let as_url =
        format!("postgresql://{}@/{}?host={}&port={}", param("user"), param("dbname"), param("host"), param("port"));
    let (a, b) = (block_on(connect(&as_url, None)).unwrap(), block_on(PgBackend::connect(&url, None)).unwrap());
    assert!(!a.lists_by_reading_each() && a.is_session_name("tenant-7/conv 42") && !a.is_session_name(""));
    let fx = reviewed_fixture();
    // Opened through the backend: the session's store and where its providers open theirs.
    let opened = block_on(a.open("t-1")).unwrap();
    let manifest = a.default_bundle();
    let resolved = opened.resolve(&StrategyResolver::default(), &manifest).unwrap();
    let mut runtime = Runtime::builder(&fx.policy, fx.plan.clone(), opened.into_session_store())
        .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &json!({}), ReviewGate)
        .bundle(manifest.clone())
        .boot_blocking()
        .unwrap();
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    // What `a` did, `b` sees, each on a pool of its own: `b`'s statements are not a third's, and
    // a backend dropped closes its connections.
    let connections = || -> i64 {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        let sql =
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
        client.query_one(sql, &[]).unwrap().get(0)
    };
    let third = block_on(PgBackend::connect(&url, None)).unwrap();
    let before = third.database().round_trips();
    let paused = block_on(b.paused(100)).unwrap();
    assert_eq!(third.database().round_trips(), before, "a pool per backend");
    assert!(block_on(third.paused(100)).is_ok());
    let with_third = connections();
    drop(third);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while connections() >= with_third && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(connections() < with_third, "the dropped backend's pool is closed");
    assert_eq!(paused.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), ["t-1"]);
    assert!(block_on(b.records("never-opened")).is_err_and(|e| planlock::Failure::code(&e) == "unknown-session"));
    let glances = block_on(b.glances(Some("paused"), &[], 0, 10, 100)).unwrap();
    assert_eq!((glances.sessions.len(), glances.paged_total), (1, Some(1)));
    // A pause past its expiry is `expired`, ordered after the paused ones: from the expiry the
    // server keeps beside the record (schema 7), no record parsed.
    let opened = block_on(a.open("t-expiring")).unwrap();
    let resolved = opened.resolve(&StrategyResolver::default(), &manifest).unwrap();
    let mut expiring = Runtime::builder(&fx.policy, fx.plan.clone(), opened.into_session_store())
        .handlers(Demo::new().with_store(&StoreHandlers::new(resolved)).boxed())
        .validator(ReviewGate::ID, ReviewGate::VERSION, &json!({}), ReviewGate)
        .bundle(manifest.clone())
        .approval_ttl(std::time::Duration::from_millis(300))
        .boot_blocking()
        .unwrap();
    assert!(matches!(expiring.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    // A pause's `paused` event, as the server makes it from the record (what its outcome logs
    // first where no sender has), is the one the library makes: with an expiry and without.
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for key in ["t-1", "t-expiring"] {
        let row = client
            .query_one("SELECT planlock_paused_event(intervention), intervention FROM planlock_sessions WHERE session_key = $1", &[&key])
            .unwrap();
        let (made, record): (String, String) = (row.get(0), row.get(1));
        let record: planlock::session::InterventionRecord = serde_json::from_str(&record).unwrap();
        assert_eq!(serde_json::from_str::<ApprovalEvent>(&made).unwrap(), ApprovalEvent::paused(&record), "{key}");
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    let names = |status: Option<&'static str>| {
        let glances = block_on(b.glances(status, &[], 0, 10, 100)).unwrap();
        glances.sessions.into_iter().map(|(name, _)| name).collect::<Vec<_>>()
    };
    assert_eq!(
        (names(Some("paused")), names(Some("expired"))),
        (vec!["t-1".to_owned()], vec!["t-expiring".to_owned()])
    );
    assert_eq!(names(None), ["t-1", "t-expiring"], "paused, then expired");
    // The sessions' search: every word in the name, in any case, `%` and `_` as themselves.
    let found = |words: &[&str]| {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        block_on(b.glances(None, &words, 0, 10, 100)).unwrap().paged_total
    };
    assert_eq!(
        (found(&["t-"]), found(&["t-", "1"]), found(&["t-", "2"]), found(&["t%"]), found(&["_"])),
        (Some(2), Some(1), Some(0), Some(0), Some(0))
    );
    let (code, listing) = inbox(&url, &["list"]);
    assert_eq!(code, Some(0), "{listing}");
    let out = crate::common::cli::planlock()
        .args(["inbox", "list", "--format", "json", "--sessions", &as_url])
        .env_remove("PLANLOCK_DATABASE_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap(), listing, "--sessions URL is --database URL");
}

/// Two-person approvals on PostgreSQL (CONTRACT §18): approvers sending at the same moment, from
/// processes of their own (the CLI), many rounds: each person counts once, none is lost, and the
/// worker acts only on the complete approval.
pub(super) fn racing_two_person_approvals_count_each_person_once_on_postgres(server: &PgServer) {
    let url = server.database("two_people");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let access = fx.policy.join("access.yaml");
    let user = |u: &str| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", planlock::review::access::token_sha256(u));
    std::fs::write(
        &access,
        format!(
            "users:\n{}{}validators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n",
            user("ada"),
            user("bob")
        ),
    )
    .unwrap();
    for round in 0..10 {
        let key = format!("two-{round}");
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, &key).unwrap(), |s| s);
        assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
        let approve = |by: &str| {
            crate::common::cli::planlock()
                .args(["inbox", "approve", "--format", "json", "--database", &url, "--by", by, "--reason", "ok"])
                .arg("--access")
                .arg(&access)
                .arg(&key)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        if round == 0 {
            // One approval of two: the worker does not act on it.
            let out = approve("ada").wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
            assert!(matches!(runtime.run_cycle_blocking(), Err(planlock::runtime::RuntimeError::Paused { .. })));
        }
        // A person's second approval is refused (approved already, or the pause decided by
        // then) or is the decision it completed, sent again: never counted (issue 58).
        let children: Vec<_> = ["ada", "bob", "ada", "bob"].iter().map(|by| approve(by)).collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            let refused = said.contains("already-approved") || said.contains("already-decided");
            assert!(matches!(out.status.code(), Some(0)) || refused, "round {round}: {said}");
        }
        assert_eq!(log_of(&db, &key), ["voted", "voted", "decided"], "round {round}");
        let log = block_on(PgRecords::new(&db, &key).unwrap().approval_log()).unwrap();
        let Some(ApprovalEvent::Decided { decision }) = log.events.last() else { panic!("decided") };
        let mut approvers = decision.approvers.clone();
        approvers.sort_unstable();
        assert_eq!((approvers, decision.verified), (vec!["ada".to_owned(), "bob".to_owned()], Some(true)));
        assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_))), "round {round}");
    }
}

/// Notifications from a database (CONTRACT §18): `planlock notify --database` delivers a
/// worker's pause and its approvals, each verified by the `standardwebhooks` package; a receiver
/// that fails first gets the same id again; two senders at once deliver each event once at a time.
pub(super) fn notifications_are_delivered_from_the_database(server: &PgServer) {
    use crate::common::webhooks::{Receiver, SECRET, python};
    let Some(python) = python() else { return };
    let url = server.database("notify");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let (ok, failing) = (Receiver::start(&python, "slow"), Receiver::start(&python, "fail-first"));
    let access = fx.policy.join("hooks.yaml");
    let hook = |u: &str| {
        format!("  - {{ url: \"{u}\", secretEnv: HOOK, events: [pause.created, pause.decided, pause.resolved] }}\n")
    };
    let user = |u: &str| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", planlock::review::access::token_sha256(u));
    std::fs::write(&access, format!("users:\n{}webhooks:\n{}{}", user("ada"), hook(&ok.url), hook(&failing.url)))
        .unwrap();
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, "notified").unwrap(), |s| s);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })));
    let (code, _) = inbox(&url, &["approve", "--by", "ada", "--reason", "ok", "notified"]);
    assert_eq!(code, Some(0));
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_))));
    let notify = || {
        let mut cmd = crate::common::cli::planlock();
        cmd.args(["notify", "--timeout", "2s", "--first-retry", "1s", "--database", &url, "--access"])
            .arg(&access)
            .env("HOOK", SECRET)
            .stdout(std::process::Stdio::null());
        cmd
    };
    let mut senders: Vec<_> = (0..2).map(|_| notify().spawn().unwrap()).collect();
    let done = |r: &Receiver| r.answered().iter().filter(|e| e["status"] == 200).count() >= 3;
    let arrived = ok.wait_for(Duration::from_secs(20), |_| done(&ok))
        && failing.wait_for(Duration::from_secs(20), |_| done(&failing));
    for sender in &mut senders {
        let _ = sender.kill();
        let _ = sender.wait();
    }
    assert!(arrived, "{:?} {:?}", ok.entries(), failing.entries());
    for receiver in [&ok, &failing] {
        let got = receiver.answered();
        assert!(got.iter().all(|e| e["verified"] == true), "{got:?}");
        let mut kinds: Vec<&str> =
            got.iter().filter(|e| e["status"] == 200).map(|e| e["type"].as_str().unwrap()).collect();
        kinds.sort_unstable();
        assert_eq!(kinds, ["pause.created", "pause.decided", "pause.resolved"]);
        for (i, a) in got.iter().enumerate() {
            for b in &got[i + 1..] {
                let apart = a["end"].as_f64() <= b["start"].as_f64() || b["end"].as_f64() <= a["start"].as_f64();
                assert!(a["id"] != b["id"] || apart, "one event delivered twice at once: {a} {b}");
            }
        }
    }
    // The failing receiver got each id twice: a 500, then the same id again.
    assert_eq!(failing.answered().iter().filter(|e| e["status"] == 500).count(), 3);
}

/// Two `planlock worker`s on one database (CONTRACT §21): each decision wakes them (the
/// database's notification: their poll is far longer than the test), and each is acted on by
/// exactly one of them — the approved write once, the outcome logged once.
pub(super) fn two_workers_act_on_each_decision_once_on_postgres(server: &PgServer) {
    use crate::common::worker::WorkerProcess;
    let url = server.database("two_workers");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let keys: Vec<String> = (0..6).map(|n| format!("team/conv-{n}")).collect();
    for key in &keys {
        let out = crate::common::cli::planlock()
            .args(["run", "--session", key, "--database", &url, "--policy-root"])
            .arg(&fx.policy)
            .arg(&fx.plan_file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(4), "{key} paused: {out:?}");
    }
    let args = [
        "--database".as_ref(),
        url.as_ref(),
        "--policy-root".as_ref(),
        fx.policy.as_os_str(),
        "--poll".as_ref(),
        "10m".as_ref(),
    ];
    let mut workers = [WorkerProcess::start(&args), WorkerProcess::start(&args)];
    for worker in &mut workers {
        worker.wait_for("started: woken by each decision", Duration::from_secs(30));
    }
    // Every listener of the database hears a decision, whatever its tenant: the notification
    // names no session, only the log row a worker reads back in its own tenant.
    let mut listener = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    listener.batch_execute("LISTEN planlock_decided").unwrap();
    for key in &keys {
        let (code, decided) = inbox(&url, &["approve", "--by", "ada", "--reason", "checked", key]);
        assert_eq!(code, Some(0), "{decided}");
    }
    use postgres::fallible_iterator::FallibleIterator as _;
    let mut heard = Vec::new();
    let mut notifications = listener.notifications();
    let mut waiting = notifications.timeout_iter(Duration::from_secs(5));
    while heard.len() < keys.len() {
        heard.push(waiting.next().unwrap().expect("a notification per decision").payload().to_owned());
    }
    assert!(heard.iter().all(|p| p.parse::<i64>().is_ok()), "{heard:?}");
    // Every key acted on once, by one worker or the other.
    let mut acted: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while acted.len() < keys.len() && Instant::now() < deadline {
        for worker in &mut workers {
            let said = worker.said_within(Duration::from_millis(200));
            acted.extend(said.into_iter().filter(|l| l.contains(": approve by ada:")));
        }
    }
    for key in &keys {
        let lines: Vec<&String> = acted.iter().filter(|l| l.contains(&format!(" {key} cycle 1:"))).collect();
        assert_eq!(lines.len(), 1, "{key} acted on once: {acted:?}");
        assert!(lines[0].ends_with("completed"), "{lines:?}");
        assert_eq!(memory_rows(&url, key), 1, "{key}: the approved write once");
        assert_eq!(log_of(&db, key), ["decided", "consumed"], "{key}");
    }
    for worker in workers {
        assert_eq!(worker.stop(), Some(0));
    }
}

/// Edit and approve on PostgreSQL (CONTRACT §22): bob approves what was shown, ada edits it (the
/// count restarts at her edit), bob's approval of the old payload is stale, his approval of the
/// edit approves it — his second vote on the pause, on another digest — and the re-run stores
/// ada's text.
pub(super) fn an_edit_restarts_the_count_and_runs_its_payload_on_postgres(server: &PgServer) {
    use planlock::review::access::{Access, token_sha256};
    use planlock::review::{decide_with, edit_of};
    let url = server.database("edits");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let users: String =
        ["ada", "bob"].iter().map(|u| format!("  {u}: {{ tokenSha256: \"{}\" }}\n", token_sha256(u))).collect();
    let text = format!("users:\n{users}validators:\n  demo-review: {{ approvers: [ada, bob], required: 2 }}\n");
    let access = Access::parse("access.yaml", &text).unwrap();
    let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, "e1").unwrap(), |s| s);
    let Ok(RunOutcome::Paused { record, .. }) = runtime.run_cycle_blocking() else { panic!("paused") };
    let records = PgRecords::new(&db, "e1").unwrap();
    let bob = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "fine as shown");
    assert!(matches!(block_on(decide_with(&records, &bob, Some(&access))), Ok(Recorded::Counted { approvals: 1, .. })));
    let mut payload = record.shown.as_ref().unwrap()["payload"].clone();
    payload["summary"] = json!("ada's text");
    let edit = block_on(edit_of(&records, &record, payload)).unwrap();
    let ada = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "redacted").editing(edit.clone());
    assert!(matches!(block_on(decide_with(&records, &ada, Some(&access))), Ok(Recorded::Counted { approvals: 1, .. })));
    let stale = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "fine as shown, again");
    assert_eq!(block_on(decide_with(&records, &stale, Some(&access))).unwrap_err().code(), "approval-stale");
    let mut on_edit = ReviewDecision::new(&record, ReviewVerdict::Approve, "bob", "the edit is fine");
    on_edit.shown_digest = Some(edit.digest);
    assert_eq!(block_on(decide_with(&records, &on_edit, Some(&access))).unwrap(), Recorded::New);
    assert_eq!(log_of(&db, "e1"), ["voted", "voted", "voted", "decided"]);
    assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_))));
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let stored: Vec<String> = client
        .query("SELECT summary FROM planlock_memories ORDER BY seq", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(stored, ["ada's text"]);
}

/// The property of edit and approve (`common::edits`) on PostgreSQL: 30 random cases, a
/// session each, its cycle run by a runtime on the database; the memories a case stored are the
/// rows it added.
pub(super) fn random_edits_and_approvals_run_exactly_the_approved_bytes_on_postgres(server: &PgServer) {
    let url = server.database("edit_property");
    let db = PgDatabase::connect(&url).unwrap();
    let fx = reviewed_fixture();
    let access = fx.policy.join("access.yaml");
    std::fs::write(&access, common::edits::rules()).unwrap();
    let install =
        common::cli::planlock().args(["access", "install", "--database", &url]).arg(&access).output().unwrap();
    assert_eq!(install.status.code(), Some(0), "{install:?}");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut stored_since = |seq: &mut i64| -> Vec<String> {
        let rows =
            client.query("SELECT seq, summary FROM planlock_memories WHERE seq > $1 ORDER BY seq", &[&*seq]).unwrap();
        rows.iter()
            .map(|r| {
                *seq = (*seq).max(r.get(0));
                r.get::<_, String>(1)
            })
            .collect()
    };
    let mut seq = 0;
    stored_since(&mut seq);
    let mut property = common::edits::Property::seeded();
    for case in 0..30 {
        let key = format!("c{case}");
        let mut runtime = reviewed_runtime(&fx, PgSessionStore::open(&db, &key).unwrap(), |s| s);
        assert!(matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Paused { .. })), "{}", property.at(case));
        let model = property.decide(case, &PgRecords::new(&db, &key).unwrap());
        let completed = matches!(runtime.run_cycle_blocking(), Ok(RunOutcome::Completed(_)));
        property.check(case, &model, completed, &stored_since(&mut seq));
    }
    property.covered();
}
