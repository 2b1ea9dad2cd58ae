//! Evidence lifecycle moves — retract, quarantine, release, forget — and the
//! re-assessment of what the moved evidence supported.

use mnem_core::{Actor, EvidenceId, LifecycleState, Space, Timestamp};

use super::revisions::revision_standing;
use super::{recompute_support, GraphRows};
use crate::dedup::{self, Withdrawal};
use crate::{Result, StoreError};

/// Retracts the actor's writes of each item (all or nothing: an id that is not visible
/// and current is `NotFound`). An item another write still stands for stays current —
/// its lifecycle log says whose write was withdrawn and how many stand — and is returned;
/// the rest are retracted with what they supported recomputed.
pub async fn retract_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    reason: Option<&str>,
    at: Timestamp,
) -> Result<Vec<EvidenceId>> {
    let mut whole = Vec::new();
    let mut kept = Vec::new();
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Current {
            // Visible, so the caller may know it exists: say where it stands.
            return Err(StoreError::Conflict(format!(
                "evidence {id} is already {}: only current evidence can be retracted",
                evidence.state.as_str()
            )));
        }
        match dedup::withdraw(rows, actor, id).await? {
            Withdrawal::Whole => whole.push(id),
            Withdrawal::Kept { standing } => {
                let note = format!(
                    "a write was retracted; {standing} other write(s) of this text still stand{}",
                    reason.map(|r| format!(": {r}")).unwrap_or_default()
                );
                rows.set_evidence_state(actor, id, LifecycleState::Current, at, Some(&note))
                    .await?;
                kept.push(id);
            }
        }
    }
    move_evidence(rows, actor, &whole, LifecycleState::Retracted, reason, at).await?;
    Ok(kept)
}

/// Moves current evidence to `state` (all or nothing: any id that is not visible and
/// current is `NotFound`), appends the events, and recomputes what it supported.
pub async fn move_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    state: LifecycleState,
    reason: Option<&str>,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Current {
            return Err(StoreError::NotFound { id });
        }
        rows.set_evidence_state(actor, id, state, at, reason)
            .await?;
    }
    let reason = format!("supporting evidence {}", state.as_str());
    for relationship in rows.relationships_citing(actor, ids).await? {
        recompute_support(rows, actor, relationship, &reason, at).await?;
    }
    Ok(())
}

/// Returns held evidence to recall (all or nothing: an id that is not visible and
/// quarantined is refused): it becomes current — or superseded, when a newer revision of
/// its source arrived while it was held — supersedes older current revisions as a write
/// would have, and the relationships it supports are re-assessed. The event records who
/// released it and why.
pub async fn release_evidence<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    reason: &str,
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let mut evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state != LifecycleState::Quarantined {
            return Err(StoreError::Conflict(format!(
                "evidence {id} is {}, not quarantined: only held evidence can be released",
                evidence.state.as_str()
            )));
        }
        evidence.state = LifecycleState::Current;
        let older = revision_standing(rows, actor, &mut evidence).await?;
        rows.set_evidence_state(actor, id, evidence.state, at, Some(reason))
            .await?;
        move_evidence(
            rows,
            actor,
            &older,
            LifecycleState::Superseded,
            Some("a newer source revision was released"),
            at,
        )
        .await?;
    }
    for relationship in rows.relationships_citing(actor, ids).await? {
        recompute_support(
            rows,
            actor,
            relationship,
            "supporting evidence released",
            at,
        )
        .await?;
    }
    Ok(())
}

/// Physically erases the actor's own private evidence (CONTRACT §3 `forget`) and what
/// derives from it: relationships supported by nothing else are erased (after a
/// tombstone), the others have their support recomputed; entities that only the erased
/// relationships named go too (their names came from the forgotten request).
pub async fn forget<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    ids: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    for &id in ids {
        let evidence = rows.visible_evidence(actor, id).await?;
        if evidence.state == LifecycleState::Erased {
            return Err(StoreError::NotFound { id });
        }
        if evidence.space != Space::Private || evidence.owner != actor.profile {
            return Err(StoreError::NotPermitted {
                id,
                action: "forgotten",
                reason:
                    "only its owner's private evidence can be erased; retract team evidence instead"
                        .into(),
            });
        }
        rows.erase_evidence(actor, &evidence, at).await?;
    }
    let mut endpoints = Vec::new();
    for relationship in rows.relationships_citing(actor, ids).await? {
        if rows.has_unerased_support(actor, relationship).await? {
            recompute_support(rows, actor, relationship, "supporting evidence erased", at).await?;
        } else {
            let erased = rows.relationship(actor, relationship).await?;
            endpoints.push(erased.subject.entity_id);
            endpoints.extend(erased.object.entity_id());
            rows.erase_relationship(actor, relationship, at).await?;
        }
    }
    endpoints.sort();
    endpoints.dedup();
    for entity in endpoints {
        if !rows.entity_in_use(actor, entity).await? {
            rows.erase_entity(actor, entity).await?;
        }
    }
    Ok(())
}
