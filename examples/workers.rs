//! Many workers, one PostgreSQL database, and a reviewer: the shape a deployment takes.
//!
//! ```sh
//! cargo run --example workers --features postgres,worker -- postgres://user:pass@host/db [WORKERS] [SESSIONS] [CYCLES]
//! ```
//!
//! The parent plays the two roles around the workers (default 4 workers, 16 sessions, 5 cycles):
//!
//! 1. the policy layer: it runs each session's next cycle of the reviewed plan, which pauses
//!    for a person before its memory is written;
//! 2. the reviewer: it approves each pause (`review::decide`, as `planlock inbox approve` and
//!    the console do).
//!
//! It starts WORKERS copies of itself as worker processes, each a [`Worker`] on the database:
//! woken by each decision (the database's `NOTIFY`), it takes the session (its lease: no two
//! workers act on one decision), boots the session's runtime with the plan the session keeps,
//! and runs the approved cycle. The parent waits for every session to complete the cycle
//! before the next round, then closes the workers' standard input, which stops them.

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use planlock::ValidPlan;
use planlock::backend::{Backend, OpenedSession, PgBackend};
use planlock::demo::Demo;
use planlock::handler::Boxed;
use planlock::review::decide;
use planlock::runtime::{RunOutcome, RuntimeBuilder};
use planlock::session::{ReviewDecision, ReviewVerdict, SessionStore};
use planlock::worker::{ToRun, Worker};

/// A session's runtime, ready to boot.
type Runtime = RuntimeBuilder<Box<dyn SessionStore>, Boxed>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--worker") => worker(args.get(1).map(String::as_str).unwrap_or_default()),
        Some(url) => {
            let number = |i: usize, default: u32| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
            parent(url, number(1, 4), number(2, 16), number(3, 5))
        }
        None => Err("usage: workers DATABASE_URL [WORKERS] [SESSIONS] [CYCLES]".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("workers: {e}");
            ExitCode::from(2)
        }
    }
}

type Error = Box<dyn std::error::Error>;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The reviewed plan (the demo plan, paused before its memory is written), scanning the
/// examples' policy folder.
fn plan() -> Result<ValidPlan, Error> {
    let mut plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples().join("plans/reviewed_plan.json"))?)?;
    plan["steps"][0]["payload"]["repoPath"] = serde_json::json!(examples().join("policy").display().to_string());
    Ok(ValidPlan::from_value(&plan)?)
}

/// The runtime of an opened session (the demo's, with the review gate, over the session's own
/// stores): what the parent runs a cycle with and what a worker boots.
fn builder(backend: &dyn Backend, plan: ValidPlan, opened: Box<dyn OpenedSession>) -> Result<Runtime, String> {
    let policy = examples().join("policy");
    Demo::new().session_runtime(policy, plan, opened, backend.default_bundle()).map_err(|e| e.to_string())
}

/// The database's sessions (a `postgres://` URL or a libpq `key=value` string).
fn connect(url: &str) -> Result<Arc<dyn Backend>, Error> {
    Ok(Arc::new(planlock::block_on(PgBackend::connect(url, None))?))
}

/// Starts the workers, then runs CYCLES rounds: each session's cycle paused, each pause
/// approved, every approved cycle completed by a worker. Says what the database holds.
fn parent(url: &str, workers: u32, sessions: u32, cycles: u32) -> Result<(), Error> {
    // Connecting applies planlock's migrations once, before the workers start.
    let backend = connect(url)?;
    let plan = plan()?;
    let mut children: Vec<_> = (0..workers)
        .map(|_| Command::new(std::env::current_exe()?).args(["--worker", url]).stdin(Stdio::piped()).spawn())
        .collect::<Result<_, _>>()?;
    let keys: Vec<String> = (0..sessions).map(|n| format!("example/conversation-{n:04}")).collect();
    let started = Instant::now();
    for round in 1..=cycles {
        for key in &keys {
            // The policy layer: the session's next cycle, paused for review.
            let opened = planlock::block_on(backend.open(key))?;
            let mut runtime = planlock::block_on(builder(backend.as_ref(), plan.clone(), opened)?.boot())?;
            let RunOutcome::Paused { record, .. } = runtime.run_cycle_blocking()? else {
                return Err(format!("{key}: the reviewed plan's cycle did not pause").into());
            };
            drop(runtime); // its lease, given back for the worker that acts on the decision
            // The reviewer.
            let records = planlock::block_on(backend.records(key))?;
            let approval = ReviewDecision::new(&record, ReviewVerdict::Approve, "reviewer", "checked");
            planlock::block_on(decide(records.as_ref(), &approval))?;
        }
        wait_for_round(backend.as_ref(), &keys, u64::from(round))?;
    }
    let elapsed = started.elapsed();
    // Closing their standard input stops the workers.
    let mut failed = 0;
    for mut child in children.drain(..) {
        drop(child.stdin.take());
        failed += u32::from(!child.wait()?.success());
    }
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    let done: i64 =
        client.query_one("SELECT count(*) FROM planlock_sessions WHERE session_key LIKE 'example/%'", &[])?.get(0);
    let memories: i64 =
        client.query_one("SELECT count(*) FROM planlock_memories WHERE namespace LIKE 'example/%'", &[])?.get(0);
    println!(
        "{workers} workers ran {sessions} sessions x {cycles} cycles in {:.1} s: {done} sessions stored, {memories} memories; {failed} worker(s) failed",
        elapsed.as_secs_f64()
    );
    if failed > 0 { Err(format!("{failed} worker(s) failed").into()) } else { Ok(()) }
}

/// Waits until every session completed `cycle` (a worker ran its approved cycle).
fn wait_for_round(backend: &dyn Backend, keys: &[String], cycle: u64) -> Result<(), Error> {
    let deadline = Instant::now() + Duration::from_secs(120);
    for key in keys {
        let records = planlock::block_on(backend.records(key))?;
        while planlock::block_on(records.load())?.map_or(0, |s| s.cycle) < cycle {
            if Instant::now() > deadline {
                return Err(format!("{key}: cycle {cycle} was not completed by a worker within 120 s").into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(())
}

/// One worker process: acts on every decision until its standard input closes.
fn worker(url: &str) -> Result<(), Error> {
    let backend = connect(url)?;
    let for_boot = backend.clone();
    let boot = move |s: ToRun| builder(for_boot.as_ref(), s.plan, s.opened);
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        flag.store(true, Ordering::SeqCst);
    });
    let stop = async move {
        while !closed.load(Ordering::SeqCst) {
            futures_timer::Delay::new(Duration::from_millis(50)).await;
        }
    };
    let pid = std::process::id();
    let mut acted = 0;
    let report = |event: planlock::worker::WorkerEvent| {
        if matches!(event, planlock::worker::WorkerEvent::Acted(_)) {
            acted += 1;
        } else {
            eprintln!("worker {pid}: {event}");
        }
    };
    planlock::block_on(Worker::new(backend, boot).poll_every(Duration::from_secs(5)).run(stop, report));
    println!("worker {pid} acted on {acted} decisions");
    Ok(())
}
