//! A plan's template is input from outside (CONTRACT §11): each shape that once crashed or
//! exhausted `planlock run` (a stack overflow that aborted, values doubled without end) now
//! fails as PromptAssemble's own CycleFail, exit 1, within seconds and in little memory. Each
//! runs in a child process, whose peak RSS is read from `wait4`.
#![cfg(target_os = "linux")]

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;
use common::{DEMO_PLAN, policy};

/// How a child ended: its exit code, stdout, wall time and peak RSS in KiB.
struct Ended {
    code: Option<i32>,
    stdout: String,
    elapsed: Duration,
    peak_kib: i64,
}

/// Runs `planlock run --format json` on `plan`, killing it after `limit`.
#[expect(clippy::zombie_processes, reason = "reaped by wait4, which also gives its peak RSS")]
fn run_plan(plan: &Value, limit: Duration) -> Ended {
    let (policy_dir, root, dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    policy(policy_dir.path(), "friendly");
    let file = dir.path().join("plan.json");
    std::fs::write(&file, serde_json::to_vec(plan).unwrap()).unwrap();
    let started = Instant::now();
    let child = crate::common::cli::planlock()
        .args(["run", "--format", "json", "--root"])
        .arg(root.path())
        .arg("--policy-root")
        .arg(policy_dir.path())
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    // The child's own high-water mark, read from /proc while it runs: `wait4`'s `ru_maxrss`
    // also counts the mark of this test process's memory at the exec (the kernel carries the
    // spawning process's high-water mark over it), which other tests of this binary raise.
    let mut peak_kib = 0;
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    loop {
        peak_kib = peak_kib.max(vm_hwm_kib(pid).unwrap_or(0));
        // SAFETY: `status` and `usage` are valid for writes; the pid is our own child's.
        let waited = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(waited >= 0, "wait4 failed");
        if waited == pid {
            break;
        }
        if started.elapsed() > limit {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("planlock still running after {limit:?} (peak RSS so far unknown)");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ended { code, stdout: reader.join().unwrap(), elapsed: started.elapsed(), peak_kib }
}

/// A running process's peak resident set (`VmHWM`), in KiB.
fn vm_hwm_kib(pid: libc::pid_t) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The demo plan with no timeouts, `template` in PromptAssemble, and `vars` merged in.
fn plan(template: &str, vars: Value) -> Value {
    let mut v: Value = serde_json::from_str(DEMO_PLAN).unwrap();
    v["metadata"].as_object_mut().unwrap().remove("timeouts");
    v["steps"][0]["payload"]["repoPath"] = json!(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
    v["steps"][4]["payload"]["template"] = json!(template);
    for (k, x) in vars.as_object().unwrap() {
        v["steps"][4]["payload"]["vars"][k] = x.clone();
    }
    v
}

/// `n` statements `{% set dK = <item> %}`, each value holding the previous one twice.
fn doubling(n: usize, first: &str, item: impl Fn(usize) -> String) -> String {
    let mut t = format!("{{% set d0 = {first} %}}");
    for i in 1..=n {
        t.push_str(&format!("{{% set d{i} = {} %}}", item(i - 1)));
    }
    t
}

/// Peak RSS a failed render may reach, in KiB: well under the 256 MiB for a 1 MiB plan.
const PEAK_KIB: i64 = 128 * 1024;

fn assert_prompt_fails(name: &str, plan: &Value, bound: &str) {
    let size = serde_json::to_vec(plan).unwrap().len();
    assert!(size <= planlock::MAX_PLAN_BYTES, "{name}: the plan must be valid ({size} bytes)");
    let ended = run_plan(plan, Duration::from_secs(60));
    assert_eq!(ended.code, Some(1), "{name}: CycleFail is exit 1; stdout: {}", ended.stdout);
    let report: Value = serde_json::from_str(&ended.stdout).expect("one JSON report");
    let error = report["error"].as_str().unwrap_or_default();
    assert!(error.contains("`prompt` (PromptAssemble)") && error.contains("[CycleFail]"), "{name}: {error}");
    assert!(error.contains(bound), "{name}: the message names the bound `{bound}`: {error}");
    assert!(ended.elapsed < Duration::from_secs(20), "{name}: took {:?}", ended.elapsed);
    assert!(ended.peak_kib < PEAK_KIB, "{name}: peak RSS {} KiB", ended.peak_kib);
}

#[test]
fn a_chain_of_50000_filters_is_refused_not_a_stack_overflow() {
    // 300 kB of template in a plan padded to just under 1 MiB.
    let chain = format!("{{{{ 'a'{} }}}}", "|upper".repeat(50_000));
    let p = plan(&chain, json!({ "pad": "p".repeat(700_000) }));
    assert_prompt_fails("chain", &p, "MAX_TEMPLATE_BYTES");
    // Under the size bound, the token bound stops a chain long before the stack would.
    let chain = format!("{{{{ 'a'{} }}}}", "|upper".repeat(5_000));
    assert_prompt_fails("chain of 5,000", &plan(&chain, json!({})), "MAX_EXPRESSION_TOKENS");
}

#[test]
fn values_that_double_sixty_times_are_refused() {
    let t = format!(
        "{{% set ns = namespace(l=[1]) %}}{}{{{{ ns.l | length }}}}",
        "{% set ns.l = ns.l + ns.l %}".repeat(60)
    );
    assert_prompt_fails("list doubling", &plan(&t, json!({})), "`{% set %}` is not allowed");
}

#[test]
fn a_dict_nested_200_levels_twice_over_is_refused_before_tojson() {
    let t = doubling(200, "{'a': 1}", |i| format!("{{'x': d{i}, 'y': d{i}}}")) + "{{ d200 | tojson }}";
    assert_prompt_fails("dict dag", &plan(&t, json!({})), "`{% set %}` is not allowed");
    let t = doubling(200, "[1]", |i| format!("[d{i}, d{i}]")) + "{{ d200 | pprint }}";
    assert_prompt_fails("list dag", &plan(&t, json!({})), "`{% set %}` is not allowed");
}

#[test]
fn loops_cannot_nest_a_value_deeper_at_every_level() {
    // Thirty loops each putting the value before into a pair: 2^30 to print. Refused by the
    // literal rule; the same through the functions and filters that could build the pair are gone.
    let nested = |open: &dyn Fn(usize) -> String| {
        let mut t = String::new();
        for i in 1..=30 {
            t.push_str(&open(i));
        }
        t.push_str("{{ (x30 ~ '') | length }}");
        t.push_str(&"{% endfor %}".repeat(30));
        t
    };
    let literal = nested(&|i| format!("{{% for x{i} in [[x{0}, x{0}]] %}}", i - 1));
    assert_prompt_fails("literal", &plan(&literal, json!({ "x0": [1] })), "only constants");
    let dict = nested(&|i| format!("{{% for x{i} in dict(a=x{0}, b=x{0})|items %}}", i - 1));
    assert_prompt_fails("dict()", &plan(&dict, json!({ "x0": [1] })), "unknown function");
    let batch = nested(&|i| format!("{{% for x{i} in ['a']|batch(3, fill_with=x{}) %}}", i - 1));
    assert_prompt_fails("batch", &plan(&batch, json!({ "x0": [1] })), "unknown filter");
    let recursive = "{% for x in t recursive %}{{ loop([x]) }}{% endfor %}";
    assert_prompt_fails("recursive", &plan(recursive, json!({ "t": [1] })), "recursive");
}

#[test]
fn what_one_expression_can_build_is_bounded_by_size_fuel_and_output() {
    let big = "x".repeat(400_000);
    // The plan holds two 400 kB strings in one list: the values a template repeats come from it.
    let pair = json!({ "pair": [big, big] });
    let one = json!({ "big": big });
    let many = |sep: &str| vec!["big"; 120].join(sep);
    let cases = [
        ("{{ pair | tojson }}".to_owned(), &pair, "MAX_SERIALIZED_BYTES"),
        ("{{ pair | pprint }}".to_owned(), &pair, "MAX_SERIALIZED_BYTES"),
        ("{{ pair }}{{ pair }}".to_owned(), &pair, "MAX_PROMPT_BYTES"),
        ("{{ (pair + pair + pair) | join }}".to_owned(), &pair, "MAX_PROMPT_BYTES"),
        (format!("{{{{ ({}) | length }}}}", many(" ~ ")), &one, "fuel"),
        ("{{ big | replace('x', big) | length }}".to_owned(), &one, "fuel"),
        ("{{ (big * 1000) | length }}".to_owned(), &one, "fuel"),
        ("{{ range(100000) | list | tojson }}".to_owned(), &one, "MAX_SERIALIZED_BYTES"),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}".to_owned(),
            &one,
            "fuel",
        ),
    ];
    for (t, vars, bound) in cases {
        assert_prompt_fails(&t[..t.len().min(60)], &plan(&t, vars.clone()), bound);
    }
}

#[test]
fn a_plain_template_still_renders() {
    let ended = run_plan(
        &plan("Answer {{ question }} ({{ ledger.memories | length }} memories)", json!({})),
        Duration::from_secs(60),
    );
    assert_eq!(ended.code, Some(0), "{}", ended.stdout);
}
