//! The fuzz targets, as functions of raw bytes: the same bodies run under proptest
//! (`tests/targets.rs`), under coverage-guided AFL++ (`fuzz/afl`, `scripts/fuzz_afl.sh`)
//! and over the committed corpora as a regression smoke (`tests/corpora.rs`). Each must
//! never panic on any input and returns `Err` when an invariant it names is broken.

use mnem_api::{
    CorrectInput, ForgetInput, QuarantinedInput, RecallInput, ReleaseInput, RetractInput,
    TraceInput,
};
use mnem_core::anchors::parse_anchors;
use mnem_core::graph::RememberRequest;
use mnem_core::import::{chunk_markdown, read_chat_bytes, read_document, ChatSource, Document};
use mnem_core::pack::Pack;
use mnem_core::screen::{for_readers, quarantine_reason, screen, template_tokens};
use mnem_core::temporal::parse_time_hint;
use mnem_core::text::query_terms;
use mnem_core::{RecallPlan, RecallQuery, SourceType, Timestamp};
use serde_json::Value;

/// An invariant a target checks, or a description of how it broke.
pub type Outcome = Result<(), String>;

/// One input path: its name, the corpus its seeds come from, and its body.
pub struct Target {
    pub name: &'static str,
    /// `corpus/<corpus>.txt` (one seed per line) and/or `corpus/<corpus>/` (a seed per file).
    pub corpus: &'static str,
    pub run: fn(&[u8]) -> Outcome,
}

/// Every target, by name.
pub const TARGETS: &[Target] = &[
    Target {
        name: "query",
        corpus: "query",
        run: query,
    },
    Target {
        name: "stamps",
        corpus: "stamps",
        run: stamps,
    },
    Target {
        name: "screening",
        corpus: "screening",
        run: screening,
    },
    Target {
        name: "remember",
        corpus: "remember",
        run: remember,
    },
    Target {
        name: "mcp",
        corpus: "mcp",
        run: mcp,
    },
    Target {
        name: "pack",
        corpus: "pack",
        run: pack,
    },
    Target {
        name: "chat",
        corpus: "chat",
        run: chat,
    },
    Target {
        name: "markdown",
        corpus: "markdown",
        run: markdown,
    },
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn ensure(holds: bool, broken: impl FnOnce() -> String) -> Outcome {
    if holds {
        Ok(())
    } else {
        Err(broken())
    }
}

/// The instant relative time hints are read against.
const NOW: Timestamp = Timestamp::from_seconds(1_790_000_000);

/// Query parsing: terms, anchors, time hints and the recall plan. An anchor has text; a
/// time hint is a non-empty half-open range.
pub fn query(data: &[u8]) -> Outcome {
    query_at(&String::from_utf8_lossy(data), NOW)
}

/// [`query`] with time hints read against `now` (the proptest target varies it).
pub fn query_at(query: &str, now: Timestamp) -> Outcome {
    let _ = query_terms(query);
    for anchor in parse_anchors(query) {
        ensure(!anchor.text.is_empty(), || "an empty anchor".into())?;
    }
    if let Some(range) = parse_time_hint(query, now) {
        ensure(range.start < range.end, || {
            format!("empty time hint {range:?}")
        })?;
    }
    if let Ok(valid) = RecallQuery::text(query).validated() {
        let _ = RecallPlan::new(valid, now);
    }
    Ok(())
}

/// Stamp parsing: an accepted stamp is inside the range and round-trips through its text.
pub fn stamps(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    let Ok(stamp) = Timestamp::parse("t", &text) else {
        return Ok(());
    };
    ensure((Timestamp::MIN..=Timestamp::MAX).contains(&stamp), || {
        format!("{stamp:?} out of range")
    })?;
    let again = Timestamp::parse("t", &stamp.to_rfc3339()).map_err(|e| e.to_string())?;
    ensure(again == stamp, || {
        format!("{stamp:?} read back as {again:?}")
    })
}

/// Screening: a conversation turn is never held for more than a document with the same
/// text, a finding always gives a reason, and text escaped for readers has no template
/// token left.
pub fn screening(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    let as_document = screen(&text, SourceType::Document);
    let as_turn = screen(&text, SourceType::Conversation);
    ensure(as_turn.len() <= as_document.len(), || {
        format!("turn {as_turn:?} vs document {as_document:?}")
    })?;
    ensure(
        quarantine_reason(&as_document).is_some() != as_document.is_empty(),
        || "a finding without a reason".into(),
    )?;
    let shown = for_readers(&text);
    ensure(template_tokens(&shown).is_empty(), || {
        format!("tokens survive escaping: {:?}", template_tokens(&shown))
    })
}

/// A structured remember request: parsing and whole-request validation answer with a
/// request or an error naming a field.
pub fn remember(data: &[u8]) -> Outcome {
    match serde_json::from_slice::<RememberRequest>(data) {
        Ok(request) => remember_request(request),
        Err(_) => Ok(()),
    }
}

/// [`remember`] on a parsed request (what the proptest targets generate as JSON values).
pub fn remember_request(request: RememberRequest) -> Outcome {
    match request.validated() {
        Err(err) => ensure(!err.field.is_empty(), || format!("unnamed error: {err}")),
        Ok(_) => Ok(()),
    }
}

/// MCP tool arguments (the HTTP API's inputs too): parsing and conversion into a query
/// or a trace view; an error names its field.
pub fn mcp(data: &[u8]) -> Outcome {
    match serde_json::from_slice::<Value>(data) {
        Ok(value) => tool_arguments(value),
        Err(_) => Ok(()),
    }
}

/// [`mcp`] on a parsed value (what the proptest targets generate).
pub fn tool_arguments(value: Value) -> Outcome {
    if let Ok(input) = serde_json::from_value::<RecallInput>(value.clone()) {
        if let Err(err) = input.into_query() {
            ensure(!err.field.is_empty(), || format!("unnamed error: {err}"))?;
        }
    }
    if let Ok(input) = serde_json::from_value::<TraceInput>(value.clone()) {
        if let Err(err) = input.into_parts() {
            ensure(!err.field.is_empty(), || format!("unnamed error: {err}"))?;
        }
    }
    let _ = serde_json::from_value::<RetractInput>(value.clone());
    let _ = serde_json::from_value::<ReleaseInput>(value.clone());
    let _ = serde_json::from_value::<QuarantinedInput>(value.clone());
    let _ = serde_json::from_value::<ForgetInput>(value.clone());
    let _ = serde_json::from_value::<CorrectInput>(value);
    Ok(())
}

/// The pack decoder: a pack it accepts encodes to a pack that decodes to the same
/// records; a refusal names a line of the text, or 0 for the pack as a whole.
pub fn pack(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    match Pack::decode(&text) {
        Ok(pack) => {
            let again = Pack::decode(&pack.encode()).map_err(|e| format!("re-read: {e}"))?;
            ensure(again == pack, || "a pack changed through encode".into())
        }
        Err(err) => ensure(err.line <= text.lines().count().max(1), || {
            format!("line {} of {}: {err}", err.line, text.lines().count())
        }),
    }
}

/// The transcript reader: every item has text and every problem a line of the input.
pub fn chat(data: &[u8]) -> Outcome {
    let source = ChatSource {
        file: "fuzz.jsonl".into(),
        default_session: "fuzz".into(),
        start: NOW,
    };
    let read = read_chat_bytes(data, &source);
    let lines = data.split(|&b| b == b'\n').count().max(1);
    for problem in &read.problems {
        if let Some(line) = problem.at.line {
            ensure(line >= 1 && line <= lines, || {
                format!("problem at line {line} of {lines}")
            })?;
        }
    }
    for item in &read.items {
        ensure(!item.evidence.content.trim().is_empty(), || {
            format!("an empty turn from {:?}", item.at)
        })?;
    }
    Ok(())
}

/// The Markdown reader: a fragment is never empty, and a document is one item per
/// fragment, or refused only when it has none.
pub fn markdown(data: &[u8]) -> Outcome {
    let text = String::from_utf8_lossy(data);
    // A small bound reaches the cutting paths (line, sentence, character) quickly.
    let max_bytes = 64 + data.first().map_or(0, |b| *b as usize);
    let chunked = chunk_markdown(&text, max_bytes);
    for chunk in &chunked.chunks {
        ensure(!chunk.trim().is_empty(), || "an empty fragment".into())?;
    }
    let doc = Document {
        path: "fuzz.md".into(),
        text: text.into_owned(),
        modified: NOW,
    };
    match read_document(&doc, max_bytes, doc.revision_after(None)) {
        Ok(items) => ensure(items.len() == chunked.chunks.len(), || {
            format!(
                "{} items of {} fragments",
                items.len(),
                chunked.chunks.len()
            )
        }),
        Err(_) => ensure(chunked.chunks.is_empty(), || {
            "a document with fragments was refused".into()
        }),
    }
}
