//! What the graph operations answer: the outcome of a structured `remember`, and
//! `trace_memory`'s bounded explanation of one relationship (SPEC §4).

use serde::{Deserialize, Serialize};

use super::model::{
    ObjectSummary, Polarity, Relationship, RelationshipStatus, Tier, Transition, Verdict,
    VerificationEvent,
};
use crate::{EntityId, EvidenceId, LifecycleState, ProfileId, RelationshipId};

/// Trace returns at most this many verification events and transitions each (the most
/// recent), and says when it cut.
pub const TRACE_MAX_EVENTS: usize = 100;
/// Quotes in one trace together stay under this many bytes.
pub const TRACE_MAX_QUOTE_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceOutcome {
    pub evidence_id: EvidenceId,
    pub state: LifecycleState,
    /// Why write-time screening held the item (it is stored, never recalled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantined_because: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationshipOutcome {
    pub relationship_id: RelationshipId,
    pub subject_entity_id: EntityId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_entity_id: Option<EntityId>,
    pub verdict: Verdict,
    pub tier: Tier,
    pub status: RelationshipStatus,
}

/// The answer to a structured remember; replaying its idempotency key returns it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberOutcome {
    pub evidence: Vec<EvidenceOutcome>,
    pub relationships: Vec<RelationshipOutcome>,
}

/// Another relationship named in a trace: a rival, a predecessor or a successor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipRef {
    pub relationship_id: RelationshipId,
    pub owner_profile_id: ProfileId,
    pub predicate: String,
    pub object: ObjectSummary,
    pub polarity: Polarity,
    pub tier: Tier,
    pub status: RelationshipStatus,
}

impl From<&Relationship> for RelationshipRef {
    fn from(r: &Relationship) -> Self {
        Self {
            relationship_id: r.relationship_id,
            owner_profile_id: r.owner_profile_id,
            predicate: r.predicate.clone(),
            object: r.object.clone(),
            polarity: r.polarity,
            tier: r.tier,
            status: r.status,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TracedSupport {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    /// `None` once the evidence was erased, or when the byte bound was reached.
    pub quote: Option<String>,
    pub evidence_state: LifecycleState,
    pub source_group: String,
    /// Whether this support counts now (current evidence of a current revision).
    pub effective: bool,
}

/// `trace_memory`: one relationship and everything that explains it, from authoritative
/// rows only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub relationship: Relationship,
    pub supports: Vec<TracedSupport>,
    pub verification_events: Vec<VerificationEvent>,
    pub transitions: Vec<Transition>,
    /// Same subject and single-valued predicate, another position, still live.
    pub conflicts: Vec<RelationshipRef>,
    /// The versions this record replaced, newest first.
    pub supersedes: Vec<RelationshipRef>,
    /// The versions that replaced this record, oldest first.
    pub superseded_by: Vec<RelationshipRef>,
    /// True when a bound cut events or quotes.
    pub truncated: bool,
}
