//! Token budgets beside file sessions (CONTRACT §20), through the CLI as an operator uses them:
//! eight `planlock run` processes at once against a budget that fits three calls make three; a
//! refused call is never sent and says what was left and when it resets; a failed cycle gives
//! back what it reserved; a damaged budgets file refuses every call, naming it; and
//! `planlock budget set|show|remove`.
#![cfg(feature = "openai")]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::chat::{SUMMARY_REPORTED, calls};
use serde_json::{Value, json};
use wiremock::MockServer;

/// What each `LLMCall` asks the model to write at most; the server reports [`REPORTED`] used.
const MAX_TOKENS: u64 = 4_000;
const REPORTED: u64 = 4_100;

/// A model server on 127.0.0.1 answering `status` after `delay`, with its runtime.
fn model(status: u16, delay: Duration) -> (tokio::runtime::Runtime, MockServer) {
    common::chat::counting(status, delay, (REPORTED - MAX_TOKENS, MAX_TOKENS))
}

/// A directory of sessions `s0`…, a policy and the demo plan asking for [`MAX_TOKENS`].
struct Place {
    dir: tempfile::TempDir,
    policy: PathBuf,
    plan: PathBuf,
}

impl Place {
    fn new(sessions: usize) -> Place {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("policy");
        common::policy(&policy, "friendly");
        for i in 0..sessions {
            std::fs::create_dir_all(dir.path().join("sessions").join(format!("s{i}"))).unwrap();
        }
        let plan = common::plan_with(|v| {
            v["steps"].as_array_mut().unwrap().remove(0);
            for step in v["steps"].as_array_mut().unwrap() {
                if step["type"] == "LLMCall" {
                    step["payload"]["config"] = json!({ "max_tokens": MAX_TOKENS });
                }
            }
        });
        let plan_file = dir.path().join("plan.json");
        std::fs::write(&plan_file, plan.to_json()).unwrap();
        Place { dir, policy, plan: plan_file }
    }

    fn sessions(&self) -> PathBuf {
        self.dir.path().join("sessions")
    }

    fn run(&self, session: &str, server: &MockServer) -> std::process::Command {
        let mut cmd = common::cli::planlock();
        let root = self.sessions().join(session);
        cmd.args(["--format", "json", "run", "--root"]).arg(root).arg("--policy-root").arg(&self.policy);
        cmd.args(["--llm-url", &format!("{}/v1", server.uri()), "--llm-model", "m"]).arg(&self.plan);
        cmd
    }

    fn budget(&self, args: &[&str]) -> (Option<i32>, Value) {
        let out = common::cli::planlock()
            .args(["--format", "json", "budget"])
            .args(args)
            .arg("--sessions")
            .arg(self.sessions())
            .output()
            .unwrap();
        (out.status.code(), common::cli::json(&out))
    }

    /// What a cycle of the plan reserves at its start (its two calls' estimate), as a budget of
    /// one token's refusal says it; the budget is removed again, and nothing was sent.
    fn cycle_estimate(&self, server: &MockServer) -> u64 {
        assert_eq!(self.budget(&["set", "--tokens", "1"]).0, Some(0));
        let refused = report(&self.run("s0", server).output().unwrap());
        let message = refused["error"].as_str().unwrap_or_default();
        let asked = message.split("nothing of which was sent: ").nth(1).and_then(|m| m.split(' ').next());
        let asked = asked.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{refused}"));
        assert_eq!(self.budget(&["remove"]).0, Some(0));
        asked
    }

    fn shown(&self) -> Value {
        let (code, shown) = self.budget(&["show"]);
        assert_eq!(code, Some(0), "{shown}");
        shown["budgets"][0].clone()
    }
}

fn report(out: &std::process::Output) -> Value {
    common::cli::json(out)
}

#[test]
fn eight_processes_at_once_make_exactly_the_calls_a_file_budget_fits() {
    let place = Place::new(8);
    let (rt, server) = model(200, Duration::from_millis(400));
    let cycle = place.cycle_estimate(&server);
    let (code, set) = place.budget(&["set", "--tokens", &(3 * cycle).to_string(), "--period", "1d"]);
    assert_eq!(code, Some(0), "{set}");
    let running: Vec<_> = (0..8)
        .map(|i| place.run(&format!("s{i}"), &server).stdout(std::process::Stdio::piped()).spawn().unwrap())
        .collect();
    let reports: Vec<Value> = running.into_iter().map(|c| report(&c.wait_with_output().unwrap())).collect();
    assert_eq!(calls(&rt, &server), 6, "three cycles' two calls each, as the budget fits");
    let completed = reports.iter().filter(|r| r["outcome"] == "completed").count();
    assert_eq!(completed, 3, "{reports:#?}");
    for refused in reports.iter().filter(|r| r["outcome"] != "completed") {
        assert_eq!(
            (refused["outcome"].as_str(), refused["errorCode"].as_str()),
            (Some("CycleFail"), Some("budget-exhausted"))
        );
        let message = refused["error"].as_str().unwrap();
        assert!(message.starts_with("step `llm` (LLMCall) failed [CycleFail]"), "{message}");
        assert!(message.contains(&format!("of {} are left this period", 3 * cycle)), "{message}");
        assert!(message.contains("it resets at ") && message.contains("T00:00:00Z"), "{message}");
    }
    let shown = place.shown();
    let used = 3 * (REPORTED + SUMMARY_REPORTED);
    assert_eq!((shown["used"].as_u64(), shown["reserved"].as_u64()), (Some(used), Some(0)), "{shown}");
}

#[test]
fn a_cycle_the_budget_cannot_cover_sends_nothing_however_often_it_runs() {
    // CONTRACT §20: the cycle reserves its two calls' estimate at its start. A budget that
    // covers the first call but not both refuses the cycle before anything is sent, every time.
    let place = Place::new(1);
    let (rt, server) = model(200, Duration::ZERO);
    let cycle = place.cycle_estimate(&server);
    assert!(cycle > MAX_TOKENS + 100, "the estimate covers the LLMCall and the summary: {cycle}");
    assert_eq!(place.budget(&["set", "--tokens", &(cycle - 1).to_string()]).0, Some(0));
    for _ in 0..3 {
        let refused = report(&place.run("s0", &server).output().unwrap());
        assert_eq!(refused["errorCode"], "budget-exhausted", "{refused}");
        let message = refused["error"].as_str().unwrap();
        assert!(message.contains(&format!("{} of {} are left", cycle - 1, cycle - 1)), "{message}");
    }
    assert_eq!(calls(&rt, &server), 0, "not the first call either");
    let shown = place.shown();
    assert_eq!((shown["used"].as_u64(), shown["reserved"].as_u64()), (Some(0), Some(0)), "{shown}");
}

#[test]
fn a_failed_cycle_gives_back_what_it_reserved_and_a_prefix_narrows_the_budget() {
    let place = Place::new(2);
    let (rt, failing) = model(500, Duration::ZERO);
    let cycle = place.cycle_estimate(&failing);
    assert_eq!(place.budget(&["set", "--tokens", &cycle.to_string()]).0, Some(0));
    // The server fails: nothing was used, everything reserved is back.
    let out = place.run("s0", &failing).output().unwrap();
    assert_eq!(report(&out)["errorCode"], "step-failed", "{}", report(&out));
    assert_eq!(calls(&rt, &failing), 1);
    let shown = place.shown();
    assert_eq!((shown["used"].as_u64(), shown["reserved"].as_u64()), (Some(0), Some(0)), "{shown}");
    // A budget of its own for `s1…`: the tenant-wide one still covers it too.
    let (rt2, answering) = model(200, Duration::ZERO);
    assert_eq!(place.budget(&["set", "--prefix", "s1", "--tokens", "10"]).0, Some(0));
    let out = place.run("s1", &answering).output().unwrap();
    let refused = report(&out);
    assert_eq!(refused["errorCode"], "budget-exhausted", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("for sessions `s1…`"), "{refused}");
    assert_eq!(place.run("s0", &answering).output().unwrap().status.code(), Some(0));
    assert_eq!(calls(&rt2, &answering), 2, "s0's two calls; s1's refused call was never sent");
    let (code, removed) = place.budget(&["remove", "--prefix", "s1"]);
    assert_eq!((code, removed["action"].as_str()), (Some(0), Some("removed")));
    let (code, _) = place.budget(&["remove", "--prefix", "s1"]);
    assert_ne!(code, Some(0), "there is no such budget any more");
}

#[test]
fn a_damaged_budgets_file_refuses_every_call_naming_it() {
    let place = Place::new(1);
    let (rt, server) = model(200, Duration::ZERO);
    let file = place.sessions().join(planlock::session::BUDGETS_FILE);
    for damage in [&b"{\"budgets\": [{\"prefix\": 7}]"[..], b"\xff\xfe", b"{\"budgets\":[],\"holds\":[],\"extra\":1}"] {
        std::fs::write(&file, damage).unwrap();
        let refused = report(&place.run("s0", &server).output().unwrap());
        assert_eq!(refused["errorCode"], "budget-unavailable", "{refused}");
        let message = refused["error"].as_str().unwrap();
        assert!(
            message.contains(&*file.to_string_lossy()) && message.contains("the model call was not sent"),
            "{message}"
        );
    }
    // Larger than planlock ever writes: refused without reading it all.
    let big = std::fs::File::create(&file).unwrap();
    big.set_len(planlock::session::MAX_BUDGETS_FILE_BYTES + 1).unwrap();
    let refused = report(&place.run("s0", &server).output().unwrap());
    assert!(refused["error"].as_str().unwrap().contains("larger than"), "{refused}");
    assert_eq!(calls(&rt, &server), 0);
}

/// A dead process's reservation is charged whole once its root is unlocked (CONTRACT §20,
/// amended: its call may have been sent; over-charged by a crash, never overspent). On the code
/// before, it was released uncharged and the next call fitted.
#[test]
fn a_dead_processs_reservation_is_charged_once_its_root_is_unlocked() {
    use planlock::budget::{TokenAsk, TokenBudget};
    let place = Place::new(2);
    let sessions = place.sessions();
    planlock::session::FileBudget::set(&sessions, "", 100, Duration::from_secs(3_600)).unwrap();
    let ask = |id| TokenAsk { id, tokens: 60, cycle: 1, step_id: "llm" };
    // s0's store is open (its root locked) while it reserves: its reservation stands.
    let s0 = planlock::session::FileSessionStore::open(sessions.join("s0")).unwrap();
    let held = planlock::session::FileBudget::new(&sessions, "s0");
    planlock::block_on(held.reserve(ask(uuid::Uuid::new_v4()))).unwrap();
    let s1 = planlock::session::FileSessionStore::open(sessions.join("s1")).unwrap();
    let other = planlock::session::FileBudget::new(&sessions, "s1");
    let refused = planlock::block_on(other.reserve(ask(uuid::Uuid::new_v4()))).unwrap_err();
    assert_eq!(planlock::Failure::code(&refused), "budget-exhausted", "{refused}");
    // s0's process ends (its lock with it): the next reservation charges what it held.
    drop(s0);
    let refused = planlock::block_on(other.reserve(ask(uuid::Uuid::new_v4()))).unwrap_err();
    assert_eq!(planlock::Failure::code(&refused), "budget-exhausted", "{refused}");
    drop(s1);
    let shown = planlock::session::FileBudget::budgets(&sessions).unwrap();
    assert_eq!((shown[0].used, shown[0].reserved), (60, 0), "{shown:?}");
}

/// A reservation waiting for another process's lock on the budgets file holds no thread of the
/// caller's (docs/CONTRACT.md, "I/O"): on a current-thread executor, a timer fires while the
/// reservation waits. On the code before, the reservation took the lock on the caller's thread,
/// and the timer fired only after the lock was released.
#[test]
fn a_reservation_waiting_for_the_budgets_lock_holds_no_thread() {
    use planlock::budget::{TokenAsk, TokenBudget};
    let place = Place::new(1);
    let sessions = place.sessions();
    planlock::session::FileBudget::set(&sessions, "", 100, Duration::from_secs(3_600)).unwrap();
    let lock = std::fs::File::open(sessions.join(planlock::session::BUDGETS_LOCK)).unwrap();
    lock.lock().unwrap();
    let waiter = std::thread::spawn(move || {
        let executor = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        executor.block_on(async {
            let budget = planlock::session::FileBudget::new(&sessions, "s0");
            let reserve = budget.reserve(TokenAsk { id: uuid::Uuid::new_v4(), tokens: 10, cycle: 1, step_id: "llm" });
            tokio::pin!(reserve);
            tokio::select! {
                biased;
                _ = &mut reserve => "reserved first",
                () = tokio::time::sleep(Duration::from_millis(100)) => "the timer fired while it waited",
            }
        })
    });
    std::thread::sleep(Duration::from_millis(600));
    lock.unlock().unwrap();
    assert_eq!(waiter.join().unwrap(), "the timer fired while it waited");
    // The reservation its caller stopped waiting for (its future dropped when the timer fired)
    // is given back once made, not left held.
    let given_back = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        let shown = planlock::session::FileBudget::budgets(&place.sessions()).unwrap();
        shown[0].reserved == 0 && shown[0].used == 0
    });
    assert!(given_back, "{:?}", planlock::session::FileBudget::budgets(&place.sessions()).unwrap());
}

#[test]
fn holds_naming_a_fifo_or_a_path_outside_are_charged_without_waiting() {
    use planlock::budget::{TokenAsk, TokenBudget, period_start};
    let place = Place::new(1);
    let sessions = place.sessions();
    assert!(std::process::Command::new("mkfifo").arg(sessions.join("fifo")).status().unwrap().success());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let start = period_start(now, 3_600);
    let hold = |session: &str| {
        json!({ "id": uuid::Uuid::new_v4(), "prefix": "", "session": session, "owner": uuid::Uuid::new_v4(),
                "periodStart": start, "tokens": 30, "state": "held", "madeAt": now })
    };
    let book = json!({
        "budgets": [{ "prefix": "", "tokens": 140, "periodSecs": 3_600, "periodStart": start, "used": 0, "reserved": 90 }],
        "holds": [hold("fifo"), hold("../../../etc"), hold("gone-long-ago")],
    });
    std::fs::write(sessions.join(planlock::session::BUDGETS_FILE), book.to_string()).unwrap();
    let _s0 = planlock::session::FileSessionStore::open(sessions.join("s0")).unwrap();
    let budget = planlock::session::FileBudget::new(&sessions, "s0");
    let (done, waited) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let ask = TokenAsk { id: uuid::Uuid::new_v4(), tokens: 60, cycle: 1, step_id: "llm" };
        let _ = done.send(planlock::block_on(budget.reserve(ask)));
    });
    let reserved = waited.recv_timeout(Duration::from_secs(10)).expect("the reservation never waits on a FIFO");
    // The three dead holds are charged (90 used), so the call that needs 60 more is refused.
    let refused = reserved.unwrap_err();
    assert_eq!(planlock::Failure::code(&refused), "budget-exhausted", "{refused}");
    let shown = planlock::session::FileBudget::budgets(&sessions).unwrap();
    assert_eq!((shown[0].used, shown[0].reserved), (90, 0), "charged, not released: {shown:?}");
}

#[test]
fn a_new_period_starts_aligned_and_takes_the_reservations_in_flight_along() {
    use planlock::budget::{Charge, TokenAsk, TokenBudget};
    let place = Place::new(1);
    let sessions = place.sessions();
    assert_eq!(place.budget(&["set", "--tokens", "1000", "--period", "1h"]).0, Some(0));
    let _s0 = planlock::session::FileSessionStore::open(sessions.join("s0")).unwrap();
    let budget = planlock::session::FileBudget::new(&sessions, "s0");
    let id = uuid::Uuid::new_v4();
    planlock::block_on(budget.reserve(TokenAsk { id, tokens: 60, cycle: 1, step_id: "llm" })).unwrap();
    // A day instead of an hour: it resets at midnight UTC, and the call in flight still settles.
    assert_eq!(place.budget(&["set", "--tokens", "1000", "--period", "1d"]).0, Some(0));
    let shown = place.shown();
    assert!(shown["resetsAt"].as_str().unwrap().ends_with("T00:00:00Z"), "{shown}");
    assert_eq!(shown["reserved"].as_u64(), Some(60), "{shown}");
    let charge = Charge { id, reserved: 60, used: 42 };
    planlock::block_on(budget.settle(&[charge], None)).unwrap();
    let shown = place.shown();
    assert_eq!((shown["used"].as_u64(), shown["reserved"].as_u64()), (Some(42), Some(0)), "{shown}");
}

#[test]
fn settled_reservations_leave_nothing_behind() {
    use planlock::budget::{Charge, TokenAsk, TokenBudget};
    let place = Place::new(1);
    let sessions = place.sessions();
    planlock::session::FileBudget::set(&sessions, "", 1_000_000, Duration::from_secs(86_400)).unwrap();
    let _s0 = planlock::session::FileSessionStore::open(sessions.join("s0")).unwrap();
    let budget = planlock::session::FileBudget::new(&sessions, "s0");
    for _ in 0..50 {
        let id = uuid::Uuid::new_v4();
        planlock::block_on(budget.reserve(TokenAsk { id, tokens: 100, cycle: 1, step_id: "llm" })).unwrap();
        planlock::block_on(budget.settle(&[Charge { id, reserved: 100, used: 90 }], None)).unwrap();
    }
    // The file keeps the budgets and the calls in flight only: a day of calls never fills it.
    let book: Value =
        serde_json::from_slice(&std::fs::read(sessions.join(planlock::session::BUDGETS_FILE)).unwrap()).unwrap();
    assert_eq!(book["holds"].as_array().map(Vec::len), Some(0), "{book}");
    assert_eq!(place.shown()["used"].as_u64(), Some(50 * 90));
}

/// A chat server answering every request with `usage` (a JSON object, as the server writes it),
/// and its runtime.
fn reporting(usage: Value) -> (tokio::runtime::Runtime, MockServer) {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        let answer = json!({
            "id": "c", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{ "index": 0, "message": { "role": "assistant", "content": "{\"summary\": \"ok\", \"keywords\": [\"ok\"]}" }, "finish_reason": "stop" }],
            "usage": usage
        });
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_json(answer))
            .mount(&server)
            .await;
        server
    });
    (rt, server)
}

/// The demo plan whose `LLMCall` config is `config`, in `place`: its file.
fn plan_config(place: &Place, config: Value) -> PathBuf {
    let plan = common::plan_with(|v| {
        v["steps"].as_array_mut().unwrap().remove(0);
        for step in v["steps"].as_array_mut().unwrap() {
            if step["type"] == "LLMCall" {
                step["payload"]["config"] = config.clone();
            }
        }
    });
    let file = place.dir.path().join(format!("plan-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, plan.to_json()).unwrap();
    file
}

/// What is reserved is what is sent (CONTRACT §20, amended): a cap that is not a positive whole
/// number is refused before anything is sent, naming the field; `n` multiplies the reservation;
/// a request without a cap is sent with the one reserved. On the code before, `max_tokens: -1`
/// was sent as written and reserved as 512.
#[test]
fn what_is_reserved_is_what_is_sent() {
    let place = Place::new(3);
    let (rt, server) = model(200, Duration::ZERO);
    assert_eq!(place.budget(&["set", "--tokens", "100000", "--period", "1d"]).0, Some(0));
    // A completed cycle pins its plan: each plan that completes has a session of its own.
    let run_in = |session: &str, plan: &PathBuf| {
        let cmd = place.run(session, &server);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
        let mut cmd = common::cli::planlock();
        cmd.args(&args[..args.len() - 1]).arg(plan);
        report(&cmd.output().unwrap())
    };
    let run = |plan: &PathBuf| run_in("s0", plan);
    for bad in [json!(-1), Value::Null, json!(0), json!("100000"), json!(100000.0)] {
        let refused = run(&plan_config(&place, json!({ "max_tokens": bad })));
        assert_eq!(refused["outcome"], "CycleFail", "{bad}: {refused}");
        assert!(refused["error"].as_str().unwrap().contains("`config.max_tokens` must be a whole number"), "{refused}");
        assert_eq!(calls(&rt, &server), 0, "nothing sent for {bad}");
    }
    let refused = run(&plan_config(&place, json!({ "max_completion_tokens": "lots" })));
    assert!(refused["error"].as_str().unwrap().contains("config.max_completion_tokens"), "{refused}");
    // Eight choices of 20,000 tokens each are more than the budget: refused, unsent; one fits.
    let refused = run(&plan_config(&place, json!({ "max_tokens": 20_000, "n": 8 })));
    assert_eq!(refused["errorCode"], "budget-exhausted", "{refused}");
    assert_eq!(calls(&rt, &server), 0);
    let done = run_in("s1", &plan_config(&place, json!({ "max_tokens": 20_000, "n": 1 })));
    assert_eq!(done["outcome"], "completed", "{done}");
    // Without a cap, the request carries the one reserved.
    let done = run_in("s2", &plan_config(&place, json!({})));
    assert_eq!(done["outcome"], "completed", "{done}");
    let sent = rt.block_on(server.received_requests()).unwrap();
    let last_llm = sent
        .iter()
        .rev()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
        .find(|b| !b["messages"].to_string().contains("Summarize the assistant"));
    assert_eq!(last_llm.unwrap()["max_tokens"], json!(512), "the default cap is sent");
}

/// A usage without both counts is charged the reservation, or its `total_tokens` when larger;
/// a count no call can have is clamped (CONTRACT §20, amended). On the code before, `"usage":
/// {}` charged nothing.
#[test]
fn a_usage_without_counts_is_charged_the_reservation() {
    for (usage, at_least) in [
        (json!({}), MAX_TOKENS),
        (json!({ "total_tokens": 1_000_000 }), 1_000_000),
        (json!({ "prompt_tokens": 9_223_372_036_854_775_807_u64, "completion_tokens": 0 }), 1 << 40),
    ] {
        let place = Place::new(1);
        let (_rt, server) = reporting(usage.clone());
        assert_eq!(place.budget(&["set", "--tokens", "2000000000000", "--period", "1d"]).0, Some(0));
        let done = report(&place.run("s0", &server).output().unwrap());
        assert_eq!(done["outcome"], "completed", "{usage}: {done}");
        let used = place.shown()["used"].as_u64().unwrap();
        assert!(used >= at_least, "{usage}: charged {used}, at least {at_least}");
        assert!(used <= 4 << 40, "{usage}: clamped, not {used}");
    }
}

/// No budget set, nothing touched (CONTRACT §20, amended): no lock file is made, a bare relative
/// root runs; with a budget, a lock file that is a FIFO or a dangling link is refused without
/// waiting and never followed; a budget of 0 tokens is refused.
#[test]
fn no_budget_touches_nothing_and_a_strange_lock_file_is_refused_at_once() {
    let place = Place::new(1);
    let (rt, server) = model(200, Duration::ZERO);
    let done = report(&place.run("s0", &server).output().unwrap());
    assert_eq!(done["outcome"], "completed", "{done}");
    assert!(!place.sessions().join(planlock::session::BUDGETS_LOCK).exists(), "no lock without a budget");
    // The README's bare relative root, with a budget set where it lives.
    assert_eq!(place.budget(&["set", "--tokens", "1000000", "--period", "1d"]).0, Some(0));
    let out = common::cli::planlock()
        .current_dir(place.sessions())
        .args(["--format", "json", "run", "--root", "s0", "--policy-root"])
        .arg(&place.policy)
        .args(["--llm-url", &format!("{}/v1", server.uri()), "--llm-model", "m"])
        .arg(&place.plan)
        .output()
        .unwrap();
    assert_eq!(report(&out)["outcome"], "completed", "{}", String::from_utf8_lossy(&out.stdout));
    let before = calls(&rt, &server);
    let lock = place.sessions().join(planlock::session::BUDGETS_LOCK);
    std::fs::remove_file(&lock).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&lock).status().unwrap().success());
    let started = std::time::Instant::now();
    let refused = report(&place.run("s0", &server).output().unwrap());
    assert_eq!(refused["errorCode"], "budget-unavailable", "{refused}");
    assert!(started.elapsed() < Duration::from_secs(20), "refused, not waited on");
    std::fs::remove_file(&lock).unwrap();
    let target = place.dir.path().join("made-through-a-link");
    std::os::unix::fs::symlink(&target, &lock).unwrap();
    let refused = report(&place.run("s0", &server).output().unwrap());
    assert_eq!(refused["errorCode"], "budget-unavailable", "{refused}");
    assert!(!target.exists(), "a dangling link is not followed");
    assert_eq!(calls(&rt, &server), before, "nothing sent");
    let (code, zero) = place.budget(&["set", "--tokens", "0"]);
    assert_eq!(code, Some(2), "{zero}");
}
