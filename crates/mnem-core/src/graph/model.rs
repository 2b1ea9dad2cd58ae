//! The semantic layer's records (CONTRACT §1): entities, relationships, their supports,
//! verification events and lifecycle transitions.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{EntityId, EvidenceId, ProfileId, RelationshipId, Timestamp, ValidationError};

pub const MAX_ENTITY_NAME_CHARS: usize = 200;
pub const MAX_PREDICATE_CHARS: usize = 64;
pub const MAX_SURFACE_CHARS: usize = 200;
pub const MAX_VALUE_CHARS: usize = 1_000;

word_enum!(
    /// What an entity is. Resolution only reuses an entity of the same kind.
    EntityKind, "kind", {
        Person => "person",
        Organization => "organization",
        Project => "project",
        Product => "product",
        Place => "place",
        Document => "document",
        Concept => "concept",
        Other => "other",
    }
);

word_enum!(
    /// Trust earned by verification and corroboration (CONTRACT §1). Only `validated_claim`
    /// and `fact` are ever shown in discovery paths.
    Tier, "tier", {
        Candidate => "candidate",
        ValidatedClaim => "validated_claim",
        Fact => "fact",
    }
);

word_enum!(
    /// Where a relationship is in its lifecycle. Only `active` is eligible for discovery.
    RelationshipStatus, "status", {
        PendingEvidence => "pending_evidence",
        Active => "active",
        NeedsReview => "needs_review",
        Quarantined => "quarantined",
        Disputed => "disputed",
        Superseded => "superseded",
        Retracted => "retracted",
        Rejected => "rejected",
    }
);

word_enum!(
    /// A verifier's finding about one relationship and its cited spans.
    Verdict, "verdict", {
        Entailed => "entailed",
        Contradicted => "contradicted",
        Insufficient => "insufficient",
    }
);

/// Whether a relationship asserts (`+`) or denies (`-`) its predicate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Polarity {
    #[default]
    #[serde(rename = "+")]
    Positive,
    #[serde(rename = "-")]
    Negative,
}

impl Polarity {
    pub fn as_str(self) -> &'static str {
        match self {
            Polarity::Positive => "+",
            Polarity::Negative => "-",
        }
    }

    pub fn parse(field: &str, text: &str) -> Result<Self, ValidationError> {
        match text.trim() {
            "+" | "positive" => Ok(Polarity::Positive),
            "-" | "negative" => Ok(Polarity::Negative),
            other => Err(ValidationError::new(
                field,
                format!("`{other}` is not + or -"),
            )),
        }
    }
}

impl fmt::Display for Polarity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A typed literal object (`"object": {"value": {"type": "number", "value": 3}}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum TypedValue {
    String(String),
    Number(f64),
    Boolean(bool),
    /// `YYYY-MM-DD`, checked on validation.
    Date(String),
    /// RFC 3339 text.
    DateTime(
        #[serde(with = "crate::stamp::rfc3339_text")]
        #[cfg_attr(feature = "schema", schemars(with = "String"))]
        Timestamp,
    ),
}

impl TypedValue {
    /// The canonical text: what conflicts compare and what discovery paths display.
    pub fn display(&self) -> String {
        match self {
            TypedValue::String(s) | TypedValue::Date(s) => s.clone(),
            TypedValue::Number(n) => format!("{n}"),
            TypedValue::Boolean(b) => b.to_string(),
            TypedValue::DateTime(t) => t.to_rfc3339(),
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            TypedValue::String(_) => "string",
            TypedValue::Number(_) => "number",
            TypedValue::Boolean(_) => "boolean",
            TypedValue::Date(_) => "date",
            TypedValue::DateTime(_) => "date_time",
        }
    }
}

/// A resolved entity endpoint as shown to clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EntitySummary {
    pub entity_id: EntityId,
    pub name: String,
}

/// A relationship's object once stored: an entity, or a typed value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ObjectSummary {
    Entity(EntitySummary),
    Value { value: TypedValue },
}

impl ObjectSummary {
    pub fn entity_id(&self) -> Option<EntityId> {
        match self {
            ObjectSummary::Entity(e) => Some(e.entity_id),
            ObjectSummary::Value { .. } => None,
        }
    }

    pub fn display(&self) -> String {
        match self {
            ObjectSummary::Entity(e) => e.name.clone(),
            ObjectSummary::Value { value } => value.display(),
        }
    }

    /// What two claims must share to say the same thing: the entity id, or the typed
    /// value's canonical text.
    pub fn identity_key(&self) -> String {
        match self {
            ObjectSummary::Entity(e) => format!("entity:{}", e.entity_id),
            ObjectSummary::Value { value } => {
                format!("{}:{}", value.type_name(), value.display())
            }
        }
    }
}

/// A stored entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    pub entity_id: EntityId,
    pub name: String,
    pub kind: EntityKind,
    pub aliases: Vec<String>,
}

/// One accepted support: a span of one evidence item, in Unicode code points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    /// The evidence text at the span; `None` once the evidence was erased.
    pub quote: Option<String>,
}

/// A stored relationship: its content never changes after the write; `tier`, `status`
/// and `version` change only through appended [`Transition`]s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Relationship {
    pub relationship_id: RelationshipId,
    pub owner_profile_id: ProfileId,
    pub subject: EntitySummary,
    pub predicate: String,
    pub predicate_surface: String,
    pub object: ObjectSummary,
    pub polarity: Polarity,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
    pub recorded_at: Timestamp,
    /// When the record stopped being the system's current belief (superseded, retracted).
    pub recorded_to: Option<Timestamp>,
    pub semantic_group_key: String,
    pub tier: Tier,
    pub status: RelationshipStatus,
    /// Bumped by every transition: the fence `correct_relationship` checks.
    pub version: i64,
    /// The record this one corrects, if any.
    pub supersedes: Option<RelationshipId>,
}

impl Relationship {
    /// Eligible for discovery paths (CONTRACT §2 step 8): active, verified, valid at `valid_at`.
    pub fn is_discoverable(&self, valid_at: Option<Timestamp>) -> bool {
        self.status == RelationshipStatus::Active
            && matches!(self.tier, Tier::ValidatedClaim | Tier::Fact)
            && valid_at.is_none_or(|at| self.is_valid_at(at))
    }

    /// Real-world validity: `valid_from` inclusive, `valid_to` exclusive, open ends.
    pub fn is_valid_at(&self, at: Timestamp) -> bool {
        self.valid_from.is_none_or(|from| from <= at) && self.valid_to.is_none_or(|to| at < to)
    }
}

/// The key under which equivalent claims by different authors group: same subject,
/// predicate, object and polarity.
pub fn semantic_group_key(
    subject: EntityId,
    predicate: &str,
    object: &ObjectSummary,
    polarity: Polarity,
) -> String {
    format!(
        "{subject}|{predicate}|{}|{}",
        object.identity_key(),
        polarity.as_str()
    )
}

/// One verifier decision, appended, never changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VerificationEvent {
    pub verdict: Verdict,
    pub confidence: f64,
    pub verifier: String,
    pub rationale: String,
    pub at: Timestamp,
}

/// One lifecycle step, appended, never changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Transition {
    pub from_tier: Option<Tier>,
    pub to_tier: Tier,
    pub from_status: Option<RelationshipStatus>,
    pub to_status: RelationshipStatus,
    pub reason: String,
    pub actor: ProfileId,
    pub at: Timestamp,
}

/// Entity names compare case-insensitively with whitespace collapsed and surrounding
/// punctuation dropped: "  Dense-Mem. " and "dense-mem" are one name.
pub fn normalise_name(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_time_values_travel_as_rfc3339_and_old_rows_still_read() {
        let value: TypedValue = serde_json::from_value(
            serde_json::json!({"type": "date_time", "value": "2024-03-01T09:30:00Z"}),
        )
        .unwrap();
        let stamp = Timestamp::parse("t", "2024-03-01T09:30:00Z").unwrap();
        assert_eq!(value, TypedValue::DateTime(stamp));
        assert_eq!(
            serde_json::to_value(&value).unwrap(),
            serde_json::json!({"type": "date_time", "value": "2024-03-01T09:30:00.000000Z"})
        );
        let stored: TypedValue = serde_json::from_value(
            serde_json::json!({"type": "date_time", "value": stamp.as_micros()}),
        )
        .unwrap();
        assert_eq!(stored, value);
        assert!(serde_json::from_value::<TypedValue>(
            serde_json::json!({"type": "date_time", "value": "soon"})
        )
        .is_err());
    }

    #[test]
    fn names_normalise_case_space_and_edge_punctuation() {
        assert_eq!(normalise_name("  Dense-Mem. "), "dense-mem");
        assert_eq!(normalise_name("Mark\t Twain"), "mark twain");
        assert_eq!(normalise_name("C++"), "c");
    }

    #[test]
    fn typed_values_use_an_explicit_type_tag() {
        let v: TypedValue = serde_json::from_str(r#"{"type":"number","value":3}"#).unwrap();
        assert_eq!(v, TypedValue::Number(3.0));
        assert_eq!(v.display(), "3");
        assert!(serde_json::from_str::<TypedValue>(r#"{"type":"colour","value":1}"#).is_err());
    }

    #[test]
    fn polarity_reads_signs_and_words() {
        assert_eq!(Polarity::parse("p", "-").unwrap(), Polarity::Negative);
        assert_eq!(
            Polarity::parse("p", "positive").unwrap(),
            Polarity::Positive
        );
        assert_eq!(Polarity::parse("p", "maybe").unwrap_err().field, "p");
    }
}
