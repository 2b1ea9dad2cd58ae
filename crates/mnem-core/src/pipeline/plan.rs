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

    #[test]
    fn punctuation_and_case_fold_to_single_spaces() {
        assert_eq!(normalise_phrase("  Hello,  WORLD!--x "), "hello world x");
    }

    #[test]
    fn a_word_final_sigma_lowers_as_in_context() {
        assert_eq!(normalise_phrase("ΟΔΟΣ."), "οδος");
    }

    proptest! {
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
