//! A fleet of worker processes under load (issue 20), planlock beside LangGraph in one run.
//!
//! For each configuration (backend, model latency, S sessions, W worker processes):
//! - a throw-away PostgreSQL server (fsync on, as the tests start it) or files + SQLite roots;
//! - a local OpenAI-compatible mock model (wiremock, in this process) answering after the
//!   latency; the real `OpenAiModel` calls it over HTTP (LLMCall and SummarizeMemory);
//! - W copies of this binary as workers: each claims its share of the S sessions from a queue
//!   table in one transaction (files: by index), boots a runtime per session and keeps it, then
//!   drives all of them at once for the window, each session cycle after cycle.
//!
//! Printed per configuration, one line per figure: cycles/s, planlock's overhead per cycle (cycle
//! wall time minus the model's latency × its two calls) p50/p99, CPU seconds per cycle (workers,
//! PostgreSQL's processes and the model server), peak RSS per worker and per in-flight session
//! (growth over the worker's RSS before it booted its sessions), PostgreSQL commits per cycle
//! (`pg_stat_database.xact_commit` over the window) and of those the ones that wrote (transaction
//! ids assigned over the window: the commits that wait for a WAL flush), the WAL bytes written.
//! The floor: bare compare-and-set session saves/s with W clients, measured right before and
//! right after each window it is compared with (PostgreSQL, latency 0), so that the machine's
//! load moves both alike; such a configuration runs `FLEET_ROUNDS` alternating windows (3; 1 in
//! a quick run) and the spread of its ratio to the floor over them is printed. The peers
//! (`FLEET_PEER=langgraph|dbos|all`; the full run: all): `benches/peers/dbos_fleet.py`, the
//! same 12 steps as a DBOS workflow (each step checkpointed in DBOS's system database on the same
//! server, the application's rows through psycopg), sessions as asyncio tasks in W processes; and
//! `benches/peers/langgraph_fleet.py`, the same
//! 12-step work as a LangGraph graph with `langgraph-checkpoint-postgres` and LangGraph's
//! PostgreSQL store on the same server, the same mock model, S sessions as threads driven by
//! asyncio in W processes, in a virtual environment this bench creates and reuses.
//!
//! Run: `cargo bench --bench fleet --all-features` (about 17 minutes; `target/fleet/` gets
//! `results.json` and `fleet.svg`). Smoke (one configuration, no peer; what `.ci/run` does):
//! `cargo test --all-features --bench fleet -- --quick`. One configuration:
//! `FLEET_CONFIG=postgres:500:1000:2 cargo bench --bench fleet --all-features -- --quick`
//! (backend:latency ms:S:W; with `FLEET_PEER=dbos|langgraph|all`, the peers too; with `FLEET_STATEMENTS=1`, where
//! PostgreSQL's time went, statement by statement, from `pg_stat_statements`; with
//! `FLEET_WRAP=heaptrack` (or any command), each worker runs under that command).
//!
//! Telemetry's cost (issue 34), with `FLEET_OTEL=1`: PostgreSQL, latency 0 and 500 ms, S = 64,
//! W = 2, the workers' CPU per cycle with OTLP export on (spans and metrics, to a local collector
//! that drops them: `fleet/collector.rs`) against off, 3 rounds of each, interleaved. The smoke
//! run does one round of its own configuration.
//!
//! Tenants' and token budgets' cost (issue 45), with `FLEET_TENANTS=1` or `FLEET_BUDGETS=1`: see
//! `fleet/switches.rs`; `FLEET_SWITCHES_ONLY=1` runs only those rounds.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

#[path = "fleet/collector.rs"]
mod collector;
#[path = "../tests/common/mod.rs"]
mod common;
#[path = "fleet/peer.rs"]
mod peer;
#[path = "fleet/plot.rs"]
mod plot;
#[path = "fleet/proc.rs"]
mod proc;
#[path = "fleet/switches.rs"]
mod switches;
#[path = "fleet/worker.rs"]
mod worker;

/// When the bench started, for its progress lines.
static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// What the workers store their sessions in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    Files,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Postgres => "postgres",
            Backend::Files => "files",
        }
    }
}

/// One configuration.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    pub backend: Backend,
    pub latency_ms: u64,
    pub sessions: usize,
    pub workers: usize,
}

/// What one system did in one configuration.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    /// Cycles completed within the window: the rate.
    pub cycles: u64,
    /// Cycles started within the window, all completed (the workers let them finish): what
    /// CPU time and commits are divided by.
    pub all_cycles: u64,
    pub window_s: f64,
    pub overhead_p50_ms: f64,
    pub overhead_p99_ms: f64,
    pub cpu_s: f64,
    pub cpu_parts: Vec<(&'static str, f64)>,
    pub peak_rss_kib: u64,
    pub per_session_kib: f64,
    pub commits: Option<u64>,
    /// Transactions that wrote (transaction ids assigned) over the window: the commits that
    /// wait for a WAL flush.
    pub writes: Option<u64>,
    /// Round trips to PostgreSQL over the window, as the workers' pools counted them (a
    /// pipelined batch of statements is one); none on files, or for the peer.
    pub round_trips: Option<u64>,
    /// The write-ahead log PostgreSQL wrote over the window, in bytes (every process's: the
    /// window's work is the only work).
    pub wal_bytes: Option<u64>,
    /// The statements PostgreSQL ran over the window, every database's, as `pg_stat_statements`
    /// counts them (`FLEET_STATEMENTS=1`): for a client that waits for each answer (the peers'
    /// psycopg, but for LangGraph's pipelined writes), its round trips.
    pub statements: Option<u64>,
    pub errors: u64,
}

impl Figures {
    fn per_second(&self) -> f64 {
        self.cycles as f64 / self.window_s
    }
}

/// The configurations of a full run: every latency × S × W on PostgreSQL and on files, and
/// S = 256 too at 500 ms with 2 workers, for the plot.
/// How many alternating windows a configuration with a floor gets (`FLEET_ROUNDS`; 3, or 1 in
/// a quick run): the spread over them is printed.
fn floor_rounds(quick: bool) -> usize {
    std::env::var("FLEET_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(if quick { 1 } else { 3 })
}

fn configs(quick: bool) -> Vec<Config> {
    // `FLEET_CONFIG=postgres:500:1000:2` (backend:latency:S:W) runs that one alone.
    if let Ok(one) = std::env::var("FLEET_CONFIG") {
        let parts: Vec<&str> = one.split(':').collect();
        let n = |i: usize| parts.get(i).and_then(|p| p.parse().ok()).expect("FLEET_CONFIG=backend:latency:S:W");
        let backend = if parts[0] == "files" { Backend::Files } else { Backend::Postgres };
        return vec![Config { backend, latency_ms: n(1), sessions: n(2) as usize, workers: n(3) as usize }];
    }
    if quick {
        return vec![Config { backend: Backend::Postgres, latency_ms: 500, sessions: 64, workers: 2 }];
    }
    let mut all = Vec::new();
    for latency_ms in [0, 500] {
        for sessions in [64, 256, 1000] {
            for workers in [1, 2, 4] {
                if sessions == 256 && (latency_ms == 0 || workers != 2) {
                    continue;
                }
                for backend in [Backend::Postgres, Backend::Files] {
                    all.push(Config { backend, latency_ms, sessions, workers });
                }
            }
        }
    }
    all
}

/// The `p`th percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// The workers of one configuration, started; each says READY once it has booted its sessions.
struct Started {
    children: Vec<(Child, ChildStdin, std::sync::mpsc::Receiver<String>)>,
}

impl Started {
    fn spawn(commands: Vec<Command>) -> Started {
        let children = commands
            .into_iter()
            .map(|mut cmd| {
                let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("a worker process");
                let stdin = child.stdin.take().unwrap();
                let stdout = child.stdout.take().unwrap();
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                });
                (child, stdin, rx)
            })
            .collect();
        Started { children }
    }

    /// Waits for every READY; `false` if a worker ended first.
    fn ready(&mut self) -> bool {
        self.children.iter().all(|(_, _, rx)| {
            loop {
                match rx.recv_timeout(Duration::from_secs(600)) {
                    Ok(line) if line == "READY" => break true,
                    Ok(line) => eprintln!("  worker: {line}"),
                    Err(_) => break false,
                }
            }
        })
    }

    /// Stops every worker (after a failed boot: none may run into the next configuration).
    fn kill(self) {
        for (mut child, _, _) in self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts every worker's window.
    fn go(&mut self) {
        for (_, stdin, _) in &mut self.children {
            let _ = writeln!(stdin, "GO");
            let _ = stdin.flush();
        }
    }

    /// Each worker's RESULT, and its process's CPU seconds for the window as it measured them.
    fn results(self) -> Vec<Value> {
        let mut out = Vec::new();
        for (mut child, _, rx) in self.children {
            while let Ok(line) = rx.recv_timeout(Duration::from_secs(300)) {
                if let Some(json) = line.strip_prefix("RESULT ") {
                    out.push(serde_json::from_str(json).expect("a worker's RESULT line"));
                    break;
                }
                eprintln!("  worker: {line}");
            }
            let _ = child.wait();
        }
        out
    }
}

/// Runs one configuration with the workers `commands` build, and reads the figures.
fn measure(
    config: Config,
    window: Duration,
    pg: Option<&proc::PgWatch>,
    model: &proc::ModelServer,
    commands: Vec<Command>,
) -> Option<Figures> {
    let mut started = Started::spawn(commands);
    let progress = |what: &str| eprintln!("  [{:>5.1} s] {what}", START.elapsed().as_secs_f64());
    progress("workers booting their sessions");
    if !started.ready() {
        eprintln!("  a worker failed to boot its sessions");
        started.kill();
        return None;
    }
    // Idle backends report their statistics up to 10 s late: wait for the boot's to land. The
    // workers' backends end with them, and report then.
    progress("booted; waiting for PostgreSQL's statistics to settle");
    let commits_before = pg.map(|pg| pg.settled_commits(Duration::from_millis(10_500), Duration::from_secs(1)));
    let xid_before = pg.map(proc::PgWatch::next_xid);
    let wal_before = pg.map(proc::PgWatch::wal_bytes);
    progress("window");
    if let Some(pg) = pg {
        pg.reset_statements();
    }
    let (pg_cpu_before, model_cpu_before) = (pg.map(proc::PgWatch::cpu_s), model.cpu_s());
    started.go();
    let results = started.results();
    progress("results in");
    let commits = pg
        .zip(commits_before)
        .map(|(pg, before)| pg.settled_commits(Duration::ZERO, Duration::from_secs(2)).saturating_sub(before));
    // After the commits have settled: the workers' backends have ended by then and the
    // postmaster has counted their CPU time (a backend that has ended but is not yet reaped is
    // counted nowhere).
    let (pg_cpu_after, model_cpu_after) = (pg.map(proc::PgWatch::cpu_s), model.cpu_s());
    let writes = pg.zip(xid_before).map(|(pg, before)| pg.next_xid().saturating_sub(before));
    let wal_bytes = pg.zip(wal_before).map(|(pg, before)| pg.wal_bytes().saturating_sub(before));
    let statements = pg.and_then(proc::PgWatch::statement_calls);
    if let Some(pg) = pg {
        pg.print_statements(results.iter().map(|r| r["all_cycles"].as_u64().unwrap_or(0)).sum());
    }
    let model_calls = 2.0 * config.latency_ms as f64;
    let mut overheads: Vec<f64> = results
        .iter()
        .flat_map(|r| r["walls_ms"].as_array().cloned().unwrap_or_default())
        .filter_map(|w| w.as_f64())
        .map(|wall| wall - model_calls)
        .collect();
    overheads.sort_by(f64::total_cmp);
    let worker_cpu: f64 = results.iter().map(|r| r["cpu_s"].as_f64().unwrap_or(0.0)).sum();
    let pg_cpu = pg_cpu_after.zip(pg_cpu_before).map_or(0.0, |(a, b)| a - b);
    let model_cpu = model_cpu_after - model_cpu_before;
    let sessions: f64 = results.iter().map(|r| r["sessions"].as_f64().unwrap_or(0.0)).sum();
    let growth: f64 = results
        .iter()
        .map(|r| (r["peak_kib"].as_f64().unwrap_or(0.0) - r["base_kib"].as_f64().unwrap_or(0.0)).max(0.0))
        .sum();
    Some(Figures {
        cycles: results.iter().map(|r| r["cycles"].as_u64().unwrap_or(0)).sum(),
        all_cycles: results.iter().map(|r| r["all_cycles"].as_u64().unwrap_or(0)).sum(),
        window_s: window.as_secs_f64(),
        overhead_p50_ms: percentile(&overheads, 0.50),
        overhead_p99_ms: percentile(&overheads, 0.99),
        cpu_s: worker_cpu + pg_cpu + model_cpu,
        cpu_parts: vec![("workers", worker_cpu), ("PostgreSQL", pg_cpu), ("model server", model_cpu)],
        peak_rss_kib: results.iter().map(|r| r["peak_kib"].as_u64().unwrap_or(0)).max().unwrap_or(0),
        per_session_kib: if sessions > 0.0 { growth / sessions } else { f64::NAN },
        commits,
        writes,
        round_trips: results.iter().map(|r| r["round_trips"].as_u64()).sum(),
        wal_bytes,
        statements,
        errors: results.iter().map(|r| r["errors"].as_u64().unwrap_or(0)).sum(),
    })
}

/// The compare-and-set floor measured right before and right after a window (same W), so that
/// a machine's load moves the floor and the configuration alike.
#[derive(Debug, Clone, Copy)]
pub struct Floors {
    pub before: f64,
    pub after: f64,
}

impl Floors {
    fn mean(self) -> f64 {
        (self.before + self.after) / 2.0
    }
}

fn print(system: &str, config: Config, f: &Figures, floor: Option<Floors>) {
    let backend = match config.backend {
        Backend::Postgres => "PostgreSQL",
        Backend::Files => "files + SQLite",
    };
    println!(
        "== {system}, {backend}, model latency {} ms, S = {}, W = {} ==",
        config.latency_ms, config.sessions, config.workers
    );
    let rate = f.per_second();
    let versus = if config.latency_ms > 0 {
        let ideal = config.sessions as f64 / (2.0 * config.latency_ms as f64 / 1000.0);
        format!("({:.2}x the ideal S / (2 calls x latency) = {ideal:.0})", rate / ideal)
    } else if let Some(floor) = floor {
        format!(
            "({:.3}x the bare compare-and-set saves/s floor, {:.0} before and {:.0} after, same W)",
            rate / floor.mean(),
            floor.before,
            floor.after
        )
    } else {
        String::new()
    };
    let cycles = f.all_cycles.max(1) as f64;
    println!("  cycles/s                          {rate:>10.1}  {versus}");
    println!("  overhead per cycle p50 / p99      {:>10.2} / {:.2} ms", f.overhead_p50_ms, f.overhead_p99_ms);
    let parts: Vec<String> = f.cpu_parts.iter().map(|(n, s)| format!("{n} {:.3}", s / cycles * 1e3)).collect();
    println!("  CPU seconds per cycle             {:>10.3} ms  ({})", f.cpu_s / cycles * 1e3, parts.join(", "));
    println!("  peak RSS per worker               {:>10.1} MiB", f.peak_rss_kib as f64 / 1024.0);
    println!("  peak RSS per in-flight session    {:>10.1} KiB", f.per_session_kib);
    match f.commits {
        Some(c) => println!("  PostgreSQL commits per cycle      {:>10.2}", c as f64 / cycles),
        None => println!("  PostgreSQL commits per cycle             n/a"),
    }
    if let Some(w) = f.writes {
        println!("  of which wrote (WAL flush)        {:>10.2}", w as f64 / cycles);
    }
    if let Some(r) = f.round_trips {
        println!("  PostgreSQL round trips per cycle  {:>10.2}", r as f64 / cycles);
    }
    if let Some(w) = f.wal_bytes {
        println!("  PostgreSQL WAL bytes per cycle    {:>10.0}", w as f64 / cycles);
    }
    if let Some(n) = f.statements {
        println!("  PostgreSQL statements per cycle   {:>10.2}  (pg_stat_statements)", n as f64 / cycles);
    }
    // The persistence budget per step of the demo plan's 12: what a step costs the database.
    let per_step = |n: Option<u64>| n.map_or("n/a".to_owned(), |n| format!("{:.3}", n as f64 / cycles / STEPS));
    println!(
        "  per step (of {STEPS}): round trips {}, statements {}, commits {}, WAL bytes {}",
        per_step(f.round_trips),
        per_step(f.statements),
        per_step(f.commits),
        f.wal_bytes.map_or("n/a".to_owned(), |w| format!("{:.0}", w as f64 / cycles / STEPS)),
    );
    if f.errors > 0 {
        println!("  failed cycles                     {:>10}", f.errors);
    }
}

/// The steps of a cycle (the demo plan's, and the peers' graph and workflow).
const STEPS: f64 = 12.0;

fn record(system: &str, config: Config, f: &Figures) -> Value {
    json!({
        "system": system, "backend": config.backend.name(), "latencyMs": config.latency_ms,
        "sessions": config.sessions, "workers": config.workers, "cyclesPerSecond": f.per_second(),
        "overheadP50Ms": f.overhead_p50_ms, "overheadP99Ms": f.overhead_p99_ms,
        "cpuMsPerCycle": f.cpu_s / f.all_cycles.max(1) as f64 * 1e3, "peakRssKib": f.peak_rss_kib,
        "perSessionKib": f.per_session_kib,
        "commitsPerCycle": f.commits.map(|c| c as f64 / f.all_cycles.max(1) as f64),
        "writesPerCycle": f.writes.map(|w| w as f64 / f.all_cycles.max(1) as f64), "errors": f.errors,
        "roundTripsPerCycle": f.round_trips.map(|r| r as f64 / f.all_cycles.max(1) as f64),
        "walBytesPerCycle": f.wal_bytes.map(|w| w as f64 / f.all_cycles.max(1) as f64),
        "statementsPerCycle": f.statements.map(|n| n as f64 / f.all_cycles.max(1) as f64),
    })
}

fn main() {
    if let Ok(role) = std::env::var("PLANLOCK_FLEET_WORKER") {
        return worker::main(&role);
    }
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    if !quick && !args.iter().any(|a| a == "--bench") {
        return;
    }
    // `FLEET_WINDOW_S` sets the window (seconds) of any run.
    let window = match std::env::var("FLEET_WINDOW_S").ok().and_then(|s| s.parse().ok()) {
        Some(seconds) => Duration::from_secs(seconds),
        None if quick => Duration::from_secs(3),
        None => Duration::from_secs(10),
    };
    if std::env::var_os("FLEET_STATEMENTS").is_some() {
        // SAFETY: no other thread runs yet.
        unsafe {
            std::env::set_var(
                "PLANLOCK_PG_OPTIONS",
                "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on",
            )
        };
    }
    let Some(server) = common::pg::PgServer::start_with(true) else {
        assert!(std::env::var("CI").is_err(), "no PostgreSQL server; .ci/run installs it");
        eprintln!("no PostgreSQL server is installed (Debian's `postgresql`); nothing to measure");
        return;
    };
    let url = server.database("fleet");
    let pg = proc::PgWatch::new(&server, &url);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy");
    common::policy(&policy, "friendly");
    let plan = worker::plan_file(dir.path(), &policy);
    // The smoke run leaves the peers out unless FLEET_PEER is set (an install takes a minute).
    let chosen = std::env::var("FLEET_PEER").ok();
    let kinds = if quick && chosen.is_none() { Vec::new() } else { peer::Kind::chosen(chosen.as_deref()) };
    let peers: Vec<peer::Peer> =
        kinds.into_iter().filter_map(|kind| peer::Peer::install(kind, &url, &policy)).collect();
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fleet");
    std::fs::create_dir_all(&out).unwrap();
    let mut records = Vec::new();
    let mut models: Vec<(u64, proc::ModelServer)> = Vec::new();
    let began = Instant::now();
    println!("fleet: {} configurations, {} s windows, {} cores", configs(quick).len(), window.as_secs(), cores());
    // `FLEET_SWITCHES_ONLY=1`: only the tenants' and budgets' rounds (`fleet/switches.rs`).
    let only_switches = std::env::var_os("FLEET_SWITCHES_ONLY").is_some();
    let configs = if only_switches { Vec::new() } else { configs(quick) };
    for (n, config) in configs.into_iter().enumerate() {
        if !models.iter().any(|(l, _)| *l == config.latency_ms) {
            models.push((config.latency_ms, proc::ModelServer::start(config.latency_ms)));
        }
        let model = &models.iter().find(|(l, _)| *l == config.latency_ms).unwrap().1;
        // The floor is measured around each window it is compared with (latency 0, PostgreSQL).
        let floored = config.backend == Backend::Postgres && config.latency_ms == 0;
        let floor_now = || proc::cas_floor(&url, config.workers, window);
        let mut last_floor = floored.then(floor_now);
        let tag = format!("c{n}");
        let place = match config.backend {
            Backend::Postgres => {
                worker::fill_queue(&url, &tag, config.sessions);
                url.clone()
            }
            Backend::Files => dir.path().join(&tag).display().to_string(),
        };
        let watch = (config.backend == Backend::Postgres).then_some(&pg);
        // Alternating windows where there is a floor: configuration, floor, configuration …
        let rounds = if floored { floor_rounds(quick) } else { 1 };
        let mut ratios = Vec::new();
        for round in 0..rounds {
            // Each round its own sessions: the last round's workers left their leases held.
            let tag = if round == 0 { tag.clone() } else { format!("{tag}r{round}") };
            if round > 0 {
                worker::fill_queue(&url, &tag, config.sessions);
            }
            let commands = (0..config.workers)
                .map(|w| worker::command(config, w, &tag, &place, &model.url, &policy, &plan, window))
                .collect();
            let Some(f) = measure(config, window, watch, model, commands) else { continue };
            let floor = last_floor.map(|before| Floors { before, after: floor_now() });
            print("planlock", config, &f, floor);
            if let Some(floor) = floor {
                ratios.push(f.per_second() / floor.mean());
                records.push(json!({
                    "system": "floor: bare compare-and-set saves", "workers": config.workers,
                    "perSecondBefore": floor.before, "perSecondAfter": floor.after,
                }));
                last_floor = Some(floor.after);
            }
            records.push(record("planlock", config, &f));
        }
        if ratios.len() > 1 {
            ratios.sort_by(f64::total_cmp);
            println!(
                "  against the floor, over {} rounds: {:.3}x median, {:.3}x to {:.3}x",
                ratios.len(),
                ratios[ratios.len() / 2],
                ratios[0],
                ratios[ratios.len() - 1]
            );
        }
        for peer in peers.iter().filter(|_| config.backend == Backend::Postgres) {
            let commands =
                (0..config.workers).map(|w| peer.command(config, w, &tag, &url, &model.url, window)).collect();
            if let Some(f) = measure(config, window, Some(&pg), model, commands) {
                let floor = last_floor.map(|before| Floors { before, after: floor_now() });
                print(peer.kind.name(), config, &f, floor);
                records.push(record(peer.kind.name(), config, &f));
            }
        }
        if config.backend == Backend::Files {
            let _ = std::fs::remove_dir_all(dir.path().join(&tag));
        }
    }
    if !only_switches {
        telemetry_overhead(quick, window, &url, &pg, &mut models, &policy, &plan, &mut records);
    }
    if !models.iter().any(|(l, _)| *l == 0) {
        models.push((0, proc::ModelServer::start(0)));
    }
    let model = &models.iter().find(|(l, _)| *l == 0).unwrap().1;
    switches::overhead(quick, window, &url, &pg, model, &policy, &plan, &mut records);
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(&records).unwrap()).unwrap();
    if !quick {
        std::fs::write(out.join("fleet.svg"), plot::svg(&records)).unwrap();
    }
    println!("fleet: done in {:.0} s; {}", began.elapsed().as_secs_f64(), out.display());
}

/// Export on against off, rounds interleaved (see the module's doc): the workers' CPU per cycle.
#[allow(clippy::too_many_arguments)]
fn telemetry_overhead(
    quick: bool,
    window: Duration,
    url: &str,
    pg: &proc::PgWatch,
    models: &mut Vec<(u64, proc::ModelServer)>,
    policy: &Path,
    plan: &Path,
    records: &mut Vec<Value>,
) {
    let (configs, rounds) = match (quick, std::env::var_os("FLEET_OTEL").is_some()) {
        (_, true) => (vec![0, 500], 3),
        (true, false) => (vec![configs(true)[0].latency_ms], 1),
        (false, false) => return,
    };
    let collector = collector::Collector::start();
    for latency_ms in configs {
        let config = Config { backend: Backend::Postgres, latency_ms, sessions: 64, workers: 2 };
        if !models.iter().any(|(l, _)| *l == latency_ms) {
            models.push((latency_ms, proc::ModelServer::start(latency_ms)));
        }
        let model = &models.iter().find(|(l, _)| *l == latency_ms).unwrap().1;
        let mut cpu = [Vec::new(), Vec::new()];
        for round in 0..rounds {
            for export in [false, true] {
                let tag = format!("otel-{latency_ms}-{round}-{export}");
                worker::fill_queue(url, &tag, config.sessions);
                let commands = (0..config.workers)
                    .map(|w| {
                        let mut cmd = worker::command(config, w, &tag, url, &model.url, policy, plan, window);
                        match export {
                            true => cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url),
                            false => cmd.env_remove("OTEL_EXPORTER_OTLP_ENDPOINT"),
                        };
                        cmd.env("OTEL_SERVICE_NAME", "planlock-fleet");
                        cmd
                    })
                    .collect();
                let Some(f) = measure(config, window, Some(pg), model, commands) else { continue };
                let workers = f.cpu_parts.iter().find(|(n, _)| *n == "workers").map_or(0.0, |p| p.1);
                cpu[export as usize].push(workers / f.all_cycles.max(1) as f64 * 1e3);
                let system = if export { "planlock, OTLP export on" } else { "planlock, export off" };
                print(system, config, &f, None);
                records.push(record(system, config, &f));
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        let (off, on) = (mean(&cpu[0]), mean(&cpu[1]));
        let (requests, bytes) = collector.received();
        println!(
            "== telemetry, latency {latency_ms} ms: workers' CPU per cycle {on:.3} ms with export on, {off:.3} ms off: {:.3}x ({rounds} rounds each, interleaved; the collector has taken {requests} requests, {} KiB)",
            on / off,
            bytes / 1024
        );
        records.push(json!({ "system": "telemetry overhead", "latencyMs": latency_ms, "cpuMsOn": on, "cpuMsOff": off, "ratio": on / off }));
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Where the worker finds what the parent prepared.
pub fn bench_binary() -> PathBuf {
    std::env::current_exe().unwrap()
}
