//! What a recall derives from its query before any branch runs: anchors, a time hint,
//! phrases, and how deep each branch must read.

use super::RankingProfile;
use crate::anchors::{parse_anchors, Anchor};
use crate::temporal::{parse_time_hint, TimeRange};
use crate::{Order, RecallQuery, Timestamp};

/// What the pipeline derives from a validated query before any branch runs.
#[derive(Debug, Clone)]
pub struct RecallPlan {
    pub query: RecallQuery,
    /// The one clock reading of this recall: expiry is judged against it.
    pub now: Timestamp,
    pub anchors: Vec<Anchor>,
    pub time_hint: Option<TimeRange>,
    /// Quoted phrases, or the whole query when it has several words.
    pub phrases: Vec<String>,
}

impl RecallPlan {
    pub fn new(query: RecallQuery, now: Timestamp) -> Self {
        let reference = query.request_time.unwrap_or(now);
        let time_hint = parse_time_hint(&query.query, reference);
        Self {
            anchors: parse_anchors(&query.query),
            phrases: phrases(&query.query),
            time_hint,
            query,
            now,
        }
    }

    pub fn is_listing(&self) -> bool {
        self.query.is_listing()
    }

    /// The query narrowed to its time hint's period (and to its own `since`/`until`),
    /// for the branches' second, hinted read ([`RankingProfile::hinted_pool`]); `None`
    /// when the profile asks for none, nothing is hinted, or the two periods are disjoint.
    pub fn hinted_query(&self, profile: &RankingProfile) -> Option<RecallQuery> {
        let hint = self.time_hint.as_ref()?;
        if profile.hinted_pool == 0 || self.is_listing() {
            return None;
        }
        let since = self
            .query
            .since
            .map_or(hint.start, |own| own.max(hint.start));
        let until = self.query.until.map_or(hint.end, |own| own.min(hint.end));
        if since >= until {
            return None;
        }
        let mut hinted = self.query.clone();
        hinted.since = Some(since);
        hinted.until = Some(until);
        Some(hinted)
    }

    /// Whether the hinted read is made, given how many of the team's texts the hinted
    /// period holds (counted up to [`crate::SMALL_PERIOD`] + 1; `None` when the store
    /// cannot count them on its index: a read of the past). A short period's texts are
    /// scored directly, at the cost of a short read; a longer one (a month of a long
    /// history) is left to the main pool: its filtered top-k walks most of each posting
    /// list and its vector index widens before it finds enough of the period's texts.
    pub fn reads_hinted_period(texts_in_period: Option<usize>) -> bool {
        texts_in_period.is_none_or(|texts| texts <= crate::SMALL_PERIOD)
    }

    /// How many candidates each branch must return. Exactly `limit` when the core will
    /// keep the backend's own order (a listing, or one lexical branch with nothing that
    /// reorders or drops candidates: the floor only cuts its tail); otherwise a deeper
    /// pool so fusion, anchors and boosts have something to work with.
    pub fn branch_pool(&self, profile: &RankingProfile, fusing: bool) -> usize {
        let reorders = fusing
            || !self.anchors.is_empty()
            || self.time_hint.is_some()
            || !self.phrases.is_empty()
            || (self.query.order == Order::Recent && self.query.min_score.is_some());
        if self.is_listing() || !reorders {
            self.query.limit
        } else {
            profile.branch_pool.max(self.query.limit)
        }
    }
}

/// Phrases a result gets credit for containing: each double-quoted span, else the whole
/// query when it has two to eight words.
fn phrases(query: &str) -> Vec<String> {
    let quoted: Vec<String> = query
        .split('"')
        .skip(1)
        .step_by(2)
        .map(normalise_phrase)
        .filter(|p| p.contains(' '))
        .collect();
    if !quoted.is_empty() {
        return quoted;
    }
    let whole = normalise_phrase(query);
    let words = whole.split(' ').count();
    if (2..=8).contains(&words) {
        vec![whole]
    } else {
        Vec::new()
    }
}

/// Whether `text` contains one of `phrases` (each already normalised by
/// [`normalise_phrase`]): the same answer as normalising `text` and searching it, found
/// without normalising most texts. Every word of a phrase (the first and last possibly
/// cut) is a run of letters and digits in the normalised text, and in an ASCII text that
/// run is in the original too, in some mix of cases: a text missing one of a phrase's
/// words, ignoring ASCII case, cannot contain the phrase. Each word is looked for with
/// `memchr` and the search stops at its first occurrence, so the test costs little
/// whether the words are rare or common. A recall checks every candidate (long turns
/// included); the normalised copy is built only for the texts that pass.
pub(super) fn contains_phrase(text: &str, phrases: &[String]) -> bool {
    // A non-ASCII text is always normalised: `to_lowercase` may turn a letter into ASCII
    // the original does not hold (the Kelvin sign into "k").
    let ascii = text.is_ascii();
    let may_contain = |phrase: &&String| {
        !ascii
            || phrase
                .split(' ')
                .all(|word| contains_ignoring_ascii_case(text.as_bytes(), word.as_bytes()))
    };
    let mut passing = phrases.iter().filter(may_contain).peekable();
    if passing.peek().is_none() {
        return false;
    }
    let normalised = normalise_phrase(text);
    passing.any(|phrase| normalised.contains(phrase.as_str()))
}

/// Whether `needle` (lower case) occurs in `haystack` ignoring ASCII case: the needle's
/// first byte in either case is found by `memchr`, the rest compared in place.
fn contains_ignoring_ascii_case(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let Some(last_start) = haystack.len().checked_sub(needle.len()) else {
        return false;
    };
    memchr::memchr2_iter(first, first.to_ascii_uppercase(), &haystack[..=last_start])
        .any(|at| haystack[at + 1..at + needle.len()].eq_ignore_ascii_case(rest))
}

/// Lowercase words joined by single spaces, punctuation dropped.
///
/// Runs over every candidate's text on each recall, so it builds one string, byte by byte
/// for ASCII text; other words go through `str::to_lowercase` (which knows context such as
/// a word-final sigma).
pub(super) fn normalise_phrase(text: &str) -> String {
    let mut phrase = String::with_capacity(text.len());
    if text.is_ascii() {
        let mut gap = false;
        for byte in text.bytes() {
            if byte.is_ascii_alphanumeric() {
                if gap && !phrase.is_empty() {
                    phrase.push(' ');
                }
                gap = false;
                phrase.push(char::from(byte.to_ascii_lowercase()));
            } else {
                gap = true;
            }
        }
        return phrase;
    }
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        if !phrase.is_empty() {
            phrase.push(' ');
        }
        if word.is_ascii() {
            phrase.extend(word.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            phrase.push_str(&word.to_lowercase());
        }
    }
    phrase
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain definition the fast one must equal: split, lowercase each word, join.
    fn reference(text: &str) -> String {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// 2024-03-15T12:00:00Z, a Friday.
    const NOW: Timestamp = Timestamp::from_seconds(1_710_504_000);
    const DAY: i64 = 86_400;

    fn hinting(pool: usize) -> RankingProfile {
        RankingProfile {
            hinted_pool: pool,
            ..crate::DEFAULT_PROFILE
        }
    }

    #[test]
    fn a_hinted_query_reads_inside_the_hint_and_the_querys_own_bounds() {
        let yesterday_start = NOW.plus_seconds(-DAY - 12 * 3_600);
        let yesterday_end = yesterday_start.plus_seconds(DAY);
        let plan = RecallPlan::new(RecallQuery::text("ferry yesterday"), NOW);
        let hinted = plan.hinted_query(&hinting(10)).expect("hinted");
        assert_eq!(hinted.since, Some(yesterday_start));
        assert_eq!(hinted.until, Some(yesterday_end));
        assert_eq!(hinted.query, "ferry yesterday", "the text is unchanged");

        let own = RecallQuery {
            since: Some(yesterday_start.plus_seconds(3_600)),
            until: Some(NOW),
            ..RecallQuery::text("ferry yesterday")
        };
        let hinted = RecallPlan::new(own, NOW)
            .hinted_query(&hinting(10))
            .expect("overlapping bounds");
        assert_eq!(hinted.since, Some(yesterday_start.plus_seconds(3_600)));
        assert_eq!(hinted.until, Some(yesterday_end));
    }

    #[test]
    fn no_hinted_query_without_a_hint_a_pool_or_an_overlap() {
        let unhinted = RecallPlan::new(RecallQuery::text("ferry timetable"), NOW);
        assert!(unhinted.hinted_query(&hinting(10)).is_none());
        let hinted = RecallPlan::new(RecallQuery::text("ferry yesterday"), NOW);
        assert!(hinted.hinted_query(&hinting(0)).is_none());
        let disjoint = RecallQuery {
            until: Some(NOW.plus_seconds(-3 * DAY)),
            ..RecallQuery::text("ferry yesterday")
        };
        assert!(RecallPlan::new(disjoint, NOW)
            .hinted_query(&hinting(10))
            .is_none());
    }

    #[test]
    fn the_hinted_read_is_made_for_a_short_period_or_one_the_store_cannot_count() {
        assert!(RecallPlan::reads_hinted_period(Some(0)));
        assert!(RecallPlan::reads_hinted_period(Some(crate::SMALL_PERIOD)));
        assert!(!RecallPlan::reads_hinted_period(Some(
            crate::SMALL_PERIOD + 1
        )));
        assert!(RecallPlan::reads_hinted_period(None), "a read of the past");
    }

    #[test]
    fn punctuation_and_case_fold_to_single_spaces() {
        assert_eq!(normalise_phrase("  Hello,  WORLD!--x "), "hello world x");
    }

    #[test]
    fn a_word_final_sigma_lowers_as_in_context() {
        assert_eq!(normalise_phrase("ΟΔΟΣ."), "οδος");
    }

    /// What `contains_phrase` must answer: normalise the text, then search it.
    fn contains_by_normalising(text: &str, phrases: &[String]) -> bool {
        let normalised = normalise_phrase(text);
        phrases.iter().any(|p| normalised.contains(p.as_str()))
    }

    /// A generated phrase as a plan would hold it, one-word phrases included: the rule must
    /// not depend on where phrases come from.
    fn phrase_list(phrase: &str) -> Vec<String> {
        Some(normalise_phrase(phrase))
            .filter(|p| !p.is_empty())
            .into_iter()
            .collect()
    }

    #[test]
    fn a_phrase_is_found_across_punctuation_and_case() {
        let phrases = vec![normalise_phrase("blue car")];
        assert!(contains_phrase("She drove a BLUE, car today", &phrases));
    }

    #[test]
    fn a_phrase_is_found_with_its_end_words_cut() {
        let phrases = vec![normalise_phrase("cat sat")];
        assert!(contains_phrase("The bobcat satisfied everyone", &phrases));
    }

    #[test]
    fn a_text_missing_a_word_or_their_order_does_not_contain_the_phrase() {
        let phrases = vec![normalise_phrase("blue car")];
        assert!(!contains_phrase("a red car", &phrases));
        assert!(!contains_phrase("a car, blue", &phrases));
    }

    #[test]
    fn a_non_ascii_text_is_searched_whole() {
        // U+212A KELVIN SIGN lowers to an ASCII "k" the original text does not hold.
        let phrases = vec![normalise_phrase("ok go")];
        assert!(contains_phrase("o\u{212A} go", &phrases));
    }

    #[test]
    fn an_empty_phrase_list_contains_nothing() {
        assert!(!contains_phrase("anything at all", &[]));
    }

    proptest! {
        #[test]
        fn contains_phrase_equals_normalising_and_searching(
            text in "[abAB0 ,.'-]{0,60}",
            phrase in "[abA0 ]{1,12}",
        ) {
            let phrases = phrase_list(&phrase);
            prop_assert_eq!(
                contains_phrase(&text, &phrases),
                contains_by_normalising(&text, &phrases)
            );
        }

        #[test]
        fn contains_phrase_equals_normalising_and_searching_beyond_ascii(
            text in "[a-cA-CΣσÉé\u{212A}kK ,.-]{0,40}",
            phrase in "[a-cσék ]{1,10}",
        ) {
            let phrases = phrase_list(&phrase);
            prop_assert_eq!(
                contains_phrase(&text, &phrases),
                contains_by_normalising(&text, &phrases)
            );
        }

        #[test]
        fn equals_the_plain_definition(text in "[a-zA-Z0-9 ,.'ΣσÉéİ\u{0130}ß-]{0,40}") {
            prop_assert_eq!(normalise_phrase(&text), reference(&text));
        }

        #[test]
        fn equals_the_plain_definition_on_ascii(text in "[ -~\t\n]{0,60}") {
            prop_assert_eq!(normalise_phrase(&text), reference(&text));
        }
    }
}
