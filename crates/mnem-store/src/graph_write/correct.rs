//! A correction: a new version of a relationship, fenced on the version the caller read.

use mnem_core::graph::{RelationshipOutcome, RelationshipStatus};
use mnem_core::{Actor, Timestamp};

use super::relationship::{write_relationship, Written};
use super::{move_status, GraphRows};
use crate::{Result, StoreError, VerifiedCorrection};

/// A corrected version: fenced on the version the caller read; the old record is
/// superseded when its own author corrects it, and otherwise left as it is (the
/// single-valued conflict rule may dispute both).
pub async fn commit_correction<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    correction: VerifiedCorrection,
    now: Timestamp,
) -> Result<RelationshipOutcome> {
    let old = rows.relationship(actor, correction.relationship_id).await?;
    if old.version != correction.expected_version {
        return Err(StoreError::Conflict(format!(
            "relationship {} is at version {}, not {}; trace it again and retry",
            old.relationship_id, old.version, correction.expected_version
        )));
    }
    if matches!(
        old.status,
        RelationshipStatus::Superseded | RelationshipStatus::Retracted
    ) {
        return Err(StoreError::Conflict(format!(
            "relationship {} is already {}",
            old.relationship_id, old.status
        )));
    }
    let written = Written {
        inserted: &[],
        pinned_subject: Some(old.subject.clone()),
        kept_object: correction.kept_object,
        supersedes: Some(old.relationship_id),
        reason: &correction.reason,
        field: "correction".into(),
    };
    let outcome = write_relationship(rows, actor, &correction.proposal, written, now).await?;
    if old.owner_profile_id == actor.profile {
        let reason = format!(
            "corrected by {}: {}",
            outcome.relationship_id, correction.reason
        );
        move_status(
            rows,
            actor,
            old.relationship_id,
            RelationshipStatus::Superseded,
            &reason,
            now,
        )
        .await?;
    }
    Ok(outcome)
}
