//! The rules written out: GBNF (llama.cpp's `grammar`) and Lark (llguidance's syntax). One
//! writer, two syntaxes: what differs is in [`Syntax`].

use std::fmt::Write as _;

use super::ir::{Expr, Rules};

/// How a grammar format writes each piece.
pub(crate) struct Syntax {
    /// What a rule's name is followed by.
    defines: &'static str,
    /// The root rule's name in the text.
    root: &'static str,
    /// Dashes in names become this.
    dash: &'static str,
    /// A character class: the bracket between these.
    class: (&'static str, &'static str),
    /// `min` to `max` repetitions, after the repeated item.
    repeat: fn(u32, u32) -> String,
    /// Comments start with this.
    comment: &'static str,
}

/// llama.cpp's GBNF.
pub(crate) const GBNF: Syntax = Syntax {
    defines: " ::= ",
    root: "root",
    dash: "-",
    class: ("", ""),
    repeat: |min, max| if min == max { format!("{{{min}}}") } else { format!("{{{min},{max}}}") },
    comment: "#",
};

/// Lark, as llguidance reads it.
pub(crate) const LARK: Syntax = Syntax {
    defines: ": ",
    root: "start",
    dash: "_",
    class: ("/", "/"),
    repeat: |min, max| if min == max { format!(" ~ {min}") } else { format!(" ~ {min}..{max}") },
    comment: "//",
};

/// Where an expression stands, for its parentheses.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A rule's whole body.
    Body,
    /// An item of a sequence.
    InSeq,
    /// The item of a repetition.
    Repeated,
}

impl Syntax {
    /// `rules` in this syntax, `root` first, under a header of comment lines.
    pub(crate) fn write(&self, rules: &Rules, root: &str, header: &[String]) -> String {
        let mut out = String::new();
        for line in header {
            let _ = writeln!(out, "{} {line}", self.comment);
        }
        for (name, expr) in rules.in_order(root) {
            let _ = writeln!(out, "{}{}{}", self.name(name, root), self.defines, self.expr(expr, Place::Body, root));
        }
        out
    }

    fn name(&self, name: &str, root: &str) -> String {
        if name == root { self.root.to_owned() } else { name.replace('-', self.dash) }
    }

    fn expr(&self, expr: &Expr, place: Place, root: &str) -> String {
        match expr {
            Expr::Lit(text) => quoted(text),
            Expr::Rule(name) => self.name(name, root),
            Expr::Class(class) => format!("{}{}{}", self.class.0, class.bracket(), self.class.1),
            Expr::Seq(parts) if parts.is_empty() => "\"\"".to_owned(),
            Expr::Seq(parts) if parts.len() == 1 => self.expr(&parts[0], place, root),
            Expr::Seq(parts) => {
                let text = parts.iter().map(|p| self.expr(p, Place::InSeq, root)).collect::<Vec<_>>().join(" ");
                if place == Place::Repeated { format!("({text})") } else { text }
            }
            Expr::Alt(parts) => {
                let text = parts.iter().map(|p| self.expr(p, Place::Body, root)).collect::<Vec<_>>().join(" | ");
                if place == Place::Body { text } else { format!("({text})") }
            }
            Expr::Repeat(item, 0, 1) => format!("{}?", self.expr(item, Place::Repeated, root)),
            Expr::Repeat(item, min, max) => {
                format!("{}{}", self.expr(item, Place::Repeated, root), (self.repeat)(*min, *max))
            }
        }
    }
}

/// `text` as a double-quoted literal: quotes, backslashes and control characters escaped.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::ir::Class;

    #[test]
    fn both_syntaxes_write_the_same_rules() {
        let mut rules = Rules::default();
        let digit = rules.add("a-digit", |_| Expr::Class(Class::Digit));
        rules.add("root", |_| {
            Expr::seq(vec![
                Expr::lit("{\"n\":"),
                Expr::alt(vec![Expr::lit("0"), digit.clone().times(1, 3)]),
                Expr::seq(vec![Expr::lit(","), digit]).optional(),
                Expr::lit("}"),
            ])
        });
        assert_eq!(
            GBNF.write(&rules, "root", &[]),
            "root ::= \"{\\\"n\\\":\" (\"0\" | a-digit{1,3}) (\",\" a-digit)? \"}\"\na-digit ::= [0-9]\n"
        );
        assert_eq!(
            LARK.write(&rules, "root", &["made by planlock".into()]),
            "// made by planlock\nstart: \"{\\\"n\\\":\" (\"0\" | a_digit ~ 1..3) (\",\" a_digit)? \"}\"\na_digit: /[0-9]/\n"
        );
    }
}
