//! Time hints in query text ("yesterday", "last week", "in March 2024", "2023-05-01",
//! "two days ago", "recently"), resolved against the request time into a half-open range
//! of `observed_at`. A hint is a ranking signal, never a filter: `since`/`until` filter.

use time::{Date, Duration, Month, Time};

use crate::Timestamp;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub start: Timestamp,
    pub end: Timestamp,
}

impl TimeRange {
    pub fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && t < self.end
    }
}

const MONTHS: [(&str, Month); 12] = [
    ("january", Month::January),
    ("february", Month::February),
    ("march", Month::March),
    ("april", Month::April),
    ("may", Month::May),
    ("june", Month::June),
    ("july", Month::July),
    ("august", Month::August),
    ("september", Month::September),
    ("october", Month::October),
    ("november", Month::November),
    ("december", Month::December),
];

const NUMBER_WORDS: [&str; 12] = [
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve",
];

fn midnight(date: Date) -> Timestamp {
    Timestamp::from_datetime(date.with_time(Time::MIDNIGHT).assume_utc())
}

fn day_range(date: Date, days: i64) -> TimeRange {
    let start = midnight(date);
    TimeRange {
        start,
        end: start.plus_seconds(days * 86_400),
    }
}

fn month_range(year: i32, month: Month) -> Option<TimeRange> {
    let start = Date::from_calendar_date(year, month, 1).ok()?;
    let (next_year, next_month) = if month == Month::December {
        (year + 1, Month::January)
    } else {
        (year, month.next())
    };
    let end = Date::from_calendar_date(next_year, next_month, 1).ok()?;
    Some(TimeRange {
        start: midnight(start),
        end: midnight(end),
    })
}

fn year_range(year: i32) -> Option<TimeRange> {
    Some(TimeRange {
        start: midnight(Date::from_calendar_date(year, Month::January, 1).ok()?),
        end: midnight(Date::from_calendar_date(year + 1, Month::January, 1).ok()?),
    })
}

fn parse_count(word: &str) -> Option<i64> {
    word.parse::<i64>()
        .ok()
        .filter(|n| (1..=366).contains(n))
        .or_else(|| {
            NUMBER_WORDS
                .iter()
                .position(|w| *w == word)
                .map(|i| i as i64 + 1)
        })
        .or((word == "a" || word == "an").then_some(1))
}

fn parse_year(word: &str) -> Option<i32> {
    word.parse::<i32>()
        .ok()
        .filter(|y| (1900..=2200).contains(y))
}

/// The first time hint in `query`, relative to `now`.
pub fn parse_time_hint(query: &str, now: Timestamp) -> Option<TimeRange> {
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let query = Words {
        words: &words,
        now,
        today: now.to_datetime().date(),
    };
    // The first word that starts a hint decides; at each word the forms are tried in
    // this order.
    (0..words.len()).find_map(|i| {
        iso_date(&query, i)
            .or_else(|| named_day(&query, i))
            .or_else(|| ago(&query, i))
            .or_else(|| last_or_this(&query, i))
            .or_else(|| month_named(&query, i))
            .or_else(|| year_introduced(&query, i))
    })
}

/// The query's words (lower case) and the request time they are read against.
struct Words<'a> {
    words: &'a [String],
    now: Timestamp,
    today: Date,
}

impl Words<'_> {
    fn at(&self, i: usize) -> Option<&str> {
        self.words.get(i).map(String::as_str)
    }

    /// The word before `i`, if any.
    fn before(&self, i: usize) -> Option<&str> {
        i.checked_sub(1).and_then(|j| self.at(j))
    }
}

/// A month's name or its three-letter form ("sept" too).
fn month_of(word: &str) -> Option<Month> {
    MONTHS
        .iter()
        .find(|(name, _)| {
            *name == word
                || (word.len() == 3 && name.starts_with(word))
                || word == "sept" && *name == "september"
        })
        .map(|(_, m)| *m)
}

/// An ISO date: `2023-05-01`.
fn iso_date(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(q.at(i)?, format)
        .ok()
        .map(|date| day_range(date, 1))
}

/// `today`, `yesterday`, `recently` / `lately` (the last fourteen days).
fn named_day(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    match q.at(i)? {
        "today" => Some(day_range(q.today, 1)),
        "yesterday" => Some(day_range(q.today - Duration::days(1), 1)),
        "recently" | "lately" => Some(TimeRange {
            start: q.now.plus_seconds(-14 * 86_400),
            end: q.now.plus_micros(1),
        }),
        _ => None,
    }
}

/// `N days|weeks|months|years ago`, with slack either side: "two weeks ago" is rarely
/// exact.
fn ago(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    let (n, unit) = (parse_count(q.at(i)?)?, q.at(i + 1)?);
    if q.at(i + 2) != Some("ago") {
        return None;
    }
    let days = match unit.trim_end_matches('s') {
        "day" => n,
        "week" => n * 7,
        "month" => n * 30,
        "year" => n * 365,
        _ => return None,
    };
    let center = q.today - Duration::days(days);
    let slack = (days / 7).clamp(1, 15);
    Some(day_range(center - Duration::days(slack), 2 * slack + 1))
}

/// `last|past|this week|month|year|<month>`: "last March" is the most recent March
/// before this month.
fn last_or_this(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    let last = match q.at(i)? {
        "last" | "past" => true,
        "this" => false,
        _ => return None,
    };
    let today = q.today;
    match q.at(i + 1)? {
        "week" => {
            let monday = today - Duration::days(today.weekday().number_days_from_monday() as i64);
            let start = if last {
                monday - Duration::days(7)
            } else {
                monday
            };
            Some(day_range(start, 7))
        }
        "month" => {
            let (y, m) = (today.year(), today.month());
            if !last {
                return month_range(y, m);
            }
            if m == Month::January {
                month_range(y - 1, Month::December)
            } else {
                month_range(y, m.previous())
            }
        }
        "year" => year_range(today.year() - i32::from(last)),
        next => {
            let month = month_of(next)?;
            let year = if last && u8::from(month) >= u8::from(today.month()) {
                today.year() - 1
            } else {
                today.year()
            };
            month_range(year, month)
        }
    }
}

/// `March 2024`, `in March`: a month word counts only with a year after it or a
/// preposition before it ("the march of progress" is not a date); without a year, the
/// most recent such month.
fn month_named(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    let month = month_of(q.at(i)?)?;
    let year = q.at(i + 1).and_then(parse_year);
    let introduced = matches!(
        q.before(i),
        Some("in" | "during" | "early" | "late" | "mid")
    );
    if year.is_none() && !introduced {
        return None;
    }
    let today = q.today;
    let year = year.unwrap_or(if u8::from(month) > u8::from(today.month()) {
        today.year() - 1
    } else {
        today.year()
    });
    month_range(year, month)
}

/// `in 2023`, `during 2023`.
fn year_introduced(q: &Words<'_>, i: usize) -> Option<TimeRange> {
    if !matches!(q.before(i), Some("in" | "during")) {
        return None;
    }
    year_range(parse_year(q.at(i)?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wednesday 2024-05-15T12:00:00Z.
    fn now() -> Timestamp {
        Timestamp::parse("now", "2024-05-15T12:00:00Z").unwrap()
    }

    fn range(query: &str) -> Option<(String, String)> {
        parse_time_hint(query, now()).map(|r| {
            (
                r.start.to_rfc3339()[..10].to_string(),
                r.end.to_rfc3339()[..10].to_string(),
            )
        })
    }

    fn days(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn relative_days() {
        assert_eq!(
            range("what did I eat yesterday"),
            days("2024-05-14", "2024-05-15")
        );
        assert_eq!(range("plans for today"), days("2024-05-15", "2024-05-16"));
        assert_eq!(
            range("the call two days ago"),
            days("2024-05-12", "2024-05-15")
        );
        assert_eq!(range("3 weeks ago"), days("2024-04-21", "2024-04-28"));
    }

    #[test]
    fn weeks_months_years() {
        assert_eq!(
            range("notes from last week"),
            days("2024-05-06", "2024-05-13")
        );
        assert_eq!(range("this week"), days("2024-05-13", "2024-05-20"));
        assert_eq!(range("last month"), days("2024-04-01", "2024-05-01"));
        assert_eq!(range("in March 2024"), days("2024-03-01", "2024-04-01"));
        assert_eq!(range("last March"), days("2024-03-01", "2024-04-01"));
        assert_eq!(range("in December"), days("2023-12-01", "2024-01-01"));
        assert_eq!(
            range("what happened in 2023"),
            days("2023-01-01", "2024-01-01")
        );
        assert_eq!(range("last year"), days("2023-01-01", "2024-01-01"));
    }

    #[test]
    fn iso_dates_and_recently() {
        assert_eq!(
            range("on 2023-05-01 we met"),
            days("2023-05-01", "2023-05-02")
        );
        let recent = parse_time_hint("what did I buy recently", now()).unwrap();
        assert!(recent.contains(now()));
        assert!(!recent.contains(now().plus_seconds(-15 * 86_400)));
    }

    #[test]
    fn ordinary_sentences_have_no_hint() {
        for query in [
            "what is my favourite colour",
            "may I ask about the deploy",
            "the march of progress",
            "I have 2023 coins",
            "the last thing we decided",
        ] {
            assert_eq!(range(query), None, "{query:?}");
        }
    }
}
