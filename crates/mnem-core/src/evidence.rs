//! Evidence: the unit of recall (CONTRACT §1), its provenance vocabulary, and the validation
//! that runs before anything is stored.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::refuse_nul;
use crate::{EvidenceId, ProfileId, TeamId, Timestamp, ValidationError};

pub const MAX_CONTENT_BYTES: usize = 64 * 1024;
pub const MAX_KIND_CHARS: usize = 64;
pub const MAX_SOURCE_BYTES: usize = 1024;
pub const MAX_LABELS: usize = 32;
pub const MAX_LABEL_CHARS: usize = 64;
pub const MAX_REFS: usize = 64;
pub const MAX_REF_PART_CHARS: usize = 256;
pub const MAX_SCOPE_DEPTH: usize = 16;
pub const MAX_SCOPE_SEGMENT_CHARS: usize = 64;
pub const DEFAULT_KIND: &str = "observation";

word_enum!(
    /// How the evidence reached memory.
    SourceType, "source_type", {
        Conversation => "conversation",
        Document => "document",
        Observation => "observation",
        Manual => "manual",
    }
);

word_enum!(
    /// How far the source can be trusted; `authoritative` alone can make a fact.
    Authority, "authority", {
        Authoritative => "authoritative",
        Primary => "primary",
        Secondary => "secondary",
        Inferred => "inferred",
        Unknown => "unknown",
    }
);

word_enum!(
    /// `private` evidence is visible to its owner profile only.
    Space, "space", {
        Team => "team",
        Private => "private",
    }
);

word_enum!(
    /// Only `current` evidence is eligible for recall. Every change of state is an
    /// appended [`LifecycleEvent`]; the row itself stays for history.
    LifecycleState, "state", {
        Current => "current",
        Quarantined => "quarantined",
        Superseded => "superseded",
        Retracted => "retracted",
        Erased => "erased",
    }
);

/// A typed reference to something outside memory (`issue:ABC-123`); kind and id both match.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Ref {
    pub kind: String,
    pub id: String,
}

impl Ref {
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            id: id.into(),
        }
    }

    fn normalised(self, field: &str) -> Result<Self, ValidationError> {
        let kind = self.kind.trim().to_lowercase();
        let id = self.id.trim().to_string();
        for (part, value) in [("kind", &kind), ("id", &id)] {
            if value.is_empty() {
                return Err(ValidationError::new(field, format!("ref {part} is empty")));
            }
            refuse_nul(field, value)?;
            if value.chars().count() > MAX_REF_PART_CHARS {
                return Err(ValidationError::new(
                    field,
                    format!("ref {part} is longer than {MAX_REF_PART_CHARS} characters"),
                ));
            }
        }
        Ok(Self { kind, id })
    }

    /// Sorted and de-duplicated, so two writes naming the same refs store the same list.
    pub fn canonical(refs: Vec<Ref>, field: &str) -> Result<Vec<Ref>, ValidationError> {
        if refs.len() > MAX_REFS {
            return Err(ValidationError::new(
                field,
                format!("more than {MAX_REFS} refs"),
            ));
        }
        let mut refs = refs
            .into_iter()
            .map(|r| r.normalised(field))
            .collect::<Result<Vec<_>, _>>()?;
        refs.sort();
        refs.dedup();
        Ok(refs)
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.id)
    }
}

impl FromStr for Ref {
    type Err = ValidationError;

    /// `kind:id`; the id may itself contain colons (`url:https://…`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, id) = s
            .split_once(':')
            .ok_or_else(|| ValidationError::new("ref", format!("`{s}` is not kind:id")))?;
        Ref::new(kind, id).normalised("ref")
    }
}

/// A path of labels, outermost first (`["acme", "api"]`). The empty path is team-wide.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Scope(Vec<String>);

impl Scope {
    pub const SEPARATOR: char = '/';

    pub fn root() -> Self {
        Self(Vec::new())
    }

    pub fn new<I, S>(segments: I) -> Result<Self, ValidationError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let segments: Vec<String> = segments
            .into_iter()
            .map(|s| s.into().trim().to_string())
            .collect();
        if segments.len() > MAX_SCOPE_DEPTH {
            return Err(ValidationError::new(
                "scope",
                format!("deeper than {MAX_SCOPE_DEPTH} segments"),
            ));
        }
        for segment in &segments {
            if segment.is_empty() {
                return Err(ValidationError::new("scope", "empty path segment"));
            }
            if segment.contains(Self::SEPARATOR) || segment.chars().any(char::is_control) {
                return Err(ValidationError::new(
                    "scope",
                    format!("segment `{segment}` contains `/` or a control character"),
                ));
            }
            if segment.chars().count() > MAX_SCOPE_SEGMENT_CHARS {
                return Err(ValidationError::new(
                    "scope",
                    format!("segment longer than {MAX_SCOPE_SEGMENT_CHARS} characters"),
                ));
            }
        }
        Ok(Self(segments))
    }

    /// Parses `a/b`; surrounding slashes are ignored and the empty string is team-wide.
    pub fn parse(path: &str) -> Result<Self, ValidationError> {
        let trimmed = path.trim().trim_matches(Self::SEPARATOR);
        if trimmed.is_empty() {
            return Ok(Self::root());
        }
        Self::new(trimmed.split(Self::SEPARATOR))
    }

    pub fn segments(&self) -> &[String] {
        &self.0
    }

    pub fn depth(&self) -> usize {
        self.0.len()
    }

    /// The path text stored by backends; `Scope::parse(s.to_path()) == s`.
    pub fn to_path(&self) -> String {
        self.0.join("/")
    }

    /// This scope and every ancestor up to team-wide, deepest first.
    pub fn self_and_ancestors(&self) -> Vec<Scope> {
        (0..=self.0.len())
            .rev()
            .map(|n| Scope(self.0[..n].to_vec()))
            .collect()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_path())
    }
}

/// A write request: what a caller supplies. Ids, stamps and the hash are the store's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvidence {
    pub content: String,
    pub kind: Option<String>,
    pub source_type: SourceType,
    pub source: String,
    pub authority: Authority,
    /// Independence key for corroboration; defaults to `source`.
    pub source_group: Option<String>,
    pub source_key: Option<String>,
    pub source_revision: Option<i64>,
    pub labels: Vec<String>,
    pub refs: Vec<Ref>,
    pub scope: Scope,
    pub space: Space,
    pub observed_at: Option<Timestamp>,
    pub expires_at: Option<Timestamp>,
    /// Set by write-time screening (`crate::screen`): the item is stored `quarantined`
    /// with this reason in its first lifecycle event, in the same transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantine: Option<String>,
}

impl NewEvidence {
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            kind: None,
            source_type: SourceType::Manual,
            source: String::new(),
            authority: Authority::Unknown,
            source_group: None,
            source_key: None,
            source_revision: None,
            labels: Vec::new(),
            refs: Vec::new(),
            scope: Scope::root(),
            space: Space::Team,
            observed_at: None,
            expires_at: None,
            quarantine: None,
        }
    }

    /// Validates every field and turns the request into a full record. Pure: the store
    /// supplies the id, owner and the one clock reading for `recorded_at`.
    pub fn into_evidence(
        self,
        id: EvidenceId,
        team: TeamId,
        owner: ProfileId,
        recorded_at: Timestamp,
    ) -> Result<Evidence, ValidationError> {
        if self.content.trim().is_empty() {
            return Err(ValidationError::new("content", "is empty"));
        }
        refuse_nul("content", &self.content)?;
        Timestamp::check_optional("observed_at", self.observed_at)?;
        Timestamp::check_optional("expires_at", self.expires_at)?;
        if self.content.len() > MAX_CONTENT_BYTES {
            return Err(ValidationError::new(
                "content",
                format!(
                    "is {} bytes; the limit is {MAX_CONTENT_BYTES}",
                    self.content.len()
                ),
            ));
        }
        let kind = normalise_kind(self.kind.as_deref().unwrap_or(DEFAULT_KIND))?;
        let source = bounded_text("source", self.source, MAX_SOURCE_BYTES)?;
        let source_group = match self.source_group {
            Some(group) => bounded_text("source_group", group, MAX_SOURCE_BYTES)?,
            None => source.clone(),
        };
        let source_key = self
            .source_key
            .map(|key| bounded_text("source_key", key, MAX_SOURCE_BYTES))
            .transpose()?;
        if self.source_revision.is_some() && source_key.is_none() {
            return Err(ValidationError::new(
                "source_revision",
                "needs a source_key to be a revision of",
            ));
        }
        let labels = canonical_labels(self.labels)?;
        let refs = Ref::canonical(self.refs, "refs")?;
        let observed_at = self.observed_at.unwrap_or(recorded_at);
        if let Some(expires_at) = self.expires_at {
            if expires_at <= observed_at {
                return Err(ValidationError::new(
                    "expires_at",
                    "must be later than observed_at",
                ));
            }
        }
        let content_hash = content_hash(&self.content);
        Ok(Evidence {
            id,
            team,
            owner,
            content: self.content,
            kind,
            source_type: self.source_type,
            source,
            authority: self.authority,
            source_group,
            source_key,
            source_revision: self.source_revision,
            labels,
            refs,
            scope: self.scope,
            space: self.space,
            observed_at,
            recorded_at,
            expires_at: self.expires_at,
            content_hash,
            state: if self.quarantine.is_some() {
                LifecycleState::Quarantined
            } else {
                LifecycleState::Current
            },
        })
    }
}

/// A stored evidence record. It carries no score: relevance is a read-side annotation on
/// [`crate::RecallHit`], so there is no field through which a score could be persisted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    pub id: EvidenceId,
    pub team: TeamId,
    pub owner: ProfileId,
    pub content: String,
    pub kind: String,
    pub source_type: SourceType,
    pub source: String,
    pub authority: Authority,
    pub source_group: String,
    pub source_key: Option<String>,
    pub source_revision: Option<i64>,
    pub labels: Vec<String>,
    pub refs: Vec<Ref>,
    pub scope: Scope,
    pub space: Space,
    pub observed_at: Timestamp,
    pub recorded_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub content_hash: String,
    pub state: LifecycleState,
}

impl Evidence {
    /// Expired at `now` when `now` has reached `expires_at`.
    pub fn is_expired_at(&self, now: Timestamp) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }

    /// The content as every read returns it: verbatim but for chat-template tokens,
    /// escaped so a prompt the reader builds from it cannot gain a turn
    /// ([`crate::screen::for_readers`]).
    pub fn content_for_readers(&self) -> String {
        crate::screen::for_readers(&self.content).into_owned()
    }
}

/// One entry of the append-only lifecycle log: who moved the evidence to which state,
/// when, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LifecycleEvent {
    pub state: LifecycleState,
    pub at: Timestamp,
    pub actor: ProfileId,
    pub reason: Option<String>,
}

/// Lowercase hex SHA-256 of the content with its whitespace normalised
/// ([`crate::text::collapse_whitespace`]): the within-team de-duplication key. (Records
/// stored before de-duplication hashed the exact text; for text without extra white
/// space the two agree.)
pub fn content_hash(content: &str) -> String {
    sha256_hex(crate::text::collapse_whitespace(content).as_bytes())
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Kinds are free labels compared case-insensitively, so `Fact` and `fact` are one kind.
pub fn normalise_kind(kind: &str) -> Result<String, ValidationError> {
    let kind = kind.trim().to_lowercase();
    if kind.is_empty() {
        return Err(ValidationError::new("kind", "is empty"));
    }
    if kind.chars().count() > MAX_KIND_CHARS || kind.chars().any(char::is_control) {
        return Err(ValidationError::new(
            "kind",
            format!("must be at most {MAX_KIND_CHARS} printable characters"),
        ));
    }
    Ok(kind)
}

fn bounded_text(field: &str, value: String, max_bytes: usize) -> Result<String, ValidationError> {
    let value = value.trim().to_string();
    refuse_nul(field, &value)?;
    if value.len() > max_bytes {
        return Err(ValidationError::new(
            field,
            format!("is longer than {max_bytes} bytes"),
        ));
    }
    Ok(value)
}

fn canonical_labels(labels: Vec<String>) -> Result<Vec<String>, ValidationError> {
    if labels.len() > MAX_LABELS {
        return Err(ValidationError::new(
            "labels",
            format!("more than {MAX_LABELS} labels"),
        ));
    }
    let mut out = Vec::with_capacity(labels.len());
    for label in labels {
        let label = label.trim().to_string();
        refuse_nul("labels", &label)?;
        if label.is_empty() || label.chars().count() > MAX_LABEL_CHARS {
            return Err(ValidationError::new(
                "labels",
                format!("each label must be 1 to {MAX_LABEL_CHARS} characters"),
            ));
        }
        out.push(label);
    }
    out.sort();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn build(new: NewEvidence) -> Result<Evidence, ValidationError> {
        new.into_evidence(
            EvidenceId(Uuid::nil()),
            TeamId(Uuid::nil()),
            ProfileId(Uuid::nil()),
            Timestamp::from_seconds(1_000),
        )
    }

    #[test]
    fn refs_are_canonical_sorted_and_deduplicated() {
        let mut new = NewEvidence::new("x");
        new.refs = vec![
            Ref::new("Issue", "B-2"),
            Ref::new("issue", "A-1"),
            Ref::new("issue", "B-2"),
        ];
        let evidence = build(new).unwrap();
        assert_eq!(
            evidence.refs,
            vec![Ref::new("issue", "A-1"), Ref::new("issue", "B-2")]
        );
    }

    #[test]
    fn ref_parses_kind_and_keeps_colons_in_the_id() {
        let r: Ref = "url:https://example.com/a".parse().unwrap();
        assert_eq!(r, Ref::new("url", "https://example.com/a"));
        assert!("no-colon".parse::<Ref>().is_err());
        assert!(":id".parse::<Ref>().is_err());
    }

    #[test]
    fn observed_at_defaults_to_recorded_at() {
        let evidence = build(NewEvidence::new("x")).unwrap();
        assert_eq!(evidence.observed_at, evidence.recorded_at);
        assert_eq!(evidence.kind, DEFAULT_KIND);
        assert_eq!(evidence.state, LifecycleState::Current);
    }

    #[test]
    fn empty_or_oversized_content_is_rejected_by_field() {
        assert_eq!(
            build(NewEvidence::new("  \n")).unwrap_err().field,
            "content"
        );
        let big = "a".repeat(MAX_CONTENT_BYTES + 1);
        assert_eq!(build(NewEvidence::new(big)).unwrap_err().field, "content");
    }

    #[test]
    fn source_group_defaults_to_source() {
        let mut new = NewEvidence::new("x");
        new.source = "slack#eng".into();
        assert_eq!(build(new).unwrap().source_group, "slack#eng");
    }

    #[test]
    fn expiry_must_follow_observation() {
        let mut new = NewEvidence::new("x");
        new.observed_at = Some(Timestamp::from_seconds(50));
        new.expires_at = Some(Timestamp::from_seconds(50));
        assert_eq!(build(new).unwrap_err().field, "expires_at");
    }

    #[test]
    fn content_hash_is_sha256_hex() {
        assert_eq!(
            content_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn scope_parses_paths_and_lists_ancestors_deepest_first() {
        let scope = Scope::parse("/acme/api/").unwrap();
        assert_eq!(scope.to_path(), "acme/api");
        let ancestors: Vec<String> = scope
            .self_and_ancestors()
            .iter()
            .map(Scope::to_path)
            .collect();
        assert_eq!(ancestors, vec!["acme/api", "acme", ""]);
        assert_eq!(Scope::parse("").unwrap(), Scope::root());
        assert!(Scope::parse("a//b").is_err());
    }

    #[test]
    fn vocabularies_parse_case_insensitively_and_name_the_field() {
        assert_eq!(
            "Conversation".parse::<SourceType>().unwrap(),
            SourceType::Conversation
        );
        assert_eq!("bogus".parse::<Authority>().unwrap_err().field, "authority");
    }
}
