//! Rate limits (CONTRACT §20): what a model server's headers say about the next call. A client
//! reads `x-ratelimit-remaining-requests`/`-tokens` and `x-ratelimit-reset-requests`/`-tokens`
//! (OpenAI's names, which vLLM's and others' proxies copy) from every answer: when one remaining
//! count is 0, the calls after it wait for its reset instead of being refused. A 429 is tried
//! again after its `retry-after` (or `retry-after-ms`), or after the reset the headers name,
//! when that falls within the call's deadline; otherwise it fails at once, saying how long the
//! server asked to wait. A header that does not parse is ignored; no wait is longer than
//! [`MAX_WAIT`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

/// The longest wait a header can ask for: a larger value (or a nonsense one) counts as this.
pub const MAX_WAIT: Duration = Duration::from_secs(3600);

/// When the next call may go out, as the last answers said; shared by a client's clones.
#[derive(Debug, Default)]
pub(crate) struct Pace {
    not_before: Mutex<Option<Instant>>,
}

impl Pace {
    /// The instant the next call waits for, if it is still ahead.
    pub(crate) fn not_before(&self) -> Option<Instant> {
        let at = *self.not_before.lock().unwrap_or_else(|p| p.into_inner());
        at.filter(|at| *at > Instant::now())
    }

    /// Learns from an answer's headers: a remaining count of 0 holds the next calls until its
    /// reset (the later of the two, requests and tokens); any other answer frees them.
    pub(crate) fn learn(&self, headers: &HeaderMap) {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        let hold = ["requests", "tokens"]
            .iter()
            .filter(|kind| header(&format!("x-ratelimit-remaining-{kind}")) == Some("0"))
            .filter_map(|kind| header(&format!("x-ratelimit-reset-{kind}")).and_then(duration))
            .max();
        *self.not_before.lock().unwrap_or_else(|p| p.into_inner()) = hold.map(|wait| Instant::now() + wait);
    }

    /// Holds the next calls for `wait` at least (a 429's `retry-after`).
    pub(crate) fn hold_for(&self, wait: Duration) {
        let mut at = self.not_before.lock().unwrap_or_else(|p| p.into_inner());
        let until = Instant::now() + wait;
        *at = Some(at.map_or(until, |at| at.max(until)));
    }
}

/// How long a 429's headers ask to wait: `retry-after-ms`, else `retry-after` in seconds (an
/// HTTP date is not read: the reset headers, if any, then decide).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    let millis = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).and_then(|ms| seconds(ms / 1000.0));
    millis.or_else(|| header("retry-after").and_then(|v| v.parse::<f64>().ok()).and_then(seconds))
}

/// `s` seconds, if it is a wait (finite, not negative), at most [`MAX_WAIT`].
fn seconds(s: f64) -> Option<Duration> {
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s.min(MAX_WAIT.as_secs_f64())))
}

/// A reset as the headers write it: `1s`, `6m0s`, `20ms`, `1m2.5s`, or bare seconds (`0.5`).
fn duration(text: &str) -> Option<Duration> {
    if let Ok(s) = text.parse::<f64>() {
        return seconds(s);
    }
    let (mut total, mut rest) = (0.0f64, text);
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, after) = rest.split_at(split);
        let value: f64 = number.parse().ok()?;
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        total += value
            * match unit {
                "h" => 3600.0,
                "m" => 60.0,
                "s" => 1.0,
                "ms" => 0.001,
                _ => return None,
            };
        rest = next;
    }
    seconds(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resets_are_read_as_servers_write_them() {
        assert_eq!(duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(duration("1m2.5s"), Some(Duration::from_secs_f64(62.5)));
        assert_eq!(duration("1h2m3.5s"), Some(MAX_WAIT), "past an hour: the bound");
        assert_eq!(duration("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(duration("99999999h"), Some(MAX_WAIT), "bounded");
        for bad in ["", "s", "1x", "-1", "NaN", "1e400", "1..2s", "ms1"] {
            assert!(duration(bad).is_none_or(|d| d <= MAX_WAIT), "{bad:?}");
        }
        assert_eq!(duration("-1"), None);
        assert_eq!(duration("1x"), None);
    }

    #[test]
    fn a_remaining_count_of_zero_holds_the_next_calls_until_its_reset() {
        let pace = Pace::default();
        let mut headers = HeaderMap::new();
        headers.insert("x-ratelimit-remaining-requests", "0".parse().unwrap());
        headers.insert("x-ratelimit-reset-requests", "2s".parse().unwrap());
        headers.insert("x-ratelimit-remaining-tokens", "100".parse().unwrap());
        headers.insert("x-ratelimit-reset-tokens", "9s".parse().unwrap());
        pace.learn(&headers);
        let wait = pace.not_before().unwrap() - Instant::now();
        assert!(wait > Duration::from_millis(1500) && wait <= Duration::from_secs(2), "{wait:?}");
        pace.learn(&HeaderMap::new());
        assert_eq!(pace.not_before(), None, "an answer without a hold frees the next calls");
    }

    #[test]
    fn retry_after_in_milliseconds_or_seconds() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut date = HeaderMap::new();
        date.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&date), None);
    }
}
