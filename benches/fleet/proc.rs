//! What the fleet bench watches from outside the workers: PostgreSQL's processes and commits,
//! the mock model server, and the bare compare-and-set floor.

use planlock::block_on;
use planlock::session::CycleGuard;
use std::time::{Duration, Instant};

use planlock::pg::PgDatabase;
use planlock::session::postgres::PgSessionStore;
use planlock::session::{EndOfCycle, SessionStore, SessionUpdate};
use serde_json::json;
use wiremock::matchers::{body_partial_json, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The server's processes and its database's commit counter.
pub struct PgWatch {
    postmaster: i32,
    url: String,
}

/// Clock ticks per second, as `/proc/*/stat` counts CPU time.
fn ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// `(ppid, utime + stime, cutime + cstime)` of a process, in ticks.
fn stat(pid: i32) -> Option<(i32, u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold spaces): state, ppid, …
    let fields: Vec<&str> = text[text.rfind(')')? + 2..].split(' ').collect();
    let n = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some((fields.get(1)?.parse().ok()?, n(11)? + n(12)?, n(13)? + n(14)?))
}

impl PgWatch {
    pub fn new(server: &super::common::pg::PgServer, url: &str) -> PgWatch {
        let pid = std::fs::read_to_string(server.dir().join("data/postmaster.pid")).unwrap();
        PgWatch { postmaster: pid.lines().next().unwrap().trim().parse().unwrap(), url: url.to_owned() }
    }

    /// CPU seconds of the postmaster, its live children, and its children that have ended.
    pub fn cpu_s(&self) -> f64 {
        let mut total = 0;
        if let Some((_, own, ended)) = stat(self.postmaster) {
            total += own + ended;
        }
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if let Some((ppid, own, _)) = stat(pid)
                && ppid == self.postmaster
            {
                total += own;
            }
        }
        total as f64 / ticks()
    }

    /// The counter now: of the bench's database (`all`: false), or of every database of the
    /// server (a peer may keep its checkpoints in a database of its own, as DBOS's system
    /// database). One simple query, one transaction.
    fn commits(&self, client: &mut postgres::Client, all: bool) -> u64 {
        let sql = match all {
            false => "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            true => "SELECT sum(xact_commit)::bigint FROM pg_stat_database WHERE datname IS NOT NULL",
        };
        first_number(&client.simple_query(sql).unwrap())
    }

    /// The next transaction id the server will assign, read without assigning one: the
    /// difference over a window is the number of transactions that wrote (a read-only one gets
    /// no id, and its commit waits for no WAL flush).
    pub fn next_xid(&self) -> u64 {
        self.number("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
    }

    /// The number one query answers, on a connection of its own.
    fn number(&self, sql: &str) -> u64 {
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        first_number(&client.simple_query(sql).unwrap())
    }

    /// Where the server's write-ahead log is now, in bytes from its start: the difference over
    /// a window is the WAL the window wrote.
    pub fn wal_bytes(&self) -> u64 {
        self.number("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint::text")
    }

    /// Whether the server counts statements (`FLEET_STATEMENTS=1`: `pg_stat_statements` loaded).
    fn counts_statements() -> bool {
        std::env::var_os("FLEET_STATEMENTS").is_some()
    }

    /// Starts counting statements afresh, when the server counts them.
    pub fn reset_statements(&self) {
        if PgWatch::counts_statements() {
            let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
            client
                .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()")
                .unwrap();
        }
    }

    /// The statements every database ran since [`reset_statements`](Self::reset_statements),
    /// this watcher's own left out, when the server counts them.
    pub fn statement_calls(&self) -> Option<u64> {
        if !PgWatch::counts_statements() {
            return None;
        }
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        let row = client
            .query_one(
                "SELECT COALESCE(sum(calls), 0)::bigint FROM pg_stat_statements
                 WHERE query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_current_%'",
                &[],
            )
            .unwrap();
        Some(row.get::<_, i64>(0).max(0) as u64)
    }

    /// Where PostgreSQL's time went, per cycle, when the server counts statements: the
    /// statements by total time, each with its calls per cycle and mean time.
    pub fn print_statements(&self, cycles: u64) {
        if !PgWatch::counts_statements() {
            return;
        }
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        let rows = client
            .query(
                "SELECT calls, total_exec_time + total_plan_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 110), plans
                 FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat%' ORDER BY 2 DESC LIMIT 25",
                &[],
            )
            .unwrap();
        println!("  statements (calls per cycle, mean ms, plans made per call, text):");
        for row in rows {
            let (calls, total, text, plans): (i64, f64, String, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
            let per_cycle = calls as f64 / cycles.max(1) as f64;
            let planned = plans as f64 / calls.max(1) as f64;
            println!("    {per_cycle:>6.2}  {:>7.3}  {planned:>4.2}  {text}", total / calls.max(1) as f64);
        }
    }

    /// The server's commits (every database's) once every backend of the bench's database has
    /// reported, less this call's own looks:
    /// waits at least `at_least`, then until the count has held still for `quiet` (but for the
    /// looks' own commits: one per look). A backend idle since before the call reports within
    /// 10 s of going idle; one that ended, at once.
    pub fn settled_commits(&self, at_least: Duration, quiet: Duration) -> u64 {
        let mut client = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        let began = Instant::now();
        // Settled by the bench's database (a peer's own may never be quiet: DBOS polls it), then
        // read over every database.
        let (mut last, mut looks, mut quiet_since) = (self.commits(&mut client, false), 1u64, Instant::now());
        while began.elapsed() < at_least || quiet_since.elapsed() < quiet {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.commits(&mut client, false);
            looks += 1;
            if now > last + 2 {
                quiet_since = Instant::now();
            }
            last = now;
        }
        let all = self.commits(&mut client, true);
        drop(client);
        all.saturating_sub(looks + 1)
    }
}

/// The OpenAI-compatible mock model: wiremock answering after `latency_ms`; a request with a
/// `response_format` gets the summary JSON, any other a text answer.
pub struct ModelServer {
    _rt: tokio::runtime::Runtime,
    _server: MockServer,
    pub url: String,
}

impl ModelServer {
    pub fn start(latency_ms: u64) -> ModelServer {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let server = rt.block_on(MockServer::builder().disable_request_recording().start());
        let delay = Duration::from_millis(latency_ms);
        let answer = |text: &str| {
            json!({
                "id": "c", "object": "chat.completion", "model": "fleet-mock",
                "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
                "usage": { "prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52 }
            })
        };
        let summary = json!({ "summary": "rotate the key every 90 days", "keywords": ["rotation", "keys"] });
        rt.block_on(async {
            Mock::given(method("POST"))
                .and(body_partial_json(json!({ "response_format": { "type": "json_object" } })))
                .respond_with(ResponseTemplate::new(200).set_body_json(answer(&summary.to_string())).set_delay(delay))
                .with_priority(1)
                .mount(&server)
                .await;
            Mock::given(method("POST"))
                .respond_with(
                    ResponseTemplate::new(200).set_body_json(answer("Rotate the key in the vault.")).set_delay(delay),
                )
                .with_priority(2)
                .mount(&server)
                .await;
        });
        let url = format!("{}/v1", server.uri());
        ModelServer { _rt: rt, _server: server, url }
    }

    /// CPU seconds of this process (the server's threads, and the bench's, which sleeps).
    pub fn cpu_s(&self) -> f64 {
        super::worker::usage().0
    }
}

/// The floor: bare compare-and-set session saves per second with `clients` threads, each on a
/// session of its own, for `window`.
pub fn cas_floor(url: &str, clients: usize, window: Duration) -> f64 {
    let db = PgDatabase::connect(url).unwrap();
    let stop = Instant::now() + window;
    let threads: Vec<_> = (0..clients)
        .map(|c| {
            let db = db.clone();
            std::thread::spawn(move || {
                let store = PgSessionStore::open(&db, &format!("floor/{clients}-{c}")).unwrap();
                let update = SessionUpdate {
                    session_id: uuid::Uuid::new_v4(),
                    memory_ref: Some("memory".into()),
                    repo_scan_version: None,
                    last_execution_plan_hash: planlock::Digest::of(b"plan"),
                    hash_parts: None,
                    cycle: 1,
                };
                let mut saves = 0u64;
                while Instant::now() < stop {
                    let _ = block_on(store.end_cycle(EndOfCycle::saving(update.clone()), CycleGuard::none())).unwrap();
                    saves += 1;
                }
                saves
            })
        })
        .collect();
    let saves: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    saves as f64 / window.as_secs_f64()
}

/// The first row's first column of a simple query's answer, as a number (0 if there is none).
fn first_number(messages: &[postgres::SimpleQueryMessage]) -> u64 {
    messages
        .iter()
        .find_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => row.get(0).and_then(|v| v.parse().ok()),
            _ => None,
        })
        .unwrap_or(0)
}
