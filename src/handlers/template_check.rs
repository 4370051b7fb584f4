//! The shape a prompt template may have, checked before minijinja sees it (docs/CONTRACT.md,
//! "Hostile inputs").
//!
//! A plan's template is input from outside (CONTRACT §11), and minijinja's parser, compiler and
//! its values were not built to bound what a hostile template can make them do: a long chain
//! of filters compiles by recursion (the stack overflows and the process aborts), and a value
//! bound to a name can be put twice into a bigger one, so a few dozen `set` statements build a
//! value whose printed form is exponentially long (fuel is charged after it is built). This scan
//! refuses such templates by their text, in one linear pass that allocates nothing per byte:
//!
//! | bound | limit | why |
//! |---|---|---|
//! | template size | [`MAX_TEMPLATE_BYTES`] | compiling and keeping the template |
//! | tokens in one `{{ … }}` or `{% … %}` | [`MAX_EXPRESSION_TOKENS`] | the depth of an expression's syntax tree, so compiling it cannot overflow the stack |
//! | open blocks, `elif` included | [`MAX_BLOCK_DEPTH`] | the depth of the statement tree, likewise |
//! | statements | [`ALLOWED_STATEMENTS`] only, no `recursive` loop | a prompt selects and formats what `vars` and the ledger hold; with nothing to bind (`set`, `with`, `macro`, …), every value a render builds comes from one bounded expression, so it is at most linear in the input |
//! | container literals | constants only: `[1, 'a']`, not `[x, x]` | a loop variable put twice into a literal inside nested loops would double at every level (the render also leaves out `dict`, `namespace`, `cycler`, `batch`, `slice`) |
//!
//! What the text cannot show is bounded while rendering (see [`super::prompt`]): fuel, the size
//! of each serialized value and of the output, and the step's deadline.

use std::fmt;

/// The largest template accepted, in bytes.
pub const MAX_TEMPLATE_BYTES: usize = 64 * 1024;

/// The most tokens (names, literals, operators) in one `{{ … }}` or `{% … %}`.
pub const MAX_EXPRESSION_TOKENS: usize = 256;

/// The most blocks open at once (`if`, `for`, `filter`; each `elif` counts as one more, as it
/// nests in the syntax tree).
pub const MAX_BLOCK_DEPTH: usize = 32;

/// The statements a prompt template may use; anything else in `{% … %}` is refused.
pub const ALLOWED_STATEMENTS: &[&str] =
    &["if", "elif", "else", "endif", "for", "endfor", "filter", "endfilter", "raw", "endraw"];

/// Why a template was refused before rendering: what, and where (1-based line and column, in
/// characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The line of the offending tag (1 for a template that is too large).
    pub line: usize,
    /// The column of the offending tag.
    pub column: usize,
    /// What is wrong, naming the bound.
    pub what: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "template refused at line {}, column {}: {}", self.line, self.column, self.what)
    }
}

/// Checks `template` against the bounds of the module docs.
///
/// ```
/// use planlock::handlers::template_check::{check, MAX_EXPRESSION_TOKENS};
/// assert!(check("Hi {{ name | upper }}{% for m in ledger.memories %} {{ m.summary }}{% endfor %}").is_ok());
/// let refusal = check("{% set x = 1 %}{{ x }}").unwrap_err();
/// assert!(refusal.what.starts_with("`{% set %}` is not allowed"), "{refusal}");
/// let chain = format!("{{{{ 'a'{} }}}}", "|upper".repeat(MAX_EXPRESSION_TOKENS));
/// assert!(check(&chain).unwrap_err().what.contains("MAX_EXPRESSION_TOKENS"));
/// ```
pub fn check(template: &str) -> Result<(), Refusal> {
    if template.len() > MAX_TEMPLATE_BYTES {
        return Err(Refusal {
            line: 1,
            column: 1,
            what: format!(
                "the template is {} bytes, more than {MAX_TEMPLATE_BYTES} (MAX_TEMPLATE_BYTES); \
                 move large text into `vars`",
                template.len()
            ),
        });
    }
    let bytes = template.as_bytes();
    let mut blocks: Vec<usize> = Vec::new(); // each open block's depth (1 + its elifs)
    let mut at = 0;
    while let Some(open) = find_open(bytes, at) {
        let kind = bytes[open + 1];
        let body = open + 2;
        let refuse = |what: String| {
            let (line, column) = line_column(template, open);
            Err(Refusal { line, column, what })
        };
        if kind == b'#' {
            // A comment: nothing inside counts. An unclosed one is minijinja's syntax error.
            match find(bytes, body, b"#}") {
                Some(end) => at = end + 2,
                None => return Ok(()),
            }
            continue;
        }
        let close: &[u8] = if kind == b'{' { b"}}" } else { b"%}" };
        let Some(tag) = scan_tag(bytes, body, close) else { return Ok(()) };
        if tag.tokens > MAX_EXPRESSION_TOKENS {
            return refuse(format!(
                "this tag has more than {MAX_EXPRESSION_TOKENS} tokens (MAX_EXPRESSION_TOKENS); \
                 split the expression or compute the value in `vars`"
            ));
        }
        at = tag.end;
        if kind == b'%' {
            let keyword = &template[tag.keyword.clone()];
            if !ALLOWED_STATEMENTS.contains(&keyword) {
                return refuse(format!(
                    "`{{% {keyword} %}}` is not allowed in a prompt template (allowed: {}); a prompt \
                     selects and formats what `vars` and the ledger hold: compute values in the policy \
                     layer and pass them in `vars`",
                    ALLOWED_STATEMENTS.join(", ")
                ));
            }
            if keyword == "for" && tag.recursive {
                return refuse(
                    "a recursive loop (`{% for … recursive %}`) is not allowed in a prompt template: each \
                     level could rebuild what the one before built; flatten the data in `vars`"
                        .to_owned(),
                );
            }
            match keyword {
                "if" | "for" | "filter" => blocks.push(1),
                "elif" => {
                    if let Some(top) = blocks.last_mut() {
                        *top += 1;
                    }
                }
                "endif" | "endfor" | "endfilter" => {
                    blocks.pop();
                }
                "raw" => match find(bytes, at, b"endraw") {
                    // The raw text is not template syntax; skip past its end tag.
                    Some(end) => at = end,
                    None => return Ok(()),
                },
                _ => {}
            }
            if blocks.iter().sum::<usize>() > MAX_BLOCK_DEPTH {
                return refuse(format!(
                    "blocks nest more than {MAX_BLOCK_DEPTH} deep (MAX_BLOCK_DEPTH, each `elif` counting \
                     as one); flatten the template"
                ));
            }
        }
        if tag.named_literal {
            return refuse(
                "a list, map or tuple written in a template may hold only constants (strings, numbers, \
                 true/false/none), not names: pass the value in `vars`"
                    .to_owned(),
            );
        }
    }
    Ok(())
}

/// One `{{ … }}` or `{% … %}`: its tokens, its first name, whether it names `recursive`, whether
/// a container literal in it holds a name, and where the text after it starts.
struct Tag {
    tokens: usize,
    keyword: std::ops::Range<usize>,
    recursive: bool,
    named_literal: bool,
    end: usize,
}

/// What an open bracket is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    /// `[…]` after an operator: a list.
    List,
    /// `{…}`: a map.
    Map,
    /// `(…)` after an operator: grouping, or a tuple if it has a comma.
    Paren,
    /// `x[…]` or `f(…)`: a subscript or a call.
    Access,
}

/// An open bracket: what it is, whether a name or a comma stood in it.
struct Open {
    group: Group,
    name: bool,
    comma: bool,
}

/// Words that are values or operators, not names.
const NOT_NAMES: &[&str] =
    &["true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if", "else"];

/// Counts the tokens from `from` to the closing delimiter, skipping string literals, and notes
/// container literals that hold a name (`[x, x]`, `{'a': x}`, `(x, x)`). `None` when the tag never
/// closes (minijinja reports that as a syntax error).
fn scan_tag(bytes: &[u8], from: usize, close: &[u8]) -> Option<Tag> {
    let mut i = from;
    // Whitespace control (`{%-`, `{{+`) is part of the delimiter.
    if matches!(bytes.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut tag = Tag { tokens: 0, keyword: 0..0, recursive: false, named_literal: false, end: 0 };
    let mut open: Vec<Open> = Vec::new();
    // Whether the token before is a value (a name, a literal, a closing bracket): then `[` is a
    // subscript and `(` a call.
    let mut after_value = false;
    let close_literal = |o: Open, tag: &mut Tag, open: &mut Vec<Open>| {
        let literal = match o.group {
            Group::List | Group::Map => true,
            Group::Paren => o.comma,
            Group::Access => false,
        };
        tag.named_literal |= literal && o.name;
        if let Some(parent) = open.last_mut() {
            parent.name |= o.name;
        }
    };
    loop {
        let &b = bytes.get(i)?;
        let in_map = open.last().is_some_and(|o| o.group == Group::Map);
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        } else if !in_map && bytes[i..].starts_with(close) {
            tag.end = i + 2;
        } else if !in_map && matches!(b, b'-' | b'+') && bytes[i + 1..].starts_with(close) {
            tag.end = i + 3;
        } else if b == b'\'' || b == b'"' {
            i = skip_string(bytes, i)?;
            after_value = true;
        } else if b.is_ascii_alphanumeric() || b == b'_' {
            let start = i;
            while bytes.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                i += 1;
            }
            let word = std::str::from_utf8(&bytes[start..i]).unwrap_or("");
            if tag.tokens == 0 {
                tag.keyword = start..i;
            }
            tag.recursive |= word == "recursive";
            let name = !b.is_ascii_digit() && !NOT_NAMES.contains(&word) && tag.tokens > 0;
            if let Some(o) = open.last_mut() {
                o.name |= name;
            }
            after_value =
                !NOT_NAMES.contains(&word) || matches!(word, "true" | "false" | "none" | "True" | "False" | "None");
        } else {
            let group = match b {
                b'[' if after_value => Some(Group::Access),
                b'[' => Some(Group::List),
                b'{' => Some(Group::Map),
                b'(' if after_value => Some(Group::Access),
                b'(' => Some(Group::Paren),
                _ => None,
            };
            if let Some(group) = group {
                open.push(Open { group, name: false, comma: false });
                after_value = false;
            } else if matches!(b, b']' | b'}' | b')') {
                if let Some(o) = open.pop() {
                    close_literal(o, &mut tag, &mut open);
                }
                after_value = true;
            } else {
                if b == b','
                    && let Some(o) = open.last_mut()
                {
                    o.comma = true;
                }
                after_value = false;
            }
            // An operator or punctuation; a non-ASCII character is one token per byte, which only
            // overcounts (minijinja refuses it anyway).
            i += 1;
        }
        if tag.end > 0 {
            // Brackets the tag leaves open count as closed here.
            while let Some(o) = open.pop() {
                close_literal(o, &mut tag, &mut open);
            }
            return Some(tag);
        }
        tag.tokens += 1;
    }
}

/// The index after the string literal that starts at `start` (its quote), escapes honoured.
fn skip_string(bytes: &[u8], start: usize) -> Option<usize> {
    let quote = bytes[start];
    let mut i = start + 1;
    loop {
        match *bytes.get(i)? {
            b'\\' => i += 2,
            c if c == quote => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The next `{{`, `{%` or `{#` at or after `from`.
fn find_open(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < bytes.len() {
        if bytes[i] == b'{' && matches!(bytes[i + 1], b'{' | b'%' | b'#') {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| from + p)
}

/// 1-based line and column (in characters) of byte `at`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_comments_and_raw_text_do_not_count() {
        let long = "x|".repeat(MAX_EXPRESSION_TOKENS * 2);
        assert!(check(&format!("{{{{ '{long}' }}}}")).is_ok());
        assert!(check(&format!("{{# {{% set {long} %}} #}}")).is_ok());
        assert!(check(&format!("{{% raw %}}{{% set x = 1 %}}{{{{ {long} }}}}{{% endraw %}}")).is_ok());
        assert!(check("{{ 'it\\'s' }} {%- if a -%}{{- b -}}{%- endif +%}").is_ok());
    }

    #[test]
    fn container_literals_hold_constants_only() {
        for ok in [
            "{{ [1, 'a', true, none] }}",
            "{{ {'a': [1, 2]} }}",
            "{% for x in ['a', 'b'] %}{{ x }}{% endfor %}",
            "{{ x[0] }}{{ x['k'] }}{{ f(a, b) }}{{ (a + b) * 2 }}{{ 'abc'[1] }}{{ (x)[0] }}",
            "{% for k, v in m|items %}{{ k }}{% endfor %}",
            "{{ {'a': {'b': 1}} }}",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for bad in [
            "{{ [x] }}",
            "{{ [1, x.y] }}",
            "{{ {'a': x} }}",
            "{{ (x, x) }}",
            "{% for y in [x, x] %}{% endfor %}",
            "{{ [[x]] }}",
            "{{ [f(x)] }}",
        ] {
            assert!(check(bad).unwrap_err().what.contains("only constants"), "{bad}");
        }
        assert!(check("{% for x in t recursive %}{{ loop(x) }}{% endfor %}").unwrap_err().what.contains("recursive"));
    }

    #[test]
    fn depth_counts_open_blocks_and_elifs() {
        let nested = |n: usize| format!("{}x{}", "{% if a %}".repeat(n), "{% endif %}".repeat(n));
        assert!(check(&nested(MAX_BLOCK_DEPTH)).is_ok());
        assert!(check(&nested(MAX_BLOCK_DEPTH + 1)).unwrap_err().what.contains("MAX_BLOCK_DEPTH"));
        let elifs = format!("{{% if a %}}{}{{% endif %}}", "{% elif b %}".repeat(MAX_BLOCK_DEPTH));
        assert!(check(&elifs).unwrap_err().what.contains("MAX_BLOCK_DEPTH"));
        // Sequential blocks do not add up.
        assert!(check(&"{% for x in y %}{% endfor %}".repeat(100)).is_ok());
    }

    #[test]
    fn a_refusal_names_its_place() {
        let err = check("l\u{e9}ne\n  {% macro\u{1b}[31m f() %}{% endmacro %}").unwrap_err();
        assert_eq!((err.line, err.column), (2, 3));
        // Only the statement's name is quoted, and a name is letters, digits and `_`.
        assert!(err.what.starts_with("`{% macro %}` is not allowed"), "{}", err.what);
        let big = "a".repeat(MAX_TEMPLATE_BYTES + 1);
        assert!(check(&big).unwrap_err().what.contains("MAX_TEMPLATE_BYTES"));
    }
}
