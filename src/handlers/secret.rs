//! Secrets that a model server may echo back (docs/CONTRACT.md, "Hostile inputs"; CONTRACT §10,
//! §11): the API key and a URL's password are replaced in every text built from a response
//! before it is shown, logged, stored or put on a span, and URLs are shown without their
//! userinfo.
//!
//! A server can echo a key in more spellings than one, and each is scrubbed:
//! - as written, and with any of its characters escaped as JSON (`\u0073k-…`, `\/`), percent
//!   (`%73k-…`) or HTML (`&#115;`) escapes: the text is matched as it reads once those are
//!   decoded, and the escaped span is replaced whole;
//! - in base64 (standard or URL-safe, at each of the three byte alignments it can start at);
//! - in part: any run of [`MIN_RUN`] or more of its characters (a key cut short at the end of
//!   an excerpt is still most of the key). A secret shorter than that is scrubbed whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;

/// What replaces a secret in a text.
pub const REDACTED: &str = "[redacted]";

/// The shortest run of a secret's characters that is scrubbed on its own (a secret shorter than
/// this is scrubbed only whole).
pub const MIN_RUN: usize = 12;

/// The texts that must never leave the process.
///
/// ```
/// use planlock::handlers::secret::Secrets;
/// let secrets = Secrets::new().with("sk-live-0123456789abcdef");
/// assert_eq!(secrets.scrub("bad key: Bearer sk-live-0123456789abcdef"), "bad key: Bearer [redacted]");
/// // JSON-escaped, percent-encoded, base64, or cut short: scrubbed all the same.
/// assert_eq!(secrets.scrub(r#"{"k": "\u0073\u006b-live-0123456789abcdef"}"#), r#"{"k": "[redacted]"}"#);
/// assert_eq!(secrets.scrub("?k=%73%6b-live-0123456789abcdef"), "?k=[redacted]");
/// assert_eq!(secrets.scrub("c2stbGl2ZS0wMTIzNDU2Nzg5YWJjZGVm"), "[redacted]");
/// assert_eq!(secrets.scrub("key sk-live-0123456789…"), "key [redacted]…");
/// ```
#[derive(Clone, Default)]
pub struct Secrets {
    /// Each secret and its base64 forms: what is searched for.
    needles: Arc<Vec<Vec<char>>>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} forms kept, not shown)", self.needles.len())
    }
}

impl Secrets {
    /// No secrets.
    pub fn new() -> Self {
        Secrets::default()
    }

    /// Adds `secret` and its base64 forms (an empty secret is nothing to hide).
    pub fn with(mut self, secret: &str) -> Self {
        if secret.is_empty() {
            return self;
        }
        let needles = Arc::make_mut(&mut self.needles);
        for form in std::iter::once(secret.to_owned()).chain(base64_forms(secret.as_bytes())) {
            let chars: Vec<char> = form.chars().collect();
            if !needles.contains(&chars) {
                needles.push(chars);
            }
        }
        self
    }

    /// Adds the password of `url`'s userinfo, as written and percent-decoded (the user name is
    /// not a secret; it is only left out where the URL is shown).
    pub fn with_password_of(self, url: &str) -> Self {
        match userinfo(url).and_then(|u| u.split_once(':')) {
            Some((_, password)) => self.with(password).with(&percent_decoded(password)),
            None => self,
        }
    }

    /// `text` with every spelling of every secret (see the module docs) replaced by
    /// [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.needles.is_empty() || text.is_empty() {
            return Cow::Borrowed(text);
        }
        // A needle is found by its windows: all of it when short, else each run of MIN_RUN.
        let mut by_width: HashMap<usize, Vec<&[char]>> = HashMap::new();
        for needle in self.needles.iter() {
            by_width.entry(needle.len().min(MIN_RUN)).or_default().push(needle);
        }
        let mut spans = Vec::new();
        for (&width, needles) in &by_width {
            let windows = Windows::of(width, needles);
            for decode in [false, true] {
                windows.find(text, decode, &mut spans);
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in spans {
            if end <= at {
                continue;
            }
            if start >= at {
                out.push_str(&text[at..start]);
                out.push_str(REDACTED);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// The base64 spellings of `bytes` (standard and URL-safe), at each of the three alignments
/// they can start at in a longer encoded text: the characters that depend on `bytes` alone.
fn base64_forms(bytes: &[u8]) -> Vec<String> {
    let engines = [base64::engine::general_purpose::STANDARD_NO_PAD, base64::engine::general_purpose::URL_SAFE_NO_PAD];
    let mut forms = Vec::new();
    for engine in engines {
        for lead in 0..3usize {
            let mut padded = vec![0u8; lead];
            padded.extend_from_slice(bytes);
            let encoded = engine.encode(&padded);
            // Character k holds bits 6k..6k+6; the secret holds bits 8·lead..8·(lead+len).
            let first = (8 * lead).div_ceil(6);
            let last = (8 * (lead + bytes.len())) / 6;
            if let Some(inner) = encoded.get(first..last)
                && inner.len() >= MIN_RUN.min(bytes.len())
                && !forms.iter().any(|f: &String| f == inner)
            {
                forms.push(inner.to_owned());
            }
        }
    }
    forms
}

/// The windows of one width of some needles, by rolling hash.
struct Windows<'a> {
    width: usize,
    /// The hash of each window, and the window.
    hashes: HashMap<u64, Vec<&'a [char]>>,
    /// BASE^(width - 1), to take the oldest character out of the hash.
    top: u64,
}

const BASE: u64 = 1_000_003;

fn roll(hash: u64, c: char) -> u64 {
    hash.wrapping_mul(BASE).wrapping_add(c as u64)
}

impl<'a> Windows<'a> {
    fn of(width: usize, needles: &[&'a [char]]) -> Windows<'a> {
        let mut hashes: HashMap<u64, Vec<&'a [char]>> = HashMap::new();
        for needle in needles {
            for window in needle.windows(width) {
                let hash = window.iter().fold(0, |h, &c| roll(h, c));
                let same = hashes.entry(hash).or_default();
                if !same.contains(&window) {
                    same.push(window);
                }
            }
        }
        let top = (1..width).fold(1u64, |t, _| t.wrapping_mul(BASE));
        Windows { width, hashes, top }
    }

    /// Adds the byte span in `text` of each window found, reading `text` as written or with its
    /// escapes decoded.
    fn find(&self, text: &str, decode: bool, spans: &mut Vec<(usize, usize)>) {
        let mut ring: std::collections::VecDeque<(char, usize)> = std::collections::VecDeque::with_capacity(self.width);
        let mut hash = 0u64;
        for (c, start, end) in Chars::new(text, decode) {
            if ring.len() == self.width {
                let (old, _) = ring.pop_front().unwrap_or(('\0', 0));
                hash = hash.wrapping_sub((old as u64).wrapping_mul(self.top));
            }
            ring.push_back((c, start));
            hash = roll(hash, c);
            if ring.len() < self.width {
                continue;
            }
            let Some(candidates) = self.hashes.get(&hash) else { continue };
            if candidates.iter().any(|w| w.iter().zip(&ring).all(|(a, (b, _))| a == b)) {
                spans.push((ring[0].1, end));
            }
        }
    }
}

/// The characters of a text with their byte spans; with `decode`, a JSON (`\u0073`, `\/`,
/// `\n`, a surrogate pair), percent (`%73`, ASCII) or HTML (`&#115;`, `&#x73;`) escape is read
/// as the character it stands for, spanning the whole escape.
struct Chars<'a> {
    text: &'a str,
    at: usize,
    decode: bool,
}

impl<'a> Chars<'a> {
    fn new(text: &'a str, decode: bool) -> Chars<'a> {
        Chars { text, at: 0, decode }
    }

    /// The escape at the current place, if one is there: its character and length in bytes.
    fn escape(&self) -> Option<(char, usize)> {
        let rest = &self.text.as_bytes()[self.at..];
        let hex = |s: &[u8]| std::str::from_utf8(s).ok().and_then(|h| u32::from_str_radix(h, 16).ok());
        match rest {
            [b'\\', b'u', ..] => {
                let unit = hex(rest.get(2..6)?)?;
                if (0xD800..0xDC00).contains(&unit) {
                    let low = match rest.get(6..8) {
                        Some(b"\\u") => hex(rest.get(8..12)?)?,
                        _ => return None,
                    };
                    let c = char::decode_utf16([unit as u16, low as u16]).next()?.ok()?;
                    return Some((c, 12));
                }
                Some((char::from_u32(unit)?, 6))
            }
            [b'\\', b'x', ..] => Some((char::from_u32(hex(rest.get(2..4)?)?)?, 4)),
            [b'\\', e, ..] => {
                let c = match e {
                    b'"' | b'\\' | b'/' | b'\'' => *e as char,
                    b'n' => '\n',
                    b't' => '\t',
                    b'r' => '\r',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    _ => return None,
                };
                Some((c, 2))
            }
            [b'%', ..] => hex(rest.get(1..3)?).filter(|b| *b < 0x80).and_then(char::from_u32).map(|c| (c, 3)),
            [b'&', b'#', ..] => {
                let end = rest.iter().take(12).position(|b| *b == b';')?;
                let digits = std::str::from_utf8(&rest[2..end]).ok()?;
                let code = match digits.strip_prefix(['x', 'X']) {
                    Some(h) => u32::from_str_radix(h, 16).ok()?,
                    None => digits.parse().ok()?,
                };
                Some((char::from_u32(code)?, end + 1))
            }
            _ => None,
        }
    }
}

impl Iterator for Chars<'_> {
    /// A character and the byte span it comes from.
    type Item = (char, usize, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.at;
        if let Some((c, len)) = self.decode.then(|| self.escape()).flatten() {
            self.at += len;
            return Some((c, start, self.at));
        }
        let c = self.text[start..].chars().next()?;
        self.at += c.len_utf8();
        Some((c, start, self.at))
    }
}

/// `url` without its userinfo (`user:password@`), as it may be shown.
///
/// ```
/// use planlock::handlers::secret::without_userinfo;
/// assert_eq!(without_userinfo("http://u:p@host:8080/v1?x=@"), "http://host:8080/v1?x=@");
/// assert_eq!(without_userinfo("http://host/v1"), "http://host/v1");
/// ```
pub fn without_userinfo(url: &str) -> String {
    match authority(url) {
        Some((start, end)) => match url[start..end].rfind('@') {
            Some(at) => format!("{}{}", &url[..start], &url[start + at + 1..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// The byte range of `url`'s authority (after `scheme://`, up to the path, query or fragment).
fn authority(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    Some((start, end))
}

fn userinfo(url: &str) -> Option<&str> {
    let (start, end) = authority(url)?;
    let at = url[start..end].rfind('@')?;
    Some(&url[start..start + at])
}

/// `%XX` decoded; a malformed escape is kept as written.
fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-Zq81TnV0x9LmB4cR7yWd";

    #[test]
    fn userinfo_is_removed_and_kept_as_secrets() {
        let url = "https://ada:p%40ss:w0rd@api.example/v1";
        assert_eq!(without_userinfo(url), "https://api.example/v1");
        let s = Secrets::new().with_password_of(url);
        assert_eq!(s.scrub("user ada, p@ss:w0rd, p%40ss:w0rd"), "user ada, [redacted], [redacted]");
        assert_eq!(Secrets::new().with_password_of("http://ada@host/").scrub("ada"), "ada");
        assert_eq!(without_userinfo("not a url @ all"), "not a url @ all");
    }

    #[test]
    fn the_longest_secret_is_replaced_first() {
        let s = Secrets::new().with("abc").with("abcdef");
        assert_eq!(s.scrub("abcdef abc"), "[redacted] [redacted]");
        assert_eq!(Secrets::new().with("").scrub("text"), "text");
    }

    #[test]
    fn every_spelling_of_a_key_is_scrubbed() {
        let s = Secrets::new().with(KEY);
        let json: String = KEY.chars().map(|c| format!("\\u{:04X}", c as u32)).collect();
        let mixed: String = KEY
            .chars()
            .enumerate()
            .map(|(i, c)| if i % 2 == 0 { format!("\\u{:04x}", c as u32) } else { c.to_string() })
            .collect();
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let html: String = KEY.chars().map(|c| format!("&#{};", c as u32)).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(format!("Bearer {KEY}"));
        let b64url = base64::engine::general_purpose::URL_SAFE.encode(format!("x{KEY}"));
        let cut = &KEY[..MIN_RUN];
        let tail = &KEY[KEY.len() - MIN_RUN..];
        for text in [KEY.to_owned(), json, mixed, percent, html, b64, b64url, cut.to_owned(), tail.to_owned()] {
            let written = format!("before {text} after");
            let scrubbed = s.scrub(&written);
            assert!(scrubbed.starts_with("before ") && scrubbed.ends_with(" after"), "{text}: {scrubbed}");
            assert!(scrubbed.contains(REDACTED), "{text}: {scrubbed}");
            // Nothing of the key's runs is left, whatever the spelling.
            for run in KEY.as_bytes().windows(MIN_RUN) {
                assert!(!scrubbed.contains(std::str::from_utf8(run).unwrap()), "{text}: {scrubbed}");
            }
        }
        // Eleven characters of a long key are not a secret of their own.
        assert_eq!(s.scrub(&KEY[..MIN_RUN - 1]), &KEY[..MIN_RUN - 1]);
        assert_eq!(s.scrub("nothing here"), "nothing here");
    }

    #[test]
    fn a_short_secret_is_scrubbed_only_whole() {
        let s = Secrets::new().with("hunter2");
        assert_eq!(s.scrub("pw=hunter2 and hunter"), "pw=[redacted] and hunter");
        assert_eq!(s.scrub("%68unter2"), "[redacted]");
    }
}
