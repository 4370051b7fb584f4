//! Secrets that a model server may echo back (docs/CONTRACT.md, "Hostile inputs"; CONTRACT §10,
//! §11): the API key and a URL's password are replaced in every text built from a response
//! before it is shown, logged, stored or put on a span, and URLs are shown without their
//! userinfo.

use std::borrow::Cow;
use std::sync::Arc;

/// What replaces a secret in a text.
pub const REDACTED: &str = "[redacted]";

/// The texts that must never leave the process.
///
/// ```
/// use planlock::handlers::secret::Secrets;
/// let secrets = Secrets::new().with("sk-live-123");
/// assert_eq!(secrets.scrub("bad key: Bearer sk-live-123"), "bad key: Bearer [redacted]");
/// ```
#[derive(Clone, Default)]
pub struct Secrets(Vec<Arc<str>>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} kept, not shown)", self.0.len())
    }
}

impl Secrets {
    /// No secrets.
    pub fn new() -> Self {
        Secrets::default()
    }

    /// Adds `secret` (an empty one is nothing to hide); the longest are replaced first, so a
    /// secret that contains another is replaced whole.
    pub fn with(mut self, secret: &str) -> Self {
        if !secret.is_empty() && !self.0.iter().any(|s| &**s == secret) {
            self.0.push(Arc::from(secret));
            self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
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

    /// `text` with every secret replaced by [`REDACTED`].
    pub fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.0 {
            if out.contains(&**secret) {
                out = Cow::Owned(out.replace(&**secret, REDACTED));
            }
        }
        out
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
}
