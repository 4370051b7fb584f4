//! Policy files as YAML: the JSON-compatible subset of YAML 1.2, with file, line and column in
//! every error.

use serde_json::{Value, json};

fn parse(text: &str) -> Result<Value, planlock_contract::yaml::YamlError> {
    planlock_contract::yaml::parse("modes.yaml", text)
}

#[test]
fn yaml_formatting_and_comments_do_not_change_the_data() {
    let block = "# the modes\nchat:\n  tone: friendly   # trailing comment\n  topK: 5\n  tags:\n    - a\n    - 'b'\nvoice: {tone: calm}\n";
    let flow = "{chat: {tone: \"friendly\", topK: 5, tags: [a, b]}, voice: {tone: calm}}";
    assert_eq!(parse(block).unwrap(), parse(flow).unwrap());
    assert_eq!(
        parse(block).unwrap(),
        json!({"chat": {"tone": "friendly", "topK": 5, "tags": ["a", "b"]}, "voice": {"tone": "calm"}})
    );
}

#[test]
fn yaml_scalars_resolve_by_the_core_schema() {
    let v =
        parse("a: null\nb: ~\nc: true\nd: False\ne: 12\nf: -3.5\ng: 1e3\nh: '12'\ni: hello world\nj:\nk: \"true\"\n")
            .unwrap();
    assert_eq!(
        v,
        json!({"a": null, "b": null, "c": true, "d": false, "e": 12, "f": -3.5, "g": 1000.0, "h": "12", "i": "hello world", "j": null, "k": "true"})
    );
    assert_eq!(parse("").unwrap(), Value::Null);
}

#[test]
fn yaml_outside_the_json_subset_is_an_error_with_file_line_and_column() {
    let cases = [
        ("alias", "a: &x 1\nb: *x\n", 1, "anchors"),
        ("alias only", "a: [1]\nb: *x\n", 2, "not YAML"),
        ("tag", "a: !!str 5\n", 1, "tags"),
        ("custom tag", "a: !thing {b: 1}\n", 1, "tags"),
        ("merge key", "base: {a: 1}\nchild:\n  <<: {a: 2}\n", 3, "merge keys"),
        ("infinity", "a: .inf\n", 1, "not a JSON number"),
        ("negative infinity", "a: -.Inf\n", 1, "not a JSON number"),
        ("not a number", "a: .NaN\n", 1, "not a JSON number"),
        ("integer key", "1: one\n", 1, "not a string"),
        ("boolean key", "true: yes\n", 1, "not a string"),
        ("null key", "~: nothing\n", 1, "not a string"),
        ("collection key", "? [a, b]\n: c\n", 1, "not a collection"),
        ("hex", "a: 0x1F\n", 1, "hex and octal"),
        ("octal", "a: 0o17\n", 1, "hex and octal"),
        ("big integer", "a: 9007199254740992\n", 1, "2^53-1"),
        ("two documents", "a: 1\n---\nb: 2\n", 2, "more than one"),
        ("duplicate key", "a: 1\nb: 2\na: 3\n", 3, "more than once"),
        ("broken", "a: [1, 2\n", 2, "not YAML"),
    ];
    for (name, text, line, words) in cases {
        let err = parse(text).expect_err(name);
        assert_eq!(err.file, "modes.yaml", "{name}");
        assert_eq!(err.line, line, "{name}: {err}");
        assert!(err.column >= 1, "{name}");
        assert!(err.message.contains(words), "{name}: {err}");
        assert!(err.to_string().starts_with(&format!("modes.yaml:{line}:")), "{name}: {err}");
    }
    let deep = format!("a: {}1{}\n", "[".repeat(70), "]".repeat(70));
    assert!(parse(&deep).unwrap_err().message.contains("nesting deeper than 64"));
}
