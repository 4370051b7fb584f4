//! The JSON-compatible subset of YAML 1.2, read into its JSON data model (docs/CONTRACT.md, "Plan
//! hash").
//!
//! Policy files enter the plan hash as data, so comments and formatting never change it. Only
//! what has exactly one JSON reading is accepted: string keys, no merge keys (`<<`), no anchors
//! or aliases, no tags, no `.inf`/`.nan`, no octal or hex integers, one document per file, and
//! the document limits (nesting 64, integers within 2^53 − 1). Anything else is an error that
//! names the file, line and column.

use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::contract::registry::{Failure, FailureKind};
use crate::json::{MAX_DEPTH, MAX_SAFE_INTEGER};

/// A YAML file outside the accepted subset, or not YAML at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct YamlError {
    /// The file, as the caller named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl Failure for YamlError {
    /// `"yaml"`.
    fn code(&self) -> &'static str {
        "yaml"
    }

    fn kind(&self) -> FailureKind {
        FailureKind::FailFast
    }
}

struct Collect {
    events: Vec<(Event, Marker)>,
}

impl MarkedEventReceiver for Collect {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        self.events.push((ev, mark));
    }
}

/// Parses `text` (the contents of `file`) into JSON data.
///
/// ```
/// let v = planlock_contract::yaml::parse("modes.yaml", "# a comment\nchat: { topK: 5, tone: friendly
/// }\n").unwrap(); assert_eq!(v, serde_json::json!({"chat": {"topK": 5, "tone": "friendly"}})); let
/// err = planlock_contract::yaml::parse("modes.yaml", "base: &b {a: 1}\nchat: *b\n").unwrap_err();
/// assert_eq!((err.file.as_str(), err.line, err.column), ("modes.yaml", 1, 10));
/// ```
pub fn parse(file: &str, text: &str) -> Result<Value, YamlError> {
    let err = |mark: &Marker, message: String| YamlError {
        file: file.to_owned(),
        line: mark.line(),
        column: mark.col() + 1,
        message,
    };
    let mut collect = Collect { events: Vec::new() };
    Parser::new_from_str(text)
        .load(&mut collect, true)
        .map_err(|e| err(e.marker(), format!("not YAML: {}", e.info())))?;
    Builder { stack: Vec::new(), done: Vec::new() }.build(collect.events, &err)
}

enum Frame {
    Seq(Vec<Value>),
    Map(Map<String, Value>, Option<String>),
}

struct Builder {
    stack: Vec<Frame>,
    done: Vec<Value>,
}

impl Builder {
    fn build(
        mut self,
        events: Vec<(Event, Marker)>,
        err: &impl Fn(&Marker, String) -> YamlError,
    ) -> Result<Value, YamlError> {
        let mut documents = 0;
        for (event, mark) in events {
            match event {
                Event::DocumentStart => {
                    documents += 1;
                    if documents > 1 {
                        return Err(err(&mark, "more than one YAML document; a policy file holds one".into()));
                    }
                }
                Event::Alias(_) => {
                    return Err(err(&mark, "aliases (`*name`) are not accepted; write the value out".into()));
                }
                Event::Scalar(text, style, anchor, tag) => {
                    no_anchor_or_tag(anchor, tag.as_ref()).map_err(|m| err(&mark, m))?;
                    let expecting_key = matches!(self.stack.last(), Some(Frame::Map(_, None)));
                    if expecting_key {
                        if style == TScalarStyle::Plain && text == "<<" {
                            return Err(err(&mark, "merge keys (`<<`) are not accepted; write the keys out".into()));
                        }
                        if style == TScalarStyle::Plain && !matches!(plain(&text), Ok(Value::String(_))) {
                            return Err(err(
                                &mark,
                                format!("key `{text}` is not a string; quote it (\"{text}\") if a string is meant"),
                            ));
                        }
                        if let Some(Frame::Map(map, key)) = self.stack.last_mut() {
                            if map.contains_key(&text) {
                                return Err(err(&mark, format!("key `{text}` appears more than once in this mapping")));
                            }
                            *key = Some(text);
                        }
                        continue;
                    }
                    let value = match style {
                        TScalarStyle::Plain => plain(&text).map_err(|m| err(&mark, m))?,
                        _ => Value::String(text),
                    };
                    self.push(value);
                }
                Event::SequenceStart(anchor, tag) => {
                    self.open(Frame::Seq(Vec::new()), anchor, tag.as_ref()).map_err(|m| err(&mark, m))?;
                }
                Event::MappingStart(anchor, tag) => {
                    self.open(Frame::Map(Map::new(), None), anchor, tag.as_ref()).map_err(|m| err(&mark, m))?;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let value = match self.stack.pop() {
                        Some(Frame::Seq(items)) => Value::Array(items),
                        Some(Frame::Map(map, _)) => Value::Object(map),
                        None => return Err(err(&mark, "unbalanced collection".into())),
                    };
                    self.push(value);
                }
                Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            }
        }
        Ok(self.done.pop().unwrap_or(Value::Null))
    }

    fn open(&mut self, frame: Frame, anchor: usize, tag: Option<&Tag>) -> Result<(), String> {
        no_anchor_or_tag(anchor, tag)?;
        if matches!(self.stack.last(), Some(Frame::Map(_, None))) {
            return Err("a key must be a string, not a collection".into());
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        self.stack.push(frame);
        Ok(())
    }

    fn push(&mut self, value: Value) {
        match self.stack.last_mut() {
            Some(Frame::Seq(items)) => items.push(value),
            Some(Frame::Map(map, key)) => {
                if let Some(k) = key.take() {
                    map.insert(k, value);
                }
            }
            None => self.done.push(value),
        }
    }
}

fn no_anchor_or_tag(anchor: usize, tag: Option<&Tag>) -> Result<(), String> {
    if anchor != 0 {
        return Err("anchors (`&name`) are not accepted; write each value out".into());
    }
    if let Some(t) = tag {
        return Err(format!("tags (`{}{}`) are not accepted; plain JSON data only", t.handle, t.suffix));
    }
    Ok(())
}

/// Resolves a plain scalar by the YAML 1.2 core schema, within the JSON-compatible subset.
fn plain(text: &str) -> Result<Value, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        _ => {}
    }
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['-', '+']);
    if matches!(unsigned, ".inf" | ".nan") {
        return Err(format!("`{text}` is not a JSON number; quote it if a string is meant"));
    }
    if unsigned.starts_with("0x") || unsigned.starts_with("0o") {
        return Err(format!("`{text}`: hex and octal integers are not accepted; write it in decimal"));
    }
    if is_int(text) {
        let n: i128 = text.parse().map_err(|_| format!("`{text}` is out of range"))?;
        if n.unsigned_abs() > u128::from(MAX_SAFE_INTEGER) {
            return Err(format!("`{text}` has a magnitude above 2^53-1; quote it as a string"));
        }
        let n = i64::try_from(n).map_err(|_| format!("`{text}` is out of range"))?;
        return Ok(Value::Number(Number::from(n)));
    }
    if is_float(text) {
        let f: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
        if !f.is_finite() || f.abs() > MAX_SAFE_INTEGER as f64 {
            return Err(format!("`{text}` has a magnitude above 2^53-1; quote it as a string"));
        }
        return Number::from_f64(f).map(Value::Number).ok_or_else(|| format!("`{text}` is not a number"));
    }
    Ok(Value::String(text.to_owned()))
}

fn is_int(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_float(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((int, frac)) => {
            (!int.is_empty() || !frac.is_empty())
                && int.bytes().all(|b| b.is_ascii_digit())
                && frac.bytes().all(|b| b.is_ascii_digit())
                && !(int.is_empty() && frac.is_empty())
        }
        None => !mantissa.is_empty() && mantissa.bytes().all(|b| b.is_ascii_digit()),
    };
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit())
    });
    mantissa_ok && exponent_ok
}
