//! The grammar before it is written out: named rules of expressions over literal text and a few
//! character classes. `gbnf.rs` and `lark.rs` write the same rules in their formats, so the two
//! cannot say different things.

use std::collections::BTreeMap;

/// A class of characters a rule may match one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Any character a JSON string holds unescaped, but for U+007F–U+009F (the control
    /// characters a step id may not hold; left out everywhere, so every string is one).
    StringChar,
    /// `0`–`9`.
    Digit,
    /// `1`–`9`.
    NonZeroDigit,
    /// `0`–`9`, `a`–`f`.
    LowerHex,
}

impl Class {
    /// The class as a regular-expression bracket, which GBNF and Lark both read.
    pub(crate) fn bracket(self) -> &'static str {
        match self {
            Class::StringChar => r#"[^"\\\x00-\x1F\x7F-\x9F]"#,
            Class::Digit => "[0-9]",
            Class::NonZeroDigit => "[1-9]",
            Class::LowerHex => "[0-9a-f]",
        }
    }
}

/// An expression of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expr {
    /// This text, exactly.
    Lit(String),
    /// The rule of this name.
    Rule(String),
    /// These, one after the other.
    Seq(Vec<Expr>),
    /// One of these.
    Alt(Vec<Expr>),
    /// This, `min` to `max` times.
    Repeat(Box<Expr>, u32, u32),
    /// One character of the class.
    Class(Class),
}

impl Expr {
    /// `text`, exactly.
    pub(crate) fn lit(text: impl Into<String>) -> Expr {
        Expr::Lit(text.into())
    }

    /// These, in order: nested sequences flattened, empty ones dropped, one alone is itself.
    pub(crate) fn seq(parts: Vec<Expr>) -> Expr {
        let mut flat = Vec::with_capacity(parts.len());
        for part in parts {
            match part {
                Expr::Seq(inner) => flat.extend(inner),
                other => flat.push(other),
            }
        }
        if flat.len() == 1 { flat.remove(0) } else { Expr::Seq(flat) }
    }

    /// One of these (one alone is itself).
    pub(crate) fn alt(mut parts: Vec<Expr>) -> Expr {
        if parts.len() == 1 { parts.remove(0) } else { Expr::Alt(parts) }
    }

    /// This, or nothing.
    pub(crate) fn optional(self) -> Expr {
        Expr::Repeat(Box::new(self), 0, 1)
    }

    /// This, `min` to `max` times.
    pub(crate) fn times(self, min: u32, max: u32) -> Expr {
        Expr::Repeat(Box::new(self), min, max)
    }

    /// Whether it matches nothing but the empty text (an empty sequence).
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Expr::Seq(parts) if parts.is_empty())
    }

    /// Nothing.
    pub(crate) fn empty() -> Expr {
        Expr::Seq(Vec::new())
    }
}

/// Named rules, the first one the grammar's root. A name is lowercase letters, digits and
/// dashes (`lark.rs` turns the dashes into underscores).
#[derive(Debug, Default)]
pub(crate) struct Rules {
    order: Vec<String>,
    rules: BTreeMap<String, Expr>,
}

impl Rules {
    /// Adds rule `name` as `expr` unless it is there; a reference to it.
    pub(crate) fn add(&mut self, name: &str, expr: impl FnOnce(&mut Rules) -> Expr) -> Expr {
        if !self.rules.contains_key(name) {
            // Reserved first, so a rule that refers to itself is made once.
            self.rules.insert(name.to_owned(), Expr::empty());
            let made = expr(self);
            self.rules.insert(name.to_owned(), made);
            self.order.push(name.to_owned());
        }
        Expr::Rule(name.to_owned())
    }

    /// Whether rule `name` is there.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.rules.contains_key(name)
    }

    /// The rules, `root` first and the others in the order they were made.
    pub(crate) fn in_order(&self, root: &str) -> Vec<(&str, &Expr)> {
        let first = self.rules.get_key_value(root).map(|(name, expr)| (name.as_str(), expr));
        let rest = self.order.iter().filter(|name| *name != root).map(|name| (name.as_str(), &self.rules[name]));
        first.into_iter().chain(rest).collect()
    }

    /// How many rules there are.
    pub(crate) fn len(&self) -> usize {
        self.rules.len()
    }
}

/// A rule name made from any text: lowercase, dashes between words.
pub(crate) fn kebab(text: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_ascii_uppercase() {
            if prev_lower {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
            prev_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with('-') && !out.is_empty() {
                out.push('-');
            }
            prev_lower = false;
        }
    }
    out.trim_end_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(kebab("LLMCall"), "llmcall");
        assert_eq!(kebab("RetrieveDecisionContext"), "retrieve-decision-context");
        assert_eq!(kebab("step_contract_version"), "step-contract-version");
        assert_eq!(kebab("PersistMemoryPayload"), "persist-memory-payload");
    }

    #[test]
    fn a_rule_is_made_once() {
        let mut rules = Rules::default();
        let a = rules.add("a", |r| Expr::seq(vec![Expr::lit("x"), r.add("b", |_| Expr::lit("y"))]));
        assert_eq!(a, rules.add("a", |_| unreachable!()));
        assert_eq!(rules.len(), 2);
        assert_eq!(rules.in_order("a").iter().map(|(n, _)| *n).collect::<Vec<_>>(), ["a", "b"]);
    }
}
