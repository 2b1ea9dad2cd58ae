//! A structured remember: the idempotency replay, predicate declarations, the request's
//! evidence item by item (deduplicated, revisions settled), then its claims.

use mnem_core::graph::{CitedEvidence, EvidenceOutcome, RememberOutcome};
use mnem_core::{Actor, Evidence, EvidenceId, LifecycleState, Timestamp, ValidationError};

use super::relationship::{write_relationship, Written};
use super::revisions::revision_standing;
use super::{move_evidence, GraphRows};
use crate::dedup::{self, NewRecord};
use crate::{new_uuid_v7, Result, StoreError, VerifiedRemember};

/// The stored outcome for an idempotency key, or `Conflict` when the key was used for a
/// different request.
pub async fn replayed<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    key: &str,
    request_hash: &str,
) -> Result<Option<RememberOutcome>> {
    match rows.idempotency_record(actor, key).await? {
        None => Ok(None),
        Some((hash, _)) if hash != request_hash => Err(StoreError::Conflict(format!(
            "idempotency key `{key}` was already used for a different request"
        ))),
        Some((_, outcome)) => serde_json::from_str(&outcome)
            .map(Some)
            .map_err(StoreError::backend),
    }
}

/// A structured remember: predicates declared, evidence inserted (superseding older
/// source revisions), relationships written and conflicts settled; the outcome is
/// stored under the idempotency key.
pub async fn commit_remember<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    request: VerifiedRemember,
    now: Timestamp,
) -> Result<RememberOutcome> {
    let VerifiedRemember {
        request,
        relationships,
    } = request;
    if let Some(key) = &request.idempotency_key {
        if let Some(outcome) = replayed(rows, actor, key, &request.request_hash).await? {
            return Ok(outcome);
        }
    }
    for (predicate, single_valued) in &request.predicates {
        declare_predicate(rows, actor, predicate, *single_valued, now).await?;
    }
    // Items the request's claims cite by position: only an exact copy may absorb one
    // (its spans count code points of this text).
    let cited: std::collections::HashSet<usize> = relationships
        .iter()
        .flat_map(|r| &r.proposal.supports)
        .filter_map(|s| match s.evidence {
            CitedEvidence::Index(i) => Some(i),
            CitedEvidence::Id(_) => None,
        })
        .collect();
    let mut inserted: Vec<Evidence> = Vec::with_capacity(request.evidence.len());
    let mut holds: Vec<Option<String>> = Vec::with_capacity(request.evidence.len());
    let mut duplicates = Vec::with_capacity(request.evidence.len());
    // Every text of the request held at once, in one order; then item by item.
    let mut texts: Vec<String> = request
        .evidence
        .iter()
        .map(|new| mnem_core::evidence::content_hash(&new.content))
        .collect();
    texts.sort_unstable();
    texts.dedup();
    rows.hold_texts(actor, &texts).await?;
    for (i, new) in request.evidence.into_iter().enumerate() {
        let hold = new.quarantine.clone();
        let evidence = new
            .into_evidence(EvidenceId(new_uuid_v7(now)), actor.team, actor.profile, now)
            .map_err(|e| ValidationError::new(format!("evidence[{i}].{}", e.field), e.reason))?;
        // One item at a time: a later item may repeat one this request just inserted.
        let record = NewRecord {
            evidence,
            hold: hold.clone(),
            exact_text: cited.contains(&i),
        };
        let mut settled = dedup::settle_held(rows, actor, vec![record], now).await?;
        let Some((mut evidence, _)) = settled.fresh.pop() else {
            settled.record(rows, actor).await?;
            let answer = settled.only_answer()?;
            holds.push(None);
            duplicates.push(answer.duplicate);
            inserted.push(answer.evidence);
            continue;
        };
        duplicates.push(None);
        // A held item supersedes nothing: it is not current itself.
        let older = if hold.is_some() {
            Vec::new()
        } else {
            revision_standing(rows, actor, &mut evidence).await?
        };
        let reason = match evidence.state {
            LifecycleState::Superseded => Some("a newer source revision is already stored"),
            _ => hold.as_deref(),
        };
        rows.insert_evidence(&evidence, reason).await?;
        holds.push(hold);
        move_evidence(
            rows,
            actor,
            &older,
            LifecycleState::Superseded,
            Some("a newer source revision was remembered"),
            now,
        )
        .await?;
        inserted.push(evidence);
    }
    let mut outcomes = Vec::with_capacity(relationships.len());
    for (i, verified) in relationships.into_iter().enumerate() {
        let written = Written {
            inserted: &inserted,
            pinned_subject: None,
            kept_object: None,
            supersedes: None,
            reason: "remembered",
            field: format!("relationships[{i}]"),
        };
        outcomes.push(write_relationship(rows, actor, &verified, written, now).await?);
    }
    let outcome = RememberOutcome {
        evidence: inserted
            .iter()
            .zip(holds)
            .zip(duplicates)
            .map(|((e, hold), duplicate)| EvidenceOutcome {
                evidence_id: e.id,
                state: e.state,
                quarantined_because: hold,
                duplicate,
            })
            .collect(),
        relationships: outcomes,
    };
    if let Some(key) = &request.idempotency_key {
        let json = serde_json::to_string(&outcome).map_err(StoreError::backend)?;
        rows.insert_idempotency_record(actor, key, &request.request_hash, &json, now)
            .await?;
    }
    Ok(outcome)
}

/// A predicate's cardinality is declared once per team; a different redeclaration is a
/// conflict, the same one is a no-op.
async fn declare_predicate<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    predicate: &str,
    single_valued: bool,
    now: Timestamp,
) -> Result<()> {
    match rows.predicate_cardinality(actor, predicate).await? {
        Some(declared) if declared != single_valued => Err(StoreError::Conflict(format!(
            "predicate `{predicate}` is already declared single_valued = {declared}"
        ))),
        Some(_) => Ok(()),
        None => {
            rows.insert_predicate(actor, predicate, single_valued, now)
                .await
        }
    }
}
