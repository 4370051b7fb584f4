//! A Python value written as JSON text, once, here: what `validate(dict)` and `canonical_json`
//! read, so that a value and its text get the same verdicts (`json.dumps`'s text for the same
//! value: floats as Python writes them, a tuple as an array).
//!
//! Refused, never repaired (a `PlanlockError`, `invalid-json`, saying where): NaN and infinities,
//! a key that is not a `str`, a lone surrogate, a value of another type (a `datetime`, a `set`,
//! `bytes` inside a value), a value that contains itself. Bounded: nesting past the contract's depth is cut (the validator
//! reports it as it would the text), and past a plan's size only the length is counted.

use planlock_core::{MAX_DEPTH, MAX_PLAN_BYTES};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A value's JSON text, or its length when it is past a plan's bound.
pub enum Text {
    /// The whole text.
    Whole(Vec<u8>),
    /// Longer than [`MAX_PLAN_BYTES`]: this many bytes.
    TooLarge(usize),
}

/// `s` as UTF-8; a lone surrogate (which UTF-8 cannot hold) is refused.
pub fn utf8(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    match s.to_cow() {
        Ok(text) => Ok(text.as_bytes().to_vec()),
        Err(_) => {
            Err(invalid(s.py(), "", "the text holds a lone surrogate, which UTF-8 cannot hold; nothing is repaired"))
        }
    }
}

/// `value` written as JSON.
pub fn write<'py>(value: &Bound<'py, PyAny>) -> PyResult<Text> {
    let mut w = Writer { out: Vec::new(), len: 0, path: Vec::new(), open: Vec::new() };
    w.value(value, 0)?;
    Ok(if w.len > MAX_PLAN_BYTES { Text::TooLarge(w.len) } else { Text::Whole(w.out) })
}

fn invalid(py: Python<'_>, pointer: &str, what: &str) -> PyErr {
    let message = match pointer {
        "" => format!("not a JSON value: {what}"),
        at => format!("not a JSON value at {at}: {what}"),
    };
    super::planlock_error(py, "invalid-json", "CycleFail", &message, Vec::new())
}

struct Writer<'py> {
    out: Vec<u8>,
    /// Every byte written, kept or not.
    len: usize,
    /// Where the writer is: a key or an index a level (read only to say where a value is wrong).
    path: Vec<Seg<'py>>,
    /// The containers being written (their addresses): one met again contains itself.
    open: Vec<usize>,
}

/// One level of the path: a dict's key, a list's index.
enum Seg<'py> {
    Key(Bound<'py, PyString>),
    Index(usize),
}

impl<'py> Writer<'py> {
    /// Past a plan's bound the text is not kept, only counted.
    fn written(&mut self, before: usize) {
        self.len += self.out.len() - before;
        self.out.truncate(MAX_PLAN_BYTES + 1);
    }

    fn push(&mut self, bytes: &[u8]) {
        let before = self.out.len();
        self.out.extend_from_slice(bytes);
        self.written(before);
    }

    fn pointer(&self) -> String {
        let seg = |s: &Seg<'_>| match s {
            Seg::Key(k) => k.to_cow().map(|k| k.replace('~', "~0").replace('/', "~1")).unwrap_or_default(),
            Seg::Index(i) => i.to_string(),
        };
        self.path.iter().map(|s| format!("/{}", seg(s))).collect()
    }

    fn string(&mut self, s: &Bound<'py, PyString>) -> PyResult<()> {
        let Ok(text) = s.to_cow() else {
            return Err(invalid(s.py(), &self.pointer(), "a str with a lone surrogate, which UTF-8 cannot hold"));
        };
        let before = self.out.len();
        let _ = serde_json::to_writer(&mut self.out, text.as_ref());
        self.written(before);
        Ok(())
    }

    fn value(&mut self, v: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        let py = v.py();
        if v.is_none() {
            self.push(b"null");
        } else if let Ok(b) = v.cast::<PyBool>() {
            self.push(if b.is_true() { b"true" } else { b"false" });
        } else if v.cast::<PyInt>().is_ok() {
            // Exact: an int past 2^53 (or past 64 bits) reaches the validator as its text would.
            match v.extract::<i64>() {
                Ok(n) => self.push(n.to_string().as_bytes()),
                Err(_) => {
                    let digits = v.call_method0("__index__")?.str()?;
                    self.push(digits.to_cow()?.as_bytes());
                }
            }
        } else if let Ok(f) = v.cast::<PyFloat>() {
            let f = f.value();
            if !f.is_finite() {
                return Err(invalid(py, &self.pointer(), "NaN and infinities are not JSON numbers"));
            }
            // A float stays one (`5.0`, `1e21`): the same number, and the same type, as
            // `json.dumps` writes.
            self.push(serde_json::to_string(&f).unwrap_or_default().as_bytes());
        } else if let Ok(s) = v.cast::<PyString>() {
            self.string(s)?;
        } else if depth > MAX_DEPTH {
            // Deeper than any plan may nest: the validator says so where the text would.
            self.push(b"null");
        } else if self.open.contains(&(v.as_ptr() as usize)) {
            return Err(invalid(py, &self.pointer(), "a value that contains itself"));
        } else if v.cast::<PyDict>().is_ok() || v.cast::<PyList>().is_ok() || v.cast::<PyTuple>().is_ok() {
            self.open.push(v.as_ptr() as usize);
            let written = self.container(v, depth);
            self.open.pop();
            written?;
        } else {
            let what =
                format!("a {} has no JSON form; give a str, number, bool, None, list or dict", super::type_name(v));
            return Err(invalid(py, &self.pointer(), &what));
        }
        Ok(())
    }

    fn container(&mut self, v: &Bound<'py, PyAny>, depth: usize) -> PyResult<()> {
        let py = v.py();
        if let Ok(d) = v.cast::<PyDict>() {
            self.push(b"{");
            for (i, (key, item)) in d.iter().enumerate() {
                let Ok(key) = key.cast::<PyString>() else {
                    let what = format!("a key must be a str, not {}", super::type_name(&key));
                    return Err(invalid(py, &self.pointer(), &what));
                };
                if i > 0 {
                    self.push(b",");
                }
                self.string(key)?;
                self.push(b":");
                self.path.push(Seg::Key(key.clone()));
                self.value(&item, depth + 1)?;
                self.path.pop();
            }
            self.push(b"}");
        } else {
            self.push(b"[");
            for (i, item) in v.try_iter()?.enumerate() {
                if i > 0 {
                    self.push(b",");
                }
                self.path.push(Seg::Index(i));
                self.value(&item?, depth + 1)?;
                self.path.pop();
            }
            self.push(b"]");
        }
        Ok(())
    }
}
