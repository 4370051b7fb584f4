//! Canonical JSON (RFC 8785): the RFC's vectors, ECMAScript numbers, escapes, and a
//! differential test against `serde_json_canonicalizer` on any value and on plans.

use planlock_contract::Failure;
use planlock_contract::{ValidPlan, canonical_json};
use serde_json::{Value, json};

const FULL: &str = include_str!("../../../tests/fixtures/full_plan.json");

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
    fn a_value_json_cannot_hold_is_an_error_with_its_code() {
        // A map whose keys are not strings has no JSON form, canonical or not.
        let map: std::collections::BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into_iter().collect();
        let err = canonical_json(&map).unwrap_err();
        assert_eq!(err.code(), "canonical-json");
        assert!(err.to_string().contains("key must be a string"), "{err}");
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
}
