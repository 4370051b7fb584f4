//! The console's HTML: every value from a plan, a record, a store or a server goes through one
//! of the escapes here for its context — text, attribute, URL path segment — after control,
//! bidi and zero-width characters are made visible (`\u{202e}`), so a value can neither end its
//! element nor reorder what a person reads. Pages are built with `write!` into one `String`.

use std::fmt::Write as _;

use planlock::session::Timestamp;

/// `text` for HTML text or a quoted attribute value: invisible characters shown as escapes,
/// then `& < > " '` as entities.
pub fn esc(text: &str) -> String {
    let shown = planlock::text::escape_invisible(text);
    entities(&shown)
}

/// Like [`esc`], keeping line breaks (a `<pre>` block of pretty JSON).
pub fn esc_lines(text: &str) -> String {
    text.split('\n').map(esc).collect::<Vec<_>>().join("\n")
}

fn entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded.
pub fn url_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A time as a person reads it beside now: `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago` (the
/// exact time in the element's `title`).
pub fn ago(at: Timestamp, now: Timestamp) -> String {
    let secs = now.since(at).as_secs();
    let rel = match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    };
    format!("<time datetime=\"{at}\" title=\"{at}\">{rel}</time>")
}

/// A whole page: `title` (escaped here), the navigation with the pending count, and `main`
/// (already HTML). No inline script or style: the Content-Security-Policy allows neither.
pub fn page(title: &str, pending: usize, main: &str) -> String {
    let count = if pending > 0 { format!("({pending}) ") } else { String::new() };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{count}{title} · planlock</title>\
         <link rel=\"stylesheet\" href=\"/static/console.css\">\
         <script src=\"/static/console.js\" defer></script></head>\n\
         <body><header><a class=\"brand\" href=\"/sessions\">planlock</a>\
         <nav><a href=\"/sessions\">Sessions</a><a href=\"/inbox\">Inbox<span class=\"count\">{pending}</span></a></nav>\
         </header>\n<main>{main}</main></body></html>\n",
        title = esc(title),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_cannot_leave_their_context_or_hide() {
        assert_eq!(esc("<script>x</script>"), "&lt;script&gt;x&lt;/script&gt;");
        assert_eq!(esc("\"onmouseover=alert(1)"), "&quot;onmouseover=alert(1)");
        assert_eq!(esc("a\u{1b}[31mb\u{202e}c"), "a\\u{1b}[31mb\\u{202e}c");
        assert_eq!(esc_lines("{\n  \"a\": \"<b>\"\n}"), "{\n  &quot;a&quot;: &quot;&lt;b&gt;&quot;\n}");
        assert_eq!(url_segment("a/../b c?é"), "a%2F..%2Fb%20c%3F%C3%A9");
    }
}
