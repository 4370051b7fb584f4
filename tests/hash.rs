//! Canonical JSON (RFC 8785) vectors, the plan hash over the policy profile, and the YAML subset.

use planlock::profile::PolicyProfile;
use planlock::{ValidPlan, canonical_json, plan_hash};
use serde_json::{Value, json};

fn jcs(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap();
    String::from_utf8(canonical_json(&v).unwrap()).unwrap()
}

#[test]
fn rfc8785_values_example() {
    // RFC 8785 §3.2.2.
    let input = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    assert_eq!(
        jcs(input),
        r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
    );
}

#[test]
fn rfc8785_sorting_example_uses_utf16_code_units() {
    // RFC 8785 §3.2.3: U+1F600 (a surrogate pair, 0xD83D…) sorts before U+FB33.
    let input = r#"{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}"#;
    let out = jcs(input);
    let keys: Vec<String> = {
        let v: serde_json::Map<String, Value> = serde_json::from_str(&out).unwrap();
        // Map order is not preserved by serde_json; read the order from the text instead.
        let mut ks: Vec<(usize, String)> =
            v.keys().map(|k| (out.find(&format!("\"{}\"", escape(k))).unwrap(), k.clone())).collect();
        ks.sort();
        ks.into_iter().map(|(_, k)| k).collect()
    };
    assert_eq!(keys, ["\r", "1", "\u{80}", "ö", "€", "😀", "\u{fb33}"]);
}

fn escape(k: &str) -> String {
    let s = serde_json::to_string(k).unwrap();
    s[1..s.len() - 1].to_owned()
}

#[test]
fn numbers_print_as_ecmascript_does() {
    for (input, want) in [
        ("1.0", "1"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("1e21", "1e+21"),
        ("1e20", "100000000000000000000"),
        ("1e-7", "1e-7"),
        ("0.000001", "0.000001"),
        ("123.456", "123.456"),
        ("9007199254740991", "9007199254740991"),
        ("-5", "-5"),
        ("0.1", "0.1"),
        ("5e-324", "5e-324"),
    ] {
        assert_eq!(jcs(&format!("[{input}]")), format!("[{want}]"), "{input}");
    }
}

#[test]
fn strings_escape_only_what_jcs_escapes() {
    assert_eq!(jcs(r#"["\u0000\u0001\u001f"]"#), r#"["\u0000\u0001\u001f"]"#);
    assert_eq!(jcs(r#"["\b\t\n\f\r"]"#), r#"["\b\t\n\f\r"]"#);
    assert_eq!(jcs(r#"["\/é€😀\u007f"]"#), "[\"/é€😀\u{7f}\"]");
    assert_eq!(jcs(r#"{"b":[],"a":{"d":1,"c":2}}"#), r#"{"a":{"c":2,"d":1},"b":[]}"#);
}

const FULL: &str = include_str!("fixtures/full_plan.json");

fn profile() -> PolicyProfile {
    PolicyProfile {
        path: "profiles/default".into(),
        modes: json!({"chat": {"tone": "friendly"}}),
        triggers: json!([{"on": "greeting"}]),
        bundles: json!({}),
    }
}

#[test]
fn legacy_plans_and_empty_validator_lists_hash_the_same() {
    let mut v: Value = serde_json::from_str(FULL).unwrap();
    v["postValidators"] = json!([]);
    let with = ValidPlan::from_value(&v).unwrap();
    v.as_object_mut().unwrap().remove("postValidators");
    let without = ValidPlan::from_value(&v).unwrap();
    assert_eq!(plan_hash(&profile(), &with).unwrap(), plan_hash(&profile(), &without).unwrap());
}

#[test]
fn every_part_of_the_hash_document_changes_the_hash() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    let base = plan_hash(&profile(), &plan).unwrap();
    let mut p = profile();
    p.path = "profiles/other".into();
    assert_ne!(plan_hash(&p, &plan).unwrap(), base);
    let edits: [fn(&mut PolicyProfile); 3] =
        [|p| p.modes = json!({}), |p| p.triggers = json!([]), |p| p.bundles = json!(null)];
    for edit in edits {
        let mut p = profile();
        edit(&mut p);
        assert_ne!(plan_hash(&p, &plan).unwrap(), base);
    }
    let mut v: Value = serde_json::from_str(FULL).unwrap();
    v["validators"][0]["version"] = json!("3");
    assert_ne!(plan_hash(&profile(), &ValidPlan::from_value(&v).unwrap()).unwrap(), base, "validator signatures count");
    // Key order and whitespace of the plan document do not.
    let reordered = ValidPlan::from_str(&FULL.replace("\n", " ")).unwrap();
    assert_eq!(plan_hash(&profile(), &reordered).unwrap(), base);
}

#[test]
fn the_hash_is_sha256_of_the_canonical_document() {
    let plan = ValidPlan::from_str(FULL).unwrap();
    let bytes = planlock::hash::hash_document_bytes(&profile(), &plan).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.starts_with(r#"{"bundles":{},"executionPlan":{"extensions":[],"metadata":{"budgets""#), "{text}");
    assert!(!text.contains(' ') || text.contains("How do I"), "no whitespace outside strings");
    assert_eq!(plan_hash(&profile(), &plan).unwrap(), planlock::Digest::of(&bytes));
}

fn parse(text: &str) -> Result<Value, planlock::yaml::YamlError> {
    planlock::yaml::parse("modes.yaml", text)
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
    // And so not the hash.
    let plan = ValidPlan::from_str(FULL).unwrap();
    let mut a = profile();
    a.modes = parse(block).unwrap();
    let mut b = profile();
    b.modes = parse(flow).unwrap();
    assert_eq!(plan_hash(&a, &plan).unwrap(), plan_hash(&b, &plan).unwrap());
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

#[test]
fn profiles_load_from_the_policy_root_and_stay_inside_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("profiles/default");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.yaml"), "chat: {}\n").unwrap();
    std::fs::write(dir.join("triggers.yaml"), "[]\n").unwrap();
    let err = PolicyProfile::load(root.path(), "profiles/default").unwrap_err();
    assert_eq!(err.code(), "profile-unreadable");
    assert!(err.to_string().contains("bundles.yaml"), "{err}");
    std::fs::write(dir.join("bundles.yaml"), "default: {strategy_provider_id: sql}\n").unwrap();
    let p = PolicyProfile::load(root.path(), "profiles/default").unwrap();
    assert_eq!(p.bundles, json!({"default": {"strategy_provider_id": "sql"}}));
    for bad in ["../profiles/default", "/etc", "profiles/../../x"] {
        assert_eq!(PolicyProfile::load(root.path(), bad).unwrap_err().code(), "profile-path", "{bad}");
    }
    std::fs::write(dir.join("modes.yaml"), "a: *nope\n").unwrap();
    let err = PolicyProfile::load(root.path(), "profiles/default").unwrap_err();
    assert_eq!(err.code(), "yaml");
    assert!(err.to_string().contains("modes.yaml:1:"), "{err}");
}

mod differential {
    //! Our JCS writer against `serde_json_canonicalizer`, a maintained implementation: they must
    //! agree byte for byte on any JSON value and on plans.
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = String> {
        prop_oneof!["[a-zA-Z_]{0,6}", any::<String>(), "[\\u{e000}-\\u{ffff}\\u{10000}-\\u{10ffff}a-z]{1,3}"]
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
            (-1e6f64..1e6).prop_map(|f| json!(f)),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\/]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(5, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(key(), inner, 0..8).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `value` with every object's members written in the order `seed` picks, not sorted: the
    /// writer must sort them itself (as it must for a struct or a `HashMap`).
    struct Shuffled<'a>(&'a Value, u64);

    impl serde::Serialize for Shuffled<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use serde::ser::{SerializeMap, SerializeSeq};
            match self.0 {
                Value::Object(map) => {
                    let mut members: Vec<_> = map.iter().collect();
                    let n = members.len().max(1) as u64;
                    members.rotate_left((self.1 % n) as usize);
                    if self.1 % 2 == 1 {
                        members.reverse();
                    }
                    let mut m = s.serialize_map(Some(members.len()))?;
                    for (i, (k, v)) in members.into_iter().enumerate() {
                        m.serialize_entry(k, &Shuffled(v, self.1.rotate_left(i as u32 + 1)))?;
                    }
                    m.end()
                }
                Value::Array(items) => {
                    let mut seq = s.serialize_seq(Some(items.len()))?;
                    for (i, v) in items.iter().enumerate() {
                        seq.serialize_element(&Shuffled(v, self.1.rotate_right(i as u32 + 1)))?;
                    }
                    seq.end()
                }
                other => other.serialize(s),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn sorts_members_that_arrive_in_any_order(v in value(), seed in any::<u64>()) {
            let ours = canonical_json(&Shuffled(&v, seed)).unwrap();
            let theirs = serde_json_canonicalizer::to_vec(&v).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        }

        #[test]
        fn agrees_with_serde_json_canonicalizer_on_any_value(v in value()) {
            let ours = canonical_json(&v).unwrap();
            let theirs = serde_json_canonicalizer::to_vec(&v).unwrap();
            prop_assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        }
    }

    #[test]
    fn repeated_keys_have_no_canonical_form() {
        struct Twice;
        impl serde::Serialize for Twice {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("b", &1)?;
                m.serialize_entry("a", &2)?;
                m.serialize_entry("b", &3)?;
                m.end()
            }
        }
        let err = canonical_json(&Twice).unwrap_err();
        assert!(err.to_string().contains("repeated key"), "{err}");
    }

    #[test]
    fn the_crate_writes_its_plans_in_canonical_key_order() {
        // So hashing never has to reorder: serde_json's plain output, which keeps the order the
        // types write, is already canonical for a plan using every step type.
        let plan = ValidPlan::from_str(FULL).unwrap();
        assert_eq!(
            String::from_utf8(serde_json::to_vec(plan.plan()).unwrap()).unwrap(),
            String::from_utf8(canonical_json(plan.plan()).unwrap()).unwrap()
        );
    }

    #[test]
    fn agrees_on_plans_and_the_hash_document() {
        let plan = ValidPlan::from_str(FULL).unwrap();
        assert_eq!(canonical_json(plan.plan()).unwrap(), serde_json_canonicalizer::to_vec(plan.plan()).unwrap());
        let doc = planlock::hash::hash_document_bytes(&profile(), &plan).unwrap();
        let as_value: Value = serde_json::from_slice(&doc).unwrap();
        assert_eq!(doc, serde_json_canonicalizer::to_vec(&as_value).unwrap());
    }
}
