//! A PostgreSQL database written by planlock 0.1 (schema version 2; `tests/fixtures/v0.1/pg/`)
//! stays readable: the current code migrates nothing it cannot, the plan hash recomputes
//! equal, the paused session resumes, and the stores answer the searches 0.1 answered.

use super::*;

fn v0_1() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0.1")
}

fn expected(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(v0_1().join("expected").join(name)).unwrap()).unwrap()
}

/// The CLI on session `key` of `url`: its exit code and JSON report.
fn cli(url: &str, key: &str, args: &[&str], plan: Option<&str>) -> (Option<i32>, Value) {
    let mut cmd = crate::common::cli::planlock();
    cmd.args(args).args(["--format", "json", "--session", key]).env("PLANLOCK_DATABASE_URL", url);
    if let Some(plan) = plan {
        cmd.arg("--policy-root").arg(v0_1().join("policy")).arg(v0_1().join(plan));
    }
    let out = cmd.output().unwrap();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), json)
}

pub(super) fn a_database_written_by_0_1_reads_the_same_and_resumes(server: &PgServer) {
    let url = server.database("upgrade");
    server.sql("upgrade", &std::fs::read_to_string(v0_1().join("pg/dump.sql")).unwrap());

    // The paused session: its records read as 0.1 wrote them, the hash is the same.
    let (code, status) = cli(&url, "fixture", &["status"], None);
    let then = expected("pg.status.json");
    assert_eq!(code, Some(0), "{status}");
    assert_eq!(status["session"], then["session"]);
    assert_eq!(status["pin"], then["pin"]);
    for (name, value) in then["intervention"].as_object().unwrap() {
        assert_eq!(&status["intervention"][name], value, "intervention.{name}");
    }
    let hash = std::fs::read_to_string(v0_1().join("expected/memory_plan.hash")).unwrap();
    assert_eq!(status["session"]["lastExecutionPlanHash"], hash.trim());

    // The completed session's stores answer the same.
    let (_, search) = cli(&url, "fixture-full", &["memory", "search", "API key rotation"], None);
    assert_eq!(search, expected("pg-full.search.json"));
    let (_, decisions) = cli(&url, "fixture-full", &["decisions", "--domain", "security"], None);
    assert_eq!(decisions, expected("pg-full.decisions.json"));

    // The paused cycle resumes and completes; the completed session takes its next cycle.
    let resume = ["resume", "--approve", "demo-review", "--step", "remember", "--reason", "checked after the upgrade"];
    let (code, report) = cli(&url, "fixture", &resume, Some("memory_plan.json"));
    assert_eq!((code, report["cycle"].as_u64()), (Some(0), Some(2)), "{report}");
    let (code, report) = cli(&url, "fixture-full", &["run"], Some("semantic_plan.json"));
    assert_eq!((code, report["cycle"].as_u64()), (Some(0), Some(3)), "{report}");
    assert_eq!(memory_rows(&url, "fixture-full"), 3);
}
