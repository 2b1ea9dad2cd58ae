//! What the graph operations answer: the outcome of a structured `remember`, and
//! `trace_memory`'s bounded explanation of one relationship (CONTRACT §4).

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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EvidenceOutcome {
    pub evidence_id: EvidenceId,
    pub state: LifecycleState,
    /// Why write-time screening held the item (it is stored, never recalled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quarantined_because: Option<String>,
    /// Set when the item repeated a text the team already holds: `evidence_id` is the
    /// stored item's, and no second item was made (`alias`: this write was recorded
    /// beside it; `replay`: the same write was already recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<crate::dedup::Duplicate>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RememberOutcome {
    pub evidence: Vec<EvidenceOutcome>,
    pub relationships: Vec<RelationshipOutcome>,
}

/// Another relationship named in a trace: a rival, a predecessor or a successor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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

/// A cited span as a backend read it, with what the actor may see of its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedSpan {
    pub evidence_id: EvidenceId,
    pub start: usize,
    pub end: usize,
    /// `None` once the evidence was erased.
    pub quote: Option<String>,
    /// Team evidence, or the actor's own private evidence.
    pub visible: bool,
    /// The evidence's state under the trace's time view.
    pub state: LifecycleState,
    pub source_group: String,
}

/// The supports a trace shows, and whether the quote budget withheld any quote.
/// Another profile's private text is never quoted (nor its source group shown), and
/// quotes stop at `TRACE_MAX_QUOTE_BYTES`. `None` when the actor may see none of the
/// cited evidence and does not own the claim: a claim derived only from another
/// profile's private text is private like its source.
pub fn traced_supports(
    spans: Vec<CitedSpan>,
    owned_by_actor: bool,
) -> Option<(Vec<TracedSupport>, bool)> {
    if !owned_by_actor && !spans.iter().any(|s| s.visible) {
        return None;
    }
    let (mut quoted_bytes, mut withheld) = (0, false);
    let supports = spans
        .into_iter()
        .map(|span| {
            let mut quote = span
                .quote
                .filter(|_| span.visible)
                .map(|q| crate::screen::for_readers(&q).into_owned());
            if let Some(q) = &quote {
                if quoted_bytes + q.len() > TRACE_MAX_QUOTE_BYTES {
                    quote = None;
                    withheld = true;
                } else {
                    quoted_bytes += q.len();
                }
            }
            TracedSupport {
                evidence_id: span.evidence_id,
                start: span.start,
                end: span.end,
                quote,
                evidence_state: span.state,
                source_group: if span.visible {
                    span.source_group
                } else {
                    String::new()
                },
                effective: span.state == LifecycleState::Current,
            }
        })
        .collect();
    Some((supports, withheld))
}

/// Keeps the newest `TRACE_MAX_EVENTS` of a log read newest first (one more than the
/// bound, so a cut is known), oldest first; whether anything was cut.
pub fn recent_oldest_first<T>(log: &mut Vec<T>) -> bool {
    let cut = log.len() > TRACE_MAX_EVENTS;
    log.truncate(TRACE_MAX_EVENTS);
    log.reverse();
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(n: u128, quote: &str, visible: bool) -> CitedSpan {
        CitedSpan {
            evidence_id: EvidenceId(uuid::Uuid::from_u128(n)),
            start: 0,
            end: quote.chars().count(),
            quote: Some(quote.to_string()),
            visible,
            state: LifecycleState::Current,
            source_group: format!("group-{n}"),
        }
    }

    #[test]
    fn quotes_stop_at_the_byte_budget_and_say_so() {
        let long = "x".repeat(TRACE_MAX_QUOTE_BYTES / 2);
        let spans = vec![
            span(1, &long, true),
            span(2, &long, true),
            span(3, "y", true),
        ];
        let (supports, withheld) = traced_supports(spans, true).unwrap();
        let quoted: Vec<bool> = supports.iter().map(|s| s.quote.is_some()).collect();
        assert_eq!(quoted, [true, true, false]);
        assert!(withheld);
    }

    #[test]
    fn another_profiles_private_text_is_pointed_at_never_quoted() {
        let spans = vec![span(1, "mine", true), span(2, "theirs", false)];
        let (supports, withheld) = traced_supports(spans, false).unwrap();
        assert_eq!(supports[1].quote, None);
        assert_eq!(supports[1].source_group, "");
        assert_eq!(supports[0].quote.as_deref(), Some("mine"));
        assert!(!withheld);
    }

    #[test]
    fn a_claim_only_from_private_text_is_hidden_from_others_not_its_owner() {
        let spans = || vec![span(1, "theirs", false)];
        assert!(traced_supports(spans(), false).is_none());
        assert!(traced_supports(spans(), true).is_some());
    }

    #[test]
    fn logs_keep_the_newest_events_oldest_first() {
        let mut log: Vec<usize> = (0..=TRACE_MAX_EVENTS).rev().collect();
        assert!(recent_oldest_first(&mut log));
        assert_eq!(log.len(), TRACE_MAX_EVENTS);
        assert_eq!(log.first(), Some(&1));
        assert_eq!(log.last(), Some(&TRACE_MAX_EVENTS));
        let mut short = vec![2, 1];
        assert!(!recent_oldest_first(&mut short));
        assert_eq!(short, [1, 2]);
    }
}
