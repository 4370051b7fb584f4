//! The console under load (issue 33 §5): the sessions page and the inbox over 10,000 sessions (100
//! paused), 8 clients at once, on files and on PostgreSQL, beside a floor in the same rounds: the
//! console's own static stylesheet (a request that reads nothing), so what is measured is the
//! pages' reads and rendering, not HTTP or the machine.
//!
//! The sessions are copies of two real ones (a completed session and a paused one, made by the CLI):
//! their files copied into 10,000 roots, or their rows copied into 10,000 rows with SQL. Each round,
//! every client sends one request of each kind in turn; p50/p99 per kind over all rounds.
//!
//! The triage inbox is measured with its filters and search (`state`, `stepType`, `olderThan`,
//! `q`), and the sessions page with its search; last, what an open `/events` stream costs the
//! console: its resident memory and threads before and after 16 streams are opened (the most one
//! client may hold), per stream.
//!
//! Run: `cargo bench --bench console --features postgres` (quick: `-- --quick`, 3 rounds).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;
use common::console::{Console, serve};

const SESSIONS: usize = 10_000;
const PAUSED: usize = 100;
const CLIENTS: usize = 8;

fn planlock(args: &[&str], dir: &Path) -> i32 {
    common::cli::planlock().current_dir(dir).args(args).output().unwrap().status.code().unwrap()
}

fn manifest(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path).to_string_lossy().into_owned()
}

/// `SESSIONS` roots under `dir`, `PAUSED` of them paused.
fn file_sessions(dir: &Path) {
    let (policy, demo, reviewed) = (
        manifest("examples/policy"),
        manifest("examples/plans/demo_plan.json"),
        manifest("examples/plans/reviewed_plan.json"),
    );
    assert_eq!(planlock(&["run", "--root", "t-done", "--policy-root", &policy, &demo], dir), 0);
    assert_eq!(planlock(&["run", "--root", "t-paused", "--policy-root", &policy, &reviewed], dir), 4);
    for i in 0..SESSIONS {
        let template = if i < PAUSED { "t-paused" } else { "t-done" };
        let to = dir.join(format!("s{i:05}/ops/runtime"));
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(dir.join(template).join("ops/runtime")).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    }
    for template in ["t-done", "t-paused"] {
        std::fs::remove_dir_all(dir.join(template)).unwrap();
    }
}

/// `SESSIONS` rows in the database at `url`, `PAUSED` of them paused.
fn database_sessions(server: &common::pg::PgServer, name: &str, url: &str, dir: &Path) {
    let (policy, demo, reviewed) = (
        manifest("examples/policy"),
        manifest("examples/plans/demo_plan.json"),
        manifest("examples/plans/reviewed_plan.json"),
    );
    let run = |key: &str, plan: &str| {
        common::cli::planlock()
            .current_dir(dir)
            .args(["run", "--session", key, "--policy-root", &policy, plan])
            .env("PLANLOCK_DATABASE_URL", url)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run("t-done", &demo), Some(0));
    assert_eq!(run("t-paused", &reviewed), Some(4));
    let copy = |from: &str, range: &str| {
        format!(
            "INSERT INTO planlock_sessions (session_key, state, intervention, reserved, pin, last_outcome, last_class, last_cycle_at)
               SELECT 's' || lpad(i::text, 5, '0'), state, intervention, reserved, pin, last_outcome, last_class, last_cycle_at
               FROM planlock_sessions, generate_series({range}) AS i WHERE session_key = '{from}';
             INSERT INTO planlock_cycle_history (session_key, cycle, outcome, failure_class, entry)
               SELECT 's' || lpad(i::text, 5, '0'), cycle, outcome, failure_class, entry
               FROM planlock_cycle_history, generate_series({range}) AS i WHERE session_key = '{from}';"
        )
    };
    server.sql(name, &copy("t-paused", &format!("0, {}", PAUSED - 1)));
    server.sql(name, &copy("t-done", &format!("{PAUSED}, {}", SESSIONS - 1)));
    server.sql(name, "DELETE FROM planlock_sessions WHERE session_key LIKE 't-%'; ANALYZE;");
}

/// Rounds of `CLIENTS` clients, each sending one request of each kind per round: every
/// request's time, by kind.
fn measure(console: &Console, rounds: usize) -> Vec<(&'static str, Vec<Duration>)> {
    let kinds: [(&str, &str); 5] = [
        ("floor: GET /static/console.css", "/static/console.css"),
        ("GET /sessions", "/sessions"),
        ("GET /sessions?q=", "/sessions?q=S000"),
        ("GET /inbox", "/inbox"),
        ("GET /inbox?filters", "/inbox?state=waiting&stepType=PersistMemory&olderThan=0s&q=s000+remember&order=newest"),
    ];
    let cookies: Vec<String> = (0..CLIENTS).map(|c| console.sign_in(&format!("client-{c}"))).collect();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rounds {
        for (k, (_, path)) in kinds.iter().enumerate() {
            let took: Vec<Duration> = std::thread::scope(|scope| {
                let handles: Vec<_> = cookies
                    .iter()
                    .map(|cookie| {
                        scope.spawn(move || {
                            let started = Instant::now();
                            let reply = console.get(cookie, path);
                            assert_eq!(reply.status, 200, "{path}");
                            started.elapsed()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            times[k].extend(took);
        }
    }
    kinds.iter().map(|(name, _)| *name).zip(times).collect()
}

/// A field of the console process's `/proc/{pid}/status` (`VmRSS` in KiB, `Threads`).
fn proc_status(console: &Console, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", console.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// What open `/events` streams cost the console: resident KiB and threads, per stream.
fn events_cost(console: &Console) {
    use std::io::{Read, Write};
    // Beside the warm one: 16 in all, the most one client address may hold.
    const STREAMS: usize = 15;
    let cookie = console.sign_in("events");
    let settle = || std::thread::sleep(Duration::from_millis(2500));
    let open = || {
        let mut s = std::net::TcpStream::connect(&console.addr).unwrap();
        let ask = format!("GET /events HTTP/1.1\r\nHost: {}\r\nCookie: {cookie}\r\n\r\n", console.addr);
        s.write_all(ask.as_bytes()).unwrap();
        let mut first = [0u8; 512];
        let _ = s.read(&mut first).unwrap();
        s
    };
    // One stream first, so that what any stream makes the console read (the pulse: over a
    // directory, the snapshot of every root) is in the baseline; then 16 more.
    let warm = open();
    settle();
    let (rss, threads) = (proc_status(console, "VmRSS"), proc_status(console, "Threads"));
    let streams: Vec<std::net::TcpStream> = (0..STREAMS).map(|_| open()).collect();
    settle();
    let (rss_open, threads_open) = (proc_status(console, "VmRSS"), proc_status(console, "Threads"));
    println!(
        "  /events: {STREAMS} open streams: resident {rss} -> {rss_open} KiB ({:+.1} KiB a stream), threads {threads} -> {threads_open}",
        (rss_open as f64 - rss as f64) / STREAMS as f64
    );
    drop((warm, streams));
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(store: &str, results: Vec<(&'static str, Vec<Duration>)>) {
    println!("== {store}: {SESSIONS} sessions ({PAUSED} paused), {CLIENTS} clients");
    for (name, mut times) in results {
        times.sort();
        println!(
            "  {name:<32} p50 {:>8.2} ms   p99 {:>8.2} ms   ({} requests)",
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            times.len()
        );
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 25 };
    let dir = tempfile::tempdir().unwrap();
    file_sessions(dir.path());
    let console = serve(&["--sessions".as_ref(), dir.path().as_os_str()], &[]);
    console.get(&console.sign_in("warm"), "/sessions");
    report("files", measure(&console, rounds));
    drop(console);
    // What a stream costs, measured on a console of a few roots: over 10,000 the pulse's
    // snapshot is re-read every 2 s while a stream is open, and its allocations would be counted.
    let few = tempfile::tempdir().unwrap();
    for name in ["s00000", "s09999"] {
        let copied = Command::new("cp").arg("-a").arg(dir.path().join(name)).arg(few.path()).status().unwrap();
        assert!(copied.success());
    }
    let console = serve(&["--sessions".as_ref(), few.path().as_os_str()], &[]);
    println!("== files, 2 sessions");
    events_cost(&console);
    drop(console);
    let Some(server) = common::pg::PgServer::start() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs PostgreSQL");
        println!("== PostgreSQL: SKIPPED (no server installed)");
        return;
    };
    let url = server.database("console");
    database_sessions(&server, "console", &url, dir.path());
    if let Ok(hold) = std::env::var("PLANLOCK_BENCH_HOLD") {
        // To look at the database by hand (`psql "$URL"`): its URL, and a wait.
        println!("holding the database for {hold} s: {url}");
        std::thread::sleep(Duration::from_secs(hold.parse().unwrap_or(600)));
    }
    let console = serve(&["--database".as_ref(), url.as_ref()], &[]);
    console.get(&console.sign_in("warm"), "/sessions");
    report("PostgreSQL", measure(&console, rounds));
    events_cost(&console);
}
