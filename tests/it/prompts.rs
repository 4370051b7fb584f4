//! `PromptAssemble` with minijinja (`handlers::TemplatePrompts`): the names a template sees,
//! strict undefined variables, errors with line and column, bounded rendering, and a real
//! executor run that feeds earlier results into the prompt.
#![cfg(feature = "prompts")]

use planlock::handler::TestContext;
use planlock::handlers::TemplatePrompts;
use planlock::schema::*;
use planlock::steps::*;
use planlock::{AnyObject, AnyValue, Handler, HandlerError, PositiveInt};
use serde_json::json;

fn payload(template: &str, vars: AnyObject) -> PromptAssemblePayload {
    PromptAssemblePayload { template: template.into(), vars }
}

fn render(test: &TestContext, p: &PromptAssemblePayload) -> Result<String, HandlerError> {
    planlock::block_on(TemplatePrompts::new().call(&test.context(), p)).map(|r| r.prompt)
}

/// A context whose ledger has ContextSelect, RetrieveMemory and RetrieveDecisionContext results.
fn full_ledger(p: &PromptAssemblePayload) -> TestContext {
    TestContext::new("prompt", p.clone())
        .with_step::<ContextSelect>(
            "ctx",
            ContextSelectPayload { input: "hi".into(), sources: vec!["repo".into()] },
            ContextSelectResult { selected_context: vec![AnyValue(json!({"source": "repo", "text": "README"}))] },
        )
        .with_step::<RetrieveMemory>(
            "memory",
            RetrieveMemoryPayload { input: "keys".into(), top_k: PositiveInt::new(2).unwrap() },
            RetrieveMemoryResult {
                items: vec![
                    MemoryItem { id: "m1".into(), summary: "use the vault".into(), timestamp: "t1".into() },
                    MemoryItem { id: "m2".into(), summary: "every 90 days".into(), timestamp: "t2".into() },
                ],
            },
        )
        .with_step::<RetrieveDecisionContext>(
            "decisions",
            RetrieveDecisionContextPayload { input: "keys".into(), current_domain: Some("security".into()) },
            RetrieveDecisionContextResult {
                decisions: vec![Decision {
                    id: "d1".into(),
                    is_active: true,
                    previous_version_id: None,
                    root_id: "d1".into(),
                    scope: "domain:security".into(),
                    strength: "must".into(),
                    text: "Rotate keys every 90 days".into(),
                    version: PositiveInt::MIN,
                }],
                anchors: vec![Anchor { decision_id: "d1".into(), evidence_id: "e1".into() }],
            },
        )
}

#[test]
fn a_template_sees_vars_and_the_earlier_results_under_their_documented_names() {
    let p = payload(
        "Q: {{ question }} ({{ limits.words }} words)\n\
         {% for c in ledger.context %}[{{ c.source }}: {{ c.text }}]{% endfor %}\n\
         {% for m in ledger.memories %}- {{ m.summary }} ({{ m.id }})\n{% endfor %}\
         {% for d in ledger.decisions %}{{ d.strength | upper }}: {{ d.text }} [{{ d.scope }}]{% endfor %}\n\
         {{ ledger.anchors | length }} anchor(s); no repo scan: {{ ledger.repo is none }}",
        AnyObject::new().with("question", "how?").with("limits", json!({"words": 200})),
    );
    let out = render(&full_ledger(&p), &p).unwrap();
    assert_eq!(
        out,
        "Q: how? (200 words)\n[repo: README]\n- use the vault (m1)\n- every 90 days (m2)\n\
         MUST: Rotate keys every 90 days [domain:security]\n1 anchor(s); no repo scan: True"
    );
}

#[test]
fn results_of_steps_the_plan_does_not_have_are_empty_not_undefined() {
    let p = payload(
        "{{ ledger.memories | length }} {{ ledger.decisions | length }} {{ ledger.anchors | length }}",
        AnyObject::new(),
    );
    assert_eq!(render(&TestContext::new("prompt", p.clone()), &p).unwrap(), "0 0 0");
}

#[test]
fn a_prompt_is_text_and_nothing_is_html_escaped() {
    let p = payload(
        "{{ code }} {{ data | tojson }}",
        AnyObject::new().with("code", "<b>a & b</b>").with("data", json!({"k": [1, 2]})),
    );
    assert_eq!(render(&TestContext::new("prompt", p.clone()), &p).unwrap(), r#"<b>a & b</b> {"k": [1, 2]}"#);
}

#[test]
fn an_undefined_variable_is_an_error_naming_line_and_column() {
    let p = payload(
        "Hello {{ name }},\nplease read {{ documnet }}.",
        AnyObject::new().with("name", "Ada").with("document", "x"),
    );
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert_eq!(err.message(), "template error at line 2, column 16: undefined value: `documnet` is undefined");
    // An unknown attribute of a known name too (printing it would be an empty string).
    let p = payload("{{ ledger.memory }}", AnyObject::new());
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().starts_with("template error at line 1, column 4: undefined value"), "{err}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let p = payload("héllo wörld {{ missing }}", AnyObject::new());
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert_eq!(err.message(), "template error at line 1, column 16: undefined value: `missing` is undefined");
}

#[test]
fn a_syntax_error_names_line_and_column() {
    let p = payload("line one\n{% for x in items %}\n{{ x }\n{% endfor %}", AnyObject::new().with("items", json!([1])));
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().starts_with("template error at line 3, column "), "{err}");
    assert!(err.message().contains("syntax error"), "{err}");
}

#[test]
fn the_name_ledger_is_reserved() {
    let p = payload("{{ ledger }}", AnyObject::new().with("ledger", "mine"));
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().contains("`ledger` is reserved"), "{err}");
}

#[test]
fn a_runaway_template_runs_out_of_fuel_instead_of_running_for_long() {
    let p = payload(
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
        AnyObject::new(),
    );
    let started = std::time::Instant::now();
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().contains("fuel"), "{err}");
    // Not a timing assertion on the renderer: a sanity bound far above what the fuel allows.
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // A smaller budget is the caller's to choose.
    let small = payload("{% for i in range(100) %}{{ i }}{% endfor %}", AnyObject::new());
    let test = TestContext::new("prompt", small.clone());
    assert!(planlock::block_on(TemplatePrompts::new().fuel(10).call(&test.context(), &small)).is_err());
    assert!(planlock::block_on(TemplatePrompts::new().call(&test.context(), &small)).is_ok());
}

#[test]
fn a_template_cannot_eat_memory_by_doubling_a_value() {
    // Binding a value to a name is what let a few statements double it without end: refused.
    let p = payload(
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
        AnyObject::new(),
    );
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().starts_with("template refused at line 1, column 1: `{% set %}` is not allowed"), "{err}");
    // Within one expression, fuel counts the bytes built.
    let p = payload("{{ 'x' * 100000000000 }}", AnyObject::new());
    assert!(render(&TestContext::new("prompt", p.clone()), &p).unwrap_err().message().contains("fuel"));
}

#[test]
fn statements_that_bind_or_load_are_refused_by_name() {
    for statement in [
        "set x = 1",
        "with x = 1",
        "macro m()",
        "call m()",
        "include 'x'",
        "import 'x' as y",
        "extends 'x'",
        "block b",
        "autoescape true",
        "do x",
    ] {
        let p = payload(&format!("ok {{% {statement} %}}"), AnyObject::new());
        let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
        let name = statement.split(' ').next().unwrap();
        assert!(err.message().contains(&format!("`{{% {name} %}}` is not allowed")), "{err}");
        assert!(err.message().contains("line 1, column 4"), "{err}");
    }
}

#[test]
fn tojson_and_pprint_write_as_before_and_stop_at_their_bound() {
    let p = payload(
        "{{ data | tojson }}|{{ data | tojson(indent=2) }}|{{ data | tojson(true) }}|{{ data | pprint }}",
        AnyObject::new().with("data", json!({"k": [1, "a"]})),
    );
    let out = render(&TestContext::new("prompt", p.clone()), &p).unwrap();
    let pretty = "{\n  \"k\": [\n    1,\n    \"a\"\n  ]\n}";
    assert_eq!(
        out,
        format!("{{\"k\": [1, \"a\"]}}|{pretty}|{pretty}|{{\n    'k': [\n        1,\n        'a',\n    ],\n}}")
    );
    // A prompt is text: JSON in it is not HTML-escaped either.
    let p = payload("{{ s | tojson }}", AnyObject::new().with("s", "<a href='x'>&</a>"));
    assert_eq!(render(&TestContext::new("prompt", p.clone()), &p).unwrap(), r#""<a href='x'>&</a>""#);
    let big = "y".repeat(planlock::handlers::prompt::MAX_SERIALIZED_BYTES);
    let p = payload("{{ big | tojson }}", AnyObject::new().with("big", big.as_str()));
    let err = render(&TestContext::new("prompt", p.clone()), &p).unwrap_err();
    assert!(err.message().contains("MAX_SERIALIZED_BYTES"), "{err}");
}

#[test]
fn a_render_stops_at_the_steps_deadline() {
    let p = payload(
        "{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}",
        AnyObject::new(),
    );
    let test = TestContext::new("prompt", p.clone()).deadline(std::time::Instant::now());
    // Fuel would stop it too, later: a budget far above what the deadline allows shows which came first.
    let err = planlock::block_on(TemplatePrompts::new().fuel(u64::MAX / 128).call(&test.context(), &p)).unwrap_err();
    assert!(err.message().contains("deadline"), "{err}");
}

#[test]
fn the_deepest_template_allowed_renders_on_a_small_thread_stack() {
    use planlock::handlers::template_check::{MAX_BLOCK_DEPTH, MAX_EXPRESSION_TOKENS};
    // Tokio's worker threads have 2 MiB of stack: the bounds must fit there, in a debug build too.
    let half = MAX_EXPRESSION_TOKENS / 2 - 2;
    let templates = [
        format!("{{{{ 'a'{} }}}}", "|lower".repeat(half)),
        format!("{{{{ {}1 }}}}", "-".repeat(MAX_EXPRESSION_TOKENS - 2)),
        format!("{{{{ x{} }}}}", ".y".repeat(half)),
        format!("{}x{}", "{% if t %}".repeat(MAX_BLOCK_DEPTH), "{% endif %}".repeat(MAX_BLOCK_DEPTH)),
        format!("{{% if f %}}{}{{% else %}}z{{% endif %}}", "{% elif f %}".repeat(MAX_BLOCK_DEPTH - 1)),
    ];
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut y = json!("leaf");
            for _ in 0..half {
                y = json!({ "y": y });
            }
            for t in templates {
                let vars = AnyObject::new().with("t", true).with("f", false).with("x", json!({ "y": y["y"].clone() }));
                let p = payload(&t, vars);
                let out = render(&TestContext::new("prompt", p.clone()), &p);
                assert!(out.is_ok() || !out.as_ref().unwrap_err().message().is_empty(), "{t}");
            }
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
}
