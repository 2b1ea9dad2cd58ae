//! Source revisions: a newer revision of a document supersedes the current fragments of
//! older ones, and a fragment older than one stored is born superseded.

use mnem_core::{Actor, Evidence, EvidenceId, LifecycleState, Timestamp};

use super::{move_evidence, GraphRows};
use crate::dedup::{self};
use crate::Result;

/// A revisioned fragment: if a newer revision of its source is already stored it is
/// born superseded; otherwise the current fragments of older revisions are returned to
/// be superseded by it. Only fragments the writer can see take part: another profile's
/// private copy of a document is that profile's to revise.
pub(super) async fn revision_standing<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    evidence: &mut Evidence,
) -> Result<Vec<EvidenceId>> {
    let (Some(key), Some(revision)) = (&evidence.source_key, evidence.source_revision) else {
        return Ok(Vec::new());
    };
    if rows.newer_revision_exists(actor, key, revision).await? {
        evidence.state = LifecycleState::Superseded;
        return Ok(Vec::new());
    }
    rows.older_current_revisions(actor, key, revision).await
}

/// A plain write's revisioned fragments, settled before the batch is inserted (a
/// structured write settles its own, one item at a time, in [`revision_standing`]): a
/// fragment is born superseded when a newer revision of its source is stored or comes in
/// the same batch (its answer says so); returns the current fragments of older revisions
/// that the batch's newest revision of each source supersedes, for
/// [`supersede_older_revisions`] once the batch is inserted. Held fragments take no part.
pub async fn place_revisions<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    settled: &mut dedup::Settled,
) -> Result<Vec<EvidenceId>> {
    let mut newest: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for (evidence, hold) in &settled.fresh {
        if let (None, Some(key), Some(revision)) =
            (hold, &evidence.source_key, evidence.source_revision)
        {
            let entry = newest.entry(key.clone()).or_insert(revision);
            *entry = (*entry).max(revision);
        }
    }
    let mut born_superseded = Vec::new();
    for (evidence, hold) in settled.fresh.iter_mut() {
        let (None, Some(key), Some(revision)) =
            (&*hold, &evidence.source_key, evidence.source_revision)
        else {
            continue;
        };
        if revision < newest[key] || rows.newer_revision_exists(actor, key, revision).await? {
            evidence.state = LifecycleState::Superseded;
            *hold = Some("a newer source revision is already stored".into());
            born_superseded.push(evidence.id);
        }
    }
    for answer in &mut settled.answers {
        if born_superseded.contains(&answer.evidence.id) {
            answer.evidence.state = LifecycleState::Superseded;
        }
    }
    let mut older = Vec::new();
    for (key, revision) in &newest {
        let standing = settled.fresh.iter().any(|(e, _)| {
            e.source_key.as_ref() == Some(key)
                && e.source_revision == Some(*revision)
                && e.state == LifecycleState::Current
        });
        if standing {
            older.extend(rows.older_current_revisions(actor, key, *revision).await?);
        }
    }
    Ok(older)
}

/// Supersedes the fragments [`place_revisions`] found, once the newer ones are stored,
/// and re-assesses what they supported.
pub async fn supersede_older_revisions<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    older: &[EvidenceId],
    at: Timestamp,
) -> Result<()> {
    if older.is_empty() {
        return Ok(());
    }
    move_evidence(
        rows,
        actor,
        older,
        LifecycleState::Superseded,
        Some("a newer source revision was remembered"),
        at,
    )
    .await
}
