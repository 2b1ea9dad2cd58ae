//! Source revisions: a newer revision of a document supersedes the current fragments of
//! older ones, and a fragment older than one stored is born superseded.

use std::collections::BTreeMap;

use mnem_core::{Actor, Evidence, EvidenceId, LifecycleState, Timestamp};

use super::{move_evidence, GraphRows};
use crate::dedup;
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

/// A plain write's revisioned fragments, settled before the batch is inserted: a
/// fragment older than another of its source in the same batch is born superseded, and
/// every other one is placed by [`revision_standing`], the rule a structured write and a
/// release apply one item at a time (a born-superseded fragment's answer says so).
/// Returns the current fragments of older revisions the batch supersedes, for
/// [`supersede_older_revisions`] once the batch is inserted. Held fragments take no part.
pub async fn place_revisions<R: GraphRows>(
    rows: &R,
    actor: &Actor,
    settled: &mut dedup::Settled,
) -> Result<Vec<EvidenceId>> {
    let mut newest: BTreeMap<String, i64> = BTreeMap::new();
    for (evidence, hold) in &settled.fresh {
        if let (None, Some(key), Some(revision)) =
            (hold, &evidence.source_key, evidence.source_revision)
        {
            let entry = newest.entry(key.clone()).or_insert(revision);
            *entry = (*entry).max(revision);
        }
    }
    let mut born_superseded = Vec::new();
    let mut older = Vec::new();
    for (evidence, hold) in settled.fresh.iter_mut() {
        let (None, Some(key), Some(revision)) =
            (&*hold, &evidence.source_key, evidence.source_revision)
        else {
            continue;
        };
        if revision < newest[key] {
            evidence.state = LifecycleState::Superseded;
        } else {
            older.extend(revision_standing(rows, actor, evidence).await?);
        }
        if evidence.state == LifecycleState::Superseded {
            *hold = Some("a newer source revision is already stored".into());
            born_superseded.push(evidence.id);
        }
    }
    for answer in &mut settled.answers {
        if born_superseded.contains(&answer.evidence.id) {
            answer.evidence.state = LifecycleState::Superseded;
        }
    }
    // Fragments of one revision each find the same older ones.
    older.sort_unstable();
    older.dedup();
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
