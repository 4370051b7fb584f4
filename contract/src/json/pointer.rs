//! JSON Pointers (RFC 6901), built up while a value is walked so that a problem can say where it
//! is. Named for what it is, not `Path`, so it does not read like `std::path::Path`.

use std::borrow::Cow;

/// One segment of a JSON Pointer.
#[derive(Debug, Clone)]
pub enum Seg<'a> {
    Key(Cow<'a, str>),
    Index(usize),
}

/// A JSON Pointer under construction (RFC 6901).
#[derive(Debug, Default)]
pub struct JsonPointer<'a> {
    // Inline: checking a typed value must not allocate per step.
    pub segs: smallvec::SmallVec<[Seg<'a>; 8]>,
    /// The free-form values under this path already passed the strict parser's limits, so the
    /// typed check does not scan them again.
    pub limits_checked: bool,
}

impl<'a> JsonPointer<'a> {
    pub fn new() -> Self {
        JsonPointer { segs: smallvec::SmallVec::new(), limits_checked: false }
    }
    pub fn push_key(&mut self, key: impl Into<Cow<'a, str>>) {
        self.segs.push(Seg::Key(key.into()));
    }
    pub fn push_index(&mut self, i: usize) {
        self.segs.push(Seg::Index(i));
    }
    pub fn pop(&mut self) {
        self.segs.pop();
    }
    /// The nesting depth of the value this path points at.
    pub fn depth(&self) -> usize {
        self.segs.len() + 1
    }
    /// The pointer string, with `~` and `/` escaped.
    pub fn pointer(&self) -> String {
        let mut s = String::new();
        for seg in &self.segs {
            s.push('/');
            match seg {
                Seg::Key(k) => push_escaped(&mut s, k),
                Seg::Index(i) => s.push_str(&i.to_string()),
            }
        }
        s
    }
    /// The pointer of a child key of this path.
    pub fn child(&self, key: &str) -> String {
        let mut s = self.pointer();
        s.push('/');
        push_escaped(&mut s, key);
        s
    }
}

fn push_escaped(out: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}
