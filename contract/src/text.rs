//! Layer 0: text from outside as a person may be shown it (CONTRACT §11). A plan's strings, a
//! record's reason, a memory's summary, a server's answer: any of them may carry characters that
//! act on a terminal (ESC sequences that set its title, clear it or recolour it; BEL) or that
//! make text read differently from what it is (the bidi overrides, zero-width characters).
//! [`escape_invisible`] is the one rule that writes each of them as a visible escape
//! (`\u{1b}`, `\u{202e}`); [`printable`] adds the length bound of a quote in a message; the CLI
//! renders every text line it prints through it, and [`json_escape_invisible`] keeps its JSON
//! output exact JSON while no such character reaches a terminal raw.

use std::borrow::Cow;

/// The most characters of an input that a message quotes.
pub const MAX_QUOTED_CHARS: usize = 200;

/// The characters that are invisible or change how the text around them reads, besides the
/// control characters (`char::is_control`, C0, DEL and C1): Unicode's format characters (Cf:
/// the bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069, the marks
/// U+200E, U+200F and U+061C, the zero-width U+200B–U+200D, U+2060 and U+FEFF, the soft hyphen,
/// the tag characters …), the line and paragraph separators U+2028 and U+2029, and the
/// invisible fillers people use to hide text (U+034F, the Hangul fillers, the Khmer vowels
/// U+17B4–U+17B5, the Mongolian selectors U+180B–U+180F). Ranges, inclusive, in order.
const INVISIBLE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` must not reach a reader as it is: a control character, or one of the invisible
/// or reordering characters listed above.
///
/// ```
/// use planlock_contract::text::must_escape;
/// assert!(must_escape('\u{1b}') && must_escape('\u{9b}') && must_escape('\u{202e}') && must_escape('\u{200b}'));
/// assert!(!must_escape('a') && !must_escape('é') && !must_escape('한') && !must_escape('🙂'));
/// ```
pub fn must_escape(c: char) -> bool {
    if c.is_control() {
        return true;
    }
    let c = c as u32;
    if c < 0xAD {
        return false;
    }
    INVISIBLE
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Symbols that draw nothing: the blank Braille pattern U+2800, the object replacement
/// character U+FFFC and the musical null notehead U+1D159 (people use them to fake a name).
const BLANK_SYMBOLS: &[char] = &['\u{2800}', '\u{FFFC}', '\u{1D159}'];

/// Whether `c` shows a reader something on its own: a letter, a digit, punctuation or a symbol
/// (Unicode's L, N, P and S categories), not one of [`must_escape`]'s, not a symbol that draws
/// nothing. Marks (a combining accent, a variation selector) show only on another character;
/// private-use characters show whatever a font puts there, so they count as nothing.
///
/// ```
/// use planlock_contract::text::is_visible;
/// assert!(is_visible('a') && is_visible('한') && is_visible('?') && is_visible('🙂'));
/// assert!(!is_visible(' ') && !is_visible('\u{0300}') && !is_visible('\u{FE0F}') && !is_visible('\u{E000}'));
/// ```
pub fn is_visible(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    let shown = matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::DecimalNumber
            | G::LetterNumber
            | G::OtherNumber
            | G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
            | G::MathSymbol
            | G::CurrencySymbol
            | G::ModifierSymbol
            | G::OtherSymbol
    );
    shown && !must_escape(c) && !BLANK_SYMBOLS.contains(&c)
}

/// Whether `text` says nothing a reader could see: no character of it is [`is_visible`] (a
/// justification of zero-width spaces, bidi marks, a lone combining accent or blank Braille is
/// blank).
///
/// ```
/// assert!(planlock_contract::text::is_blank(" \u{200b}\u{202e}\u{2066} "));
/// assert!(planlock_contract::text::is_blank("\u{2800}\u{FE0F}\u{0300}\u{FFFC}\u{1D159}\u{E000}"));
/// assert!(!planlock_contract::text::is_blank("ok") && !planlock_contract::text::is_blank("é"));
/// ```
pub fn is_blank(text: &str) -> bool {
    !text.chars().any(is_visible)
}

/// `text` with every character of [`must_escape`] written as a visible escape: `\n`, `\t` and
/// `\r` as such, the others as `\u{…}`. Everything else, backslashes included, is as it was.
///
/// ```
/// use planlock_contract::text::escape_invisible;
/// assert_eq!(escape_invisible("a\u{1b}]0;x\u{7}b"), "a\\u{1b}]0;x\\u{7}b");
/// assert_eq!(escape_invisible("admin\u{202e}txt.exe"), "admin\\u{202e}txt.exe");
/// assert_eq!(escape_invisible("two\nlines"), "two\\nlines");
/// assert!(matches!(escape_invisible("plain"), std::borrow::Cow::Borrowed("plain")));
/// ```
pub fn escape_invisible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(must_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_shown(&mut out, c);
    }
    Cow::Owned(out)
}

fn push_shown(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        c if must_escape(c) => out.extend(c.escape_unicode()),
        c => out.push(c),
    }
}

/// `text` as a message may quote it (CONTRACT §11): escaped as [`escape_invisible`] does, so an
/// input cannot move a terminal's cursor, forge a line or read backwards, and at most
/// [`MAX_QUOTED_CHARS`] characters, the rest marked `…`.
///
/// ```
/// assert_eq!(planlock_contract::printable("in\u{1b}[31mred\n"), "in\\u{1b}[31mred\\n");
/// assert_eq!(planlock_contract::printable(&"x".repeat(300)).chars().count(), 201);
/// ```
pub fn printable(text: &str) -> Cow<'_, str> {
    let plain = text.len() <= MAX_QUOTED_CHARS && !text.chars().any(must_escape);
    if plain {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == MAX_QUOTED_CHARS {
            out.push('…');
            break;
        }
        push_shown(&mut out, c);
    }
    Cow::Owned(out)
}

/// JSON text with every character of [`must_escape`] inside its strings written as a JSON
/// escape (`\u202e`; a pair of surrogate escapes past U+FFFF): the same JSON value, and no such
/// character on the wire. JSON's structure is ASCII, and a serializer already escapes the C0
/// controls inside strings, so the only ones left outside strings are the whitespace between
/// tokens, which stays as it is.
///
/// ```
/// let json = serde_json::to_string(&serde_json::json!({"reason": "ok\u{202e}\u{9b}"}))?;
/// let safe = planlock_contract::text::json_escape_invisible(&json);
/// assert_eq!(safe, r#"{"reason":"ok\u202e\u009b"}"#);
/// assert_eq!(serde_json::from_str::<serde_json::Value>(&safe)?, serde_json::from_str::<serde_json::Value>(&json)?);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn json_escape_invisible(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| must_escape(c) && !matches!(c, '\n' | '\t' | '\r' | ' ');
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_disjoint() {
        for pair in INVISIBLE.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0, "{pair:x?}");
        }
    }

    #[test]
    fn every_bidi_control_and_zero_width_character_is_escaped() {
        let bidi = (0x202A..=0x202E).chain(0x2066..=0x2069).chain([0x200E, 0x200F, 0x061C]);
        let zero_width = [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF];
        for c in bidi.chain(zero_width).filter_map(char::from_u32) {
            assert!(must_escape(c), "{c:?}");
            assert_eq!(escape_invisible(&c.to_string()), format!("\\u{{{:x}}}", c as u32));
        }
        for c in (0..0x20).chain(0x7F..=0x9F).filter_map(char::from_u32) {
            assert!(!escape_invisible(&format!("a{c}b")).contains(c), "{c:?}");
        }
    }

    #[test]
    fn json_keeps_its_value_with_a_character_past_u_ffff() {
        let json = serde_json::to_string(&serde_json::json!(["tag\u{E0041}", "é🙂"])).unwrap();
        let safe = json_escape_invisible(&json);
        assert!(safe.contains("\\udb40\\udc41") && safe.contains("é🙂"), "{safe}");
        let (a, b): (serde_json::Value, serde_json::Value) =
            (serde_json::from_str(&json).unwrap(), serde_json::from_str(&safe).unwrap());
        assert_eq!(a, b);
    }
}
