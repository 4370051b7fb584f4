//! The one timestamp of the records: RFC 3339, UTC, read strictly.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// An RFC 3339 UTC timestamp (`updatedAt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// Now, in UTC.
    pub fn now() -> Timestamp {
        Timestamp(OffsetDateTime::now_utc())
    }

    /// `duration` later; `None` past the last time a timestamp can say.
    pub fn plus(self, duration: std::time::Duration) -> Option<Timestamp> {
        self.0.checked_add(time::Duration::try_from(duration).ok()?).map(Timestamp)
    }

    /// `duration` earlier; `None` before the first time a timestamp can say.
    pub fn minus(self, duration: std::time::Duration) -> Option<Timestamp> {
        self.0.checked_sub(time::Duration::try_from(duration).ok()?).map(Timestamp)
    }

    /// Seconds since the Unix epoch.
    pub fn unix_seconds(self) -> i64 {
        self.0.unix_timestamp()
    }

    /// How long after `earlier` this is (zero when it is not after).
    pub fn since(self, earlier: Timestamp) -> std::time::Duration {
        std::time::Duration::try_from(self.0 - earlier.0).unwrap_or_default()
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.format(&Rfc3339) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(fmt::Error),
        }
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let s = String::deserialize(d)?;
        let t = OffsetDateTime::parse(&s, &Rfc3339)
            .map_err(|e| serde::de::Error::custom(format_args!("`{s}` is not an RFC 3339 time: {e}")))?;
        if !t.offset().is_utc() || !s.ends_with(['Z', 'z']) {
            return Err(serde::de::Error::custom(format_args!("`{s}` is not in UTC (it must end in `Z`)")));
        }
        Ok(Timestamp(t))
    }
}
