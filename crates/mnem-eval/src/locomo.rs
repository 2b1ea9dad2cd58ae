//! LoCoMo (Maharana et al., ACL 2024): long two-speaker conversations in dated sessions,
//! with questions citing the turns (`dia_id`) that answer them. One team per
//! conversation; each turn one evidence item "Speaker: text", observed at its session's
//! date. Shared images' `blip_caption`s are left out: they are machine-generated
//! descriptions, not what anyone said (and adding them lowered full-text turn recall@5
//! on the dev conversation, 0.473 → 0.463).

use serde::Deserialize;
use serde_json::{Map, Value};
use time::macros::format_description;
use time::PrimitiveDateTime;

use crate::dataset::{
    answer_text, fit_content, quoted_answer, Dataset, Haystack, Item, Question, QuestionClass,
};
use crate::EvalError;
use mnem_core::Timestamp;

const NAME: &str = "locomo";
/// Category 5 questions rest on a false premise (adversarial); reported apart.
const ADVERSARIAL: u64 = 5;

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    sample_id: Option<String>,
    conversation: Map<String, Value>,
    qa: Vec<Qa>,
}

#[derive(Deserialize)]
struct Qa {
    question: String,
    #[serde(default)]
    evidence: Vec<String>,
    category: u64,
    /// Absent on adversarial questions; a number on some counting ones.
    #[serde(default)]
    answer: Value,
}

#[derive(Deserialize)]
struct Turn {
    speaker: String,
    dia_id: String,
    text: String,
}

fn format_error(item: &str, field: &'static str, reason: String) -> EvalError {
    EvalError::Format {
        dataset: NAME,
        item: item.to_string(),
        field,
        reason,
    }
}

/// "1:56 pm on 8 May, 2023", read as UTC.
fn parse_date(item: &str, text: &str) -> Result<Timestamp, EvalError> {
    let format = format_description!(
        "[hour repr:12 padding:none]:[minute] [period case:lower] on [day padding:none] [month repr:long], [year]"
    );
    PrimitiveDateTime::parse(text.trim(), &format)
        .map(|dt| Timestamp::from_datetime(dt.assume_utc()))
        .map_err(|e| format_error(item, "session_N_date_time", format!("{text:?}: {e}")))
}

/// Gold ids are sometimes written several to a string ("D8:6; D9:17").
fn split_evidence(evidence: &[String]) -> Vec<String> {
    evidence
        .iter()
        .flat_map(|e| e.split([';', ',', ' ']))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses a LoCoMo JSON file's text (an array of conversations). `max_questions` keeps
/// the first N questions overall.
pub fn parse(json: &str, max_questions: Option<usize>) -> Result<Dataset, EvalError> {
    let conversations: Vec<Conversation> = serde_json::from_str(json)
        .map_err(|e| format_error("file", "conversations", e.to_string()))?;
    let mut budget = max_questions.unwrap_or(usize::MAX);
    let mut dataset = Dataset {
        name: NAME,
        haystacks: Vec::new(),
        questions: Vec::new(),
    };
    for (n, conversation) in conversations.into_iter().enumerate() {
        if budget == 0 {
            break;
        }
        let name = conversation
            .sample_id
            .clone()
            .unwrap_or_else(|| format!("conversation-{n}"));
        let haystack = dataset.haystacks.len();
        let mut items = Vec::new();
        let mut last_date = None;
        // Sessions are numbered from 1; stop at the first number that is missing.
        for session in 1.. {
            let key = format!("session_{session}");
            let Some(turns) = conversation.conversation.get(&key) else {
                break;
            };
            let date_key = format!("{key}_date_time");
            let date = conversation
                .conversation
                .get(&date_key)
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    format_error(
                        &name,
                        "session_N_date_time",
                        format!("{date_key} is missing"),
                    )
                })?;
            let date = parse_date(&name, date)?;
            last_date = Some(date);
            let turns: Vec<Turn> = serde_json::from_value(turns.clone())
                .map_err(|e| format_error(&name, "session_N", format!("{key}: {e}")))?;
            for (index, turn) in turns.into_iter().enumerate() {
                let text = format!("{}: {}", turn.speaker, turn.text);
                items.push(Item {
                    id: turn.dia_id,
                    group: key.clone(),
                    text: fit_content(&text),
                    observed_at: date.plus_seconds(index as i64),
                });
            }
        }
        // LoCoMo questions carry no date: they are asked a day after the last session.
        let asked_at = last_date
            .ok_or_else(|| format_error(&name, "session_N", "no sessions".into()))?
            .plus_seconds(86_400);
        for (index, qa) in conversation.qa.into_iter().enumerate() {
            if budget == 0 {
                break;
            }
            budget -= 1;
            let gold_items = split_evidence(&qa.evidence);
            let gold_groups = gold_groups(&items, &gold_items);
            let gold_texts = items
                .iter()
                .filter(|item| gold_items.contains(&item.id))
                .map(|item| item.text.as_str());
            let quoted_answer = quoted_answer(&answer_text(&qa.answer), gold_texts);
            let class = if qa.category == ADVERSARIAL {
                QuestionClass::Adversarial
            } else if gold_items.is_empty() {
                QuestionClass::Unscorable
            } else {
                QuestionClass::Scored
            };
            dataset.questions.push(Question {
                id: format!("{name}:{index}"),
                haystack,
                text: qa.question,
                asked_at,
                category: qa.category.to_string(),
                class,
                gold_items,
                gold_groups,
                quoted_answer,
            });
        }
        dataset.haystacks.push(Haystack {
            team: format!("locomo-{name}"),
            items,
        });
    }
    Ok(dataset)
}

/// The sessions holding the gold turns, in first-cited order.
fn gold_groups(items: &[Item], gold_items: &[String]) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    for gold in gold_items {
        if let Some(item) = items.iter().find(|i| &i.id == gold) {
            if !groups.contains(&item.group) {
                groups.push(item.group.clone());
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"[{
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a cat"}
            ],
            "session_2_date_time": "10:05 am on 12 June, 2023",
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The dog is called Rex."}]
        },
        "qa": [
            {"question": "What pet did Ann adopt?", "answer": "a dog", "evidence": ["D1:1; D2:1"], "category": 1},
            {"question": "What did Bo adopt?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "a cat"},
            {"question": "Unanswerable?", "answer": "x", "evidence": [], "category": 4}
        ]
    }]"#;

    #[test]
    fn turns_carry_the_speaker_and_session_dates_but_not_image_captions() {
        let dataset = parse(SAMPLE, None).unwrap();
        let items = &dataset.haystacks[0].items;
        assert_eq!(dataset.haystacks[0].team, "locomo-conv-x");
        assert_eq!(items[0].text, "Ann: I adopted a dog.");
        assert_eq!(items[1].text, "Bo: Look!");
        assert_eq!(items[2].group, "session_2");
        assert_eq!(
            items[2].observed_at,
            Timestamp::parse("d", "2023-06-12T10:05:00Z").unwrap()
        );
    }

    #[test]
    fn questions_split_joined_evidence_and_classify_by_category() {
        let dataset = parse(SAMPLE, None).unwrap();
        let q = &dataset.questions;
        assert_eq!(q[0].gold_items, ["D1:1", "D2:1"]);
        assert_eq!(q[0].gold_groups, ["session_1", "session_2"]);
        assert_eq!(q[0].class, QuestionClass::Scored);
        assert_eq!(q[0].category, "1");
        assert_eq!(q[0].quoted_answer.as_deref(), Some("a dog"));
        assert_eq!(q[1].quoted_answer, None);
        assert_eq!(q[1].class, QuestionClass::Adversarial);
        assert_eq!(q[2].class, QuestionClass::Unscorable);
        assert_eq!(
            q[0].asked_at,
            Timestamp::parse("d", "2023-06-13T10:05:00Z").unwrap()
        );
    }

    #[test]
    fn a_bad_session_date_names_the_conversation() {
        let bad = SAMPLE.replace("1:56 pm on 8 May, 2023", "sometime");
        let err = parse(&bad, None).unwrap_err().to_string();
        assert!(
            err.contains("conv-x") && err.contains("session_N_date_time"),
            "{err}"
        );
    }
}
