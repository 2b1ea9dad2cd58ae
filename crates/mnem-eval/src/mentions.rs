//! What the entity hop could reach on a dataset, read off the texts alone: how many keys
//! each turn mentions ([`mnem_core::mention`]), and for how many questions whose answer
//! is spread over several turns some two of those turns share a rare mention — the only
//! questions a hop from one of them to another can help.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::dataset::{Dataset, QuestionClass};

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MentionReport {
    /// A mention counts as rare when at most this many turns of its haystack mention it.
    pub cut_off: usize,
    /// Keys per turn, median.
    pub keys_p50: usize,
    /// Scored questions citing two or more turns, and those of them where two cited
    /// turns share a rare mention.
    pub multi_turn_questions: usize,
    pub linked: usize,
    /// Those where two cited turns share any mention, however common (a speaker's name
    /// included): the most a hop without a cut-off could link.
    pub linked_at_all: usize,
}

/// One haystack's turns with their keys, and how many turns mention each key.
struct Mentions<'a> {
    keys: HashMap<&'a str, Vec<String>>,
    turns: HashMap<String, usize>,
}

pub fn report(dataset: &Dataset, cut_off: usize) -> MentionReport {
    let mut per_turn: Vec<usize> = Vec::new();
    let haystacks: Vec<Mentions<'_>> = dataset
        .haystacks
        .iter()
        .map(|haystack| {
            let mut keys = HashMap::new();
            let mut turns: HashMap<String, usize> = HashMap::new();
            for item in &haystack.items {
                let mentioned = mnem_core::mention::mentions(&item.text);
                per_turn.push(mentioned.len());
                for key in &mentioned {
                    *turns.entry(key.clone()).or_default() += 1;
                }
                keys.insert(item.id.as_str(), mentioned);
            }
            Mentions { keys, turns }
        })
        .collect();
    per_turn.sort_unstable();
    let mut report = MentionReport {
        cut_off,
        keys_p50: per_turn.get(per_turn.len() / 2).copied().unwrap_or(0),
        ..MentionReport::default()
    };
    for question in &dataset.questions {
        if question.class != QuestionClass::Scored || question.gold_items.len() < 2 {
            continue;
        }
        report.multi_turn_questions += 1;
        let Mentions { keys, turns } = &haystacks[question.haystack];
        let shares = |cut_off: usize| {
            let mut seen: HashSet<&str> = HashSet::new();
            question.gold_items.iter().any(|gold| {
                let rare: Vec<&str> = keys
                    .get(gold.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|key| turns.get(*key).is_some_and(|&n| n <= cut_off))
                    .map(String::as_str)
                    .collect();
                let repeated = rare.iter().any(|key| seen.contains(key));
                seen.extend(rare);
                repeated
            })
        };
        report.linked += usize::from(shares(cut_off));
        report.linked_at_all += usize::from(shares(usize::MAX));
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Haystack, Item, Question};
    use mnem_core::Timestamp;

    fn item(id: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            group: "s1".into(),
            text: text.into(),
            observed_at: Timestamp::from_seconds(0),
        }
    }

    fn question(gold: &[&str]) -> Question {
        Question {
            id: "q".into(),
            haystack: 0,
            text: "what".into(),
            asked_at: Timestamp::from_seconds(0),
            category: "1".into(),
            class: QuestionClass::Scored,
            gold_items: gold.iter().map(|g| g.to_string()).collect(),
            gold_groups: vec!["s1".into()],
            quoted_answer: None,
        }
    }

    #[test]
    fn only_cited_turns_sharing_a_rare_mention_count_as_linked() {
        let dataset = Dataset {
            name: "test",
            haystacks: vec![Haystack {
                team: "t".into(),
                items: vec![
                    item("1", "Ann: we went to Zanzibar in May"),
                    item("2", "Ann: the sunsets in Zanzibar were unreal"),
                    item("3", "Ann: I also love pottery"),
                    item("4", "Bob: nice"),
                ],
            }],
            questions: vec![
                question(&["1", "2"]),
                question(&["1", "3"]),
                question(&["4"]),
            ],
        };
        let report = report(&dataset, 2);
        assert_eq!(
            report.multi_turn_questions, 2,
            "one question cites a single turn"
        );
        assert_eq!(report.linked, 1, "only 1 and 2 share Zanzibar");
        assert_eq!(report.linked_at_all, 2, "1 and 3 share only the speaker");
        let tighter = super::report(&dataset, 1);
        assert_eq!(
            tighter.linked, 0,
            "two turns mention Zanzibar: past a cut-off of 1"
        );
    }
}
