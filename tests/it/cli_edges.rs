//! What a new user hits first: policy files that are not files, profiles that leave the policy
//! root, output that cannot be written, oversized input, `--fail` on every step type, JSON on
//! every outcome, a scan of a huge file, and `run` from any working directory.
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::{DEMO_PLAN, plan_with, policy};

fn planlock() -> Command {
    crate::common::cli::planlock()
}

/// Waits for `child` at most `limit`; a child still running then is killed and the test fails.
fn wait_bounded(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("planlock still running after {limit:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// `planlock validate --format json -`, with every stream piped.
fn validate_from_stdin() -> Child {
    let mut cmd = planlock();
    cmd.args(["validate", "--format", "json", "-"]).stdin(Stdio::piped());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn json_of(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "exactly one JSON object: {stdout}");
    serde_json::from_str(&stdout).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

struct Setup {
    policy: tempfile::TempDir,
    root: tempfile::TempDir,
    plan: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn setup() -> Setup {
    let (policy_dir, root, dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(policy_dir.path(), "friendly");
    let plan = dir.path().join("plan.json");
    std::fs::write(&plan, plan_with(|_| {}).to_json()).unwrap();
    Setup { policy: policy_dir, root, plan, _dir: dir }
}

fn run_cmd(s: &Setup, extra: &[&str]) -> Command {
    let mut cmd = planlock();
    cmd.args(["run", "--format", "json", "--root"]).arg(s.root.path()).arg("--policy-root").arg(s.policy.path());
    cmd.args(extra).arg(&s.plan);
    cmd
}

fn hash_cmd(s: &Setup) -> Command {
    let mut cmd = planlock();
    cmd.args(["hash", "--policy-root"]).arg(s.policy.path()).arg(&s.plan);
    cmd
}

/// Replaces `modes.yaml` with something that is not a regular file; `make` creates it.
fn with_special_modes(make: impl Fn(&Path)) -> Setup {
    let s = setup();
    let modes = s.policy.path().join("profiles/default/modes.yaml");
    std::fs::remove_file(&modes).unwrap();
    make(&modes);
    s
}

fn assert_refused(out: &Output, json: Option<&Value>, what: &str) {
    assert_eq!(out.status.code(), Some(3), "{}", stderr(out));
    let message = match json {
        Some(v) => v["error"].as_str().unwrap_or_default().to_owned(),
        None => stderr(out),
    };
    assert!(message.contains("modes.yaml") && message.contains(what), "{message}");
}

/// Makes a special file at a path.
type Maker<'a> = &'a dyn Fn(&Path);

#[test]
fn policy_files_that_are_not_regular_files_are_refused_at_once() {
    let fifo = |p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    let socket = |p: &Path| {
        // Bound and left behind: the file stays a socket after the listener is gone.
        drop(std::os::unix::net::UnixListener::bind(p).unwrap());
    };
    let device = |p: &Path| {
        // Creating a device node needs root; where it cannot be made, the case is a FIFO again.
        let made = Command::new("mknod").arg(p).args(["c", "1", "3"]).stderr(Stdio::null()).status();
        if !made.is_ok_and(|s| s.success()) {
            fifo(p);
        }
    };
    let cases: [(&str, Maker<'_>); 3] = [("a FIFO", &fifo), ("a socket", &socket), ("regular file", &device)];
    for (what, make) in cases {
        let s = with_special_modes(make);
        let out = wait_bounded(spawn(&mut run_cmd(&s, &[])), Duration::from_secs(20));
        assert_refused(&out, Some(&json_of(&out)), what);
        assert!(!s.root.path().join("ops").exists(), "nothing written: boot failed before any cycle");
        let out = wait_bounded(spawn(&mut hash_cmd(&s)), Duration::from_secs(20));
        assert_refused(&out, None, what);
    }
}

#[test]
fn an_oversized_policy_file_is_refused() {
    let s = setup();
    let modes = s.policy.path().join("profiles/default/modes.yaml");
    let f = std::fs::File::create(&modes).unwrap();
    f.set_len(64 << 20).unwrap();
    let out = wait_bounded(spawn(&mut hash_cmd(&s)), Duration::from_secs(20));
    assert_refused(&out, None, "larger than 1 MiB");
}

#[test]
fn profiles_stay_inside_the_policy_root_through_links() {
    let outside = tempfile::tempdir().unwrap();
    policy(outside.path(), "elsewhere");

    // The profile directory is a link out of the root.
    let s = setup();
    let dir = s.policy.path().join("profiles/default");
    std::fs::remove_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(outside.path().join("profiles/default"), &dir).unwrap();
    let out = wait_bounded(spawn(&mut run_cmd(&s, &[])), Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(3));
    let error = json_of(&out)["error"].as_str().unwrap().to_owned();
    let outside_real = outside.path().canonicalize().unwrap();
    let root_real = s.policy.path().canonicalize().unwrap();
    assert!(error.contains("outside the policy root"), "{error}");
    assert!(
        error.contains(&*outside_real.to_string_lossy()) && error.contains(&*root_real.to_string_lossy()),
        "{error}"
    );

    // One file is a link out of the root.
    let s = setup();
    let modes = s.policy.path().join("profiles/default/modes.yaml");
    std::fs::remove_file(&modes).unwrap();
    std::os::unix::fs::symlink(outside.path().join("profiles/default/modes.yaml"), &modes).unwrap();
    let out = wait_bounded(spawn(&mut hash_cmd(&s)), Duration::from_secs(20));
    assert_refused(&out, None, "outside the policy root");

    // A link that stays inside the root is followed.
    let s = setup();
    let modes = s.policy.path().join("profiles/default/modes.yaml");
    std::fs::rename(&modes, s.policy.path().join("shared-modes.yaml")).unwrap();
    std::os::unix::fs::symlink("../../shared-modes.yaml", &modes).unwrap();
    let out = wait_bounded(spawn(&mut hash_cmd(&s)), Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn output_that_cannot_be_written_is_exit_2_never_a_panic() {
    let s = setup();
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    for cmd in [&mut run_cmd(&s, &[]), &mut hash_cmd(&s)] {
        let out = cmd.stdout(full()).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("cannot write the output"), "{}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    }
    // The cycle itself completed and was saved before the output failed.
    assert!(s.root.path().join("ops/runtime/session_state.json").exists());

    // A reader that went away: quiet, exit 2, no panic.
    let mut child = validate_from_stdin();
    drop(child.stdout.take());
    let mut input = child.stdin.take().unwrap();
    let _ = std::io::Write::write_all(&mut input, DEMO_PLAN.as_bytes());
    drop(input);
    let out = wait_bounded(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn too_large_input_states_the_size_honestly() {
    let mut child = validate_from_stdin();
    let mut input = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..50 {
            if std::io::Write::write_all(&mut input, &chunk).is_err() {
                break;
            }
        }
    });
    let out = wait_bounded(child, Duration::from_secs(30));
    writer.join().unwrap();
    let report = json_of(&out);
    let message = report["problems"][0]["message"].as_str().unwrap();
    assert_eq!(report["problems"][0]["code"], "too-large");
    assert!(message.contains("more than 1 MiB") && !message.contains("1048577"), "{message}");

    // Where the size is known, it is the real size.
    let big = vec![b' '; 50_000_000];
    let rejection = planlock::ValidPlan::from_slice(&big).unwrap_err();
    assert!(rejection.problems()[0].message().contains("50000000 bytes"), "{rejection}");
}

#[test]
fn fail_works_for_every_step_type_and_a_failed_save_touches_nothing() {
    let s = setup();
    let state = s.root.path().join("ops/runtime/session_state.json");
    // Cold start: a failed save leaves no file.
    let out = run_cmd(&s, &["--fail", "PersistSession"]).output().unwrap();
    let report = json_of(&out);
    assert_eq!(out.status.code(), Some(3), "{report}");
    assert_eq!(report["outcome"], "FailFast");
    assert_eq!(report["steps"].as_array().unwrap().last().unwrap()["status"], "failed");
    assert!(!s.root.path().join("ops/runtime/session_state.json").exists());
    // With a session: the file keeps its bytes.
    assert_eq!(run_cmd(&s, &[]).output().unwrap().status.code(), Some(0));
    let before = std::fs::read(&state).unwrap();
    let out = run_cmd(&s, &["--fail", "PersistSession"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(std::fs::read(&state).unwrap(), before);

    // Every other type in the plan fails its own step, with its registry kind.
    let plan = plan_with(|_| {});
    for step in plan.steps() {
        let ty = step.step_type();
        let out = run_cmd(&s, &["--fail", ty.wire_name()]).output().unwrap();
        let report = json_of(&out);
        let failed: Vec<_> = report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] == "failed")
            .map(|s| s["id"].clone())
            .collect();
        assert_eq!(failed, [json!(step.id)], "--fail {ty}: {report}");
        assert_eq!(report["outcome"], ty.failure_kind().as_str(), "--fail {ty}");
    }
}

#[test]
fn json_format_prints_one_object_on_every_outcome() {
    // validate: the plan cannot be read.
    let out = planlock().args(["validate", "--format", "json", "/no/such/plan.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let report = json_of(&out);
    assert_eq!(report["valid"], false);
    assert!(report["error"].as_str().unwrap().contains("/no/such/plan.json"));

    let s = setup();
    // run: the plan cannot be read.
    let mut cmd = planlock();
    cmd.args(["run", "--format", "json", "--root"]).arg(s.root.path()).arg("--policy-root").arg(s.policy.path());
    let out = cmd.arg("/no/such/plan.json").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(json_of(&out)["error"].as_str().unwrap().contains("/no/such/plan.json"));

    // run: the plan is rejected; its problems are in the object.
    std::fs::write(&s.plan, DEMO_PLAN.replace("\"LLMCall\"", "\"LLMCal\"")).unwrap();
    let out = run_cmd(&s, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = json_of(&out);
    assert_eq!(report["outcome"], "CycleFail");
    assert_eq!(report["problems"][0]["code"], "unknown-step-type");
    assert!(report["error"].as_str().is_some());
}

/// The highest resident set size of `pid` so far, in KiB (`VmHWM`), while it runs.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn the_demo_scan_of_a_huge_file_stays_small_and_keeps_its_deadline() {
    let s = setup();
    let plan_dir = s.plan.parent().unwrap();
    let repo = plan_dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    // 2 GiB that take no disk: sparse.
    std::fs::File::create(repo.join("huge.bin")).unwrap().set_len(2 << 30).unwrap();
    // A FIFO in the scanned directory must not block the scan either.
    assert!(Command::new("mkfifo").arg(repo.join("pipe")).status().unwrap().success());
    let mut plan: Value = serde_json::from_str(DEMO_PLAN).unwrap();
    plan["steps"][0]["payload"]["repoPath"] = json!("repo");
    plan["metadata"]["timeouts"]["ioMs"] = json!(300);
    std::fs::write(&s.plan, plan.to_string()).unwrap();

    let started = Instant::now();
    let child = spawn(&mut run_cmd(&s, &[]));
    let pid = child.id();
    let mut peak = 0;
    let mut child = Some(child);
    let out = loop {
        peak = peak.max(peak_kib(pid).unwrap_or(0));
        let c = child.as_mut().unwrap();
        if c.try_wait().unwrap().is_some() || started.elapsed() > Duration::from_secs(60) {
            break wait_bounded(child.take().unwrap(), Duration::from_secs(1));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let report = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report["error"].as_str().unwrap().contains("ioMs"), "{report}");
    assert_eq!(report["steps"][0]["status"], "failed");
    assert!(peak < 64 * 1024, "peak resident memory {peak} KiB");
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
}

#[test]
fn run_works_from_any_working_directory_and_creates_its_root() {
    let s = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let demo_plan = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plans/demo_plan.json");
    let policy_root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let root = s.root.path().join("not/yet/there");
    let out = planlock()
        .current_dir(elsewhere.path())
        .args(["run", "--format", "json", "--root"])
        .arg(&root)
        .args(["--policy-root", policy_root, demo_plan])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(root.join("ops/runtime/session_state.json").exists());
}

#[test]
fn json_errors_carry_the_failures_stable_code() {
    // validate: the plan cannot be read.
    let out = planlock().args(["validate", "--format", "json", "/no/such/plan.json"]).output().unwrap();
    assert_eq!(json_of(&out)["errorCode"], "cannot-read");
    // A valid plan's report has no error and no code.
    let s = setup();
    let out = planlock().args(["validate", "--format", "json"]).arg(&s.plan).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(json_of(&out).get("errorCode").is_none());

    // run: the plan is rejected (each problem has its own code besides).
    std::fs::write(&s.plan, DEMO_PLAN.replace("\"LLMCall\"", "\"LLMCal\"")).unwrap();
    let report = json_of(&run_cmd(&s, &[]).output().unwrap());
    assert_eq!(report["errorCode"], "plan-rejected", "{report}");

    // run: a step fails: the executor's code; a completed cycle has none.
    std::fs::write(&s.plan, DEMO_PLAN).unwrap();
    let report = json_of(&run_cmd(&s, &["--fail", "LLMCall"]).output().unwrap());
    assert_eq!(report["outcome"], "CycleFail", "{report}");
    assert_eq!(report["errorCode"], "step-failed", "{report}");
    let report = json_of(&run_cmd(&s, &[]).output().unwrap());
    assert_eq!(report["outcome"], "completed", "{report}");
    assert!(report.get("errorCode").is_none(), "{report}");
}

/// The CLI says one thing (issue 39 §6): an embedder that fails at the probe reports the class
/// its exit code says; a run that abandons a rejected cycle points at running again, not at a
/// resume of a pause that is gone; `inbox list` writes states whole; `status` shows a session
/// whose first cycle is paused as paused; the model printed is the one the plan asks for.
#[test]
fn the_cli_says_one_thing() {
    let s = setup();
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bundles/semantic");
    let refused = format!("http://127.0.0.1:{}/v1", common::models::free_port());
    let out = run_cmd(&s, &["--bundle", manifest, "--embed-url", &refused, "--embed-model", "e5"]).output().unwrap();
    let v = json_of(&out);
    let class_exit = match v["outcome"].as_str() {
        Some("CycleFail") => Some(1),
        Some("FailFast") => Some(3),
        other => panic!("{other:?}: {v}"),
    };
    assert_eq!(out.status.code(), class_exit, "the outcome and the exit code agree: {v}");
    assert_eq!(v["errorCode"], "model-connect", "{v}");

    // The model the plan names wins over --llm-model, and is the one printed.
    let s = setup();
    let mut cmd = planlock();
    cmd.args(["run", "--root"]).arg(s.root.path()).arg("--policy-root").arg(s.policy.path());
    cmd.args(["--llm-url", &refused, "--llm-model", "from-the-flag"]).arg(&s.plan);
    let text = String::from_utf8(cmd.output().unwrap().stdout).unwrap();
    assert!(text.contains("model: demo-1 at") && text.contains("named by the plan's config.model"), "{text}");
    assert!(!text.contains("from-the-flag"), "{text}");

    // A session whose first cycle is paused; rejected; the run that abandons it.
    let dir = tempfile::tempdir().unwrap();
    let reviewed = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plans/reviewed_plan.json");
    let pol = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let root = dir.path().join("s1");
    let run = || {
        let mut cmd = planlock();
        cmd.args(["run", "--root"]).arg(&root).args(["--policy-root", pol, reviewed]);
        cmd.output().unwrap()
    };
    assert_eq!(run().status.code(), Some(4));
    let status = planlock().args(["status", "--format", "json", "--root"]).arg(&root).output().unwrap();
    let status = json_of(&status);
    assert_eq!((&status["status"], status["session"].is_null()), (&json!("paused"), true), "{status}");
    assert_eq!(status["sessionId"], status["intervention"]["sessionId"], "{status}");
    let inbox = |args: &[&str]| {
        let out = planlock().arg("inbox").args(args).arg("--sessions").arg(dir.path()).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    inbox(&["reject", "--by", "ada", "--reason", "not now", "s1"]);
    let list = inbox(&["list"]);
    assert!(list.contains(" rejected ") && !list.contains("rejectd"), "{list}");
    let abandoned = run();
    let text = String::from_utf8(abandoned.stdout).unwrap();
    assert_eq!(abandoned.status.code(), Some(1), "{text}");
    assert!(!text.contains("resume --approve"), "a pause that is gone is not to be resumed: {text}");
    assert!(text.contains("planlock run again"), "{text}");
    assert_eq!(run().status.code(), Some(4), "running again runs the cycle anew");
    inbox(&["approve", "--by", "ada", "--reason", "fine now", "s1"]);
    assert!(inbox(&["list"]).contains(" approved "));
}

/// An explicit place on the command line wins over the environment (CONTRACT §20): with
/// PLANLOCK_DATABASE_URL and PLANLOCK_TENANT set, `run --root` and `inbox list --sessions DIR`
/// use the files they name. On the code before, both exited 2.
#[test]
fn a_place_on_the_command_line_wins_over_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/policy");
    let plan = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plans/reviewed_plan.json");
    let env = [("PLANLOCK_DATABASE_URL", "postgres://nobody@127.0.0.1:9/none"), ("PLANLOCK_TENANT", "acme")];
    let run = crate::common::cli::planlock()
        .current_dir(dir.path())
        .args(["run", "--root", "s1", "--policy-root", policy, plan])
        .envs(env)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(4), "paused on files: {run:?}");
    // `inbox list --sessions DIR`: the one session it lists.
    let listed = |sessions: &str| {
        let list = crate::common::cli::planlock()
            .current_dir(dir.path())
            .args(["inbox", "list", "--format", "json", "--sessions", sessions])
            .envs(env)
            .output()
            .unwrap();
        assert_eq!(list.status.code(), Some(0), "{list:?}");
        crate::common::cli::json(&list)["pauses"][0]["session"].clone()
    };
    assert_eq!(listed("."), "s1");
    // A directory whose name begins like a database URL is a directory: the tenant in the
    // environment is a database's and not asked of it. On the code before, one test of "a
    // database" (`postgres…`) took it for one, and the command was refused (a tenant needs a
    // database); the test is now said once (`backend::is_database_url`).
    std::fs::create_dir(dir.path().join("postgres-dir")).unwrap();
    std::fs::rename(dir.path().join("s1"), dir.path().join("postgres-dir").join("s1")).unwrap();
    assert_eq!(listed("postgres-dir"), "s1");
}
