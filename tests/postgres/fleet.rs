//! Many workers: leases and fencing, a queue of sessions, stopped and killed workers, a
//! server restart.

use super::*;
use planlock::block_on;
use planlock::session::{CycleGuard, EndOfCycle};

pub(super) fn the_lease_refuses_a_second_worker_and_fences_a_stalled_one(server: &PgServer) {
    let db = PgDatabase::connect(&server.database("lease")).unwrap();
    let lease = Duration::from_millis(1_500);
    let a = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    let update = |cycle| planlock::session::SessionUpdate {
        session_id: uuid::Uuid::new_v4(),
        memory_ref: None,
        repo_scan_version: None,
        last_execution_plan_hash: planlock::Digest::of(b"plan"),
        hash_parts: None,
        cycle,
    };
    let _ = block_on(a.end_cycle(EndOfCycle::saving(update(1)), CycleGuard::none())).unwrap();
    let err = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap_err();
    assert!(matches!(err, planlock::session::OpenError::LeaseHeld { .. }), "{err}");
    assert_eq!((err.code(), err.kind()), ("session-in-use", FailureKind::FailFast));
    assert!(err.to_string().contains(&a.owner().to_string()), "{err}");
    // A renewal keeps it.
    std::thread::sleep(lease / 2);
    a.renew().unwrap();
    std::thread::sleep(lease / 2);
    assert!(PgSessionStore::open_with_lease(&db, "conv-1", lease).is_err());
    // Stalled past its lease: another worker takes over, and the stalled one can write nothing.
    std::thread::sleep(lease + Duration::from_millis(50));
    let b = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    let _ = block_on(b.end_cycle(EndOfCycle::saving(update(2)), CycleGuard::none())).unwrap();
    for result in [
        block_on(a.end_cycle(EndOfCycle::saving(update(9)), CycleGuard::none())).map(drop),
        block_on(a.end_cycle(EndOfCycle::saving(update(9)).with_pin(Some(pin())), CycleGuard::none())).map(drop),
        block_on(a.end_cycle(EndOfCycle::unpausing(), CycleGuard::none())).map(drop),
        a.renew(),
        block_on(a.end_cycle(EndOfCycle::failing().with_entry(Some((entry(9), 10))), CycleGuard::none())).map(drop),
    ] {
        let err = result.unwrap_err();
        assert!(matches!(err, SessionError::Fenced { .. }), "{err}");
        assert_eq!(err.code(), "session-fenced");
    }
    assert_eq!(block_on(b.records().load()).unwrap().unwrap().cycle, 2, "the fenced worker wrote nothing");
    assert!(block_on(b.records().load_pin()).unwrap().is_none());
    // The history: written by the lease's holder, the newest `keep` kept.
    for cycle in 3..8 {
        block_on(b.end_cycle(EndOfCycle::failing().with_entry(Some((entry(cycle), 2))), CycleGuard::none())).unwrap();
    }
    let records = planlock::session::postgres::PgRecords::new(&db, "conv-1").unwrap();
    let history = block_on(planlock::session::SessionRecords::history(&records, 10)).unwrap();
    assert_eq!(history.entries.iter().map(|e| e.cycle).collect::<Vec<_>>(), [7, 6]);
    // Dropping a store gives its lease back at once.
    drop(b);
    let c = PgSessionStore::open_with_lease(&db, "conv-1", lease).unwrap();
    assert_eq!(block_on(c.records().load()).unwrap().unwrap().cycle, 2);
    // Keys: 1 to 256 bytes.
    for bad in [String::new(), "k".repeat(257)] {
        let err = PgSessionStore::open(&db, &bad).unwrap_err();
        assert_eq!(err.code(), "session-key", "{err}");
    }
    PgSessionStore::open(&db, &"é".repeat(128)).unwrap();
}

/// A completed cycle's history entry with an empty report.
fn entry(cycle: u64) -> planlock::session::CycleEntry {
    planlock::session::CycleEntry {
        session_id: uuid::Uuid::new_v4(),
        cycle,
        plan_hash: planlock::Digest::of(b"plan"),
        end: planlock::session::CycleEnd::Completed,
        started_at: planlock::session::Timestamp::now(),
        finished_at: planlock::session::Timestamp::now(),
        report: Default::default(),
        failure: None,
        content: None,
        truncated: false,
    }
}

pub(super) fn eight_workers_run_64_sessions_20_cycles_each_exactly(server: &PgServer) {
    let url = server.database("workers");
    let fx = fixture();
    drop(PgDatabase::connect(&url).unwrap());
    let sessions = keys("s", 64);
    server.sql(
        "workers",
        "CREATE TABLE test_queue (session_key text PRIMARY KEY, remaining integer NOT NULL);
         CREATE TABLE test_log (session_key text NOT NULL, cycle bigint NOT NULL, UNIQUE (session_key, cycle));",
    );
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for key in &sessions {
        client.execute("INSERT INTO test_queue VALUES ($1, 20)", &[key]).unwrap();
    }
    let started = Instant::now();
    let mut workers: Vec<Child> = (0..8).map(|_| spawn_worker("queue", &url, &fx, &[], 30_000)).collect();
    let outputs: Vec<_> = workers.iter_mut().map(lines).collect();
    for w in &mut workers {
        assert!(w.wait().unwrap().success());
    }
    let failures: Vec<String> = outputs.iter().flat_map(|rx| rx.try_iter()).filter(|l| l.starts_with("FAIL")).collect();
    println!(
        "    8 workers, 64 sessions x 20 cycles in {:.1} s ({} refused or failed attempts retried)",
        started.elapsed().as_secs_f64(),
        failures.len()
    );
    // Only "in use" (a lease still held between a commit and the drop) may have been retried.
    assert!(failures.iter().all(|l| l.contains("session-in-use")), "{failures:?}");
    let db = PgDatabase::connect(&url).unwrap();
    let cycles = check_rows(&db, &sessions, Duration::ZERO);
    for key in &sessions {
        let logged: Vec<i64> = client
            .query("SELECT cycle FROM test_log WHERE session_key = $1 ORDER BY cycle", &[key])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(logged, (1..=20).collect::<Vec<i64>>(), "{key}: cycle numbers with no gap or repeat");
        assert_eq!(cycles[key], 20, "{key}");
        assert_eq!(memory_rows(&url, key), 20, "{key}: one memory per completed cycle");
    }
}

pub(super) fn a_stopped_worker_is_taken_over_and_refused_when_it_continues(server: &PgServer) {
    let url = server.database("stall");
    let fx = fixture();
    let key = vec!["stalled".to_owned()];
    let lease_ms = 800;
    let mut child = spawn_worker("stall", &url, &fx, &key, lease_ms);
    let rx = lines(&mut child);
    assert_eq!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), "READY 1");
    signal(&child, "-STOP");
    std::thread::sleep(Duration::from_millis(lease_ms + 200));
    // Another worker takes the session over and runs cycle 2.
    let db = PgDatabase::connect(&url).unwrap();
    let env = worker_env_for(&url, &fx, lease_ms);
    assert_eq!(one_cycle(&db, &env, "stalled"), Ok(2));
    let before = memory_rows(&url, "stalled");
    signal(&child, "-CONT");
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let said = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    // The runtime saves the session as the PersistSession step: that step fails, FailFast, fenced.
    assert!(said.starts_with("FAIL stalled step-failed FailFast PersistSession"), "{said}");
    assert!(said.contains("taken over by another worker"), "{said}");
    assert_eq!(child.wait().unwrap().code(), Some(3));
    // It wrote nothing: the session is at the new owner's cycle, its memory write (same cycle,
    // same idempotency key) found the new owner's.
    let cycles = check_rows(&db, &key, Duration::ZERO);
    assert_eq!(cycles["stalled"], 2);
    assert_eq!(memory_rows(&url, "stalled"), before);
}

pub(super) fn workers_killed_mid_cycle_leave_no_torn_row_and_every_session_resumes(server: &PgServer) {
    let url = server.database("kills");
    let fx = fixture();
    let sessions = keys("k", 8);
    let lease_ms = 200;
    let mut done = 0;
    for kill in 0..100u64 {
        let mut child = spawn_worker("churn", &url, &fx, &sessions, lease_ms);
        let rx = lines(&mut child);
        // Killed at a different moment each time, most of them inside a cycle.
        std::thread::sleep(Duration::from_millis(60 + (kill * 37) % 90));
        child.kill().unwrap();
        child.wait().unwrap();
        done += rx.try_iter().filter(|l| l.starts_with("DONE")).count();
    }
    println!("    100 kills; {done} cycles completed between them");
    let db = PgDatabase::connect(&url).unwrap();
    let before = check_rows(&db, &sessions, Duration::from_millis(lease_ms));
    let env = worker_env_for(&url, &fx, lease_ms);
    for key in &sessions {
        assert_eq!(one_cycle(&db, &env, key), Ok(before[key] + 1), "{key} resumes");
        assert!(memory_rows(&url, key) <= i64::try_from(before[key] + 1).unwrap(), "{key}: no memory twice");
    }
}

pub(super) fn a_server_restart_fails_cycles_with_their_kind_and_loses_nothing(server: &PgServer) {
    // A short connect timeout: the pool waits at most 1 s for the server, so an outage longer
    // than that fails the cycles that run into it instead of holding them.
    let url = server.database("restart") + " connect_timeout=1";
    let fx = fixture();
    let sessions = keys("r", 4);
    let mut child = spawn_worker("churn", &url, &fx, &sessions, 1_000);
    let rx = lines(&mut child);
    let mut seen = Vec::new();
    let wait_for_done = |n: usize, seen: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut count = 0;
        while count < n && Instant::now() < deadline {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                count += usize::from(line.starts_with("DONE"));
                seen.push(line);
            }
        }
        assert!(count >= n, "only {count} cycles completed: {seen:?}");
    };
    wait_for_done(10, &mut seen);
    server.pg_ctl_stop();
    std::thread::sleep(Duration::from_millis(2_500));
    server.pg_ctl_start();
    wait_for_done(10, &mut seen);
    child.kill().unwrap();
    child.wait().unwrap();
    seen.extend(rx.try_iter());

    let failures: Vec<&String> = seen.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert!(!failures.is_empty(), "the restart failed no cycle: {seen:?}");
    for line in &failures {
        // FAIL key code kind step
        let parts: Vec<&str> = line.split(' ').collect();
        let (kind, step) = (parts[3], parts[4]);
        match StepType::from_wire(step) {
            Some(ty) => assert_eq!(kind, ty.failure_kind().as_str(), "{line}: a step fails with its registry kind"),
            None => assert_eq!(kind, "FailFast", "{line}: a session store or boot failure is FailFast"),
        }
    }
    // Nothing acknowledged is lost: each session has at least its last acknowledged cycle.
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    for line in seen.iter().filter(|l| l.starts_with("DONE")) {
        let parts: Vec<&str> = line.split(' ').collect();
        let cycle: u64 = parts[2].parse().unwrap();
        let last = acked.entry(parts[1].to_owned()).or_default();
        assert!(cycle > *last, "{line}: cycle numbers only go up");
        *last = cycle;
    }
    let db = PgDatabase::connect(&url).unwrap();
    let cycles = check_rows(&db, &sessions, Duration::from_millis(1_000));
    for (key, last) in &acked {
        assert!(cycles[key] >= *last, "{key}: acknowledged cycle {last}, stored {}", cycles[key]);
    }
    println!("    {} cycles acknowledged, {} failed across the restart", seen.len() - failures.len(), failures.len());
}
