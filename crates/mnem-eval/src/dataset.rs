//! The one shape every benchmark is read into: haystacks (one team each) of items, and
//! questions with the gold items and groups (sessions) that answer them.

use mnem_core::text::floor_char_boundary;
use mnem_core::Timestamp;

/// A benchmark, read and ready to ingest.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub name: &'static str,
    pub haystacks: Vec<Haystack>,
    pub questions: Vec<Question>,
}

/// The memory of one team: a LongMemEval instance's sessions, a LoCoMo conversation.
#[derive(Debug, Clone)]
pub struct Haystack {
    pub team: String,
    pub items: Vec<Item>,
}

/// One piece of evidence to remember: a conversation turn.
#[derive(Debug, Clone)]
pub struct Item {
    /// The benchmark's id for the turn (LoCoMo `dia_id`, LongMemEval `session:index`).
    pub id: String,
    /// The session the turn belongs to (written as the evidence's `source_key`).
    pub group: String,
    pub text: String,
    pub observed_at: Timestamp,
}

impl Item {
    /// The evidence item a turn is remembered as (by the eval and by `mnem import`): a
    /// conversation turn whose `source_key` is its session.
    pub fn evidence(&self, source: &str) -> mnem_core::NewEvidence {
        let mut new = mnem_core::NewEvidence::new(self.text.clone());
        new.kind = Some("turn".into());
        new.source_type = mnem_core::SourceType::Conversation;
        new.source = source.to_string();
        new.source_key = Some(self.group.clone());
        new.observed_at = Some(self.observed_at);
        new
    }
}

/// How a question is scored and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionClass {
    /// Counted in the headline metrics.
    Scored,
    /// LongMemEval `_abs`: the answer is not in memory; reported separately.
    Abstention,
    /// LoCoMo category 5: a premise that is false; reported separately.
    Adversarial,
    /// Nothing to score against (no gold evidence): counted, not averaged.
    Unscorable,
}

#[derive(Debug, Clone)]
pub struct Question {
    pub id: String,
    /// Index into `Dataset::haystacks`: the team this question is asked in.
    pub haystack: usize,
    pub text: String,
    /// Request time of the recall: relative time words are read against it.
    pub asked_at: Timestamp,
    /// Benchmark category (LongMemEval `question_type`, LoCoMo numeric category).
    pub category: String,
    pub class: QuestionClass,
    pub gold_items: Vec<String>,
    pub gold_groups: Vec<String>,
    /// The benchmark's answer, lower-cased, when a gold turn holds it word for word: the
    /// text an excerpt must keep for the agent to read the answer (see [`quoted_answer`]).
    pub quoted_answer: Option<String>,
}

/// A benchmark's answer as text: answers to counting questions are numbers.
pub(crate) fn answer_text(answer: &serde_json::Value) -> String {
    match answer {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Shortest answer worth looking for in returned text: a shorter one ("3", "no") would
/// be found by accident.
const MIN_QUOTED_ANSWER_CHARS: usize = 3;

/// The answer as a gold turn quotes it: lower-cased, trimmed, without a final full
/// stop, and only if one of `gold_texts` contains it (most answers are paraphrases, and
/// a paraphrase says nothing about what an excerpt kept).
pub(crate) fn quoted_answer<'a>(
    answer: &str,
    gold_texts: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let answer = answer.trim().trim_end_matches('.').trim().to_lowercase();
    if answer.chars().count() < MIN_QUOTED_ANSWER_CHARS {
        return None;
    }
    gold_texts
        .into_iter()
        .any(|text| text.to_lowercase().contains(&answer))
        .then_some(answer)
}

/// Cuts text to the store's content limit at a char boundary (benchmarks occasionally
/// carry pasted documents longer than one evidence item may be).
pub(crate) fn fit_content(text: &str) -> String {
    let cut = floor_char_boundary(text, mnem_core::evidence::MAX_CONTENT_BYTES);
    text[..cut].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_counts_as_quoted_only_when_a_gold_turn_holds_it_word_for_word() {
        let gold = ["Ann: I parked on Level 3 by the lift."];
        assert_eq!(quoted_answer("level 3.", gold).as_deref(), Some("level 3"));
        assert_eq!(quoted_answer("the third level", gold), None);
        assert_eq!(quoted_answer("3", gold), None);
        assert_eq!(quoted_answer("level 3", []), None);
    }

    #[test]
    fn oversized_text_is_cut_to_the_content_limit_without_splitting_a_character() {
        let max = mnem_core::evidence::MAX_CONTENT_BYTES;
        let text = format!("{}é tail", "a".repeat(max - 1)); // 'é' straddles the limit
        let cut = fit_content(&text);
        assert_eq!(cut.len(), max - 1);
        assert_eq!(fit_content("short"), "short");
    }
}
