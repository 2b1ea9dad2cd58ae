//! Chat transcripts: JSON Lines of turns (`{"session", "role" | "speaker", "content",
//! "timestamp"}`), or conversations in the OpenAI `messages` shape — a whole file that
//! is a `messages` array or an object holding one, or one such object per line. One
//! evidence item per turn: `source_key` is the session, the speaker leads the text
//! ("Caroline: …", as a transcript reads), and `observed_at` is the turn's time — or, for
//! a turn without one, one second after the session's previous turn, its first turn
//! starting at the conversation's time or the caller's `start`. Times are therefore the
//! same on every read of the same file, which is what makes a re-import a no-op.

use std::collections::HashMap;

use serde_json::Value;

use super::{ImportItem, ImportRead, Location};
use crate::evidence::MAX_CONTENT_BYTES;
use crate::{NewEvidence, SourceType, Timestamp};

/// What the caller knows of the transcript file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatSource {
    /// Names the file in problems and in each item's `source`.
    pub file: String,
    /// The session of turns that name none (e.g. the file's stem).
    pub default_session: String,
    /// When the first turn of a session without times was said (e.g. the file's
    /// modification time).
    pub start: Timestamp,
}

/// Reads a transcript; a line that is not a turn or a conversation is a problem at its
/// line, and the rest are read.
pub fn read_chat(text: &str, source: &ChatSource) -> ImportRead {
    let mut lines = ChatLines::new(source.clone());
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(messages)) => {
            lines.conversation(1, &source.default_session, None, &messages);
            return lines.take();
        }
        Ok(Value::Object(object)) if object.contains_key("messages") => {
            lines.record(1, Value::Object(object));
            return lines.take();
        }
        _ => {}
    }
    for (i, line) in text.lines().enumerate() {
        lines.push(i + 1, line);
    }
    lines.take()
}

/// Reads a transcript given as bytes. Text that is all UTF-8 is read as [`read_chat`]
/// reads it; otherwise it is read as JSON Lines and each line that is not UTF-8 is a
/// problem at its number, so one bad line never costs the rest of the file.
pub fn read_chat_bytes(bytes: &[u8], source: &ChatSource) -> ImportRead {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return read_chat(text, source);
    }
    let mut lines = ChatLines::new(source.clone());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        match std::str::from_utf8(line) {
            Ok(text) => lines.push(i + 1, text.trim_end_matches('\r')),
            Err(_) => lines.problem(i + 1, "not UTF-8 text"),
        }
    }
    lines.take()
}

/// A JSON Lines transcript read a line at a time (a streamed import): the items and
/// problems so far are taken as they come; sessions and their times carry over.
#[derive(Debug, Clone)]
pub struct ChatLines {
    source: ChatSource,
    read: ImportRead,
    /// Per session: its last turn's time and how many turns it has.
    sessions: HashMap<String, (Timestamp, usize)>,
}

impl ChatLines {
    pub fn new(source: ChatSource) -> Self {
        Self {
            source,
            read: ImportRead::default(),
            sessions: HashMap::new(),
        }
    }

    /// Reads line number `line` (1-based) of the input; a blank line is nothing.
    pub fn push(&mut self, line: usize, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.record(line, value),
            Err(err) => self.read.problem(self.at(line), format!("not JSON: {err}")),
        }
    }

    /// Records a problem at `line` the caller found (e.g. a line that is not UTF-8).
    pub fn problem(&mut self, line: usize, reason: impl Into<String>) {
        self.read.problem(self.at(line), reason);
    }

    /// How many items are waiting to be taken.
    pub fn pending(&self) -> usize {
        self.read.items.len()
    }

    /// The items and problems read since the last take.
    pub fn take(&mut self) -> ImportRead {
        std::mem::take(&mut self.read)
    }
}

impl ChatLines {
    fn at(&self, line: usize) -> Location {
        Location::line(&self.source.file, line)
    }

    /// One JSON Lines record: a turn, or a conversation with `messages`.
    fn record(&mut self, line: usize, value: Value) {
        let Value::Object(object) = &value else {
            self.read.problem(self.at(line), "not a JSON object");
            return;
        };
        if let Some(messages) = object.get("messages") {
            let Value::Array(messages) = messages else {
                self.read
                    .problem(self.at(line), "`messages` is not an array");
                return;
            };
            let session = session_of(&value)
                .unwrap_or_else(|| format!("{}#{line}", self.source.default_session));
            let time = match time_of(&value) {
                Ok(time) => time,
                Err(reason) => {
                    self.read.problem(self.at(line), reason);
                    return;
                }
            };
            self.conversation(line, &session, time, messages);
            return;
        }
        let session = session_of(&value).unwrap_or_else(|| self.source.default_session.clone());
        self.turn(line, &session, &value, None);
    }

    /// The turns of one conversation, all at `line`; untimed ones follow `time`.
    fn conversation(
        &mut self,
        line: usize,
        session: &str,
        time: Option<Timestamp>,
        messages: &[Value],
    ) {
        if let (Some(time), false) = (time, self.sessions.contains_key(session)) {
            // The conversation's time is its first turn's, unless a turn says otherwise.
            self.sessions
                .insert(session.to_string(), (time.plus_seconds(-1), 0));
        }
        for (i, message) in messages.iter().enumerate() {
            self.turn(line, session, message, Some(i + 1));
        }
    }

    /// One turn; `message` numbers it inside a conversation on one line.
    fn turn(&mut self, line: usize, session: &str, value: &Value, message: Option<usize>) {
        let at = self.at(line);
        let which = message
            .map(|m| format!("message {m}: "))
            .unwrap_or_default();
        let content = match content_of(value) {
            Some(content) if !content.trim().is_empty() => content,
            Some(_) => {
                self.read.problem(at, format!("{which}empty `content`"));
                return;
            }
            None => {
                self.read.problem(
                    at,
                    format!("{which}no `content` (a turn) or `messages` (a conversation)"),
                );
                return;
            }
        };
        let stated = match time_of(value) {
            Ok(stated) => stated,
            Err(reason) => {
                self.read.problem(at, format!("{which}{reason}"));
                return;
            }
        };
        let text = match speaker_of(value) {
            Some(speaker) => format!("{speaker}: {}", content.trim()),
            None => content.trim().to_string(),
        };
        if text.len() > MAX_CONTENT_BYTES {
            self.read.problem(
                at,
                format!("{which}the turn is longer than {MAX_CONTENT_BYTES} bytes"),
            );
            return;
        }
        let start = self.source.start;
        let entry = self
            .sessions
            .entry(session.to_string())
            .or_insert((start.plus_seconds(-1), 0));
        let observed_at = stated.unwrap_or_else(|| entry.0.plus_seconds(1));
        *entry = (observed_at, entry.1 + 1);
        let mut evidence = NewEvidence::new(text);
        evidence.kind = Some("turn".into());
        evidence.source_type = SourceType::Conversation;
        evidence.source = self.source.file.clone();
        evidence.source_key = Some(session.to_string());
        evidence.observed_at = Some(observed_at);
        self.read.items.push(ImportItem { at, evidence });
    }
}

/// The first string or number under any of `keys`.
fn text_field(value: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| match value.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    })
}

fn session_of(value: &Value) -> Option<String> {
    text_field(
        value,
        &["session", "session_id", "conversation_id", "thread_id"],
    )
}

fn speaker_of(value: &Value) -> Option<String> {
    text_field(value, &["speaker", "name", "role"])
}

/// A string, or OpenAI content parts (`[{"type": "text", "text": …}]`) joined by blank
/// lines; other parts (images) carry no text to remember.
fn content_of(value: &Value) -> Option<String> {
    match value.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
        _ => None,
    }
}

/// `timestamp` (or `time`, `created_at`): RFC 3339, a date, or Unix seconds (or
/// milliseconds, when too large to be seconds).
fn time_of(value: &Value) -> Result<Option<Timestamp>, String> {
    let Some((key, time)) = ["timestamp", "time", "created_at"]
        .iter()
        .find_map(|key| value.get(key).map(|v| (*key, v)))
    else {
        return Ok(None);
    };
    let stamp = match time {
        Value::String(text) => Timestamp::parse(key, text).map_err(|e| e.to_string())?,
        Value::Number(n) => {
            let seconds = n
                .as_f64()
                .ok_or_else(|| format!("`{key}` is not a number of seconds"))?;
            // Past 1e11 s (year 5138) it can only be milliseconds.
            let micros = if seconds.abs() >= 1e11 {
                seconds * 1_000.0
            } else {
                seconds * 1_000_000.0
            };
            Timestamp::from_micros(micros as i64)
                .in_range(key)
                .map_err(|e| e.to_string())?
        }
        Value::Null => return Ok(None),
        _ => return Err(format!("`{key}` is neither a time nor a number")),
    };
    Ok(Some(stamp))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> ChatSource {
        ChatSource {
            file: "chat.jsonl".into(),
            default_session: "chat".into(),
            start: Timestamp::parse("t", "2024-05-01T10:00:00Z").unwrap(),
        }
    }

    fn texts(read: &ImportRead) -> Vec<(&str, &str, String)> {
        read.items
            .iter()
            .map(|i| {
                (
                    i.evidence.content.as_str(),
                    i.evidence.source_key.as_deref().unwrap_or(""),
                    i.evidence.observed_at.unwrap().to_rfc3339(),
                )
            })
            .collect()
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_problem_at_its_number_and_the_rest_are_read() {
        let mut bytes = br#"{"speaker": "Ann", "content": "first"}"#.to_vec();
        bytes.extend_from_slice(b"\n{\"speaker\": \"Bo\", \"content\": \"bad \xff\"}\n");
        bytes.extend_from_slice(br#"{"speaker": "Ann", "content": "third"}"#);
        let read = read_chat_bytes(&bytes, &source());
        let contents: Vec<&str> = read
            .items
            .iter()
            .map(|i| i.evidence.content.as_str())
            .collect();
        assert_eq!(contents, ["Ann: first", "Ann: third"]);
        assert_eq!(read.problems.len(), 1);
        assert_eq!(read.problems[0].at, Location::line("chat.jsonl", 2));
    }

    #[test]
    fn turns_keep_session_speaker_and_time_and_untimed_ones_follow_in_order() {
        let text = r#"{"session": "s1", "speaker": "Ann", "content": "I adopted a dog.", "timestamp": "2024-03-01T09:00:00Z"}
{"session": "s1", "role": "user", "content": "Her name is Rex."}

{"session": "s2", "speaker": "Bo", "content": "Nice!"}
{"session": "s2", "content": "Tell me more", "timestamp": 1709283600}
"#;
        let read = read_chat(text, &source());
        assert_eq!(read.problems, Vec::new());
        assert_eq!(
            texts(&read),
            vec![
                (
                    "Ann: I adopted a dog.",
                    "s1",
                    "2024-03-01T09:00:00.000000Z".to_string()
                ),
                (
                    "user: Her name is Rex.",
                    "s1",
                    "2024-03-01T09:00:01.000000Z".to_string()
                ),
                ("Bo: Nice!", "s2", "2024-05-01T10:00:00.000000Z".to_string()),
                (
                    "Tell me more",
                    "s2",
                    "2024-03-01T09:00:00.000000Z".to_string()
                ),
            ]
        );
        assert_eq!(read.items[1].at, Location::line("chat.jsonl", 2));
        assert_eq!(read.items[2].at, Location::line("chat.jsonl", 4));
        assert_eq!(read.items[0].evidence.source_type, SourceType::Conversation);
        assert_eq!(read.items[0].evidence.kind.as_deref(), Some("turn"));
    }

    #[test]
    fn openai_messages_are_read_from_a_whole_file_or_one_conversation_per_line() {
        let whole = r#"[{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "Where is the Atlas runbook?"}]"#;
        let read = read_chat(whole, &source());
        assert_eq!(
            texts(&read),
            vec![
                (
                    "system: Be brief.",
                    "chat",
                    "2024-05-01T10:00:00.000000Z".to_string()
                ),
                (
                    "user: Where is the Atlas runbook?",
                    "chat",
                    "2024-05-01T10:00:01.000000Z".to_string()
                ),
            ]
        );
        let lines = r#"{"id": 7, "messages": [{"role": "user", "content": "hi"}]}
{"session": "t", "timestamp": "2024-01-02", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}"#;
        let read = read_chat(lines, &source());
        assert_eq!(
            texts(&read),
            vec![
                (
                    "user: hi",
                    "chat#1",
                    "2024-05-01T10:00:00.000000Z".to_string()
                ),
                ("user: a", "t", "2024-01-02T00:00:00.000000Z".to_string()),
                (
                    "assistant: b",
                    "t",
                    "2024-01-02T00:00:01.000000Z".to_string()
                ),
            ]
        );
    }

    #[test]
    fn bad_lines_are_problems_at_their_line_and_the_rest_is_read() {
        let text = "{\"content\": \"kept\"}\nnot json\n[1, 2]\n{\"speaker\": \"Ann\"}\n{\"content\": \"  \"}\n{\"content\": \"x\", \"timestamp\": \"yesterday\"}\n{\"content\": \"also kept\"}";
        let read = read_chat(text, &source());
        let lines: Vec<Option<usize>> = read.problems.iter().map(|p| p.at.line).collect();
        assert_eq!(lines, vec![Some(2), Some(3), Some(4), Some(5), Some(6)]);
        assert!(
            read.problems[0].reason.starts_with("not JSON"),
            "{:?}",
            read.problems[0]
        );
        assert!(
            read.problems[2].reason.contains("no `content`"),
            "{:?}",
            read.problems[2]
        );
        assert!(
            read.problems[4].reason.contains("timestamp"),
            "{:?}",
            read.problems[4]
        );
        let kept: Vec<&str> = read
            .items
            .iter()
            .map(|i| i.evidence.content.as_str())
            .collect();
        assert_eq!(kept, vec!["kept", "also kept"]);
    }

    #[test]
    fn the_same_file_reads_the_same_items_every_time() {
        let text = "{\"content\": \"a\"}\n{\"content\": \"b\"}\n";
        assert_eq!(read_chat(text, &source()), read_chat(text, &source()));
    }
}
