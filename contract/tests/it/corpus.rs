//! The table-driven corpus: valid and invalid plans covering every code of CONTRACT §3 and
//! every rule of the seeds, each asserting the exact codes, pointers and failure class.

use std::collections::BTreeSet;

use planlock_contract::Failure;
use planlock_contract::{FailureKind, ProblemCode, ValidPlan};
use serde_json::{Value, json};

const FULL: &str = include_str!("../../../tests/fixtures/full_plan.json");

fn full() -> Value {
    serde_json::from_str(FULL).unwrap()
}

enum Input {
    /// The full plan, changed by this function.
    Edit(fn(&mut Value)),
    /// Raw text, for what a `Value` cannot hold (broken JSON, duplicate keys, …).
    Raw(String),
}

struct Case {
    name: &'static str,
    input: Input,
    /// `(code, pointer)` in report order; empty means the plan is valid.
    expect: Vec<(&'static str, &'static str)>,
}

fn edit(name: &'static str, f: fn(&mut Value), expect: &[(&'static str, &'static str)]) -> Case {
    Case { name, input: Input::Edit(f), expect: expect.to_vec() }
}

fn raw(name: &'static str, text: impl Into<String>, expect: &[(&'static str, &'static str)]) -> Case {
    Case { name, input: Input::Raw(text.into()), expect: expect.to_vec() }
}

fn steps(v: &mut Value) -> &mut Vec<Value> {
    v["steps"].as_array_mut().unwrap()
}

fn remove_step(v: &mut Value, ty: &str) {
    steps(v).retain(|s| s["type"] != ty);
}

fn obj(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    v.as_object_mut().unwrap()
}

fn nested(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = json!([v]);
    }
    v
}

fn cases() -> Vec<Case> {
    vec![
        // ---- valid plans
        edit("the full 12-step plan", |_| {}, &[]),
        edit(
            "only the four mandatory steps",
            |v| {
                for t in [
                    "RepoScan",
                    "RetrieveMemory",
                    "RetrieveDecisionContext",
                    "SummarizeMemory",
                    "PersistMemory",
                    "PersistDecision",
                    "PersistEvidence",
                    "LinkDecisionEvidence",
                ] {
                    remove_step(v, t);
                }
                obj(&mut v["metadata"]).remove("topK");
            },
            &[],
        ),
        edit(
            "legacy plan without validator arrays (D-021)",
            |v| {
                obj(v).remove("validators");
                obj(v).remove("postValidators");
            },
            &[],
        ),
        edit(
            "optional metadata keys absent",
            |v| {
                obj(&mut v["metadata"]).remove("timeouts");
                obj(&mut v["metadata"]).remove("budgets");
            },
            &[],
        ),
        edit(
            "optional payload field absent",
            |v| {
                obj(&mut steps(v)[3]["payload"]).remove("currentDomain");
            },
            &[],
        ),
        raw(
            "payload before type in a step",
            FULL.replace(
                r#"{ "id": "scan", "type": "RepoScan", "payload": { "repoPath": "." } }"#,
                r#"{ "payload": { "repoPath": "." }, "id": "scan", "type": "RepoScan" }"#,
            ),
            &[],
        ),
        edit(
            "integers up to 2^53-1 in free-form values",
            |v| {
                steps(v)[4]["payload"]["vars"]["n"] = json!(9007199254740991_u64);
            },
            &[],
        ),
        edit(
            "free-form nesting up to depth 64",
            |v| {
                steps(v)[4]["payload"]["vars"]["deep"] = nested(59);
            },
            &[],
        ),
        // ---- version gate (D-007): FailFast, and nothing else is checked
        edit(
            "unsupported version",
            |v| v["step_contract_version"] = json!("2"),
            &[("unsupported-version", "/step_contract_version")],
        ),
        edit(
            "version missing",
            |v| {
                obj(v).remove("step_contract_version");
            },
            &[("unsupported-version", "/step_contract_version")],
        ),
        edit(
            "version as a number",
            |v| v["step_contract_version"] = json!(1),
            &[("unsupported-version", "/step_contract_version")],
        ),
        edit(
            "extensions not empty",
            |v| v["extensions"] = json!([{"branching": true}]),
            &[("invalid-extensions", "/extensions")],
        ),
        edit(
            "extensions missing",
            |v| {
                obj(v).remove("extensions");
            },
            &[("invalid-extensions", "/extensions")],
        ),
        edit("extensions not an array", |v| v["extensions"] = json!({}), &[("invalid-extensions", "/extensions")]),
        edit(
            "gate failure hides every other problem",
            |v| {
                v["step_contract_version"] = json!("1.1");
                v["extensions"] = json!(["x"]);
                v["graph"] = json!({});
                remove_step(v, "LLMCall");
            },
            &[("unsupported-version", "/step_contract_version"), ("invalid-extensions", "/extensions")],
        ),
        // ---- JSON-level problems
        raw("not JSON", "{ \"step_contract_version\": ", &[("malformed-json", "/step_contract_version")]),
        raw("empty input", "", &[("malformed-json", "")]),
        raw("trailing garbage", format!("{FULL} x"), &[("malformed-json", "")]),
        raw("two documents", format!("{FULL}{FULL}"), &[("malformed-json", "")]),
        raw(
            "duplicate key in metadata",
            FULL.replace(r#""mode": "chat","#, r#""mode": "chat", "mode": "voice","#),
            &[("duplicate-key", "/metadata/mode")],
        ),
        raw(
            "duplicate key in a free-form object",
            FULL.replace(r#""lang": "en","#, r#""lang": "en", "lang": "de","#),
            &[("duplicate-key", "/steps/4/payload/vars/lang")],
        ),
        raw(
            "duplicate top-level key",
            FULL.replacen(r#""extensions": [],"#, r#""extensions": [], "extensions": [],"#, 1),
            &[("duplicate-key", "/extensions")],
        ),
        raw(
            "lone trailing surrogate",
            FULL.replace("Rotate the key in the vault", "\\udc00"),
            &[("invalid-value", "/steps/6/payload/response")],
        ),
        raw(
            "lone surrogate",
            FULL.replace("How do I rotate the API key?\", \"sources\"", "\\ud800\", \"sources\""),
            &[("invalid-value", "/steps/1/payload/input")],
        ),
        raw("too large", format!("{FULL}{}", " ".repeat(planlock_contract::MAX_PLAN_BYTES)), &[("too-large", "")]),
        raw("a UTF-8 byte order mark", format!("\u{feff}{FULL}"), &[("malformed-json", "")]),
        raw(
            "too deep in a free-form value",
            FULL.replace(
                r#""limits": { "words": 200 }"#,
                &format!(r#""limits": {}{}"#, "[".repeat(70), "]".repeat(70)),
            ),
            &[(
                "too-deep",
                "/steps/4/payload/vars/limits/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0",
            )],
        ),
        edit(
            "integer above 2^53-1",
            |v| {
                steps(v)[4]["payload"]["vars"]["n"] = json!(9007199254740992_u64);
            },
            &[("invalid-value", "/steps/4/payload/vars/n")],
        ),
        edit(
            "float above 2^53-1",
            |v| {
                steps(v)[5]["payload"]["config"]["big"] = json!(1e300);
            },
            &[("invalid-value", "/steps/5/payload/config/big")],
        ),
        edit(
            "negative integer below -(2^53-1)",
            |v| {
                steps(v)[5]["payload"]["config"]["low"] = json!(-9007199254740992_i64);
            },
            &[("invalid-value", "/steps/5/payload/config/low")],
        ),
        edit("root is not an object", |v| *v = json!([]), &[("invalid-type", "")]),
        // ---- what producers in other languages write (CONTRACT §17): floats, non-ASCII keys
        edit(
            "floats in a free-form object",
            |v| steps(v)[5]["payload"]["config"] = json!({ "temperature": 0.7, "top_p": 1e-3, "penalty": -0.0 }),
            &[],
        ),
        edit(
            "non-ASCII keys in a free-form object",
            |v| steps(v)[4]["payload"]["vars"]["질문"] = json!("키를 어떻게 교체하나요?"),
            &[],
        ),
        edit(
            "a non-ASCII unknown field",
            |v| v["metadata"]["modé\u{202e}"] = json!(1),
            &[("unknown-field", "/metadata/modé\u{202e}")],
        ),
        raw(
            "duplicate non-ASCII keys in a free-form object",
            FULL.replace(r#""lang": "en""#, r#""언어": "ko", "언어": "en""#),
            &[("duplicate-key", "/steps/4/payload/vars/언어")],
        ),
        raw(
            "an integer past 2^53 written as a float",
            FULL.replace(r#""words": 200"#, r#""words": 9007199254740993.0"#),
            &[("invalid-value", "/steps/4/payload/vars/limits/words")],
        ),
        // ---- flat model (B-007 §2): branching fields are unknown fields
        edit(
            "onSuccess on a step",
            |v| steps(v)[1]["onSuccess"] = json!("llm"),
            &[("unknown-field", "/steps/1/onSuccess")],
        ),
        edit("onFail on a step", |v| steps(v)[5]["onFail"] = json!("ctx"), &[("unknown-field", "/steps/5/onFail")]),
        edit(
            "condition on a step",
            |v| steps(v)[0]["condition"] = json!("repo exists"),
            &[("unknown-field", "/steps/0/condition")],
        ),
        edit("nested steps", |v| steps(v)[1]["steps"] = json!([]), &[("unknown-field", "/steps/1/steps")]),
        edit("a graph beside the steps", |v| v["graph"] = json!({"nodes": []}), &[("unknown-field", "/graph")]),
        // ---- metadata whitelist (B-007 §6)
        edit("extra metadata key", |v| v["metadata"]["retries"] = json!(3), &[("unknown-field", "/metadata/retries")]),
        edit(
            "extra timeouts key",
            |v| v["metadata"]["timeouts"]["dbMs"] = json!(3),
            &[("unknown-field", "/metadata/timeouts/dbMs")],
        ),
        edit(
            "inline metadata in a payload",
            |v| steps(v)[1]["payload"]["topK"] = json!(5),
            &[("unknown-field", "/steps/1/payload/topK")],
        ),
        edit(
            "metadata missing",
            |v| {
                obj(v).remove("metadata");
            },
            &[("missing-field", "/metadata")],
        ),
        edit(
            "mode missing",
            |v| {
                obj(&mut v["metadata"]).remove("mode");
            },
            &[("missing-field", "/metadata/mode")],
        ),
        edit(
            "empty policyProfile",
            |v| v["metadata"]["policyProfile"] = json!(""),
            &[("invalid-value", "/metadata/policyProfile")],
        ),
        edit(
            "timeout zero",
            |v| v["metadata"]["timeouts"]["llmMs"] = json!(0),
            &[("invalid-value", "/metadata/timeouts/llmMs")],
        ),
        edit(
            "timeout negative",
            |v| v["metadata"]["timeouts"]["ioMs"] = json!(-5),
            &[("invalid-value", "/metadata/timeouts/ioMs")],
        ),
        edit(
            "budget as a string",
            |v| v["metadata"]["budgets"]["promptTokens"] = json!("4000"),
            &[("invalid-type", "/metadata/budgets/promptTokens")],
        ),
        edit("metadata as an array", |v| v["metadata"] = json!([]), &[("invalid-type", "/metadata")]),
        edit(
            "metadata as an array of its fields in order",
            |v| v["metadata"] = json!(["profiles/default", "chat"]),
            &[("invalid-type", "/metadata")],
        ),
        edit(
            "a payload as an array of its fields in order",
            |v| steps(v)[0]["payload"] = json!(["."]),
            &[("invalid-type", "/steps/0/payload")],
        ),
        edit(
            "a decision as an array of its fields",
            |v| steps(v)[8]["payload"]["decision"] = json!(["d", "d", 1, "t", "s", "global", true]),
            &[("invalid-type", "/steps/8/payload/decision")],
        ),
        edit("the plan as an array", |v| *v = json!(["1", [], {}, [], [], []]), &[("invalid-type", "")]),
        // ---- validator signatures (D-021)
        edit(
            "bad config_hash",
            |v| v["validators"][0]["config_hash"] = json!("ABC"),
            &[("invalid-value", "/validators/0/config_hash")],
        ),
        edit(
            "validator without version",
            |v| {
                obj(&mut v["validators"][0]).remove("version");
            },
            &[("missing-field", "/validators/0/version")],
        ),
        edit(
            "validator with extra field",
            |v| {
                v["postValidators"] =
                    json!([{"id": "x", "version": "1", "config_hash": "0".repeat(64), "mode": "strict"}])
            },
            &[("unknown-field", "/postValidators/0/mode")],
        ),
        edit("validators not an array", |v| v["validators"] = json!({}), &[("invalid-type", "/validators")]),
        // ---- strict payloads (B-007 §3)
        edit(
            "unknown payload field",
            |v| steps(v)[0]["payload"]["depth"] = json!(2),
            &[("unknown-field", "/steps/0/payload/depth")],
        ),
        edit(
            "missing payload field",
            |v| {
                obj(&mut steps(v)[1]["payload"]).remove("sources");
            },
            &[("missing-field", "/steps/1/payload/sources")],
        ),
        edit(
            "payload of the wrong type",
            |v| steps(v)[1]["payload"]["sources"] = json!("repo"),
            &[("invalid-type", "/steps/1/payload/sources")],
        ),
        edit(
            "wrong item type in an array",
            |v| steps(v)[1]["payload"]["sources"][1] = json!(7),
            &[("invalid-type", "/steps/1/payload/sources/1")],
        ),
        edit(
            "null for an optional field",
            |v| steps(v)[3]["payload"]["currentDomain"] = Value::Null,
            &[("invalid-type", "/steps/3/payload/currentDomain")],
        ),
        edit(
            "vars not an object",
            |v| steps(v)[4]["payload"]["vars"] = json!([]),
            &[("invalid-type", "/steps/4/payload/vars")],
        ),
        edit(
            "payload not an object",
            |v| steps(v)[6]["payload"] = json!("text"),
            &[("invalid-type", "/steps/6/payload")],
        ),
        edit(
            "payload missing",
            |v| {
                obj(&mut steps(v)[6]).remove("payload");
            },
            &[("missing-field", "/steps/6/payload")],
        ),
        edit(
            "decision with an unknown field",
            |v| steps(v)[8]["payload"]["decision"]["owner"] = json!("me"),
            &[("unknown-field", "/steps/8/payload/decision/owner")],
        ),
        edit(
            "decision version zero",
            |v| steps(v)[8]["payload"]["decision"]["version"] = json!(0),
            &[("invalid-value", "/steps/8/payload/decision/version")],
        ),
        edit(
            "decision isActive as a string",
            |v| steps(v)[8]["payload"]["decision"]["isActive"] = json!("yes"),
            &[("invalid-type", "/steps/8/payload/decision/isActive")],
        ),
        edit(
            "decision scope outside the three forms",
            |v| steps(v)[8]["payload"]["decision"]["scope"] = json!("local"),
            &[("invalid-value", "/steps/8/payload/decision/scope")],
        ),
        edit(
            "evidence without source",
            |v| {
                obj(&mut steps(v)[9]["payload"]["evidence"]).remove("source");
            },
            &[("missing-field", "/steps/9/payload/evidence/source")],
        ),
        // ---- step ids (B-007 §4)
        edit("empty step id", |v| steps(v)[0]["id"] = json!(""), &[("invalid-value", "/steps/0/id")]),
        edit(
            "step id over 128 characters",
            |v| steps(v)[0]["id"] = json!("s".repeat(129)),
            &[("invalid-value", "/steps/0/id")],
        ),
        edit(
            "step id with a control character",
            |v| steps(v)[0]["id"] = json!("a\nb"),
            &[("invalid-value", "/steps/0/id")],
        ),
        edit("step id as a number", |v| steps(v)[0]["id"] = json!(1), &[("invalid-type", "/steps/0/id")]),
        edit(
            "step id missing",
            |v| {
                obj(&mut steps(v)[0]).remove("id");
            },
            &[("missing-field", "/steps/0/id")],
        ),
        edit("duplicate step id", |v| steps(v)[1]["id"] = json!("scan"), &[("duplicate-step-id", "/steps/1/id")]),
        // ---- registry and order (PRD-007 §3–4, B-007 §1, §4)
        edit(
            "unknown step type with a suggestion",
            |v| steps(v)[5]["type"] = json!("LLMCal"),
            &[("unknown-step-type", "/steps/5/type")],
        ),
        edit("unknown step type", |v| steps(v)[0]["type"] = json!("Branch"), &[("unknown-step-type", "/steps/0/type")]),
        edit("type as a number", |v| steps(v)[0]["type"] = json!(3), &[("invalid-type", "/steps/0/type")]),
        edit(
            "duplicate step type",
            |v| {
                let extra =
                    json!({"id": "ctx2", "type": "ContextSelect", "payload": {"input": "again", "sources": []}});
                steps(v).insert(2, extra);
            },
            &[("duplicate-step-type", "/steps/2/type")],
        ),
        edit("two steps swapped", |v| steps(v).swap(4, 5), &[("order-violation", "/steps/5/type")]),
        edit(
            "PersistSession not last",
            |v| {
                let s = steps(v).pop().unwrap();
                steps(v).insert(7, s);
            },
            &[
                ("order-violation", "/steps/8/type"),
                ("order-violation", "/steps/9/type"),
                ("order-violation", "/steps/10/type"),
                ("order-violation", "/steps/11/type"),
            ],
        ),
        edit(
            "mandatory step missing in the middle",
            |v| remove_step(v, "PromptAssemble"),
            &[("missing-mandatory-step", "/steps")],
        ),
        edit(
            "no steps at all",
            |v| v["steps"] = json!([]),
            &[
                ("missing-mandatory-step", "/steps"),
                ("missing-mandatory-step", "/steps"),
                ("missing-mandatory-step", "/steps"),
                ("missing-mandatory-step", "/steps"),
            ],
        ),
        edit(
            "steps missing",
            |v| {
                obj(v).remove("steps");
            },
            &[("missing-field", "/steps")],
        ),
        edit("steps not an array", |v| v["steps"] = json!({}), &[("invalid-type", "/steps")]),
        edit("a step that is not an object", |v| steps(v)[0] = json!("RepoScan"), &[("invalid-type", "/steps/0")]),
        // ---- topK (D-007 metadata enforcement, B-007 §6)
        edit(
            "RetrieveMemory without metadata.topK",
            |v| {
                obj(&mut v["metadata"]).remove("topK");
            },
            &[("top-k-missing", "/metadata/topK")],
        ),
        edit(
            "payload topK differs from metadata",
            |v| steps(v)[2]["payload"]["topK"] = json!(3),
            &[("top-k-mismatch", "/steps/2/payload/topK")],
        ),
        edit("metadata topK zero", |v| v["metadata"]["topK"] = json!(0), &[("invalid-value", "/metadata/topK")]),
        edit(
            "metadata topK fractional",
            |v| v["metadata"]["topK"] = json!(5.5),
            &[("invalid-value", "/metadata/topK")],
        ),
        edit(
            "payload topK missing",
            |v| {
                obj(&mut steps(v)[2]["payload"]).remove("topK");
            },
            &[("missing-field", "/steps/2/payload/topK")],
        ),
        // ---- every problem at once
        edit(
            "several problems in one report",
            |v| {
                v["metadata"]["extra"] = json!(true);
                steps(v)[1]["onSuccess"] = json!("x");
                steps(v)[2]["id"] = json!("scan");
                steps(v).swap(6, 7);
            },
            &[
                ("unknown-field", "/metadata/extra"),
                ("unknown-field", "/steps/1/onSuccess"),
                ("duplicate-step-id", "/steps/2/id"),
                ("order-violation", "/steps/7/type"),
            ],
        ),
    ]
}

fn text_of(input: &Input) -> (String, Option<Value>) {
    match input {
        Input::Edit(f) => {
            let mut v = full();
            f(&mut v);
            (serde_json::to_string(&v).unwrap(), Some(v))
        }
        Input::Raw(s) => (s.clone(), None),
    }
}

fn outcome(r: Result<ValidPlan, planlock_contract::Rejection>) -> (Vec<(String, String)>, Option<FailureKind>) {
    match r {
        Ok(_) => (Vec::new(), None),
        Err(e) => {
            let class = e.class();
            let problems =
                e.problems().iter().map(|p| (p.code().as_str().to_owned(), p.pointer().to_owned())).collect();
            (problems, Some(class))
        }
    }
}

/// One case as every language's suite reads it: the plan's text and the validator's report
/// (`ok`, the class, every problem with its code, class, pointer and message). Trailing spaces
/// past 1 KiB are written as their count (`pad`), so the 1 MiB case stays small on disk.
fn shared(name: &str, text: &str) -> Value {
    let report = match ValidPlan::from_str(text) {
        Ok(_) => json!({ "ok": true, "class": null, "problems": [] }),
        Err(e) => json!({ "ok": false, "class": e.class().as_str(), "problems": e.problems() }),
    };
    let kept = text.trim_end_matches(' ');
    let pad = text.len() - kept.len();
    match pad > 1024 {
        true => json!({ "name": name, "plan": kept, "pad": pad, "report": report }),
        false => json!({ "name": name, "plan": text, "report": report }),
    }
}

/// Compares `value` with the shared file `name` under `tests/corpus/`, or writes it there when
/// `PLANLOCK_BLESS` is set (after a change to a table here).
fn agrees_with_file(name: &str, value: &Value) {
    let path = crate::repo().join("tests/corpus").join(name);
    let text = serde_json::to_string_pretty(value).unwrap() + "\n";
    if std::env::var_os("PLANLOCK_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == text,
        "{} differs from the table: run `PLANLOCK_BLESS=1 cargo test -p planlock-contract --test it corpus`",
        path.display()
    );
}

/// The corpus, shared with the Python and Node suites (CONTRACT §17): `tests/corpus/validate.json`
/// is this table's every case with the report the validator gives, and the bindings' tests
/// check that they give the same.
#[test]
fn the_shared_corpus_is_this_table() {
    let all: Vec<Value> = cases().iter().map(|case| shared(case.name, &text_of(&case.input).0)).collect();
    agrees_with_file("validate.json", &Value::Array(all));
}

/// The plan hash's golden vectors, shared the same way (`tests/corpus/hash.json`): a profile's
/// three documents, a plan, and its hash, for the example profile and plans and for plans with
/// floats and non-ASCII keys.
#[test]
fn the_shared_hash_vectors_are_this_table() {
    let here = crate::repo();
    let read = |p: &str| std::fs::read_to_string(here.join(p)).unwrap();
    let example =
        ["modes.yaml", "triggers.yaml", "bundles.yaml"].map(|f| read(&format!("examples/policy/profiles/default/{f}")));
    let small = ["chat:\n  tone: friendly\n".to_owned(), "[]\n".to_owned(), "{}\n".to_owned()];
    let mut floats = full();
    steps(&mut floats)[5]["payload"]["config"] = json!({ "temperature": 0.7, "top_p": 1e-3, "n": 1.0 });
    let mut korean = full();
    steps(&mut korean)[4]["payload"]["vars"]["질문"] = json!("키를 어떻게 교체하나요? \u{1f511}");
    let plans = [
        ("the demo plan", read("examples/plans/demo_plan.json"), &example),
        ("the reviewed plan", read("examples/plans/reviewed_plan.json"), &example),
        ("the full plan, a small profile", FULL.to_owned(), &small),
        ("floats", serde_json::to_string(&floats).unwrap(), &small),
        ("non-ASCII keys and text", serde_json::to_string(&korean).unwrap(), &small),
    ];
    let vectors: Vec<Value> = plans
        .iter()
        .map(|(name, plan, documents)| {
            let valid = ValidPlan::from_str(plan).unwrap();
            let profile_path = valid.metadata().policy_profile.clone();
            let [m, t, b] = documents.each_ref().map(String::as_str);
            let profile = planlock_contract::PolicyProfile::from_documents(&profile_path, [m, t, b]).unwrap();
            let hash = planlock_contract::hash::plan_hash(&profile, &valid);
            json!({ "name": name, "profile": profile_path, "documents": documents, "plan": plan, "hash": hash.to_string() })
        })
        .collect();
    agrees_with_file("hash.json", &Value::Array(vectors));
}

#[test]
fn corpus() {
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    for case in cases() {
        let (text, value) = text_of(&case.input);
        let (got, class) = outcome(ValidPlan::from_str(&text));
        let want: Vec<(String, String)> = case.expect.iter().map(|(c, p)| (c.to_string(), p.to_string())).collect();
        if got != want {
            failures.push(format!("{}:\n   want {want:?}\n    got {got:?}", case.name));
            continue;
        }
        let want_class = case
            .expect
            .iter()
            .filter_map(|(c, _)| ProblemCode::ALL.iter().find(|k| k.as_str() == *c))
            .map(|c| c.class())
            .max();
        assert_eq!(class, want_class, "{}", case.name);
        covered.extend(case.expect.iter().map(|(c, _)| c.to_string()));
        // A JSON value goes through the walker directly; it must agree with the bytes path.
        if let Some(v) = value {
            let (from_value, _) = outcome(ValidPlan::from_value(&v));
            if from_value != want {
                failures.push(format!("{} (from_value):\n   want {want:?}\n    got {from_value:?}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{} case(s) failed:\n{}", failures.len(), failures.join("\n"));
    let missing: Vec<_> = ProblemCode::ALL.iter().map(|c| c.as_str()).filter(|c| !covered.contains(*c)).collect();
    assert!(missing.is_empty(), "codes without a corpus case: {missing:?}");
}

#[test]
fn messages_say_what_was_expected() {
    let message = |f: fn(&mut Value)| {
        let mut v = full();
        f(&mut v);
        ValidPlan::from_value(&v).unwrap_err().problems()[0].message().to_owned()
    };
    assert!(message(|v| steps(v)[5]["type"] = json!("LLMCal")).contains("did you mean `LLMCall`?"));
    let order = message(|v| steps(v).swap(4, 5));
    assert!(order.contains("`PromptAssemble` cannot come after `LLMCall`"), "{order}");
    assert!(order.contains("allowed after `LLMCall`: `SummarizeMemory`"), "{order}");
    assert!(message(|v| steps(v)[1]["onSuccess"] = json!(1)).contains("plans are flat"));
    assert!(message(|v| remove_step(v, "LLMCall")).contains("no `LLMCall` step"));
    assert!(message(|v| v["step_contract_version"] = json!("2")).contains("implements \"1\""));
    assert!(message(|v| steps(v)[2]["payload"]["topK"] = json!(3)).contains("metadata.topK is 5"));
}

#[test]
fn valid_plans_round_trip_exactly() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    let json = plan.to_json();
    let again = ValidPlan::from_str(&json).unwrap();
    assert_eq!(plan, again);
    assert_eq!(again.to_json(), json);
    // The library's own form equals the document's data model.
    assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), full());
}

#[test]
fn legacy_plans_read_validators_as_empty() {
    let mut v = full();
    obj(&mut v).remove("postValidators");
    let plan = ValidPlan::from_value(&v).unwrap();
    assert!(plan.plan().post_validators.is_empty());
    assert!(plan.to_json().contains(r#""postValidators":[]"#));
}

#[test]
fn reader_input_and_read_errors() {
    let plan = ValidPlan::from_reader(FULL.as_bytes()).unwrap();
    assert_eq!(plan.steps().len(), 12);
    struct Broken;
    impl std::io::Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let err = ValidPlan::from_reader(Broken).unwrap_err();
    assert_eq!(err.code(), "io-error");
}

#[test]
fn bytes_that_are_not_utf8_are_rejected_with_a_pointer() {
    // `from_slice` checks UTF-8 once for the whole document before parsing; a bad byte anywhere
    // still gets the full report.
    let mut bytes = FULL.replacen(r#""id": "scan""#, "\"id\": \"sc\u{FFFD}an\"", 1).into_bytes();
    let at = bytes.windows(3).position(|w| w == "\u{FFFD}".as_bytes()).unwrap();
    bytes.splice(at..at + 3, [0xFF]);
    let r = ValidPlan::from_slice(&bytes).unwrap_err();
    let problems: Vec<(String, String)> =
        r.problems().iter().map(|p| (p.code().to_string(), p.pointer().to_string())).collect();
    assert_eq!(problems, [("malformed-json".to_string(), "/steps/0/id".to_string())]);
    assert_eq!(r.class(), planlock_contract::FailureKind::CycleFail);
    // Lossily decoded, it is a different (valid UTF-8) document, and a valid plan.
    assert!(ValidPlan::from_str(&String::from_utf8_lossy(&bytes)).is_ok());
}

#[test]
fn a_bom_and_a_lone_surrogate_are_named_in_the_message() {
    let bom = ValidPlan::from_str(&format!("\u{feff}{FULL}")).unwrap_err();
    let message = bom.problems()[0].message();
    assert!(message.contains("byte order mark"), "{message}");
    for (what, escape) in [("leading", "\\ud800"), ("trailing", "\\udc00")] {
        let doc = FULL.replace("Rotate the key in the vault", escape);
        let rejection = ValidPlan::from_str(&doc).unwrap_err();
        let message = rejection.problems()[0].message();
        assert!(message.starts_with("lone surrogate escape at line"), "{what}: {message}");
        assert!(!message.contains("hex escape"), "{what}: {message}");
    }
}

/// The committed JSON Schema against the corpus: a plan the schema rejects, planlock rejects
/// (so a producer who passes planlock's checks never fails the schema); and where the schema
/// accepts a plan planlock rejects, every problem is one of the rules the schema's description
/// says only planlock checks (so the schema is as tight as JSON Schema allows).
#[test]
fn the_json_schema_rejects_only_what_planlock_rejects() {
    const ONLY_PLANLOCK: &[&str] = &[
        "order-violation",
        "missing-mandatory-step",
        "duplicate-step-type",
        "duplicate-step-id",
        "top-k-missing",
        "top-k-mismatch",
        "duplicate-key",
        "too-large",
        "too-deep",
    ];
    let schema: Value = serde_json::from_str(include_str!("../../../schema/plan-v1.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let (mut both_reject, mut only_planlock, mut both_accept) = (0, 0, 0);
    let mut failures = Vec::new();
    for case in cases() {
        let (text, _) = text_of(&case.input);
        // Text that is not JSON (or that serde_json reads another way) no schema tool accepts.
        let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
        let schema_accepts = validator.is_valid(&value);
        let planlock_accepts = case.expect.is_empty();
        match (schema_accepts, planlock_accepts) {
            (true, true) => both_accept += 1,
            (false, false) => both_reject += 1,
            (false, true) => {
                let why: Vec<String> =
                    validator.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
                failures.push(format!("{}: planlock accepts, the schema rejects: {why:?}", case.name));
            }
            (true, false) => {
                only_planlock += 1;
                // A number outside planlock's range is `invalid-value` too: allowed only where
                // the message says so.
                let plan_only = |(code, pointer): &(&str, &str)| {
                    ONLY_PLANLOCK.contains(code)
                        || (*code == "invalid-value" && number_beyond_the_schema(&value, pointer))
                };
                if !case.expect.iter().all(plan_only) {
                    failures.push(format!("{}: the schema accepts what it could reject: {:?}", case.name, case.expect));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!(
        "schema and planlock accept {both_accept}, both reject {both_reject}, only planlock rejects {only_planlock}"
    );
    assert!(both_accept >= 3 && both_reject >= 30 && only_planlock >= 8, "{both_accept} {both_reject} {only_planlock}");
}

/// Whether `pointer` names a number the schema cannot hold to planlock's limits: one beyond
/// 2^53-1 (free-form values have no schema), or an integer written with a fraction (`1.0` is an
/// integer to JSON Schema).
fn number_beyond_the_schema(value: &Value, pointer: &str) -> bool {
    let Some(Value::Number(n)) = value.pointer(pointer) else { return false };
    let within = |m: u64| m <= planlock_contract::MAX_SAFE_INTEGER;
    !(n.as_u64().is_some_and(within) || n.as_i64().is_some_and(|i| within(i.unsigned_abs())))
}

/// `canonical_json` reads its text as a plan is read: a key twice, a lone surrogate or a text
/// past a plan's bound is refused, never repaired (the bindings call it for both languages).
#[test]
fn canonical_json_reads_as_strictly_as_a_plan() {
    use planlock_contract::producer::canonical_json;
    for bad in
        [&br#"{"a":1,"a":2}"#[..], br#"{"x":{"b":1,"b":1}}"#, br#"["\udfff"]"#, b"\xEF\xBB\xBF{}", br#"{"a":NaN}"#]
    {
        let err = canonical_json(bad).unwrap_err();
        assert_eq!(planlock_contract::Failure::code(&err), "invalid-json", "{}", String::from_utf8_lossy(bad));
    }
    let big = format!("[{}1]", "1,".repeat(planlock_contract::MAX_PLAN_BYTES / 2));
    assert!(canonical_json(big.as_bytes()).unwrap_err().to_string().contains("at most 1048576"));
    assert_eq!(canonical_json(br#"{"b":[1.0,1e21],"a":"\u00e9"}"#).unwrap(), r#"{"a":"é","b":[1,1e+21]}"#);
}

/// The unions `bindings/node/planlock.d.ts` declares between its GENERATED marks, from the code
/// tables: every problem code, every error code of a producer's call, every step type. The
/// TypeScript types cannot drift from the library (`PLANLOCK_BLESS=1` rewrites them).
#[test]
fn the_typescript_unions_are_the_code_tables() {
    let union = |name: &str, doc: &str, items: Vec<&str>| {
        let items: Vec<String> = items.iter().map(|i| format!("  | '{i}'")).collect();
        format!("/** {doc} */\nexport type {name} =\n{};\n", items.join("\n"))
    };
    let generated = [
        union(
            "ProblemCode",
            "A validation problem's stable code.",
            ProblemCode::ALL.iter().map(|c| c.as_str()).collect(),
        ),
        union(
            "ErrorCode",
            "The stable code of a call's failure.",
            planlock_contract::producer::ProducerError::CODES.to_vec(),
        ),
        union(
            "StepType",
            "A step type, in canonical order.",
            planlock_contract::StepType::ALL.iter().map(|t| t.wire_name()).collect(),
        ),
    ]
    .join("");
    let path = crate::repo().join("bindings/node/planlock.d.ts");
    let text = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("// BEGIN GENERATED\n", "// END GENERATED\n");
    let (head, rest) = text.split_once(begin).expect("the BEGIN GENERATED mark");
    let (_, tail) = rest.split_once(end).expect("the END GENERATED mark");
    let written = format!("{head}{begin}{generated}{end}{tail}");
    if std::env::var_os("PLANLOCK_BLESS").is_some() {
        std::fs::write(&path, &written).unwrap();
    }
    assert!(
        written == text,
        "{} differs from the tables: run `PLANLOCK_BLESS=1 cargo test -p planlock-contract --test it corpus`",
        path.display()
    );
}
