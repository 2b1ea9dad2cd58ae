//! Tier and status decisions (CONTRACT §1), as pure functions every backend calls inside its
//! write transaction: the backend reads the facts, this module decides, the backend
//! appends the transitions.

use super::model::{RelationshipStatus, Tier, Verdict};
use crate::{Authority, ProfileId, RelationshipId};

/// One support as it stands now: does its evidence still count, and where is it from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupportStanding {
    pub source_group: String,
    pub authority: Authority,
    /// Current, of the current source revision, not quarantined, retracted or erased.
    pub effective: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Standing {
    pub tier: Tier,
    pub status: RelationshipStatus,
}

/// A newly verified relationship's standing.
///
/// - not entailed → `candidate` (`rejected` if contradicted, else `pending_evidence`,
///   kept for review);
/// - entailed → `fact` when its effective supports come from two independent source
///   groups or one is authoritative, else `validated_claim`;
/// - an entailed claim with an ambiguous endpoint waits in `needs_review`; with no
///   effective support it is `pending_evidence`; otherwise `active`.
pub fn initial_standing(
    verdict: Verdict,
    supports: &[SupportStanding],
    ambiguous_endpoint: bool,
) -> Standing {
    match verdict {
        Verdict::Contradicted => Standing {
            tier: Tier::Candidate,
            status: RelationshipStatus::Rejected,
        },
        Verdict::Insufficient => Standing {
            tier: Tier::Candidate,
            status: RelationshipStatus::PendingEvidence,
        },
        Verdict::Entailed => {
            let tier = corroborated_tier(supports);
            let status = if ambiguous_endpoint {
                RelationshipStatus::NeedsReview
            } else if supports.iter().any(|s| s.effective) {
                RelationshipStatus::Active
            } else {
                RelationshipStatus::PendingEvidence
            };
            Standing { tier, status }
        }
    }
}

fn corroborated_tier(supports: &[SupportStanding]) -> Tier {
    let effective: Vec<&SupportStanding> = supports.iter().filter(|s| s.effective).collect();
    let mut groups: Vec<&str> = effective.iter().map(|s| s.source_group.as_str()).collect();
    groups.sort_unstable();
    groups.dedup();
    let authoritative = effective
        .iter()
        .any(|s| s.authority == Authority::Authoritative);
    if authoritative || groups.len() >= 2 {
        Tier::Fact
    } else {
        Tier::ValidatedClaim
    }
}

/// The standing after supporting evidence changed (retracted, superseded by a new source
/// revision, quarantined, erased). Only verified relationships whose standing follows
/// their support move: `active` ↔ `pending_evidence`, and the tier follows
/// corroboration. Decisions made by people or by conflict rules (disputed, superseded,
/// retracted, rejected, quarantined, needs_review) and unverified candidates stay.
pub fn recomputed_standing(current: Standing, supports: &[SupportStanding]) -> Standing {
    let follows_support = current.tier != Tier::Candidate
        && matches!(
            current.status,
            RelationshipStatus::Active | RelationshipStatus::PendingEvidence
        );
    if !follows_support {
        return current;
    }
    let status = if supports.iter().any(|s| s.effective) {
        RelationshipStatus::Active
    } else {
        RelationshipStatus::PendingEvidence
    };
    Standing {
        tier: corroborated_tier(supports),
        status,
    }
}

/// An existing claim about the same subject and single-valued predicate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rival {
    pub relationship_id: RelationshipId,
    pub owner: ProfileId,
    /// Object identity plus polarity: equal keys agree.
    pub position: String,
    pub status: RelationshipStatus,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictAction {
    /// A newer claim by the same author replaces this one.
    Supersede(RelationshipId),
    /// Another author disagrees: this one and the new claim are both disputed.
    Dispute(RelationshipId),
}

/// What a new, active claim on a single-valued predicate does to the claims already
/// there. Agreement changes nothing (it corroborates through the semantic group); the
/// same author's older, different claim is superseded; another author's different claim
/// puts both in dispute — neither is deleted or rewritten.
pub fn single_valued_conflicts(
    new_owner: ProfileId,
    new_position: &str,
    rivals: &[Rival],
) -> Vec<ConflictAction> {
    rivals
        .iter()
        .filter(|r| {
            matches!(
                r.status,
                RelationshipStatus::Active
                    | RelationshipStatus::PendingEvidence
                    | RelationshipStatus::Disputed
            ) && r.position != new_position
        })
        .map(|r| {
            if r.owner == new_owner {
                ConflictAction::Supersede(r.relationship_id)
            } else {
                ConflictAction::Dispute(r.relationship_id)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn support(group: &str, authority: Authority, effective: bool) -> SupportStanding {
        SupportStanding {
            source_group: group.into(),
            authority,
            effective,
        }
    }

    #[test]
    fn an_entailed_claim_from_one_group_is_a_validated_claim() {
        let s = initial_standing(
            Verdict::Entailed,
            &[support("chat", Authority::Primary, true)],
            false,
        );
        assert_eq!(s.tier, Tier::ValidatedClaim);
        assert_eq!(s.status, RelationshipStatus::Active);
    }

    #[test]
    fn two_independent_groups_make_a_fact_but_one_group_twice_does_not() {
        let two = [
            support("chat", Authority::Primary, true),
            support("wiki", Authority::Secondary, true),
        ];
        assert_eq!(
            initial_standing(Verdict::Entailed, &two, false).tier,
            Tier::Fact
        );
        let same = [
            support("chat", Authority::Primary, true),
            support("chat", Authority::Primary, true),
        ];
        assert_eq!(
            initial_standing(Verdict::Entailed, &same, false).tier,
            Tier::ValidatedClaim
        );
    }

    #[test]
    fn an_authoritative_source_alone_makes_a_fact() {
        let s = initial_standing(
            Verdict::Entailed,
            &[support("hr", Authority::Authoritative, true)],
            false,
        );
        assert_eq!(s.tier, Tier::Fact);
    }

    #[test]
    fn unverified_claims_stay_candidates() {
        let supports = [support("chat", Authority::Authoritative, true)];
        let insufficient = initial_standing(Verdict::Insufficient, &supports, false);
        assert_eq!(insufficient.tier, Tier::Candidate);
        assert_eq!(insufficient.status, RelationshipStatus::PendingEvidence);
        let contradicted = initial_standing(Verdict::Contradicted, &supports, false);
        assert_eq!(contradicted.status, RelationshipStatus::Rejected);
    }

    #[test]
    fn an_ambiguous_endpoint_holds_the_claim_for_review() {
        let s = initial_standing(
            Verdict::Entailed,
            &[support("chat", Authority::Primary, true)],
            true,
        );
        assert_eq!(s.status, RelationshipStatus::NeedsReview);
    }

    #[test]
    fn losing_all_support_moves_active_to_pending_and_back() {
        let active = Standing {
            tier: Tier::Fact,
            status: RelationshipStatus::Active,
        };
        let gone = [
            support("chat", Authority::Primary, false),
            support("wiki", Authority::Primary, false),
        ];
        let pending = recomputed_standing(active, &gone);
        assert_eq!(pending.status, RelationshipStatus::PendingEvidence);
        let one_left = [
            support("chat", Authority::Primary, true),
            support("wiki", Authority::Primary, false),
        ];
        let back = recomputed_standing(pending, &one_left);
        assert_eq!(back.status, RelationshipStatus::Active);
        assert_eq!(back.tier, Tier::ValidatedClaim);
    }

    #[test]
    fn recomputation_leaves_decided_statuses_alone() {
        for status in [
            RelationshipStatus::Disputed,
            RelationshipStatus::Superseded,
            RelationshipStatus::Retracted,
            RelationshipStatus::NeedsReview,
        ] {
            let s = Standing {
                tier: Tier::ValidatedClaim,
                status,
            };
            assert_eq!(recomputed_standing(s, &[]), s);
        }
    }

    #[test]
    fn same_author_supersedes_and_another_author_disputes() {
        let a = ProfileId(Uuid::from_u128(1));
        let b = ProfileId(Uuid::from_u128(2));
        let rival = |id: u128, owner, position: &str| Rival {
            relationship_id: RelationshipId(Uuid::from_u128(id)),
            owner,
            position: position.into(),
            status: RelationshipStatus::Active,
        };
        let rivals = [
            rival(10, a, "lisbon"),
            rival(11, b, "porto"),
            rival(12, b, "madrid"),
        ];
        let actions = single_valued_conflicts(a, "madrid", &rivals);
        assert_eq!(
            actions,
            vec![
                ConflictAction::Supersede(RelationshipId(Uuid::from_u128(10))),
                ConflictAction::Dispute(RelationshipId(Uuid::from_u128(11))),
            ]
        );
    }
}
