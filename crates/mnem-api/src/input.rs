//! Tool arguments: what an MCP client sends, with JSON Schemas that refuse unknown fields,
//! turned into core types (stamps from RFC 3339 text, closed vocabularies parsed) with
//! errors that name the field.

use mnem_core::graph::{Correction, HypothesisStatus, RememberRequest};
use mnem_core::pack::PackSelection;
use mnem_core::{
    EntityId, EvidenceId, HypothesisId, Order, RecallQuery, Ref, RelationshipId, Scope, Timestamp,
    ValidationError,
};
use mnem_store::GraphView;
use schemars::JsonSchema;
use serde::Deserialize;

fn stamp(field: &str, text: Option<String>) -> Result<Option<Timestamp>, ValidationError> {
    text.map(|t| Timestamp::parse(field, &t)).transpose()
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallInput {
    /// What to look for, in plain words (at most 512 characters). Without it, give
    /// `expand_from_entity_ids`, or `scope` or `refs` to list (newest first).
    pub query: Option<String>,
    /// Results to return at most (1-50, default 10).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
    /// Byte budget of all returned contexts together, windows included (default 6000).
    pub context_bytes: Option<usize>,
    /// Evidence window (0-5): each result also brings up to this many neighbouring items
    /// on each side from its conversation, thread or document (`before`/`after`, in
    /// order; `hit` marks a neighbour that matched too). 0 turns it off.
    #[schemars(range(max = 5))]
    pub window: Option<usize>,
    /// Only evidence of these kinds (fact, decision, preference, observation, ...).
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only evidence observed at or after this time (RFC 3339 or YYYY-MM-DD).
    pub since: Option<String>,
    /// Only evidence observed before this time (RFC 3339 or YYYY-MM-DD).
    pub until: Option<String>,
    /// Drop results scoring below this (scores are in (0, 1]).
    pub min_score: Option<f64>,
    /// `relevance` (default) or `recent`.
    // `default` tells schemars the field is optional: `schema_with` alone made it required.
    #[serde(default)]
    #[schemars(schema_with = "order_words")]
    pub order: Option<String>,
    /// A scope path such as `acme/api` (the form `remember` takes too).
    pub scope: Option<String>,
    /// With `scope`: also read its ancestors up to team-wide.
    #[serde(default)]
    pub include_ancestors: bool,
    /// With `scope`: also read every scope under it.
    #[serde(default)]
    pub include_descendants: bool,
    /// Real-world time: what was valid then.
    pub valid_at: Option<String>,
    /// System time: what memory knew then.
    pub known_at: Option<String>,
    /// Evidence already seen (at most 200): not returned again.
    #[serde(default)]
    pub known_evidence_ids: Vec<EvidenceId>,
    /// Relationships already seen (at most 200): not in discovery paths.
    #[serde(default)]
    pub known_relationship_ids: Vec<RelationshipId>,
    /// Only evidence carrying one of these refs.
    #[serde(default)]
    pub refs: Vec<Ref>,
    /// Entities to explore from (at most 50), e.g. from an earlier discovery path.
    #[serde(default)]
    pub expand_from_entity_ids: Vec<EntityId>,
    /// Discovery paths to return at most (0-20, default 5).
    #[schemars(range(max = 20))]
    pub path_limit: Option<usize>,
    /// Also return `related_hypotheses`: speculative links dreamed from two relationships
    /// near the results. Never evidence; confirm one only by remembering its proof.
    #[serde(default)]
    pub include_hypotheses: bool,
    /// Also return `community_summaries`: short summaries of the entity clusters around
    /// the results, only in result slots the results left unused. Never evidence.
    #[serde(default)]
    pub include_communities: bool,
}

/// The words `order` takes (a test holds each to what the parser reads).
const ORDER_WORDS: [&str; 2] = ["relevance", "recent"];

fn order_words(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ORDER_WORDS})
}

impl RecallInput {
    /// The recall this asks for. An agent must ask something: a query, entities to
    /// expand from, or a scope or refs to list (a bare listing of the whole team is for
    /// people, on the CLI).
    pub fn into_query(self) -> Result<RecallQuery, ValidationError> {
        let query = self.query.unwrap_or_default();
        let narrowed = self.scope.is_some() || !self.refs.is_empty();
        if query.trim().is_empty() && self.expand_from_entity_ids.is_empty() && !narrowed {
            return Err(ValidationError::new(
                "query",
                "give a query, expand_from_entity_ids, or a scope or refs to list",
            ));
        }
        let defaults = RecallQuery::default();
        Ok(RecallQuery {
            query,
            limit: self.limit.unwrap_or(defaults.limit),
            context_bytes: self.context_bytes.unwrap_or(defaults.context_bytes),
            kinds: self.kinds,
            since: stamp("since", self.since)?,
            until: stamp("until", self.until)?,
            min_score: self.min_score,
            order: self
                .order
                .map(|o| o.parse::<Order>())
                .transpose()?
                .unwrap_or_default(),
            scope: self.scope.map(|s| Scope::parse(&s)).transpose()?,
            include_ancestors: self.include_ancestors,
            include_descendants: self.include_descendants,
            valid_at: stamp("valid_at", self.valid_at)?,
            known_at: stamp("known_at", self.known_at)?,
            known_evidence_ids: self.known_evidence_ids,
            known_relationship_ids: self.known_relationship_ids,
            expand_from_entity_ids: self.expand_from_entity_ids,
            refs: self.refs,
            path_limit: self.path_limit.unwrap_or(defaults.path_limit),
            window: self.window.unwrap_or(defaults.window),
            include_hypotheses: self.include_hypotheses,
            include_communities: self.include_communities,
            ..defaults
        })
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TraceInput {
    /// A relationship id from a discovery path or a remember outcome.
    pub relationship_id: RelationshipId,
    /// Real-world time: validity as of then.
    pub valid_at: Option<String>,
    /// System time: the relationship as memory knew it then.
    pub known_at: Option<String>,
}

impl TraceInput {
    pub fn into_parts(self) -> Result<(RelationshipId, GraphView), ValidationError> {
        Ok((
            self.relationship_id,
            GraphView {
                valid_at: stamp("valid_at", self.valid_at)?,
                known_at: stamp("known_at", self.known_at)?,
            },
        ))
    }
}

/// Hypotheses listed by default, and at most.
pub const DEFAULT_HYPOTHESES_LISTED: usize = 20;
pub const MAX_HYPOTHESES_LISTED: usize = 100;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListHypothesesInput {
    /// Only these statuses (default: all).
    #[serde(default)]
    #[schemars(schema_with = "mnem_core::graph::request::vocabulary::hypothesis_statuses")]
    pub statuses: Vec<String>,
    /// At most this many, newest first (1-100, default 20).
    pub limit: Option<usize>,
}

impl ListHypothesesInput {
    pub fn into_parts(self) -> Result<(Vec<HypothesisStatus>, usize), ValidationError> {
        let limit = self.limit.unwrap_or(DEFAULT_HYPOTHESES_LISTED);
        if !(1..=MAX_HYPOTHESES_LISTED).contains(&limit) {
            return Err(ValidationError::new(
                "limit",
                format!("must be 1 to {MAX_HYPOTHESES_LISTED}"),
            ));
        }
        let statuses = self
            .statuses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                s.parse().map_err(|e: ValidationError| {
                    ValidationError::new(format!("statuses[{i}]"), e.reason)
                })
            })
            .collect::<Result<_, _>>()?;
        Ok((statuses, limit))
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetHypothesisInput {
    pub hypothesis_id: HypothesisId,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveHypothesisInput {
    pub hypothesis_id: HypothesisId,
    /// `confirm` (needs `proof`) or `reject`.
    #[schemars(schema_with = "mnem_core::graph::request::vocabulary::hypothesis_decision")]
    pub decision: String,
    /// Why (1-1,000 characters).
    pub reason: String,
    /// For `confirm`: a request exactly as the `remember` tool takes it (evidence and at
    /// least one relationship citing it) that proves the hypothesis; it is written and
    /// verified like any remember. (Its schema is `remember`'s, not repeated here.)
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub proof: Option<RememberRequest>,
}

/// The largest pack `export_memory_pack` returns by default, and at most.
pub const DEFAULT_PACK_BYTES: usize = 1024 * 1024;
pub const MAX_PACK_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportInput {
    /// Only evidence in this scope path or under it (`acme/api`).
    pub scope: Option<String>,
    /// Only evidence observed at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Only evidence observed before this RFC 3339 time.
    pub until: Option<String>,
    /// Refuse a pack larger than this many bytes (default 1 MiB, at most 16 MiB).
    pub max_bytes: Option<usize>,
}

impl ExportInput {
    /// The selection, and the byte cap.
    pub fn into_parts(self) -> Result<(PackSelection, usize), ValidationError> {
        let max_bytes = self.max_bytes.unwrap_or(DEFAULT_PACK_BYTES);
        if !(1..=MAX_PACK_BYTES).contains(&max_bytes) {
            return Err(ValidationError::new(
                "max_bytes",
                format!("must be 1 to {MAX_PACK_BYTES}"),
            ));
        }
        let selection = PackSelection {
            scope: self.scope.map(|s| Scope::parse(&s)).transpose()?,
            since: stamp("since", self.since)?,
            until: stamp("until", self.until)?,
        }
        .checked()?;
        Ok((selection, max_bytes))
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetractInput {
    /// The evidence to retract (1-200 ids).
    pub evidence_ids: Vec<EvidenceId>,
    /// Why; kept in the lifecycle log.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseInput {
    /// Quarantined evidence to return to recall (1-200 ids), from a write response's
    /// `evidence[].evidence_id` or the `quarantined` listing.
    pub evidence_ids: Vec<EvidenceId>,
    /// Why it is safe to release; kept in the lifecycle log.
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuarantinedInput {
    /// How many held items to list, most recently recorded first (1-1000, default 50).
    pub limit: Option<usize>,
}

/// One evidence item for the console: `POST /v1/show`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowInput {
    /// The evidence item: its record, lifecycle history, writes and recall usage.
    pub evidence_id: EvidenceId,
}

/// `POST /v1/status` takes nothing.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {}

/// `POST /v1/scopes`: the scopes the caller could recall from.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopesInput {
    /// Only this scope path and those under it (`acme` lists `acme`, `acme/api`, never
    /// `acmex`); the whole team's when absent.
    pub under: Option<String>,
    /// At most this many, in path order (default 100, at most 1,000).
    pub limit: Option<usize>,
}

/// Scopes a listing returns when the request does not say.
pub const DEFAULT_SCOPES_LISTED: usize = 100;

/// Held items a listing returns when the request does not say.
pub const DEFAULT_HELD_LISTED: usize = 50;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetInput {
    /// Your own private evidence to erase (1-200 ids).
    pub evidence_ids: Vec<EvidenceId>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CorrectInput {
    /// The relationship to correct.
    pub relationship_id: RelationshipId,
    /// The new version: `expected_version` from trace_memory, `reason`, `supports`
    /// citing stored evidence by `evidence_id`, and any of object, polarity,
    /// predicate_surface, valid_from, valid_to.
    pub correction: Correction,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_recall_needs_a_query_entities_or_a_scope_or_refs_to_list() {
        let err = RecallInput::default().into_query().unwrap_err();
        assert_eq!(err.field, "query");
        let blank = RecallInput {
            query: Some("  ".into()),
            ..RecallInput::default()
        };
        assert_eq!(blank.into_query().unwrap_err().field, "query");
        let expand = RecallInput {
            expand_from_entity_ids: vec!["0190a5e4-0000-7000-8000-000000000001"
                .parse::<EntityId>()
                .unwrap()],
            ..RecallInput::default()
        };
        assert!(expand.into_query().is_ok());
        let scope = RecallInput {
            scope: Some("acme/api".into()),
            ..RecallInput::default()
        };
        assert!(scope.into_query().expect("a scope listing").is_listing());
        let refs = RecallInput {
            refs: vec![Ref::new("issue", "ABC-1")],
            ..RecallInput::default()
        };
        let listed = refs.into_query().expect("a lookup by ref");
        assert!(listed.is_listing());
        assert_eq!(listed.refs, vec![Ref::new("issue", "ABC-1")]);
    }

    #[test]
    fn bad_values_name_their_field() {
        let bad = |input: RecallInput| input.into_query().unwrap_err().field;
        let with = |f: fn(&mut RecallInput)| {
            let mut input = RecallInput {
                query: Some("x".into()),
                ..RecallInput::default()
            };
            f(&mut input);
            input
        };
        assert_eq!(bad(with(|i| i.since = Some("soon".into()))), "since");
        assert_eq!(bad(with(|i| i.order = Some("sideways".into()))), "order");
        assert_eq!(bad(with(|i| i.scope = Some("a//b".into()))), "scope");
    }

    #[test]
    fn the_query_schema_promises_no_default_it_would_refuse() {
        let schema = serde_json::to_value(schemars::schema_for!(RecallInput)).unwrap();
        let query = &schema["properties"]["query"];
        assert!(query.is_object(), "{schema}");
        assert!(query.get("default").is_none(), "{query}");
        let empty = serde_json::from_value::<RecallInput>(serde_json::json!({"query": ""}));
        assert_eq!(empty.unwrap().into_query().unwrap_err().field, "query");
    }

    #[test]
    fn fixed_vocabularies_are_enums_of_the_words_the_parser_reads() {
        let recall = serde_json::to_value(schemars::schema_for!(RecallInput)).unwrap();
        assert_eq!(
            recall["properties"]["order"]["enum"],
            serde_json::json!(ORDER_WORDS)
        );
        for word in ORDER_WORDS {
            assert!(word.parse::<Order>().is_ok(), "{word}");
        }
        assert_eq!(
            recall.get("required"),
            None,
            "every recall field is optional, the listed ones included"
        );
        let remember = serde_json::to_value(schemars::schema_for!(RememberRequest)).unwrap();
        let evidence = &remember["$defs"]["EvidenceInput"]["properties"];
        for (field, parse) in [
            (
                "source_type",
                (|w: &str| w.parse::<mnem_core::SourceType>().is_ok()) as fn(&str) -> bool,
            ),
            ("authority", |w| w.parse::<mnem_core::Authority>().is_ok()),
            ("space", |w| w.parse::<mnem_core::Space>().is_ok()),
        ] {
            let words = evidence[field]["enum"].as_array().expect(field);
            assert!(!words.is_empty(), "{field}");
            assert!(
                words.iter().all(|w| w.as_str().is_some_and(parse)),
                "{field}"
            );
            assert!(
                evidence[field]["description"].is_string(),
                "{field} keeps its description"
            );
        }
        let polarity = &remember["$defs"]["RelationshipInput"]["properties"]["polarity"]["enum"];
        for word in polarity.as_array().expect("polarity") {
            let word = word.as_str().unwrap_or_default();
            assert!(mnem_core::graph::model::Polarity::parse("polarity", word).is_ok());
        }
        let listed = serde_json::to_value(schemars::schema_for!(ListHypothesesInput)).unwrap();
        let statuses = listed["properties"]["statuses"]["items"]["enum"]
            .as_array()
            .expect("statuses");
        assert_eq!(statuses.len(), 4);
        for word in statuses {
            let input = ListHypothesesInput {
                statuses: vec![word.as_str().unwrap_or_default().to_string()],
                limit: None,
            };
            assert!(input.into_parts().is_ok(), "{word}");
        }
        let resolve = serde_json::to_value(schemars::schema_for!(ResolveHypothesisInput)).unwrap();
        assert_eq!(
            resolve["properties"]["decision"]["enum"],
            serde_json::json!(mnem_core::graph::request::HYPOTHESIS_DECISIONS)
        );
    }

    #[test]
    fn unknown_arguments_are_refused() {
        let err = serde_json::from_value::<RecallInput>(serde_json::json!({
            "query": "x", "team": "someone-else"
        }))
        .expect_err("no argument can name a team");
        assert!(err.to_string().contains("unknown field `team`"), "{err}");
        let known = serde_json::from_value::<RecallInput>(serde_json::json!({"query": "x"}));
        assert!(known.is_ok(), "the same input without it is accepted");
    }
}
