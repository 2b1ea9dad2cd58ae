//! LongMemEval (Wu et al., ICLR 2025): one instance per question, each with its own
//! haystack of dated sessions. Every instance becomes its own team; every non-empty turn
//! one evidence item observed at its session's date (plus its index in seconds, so turns
//! keep their order), with the session id as `source_key`.

use serde::Deserialize;
use time::macros::format_description;
use time::PrimitiveDateTime;

use crate::dataset::{
    answer_text, fit_content, quoted_answer, Dataset, Haystack, Item, Question, QuestionClass,
};
use crate::EvalError;
use mnem_core::Timestamp;

const NAME: &str = "longmemeval";

#[derive(Deserialize)]
struct Instance {
    question_id: String,
    question_type: String,
    question: String,
    question_date: String,
    haystack_session_ids: Vec<String>,
    haystack_dates: Vec<String>,
    haystack_sessions: Vec<Vec<Turn>>,
    #[serde(default)]
    answer_session_ids: Vec<String>,
    /// A string, or a number for counting questions.
    #[serde(default)]
    answer: serde_json::Value,
}

#[derive(Deserialize)]
struct Turn {
    content: String,
    #[serde(default)]
    has_answer: bool,
}

/// "2023/05/20 (Sat) 02:21", read as UTC.
fn parse_date(item: &str, field: &'static str, text: &str) -> Result<Timestamp, EvalError> {
    let format = format_description!("[year]/[month]/[day] ([weekday repr:short]) [hour]:[minute]");
    PrimitiveDateTime::parse(text.trim(), &format)
        .map(|dt| Timestamp::from_datetime(dt.assume_utc()))
        .map_err(|e| EvalError::Format {
            dataset: NAME,
            item: item.to_string(),
            field,
            reason: format!("{text:?}: {e}"),
        })
}

/// Parses a LongMemEval JSON file's text. `max_questions` keeps the first N instances.
pub fn parse(json: &str, max_questions: Option<usize>) -> Result<Dataset, EvalError> {
    let instances: Vec<Instance> = serde_json::from_str(json).map_err(|e| EvalError::Format {
        dataset: NAME,
        item: "file".into(),
        field: "instances",
        reason: e.to_string(),
    })?;
    let take = max_questions.unwrap_or(usize::MAX);
    let mut dataset = Dataset {
        name: NAME,
        haystacks: Vec::new(),
        questions: Vec::new(),
    };
    for instance in instances.into_iter().take(take) {
        let qid = instance.question_id.clone();
        let sessions = instance.haystack_sessions.len();
        if instance.haystack_session_ids.len() != sessions
            || instance.haystack_dates.len() != sessions
        {
            return Err(EvalError::Format {
                dataset: NAME,
                item: qid,
                field: "haystack_sessions",
                reason: "session ids, dates and sessions differ in length".into(),
            });
        }
        let mut items = Vec::new();
        let mut gold_items = Vec::new();
        let mut gold_texts = Vec::new();
        let answer_sessions = &instance.answer_session_ids;
        for ((session, id), date) in instance
            .haystack_sessions
            .iter()
            .zip(&instance.haystack_session_ids)
            .zip(&instance.haystack_dates)
        {
            let day = parse_date(&qid, "haystack_dates", date)?;
            for (index, turn) in session.iter().enumerate() {
                if turn.content.trim().is_empty() {
                    continue;
                }
                let item_id = format!("{id}:{index}");
                // A turn is gold only inside an answer session: LongMemEval marks
                // `has_answer` there (and its turn-level metric is defined over them).
                if turn.has_answer && answer_sessions.contains(id) {
                    gold_items.push(item_id.clone());
                    gold_texts.push(turn.content.as_str());
                }
                items.push(Item {
                    id: item_id,
                    group: id.clone(),
                    text: fit_content(&turn.content),
                    observed_at: day.plus_seconds(index as i64),
                });
            }
        }
        let class = if qid.ends_with("_abs") {
            QuestionClass::Abstention
        } else if answer_sessions.is_empty() {
            QuestionClass::Unscorable
        } else {
            QuestionClass::Scored
        };
        dataset.questions.push(Question {
            id: qid.clone(),
            haystack: dataset.haystacks.len(),
            text: instance.question,
            asked_at: parse_date(&qid, "question_date", &instance.question_date)?,
            category: instance.question_type,
            class,
            gold_items,
            gold_groups: answer_sessions.clone(),
            quoted_answer: quoted_answer(&answer_text(&instance.answer), gold_texts),
        });
        dataset.haystacks.push(Haystack {
            team: format!("lme-{qid}"),
            items,
        });
    }
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"[{
        "question_id": "q1", "question_type": "single-session-user",
        "question": "Where did I park?", "question_date": "2023/05/30 (Tue) 22:16",
        "answer": "level 3", "answer_session_ids": ["s2"],
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 16:16", "2023/05/21 (Sun) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "hello"}, {"role": "assistant", "content": " "}],
            [{"role": "user", "content": "I parked on level 3", "has_answer": true},
             {"role": "assistant", "content": "Noted."}]
        ]
    }, {
        "question_id": "q2_abs", "question_type": "temporal-reasoning",
        "question": "When did I sell my boat?", "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "never", "answer_session_ids": [],
        "haystack_session_ids": ["s3"], "haystack_dates": ["2023/05/22 (Mon) 08:00"],
        "haystack_sessions": [[{"role": "user", "content": "I have a boat"}]]
    }]"#;

    #[test]
    fn each_instance_is_a_team_of_non_empty_turns_with_session_dates_and_gold() {
        let dataset = parse(SAMPLE, None).unwrap();
        assert_eq!(dataset.haystacks.len(), 2);
        let first = &dataset.haystacks[0];
        assert_eq!(first.team, "lme-q1");
        let ids: Vec<&str> = first.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["s1:0", "s2:0", "s2:1"]);
        assert_eq!(first.items[1].group, "s2");
        assert_eq!(
            first.items[2].observed_at,
            Timestamp::parse("d", "2023-05-21T09:00:01Z").unwrap()
        );
        let q = &dataset.questions[0];
        assert_eq!(q.gold_items, ["s2:0"]);
        assert_eq!(q.gold_groups, ["s2"]);
        assert_eq!(q.quoted_answer.as_deref(), Some("level 3"));
        assert_eq!(q.class, QuestionClass::Scored);
        assert_eq!(
            q.asked_at,
            Timestamp::parse("d", "2023-05-30T22:16:00Z").unwrap()
        );
        assert_eq!(dataset.questions[1].class, QuestionClass::Abstention);
        assert_eq!(dataset.questions[1].haystack, 1);
    }

    #[test]
    fn max_questions_keeps_the_first_instances() {
        assert_eq!(parse(SAMPLE, Some(1)).unwrap().questions.len(), 1);
    }

    #[test]
    fn a_bad_date_names_the_instance_and_field() {
        let bad = SAMPLE.replace("2023/05/30 (Tue) 22:16", "yesterday");
        let err = parse(&bad, None).unwrap_err().to_string();
        assert!(err.contains("q1") && err.contains("question_date"), "{err}");
    }
}
