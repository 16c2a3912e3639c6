//! Timestamps as written on disk: RFC 3339 UTC with microseconds and `Z`
//! (`2026-05-21T05:52:34.267699Z`). Reading accepts any RFC 3339 form and the
//! `YYYY-MM-DD HH:MM:SS[.f]` form YAML 1.1 writers produce, quoted or not.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A point in time, in UTC; written as RFC 3339 with microseconds and `Z`
/// (`2026-05-21T05:52:34.267699Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// Any RFC 3339 form, or `YYYY-MM-DD HH:MM:SS[.f]` as YAML 1.1 writers
    /// produce it (without a zone, UTC); `None` for anything else.
    pub fn parse(s: &str) -> Option<Timestamp> {
        let s = s.trim();
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Some(Timestamp(t.with_timezone(&Utc)));
        }
        // YAML 1.1 style: space separator, optional zone.
        if let Ok(t) = DateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f%:z") {
            return Some(Timestamp(t.with_timezone(&Utc)));
        }
        for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
            if let Ok(t) = NaiveDateTime::parse_from_str(s.trim_end_matches('Z'), fmt) {
                return Some(Timestamp(t.and_utc()));
            }
        }
        None
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true))
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(t: DateTime<Utc>) -> Self {
        Timestamp(t)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 timestamp: {s:?}")))
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "date-time"})
    }
}
