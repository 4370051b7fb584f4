//! The plan grammar's rules, made from the plan's JSON Schema (itself made from the contract's
//! field lists, `contract::json_schema`) and the step registry: the canonical order, the mandatory
//! steps, each type at most once, `topK` agreement, the metadata's fields and version.
//!
//! What makes every plan the grammar describes one the validator accepts, where JSON Schema
//! alone could not: the steps are written in registry order, each type once, the mandatory ones
//! always; each step's id is its type's (`kebab` of the wire name), so ids never repeat; every
//! object's keys come in one order, each once, and a free-form object holds only the keys the
//! request names (none otherwise), its values scalars, so no key repeats; metadata `topK` and
//! `RetrieveMemory`'s come from one choice; strings, lists and numbers are bounded so the
//! document stays under the size and magnitude limits.

use serde_json::{Map, Value};

use super::ir::{Class, Expr, Rules, kebab};
use super::{GrammarError, GrammarRequest, MAX_GRAMMAR_ITEMS, MAX_GRAMMAR_STRING_CHARS, MAX_GRAMMAR_TOP_K};
use crate::contract::registry::{REGISTRY, StepType};
use crate::contract::rules::{DECISION_SCOPE, RECORD_ID, SHA256_HEX, STEP_ID};

/// The most digits of an integer the grammar writes: 15, below 2^53-1's 16.
const MAX_DIGITS: u32 = 15;

/// The rules of the plan grammar for `request`, with `root` the plan.
pub(crate) fn plan_rules(schema: &Value, request: &GrammarRequest) -> Result<Rules, GrammarError> {
    let defs = schema["$defs"].as_object().ok_or_else(|| GrammarError::Schema("the schema has no $defs".into()))?;
    let mut made = Made { defs, request, rules: Rules::default(), top_k: None, variant: String::new() };
    let mut variants = Vec::new();
    // One variant per choice of mode and topK that a plan with RetrieveMemory can make, and
    // one for plans without it (no topK).
    for (mode_index, (mode, top_k)) in made.mode_choices().into_iter().enumerate() {
        let ks: Vec<u64> = match top_k {
            Some(k) => vec![k],
            None => (1..=MAX_GRAMMAR_TOP_K).collect(),
        };
        for k in ks {
            variants.push(made.variant(&format!("m{mode_index}-k{k}"), mode.clone(), Some(k))?);
        }
    }
    let any_mode = made.any_mode();
    variants.push(made.variant("no-memory", any_mode, None)?);
    let body = Expr::alt(variants);
    made.rules.add("root", |_| {
        Expr::seq(vec![Expr::lit(r#"{"step_contract_version":"1","extensions":[],"#), body, Expr::lit("}")])
    });
    Ok(made.rules)
}

/// What the rules are made from, and the variant being made.
struct Made<'a> {
    defs: &'a Map<String, Value>,
    request: &'a GrammarRequest,
    rules: Rules,
    /// The variant's topK: `Some` where its plans have `RetrieveMemory`.
    top_k: Option<u64>,
    /// The variant's rule-name suffix.
    variant: String,
}

impl Made<'_> {
    /// The request's modes, each as the text of `metadata.mode` and its topK if it fixes one;
    /// any non-empty mode without a profile.
    fn mode_choices(&mut self) -> Vec<(Expr, Option<u64>)> {
        if self.request.modes.is_empty() {
            return vec![(self.string(1, MAX_GRAMMAR_STRING_CHARS), None)];
        }
        self.request.modes.iter().map(|m| (json_text(&m.name), m.top_k)).collect()
    }

    /// Any of the request's modes.
    fn any_mode(&mut self) -> Expr {
        let choices = self.mode_choices();
        Expr::alt(choices.into_iter().map(|(mode, _)| mode).collect())
    }

    /// `"metadata":…,"steps":…` of one variant.
    fn variant(&mut self, name: &str, mode: Expr, top_k: Option<u64>) -> Result<Expr, GrammarError> {
        (self.top_k, self.variant) = (top_k, name.to_owned());
        let metadata = self.metadata(mode)?;
        let steps = self.steps()?;
        let rule = format!("plan-{name}");
        Ok(self
            .rules
            .add(&rule, |_| Expr::seq(vec![Expr::lit(r#""metadata":"#), metadata, Expr::lit(r#","steps":"#), steps])))
    }

    /// The metadata object: its fields as the schema has them, `mode` and `policyProfile` as
    /// the request says, `topK` the variant's.
    fn metadata(&mut self, mode: Expr) -> Result<Expr, GrammarError> {
        let schema = self.def("PlanMetadata")?;
        let profile = match &self.request.profile {
            Some(profile) => json_text(profile),
            None => self.string(1, MAX_GRAMMAR_STRING_CHARS),
        };
        let top_k = self.top_k.map(|k| Expr::lit(k.to_string()));
        let fields = self.fields("PlanMetadata", &schema, |key| match key {
            "mode" => Some(Some(mode.clone())),
            "policyProfile" => Some(Some(profile.clone())),
            "topK" => Some(top_k.clone()),
            _ => None,
        })?;
        let name = format!("metadata-{}", self.variant);
        Ok(self.rules.add(&name, |_| object(fields)))
    }

    /// The steps array: the registry's types in canonical order, each at most once, the
    /// mandatory ones always (RetrieveMemory only in a variant with a topK).
    fn steps(&mut self) -> Result<Expr, GrammarError> {
        let mut elements = Vec::new();
        for spec in &REGISTRY {
            if spec.step_type == StepType::RetrieveMemory && self.top_k.is_none() {
                continue;
            }
            elements.push((self.step(spec.step_type)?, spec.mandatory));
        }
        Ok(ordered("[", "]", elements))
    }

    /// One step: `{"id":"<its type's id>","type":"<wire name>","payload":…}`.
    fn step(&mut self, ty: StepType) -> Result<Expr, GrammarError> {
        let payload = format!("{}Payload", payload_name(ty));
        let payload_rule = self.def_rule(&payload)?;
        let name = format!("{}-step{}", kebab(ty.wire_name()), self.suffix_of(&payload));
        let id = step_id(ty);
        Ok(self.rules.add(&name, |_| {
            Expr::seq(vec![
                Expr::lit(format!(r#"{{"id":"{id}","type":"{}","payload":"#, ty.wire_name())),
                payload_rule,
                Expr::lit("}"),
            ])
        }))
    }

    /// The rule-name suffix of definition `name`: the variant's topK for the one that holds it.
    fn suffix_of(&self, name: &str) -> String {
        match (name, self.top_k) {
            ("RetrieveMemoryPayload", Some(k)) => format!("-k{k}"),
            _ => String::new(),
        }
    }

    fn def(&self, name: &str) -> Result<Value, GrammarError> {
        self.defs.get(name).cloned().ok_or_else(|| GrammarError::Schema(format!("no definition `{name}`")))
    }

    /// The rule of definition `name` (an object of the schema).
    fn def_rule(&mut self, name: &str) -> Result<Expr, GrammarError> {
        let rule = format!("{}{}", kebab(name), self.suffix_of(name));
        if self.rules.has(&rule) {
            return Ok(Expr::Rule(rule));
        }
        let schema = self.def(name)?;
        let top_k = self.top_k.map(|k| Expr::lit(k.to_string()));
        let fields = self.fields(name, &schema, |key| match (name, key) {
            ("RetrieveMemoryPayload", "topK") => Some(top_k.clone()),
            _ => None,
        })?;
        Ok(self.rules.add(&rule, |_| object(fields)))
    }

    /// An object schema's fields, in its order: each `"key":value` and whether it is required.
    /// `fixed` gives a field's value where the variant sets it (`Some(None)`: left out).
    fn fields(
        &mut self,
        owner: &str,
        schema: &Value,
        fixed: impl Fn(&str) -> Option<Option<Expr>>,
    ) -> Result<Vec<(Expr, bool)>, GrammarError> {
        let required: Vec<&str> =
            schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let mut fields = Vec::new();
        for (key, property) in schema["properties"].as_object().into_iter().flatten() {
            let value = match fixed(key) {
                Some(Some(value)) => value,
                Some(None) => continue,
                None => self.value(owner, key, property)?,
            };
            let must = required.contains(&key.as_str()) || fixed(key).is_some();
            fields.push((Expr::seq(vec![Expr::lit(format!("{}:", json_quoted(key))), value]), must));
        }
        Ok(fields)
    }

    /// The expression of one value of the schema, field `key` of `owner`.
    fn value(&mut self, owner: &str, key: &str, schema: &Value) -> Result<Expr, GrammarError> {
        if let Some(reference) = schema["$ref"].as_str() {
            let name = reference.trim_start_matches("#/$defs/");
            return self.def_rule(name);
        }
        match schema["type"].as_str() {
            Some("string") => self.string_of(schema),
            Some("integer") => Ok(integer(schema["minimum"].as_u64().unwrap_or(0))),
            Some("boolean") => Ok(Expr::alt(vec![Expr::lit("true"), Expr::lit("false")])),
            Some("array") => {
                let item = self.value(owner, key, &schema["items"])?;
                Ok(list(item))
            }
            Some("object") if schema["additionalProperties"] == Value::Bool(true) => Ok(self.free_form(owner, key)),
            _ => Err(GrammarError::Schema(format!("`{owner}.{key}` has a schema the grammar does not know: {schema}"))),
        }
    }

    /// A string field: its length bounds (at most [`MAX_GRAMMAR_STRING_CHARS`]) and its pattern,
    /// which must be one of the contract's string rules.
    fn string_of(&mut self, schema: &Value) -> Result<Expr, GrammarError> {
        let min = schema["minLength"].as_u64().unwrap_or(0) as u32;
        let max =
            schema["maxLength"].as_u64().map_or(MAX_GRAMMAR_STRING_CHARS, |m| m as u32).min(MAX_GRAMMAR_STRING_CHARS);
        let Some(pattern) = schema.get("pattern") else { return Ok(self.string(min, max)) };
        let is = |rule: &crate::contract::rules::StringRule| (rule.schema)()["pattern"] == *pattern;
        if is(&STEP_ID) || is(&RECORD_ID) {
            // No control characters: none unescaped (`StringChar`), and no escape that makes one.
            Ok(self.id_string(min.max(1), max))
        } else if is(&SHA256_HEX) {
            Ok(Expr::seq(vec![Expr::lit("\""), Expr::Class(Class::LowerHex).times(64, 64), Expr::lit("\"")]))
        } else if is(&DECISION_SCOPE) {
            let char = self.char();
            Ok(Expr::alt(vec![
                Expr::lit(r#""global""#),
                Expr::lit(r#""axis""#),
                Expr::seq(vec![Expr::lit(r#""domain:"#), char.times(1, MAX_GRAMMAR_STRING_CHARS), Expr::lit("\"")]),
            ]))
        } else {
            Err(GrammarError::Schema(format!("a string pattern the grammar does not know: {pattern}")))
        }
    }

    fn char(&mut self) -> Expr {
        json_char(&mut self.rules)
    }

    /// A JSON string of `min` to `max` characters none of which is a control character: what
    /// an id is (`STEP_ID`, `RECORD_ID`).
    fn id_string(&mut self, min: u32, max: u32) -> Expr {
        let char = self.rules.add("id-char", |_| {
            let escapes = ["\\\"", "\\\\", "\\/"].map(Expr::lit).to_vec();
            Expr::alt(vec![Expr::Class(Class::StringChar), Expr::alt(escapes)])
        });
        self.rules.add(&format!("id-{min}-{max}"), |_| {
            Expr::seq(vec![Expr::lit("\""), char.times(min, max), Expr::lit("\"")])
        })
    }

    fn string(&mut self, min: u32, max: u32) -> Expr {
        json_string(&mut self.rules, min, max)
    }

    /// A free-form object: the keys the request names for it, in order, each a scalar; `{}`
    /// where it names none.
    fn free_form(&mut self, owner: &str, key: &str) -> Expr {
        let keys = match (owner, key) {
            ("PromptAssemblePayload", "vars") => &self.request.vars,
            ("LlmCallPayload", "config") => &self.request.config,
            ("PersistSessionPayload", "meta") => &self.request.meta,
            _ => return Expr::lit("{}"),
        };
        if keys.is_empty() {
            return Expr::lit("{}");
        }
        let keys = keys.clone();
        let scalar = self.scalar();
        let fields = keys
            .iter()
            .map(|k| (Expr::seq(vec![Expr::lit(format!("{}:", json_quoted(k))), scalar.clone()]), true))
            .collect();
        object(fields)
    }

    /// A free-form value: a string, a number within 2^53-1, a boolean or null.
    fn scalar(&mut self) -> Expr {
        let string = self.string(0, MAX_GRAMMAR_STRING_CHARS);
        self.rules.add("scalar", |_| {
            let fraction = Expr::seq(vec![Expr::lit("."), Expr::Class(Class::Digit).times(1, MAX_DIGITS)]);
            let number = Expr::seq(vec![
                Expr::alt(vec![Expr::lit("0"), Expr::seq(vec![Expr::lit("-").optional(), integer(1)])]),
                fraction.optional(),
            ]);
            Expr::alt(vec![string, number, Expr::lit("true"), Expr::lit("false"), Expr::lit("null")])
        })
    }
}

/// One character of a JSON string: unescaped, or one of JSON's short escapes (no `\u`, so no
/// lone surrogate).
pub(super) fn json_char(rules: &mut Rules) -> Expr {
    rules.add("char", |_| {
        let escapes = ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"].map(Expr::lit).to_vec();
        Expr::alt(vec![Expr::Class(Class::StringChar), Expr::alt(escapes)])
    })
}

/// A JSON string of `min` to `max` characters.
pub(super) fn json_string(rules: &mut Rules, min: u32, max: u32) -> Expr {
    let char = json_char(rules);
    rules.add(&format!("string-{min}-{max}"), |_| {
        Expr::seq(vec![Expr::lit("\""), char.times(min, max), Expr::lit("\"")])
    })
}

/// The payload type's name in the schema's definitions: `LLMCall`'s is `LlmCall`.
pub(super) fn payload_name(ty: StepType) -> String {
    match ty {
        StepType::LLMCall => "LlmCall".to_owned(),
        other => other.wire_name().to_owned(),
    }
}

/// A step's id in a grammar's plans: its type's, so ids never repeat.
pub(crate) fn step_id(ty: StepType) -> String {
    kebab(ty.wire_name())
}

/// An integer of at least `minimum` (0 or 1), at most 15 digits.
fn integer(minimum: u64) -> Expr {
    let positive =
        Expr::seq(vec![Expr::Class(Class::NonZeroDigit), Expr::Class(Class::Digit).times(0, MAX_DIGITS - 1)]);
    if minimum == 0 { Expr::alt(vec![Expr::lit("0"), positive]) } else { positive }
}

/// A list of up to [`MAX_GRAMMAR_ITEMS`] items.
fn list(item: Expr) -> Expr {
    let more = Expr::seq(vec![Expr::lit(","), item.clone()]).times(0, MAX_GRAMMAR_ITEMS - 1);
    Expr::seq(vec![Expr::lit("["), Expr::seq(vec![item, more]).optional(), Expr::lit("]")])
}

/// An object of these fields, in order, the optional ones present or not.
fn object(fields: Vec<(Expr, bool)>) -> Expr {
    ordered("{", "}", fields)
}

/// `open`, then these elements in order with commas between, each optional one present or not,
/// then `close`. The first element present carries no comma: a choice of which comes first,
/// then the rest each with its comma.
pub(super) fn ordered(open: &str, close: &str, elements: Vec<(Expr, bool)>) -> Expr {
    if elements.is_empty() {
        return Expr::lit(format!("{open}{close}"));
    }
    Expr::seq(vec![Expr::lit(open), ordered_inner(elements), Expr::lit(close)])
}

/// What [`ordered`] writes between `open` and `close`.
pub(super) fn ordered_inner(elements: Vec<(Expr, bool)>) -> Expr {
    let tail = |from: usize| {
        Expr::seq(
            elements[from..]
                .iter()
                .map(|(e, required)| {
                    let with_comma = Expr::seq(vec![Expr::lit(","), e.clone()]);
                    if *required { with_comma } else { with_comma.optional() }
                })
                .collect(),
        )
    };
    let mut firsts = Vec::new();
    let mut all_optional = true;
    for (i, (e, required)) in elements.iter().enumerate() {
        firsts.push(Expr::seq(vec![e.clone(), tail(i + 1)]));
        if *required {
            all_optional = false;
            break;
        }
    }
    let inner = Expr::alt(firsts);
    if all_optional && !inner.is_empty() { inner.optional() } else { inner }
}

/// `text` as a JSON string literal.
pub(super) fn json_quoted(text: &str) -> String {
    ascii_json(&Value::String(text.to_owned()).to_string())
}

/// JSON `text` with every character outside printable ASCII written as a JSON `\uXXXX` escape
/// (a pair for one past U+FFFF): the same JSON, in every syntax and on every terminal, with
/// nothing a reader's escaping would change (a grammar's key `a\u202eb` stays that key).
pub(crate) fn ascii_json(text: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out
}

/// `value` as pretty JSON in printable ASCII, ending in a newline. Newlines of the pretty form
/// are outside strings; every other character past printable ASCII is inside one, where a JSON
/// escape means the same.
pub(super) fn ascii_pretty(value: &Value) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
    let lines: Vec<String> = pretty.lines().map(ascii_json).collect();
    lines.join("\n") + "\n"
}

/// `text` as the grammar's JSON string.
pub(super) fn json_text(text: &str) -> Expr {
    Expr::lit(json_quoted(text))
}
