//! Time hints in query text ("yesterday", "last week", "in March 2024", "2023-05-01",
//! "two days ago", "recently"), resolved against the request time into a half-open range
//! of `observed_at`. A hint is a ranking signal, never a filter: `since`/`until` filter.

use time::{Date, Duration, Month, OffsetDateTime, Time};

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
    let now_dt: OffsetDateTime = now.to_datetime();
    let today = now_dt.date();
    let words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let word = |i: usize| words.get(i).map(String::as_str);
    let month_of = |w: &str| {
        MONTHS
            .iter()
            .find(|(name, _)| {
                *name == w
                    || (w.len() == 3 && name.starts_with(w))
                    || w == "sept" && *name == "september"
            })
            .map(|(_, m)| *m)
    };
    let month_number = |m: Month| u8::from(m);

    for (i, w) in words.iter().enumerate() {
        let w = w.as_str();
        // An ISO date: 2023-05-01.
        if let Ok(date) = Date::parse(w, time::macros::format_description!("[year]-[month]-[day]"))
        {
            return Some(day_range(date, 1));
        }
        match w {
            "today" => return Some(day_range(today, 1)),
            "yesterday" => return Some(day_range(today - Duration::days(1), 1)),
            "recently" | "lately" => {
                return Some(TimeRange {
                    start: now.plus_seconds(-14 * 86_400),
                    end: now.plus_micros(1),
                })
            }
            _ => {}
        }
        // "N days|weeks|months|years ago"
        if let (Some(n), Some(unit), Some("ago")) = (parse_count(w), word(i + 1), word(i + 2)) {
            let days = match unit.trim_end_matches('s') {
                "day" => Some(n),
                "week" => Some(n * 7),
                "month" => Some(n * 30),
                "year" => Some(n * 365),
                _ => None,
            };
            if let Some(days) = days {
                // A day's slack either side: "two weeks ago" is rarely exact.
                let center = today - Duration::days(days);
                let slack = (days / 7).clamp(1, 15);
                return Some(day_range(center - Duration::days(slack), 2 * slack + 1));
            }
        }
        if w == "last" || w == "this" || w == "past" {
            let last = w != "this";
            match word(i + 1) {
                Some("week") => {
                    let monday =
                        today - Duration::days(today.weekday().number_days_from_monday() as i64);
                    let start = if last {
                        monday - Duration::days(7)
                    } else {
                        monday
                    };
                    return Some(day_range(start, 7));
                }
                Some("month") => {
                    let (y, m) = (today.year(), today.month());
                    return if last {
                        let (y, m) = if m == Month::January {
                            (y - 1, Month::December)
                        } else {
                            (y, m.previous())
                        };
                        month_range(y, m)
                    } else {
                        month_range(y, m)
                    };
                }
                Some("year") => return year_range(today.year() - i32::from(last)),
                Some(next) => {
                    if let Some(month) = month_of(next) {
                        // "last March": the most recent March before this month.
                        let year = if last && month_number(month) >= month_number(today.month()) {
                            today.year() - 1
                        } else {
                            today.year()
                        };
                        return month_range(year, month);
                    }
                }
                None => {}
            }
        }
        // "March 2024", "in March": a month word counts only with a year after it or a
        // preposition before it ("the march of progress" is not a date).
        if let Some(month) = month_of(w) {
            let year = word(i + 1).and_then(parse_year);
            let introduced = i > 0
                && matches!(
                    word(i - 1),
                    Some("in" | "during" | "early" | "late" | "mid")
                );
            if year.is_some() || introduced {
                let year = year.unwrap_or(if month_number(month) > month_number(today.month()) {
                    today.year() - 1
                } else {
                    today.year()
                });
                return month_range(year, month);
            }
        }
        if i > 0 && matches!(word(i - 1), Some("in") | Some("during")) {
            if let Some(year) = parse_year(w) {
                return year_range(year);
            }
        }
    }
    None
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
