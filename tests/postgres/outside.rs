//! From outside: bad connections, the CLI on a database, the workers example.

use super::*;
use planlock::block_on;

pub(super) fn bad_connections_fail_clearly_and_quickly_without_the_password(server: &PgServer) {
    server.database("auth");
    server.sql("auth", "CREATE ROLE tester LOGIN PASSWORD 'right-pass'; ALTER SCHEMA public OWNER TO tester");
    let tcp = |password: &str| format!("postgres://tester:{password}@127.0.0.1:{}/auth?connect_timeout=3", server.port);
    assert!(PgDatabase::connect(&tcp("right-pass")).is_ok());
    let err = PgDatabase::connect(&tcp("wrong-pass-4711")).unwrap_err();
    assert_eq!(err.code(), "pg-connect");
    let text = format!("{err} {err:?}");
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(text.contains("127.0.0.1") && text.contains("tester"), "it names host and user: {text}");
    assert!(!text.contains("wrong-pass-4711"), "{text}");

    let err = PgDatabase::connect("postgres://tester:secret@127.0.0.1:notaport/x").unwrap_err();
    assert_eq!(err.code(), "pg-url");
    assert!(!err.to_string().contains("secret"), "{err}");

    // A server that accepts the connection and never answers: the connect timeout ends it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let started = Instant::now();
    let err =
        PgDatabase::connect(&format!("postgres://tester:secret@127.0.0.1:{port}/x?connect_timeout=1")).unwrap_err();
    assert_eq!(err.code(), "pg-connect");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // The CLI: exit 3 for a refused login, 2 for a bad URL or key; never the password.
    let fx = fixture();
    let cli = |database: &str, key: &str| {
        let out = crate::common::cli::planlock()
            .args(["run", "--format", "json", "--database", database, "--session", key, "--policy-root"])
            .arg(&fx.policy)
            .arg(&fx.plan_file)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
    };
    let (code, said) = cli(&tcp("wrong-pass-4711"), "k");
    assert_eq!(code, Some(3), "{said}");
    assert!(said.contains("password authentication failed") && !said.contains("wrong-pass-4711"), "{said}");
    assert_eq!(cli("postgres://u:secret@host:port/x", "k").0, Some(2));
    assert_eq!(cli(&tcp("right-pass"), "").0, Some(2));
    assert_eq!(cli(&tcp("right-pass"), &"k".repeat(257)).0, Some(2));
}

pub(super) fn the_cli_runs_and_resumes_a_session_in_the_database(server: &PgServer) {
    let url = server.database("cli");
    let fx = fixture();
    let run = |extra: &[&str]| {
        let out = crate::common::cli::planlock()
            .args(["run", "--format", "json", "--session", "tenant-7/conv-42", "--policy-root"])
            .arg(&fx.policy)
            .args(extra)
            .arg(&fx.plan_file)
            .env("PLANLOCK_DATABASE_URL", &url)
            .output()
            .unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out.status.code(), json)
    };
    let (code, json) = run(&[]);
    assert_eq!((code, json["boot"].as_str(), json["cycle"].as_u64()), (Some(0), Some("cold"), Some(1)), "{json}");
    let (code, json) = run(&[]);
    assert_eq!((code, json["boot"].as_str(), json["cycle"].as_u64()), (Some(0), Some("resume"), Some(2)), "{json}");
    // A write that fails is FailFast, and the session stays at cycle 2.
    let (code, json) = run(&["--fail", "PersistMemory"]);
    assert_eq!((code, json["outcome"].as_str()), (Some(3), Some("FailFast")), "{json}");
    // `status` and `abandon` find the session by its key too.
    let status = crate::common::cli::planlock()
        .args(["status", "--format", "json", "--session", "tenant-7/conv-42", "--database", &url])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
    assert_eq!((status.status.code(), json["session"]["cycle"].as_u64()), (Some(0), Some(2)), "{json}");
    assert_eq!(json["intervention"], Value::Null);
    // Every finished cycle is in the history, the failed one too (its writes were rolled back).
    let status = crate::common::cli::planlock()
        .args(["status", "--format", "json", "--session", "tenant-7/conv-42", "--database", &url, "--history", "9"])
        .output()
        .unwrap();
    let json: Value = serde_json::from_slice(&status.stdout).unwrap_or(Value::Null);
    let ends: Vec<(u64, &str)> = json["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["cycle"].as_u64().unwrap(), e["end"].as_str().unwrap()))
        .collect();
    assert_eq!(ends, [(3, "failed"), (2, "completed"), (1, "completed")], "{json}");
    assert_eq!(json["history"][0]["failure"]["class"], "FailFast", "{json}");
    let abandon = crate::common::cli::planlock()
        .args(["abandon", "--session", "tenant-7/conv-42", "--database", &url])
        .output()
        .unwrap();
    assert_eq!(abandon.status.code(), Some(1), "nothing is paused");
    // The session's memories and decisions, read from the database as the Retrieve steps would.
    let planlock = |args: &[&str]| {
        let out = crate::common::cli::planlock().args(args).env("PLANLOCK_DATABASE_URL", &url).output().unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null))
    };
    let (code, json) =
        planlock(&["memory", "search", "--session", "tenant-7/conv-42", "--format", "json", "key rotation"]);
    assert_eq!((code, json["items"].as_array().map(Vec::len)), (Some(0), Some(2)), "{json}");
    let (code, json) =
        planlock(&["decisions", "--session", "tenant-7/conv-42", "--domain", "security", "--format", "json"]);
    assert_eq!((code, &json["decisions"][0]["id"]), (Some(0), &json!("d-1")), "{json}");
    assert!(String::from_utf8_lossy(&abandon.stderr).contains("session `tenant-7/conv-42`"));
    let db = PgDatabase::connect(&url).unwrap();
    let store = PgSessionStore::open(&db, "tenant-7/conv-42").unwrap();
    assert_eq!(block_on(store.records().load()).unwrap().unwrap().cycle, 2);
    assert_eq!(memory_rows(&url, "tenant-7/conv-42"), 2);
    assert_eq!(
        block_on(store.records().load_pin())
            .unwrap()
            .map(|p| serde_json::to_value(p).unwrap()["memory_provider_id"].clone()),
        Some(json!("postgres"))
    );
}

pub(super) fn the_workers_example_runs_its_queue_to_the_end(server: &PgServer) {
    let url = server.database("example");
    // `cargo test` builds the examples beside the test binaries.
    let deps = std::env::current_exe().unwrap();
    let example = deps.parent().and_then(|d| d.parent()).unwrap().join("examples/workers");
    assert!(
        example.exists(),
        "{} is not built: `cargo test` builds it; alone, `cargo build --example workers --features postgres`",
        example.display()
    );
    let out = Command::new(&example).args([url.as_str(), "3", "6", "4"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("3 workers ran 6 sessions x 4 cycles"), "{said}");
    assert!(said.contains("6 sessions stored, 24 memories; 0 worker(s) failed"), "{said}");
}

/// A cycle that pauses before each of its writes (the demo review gate) and is approved each
/// time keeps every write made before a pause: the record lists those steps as completed and
/// the resume does not run them again, so their writes must be durable with the record.
pub(super) fn a_cycle_paused_between_its_writes_keeps_the_writes_before_each_pause(server: &PgServer) {
    let url = server.database("pauses");
    let fx = fixture();
    let mut v: Value = serde_json::from_str(&fx.plan.to_json()).unwrap();
    v["validators"] = json!([planlock::demo::ReviewGate::signature()]);
    std::fs::write(&fx.plan_file, ValidPlan::from_value(&v).unwrap().to_json()).unwrap();
    let cli = |args: &[&str]| {
        let out = crate::common::cli::planlock()
            .args(args)
            .args(["--format", "json", "--session", "paused-writes", "--policy-root"])
            .arg(&fx.policy)
            .arg(&fx.plan_file)
            .env("PLANLOCK_DATABASE_URL", &url)
            .output()
            .unwrap();
        (out.status.code(), serde_json::from_slice::<Value>(&out.stdout).unwrap_or(Value::Null))
    };
    let (code, json) = cli(&["run"]);
    assert_eq!(code, Some(4), "{json}");
    for (step, last) in [("remember", false), ("decide", false), ("evidence", false), ("link", true)] {
        let (code, json) = cli(&["resume", "--approve", "demo-review", "--step", step, "--reason", "reviewed"]);
        assert_eq!(code, Some(if last { 0 } else { 4 }), "{step}: {json}");
    }
    // One memory, and the decision, the evidence and the link, each written once.
    assert_eq!(written_rows(&url, "paused-writes"), (1, 3));
}
