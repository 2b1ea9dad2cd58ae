//! Every operation's answer as a type: the types of the answers that are not already a
//! domain type (each handler encodes one of these), and [`answer_schema`], which names
//! each operation's answer type once for `/openapi.json` and the MCP tools
//! ([`answer_outline`]), so what a client is told it gets is what it gets.

use mnem_core::graph::{Hypothesis, RelationshipOutcome, RememberOutcome};
use mnem_core::pack::PackCounts;
use mnem_core::{EmbeddingContract, EvidenceId, FeedbackId, PublicRecall, Timestamp};
use mnem_service::{HeldEvidence, ImportReport, NamedTrace, Resolved, Shown};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The schema of the answer of the operation `name` (an [`crate::OPERATIONS`] name): the
/// very type its JSON face encodes, registered with `generator` (whose settings say
/// whether definitions are referred to or inlined). `None` for an unknown name.
pub fn answer_schema(name: &str, generator: &mut SchemaGenerator) -> Option<Schema> {
    fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }
    let of: fn(&mut SchemaGenerator) -> Schema = match name {
        // `explain` adds `score` and `components` to each result: more properties of the
        // same objects, which the schema does not close.
        "recall" | "explain" => of::<PublicRecall>,
        "remember" => of::<RememberOutcome>,
        "trace" => of::<NamedTrace>,
        "show" => of::<Shown>,
        "status" => of::<StatusOutput>,
        "retract" => of::<RetractOutput>,
        "export" => of::<ExportOutput>,
        "hypotheses" => of::<HypothesesOutput>,
        "hypothesis" => of::<Hypothesis>,
        "resolve_hypothesis" => of::<Resolved>,
        "feedback" => of::<FeedbackOutput>,
        "release" => of::<ReleaseOutput>,
        "quarantined" => of::<QuarantinedOutput>,
        "correct" => of::<RelationshipOutcome>,
        "forget" => of::<ForgetOutput>,
        "scopes" => of::<ScopesOutput>,
        "import" => of::<ImportReport>,
        _ => return None,
    };
    Some(of(generator))
}

/// The answer of the operation `name` at its first level — each field with its JSON type,
/// and which are always present — for an MCP tool's `outputSchema`: every agent carries the
/// tool list in its context, and the whole schema would more than double it
/// (`/openapi.json` has each answer in full). `None` for an unknown name.
pub fn answer_outline(name: &str) -> Option<Map<String, Value>> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12().for_serialize();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let full = answer_schema(name, &mut settings.into_generator())?.to_value();
    let properties: Map<String, Value> = full["properties"]
        .as_object()?
        .iter()
        .map(|(field, schema)| (field.clone(), json_type(schema)))
        .collect();
    let mut outline = json!({"type": "object", "properties": properties});
    if let Some(required) = full.get("required") {
        outline["required"] = required.clone();
    }
    crate::schema::make_portable_answer(&mut outline);
    match outline {
        Value::Object(outline) => Some(outline),
        _ => None,
    }
}

/// `{"type": …}` of `schema` — a union with `null` keeps the `null` — or `{}` when its
/// JSON type is not one (an untagged choice of types).
fn json_type(schema: &Value) -> Value {
    if let Some(kind) = schema.get("type") {
        return json!({ "type": kind });
    }
    for key in ["anyOf", "oneOf"] {
        let Some(members) = schema.get(key).and_then(Value::as_array) else {
            continue;
        };
        let mut kinds: Vec<Value> = Vec::new();
        for member in members {
            match member.get("type") {
                Some(Value::String(kind)) => kinds.push(json!(kind)),
                Some(Value::Array(many)) => kinds.extend(many.iter().cloned()),
                _ => return json!({}),
            }
        }
        kinds.dedup();
        return match kinds.as_slice() {
            [only] => json!({ "type": only }),
            _ => json!({ "type": kinds }),
        };
    }
    json!({})
}

/// The ranking profile and embedding contract in use, and the caller's team's search
/// backlog; nothing of another team.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusOutput {
    pub ranking_profile_version: String,
    /// The embedder this process recalls with; absent without one (lexical recall only).
    pub active_contract: Option<EmbeddingContract>,
    /// The contract the store's vectors were made under; absent before any vector.
    pub recorded_contract: Option<EmbeddingContract>,
    /// The team's documents still waiting for vectors, counted up to a cap.
    pub team_pending_documents: usize,
    /// `team_pending_documents` reached the cap: there are at least that many.
    pub team_pending_at_least: bool,
    /// The last recall branch skipped (and when), without its reason, which may name
    /// endpoints; absent when none was.
    pub last_degradation: Option<DegradedBranch>,
}

/// A recall branch that was skipped, and when.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DegradedBranch {
    pub branch: String,
    pub at: Timestamp,
}

/// What a retraction did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RetractOutput {
    pub retracted: Vec<EvidenceId>,
    /// Items others also wrote: only the caller's write of them was withdrawn. Absent
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_written_by_others: Vec<EvidenceId>,
}

/// A memory pack and what it holds.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExportOutput {
    pub counts: PackCounts,
    /// The pack's size in bytes (UTF-8).
    pub bytes: usize,
    /// The pack: canonical JSON Lines, a SHA-256 manifest line last.
    pub pack: String,
}

/// The team's hypotheses.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HypothesesOutput {
    pub hypotheses: Vec<mnem_core::graph::Hypothesis>,
}

/// A recorded judgment of a recall's results.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FeedbackOutput {
    pub feedback_id: FeedbackId,
    /// The ranking profile the judgment is recorded against.
    pub ranking_profile: String,
}

/// The held items released into recall.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReleaseOutput {
    pub released: Vec<EvidenceId>,
}

/// Held items with the reasons they were held.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QuarantinedOutput {
    pub quarantined: Vec<HeldEvidence>,
}

/// Scope paths (`acme/api`; `""` is team-wide), in path order.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScopesOutput {
    pub scopes: Vec<String>,
}

/// The items whose text was erased.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ForgetOutput {
    pub erased: Vec<EvidenceId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_an_answer_and_its_outline_types_each_field() {
        for op in crate::OPERATIONS {
            let outline = answer_outline(op.name).expect(op.name);
            let properties = outline["properties"].as_object().expect("properties");
            assert!(!properties.is_empty(), "{}", op.name);
            for (field, schema) in properties {
                // A field of an untagged choice of types may be `{}`; none is here.
                assert!(
                    schema.get("type").is_some(),
                    "{}.{field}: {schema}",
                    op.name
                );
            }
            let required = outline["required"].as_array().expect("required");
            for field in required {
                let field = field.as_str().expect("a name");
                assert!(properties.contains_key(field), "{}.{field}", op.name);
            }
        }
        assert!(answer_outline("no_such_operation").is_none());
    }

    #[test]
    fn an_outline_keeps_what_may_be_null_and_what_may_be_absent_apart() {
        let recall = answer_outline("recall").expect("recall");
        assert_eq!(recall["properties"]["results"], json!({"type": "array"}));
        // Sent only when asked: absent otherwise, never null.
        assert_eq!(
            recall["properties"]["related_hypotheses"],
            json!({"type": "array"})
        );
        assert_eq!(
            recall["required"],
            json!(["results", "discovery_paths", "guidance"])
        );
        let status = answer_outline("status").expect("status");
        // Always sent, null without an embedder.
        assert_eq!(
            status["properties"]["active_contract"],
            json!({"type": ["object", "null"]})
        );
        let required = status["required"].as_array().expect("required");
        assert!(required.contains(&json!("active_contract")));
    }
}
