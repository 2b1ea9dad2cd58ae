//! The structured write request (CONTRACT §3): evidence plus relationship proposals, and the
//! validation that runs over the whole request before anything is stored. Every error
//! names the item and field (`relationships[2].supports[0].end`).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::model::{
    normalise_name, EntityKind, Polarity, TypedValue, MAX_ENTITY_NAME_CHARS, MAX_PREDICATE_CHARS,
    MAX_SURFACE_CHARS, MAX_VALUE_CHARS,
};
use crate::{
    Authority, EvidenceId, NewEvidence, Ref, Scope, SourceType, Space, Timestamp, ValidationError,
};

pub const MAX_EVIDENCE_PER_REQUEST: usize = 50;
pub const MAX_RELATIONSHIPS_PER_REQUEST: usize = 200;
pub const MAX_SUPPORTS_PER_RELATIONSHIP: usize = 16;
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 128;
pub const MAX_ALIASES: usize = 16;

/// One evidence item as a client writes it (stamps as RFC 3339 text).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvidenceInput {
    /// The exact text (at most 64 KiB); claims cite spans of it by code point.
    pub content: String,
    /// What it is, e.g. `decision`, `preference`, `turn` (default `observation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `conversation`, `document`, `observation` or `manual` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "vocabulary::source_type"))]
    pub source_type: Option<String>,
    /// Where it came from (free text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `authoritative`, `primary`, `secondary`, `inferred` or `unknown` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "vocabulary::authority"))]
    pub authority: Option<String>,
    /// Independence key for corroboration (default: `source`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_group: Option<String>,
    /// The conversation or document it belongs to (windows show its neighbours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_key: Option<String>,
    /// The document's revision; a newer one supersedes older fragments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_revision: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Typed references, e.g. `{"kind": "issue", "id": "ABC-123"}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<Ref>,
    /// A scope path, e.g. `acme/people` (as recall takes it; default team-wide). A list
    /// of segments is accepted too.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "scope_path_or_segments"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<String>"))]
    pub scope: Vec<String>,
    /// `team` (default) or `private` (only you).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "vocabulary::space"))]
    pub space: Option<String>,
    /// When it was said or seen (RFC 3339 or a date; default now).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// After this it is no longer recalled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// A scope as `"acme/people"` (the form recall takes) or `["acme", "people"]`.
fn scope_path_or_segments<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Path(String),
        Segments(Vec<String>),
    }
    Ok(match Option::<Given>::deserialize(deserializer)? {
        None => Vec::new(),
        Some(Given::Segments(segments)) => segments,
        // Read as `Scope::parse` reads it (outer slashes ignored), so an empty segment
        // (`a//b`) is refused here exactly as a recall refuses it.
        Some(Given::Path(path)) => {
            let trimmed = path.trim().trim_matches(crate::Scope::SEPARATOR);
            if trimmed.is_empty() {
                Vec::new()
            } else {
                trimmed
                    .split(crate::Scope::SEPARATOR)
                    .map(str::to_string)
                    .collect()
            }
        }
    })
}

impl EvidenceInput {
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// An entity endpoint by name; resolution inside the team turns it into an id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EntityInput {
    pub name: String,
    #[serde(default = "default_kind")]
    pub kind: EntityKind,
    /// Other names for the same entity; resolution matches them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

fn default_kind() -> EntityKind {
    EntityKind::Other
}

/// A relationship's object: an entity, or a typed value with an optional surface text
/// (how the value is written in the evidence, e.g. "March 1st").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ObjectInput {
    Entity(EntityInput),
    Value {
        #[serde(flatten)]
        value: TypedValue,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        surface: Option<String>,
    },
}

/// Which evidence a support cites: an item of this request by index, or stored evidence
/// of the same team by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CitedEvidence {
    Index(usize),
    Id(EvidenceId),
}

/// A cited span in Unicode code points, `[start, end)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SupportInput {
    /// The cited item by its index in this request's `evidence`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<usize>,
    /// …or by the id of an item already stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_id: Option<EvidenceId>,
    /// First code point of the span.
    pub start: usize,
    /// One past its last code point.
    pub end: usize,
    /// When given, must equal the evidence text at the span (the verifier checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelationshipInput {
    pub subject: EntityInput,
    pub predicate: String,
    /// How the predicate is written in the evidence ("works on"); defaults to the key
    /// with underscores as spaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate_surface: Option<String>,
    pub object: ObjectInput,
    /// `+` (default) asserts the predicate, `-` denies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "vocabulary::polarity"))]
    pub polarity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    pub supports: Vec<SupportInput>,
}

/// Declares how many objects a predicate may have per subject. Single-valued predicates
/// make a newer claim supersede (same author) or dispute (another author) an older one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PredicateInput {
    pub key: String,
    pub single_valued: bool,
}

/// `remember` as a structured request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RememberRequest {
    pub evidence: Vec<EvidenceInput>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relationships: Vec<RelationshipInput>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicates: Vec<PredicateInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// `correct_relationship`: a new version of a relationship, fenced on the version the
/// caller read. Unset fields keep the old record's value; supports are required (a
/// correction is a claim and must be proven like one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Correction {
    pub expected_version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectInput>,
    /// `+` (default) asserts the predicate, `-` denies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "vocabulary::polarity"))]
    pub polarity: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate_surface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
    /// Spans of stored evidence (by `evidence_id`) proving the corrected claim.
    pub supports: Vec<SupportInput>,
    pub reason: String,
}

/// A validated entity endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntityRef {
    pub name: String,
    pub normalised: String,
    pub kind: EntityKind,
    /// `(alias, normalised alias)`, the name's own normal form not repeated.
    pub aliases: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ProposedObject {
    Entity(EntityRef),
    Value {
        value: TypedValue,
        surface: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Citation {
    pub evidence: CitedEvidence,
    pub start: usize,
    pub end: usize,
    pub quote: Option<String>,
}

/// A validated relationship proposal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Proposal {
    pub subject: EntityRef,
    pub predicate: String,
    pub predicate_surface: String,
    pub object: ProposedObject,
    pub polarity: Polarity,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
    pub supports: Vec<Citation>,
}

/// A request that passed validation: safe to hand to a store.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRemember {
    pub evidence: Vec<NewEvidence>,
    pub relationships: Vec<Proposal>,
    pub predicates: Vec<(String, bool)>,
    pub idempotency_key: Option<String>,
    /// SHA-256 of the request's canonical JSON without its idempotency key: the same
    /// key with a different hash is a conflict.
    pub request_hash: String,
}

impl RememberRequest {
    /// Validates the whole request; the first bad item rejects it, naming item and field.
    pub fn validated(self) -> Result<ValidRemember, ValidationError> {
        // Every text of the request (names, quotes, predicates, keys), at once.
        if let Ok(value) = serde_json::to_value(&self) {
            if let Some(field) = crate::error::nul_in_json(&value, "") {
                return Err(ValidationError::new(
                    field,
                    "holds a NUL character (U+0000)",
                ));
            }
        }
        let request_hash = self.canonical_hash();
        if self.evidence.is_empty() || self.evidence.len() > MAX_EVIDENCE_PER_REQUEST {
            return Err(ValidationError::new(
                "evidence",
                format!("must hold 1 to {MAX_EVIDENCE_PER_REQUEST} items"),
            ));
        }
        if self.relationships.len() > MAX_RELATIONSHIPS_PER_REQUEST {
            return Err(ValidationError::new(
                "relationships",
                format!("more than {MAX_RELATIONSHIPS_PER_REQUEST} items"),
            ));
        }
        let idempotency_key = match self.idempotency_key {
            Some(key) => {
                let key = key.trim().to_string();
                if key.is_empty() || key.chars().count() > MAX_IDEMPOTENCY_KEY_CHARS {
                    return Err(ValidationError::new(
                        "idempotency_key",
                        format!("must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} characters"),
                    ));
                }
                Some(key)
            }
            None => None,
        };
        let evidence = self
            .evidence
            .into_iter()
            .enumerate()
            .map(|(i, item)| evidence_item(i, item))
            .collect::<Result<Vec<_>, _>>()?;
        let mut predicates: Vec<(String, bool)> = Vec::new();
        for (i, declared) in self.predicates.into_iter().enumerate() {
            let key = predicate_key(&format!("predicates[{i}].key"), &declared.key)?;
            if let Some((_, earlier)) = predicates.iter().find(|(k, _)| *k == key) {
                if *earlier != declared.single_valued {
                    return Err(ValidationError::new(
                        format!("predicates[{i}].single_valued"),
                        format!("`{key}` is declared twice with different cardinality"),
                    ));
                }
                continue;
            }
            predicates.push((key, declared.single_valued));
        }
        let relationships = self
            .relationships
            .into_iter()
            .enumerate()
            .map(|(i, r)| proposal(&format!("relationships[{i}]"), r, &evidence))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ValidRemember {
            evidence,
            relationships,
            predicates,
            idempotency_key,
            request_hash,
        })
    }

    fn canonical_hash(&self) -> String {
        let mut without_key = self.clone();
        without_key.idempotency_key = None;
        // Serialising a typed value cannot fail: every field is plain data.
        let json = serde_json::to_vec(&without_key).unwrap_or_default();
        Sha256::digest(&json)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

impl RelationshipInput {
    /// Validates one proposal outside a whole request (a correction); `at` names it in
    /// errors and index citations refer to `evidence`.
    pub fn validated(
        self,
        at: &str,
        evidence: &[NewEvidence],
    ) -> Result<Proposal, ValidationError> {
        proposal(at, self, evidence)
    }
}

fn renamed(prefix: &str, err: ValidationError) -> ValidationError {
    ValidationError::new(format!("{prefix}.{}", err.field), err.reason)
}

fn evidence_item(i: usize, item: EvidenceInput) -> Result<NewEvidence, ValidationError> {
    let at = |field: &str| format!("evidence[{i}].{field}");
    let mut new = NewEvidence::new(item.content);
    new.kind = item.kind;
    if let Some(t) = item.source_type {
        new.source_type = t
            .parse::<SourceType>()
            .map_err(|e| ValidationError::new(at("source_type"), e.reason))?;
    }
    new.source = item.source.unwrap_or_default();
    if let Some(a) = item.authority {
        new.authority = a
            .parse::<Authority>()
            .map_err(|e| ValidationError::new(at("authority"), e.reason))?;
    }
    new.source_group = item.source_group;
    new.source_key = item.source_key;
    new.source_revision = item.source_revision;
    new.labels = item.labels;
    new.refs = item.refs;
    new.scope = Scope::new(item.scope).map_err(|e| ValidationError::new(at("scope"), e.reason))?;
    if let Some(space) = item.space {
        new.space = space
            .parse::<Space>()
            .map_err(|e| ValidationError::new(at("space"), e.reason))?;
    }
    new.observed_at = item
        .observed_at
        .map(|t| Timestamp::parse(&at("observed_at"), &t))
        .transpose()?;
    new.expires_at = item
        .expires_at
        .map(|t| Timestamp::parse(&at("expires_at"), &t))
        .transpose()?;
    // Everything else `into_evidence` checks is checked now, against a placeholder
    // identity, so a request never fails halfway through being stored.
    new.clone()
        .into_evidence(
            EvidenceId(uuid::Uuid::nil()),
            crate::TeamId(uuid::Uuid::nil()),
            crate::ProfileId(uuid::Uuid::nil()),
            new.observed_at.unwrap_or(Timestamp::from_micros(0)),
        )
        .map_err(|e| renamed(&format!("evidence[{i}]"), e))?;
    Ok(new)
}

/// Predicate keys are identifiers: lowercase ASCII letters, digits and `_`, starting
/// with a letter. Spaces and hyphens are read as `_` ("works on" → `works_on`).
pub fn predicate_key(field: &str, text: &str) -> Result<String, ValidationError> {
    let key: String = text
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect();
    let well_formed = key.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && key.len() <= MAX_PREDICATE_CHARS;
    if !well_formed {
        return Err(ValidationError::new(
            field,
            format!(
                "`{text}` is not a predicate key (a letter, then letters, digits or _; at most {MAX_PREDICATE_CHARS})"
            ),
        ));
    }
    Ok(key)
}

fn entity_ref(field: &str, input: EntityInput) -> Result<EntityRef, ValidationError> {
    let name = crate::text::collapse_whitespace(&input.name);
    let normalised = normalise_name(&name);
    if normalised.is_empty() || name.chars().count() > MAX_ENTITY_NAME_CHARS {
        return Err(ValidationError::new(
            format!("{field}.name"),
            format!("must have a letter or digit and at most {MAX_ENTITY_NAME_CHARS} characters"),
        ));
    }
    if input.aliases.len() > MAX_ALIASES {
        return Err(ValidationError::new(
            format!("{field}.aliases"),
            format!("more than {MAX_ALIASES} aliases"),
        ));
    }
    let mut aliases: Vec<(String, String)> = Vec::new();
    for (i, alias) in input.aliases.into_iter().enumerate() {
        let alias = crate::text::collapse_whitespace(&alias);
        let alias_normalised = normalise_name(&alias);
        if alias_normalised.is_empty() || alias.chars().count() > MAX_ENTITY_NAME_CHARS {
            return Err(ValidationError::new(
                format!("{field}.aliases[{i}]"),
                format!(
                    "must have a letter or digit and at most {MAX_ENTITY_NAME_CHARS} characters"
                ),
            ));
        }
        if alias_normalised != normalised && !aliases.iter().any(|(_, n)| *n == alias_normalised) {
            aliases.push((alias, alias_normalised));
        }
    }
    Ok(EntityRef {
        name,
        normalised,
        kind: input.kind,
        aliases,
    })
}

fn bounded_surface(field: &str, text: String, max: usize) -> Result<String, ValidationError> {
    let text = crate::text::collapse_whitespace(&text);
    if text.is_empty() || text.chars().count() > max {
        return Err(ValidationError::new(
            field,
            format!("must be 1 to {max} characters"),
        ));
    }
    Ok(text)
}

fn typed_value(field: &str, value: TypedValue) -> Result<TypedValue, ValidationError> {
    match &value {
        TypedValue::String(s) if s.trim().is_empty() || s.chars().count() > MAX_VALUE_CHARS => {
            Err(ValidationError::new(
                field,
                format!("a string value must be 1 to {MAX_VALUE_CHARS} characters"),
            ))
        }
        TypedValue::Number(n) if !n.is_finite() => {
            Err(ValidationError::new(field, "a number must be finite"))
        }
        TypedValue::Date(d) => {
            let format = time::macros::format_description!("[year]-[month]-[day]");
            let date = time::Date::parse(d.trim(), format)
                .map_err(|_| ValidationError::new(field, format!("`{d}` is not YYYY-MM-DD")))?;
            Timestamp::from_datetime(date.midnight().assume_utc()).in_range(field)?;
            Ok(TypedValue::Date(d.trim().to_string()))
        }
        _ => Ok(value),
    }
}

fn proposal(
    at: &str,
    input: RelationshipInput,
    evidence: &[NewEvidence],
) -> Result<Proposal, ValidationError> {
    let subject = entity_ref(&format!("{at}.subject"), input.subject)?;
    let predicate = predicate_key(&format!("{at}.predicate"), &input.predicate)?;
    let predicate_surface = bounded_surface(
        &format!("{at}.predicate_surface"),
        input
            .predicate_surface
            .unwrap_or_else(|| predicate.replace('_', " ")),
        MAX_SURFACE_CHARS,
    )?;
    let object = match input.object {
        ObjectInput::Entity(entity) => {
            ProposedObject::Entity(entity_ref(&format!("{at}.object"), entity)?)
        }
        ObjectInput::Value { value, surface } => ProposedObject::Value {
            value: typed_value(&format!("{at}.object.value"), value)?,
            surface: surface
                .map(|s| bounded_surface(&format!("{at}.object.surface"), s, MAX_SURFACE_CHARS))
                .transpose()?,
        },
    };
    let polarity = match input.polarity {
        Some(p) => Polarity::parse(&format!("{at}.polarity"), &p)?,
        None => Polarity::Positive,
    };
    let valid_from = input
        .valid_from
        .map(|t| Timestamp::parse(&format!("{at}.valid_from"), &t))
        .transpose()?;
    let valid_to = input
        .valid_to
        .map(|t| Timestamp::parse(&format!("{at}.valid_to"), &t))
        .transpose()?;
    if let (Some(from), Some(to)) = (valid_from, valid_to) {
        if to <= from {
            return Err(ValidationError::new(
                format!("{at}.valid_to"),
                "must be later than valid_from",
            ));
        }
    }
    if input.supports.is_empty() || input.supports.len() > MAX_SUPPORTS_PER_RELATIONSHIP {
        return Err(ValidationError::new(
            format!("{at}.supports"),
            format!("must cite 1 to {MAX_SUPPORTS_PER_RELATIONSHIP} evidence spans"),
        ));
    }
    let supports = input
        .supports
        .into_iter()
        .enumerate()
        .map(|(j, s)| citation(&format!("{at}.supports[{j}]"), s, evidence))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Proposal {
        subject,
        predicate,
        predicate_surface,
        object,
        polarity,
        valid_from,
        valid_to,
        supports,
    })
}

fn citation(
    at: &str,
    input: SupportInput,
    evidence: &[NewEvidence],
) -> Result<Citation, ValidationError> {
    let target = match (input.evidence, input.evidence_id) {
        (Some(index), None) => {
            let item = evidence.get(index).ok_or_else(|| {
                ValidationError::new(
                    format!("{at}.evidence"),
                    format!(
                        "is {index}, but the request has {} evidence items",
                        evidence.len()
                    ),
                )
            })?;
            check_span(at, input.start, input.end, item.content.chars().count())?;
            CitedEvidence::Index(index)
        }
        (None, Some(id)) => {
            // Stored evidence: the store checks the span against its text.
            check_span(at, input.start, input.end, usize::MAX)?;
            CitedEvidence::Id(id)
        }
        _ => {
            return Err(ValidationError::new(
                format!("{at}.evidence"),
                "give exactly one of evidence (an index into this request) or evidence_id",
            ))
        }
    };
    Ok(Citation {
        evidence: target,
        start: input.start,
        end: input.end,
        quote: input.quote,
    })
}

/// A span is `[start, end)` in code points, non-empty, inside a text of `len` chars.
pub fn check_span(at: &str, start: usize, end: usize, len: usize) -> Result<(), ValidationError> {
    if start >= end {
        return Err(ValidationError::new(
            format!("{at}.end"),
            format!("must be greater than start ({start})"),
        ));
    }
    if end > len {
        return Err(ValidationError::new(
            format!("{at}.end"),
            format!("is {end}, past the end of the evidence text ({len} characters)"),
        ));
    }
    Ok(())
}

/// The decisions `resolve_hypothesis` takes: `confirm` (with a proof) or `reject`.
pub const HYPOTHESIS_DECISIONS: [&str; 2] = ["confirm", "reject"];

/// The closed vocabularies of request fields written as plain strings, as JSON Schema
/// `enum`s built from the types that parse them, so a generated client offers exactly the
/// words the server accepts.
#[cfg(feature = "schema")]
pub mod vocabulary {
    use schemars::{json_schema, Schema, SchemaGenerator};

    use super::HYPOTHESIS_DECISIONS;
    use crate::graph::model::Polarity;
    use crate::graph::HypothesisStatus;
    use crate::{Authority, SourceType, Space};

    fn words(words: Vec<&'static str>) -> Schema {
        json_schema!({"type": "string", "enum": words})
    }

    pub fn source_type(_: &mut SchemaGenerator) -> Schema {
        words(SourceType::ALL.iter().map(|w| w.as_str()).collect())
    }

    pub fn authority(_: &mut SchemaGenerator) -> Schema {
        words(Authority::ALL.iter().map(|w| w.as_str()).collect())
    }

    pub fn space(_: &mut SchemaGenerator) -> Schema {
        words(Space::ALL.iter().map(|w| w.as_str()).collect())
    }

    /// A hypothesis's statuses, as a list filter.
    pub fn hypothesis_statuses(_: &mut SchemaGenerator) -> Schema {
        let statuses: Vec<&str> = HypothesisStatus::ALL.iter().map(|s| s.as_str()).collect();
        json_schema!({"type": "array", "items": {"type": "string", "enum": statuses}})
    }

    /// What `resolve_hypothesis` decides.
    pub fn hypothesis_decision(_: &mut SchemaGenerator) -> Schema {
        words(HYPOTHESIS_DECISIONS.to_vec())
    }

    /// Both spellings `Polarity::parse` reads.
    pub fn polarity(_: &mut SchemaGenerator) -> Schema {
        let spellings = [Polarity::Positive, Polarity::Negative].map(Polarity::as_str);
        words([spellings[0], spellings[1], "positive", "negative"].to_vec())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_evidence_scope_is_a_path_as_recall_takes_it_or_its_segments() {
        let path: EvidenceInput =
            serde_json::from_str(r#"{"content": "x", "scope": "acme/people"}"#).unwrap();
        let segments: EvidenceInput =
            serde_json::from_str(r#"{"content": "x", "scope": ["acme", "people"]}"#).unwrap();
        assert_eq!(path.scope, ["acme", "people"]);
        let doubled: EvidenceInput =
            serde_json::from_str(r#"{"content": "x", "scope": "acme//people"}"#).unwrap();
        let request = RememberRequest {
            evidence: vec![doubled],
            ..RememberRequest::default()
        };
        let err = request.validated().unwrap_err();
        assert_eq!(err.field, "evidence[0].scope");
        assert_eq!(segments.scope, path.scope);
        let none: EvidenceInput = serde_json::from_str(r#"{"content": "x"}"#).unwrap();
        assert!(none.scope.is_empty());
        assert!(serde_json::from_str::<EvidenceInput>(r#"{"content": "x", "scope": 3}"#).is_err());
    }

    use super::*;

    fn request() -> RememberRequest {
        serde_json::from_value(serde_json::json!({
            "evidence": [{"content": "Mark works on Dense-Mem.", "source": "chat"}],
            "relationships": [{
                "subject": {"name": "Mark", "kind": "person"},
                "predicate": "works_on",
                "object": {"entity": {"name": "Dense-Mem", "kind": "project"}},
                "supports": [{"evidence": 0, "start": 0, "end": 24}]
            }]
        }))
        .unwrap()
    }

    #[test]
    fn a_well_formed_request_validates() {
        let valid = request().validated().unwrap();
        assert_eq!(valid.relationships[0].predicate_surface, "works on");
        assert_eq!(valid.relationships[0].subject.normalised, "mark");
    }

    #[test]
    fn a_span_past_the_text_names_the_item_and_field() {
        let mut r = request();
        r.relationships[0].supports[0].end = 25;
        let err = r.validated().unwrap_err();
        assert_eq!(err.field, "relationships[0].supports[0].end");
    }

    #[test]
    fn spans_count_code_points_not_bytes() {
        let mut r = request();
        r.evidence[0].content = "Zoë works on Ünïcode.".into(); // 21 chars, 24 bytes
        r.relationships[0].supports[0].end = 21;
        assert!(r.clone().validated().is_ok());
        r.relationships[0].supports[0].end = 22;
        assert!(r.validated().is_err());
    }

    #[test]
    fn a_citation_of_a_missing_item_is_rejected() {
        let mut r = request();
        r.relationships[0].supports[0].evidence = Some(3);
        assert_eq!(
            r.validated().unwrap_err().field,
            "relationships[0].supports[0].evidence"
        );
    }

    #[test]
    fn bad_evidence_fields_name_their_item() {
        let mut r = request();
        r.evidence.push(EvidenceInput {
            authority: Some("very".into()),
            ..EvidenceInput::text("x")
        });
        assert_eq!(r.validated().unwrap_err().field, "evidence[1].authority");
        let mut r = request();
        r.evidence[0].observed_at = Some("soon".into());
        assert_eq!(r.validated().unwrap_err().field, "evidence[0].observed_at");
        let mut r = request();
        r.evidence[0].content = " ".into();
        assert_eq!(r.validated().unwrap_err().field, "evidence[0].content");
    }

    #[test]
    fn predicate_keys_follow_one_grammar() {
        assert_eq!(predicate_key("p", "Works On").unwrap(), "works_on");
        assert!(predicate_key("p", "1st").is_err());
        assert!(predicate_key("p", "a.b").is_err());
        assert!(predicate_key("p", "").is_err());
    }

    #[test]
    fn conflicting_predicate_declarations_are_rejected() {
        let mut r = request();
        r.predicates = vec![
            PredicateInput {
                key: "works_on".into(),
                single_valued: true,
            },
            PredicateInput {
                key: "works on".into(),
                single_valued: false,
            },
        ];
        assert_eq!(
            r.validated().unwrap_err().field,
            "predicates[1].single_valued"
        );
    }

    #[test]
    fn validity_must_be_a_forward_interval() {
        let mut r = request();
        r.relationships[0].valid_from = Some("2024-02-01".into());
        r.relationships[0].valid_to = Some("2024-01-01".into());
        assert_eq!(
            r.validated().unwrap_err().field,
            "relationships[0].valid_to"
        );
    }

    #[test]
    fn the_hash_ignores_the_idempotency_key_and_sees_every_field() {
        let plain = request().validated().unwrap().request_hash;
        let mut keyed = request();
        keyed.idempotency_key = Some("k1".into());
        assert_eq!(keyed.validated().unwrap().request_hash, plain);
        let mut changed = request();
        changed.evidence[0].source = Some("mail".into());
        assert_ne!(changed.validated().unwrap().request_hash, plain);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let err = serde_json::from_value::<RememberRequest>(serde_json::json!({
            "evidence": [{"content": "x", "colour": "red"}]
        }))
        .expect_err("an unknown field");
        // Refused for the field itself, not for some other shape problem.
        assert!(err.to_string().contains("unknown field `colour`"), "{err}");
        let known = serde_json::from_value::<RememberRequest>(serde_json::json!({
            "evidence": [{"content": "x"}]
        }));
        assert!(known.is_ok(), "the same request without it is accepted");
    }
}
