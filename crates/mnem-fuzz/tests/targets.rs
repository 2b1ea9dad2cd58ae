//! One proptest target per input path: the bodies and their invariants are
//! `mnem_fuzz::targets`' (shared with AFL++ and the corpus replay); these generate the
//! inputs. `MNEM_FUZZ_CASES=N` sets the cases per target.

use mnem_core::graph::RememberRequest;
use mnem_core::Timestamp;
use mnem_fuzz::targets::{
    chat, markdown, mcp, pack, query_at, remember, remember_request, screening, stamps,
    tool_arguments, Outcome,
};
use mnem_fuzz::{config, corpus, json_from, text_from};
use proptest::prelude::*;

/// A target's outcome as a proptest failure (shrunk and reported with its input).
fn holds(outcome: Outcome) -> Result<(), TestCaseError> {
    outcome.map_err(TestCaseError::fail)
}

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
    "include_descendants",
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

    /// Query parsing: terms, anchors, time hints and the recall plan, at any instant.
    #[test]
    fn query_parser(query in text_from(corpus("query")), now in any_stamp()) {
        holds(query_at(&query, now))?;
    }

    /// Stamp parsing: an accepted stamp is in range and round-trips through its text.
    #[test]
    fn stamp_parsing(text in text_from(corpus("stamps"))) {
        holds(stamps(text.as_bytes()))?;
    }

    /// Screening: a turn is never held for more than a document with the same text.
    #[test]
    fn screening_rules(text in text_from(corpus("screening"))) {
        holds(screening(text.as_bytes()))?;
    }

    /// Structured remember payloads, as JSON text and as JSON values: validation answers
    /// with a request or an error naming a field.
    #[test]
    fn remember_payload_text(text in text_from(corpus("remember"))) {
        holds(remember(text.as_bytes()))?;
    }

    #[test]
    fn remember_payload_value(value in json_from(REQUEST_KEYS, corpus("remember"))) {
        if let Ok(request) = serde_json::from_value::<RememberRequest>(value) {
            holds(remember_request(request))?;
        }
    }

    /// MCP tool arguments (the same inputs the HTTP API takes), as values and as text.
    #[test]
    fn mcp_tool_arguments(value in json_from(REQUEST_KEYS, corpus("mcp"))) {
        holds(tool_arguments(value))?;
    }

    #[test]
    fn mcp_tool_arguments_text(text in text_from(corpus("mcp"))) {
        holds(mcp(text.as_bytes()))?;
    }

    /// The pack decoder: what it accepts survives encode and decode unchanged.
    #[test]
    fn pack_decoder(text in text_from(corpus("pack"))) {
        holds(pack(text.as_bytes()))?;
    }

    /// The transcript reader, on text and on bytes that are not all UTF-8.
    #[test]
    fn chat_reader(text in text_from(corpus("chat")), junk in proptest::collection::vec(any::<u8>(), 0..64)) {
        holds(chat(text.as_bytes()))?;
        let mut bytes = text.into_bytes();
        bytes.extend(junk);
        holds(chat(&bytes))?;
    }

    #[test]
    fn markdown_reader(text in text_from(corpus("markdown"))) {
        holds(markdown(text.as_bytes()))?;
    }
}
