//! Stamps: UTC instants with microsecond precision, held as integer microseconds since
//! the Unix epoch.
//!
//! Why integers: a variable-width text encoding (RFC 3339 with trailing zeros trimmed)
//! does not sort lexicographically, so a backend comparing or ordering such text gets
//! windows and recency wrong for roughly one stamp in ten (CONTRACT §1). Every backend stores
//! this `i64` as-is, so they all round-trip and compare stamps identically.
//!
//! One range is accepted at every entry: years 0001 to 9998 after conversion to UTC
//! ([`Timestamp::MIN`], [`Timestamp::MAX`]). Every stamp in it has a four-digit RFC 3339
//! form in every time zone (`9999-12-31T23:59:59-14:00` is year 10000 in UTC, and year
//! 0000 is not RFC 3339), so no stamp can be stored that cannot be shown.

use std::fmt;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::ValidationError;

/// In JSON a stamp is RFC 3339 text with six fractional digits (what every output shows,
/// and what people and agents write); integer microseconds are read too, the form JSON
/// held before (packs of version 1, rows written then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        rfc3339_text::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        rfc3339_text::deserialize(deserializer)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "RFC 3339, e.g. 2024-03-01T09:30:00Z",
        })
    }
}

impl Timestamp {
    pub const MICROS_PER_SECOND: i64 = 1_000_000;
    /// 0001-01-01T00:00:00Z, the earliest stamp accepted.
    pub const MIN: Timestamp = Timestamp(-62_135_596_800 * Self::MICROS_PER_SECOND);
    /// 9998-12-31T23:59:59.999999Z, the latest stamp accepted.
    pub const MAX: Timestamp = Timestamp(253_370_764_800 * Self::MICROS_PER_SECOND - 1);

    /// `self` when it is inside the accepted range, else an error naming `field`.
    pub fn in_range(self, field: &str) -> Result<Self, ValidationError> {
        if (Self::MIN..=Self::MAX).contains(&self) {
            Ok(self)
        } else {
            Err(ValidationError::new(
                field,
                "is outside the supported range 0001-01-01T00:00:00Z to 9998-12-31T23:59:59Z (UTC)",
            ))
        }
    }

    /// [`Self::in_range`] for an optional stamp.
    pub fn check_optional(field: &str, stamp: Option<Self>) -> Result<(), ValidationError> {
        stamp.map_or(Ok(()), |s| s.in_range(field).map(|_| ()))
    }

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

    /// The instant as a date-time. Stamps outside the accepted range cannot be written;
    /// one that exists anyway (a value computed past the bound) shows as the nearest
    /// bound, never as the epoch.
    pub fn to_datetime(self) -> OffsetDateTime {
        let bounded = self.0.clamp(Self::MIN.0, Self::MAX.0);
        OffsetDateTime::from_unix_timestamp_nanos(bounded as i128 * 1_000)
            .expect("every stamp between MIN and MAX is a valid date-time")
    }

    pub fn plus_micros(self, micros: i64) -> Self {
        Self(self.0.saturating_add(micros))
    }

    pub fn plus_seconds(self, seconds: i64) -> Self {
        self.plus_micros(seconds.saturating_mul(Self::MICROS_PER_SECOND))
    }

    /// Parses RFC 3339 (any offset, normalised to UTC) or a bare `YYYY-MM-DD`, read as
    /// midnight UTC, inside the accepted range. `field` names the input in the error.
    pub fn parse(field: &str, text: &str) -> Result<Self, ValidationError> {
        let text = text.trim();
        if let Ok(dt) = OffsetDateTime::parse(text, &Rfc3339) {
            return Self::from_datetime(dt).in_range(field);
        }
        let date_only = time::macros::format_description!("[year]-[month]-[day]");
        if let Ok(date) = Date::parse(text, date_only) {
            let dt = PrimitiveDateTime::new(date, time::Time::MIDNIGHT).assume_utc();
            return Self::from_datetime(dt).in_range(field);
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
            Written::Micros(micros) => Timestamp::from_micros(micros)
                .in_range("value")
                .map_err(serde::de::Error::custom),
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
    fn the_range_ends_are_the_first_and_last_four_digit_utc_years() {
        assert_eq!(Timestamp::MIN.to_rfc3339(), "0001-01-01T00:00:00.000000Z");
        assert_eq!(Timestamp::MAX.to_rfc3339(), "9998-12-31T23:59:59.999999Z");
        assert_eq!(
            Timestamp::parse("t", "9998-12-31T23:59:59.999999Z").unwrap(),
            Timestamp::MAX
        );
        assert_eq!(Timestamp::parse("t", "0001-01-01").unwrap(), Timestamp::MIN);
    }

    #[test]
    fn stamps_outside_the_range_are_refused_naming_the_field() {
        for text in [
            "9999-12-31T23:59:59-14:00",
            "9999-01-01T00:00:00Z",
            "0000-01-01T00:00:00+14:00",
            "0000-12-31",
            "0001-01-01T00:00:00+00:01",
        ] {
            let err = Timestamp::parse("observed_at", text).unwrap_err();
            assert_eq!(err.field, "observed_at", "{text}");
            assert!(err.reason.contains("outside the supported range"), "{text}");
        }
    }

    #[test]
    fn out_of_range_values_render_as_the_nearest_bound_not_the_epoch() {
        assert_eq!(
            Timestamp::from_micros(i64::MAX).to_rfc3339(),
            "9998-12-31T23:59:59.999999Z"
        );
        assert_eq!(
            Timestamp::from_micros(i64::MIN).to_rfc3339(),
            "0001-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn integer_microseconds_are_range_checked_too() {
        #[derive(serde::Deserialize)]
        struct Row {
            #[serde(with = "rfc3339_text")]
            at: Timestamp,
        }
        let ok: Row = serde_json::from_str(r#"{"at": 0}"#).unwrap();
        assert_eq!(ok.at, Timestamp::from_micros(0));
        let far = format!(r#"{{"at": {}}}"#, Timestamp::MAX.as_micros() + 1);
        assert!(serde_json::from_str::<Row>(&far).is_err());
    }

    mod round_trip {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Every accepted stamp prints as RFC 3339 that parses back to itself.
            #[test]
            fn every_accepted_stamp_round_trips_through_its_text(
                micros in Timestamp::MIN.as_micros()..=Timestamp::MAX.as_micros()
            ) {
                let stamp = Timestamp::from_micros(micros);
                let text = stamp.to_rfc3339();
                prop_assert_eq!(text.len(), 27);
                prop_assert_eq!(Timestamp::parse("t", &text).unwrap(), stamp);
            }

            /// Any offset the parser accepts gives a stamp in range or a refusal: never
            /// an out-of-range value, and an accepted one round-trips.
            #[test]
            fn any_offset_input_is_in_range_or_refused(
                year in 0i32..=9999, day in 1u8..=28, hour in 0u8..=23,
                offset in -14i32..=14, minus in any::<bool>()
            ) {
                let sign = if minus { '-' } else { '+' };
                let text = format!(
                    "{year:04}-06-{day:02}T{hour:02}:30:00{sign}{:02}:00",
                    offset.abs()
                );
                if let Ok(stamp) = Timestamp::parse("t", &text) {
                    prop_assert!((Timestamp::MIN..=Timestamp::MAX).contains(&stamp));
                    prop_assert_eq!(Timestamp::parse("t", &stamp.to_rfc3339()).unwrap(), stamp);
                }
            }
        }
    }

    #[test]
    fn pre_epoch_stamps_truncate_toward_negative_infinity() {
        let t = Timestamp::parse("t", "1969-12-31T23:59:59.9999999Z").unwrap();
        assert_eq!(t.as_micros(), -1);
        assert_eq!(t.to_rfc3339(), "1969-12-31T23:59:59.999999Z");
    }
}
