//! Stamps: UTC instants with microsecond precision, held as integer microseconds since
//! the Unix epoch.
//!
//! Why integers: a variable-width text encoding (RFC 3339 with trailing zeros trimmed)
//! does not sort lexicographically, so a backend comparing or ordering such text gets
//! windows and recency wrong for roughly one stamp in ten (seed 003). Every backend stores
//! this `i64` as-is, so they all round-trip and compare stamps identically.

use std::fmt;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::ValidationError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Timestamp(i64);

impl Timestamp {
    pub const MICROS_PER_SECOND: i64 = 1_000_000;

    pub const fn from_micros(micros: i64) -> Self {
        Self(micros)
    }

    pub const fn as_micros(self) -> i64 {
        self.0
    }

    pub const fn from_seconds(seconds: i64) -> Self {
        Self(seconds * Self::MICROS_PER_SECOND)
    }

    /// Truncates (never rounds) to the microsecond, so a stamp written and read back is
    /// the same value on every backend.
    pub fn from_datetime(dt: OffsetDateTime) -> Self {
        let nanos = dt.unix_timestamp_nanos();
        Self(nanos.div_euclid(1_000) as i64)
    }

    pub fn to_datetime(self) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp_nanos(self.0 as i128 * 1_000)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH)
    }

    pub fn plus_micros(self, micros: i64) -> Self {
        Self(self.0.saturating_add(micros))
    }

    pub fn plus_seconds(self, seconds: i64) -> Self {
        self.plus_micros(seconds.saturating_mul(Self::MICROS_PER_SECOND))
    }

    /// Parses RFC 3339 (any offset, normalised to UTC) or a bare `YYYY-MM-DD`, read as
    /// midnight UTC. `field` names the input in the error.
    pub fn parse(field: &str, text: &str) -> Result<Self, ValidationError> {
        let text = text.trim();
        if let Ok(dt) = OffsetDateTime::parse(text, &Rfc3339) {
            return Ok(Self::from_datetime(dt));
        }
        let date_only = time::macros::format_description!("[year]-[month]-[day]");
        if let Ok(date) = Date::parse(text, date_only) {
            let dt = PrimitiveDateTime::new(date, time::Time::MIDNIGHT).assume_utc();
            return Ok(Self::from_datetime(dt));
        }
        Err(ValidationError::new(
            field,
            format!("`{text}` is not an RFC 3339 time (e.g. 2024-03-01T09:30:00Z) or a date (2024-03-01)"),
        ))
    }

    /// RFC 3339 in UTC with exactly six fractional digits: fixed width, so even the text
    /// form sorts correctly.
    pub fn to_rfc3339(self) -> String {
        let dt = self.to_datetime().to_offset(UtcOffset::UTC);
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second(),
            dt.microsecond()
        )
    }
}

/// Serde for a stamp that people and agents write: RFC 3339 text out; RFC 3339 text (or a
/// bare date) in, and integer microseconds too, which is how such values were first
/// stored, so older rows keep reading.
pub mod rfc3339_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(stamp: &Timestamp, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&stamp.to_rfc3339())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Micros(i64),
        }
        match Written::deserialize(deserializer)? {
            Written::Text(text) => {
                Timestamp::parse("value", &text).map_err(serde::de::Error::custom)
            }
            Written::Micros(micros) => Ok(Timestamp::from_micros(micros)),
        }
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_truncates_nanoseconds_to_microseconds() {
        let t = Timestamp::parse("t", "2024-03-01T00:00:00.123456789Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2024-03-01T00:00:00.123456Z");
    }

    #[test]
    fn parse_normalises_offsets_to_utc() {
        let t = Timestamp::parse("t", "2024-03-01T02:00:00+02:00").unwrap();
        assert_eq!(t, Timestamp::parse("t", "2024-03-01T00:00:00Z").unwrap());
    }

    #[test]
    fn bare_date_is_midnight_utc() {
        let t = Timestamp::parse("t", "2024-03-01").unwrap();
        assert_eq!(t.to_rfc3339(), "2024-03-01T00:00:00.000000Z");
    }

    #[test]
    fn malformed_time_names_the_field() {
        let err = Timestamp::parse("since", "yesterday-ish").unwrap_err();
        assert_eq!(err.field, "since");
    }

    #[test]
    fn text_form_is_fixed_width_so_it_sorts_like_the_integer() {
        let whole = Timestamp::parse("t", "2024-03-01T00:00:00Z").unwrap();
        let later = whole.plus_micros(1);
        assert!(whole.to_rfc3339() < later.to_rfc3339());
        assert_eq!(whole.to_rfc3339().len(), later.to_rfc3339().len());
    }

    #[test]
    fn pre_epoch_stamps_truncate_toward_negative_infinity() {
        let t = Timestamp::parse("t", "1969-12-31T23:59:59.9999999Z").unwrap();
        assert_eq!(t.as_micros(), -1);
        assert_eq!(t.to_rfc3339(), "1969-12-31T23:59:59.999999Z");
    }
}
