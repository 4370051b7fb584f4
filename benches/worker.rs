//! A decision takes effect (CONTRACT §21, issue 58): from a decision's acknowledgement (the
//! `decide` call returned, the decision durable) to the resumed cycle's save by a running
//! `worker::Worker`, with 1, 100 and 10,000 paused sessions held, on files and on PostgreSQL.
//! Beside it in the same run, in interleaved rounds, its floor: the same worker finding the
//! decisions by its poll alone (every second), which the wake-up by the decision must beat.
//! Targets: p99 ≤ 1 s at 10,000 sessions, ≤ 100 ms with the wake-up.
//!
//! The decisions come one at a time (the next once the last one's cycle is saved), each on a
//! session not decided before. Writes under `target/bench-worker`; the PostgreSQL server is
//! started here (`fsync` on).
//!
//! Run: `cargo bench --bench worker --features postgres,worker,demo` (`-- --quick`: 1 and 100
//! sessions, fewer decisions, one round; what `.ci/run` runs as a smoke). `WORKER_SIZES=10000`
//! and `WORKER_PLACES=files` (or `PostgreSQL`) run a part of it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use planlock::ValidPlan;
use planlock::backend::{Backend, OpenedSession};
use planlock::demo::Demo;
use planlock::handler::Boxed;
use planlock::review::decide;
use planlock::runtime::{RunOutcome, RuntimeBuilder};
use planlock::session::{ReviewDecision, ReviewVerdict, SessionStore};
use planlock::worker::{ToRun, Worker, WorkerEvent};

#[path = "../tests/common/pg.rs"]
#[allow(dead_code)]
mod pg;

/// A session's runtime, ready to boot.
type Runtime = RuntimeBuilder<Box<dyn SessionStore>, Boxed>;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn plan() -> ValidPlan {
    let text = std::fs::read_to_string(examples().join("plans/reviewed_plan.json")).unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    plan["steps"][0]["payload"]["repoPath"] = serde_json::json!(examples().join("policy").display().to_string());
    ValidPlan::from_value(&plan).unwrap()
}

/// The runtime of an opened session (the demo's, with the review gate, over the session's own
/// stores): what the parent runs a cycle with and what a worker boots.
fn builder(backend: &dyn Backend, plan: ValidPlan, opened: Box<dyn OpenedSession>) -> Result<Runtime, String> {
    let policy = examples().join("policy");
    Demo::new().session_runtime(policy, plan, opened, backend.default_bundle()).map_err(|e| e.to_string())
}

/// Pauses the next cycle of session `name` (once the worker that acted on it let it go).
fn pause(backend: &dyn Backend, name: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let opened = loop {
        match planlock::block_on(backend.open(name)) {
            Ok(opened) => break opened,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("{name}: {e}"),
        }
    };
    let mut runtime = planlock::block_on(builder(backend, plan(), opened).unwrap().boot()).unwrap();
    assert!(matches!(runtime.run_cycle_blocking().unwrap(), RunOutcome::Paused { .. }));
}

/// Copies a session root's records, not its memories' store (made again at the first cycle that
/// needs it): what 10,000 roots hold stays small.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == "store" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Where the sessions are held: `count` paused sessions named `s0…`, made from one paused
/// session (its root copied, or its row), in a directory or a database of their own.
enum Place<'a> {
    Files(PathBuf),
    Database(&'a pg::PgServer),
}

impl Place<'_> {
    fn fill(&self, count: usize) -> Arc<dyn Backend> {
        match self {
            Place::Files(base) => {
                let dir = &base.join(format!("held-{count}"));
                let _ = std::fs::remove_dir_all(dir);
                std::fs::create_dir_all(dir.join("template")).unwrap();
                let backend = planlock::block_on(planlock::backend::connect(dir.to_str().unwrap(), None)).unwrap();
                pause(backend.as_ref(), "template");
                for n in 0..count {
                    copy_dir(&dir.join("template"), &dir.join(format!("s{n}")));
                }
                std::fs::remove_dir_all(dir.join("template")).unwrap();
                backend
            }
            Place::Database(server) => {
                let url = &server.database(&format!("held_{count}"));
                let backend: Arc<dyn Backend> =
                    Arc::new(planlock::block_on(planlock::backend::PgBackend::connect(url, None)).unwrap());
                let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
                pause(backend.as_ref(), "template");
                client
                    .execute(
                        "INSERT INTO planlock_sessions (session_key, state, intervention, reserved, pin, plan)
                         SELECT 's' || g, state, intervention, reserved, pin, plan
                         FROM planlock_sessions, generate_series(0, $1 - 1) g WHERE session_key = 'template'",
                        &[&i32::try_from(count).unwrap()],
                    )
                    .unwrap();
                client.execute("DELETE FROM planlock_sessions WHERE session_key = 'template'", &[]).unwrap();
                backend
            }
        }
    }
}

/// A worker running on its own thread, saying when it saved each session's resumed cycle.
struct Running {
    stop: Arc<AtomicBool>,
    saved: mpsc::Receiver<String>,
    thread: std::thread::JoinHandle<()>,
}

fn start(backend: Arc<dyn Backend>, watch: bool) -> Running {
    let (stop, saved_tx, (started_tx, started)) = (Arc::new(AtomicBool::new(false)), mpsc::channel(), mpsc::channel());
    let (saved_tx, saved) = saved_tx;
    let flag = stop.clone();
    let thread = std::thread::spawn(move || {
        let for_boot = backend.clone();
        let boot = move |s: ToRun| builder(for_boot.as_ref(), s.plan, s.opened);
        // Every second in both modes: with the wake-up the poll is the safety net (10 s by
        // default), here as often as alone, so that its passes run beside the decisions timed.
        let worker = Worker::new(backend, boot).poll_every(Duration::from_secs(1)).watching(watch);
        let stopped = async move {
            while !flag.load(Ordering::SeqCst) {
                futures_timer::Delay::new(Duration::from_millis(20)).await;
            }
        };
        planlock::block_on(worker.run(stopped, |event| match event {
            WorkerEvent::Started { .. } => drop(started_tx.send(())),
            WorkerEvent::Acted(acted) => {
                assert_eq!(acted.outcome, "completed", "{acted:?}");
                drop(saved_tx.send(acted.session));
            }
            other => eprintln!("worker: {other}"),
        }));
    });
    started.recv_timeout(Duration::from_secs(120)).expect("the worker started");
    Running { stop, saved, thread }
}

/// Makes `count` decisions one at a time on the sessions `names` (in turn), a worker watching
/// (or polling): each one's latency from the acknowledgement to its save. Each session decided
/// is paused again after its save (untimed), so the sessions held stay paused. The first
/// decision comes as the worker starts, while its first pass reads every session's record (it
/// is reported apart: a worker starts once); the others find it in its steady state, its
/// passes reading only the pauses that changed.
fn latencies(backend: &Arc<dyn Backend>, names: &[String], count: usize, watch: bool) -> (Duration, Vec<Duration>) {
    let running = start(backend.clone(), watch);
    let mut taken = Vec::with_capacity(count);
    for name in names.iter().cycle().take(count) {
        let records = planlock::block_on(backend.records(name)).unwrap();
        let record = planlock::block_on(records.load_intervention()).unwrap().unwrap();
        let decision = ReviewDecision::new(&record, ReviewVerdict::Approve, "ada", "checked");
        planlock::block_on(decide(records.as_ref(), &decision)).unwrap();
        let acknowledged = Instant::now();
        let saved = running.saved.recv_timeout(Duration::from_secs(60)).expect("the worker saved the cycle");
        taken.push(acknowledged.elapsed());
        assert_eq!(&saved, name);
        pause(backend.as_ref(), name);
    }
    running.stop.store(true, Ordering::SeqCst);
    running.thread.join().unwrap();
    let first = taken.remove(0);
    (first, taken)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let sizes: Vec<usize> = match std::env::var("WORKER_SIZES") {
        Ok(sizes) => sizes.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        Err(_) if quick => vec![1, 100],
        Err(_) => vec![1, 100, 10_000],
    };
    let only = std::env::var("WORKER_PLACES").ok();
    let (rounds, per_round) = if quick { (1, 5) } else { (3, 20) };
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-worker");
    let wanted = |place: &str| only.as_deref().is_none_or(|only| only.split(',').any(|o| o.trim() == place));
    let server = if wanted("PostgreSQL") { pg::PgServer::start_with(true) } else { None };
    let mut places = vec![("files", Place::Files(base))];
    places.retain(|(name, _)| wanted(name));
    match &server {
        Some(server) => places.push(("PostgreSQL", Place::Database(server))),
        None if wanted("PostgreSQL") => println!("(no PostgreSQL server installed: files only)"),
        None => {}
    }
    println!("worker: from a decision's acknowledgement to the resumed cycle's save, {rounds} round(s) of");
    println!("{per_round} decisions per size and mode, interleaved: woken by the decision, and the poll alone (1 s)");
    for (name, place) in &places {
        for &held in &sizes {
            let backend = place.fill(held);
            // The decided ones spread over the sessions held (at most 200 of them).
            let names: Vec<String> = (0..held.min(200)).map(|i| format!("s{}", i * (held / held.min(200)))).collect();
            let (mut woken, mut polled, mut at_start) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                let (first, rest) = latencies(&backend, &names, per_round + 1, true);
                at_start.push(first);
                woken.extend(rest);
                let (first, rest) = latencies(&backend, &names, per_round + 1, false);
                at_start.push(first);
                polled.extend(rest);
            }
            woken.sort();
            polled.sort();
            at_start.sort();
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            println!(
                "   {name}, {held} sessions held: a decision as the worker starts (its first pass): at most {:.1} ms",
                ms(*at_start.last().unwrap())
            );
            println!(
                "== {name}, {held} sessions held: woken p50 {:.1} ms, p99 {:.1} ms; poll alone p50 {:.1} ms, p99 {:.1} ms; p99 ratio {:.3}x",
                ms(percentile(&woken, 0.5)),
                ms(percentile(&woken, 0.99)),
                ms(percentile(&polled, 0.5)),
                ms(percentile(&polled, 0.99)),
                ms(percentile(&woken, 0.99)) / ms(percentile(&polled, 0.99)),
            );
        }
    }
}
