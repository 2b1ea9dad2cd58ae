//! Memory packs: a team's memory (or a slice of it) as one canonical, versioned JSON Lines
//! file that another team or deployment can replay. Pure: the format, its canonical
//! encoding with a SHA-256 manifest, and the checks a pack must pass before anything of it
//! is written. The stores read and write the records.
//!
//! A pack holds authoritative records only — evidence with its provenance and lifecycle
//! history, predicates, entities with aliases, relationships with supports, verification
//! events and transitions — never vectors or other derived search state (the importing
//! store re-embeds) and never another team's rows. Its lines, in this order:
//!
//! 1. `header`: format name, version, the exporting team's name, when, and the selection;
//! 2. `profile` lines: the profiles the records name (ids are a team's own; an import
//!    maps them by name);
//! 3. `evidence` lines, oldest recorded first;
//! 4. `predicate`, `entity` and `relationship` lines (relationships oldest first, so a
//!    correction follows the record it corrects);
//! 5. `manifest`: the count of each kind and the SHA-256 of every byte before it.
//!
//! Every reference inside a pack resolves inside the same pack: a relationship is in a
//! pack only with all the evidence it cites, its entities and the record it corrects.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::dedup::Provenance;
use crate::evidence::sha256_hex;
use crate::graph::model::{MAX_ENTITY_NAME_CHARS, MAX_SURFACE_CHARS};
use crate::graph::request::predicate_key;
use crate::graph::{
    normalise_name, Entity, Polarity, RelationshipStatus, Tier, Transition, TypedValue, Verdict,
    VerificationEvent,
};
use crate::{
    Authority, EntityId, EvidenceId, LifecycleEvent, LifecycleState, ProfileId, Ref,
    RelationshipId, Scope, SourceType, Space, Timestamp, ValidationError,
};

/// The `format` every pack's header names.
pub const PACK_FORMAT: &str = "mnem-memory-pack";
/// The version this build writes. Version 2 writes stamps as RFC 3339 text; version 1
/// wrote integer microseconds, which still read (the stamp reader takes both).
pub const PACK_VERSION: u32 = 2;
/// The versions this build reads.
pub const PACK_VERSIONS_READ: &[u32] = &[1, 2];

/// A pack that cannot be read or replayed, with the 1-based line at fault (0: the pack
/// as a whole, e.g. a missing manifest).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("memory pack line {line}: {reason}")]
pub struct PackError {
    pub line: usize,
    pub reason: String,
}

impl PackError {
    pub fn new(line: usize, reason: impl Into<String>) -> Self {
        Self {
            line,
            reason: reason.into(),
        }
    }
}

/// Which part of a team's memory a pack holds: evidence within `scope` (that scope and
/// those under it) observed in `[since, until)`; everything when all are unset.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackSelection {
    pub scope: Option<Scope>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl PackSelection {
    /// The selection if its window is not empty.
    pub fn checked(self) -> Result<Self, crate::ValidationError> {
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if until <= since {
                return Err(crate::ValidationError::new(
                    "until",
                    "must be later than since",
                ));
            }
        }
        Ok(self)
    }

    pub fn admits(&self, scope: &Scope, observed_at: Timestamp) -> bool {
        let within = self
            .scope
            .as_ref()
            .is_none_or(|s| scope.segments().starts_with(s.segments()));
        within
            && self.since.is_none_or(|since| observed_at >= since)
            && self.until.is_none_or(|until| observed_at < until)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackHeader {
    pub format: String,
    pub version: u32,
    /// The exporting team's name (informational: an import goes to the caller's team).
    pub team: String,
    pub exported_at: Timestamp,
    pub selection: PackSelection,
}

/// A profile named by the pack's records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackProfile {
    pub profile_id: ProfileId,
    pub name: String,
}

/// One evidence item as stored: every field a recall or a trace reads, its lifecycle
/// history (oldest first; the last event's state is `state`) and its recorded writes
/// (empty for an item written once). Its content hash is recomputed on import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackEvidence {
    pub evidence_id: EvidenceId,
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
    pub state: LifecycleState,
    pub history: Vec<LifecycleEvent>,
    pub writes: Vec<Provenance>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackPredicate {
    pub predicate: String,
    pub single_valued: bool,
}

/// A relationship's object: an entity of the pack, or a typed value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PackObject {
    Entity { entity_id: EntityId },
    Value { value: TypedValue },
}

/// A cited span of an evidence item of the pack, in Unicode code points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackSpan {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
}

/// One relationship record with its whole history: `verification_events` and
/// `transitions` oldest first; the first transition is its birth (`from_*` unset) and
/// every later one bumped `version`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackRelationship {
    pub relationship_id: RelationshipId,
    pub owner: ProfileId,
    pub subject: EntityId,
    pub predicate: String,
    pub predicate_surface: String,
    pub object: PackObject,
    pub polarity: Polarity,
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
    pub recorded_at: Timestamp,
    pub recorded_to: Option<Timestamp>,
    pub verdict: Verdict,
    pub tier: Tier,
    pub status: RelationshipStatus,
    pub version: i64,
    pub supersedes: Option<RelationshipId>,
    pub supports: Vec<PackSpan>,
    pub verification_events: Vec<VerificationEvent>,
    pub transitions: Vec<Transition>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PackCounts {
    pub profiles: usize,
    pub evidence: usize,
    pub predicates: usize,
    pub entities: usize,
    pub relationships: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackManifest {
    pub counts: PackCounts,
    /// Lowercase hex SHA-256 of every byte of the pack before this line.
    pub sha256: String,
}

/// One line of a pack, tagged by `record`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum PackLine {
    Header(PackHeader),
    Profile(PackProfile),
    Evidence(PackEvidence),
    Predicate(PackPredicate),
    Entity(Entity),
    Relationship(PackRelationship),
    Manifest(PackManifest),
}

/// A line to write, borrowing its record: the one encoding [`Pack::encode`] and the
/// line sizes an export counts as it reads ([`PackEvidence::line_bytes`]) share.
#[derive(Serialize)]
#[serde(tag = "record", rename_all = "snake_case")]
enum LineOut<'a> {
    Header(&'a PackHeader),
    Profile(&'a PackProfile),
    Evidence(&'a PackEvidence),
    Predicate(&'a PackPredicate),
    Entity(&'a Entity),
    Relationship(&'a PackRelationship),
    Manifest(&'a PackManifest),
}

impl LineOut<'_> {
    fn json(&self) -> String {
        // Serialising these plain records cannot fail: no maps with non-string keys.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl PackEvidence {
    /// The bytes this item's line takes in an encoded pack, newline included.
    pub fn line_bytes(&self) -> usize {
        LineOut::Evidence(self).json().len() + 1
    }
}

impl PackRelationship {
    /// The bytes this relationship's line takes in an encoded pack, newline included.
    pub fn line_bytes(&self) -> usize {
        LineOut::Relationship(self).json().len() + 1
    }
}

impl PackLine {
    /// Where the line may stand: sections never go backwards.
    fn section(&self) -> u8 {
        match self {
            PackLine::Header(_) => 0,
            PackLine::Profile(_) => 1,
            PackLine::Evidence(_) => 2,
            PackLine::Predicate(_) => 3,
            PackLine::Entity(_) => 4,
            PackLine::Relationship(_) => 5,
            PackLine::Manifest(_) => 6,
        }
    }
}

/// A whole pack, in its canonical order.
#[derive(Debug, Clone, PartialEq)]
pub struct Pack {
    pub header: PackHeader,
    pub profiles: Vec<PackProfile>,
    pub evidence: Vec<PackEvidence>,
    pub predicates: Vec<PackPredicate>,
    pub entities: Vec<Entity>,
    pub relationships: Vec<PackRelationship>,
}

impl Pack {
    /// Screens every current item of the pack as a write is screened
    /// ([`crate::screen`]): one a rule flags is held — its history gains a `quarantined`
    /// event at `at` (or just after its last event) with the reason, in its owner's name
    /// as a write's own hold is — so an imported text is never recalled unscreened. An
    /// item a writer already released (held once, current since) keeps its release.
    /// Returns the ids held.
    pub fn hold_flagged(&mut self, at: Timestamp) -> Vec<EvidenceId> {
        let mut held = Vec::new();
        for item in &mut self.evidence {
            let released = item
                .history
                .iter()
                .any(|e| e.state == LifecycleState::Quarantined);
            if item.state != LifecycleState::Current || released {
                continue;
            }
            let findings = crate::screen::screen(&item.content, item.source_type);
            let Some(reason) = crate::screen::quarantine_reason(&findings) else {
                continue;
            };
            let after_last = item
                .history
                .last()
                .map(|e| Timestamp::from_micros(e.at.as_micros() + 1));
            item.history.push(LifecycleEvent {
                state: LifecycleState::Quarantined,
                at: after_last.map_or(at, |next| next.max(at)),
                actor: item.owner,
                reason: Some(format!("screening at import: {reason}")),
            });
            item.state = LifecycleState::Quarantined;
            held.push(item.evidence_id);
        }
        held
    }

    pub fn counts(&self) -> PackCounts {
        PackCounts {
            profiles: self.profiles.len(),
            evidence: self.evidence.len(),
            predicates: self.predicates.len(),
            entities: self.entities.len(),
            relationships: self.relationships.len(),
        }
    }

    /// The 1-based line of the `index`th evidence item.
    pub fn evidence_line(&self, index: usize) -> usize {
        2 + self.profiles.len() + index
    }

    /// The 1-based line of the `index`th entity.
    pub fn entity_line(&self, index: usize) -> usize {
        self.evidence_line(self.evidence.len()) + self.predicates.len() + index
    }

    /// The 1-based line of the `index`th relationship.
    pub fn relationship_line(&self, index: usize) -> usize {
        self.entity_line(self.entities.len()) + index
    }

    /// The canonical JSON Lines text: the lines in section order, each record's fields in
    /// declaration order, and the manifest over all of it.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        let mut push = |line: LineOut<'_>| {
            text.push_str(&line.json());
            text.push('\n');
        };
        push(LineOut::Header(&self.header));
        self.profiles.iter().for_each(|p| push(LineOut::Profile(p)));
        self.evidence
            .iter()
            .for_each(|e| push(LineOut::Evidence(e)));
        self.predicates
            .iter()
            .for_each(|p| push(LineOut::Predicate(p)));
        self.entities.iter().for_each(|e| push(LineOut::Entity(e)));
        self.relationships
            .iter()
            .for_each(|r| push(LineOut::Relationship(r)));
        let manifest = PackManifest {
            counts: self.counts(),
            sha256: sha256_hex(text.as_bytes()),
        };
        text.push_str(&LineOut::Manifest(&manifest).json());
        text.push('\n');
        text
    }

    /// Reads a pack and checks all of it before anything is written: the manifest's hash
    /// and counts, the format and version, section order, unique ids, and that every
    /// reference (owners, actors, entities, cited evidence and spans, corrected records,
    /// predicates) resolves inside the pack. The error names the first line at fault.
    pub fn decode(text: &str) -> Result<Pack, PackError> {
        let mut pack: Option<Pack> = None;
        let mut manifest_seen = false;
        let mut section = 0u8;
        let mut offset = 0;
        for (index, raw) in text.split_inclusive('\n').enumerate() {
            let (number, start) = (index + 1, offset);
            offset += raw.len();
            if manifest_seen {
                return Err(PackError::new(number, "follows the manifest"));
            }
            let record = raw.trim_end_matches(['\n', '\r']);
            // NUL can only arrive escaped; the exact check runs only on lines that might.
            if record.contains("\\u0000") {
                let value: serde_json::Value = serde_json::from_str(record)
                    .map_err(|e| PackError::new(number, format!("is not a pack record: {e}")))?;
                if let Some(field) = crate::error::nul_in_json(&value, "") {
                    return Err(PackError::new(
                        number,
                        format!("{field}: holds a NUL character (U+0000)"),
                    ));
                }
            }
            let line: PackLine = serde_json::from_str(record)
                .map_err(|e| PackError::new(number, format!("is not a pack record: {e}")))?;
            if line.section() < section {
                return Err(PackError::new(
                    number,
                    "is out of order: a pack lists header, profiles, evidence, predicates, \
                     entities, relationships, then the manifest",
                ));
            }
            section = line.section();
            let Some(pack) = pack.as_mut() else {
                let PackLine::Header(header) = line else {
                    return Err(PackError::new(number, "the first line must be the header"));
                };
                check_header(&header).map_err(|reason| PackError::new(number, reason))?;
                pack = Some(Pack {
                    header,
                    profiles: Vec::new(),
                    evidence: Vec::new(),
                    predicates: Vec::new(),
                    entities: Vec::new(),
                    relationships: Vec::new(),
                });
                continue;
            };
            match line {
                PackLine::Header(_) => return Err(PackError::new(number, "a pack has one header")),
                PackLine::Profile(p) => pack.profiles.push(p),
                PackLine::Evidence(e) => pack.evidence.push(e),
                PackLine::Predicate(p) => pack.predicates.push(p),
                PackLine::Entity(e) => pack.entities.push(e),
                PackLine::Relationship(r) => pack.relationships.push(r),
                PackLine::Manifest(manifest) => {
                    if manifest.sha256 != sha256_hex(&text.as_bytes()[..start]) {
                        return Err(PackError::new(
                            number,
                            "the SHA-256 of the pack does not match its manifest: the \
                             file was changed or cut",
                        ));
                    }
                    if manifest.counts != pack.counts() {
                        return Err(PackError::new(
                            number,
                            format!(
                                "the manifest counts {:?} but the pack holds {:?}",
                                manifest.counts,
                                pack.counts()
                            ),
                        ));
                    }
                    manifest_seen = true;
                }
            }
        }
        let pack = pack.ok_or_else(|| PackError::new(0, "the pack has no header"))?;
        if !manifest_seen {
            return Err(PackError::new(
                0,
                "the pack has no manifest line: it was cut short",
            ));
        }
        pack.check_fields()?;
        pack.check_references()?;
        Ok(pack)
    }

    /// What the write paths would refuse is refused here too: names, keys, scopes and
    /// stamps a pack carries without going through a request's validation. (Evidence
    /// fields are checked again as each item is built on import.)
    fn check_fields(&self) -> Result<(), PackError> {
        let at = |line: usize| {
            move |e: ValidationError| PackError::new(line, format!("{}: {}", e.field, e.reason))
        };
        for (i, p) in self.profiles.iter().enumerate() {
            let name = p.name.trim();
            if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
                return Err(PackError::new(
                    2 + i,
                    "name: must be 1 to 64 printable characters",
                ));
            }
        }
        for (i, e) in self.evidence.iter().enumerate() {
            let line = self.evidence_line(i);
            Scope::new(e.scope.segments().to_vec()).map_err(at(line))?;
            e.recorded_at.in_range("recorded_at").map_err(at(line))?;
            for h in &e.history {
                h.at.in_range("history.at").map_err(at(line))?;
            }
        }
        let first_predicate = self.evidence_line(self.evidence.len());
        for (i, p) in self.predicates.iter().enumerate() {
            if predicate_key("predicate", &p.predicate).ok().as_deref() != Some(&p.predicate) {
                return Err(PackError::new(
                    first_predicate + i,
                    format!("predicate: `{}` is not a predicate key", p.predicate),
                ));
            }
        }
        for (i, e) in self.entities.iter().enumerate() {
            for name in std::iter::once(&e.name).chain(&e.aliases) {
                if normalise_name(name).is_empty() || name.chars().count() > MAX_ENTITY_NAME_CHARS {
                    return Err(PackError::new(
                        self.entity_line(i),
                        format!("name `{name}` must have a letter or digit and at most {MAX_ENTITY_NAME_CHARS} characters"),
                    ));
                }
            }
        }
        for (i, r) in self.relationships.iter().enumerate() {
            let line = self.relationship_line(i);
            let surface = r.predicate_surface.trim();
            if surface.is_empty() || surface.chars().count() > MAX_SURFACE_CHARS {
                return Err(PackError::new(
                    line,
                    format!("predicate_surface: must be 1 to {MAX_SURFACE_CHARS} characters"),
                ));
            }
            r.recorded_at.in_range("recorded_at").map_err(at(line))?;
            Timestamp::check_optional("valid_from", r.valid_from).map_err(at(line))?;
            Timestamp::check_optional("valid_to", r.valid_to).map_err(at(line))?;
            Timestamp::check_optional("recorded_to", r.recorded_to).map_err(at(line))?;
            for v in &r.verification_events {
                v.at.in_range("verification_events.at").map_err(at(line))?;
                if !(0.0..=1.0).contains(&v.confidence) {
                    return Err(PackError::new(
                        line,
                        "verification_events.confidence: must be 0 to 1",
                    ));
                }
            }
            for t in &r.transitions {
                t.at.in_range("transitions.at").map_err(at(line))?;
            }
        }
        Ok(())
    }

    /// Every reference resolves inside the pack, ids are unique, histories are whole.
    fn check_references(&self) -> Result<(), PackError> {
        let mut profiles = HashSet::new();
        for (i, p) in self.profiles.iter().enumerate() {
            if !profiles.insert(p.profile_id) {
                return Err(PackError::new(2 + i, "repeats a profile"));
            }
        }
        let profile = |line: usize, id: ProfileId, what: &str| {
            if profiles.contains(&id) {
                Ok(())
            } else {
                Err(PackError::new(
                    line,
                    format!("{what} {id} is not a profile of the pack"),
                ))
            }
        };

        let mut evidence = std::collections::HashMap::new();
        for (i, e) in self.evidence.iter().enumerate() {
            let line = self.evidence_line(i);
            if evidence.insert(e.evidence_id, e).is_some() {
                return Err(PackError::new(line, "repeats an evidence id"));
            }
            profile(line, e.owner, "owner")?;
            let (Some(first), Some(last)) = (e.history.first(), e.history.last()) else {
                return Err(PackError::new(line, "history is empty"));
            };
            if last.state != e.state {
                return Err(PackError::new(
                    line,
                    format!(
                        "state is {} but the last history event says {}",
                        e.state, last.state
                    ),
                ));
            }
            if first.at != e.recorded_at {
                return Err(PackError::new(
                    line,
                    "the first history event is not at recorded_at",
                ));
            }
            if e.history.iter().any(|h| h.state == LifecycleState::Erased) {
                return Err(PackError::new(
                    line,
                    "erased evidence has no place in a pack",
                ));
            }
            for h in &e.history {
                profile(line, h.actor, "history actor")?;
            }
            for w in &e.writes {
                profile(line, w.owner, "write owner")?;
            }
        }

        let predicates: HashSet<&str> = self
            .predicates
            .iter()
            .map(|p| p.predicate.as_str())
            .collect();
        let mut entities = HashSet::new();
        for (i, e) in self.entities.iter().enumerate() {
            if !entities.insert(e.entity_id) {
                return Err(PackError::new(self.entity_line(i), "repeats an entity id"));
            }
        }
        let mut relationships = HashSet::new();
        for (i, r) in self.relationships.iter().enumerate() {
            let line = self.relationship_line(i);
            if !relationships.insert(r.relationship_id) {
                return Err(PackError::new(line, "repeats a relationship id"));
            }
            profile(line, r.owner, "owner")?;
            if !predicates.contains(r.predicate.as_str()) {
                return Err(PackError::new(
                    line,
                    format!("predicate `{}` has no predicate line", r.predicate),
                ));
            }
            let object = match &r.object {
                PackObject::Entity { entity_id } => Some(*entity_id),
                PackObject::Value { .. } => None,
            };
            for id in std::iter::once(r.subject).chain(object) {
                if !entities.contains(&id) {
                    return Err(PackError::new(
                        line,
                        format!("entity {id} is not an entity of the pack"),
                    ));
                }
            }
            if let Some(prior) = r.supersedes {
                if !relationships.contains(&prior) || prior == r.relationship_id {
                    return Err(PackError::new(
                        line,
                        format!(
                            "supersedes {prior}, which is not an earlier relationship of the pack"
                        ),
                    ));
                }
            }
            if r.supports.is_empty() {
                return Err(PackError::new(line, "cites no evidence"));
            }
            for span in &r.supports {
                let Some(cited) = evidence.get(&span.evidence_id) else {
                    return Err(PackError::new(
                        line,
                        format!(
                            "cites evidence {}, which is not evidence of the pack",
                            span.evidence_id
                        ),
                    ));
                };
                if crate::graph::char_span(&cited.content, span.start, span.end).is_none() {
                    return Err(PackError::new(
                        line,
                        format!(
                            "span {}..{} is not inside evidence {}",
                            span.start, span.end, span.evidence_id
                        ),
                    ));
                }
            }
            let Some(birth) = r.transitions.first() else {
                return Err(PackError::new(line, "has no transitions"));
            };
            if birth.from_tier.is_some() || birth.from_status.is_some() {
                return Err(PackError::new(line, "the first transition is not a birth"));
            }
            let last = r.transitions.last().unwrap_or(birth);
            if (last.to_tier, last.to_status) != (r.tier, r.status) {
                return Err(PackError::new(
                    line,
                    "tier and status differ from the last transition's",
                ));
            }
            for t in &r.transitions {
                profile(line, t.actor, "transition actor")?;
            }
        }
        Ok(())
    }
}

fn check_header(header: &PackHeader) -> Result<(), String> {
    if header.format != PACK_FORMAT {
        return Err(format!(
            "format is `{}`, not `{PACK_FORMAT}`",
            header.format
        ));
    }
    if !PACK_VERSIONS_READ.contains(&header.version) {
        return Err(format!(
            "version {} is not one this build reads (it reads {PACK_VERSIONS_READ:?})",
            header.version
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::graph::EntityKind;

    fn at(micros: i64) -> Timestamp {
        Timestamp::from_micros(1_700_000_000_000_000 + micros)
    }

    /// One profile, two evidence items, one entity-to-value relationship citing both.
    fn sample() -> Pack {
        let owner = ProfileId(Uuid::from_u128(1));
        let evidence = |n: u128, text: &str| PackEvidence {
            evidence_id: EvidenceId(Uuid::from_u128(100 + n)),
            owner,
            content: text.to_string(),
            kind: "note".into(),
            source_type: SourceType::Manual,
            source: "chat".into(),
            authority: Authority::Unknown,
            source_group: "chat".into(),
            source_key: None,
            source_revision: None,
            labels: vec![],
            refs: vec![],
            scope: Scope::parse("acme/api").unwrap(),
            space: Space::Team,
            observed_at: at(n as i64),
            recorded_at: at(n as i64),
            expires_at: None,
            state: LifecycleState::Current,
            history: vec![LifecycleEvent {
                state: LifecycleState::Current,
                at: at(n as i64),
                actor: owner,
                reason: None,
            }],
            writes: vec![],
        };
        let alice = EntityId(Uuid::from_u128(200));
        Pack {
            header: PackHeader {
                format: PACK_FORMAT.into(),
                version: PACK_VERSION,
                team: "acme".into(),
                exported_at: at(99),
                selection: PackSelection::default(),
            },
            profiles: vec![PackProfile {
                profile_id: owner,
                name: "default".into(),
            }],
            evidence: vec![evidence(1, "Alice is 31."), evidence(2, "Alice turned 31.")],
            predicates: vec![PackPredicate {
                predicate: "age".into(),
                single_valued: true,
            }],
            entities: vec![Entity {
                entity_id: alice,
                name: "Alice".into(),
                kind: EntityKind::Person,
                aliases: vec!["Alice".into()],
            }],
            relationships: vec![PackRelationship {
                relationship_id: RelationshipId(Uuid::from_u128(300)),
                owner,
                subject: alice,
                predicate: "age".into(),
                predicate_surface: "is aged".into(),
                object: PackObject::Value {
                    value: TypedValue::Number(31.0),
                },
                polarity: Polarity::Positive,
                valid_from: None,
                valid_to: None,
                recorded_at: at(3),
                recorded_to: None,
                verdict: Verdict::Entailed,
                tier: Tier::Fact,
                status: RelationshipStatus::Active,
                version: 1,
                supersedes: None,
                supports: vec![PackSpan {
                    evidence_id: EvidenceId(Uuid::from_u128(101)),
                    start: 0,
                    end: 5,
                }],
                verification_events: vec![],
                transitions: vec![Transition {
                    from_tier: None,
                    to_tier: Tier::Fact,
                    from_status: None,
                    to_status: RelationshipStatus::Active,
                    reason: "written".into(),
                    actor: owner,
                    at: at(3),
                }],
            }],
        }
    }

    fn error_of(text: &str) -> PackError {
        Pack::decode(text).expect_err("the pack must be refused")
    }

    #[test]
    fn a_pack_reads_back_as_written_and_encodes_to_the_same_bytes() {
        let pack = sample();
        let text = pack.encode();
        let read = Pack::decode(&text).unwrap();
        assert_eq!(read, pack);
        assert_eq!(read.encode(), text);
    }

    #[test]
    fn a_records_line_bytes_are_its_line_in_the_encoded_pack() {
        let pack = sample();
        let text = pack.encode();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (index, item) in pack.evidence.iter().enumerate() {
            let line = lines[pack.evidence_line(index) - 1];
            assert_eq!(item.line_bytes(), line.len());
        }
        for (index, relationship) in pack.relationships.iter().enumerate() {
            let line = lines[pack.relationship_line(index) - 1];
            assert_eq!(relationship.line_bytes(), line.len());
        }
    }

    #[test]
    fn the_manifest_is_the_last_line_and_counts_every_record() {
        let text = sample().encode();
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("{\"record\":\"manifest\""));
        assert!(last.contains("\"evidence\":2"));
        assert_eq!(text.lines().count(), 8);
    }

    #[test]
    fn a_changed_byte_fails_the_manifest_on_its_line() {
        let text = sample()
            .encode()
            .replace("Alice turned 31.", "Alice turned 32.");
        let error = error_of(&text);
        assert_eq!(error.line, 8);
        assert!(error.reason.contains("SHA-256"));
    }

    #[test]
    fn a_cut_pack_is_refused_as_a_whole() {
        let text = sample().encode();
        let cut: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
        let error = error_of(&cut);
        assert_eq!(error.line, 0);
        assert!(error.reason.contains("no manifest"));
    }

    #[test]
    fn a_line_after_the_manifest_is_refused() {
        let mut text = sample().encode();
        text.push_str("{}\n");
        assert_eq!(error_of(&text).line, 9);
    }

    #[test]
    fn a_line_that_is_not_a_record_is_named() {
        let text = sample().encode();
        let broken: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i == 2 {
                    "{\"record\":\"evidence\"}\n".to_string()
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let error = error_of(&broken);
        assert_eq!(error.line, 3);
        assert!(error.reason.contains("is not a pack record"), "{error}");
    }

    #[test]
    fn a_version_1_pack_with_integer_stamps_still_reads() {
        let text = sample().encode();
        let mut lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        // Version 1 wrote every stamp as integer microseconds.
        fn to_micros(value: &mut serde_json::Value, converted: &mut usize) {
            match value {
                serde_json::Value::String(s) => {
                    if let Ok(t) = Timestamp::parse("t", s) {
                        if s.len() == 27 && s.ends_with('Z') {
                            *value = serde_json::json!(t.as_micros());
                            *converted += 1;
                        }
                    }
                }
                serde_json::Value::Array(items) => {
                    items.iter_mut().for_each(|v| to_micros(v, converted))
                }
                serde_json::Value::Object(map) => {
                    map.values_mut().for_each(|v| to_micros(v, converted))
                }
                _ => {}
            }
        }
        let mut converted = 0;
        lines.iter_mut().for_each(|l| to_micros(l, &mut converted));
        assert!(
            converted > 5,
            "the sample's stamps became integers ({converted})"
        );
        lines[0]["version"] = serde_json::json!(1);
        let body: String = lines[..lines.len() - 1]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        let mut manifest = lines[lines.len() - 1].clone();
        manifest["sha256"] = serde_json::json!(sha256_hex(body.as_bytes()));
        let old = Pack::decode(&format!("{body}{manifest}\n"));
        let old = old.expect("a version-1 pack decodes");
        assert_eq!(
            old.evidence,
            sample().evidence,
            "the same stamps, read from integers"
        );
    }

    #[test]
    fn another_format_or_version_is_refused_on_the_header() {
        let mut pack = sample();
        pack.header.version = 3;
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 1);
        assert!(error.reason.contains("version 3"));
        let mut pack = sample();
        pack.header.format = "other".into();
        assert_eq!(error_of(&pack.encode()).line, 1);
    }

    #[test]
    fn a_relationship_citing_evidence_outside_the_pack_is_named() {
        let mut pack = sample();
        pack.relationships[0].supports[0].evidence_id = EvidenceId(Uuid::from_u128(999));
        let error = error_of(&pack.encode());
        assert_eq!(error.line, pack.relationship_line(0));
        assert_eq!(error.line, 7);
        assert!(error.reason.contains("not evidence of the pack"));
    }

    #[test]
    fn a_span_past_the_cited_text_is_named() {
        let mut pack = sample();
        pack.relationships[0].supports[0].end = 500;
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 7);
        assert!(error.reason.contains("not inside evidence"));
    }

    #[test]
    fn an_unknown_entity_owner_or_correction_is_named() {
        let mut pack = sample();
        pack.relationships[0].subject = EntityId(Uuid::from_u128(7));
        assert!(error_of(&pack.encode())
            .reason
            .contains("not an entity of the pack"));
        let mut pack = sample();
        pack.evidence[1].owner = ProfileId(Uuid::from_u128(7));
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 4);
        assert!(error.reason.contains("not a profile of the pack"));
        let mut pack = sample();
        pack.relationships[0].supersedes = Some(RelationshipId(Uuid::from_u128(301)));
        assert!(error_of(&pack.encode()).reason.contains("supersedes"));
    }

    #[test]
    fn a_history_that_does_not_end_in_the_state_is_named() {
        let mut pack = sample();
        pack.evidence[0].state = LifecycleState::Retracted;
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 3);
        assert!(error.reason.contains("last history event"));
    }

    #[test]
    fn names_keys_and_scopes_no_write_would_accept_are_named() {
        let mut pack = sample();
        pack.predicates[0].predicate = "Has Age".into();
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 5);
        assert!(error.reason.contains("predicate key"), "{error}");
        let mut pack = sample();
        pack.entities[0].aliases.push("...".into());
        assert_eq!(error_of(&pack.encode()).line, 6);
        let mut pack = sample();
        pack.profiles[0].name = " ".into();
        assert_eq!(error_of(&pack.encode()).line, 2);
        let mut bad = sample();
        bad.evidence[0].scope = serde_json::from_str("[\"a/b\"]").unwrap();
        let error = error_of(&bad.encode());
        assert_eq!(error.line, 3);
        assert!(error.reason.starts_with("scope"), "{error}");
    }

    #[test]
    fn a_nul_in_any_text_is_named_with_its_line_and_field() {
        let mut pack = sample();
        pack.evidence[0].content = "a\0b".into();
        let error = error_of(&pack.encode());
        assert_eq!(error.line, 3);
        assert!(error.reason.contains("content: holds a NUL"), "{error}");
    }

    #[test]
    fn sections_out_of_order_are_refused() {
        let text = sample().encode();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.swap(2, 4); // an evidence line after the predicate line
        let swapped: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let error = error_of(&swapped);
        assert!(error.reason.contains("out of order"), "{error}");
    }

    #[test]
    fn the_selection_admits_a_scope_subtree_and_a_half_open_window() {
        let selection = PackSelection {
            scope: Some(Scope::parse("acme").unwrap()),
            since: Some(at(10)),
            until: Some(at(20)),
        };
        let api = Scope::parse("acme/api").unwrap();
        assert!(selection.admits(&api, at(10)));
        assert!(!selection.admits(&api, at(20)));
        assert!(!selection.admits(&api, at(9)));
        assert!(!selection.admits(&Scope::parse("other").unwrap(), at(15)));
        assert!(!selection.admits(&Scope::root(), at(15)));
        assert!(PackSelection::default().admits(&Scope::root(), at(0)));
    }
}
