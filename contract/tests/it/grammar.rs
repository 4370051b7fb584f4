//! The plan grammar (CONTRACT §19), read back from its GBNF text as llama.cpp would read it:
//! soundness (10,000 random walks through it, every one a plan the validator accepts), and
//! completeness where it is cheap (the demo plan, written in the grammar's form, is one of its
//! plans; a plan out of order is not).

use std::collections::HashMap;

use planlock_contract::ValidPlan;
use planlock_contract::grammar::{GrammarFormat, GrammarRequest, grammar};
use serde_json::{Value, json};

/// An expression of a GBNF rule, as this reader understands the text.
#[derive(Debug, Clone)]
pub(crate) enum G {
    Lit(String),
    /// Ranges of code points; `true`: any character but these.
    Class(Vec<(u32, u32)>, bool),
    Rule(String),
    Seq(Vec<G>),
    Alt(Vec<G>),
    Repeat(Box<G>, usize, usize),
}

/// A reader of the GBNF subset planlock writes: rules, literals, character classes, groups,
/// alternatives, `?` and `{m,n}`.
struct Reader<'a> {
    text: &'a [char],
    at: usize,
}

pub(crate) fn read_gbnf(text: &str) -> HashMap<String, G> {
    let mut rules = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (name, body) = line.split_once(" ::= ").unwrap_or_else(|| panic!("not a rule: {line}"));
        let chars: Vec<char> = body.chars().collect();
        let mut reader = Reader { text: &chars, at: 0 };
        let expr = reader.alternatives();
        assert_eq!(reader.at, chars.len(), "rule {name}: left over at {}: {body}", reader.at);
        rules.insert(name.to_owned(), expr);
    }
    rules
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.text.get(self.at).copied()
    }
    fn skip_spaces(&mut self) {
        while self.peek() == Some(' ') {
            self.at += 1;
        }
    }
    fn alternatives(&mut self) -> G {
        let mut alts = vec![self.sequence()];
        while self.peek() == Some('|') {
            self.at += 1;
            alts.push(self.sequence());
        }
        if alts.len() == 1 { alts.remove(0) } else { G::Alt(alts) }
    }
    fn sequence(&mut self) -> G {
        let mut items = Vec::new();
        loop {
            self.skip_spaces();
            match self.peek() {
                None | Some('|') | Some(')') => break,
                _ => items.push(self.postfix()),
            }
        }
        if items.len() == 1 { items.remove(0) } else { G::Seq(items) }
    }
    fn postfix(&mut self) -> G {
        let mut item = self.atom();
        loop {
            match self.peek() {
                Some('?') => {
                    self.at += 1;
                    item = G::Repeat(Box::new(item), 0, 1);
                }
                Some('{') => {
                    let close = self.text[self.at..].iter().position(|c| *c == '}').unwrap() + self.at;
                    let inside: String = self.text[self.at + 1..close].iter().collect();
                    let (min, max) = match inside.split_once(',') {
                        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                        None => (inside.parse().unwrap(), inside.parse().unwrap()),
                    };
                    self.at = close + 1;
                    item = G::Repeat(Box::new(item), min, max);
                }
                _ => return item,
            }
        }
    }
    fn atom(&mut self) -> G {
        match self.peek() {
            Some('"') => {
                self.at += 1;
                let mut lit = String::new();
                while self.peek() != Some('"') {
                    lit.push(self.escaped());
                }
                self.at += 1;
                G::Lit(lit)
            }
            Some('[') => {
                self.at += 1;
                let negated = self.peek() == Some('^');
                if negated {
                    self.at += 1;
                }
                let mut ranges = Vec::new();
                while self.peek() != Some(']') {
                    let from = self.escaped() as u32;
                    let to = if self.peek() == Some('-') && self.text.get(self.at + 1) != Some(&']') {
                        self.at += 1;
                        self.escaped() as u32
                    } else {
                        from
                    };
                    ranges.push((from, to));
                }
                self.at += 1;
                G::Class(ranges, negated)
            }
            Some('(') => {
                self.at += 1;
                let inner = self.alternatives();
                assert_eq!(self.peek(), Some(')'));
                self.at += 1;
                inner
            }
            _ => {
                let start = self.at;
                while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
                    self.at += 1;
                }
                assert!(self.at > start, "unexpected {:?} at {}", self.peek(), self.at);
                G::Rule(self.text[start..self.at].iter().collect())
            }
        }
    }
    /// One character of a literal or class, its escape read.
    fn escaped(&mut self) -> char {
        let c = self.text[self.at];
        self.at += 1;
        if c != '\\' {
            return c;
        }
        let e = self.text[self.at];
        self.at += 1;
        let hex = |reader: &mut Self, n: usize| {
            let digits: String = reader.text[reader.at..reader.at + n].iter().collect();
            reader.at += n;
            char::from_u32(u32::from_str_radix(&digits, 16).unwrap()).unwrap()
        };
        match e {
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'x' => hex(self, 2),
            'u' => hex(self, 4),
            other => other,
        }
    }
}

/// A small deterministic random source (SplitMix64).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Characters a walk picks from for a class: ASCII, the edges of the classes, and text from
/// further out (accents, Hangul, an emoji, separators).
const POOL: &str = " !#$%&'()*+,-./0123456789:;<=>?@AZaz[]^_`{|}~\u{7e}\u{a0}\u{a1}é한\u{2028}\u{feff}😀\u{10ffff}";

fn in_class(c: char, ranges: &[(u32, u32)], negated: bool) -> bool {
    ranges.iter().any(|(a, b)| (*a..=*b).contains(&(c as u32))) != negated
}

/// A random text of `expr`.
pub(crate) fn walk(expr: &G, rules: &HashMap<String, G>, rng: &mut Rng, out: &mut String) {
    match expr {
        G::Lit(text) => out.push_str(text),
        G::Class(ranges, negated) => {
            let pool: Vec<char> = POOL.chars().filter(|c| in_class(*c, ranges, *negated)).collect();
            out.push(pool[rng.below(pool.len())]);
        }
        G::Rule(name) => walk(&rules[name], rules, rng, out),
        G::Seq(items) => items.iter().for_each(|item| walk(item, rules, rng, out)),
        G::Alt(alts) => walk(&alts[rng.below(alts.len())], rules, rng, out),
        G::Repeat(item, min, max) => {
            // Mostly short, now and then up to the bound.
            let span = max - min;
            let n = min + if rng.below(8) == 0 { rng.below(span + 1) } else { rng.below(span.min(4) + 1) };
            (0..n).for_each(|_| walk(item, rules, rng, out));
        }
    }
}

/// Every end position of `expr` matched at `at` in `text`.
fn ends(expr: &G, rules: &HashMap<String, G>, text: &[char], at: usize) -> Vec<usize> {
    let mut found = match expr {
        G::Lit(lit) => {
            let lit: Vec<char> = lit.chars().collect();
            if text[at..].starts_with(&lit) { vec![at + lit.len()] } else { vec![] }
        }
        G::Class(ranges, negated) => match text.get(at) {
            Some(c) if in_class(*c, ranges, *negated) => vec![at + 1],
            _ => vec![],
        },
        G::Rule(name) => ends(&rules[name], rules, text, at),
        G::Seq(items) => items
            .iter()
            .fold(vec![at], |starts, item| starts.iter().flat_map(|s| ends(item, rules, text, *s)).collect()),
        G::Alt(alts) => alts.iter().flat_map(|a| ends(a, rules, text, at)).collect(),
        G::Repeat(item, min, max) => {
            let (mut all, mut frontier) = (Vec::new(), vec![at]);
            for n in 0..=*max {
                if n >= *min {
                    all.extend(&frontier);
                }
                if n == *max || frontier.is_empty() {
                    break;
                }
                frontier = frontier.iter().flat_map(|s| ends(item, rules, text, *s)).collect();
                frontier.sort_unstable();
                frontier.dedup();
            }
            all
        }
    };
    found.sort_unstable();
    found.dedup();
    found
}

pub(crate) fn accepts(rules: &HashMap<String, G>, text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    ends(&rules["root"], rules, &chars, 0).contains(&chars.len())
}

fn gbnf(request: &GrammarRequest) -> HashMap<String, G> {
    read_gbnf(&grammar(request, GrammarFormat::Gbnf).unwrap())
}

#[test]
fn ten_thousand_random_walks_through_the_grammar_are_all_valid_plans() {
    let requests = [
        GrammarRequest::new(),
        GrammarRequest::new().vars(["question", "context"]).config(["model", "temperature"]).meta(["channel"]),
    ];
    let mut rng = Rng(0x706c_616e_6c6f_636b);
    let mut seen_steps = std::collections::BTreeSet::new();
    for request in &requests {
        let rules = gbnf(request);
        for n in 0..5_000 {
            let mut text = String::new();
            walk(&rules["root"], &rules, &mut rng, &mut text);
            let plan =
                ValidPlan::from_str(&text).unwrap_or_else(|r| panic!("walk {n} is not a valid plan: {r}\n{text}"));
            seen_steps.insert(plan.steps().len());
        }
    }
    // The walks reach short plans and whole ones.
    assert!(seen_steps.first() <= Some(&5) && seen_steps.last() == Some(&12), "{seen_steps:?}");
}

#[test]
fn a_profiles_grammar_writes_its_modes_and_top_k() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("profiles/default");
    std::fs::create_dir_all(&profile).unwrap();
    std::fs::write(profile.join("modes.yaml"), "chat:\n  topK: 5\nreview:\n  tone: terse\n").unwrap();
    std::fs::write(profile.join("triggers.yaml"), "[]\n").unwrap();
    std::fs::write(profile.join("bundles.yaml"), "{}\n").unwrap();
    let profile = planlock_contract::PolicyProfile::load(dir.path(), "profiles/default").unwrap();
    let rules = gbnf(&GrammarRequest::new().profile(&profile));
    let mut rng = Rng(7);
    for _ in 0..500 {
        let mut text = String::new();
        walk(&rules["root"], &rules, &mut rng, &mut text);
        let plan: Value = serde_json::from_str(&text).unwrap();
        ValidPlan::from_value(&plan).unwrap();
        assert_eq!(plan["metadata"]["policyProfile"], "profiles/default");
        let memory = plan["steps"].as_array().unwrap().iter().find(|s| s["type"] == "RetrieveMemory");
        match plan["metadata"]["mode"].as_str() {
            Some("chat") if memory.is_some() => assert_eq!(plan["metadata"]["topK"], 5),
            Some("chat" | "review") => {}
            other => panic!("mode {other:?}"),
        }
    }
}

/// The demo plan in the grammar's form: ids its types', keys in the grammar's order, no
/// validators, free-form objects with the request's keys.
fn demo_in_grammar_form() -> Value {
    let demo: Value = serde_json::from_str(include_str!("../../../examples/plans/demo_plan.json")).unwrap();
    let steps: Vec<Value> = demo["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let ty = planlock_contract::StepType::from_wire(s["type"].as_str().unwrap()).unwrap();
            json!({ "id": planlock_contract::grammar::step_id(ty), "type": s["type"], "payload": s["payload"] })
        })
        .collect();
    json!({ "step_contract_version": "1", "extensions": [], "metadata": demo["metadata"], "steps": steps })
}

/// The text of `value` with its keys where the grammar has them: the top level's in the
/// grammar's order, a step's `id`, `type`, `payload`, every other object's sorted (the schema's
/// order).
fn grammar_text(value: &Value, top: bool) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            let order = ["step_contract_version", "extensions", "metadata", "steps", "id", "type", "payload"];
            if top || map.contains_key("payload") {
                keys.sort_by_key(|k| order.iter().position(|o| o == k));
            } else {
                keys.sort();
            }
            let fields: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), grammar_text(&map[*k], false)))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(|v| grammar_text(v, false)).collect::<Vec<_>>().join(","))
        }
        other => other.to_string(),
    }
}

#[test]
fn the_demo_plan_in_the_grammars_form_is_one_of_its_plans_and_one_out_of_order_is_not() {
    let request = GrammarRequest::new()
        .vars(["context", "lang", "limits", "question"])
        .config(["maxTokens", "model", "temperature"])
        .meta(["channel"]);
    let rules = gbnf(&request);
    let mut demo = demo_in_grammar_form();
    // A free-form value is a scalar in the grammar.
    demo["steps"][4]["payload"]["vars"]["limits"] = json!(200);
    let text = grammar_text(&demo, true);
    ValidPlan::from_str(&text).unwrap();
    assert!(accepts(&rules, &text), "{text}");
    // Two steps swapped, a mandatory one left out, a second memory step: none is the grammar's.
    let mut swapped = demo.clone();
    swapped["steps"].as_array_mut().unwrap().swap(1, 2);
    let mut missing = demo.clone();
    missing["steps"].as_array_mut().unwrap().retain(|s| s["type"] != "LLMCall");
    let mut twice = demo.clone();
    let memory = twice["steps"][2].clone();
    twice["steps"].as_array_mut().unwrap().insert(2, memory);
    let mut other_top_k = demo.clone();
    other_top_k["metadata"]["topK"] = json!(4);
    for (what, plan) in [("swapped", swapped), ("missing", missing), ("twice", twice), ("topK", other_top_k)] {
        let text = grammar_text(&plan, true);
        assert!(ValidPlan::from_str(&text).is_err(), "{what}: the validator accepts it");
        assert!(!accepts(&rules, &text), "{what}: the grammar accepts it");
    }
}

#[test]
fn the_lark_grammar_has_the_same_rules() {
    let request = GrammarRequest::new().vars(["question"]);
    let gbnf = grammar(&request, GrammarFormat::Gbnf).unwrap();
    let lark = grammar(&request, GrammarFormat::Lark).unwrap();
    let count = |text: &str, defines: &str| text.lines().filter(|l| l.contains(defines)).count();
    assert_eq!(count(&gbnf, " ::= "), lark.lines().filter(|l| !l.starts_with("//")).count());
    assert!(lark.starts_with("// planlock plan grammar") && lark.contains("\nstart: "), "{lark}");
}

#[test]
fn the_json_schema_profile_is_strict() {
    let schema: Value =
        serde_json::from_str(&grammar(&GrammarRequest::new().vars(["q"]), GrammarFormat::JsonSchema).unwrap()).unwrap();
    fn each(v: &Value, f: &mut dyn FnMut(&serde_json::Map<String, Value>)) {
        match v {
            Value::Object(m) => {
                f(m);
                m.values().for_each(|c| each(c, f));
            }
            Value::Array(a) => a.iter().for_each(|c| each(c, f)),
            _ => {}
        }
    }
    let mut objects = 0;
    each(&schema, &mut |m| {
        assert!(!m.contains_key("oneOf") && !m.contains_key("const"), "{m:?}");
        assert!(!(m.contains_key("pattern") && (m.contains_key("minLength") || m.contains_key("maxLength"))));
        if m.get("type") == Some(&json!("object")) {
            objects += 1;
            assert_eq!(m.get("additionalProperties"), Some(&json!(false)), "{m:?}");
            let properties: Vec<&String> = m["properties"].as_object().unwrap().keys().collect();
            let required: Vec<&str> = m["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            assert_eq!(properties.len(), required.len(), "every property is required: {m:?}");
        }
    });
    assert!(objects > 10);
    // The demo plan, its optional fields written as nulls the way a strict engine would, is
    // the demo plan again once the nulls are out.
    let mut demo = demo_in_grammar_form();
    demo["validators"] = Value::Null;
    demo["steps"][3]["payload"]["currentDomain"] = Value::Null;
    planlock_contract::grammar::remove_optional_nulls(&mut demo);
    assert!(demo.get("validators").is_none());
    ValidPlan::from_value(&demo).unwrap();
}
