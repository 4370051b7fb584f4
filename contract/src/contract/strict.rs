//! The strict JSON reader: serde_json under the contract's limits (no duplicate keys, no lone
//! surrogates, no NaN, nesting within `MAX_DEPTH`, integers within 2^53 - 1). Without a context
//! it fails on the first problem (the fast path and every free-form value); with one it collects
//! every problem with its pointer (the full report).

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::contract::problem::{Problem, ProblemCode};
use crate::json::pointer::{JsonPointer, Seg};
use crate::json::{MAX_DEPTH, MAX_SAFE_INTEGER};

/// Why `n` is outside the document limits (a magnitude above 2^53 - 1), if it is.
pub fn number_problem(n: &serde_json::Number) -> Option<String> {
    let ok = if let Some(u) = n.as_u64() {
        u <= MAX_SAFE_INTEGER
    } else if let Some(i) = n.as_i64() {
        i.unsigned_abs() <= MAX_SAFE_INTEGER
    } else {
        n.as_f64().is_some_and(|f| f.abs() <= MAX_SAFE_INTEGER as f64)
    };
    (!ok).then(|| format!("number {n} has a magnitude above 2^53-1; write it as a string"))
}

/// What the strict parser collects on the full-report path.
#[derive(Default)]
pub struct ParseCtx {
    path: JsonPointer<'static>,
    /// Problems that do not stop parsing (duplicate keys, numbers out of range).
    pub problems: Vec<Problem>,
    /// The problem that stopped parsing, located at the innermost value.
    pub fatal: Option<Problem>,
}

/// Deserializes a [`Value`] under the document limits. Without a context every problem is an
/// error (fast path); with one, non-fatal problems are collected and parsing goes on.
pub struct StrictSeed<'c> {
    pub depth: usize,
    pub ctx: Option<&'c RefCell<ParseCtx>>,
}

impl StrictSeed<'_> {
    fn problem<E: de::Error>(&self, code: ProblemCode, key: Option<&str>, msg: String) -> Result<(), E> {
        match self.ctx {
            None => Err(E::custom(msg)),
            Some(ctx) => {
                let mut ctx = ctx.borrow_mut();
                let pointer = match key {
                    Some(k) => ctx.path.child(k),
                    None => ctx.path.pointer(),
                };
                ctx.problems.push(Problem::new(code, pointer, msg));
                Ok(())
            }
        }
    }
    fn fatal<E: de::Error>(&self, code: ProblemCode, msg: String) -> E {
        if let Some(ctx) = self.ctx {
            let mut ctx = ctx.borrow_mut();
            if ctx.fatal.is_none() {
                let pointer = ctx.path.pointer();
                ctx.fatal = Some(Problem::new(code, pointer, msg.clone()));
            }
        }
        E::custom(msg)
    }
    fn child(&self) -> StrictSeed<'_> {
        StrictSeed { depth: self.depth + 1, ctx: self.ctx }
    }
    fn with_path<T>(&self, seg: Seg<'static>, f: impl FnOnce() -> T) -> T {
        if let Some(ctx) = self.ctx {
            ctx.borrow_mut().path.segs.push(seg);
        }
        let r = f();
        if let Some(ctx) = self.ctx {
            ctx.borrow_mut().path.pop();
        }
        r
    }
    fn check_number<E: de::Error>(&self, n: serde_json::Number) -> Result<Value, E> {
        if let Some(msg) = number_problem(&n) {
            self.problem(ProblemCode::InvalidValue, None, msg)?;
        }
        Ok(Value::Number(n))
    }
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        let ctx = self.ctx;
        let r = d.deserialize_any(&self);
        if let (Err(e), Some(ctx)) = (&r, ctx) {
            let mut ctx = ctx.borrow_mut();
            if ctx.fatal.is_none() {
                let pointer = ctx.path.pointer();
                ctx.fatal = Some(classify_parse_error(&e.to_string(), pointer));
            }
        }
        r
    }
}

/// Maps a parse error raised inside a value to its contract code.
fn classify_parse_error(msg: &str, pointer: String) -> Problem {
    // serde_json reports a lone surrogate escape in these two ways.
    if msg.contains("surrogate") || msg.contains("end of hex escape") {
        let at = msg.find(" at line ").map_or("", |i| &msg[i..]);
        Problem::new(
            ProblemCode::InvalidValue,
            pointer,
            format!(
                "lone surrogate escape{at}: a \\uD800-\\uDFFF escape without its pair is not a Unicode \
                 character, and the plan hash cannot represent it; escape the whole character (both halves of \
                 the pair) or write it as UTF-8"
            ),
        )
    } else {
        Problem::new(ProblemCode::MalformedJson, pointer, format!("not valid JSON: {msg}"))
    }
}

impl<'de> Visitor<'de> for &StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        self.check_number(n.into())
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        self.check_number(n.into())
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        match serde_json::Number::from_f64(n) {
            Some(num) => self.check_number(num),
            None => Err(self.fatal(ProblemCode::InvalidValue, "NaN and infinities are not JSON".into())),
        }
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        StrictSeed { depth: self.depth, ctx: self.ctx }.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(self.fatal(ProblemCode::TooDeep, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let mut items = Vec::new();
        loop {
            let i = items.len();
            match self.with_path(Seg::Index(i), || seq.next_element_seed(self.child()))? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        if self.depth > MAX_DEPTH {
            return Err(self.fatal(ProblemCode::TooDeep, format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let (key, value) = match self.ctx {
                None => {
                    let value = map.next_value_seed(self.child())?;
                    (key, value)
                }
                Some(ctx) => {
                    // The key lives on the path while its value is parsed, then moves on.
                    ctx.borrow_mut().path.segs.push(Seg::Key(Cow::Owned(key)));
                    let value = map.next_value_seed(self.child());
                    let key = match ctx.borrow_mut().path.segs.pop() {
                        Some(Seg::Key(k)) => k.into_owned(),
                        _ => String::new(),
                    };
                    (key, value?)
                }
            };
            match members.entry(key) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(value);
                }
                serde_json::map::Entry::Occupied(e) => {
                    // Keep the first occurrence; the document is rejected either way.
                    let key = e.key();
                    self.problem(
                        ProblemCode::DuplicateKey,
                        Some(key),
                        format!("key `{key}` appears more than once in this object"),
                    )?;
                }
            }
        }
        Ok(Value::Object(members))
    }
}

/// Parses a whole document under the limits, for the full report: the value (or the problem that
/// stopped parsing) and the non-fatal problems found on the way.
pub fn parse_strict(bytes: &[u8]) -> (Result<Value, Problem>, Vec<Problem>) {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        let message = "the document starts with a UTF-8 byte order mark (EF BB BF), which JSON text must not \
                       have (RFC 8259 section 8.1); save the file as UTF-8 without a BOM";
        return (Err(Problem::new(ProblemCode::MalformedJson, String::new(), message)), Vec::new());
    }
    let ctx = RefCell::new(ParseCtx::default());
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = StrictSeed { depth: 1, ctx: Some(&ctx) }.deserialize(&mut de).and_then(|v| de.end().map(|()| v));
    let ParseCtx { problems, fatal, .. } = ctx.into_inner();
    match parsed {
        Ok(v) => (Ok(v), problems),
        Err(e) => {
            let fatal = fatal.unwrap_or_else(|| classify_parse_error(&e.to_string(), String::new()));
            (Err(fatal), problems)
        }
    }
}
