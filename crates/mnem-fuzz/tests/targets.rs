//! One fuzz target per input path. Each must never panic on any input, and keeps the
//! invariant named in its comment. `MNEM_FUZZ_CASES=N` sets the cases per target.

use mnem_core::anchors::parse_anchors;
use mnem_core::graph::RememberRequest;
use mnem_core::screen::{quarantine_reason, screen};
use mnem_core::temporal::parse_time_hint;
use mnem_core::text::query_terms;
use mnem_core::{RecallPlan, RecallQuery, SourceType, Timestamp};
use mnem_fuzz::targets::{chat, markdown, pack};
use mnem_fuzz::{config, corpus, json_from, text_from};
use proptest::prelude::*;
use serde_json::Value;

fn any_stamp() -> impl Strategy<Value = Timestamp> {
    (Timestamp::MIN.as_micros()..=Timestamp::MAX.as_micros()).prop_map(Timestamp::from_micros)
}

/// Keys of the structured remember request and of the MCP tools' arguments.
const REQUEST_KEYS: &[&str] = &[
    "evidence",
    "relationships",
    "predicates",
    "idempotency_key",
    "content",
    "kind",
    "source",
    "source_type",
    "authority",
    "source_group",
    "source_key",
    "source_revision",
    "labels",
    "refs",
    "scope",
    "space",
    "observed_at",
    "expires_at",
    "subject",
    "predicate",
    "object",
    "entity",
    "entity_id",
    "name",
    "kind",
    "aliases",
    "value",
    "type",
    "polarity",
    "valid_from",
    "valid_to",
    "supports",
    "evidence_id",
    "start",
    "end",
    "key",
    "single_valued",
    "query",
    "limit",
    "context_bytes",
    "window",
    "kinds",
    "since",
    "until",
    "min_score",
    "order",
    "include_ancestors",
    "valid_at",
    "known_at",
    "known_evidence_ids",
    "known_relationship_ids",
    "expand_from_entity_ids",
    "path_limit",
    "relationship_id",
    "evidence_ids",
    "reason",
    "expected_version",
    "correction",
    "id",
];

proptest! {
    #![proptest_config(config())]

    /// Query parsing: terms, anchors, time hints and the recall plan. A time hint is a
    /// non-empty half-open range.
    #[test]
    fn query_parser(query in text_from(corpus("query")), now in any_stamp()) {
        let _ = query_terms(&query);
        for anchor in parse_anchors(&query) {
            prop_assert!(!anchor.text.is_empty());
        }
        if let Some(range) = parse_time_hint(&query, now) {
            prop_assert!(range.start < range.end, "{range:?}");
        }
        if let Ok(valid) = RecallQuery::text(query).validated() {
            let _ = RecallPlan::new(valid, now);
        }
    }

    /// Stamp parsing: an accepted stamp is inside the range and round-trips through its
    /// text form.
    #[test]
    fn stamp_parsing(text in text_from(corpus("stamps"))) {
        if let Ok(stamp) = Timestamp::parse("t", &text) {
            prop_assert!((Timestamp::MIN..=Timestamp::MAX).contains(&stamp));
            prop_assert_eq!(Timestamp::parse("t", &stamp.to_rfc3339()).unwrap(), stamp);
        }
    }

    /// Screening: every source gets an answer; a conversation turn is never held for
    /// more than a document with the same text.
    #[test]
    fn screening(text in text_from(corpus("screening"))) {
        let as_document = screen(&text, SourceType::Document);
        let as_turn = screen(&text, SourceType::Conversation);
        prop_assert!(as_turn.len() <= as_document.len());
        prop_assert_eq!(quarantine_reason(&as_document).is_some(), !as_document.is_empty());
    }

    /// Structured remember payloads, as JSON text and as JSON values: parsing and the
    /// whole-request validation answer with a value or an error naming a field.
    #[test]
    fn remember_payload_text(text in text_from(corpus("remember"))) {
        if let Ok(request) = serde_json::from_str::<RememberRequest>(&text) {
            if let Err(err) = request.validated() {
                prop_assert!(!err.field.is_empty());
            }
        }
    }

    #[test]
    fn remember_payload_value(value in json_from(REQUEST_KEYS, corpus("remember"))) {
        if let Ok(request) = serde_json::from_value::<RememberRequest>(value) {
            if let Err(err) = request.validated() {
                prop_assert!(!err.field.is_empty());
            }
        }
    }

    /// MCP tool arguments (the same inputs the HTTP API takes): parsing and conversion
    /// into a query or a trace view.
    #[test]
    fn mcp_tool_arguments(value in json_from(REQUEST_KEYS, corpus("mcp"))) {
        mnem_fuzz::targets::tool_arguments(value).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn mcp_tool_arguments_text(text in text_from(corpus("mcp"))) {
        if let Ok(value) = serde_json::from_str::<Value>(&text) {
            mnem_fuzz::targets::tool_arguments(value).map_err(TestCaseError::fail)?;
        }
    }

    /// The pack decoder: what it accepts survives encode and decode unchanged.
    #[test]
    fn pack_decoder(text in text_from(corpus("pack"))) {
        pack(text.as_bytes()).map_err(TestCaseError::fail)?;
    }

    /// The transcript reader, on text and on bytes that are not all UTF-8.
    #[test]
    fn chat_reader(text in text_from(corpus("chat")), junk in proptest::collection::vec(any::<u8>(), 0..64)) {
        chat(text.as_bytes()).map_err(TestCaseError::fail)?;
        let mut bytes = text.into_bytes();
        bytes.extend(junk);
        chat(&bytes).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn markdown_reader(text in text_from(corpus("markdown"))) {
        markdown(text.as_bytes()).map_err(TestCaseError::fail)?;
    }
}
