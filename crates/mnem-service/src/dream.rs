//! Dreaming: a pass proposes hypotheses from the team's eligible relationships (the rule
//! table in `mnem_core::graph::dream`) and keeps the new ones; people list, read and
//! resolve them; recall adds the ones linked to its results when asked. A hypothesis
//! never becomes evidence or a relationship by itself: confirming one takes a new
//! structured remember that proves it.

use mnem_core::graph::{
    dream, DiscoveryPath, GraphEdge, Hypothesis, HypothesisStatus, RememberOutcome, RememberRequest,
};
use mnem_core::{Actor, HypothesisId, RecallHit, TeamId, ValidationError};
use mnem_store::{
    Degradation, GraphStore, GraphView, HypothesisFilter, HypothesisResolution, SearchIndex,
    StoreError,
};
use serde::Serialize;

use crate::{Memory, Result};

/// How many eligible relationships a pass reads (newest first).
pub const DREAM_INPUT_LIMIT: usize = 20_000;
/// How many hypotheses one pass proposes at most, by default.
pub const DEFAULT_DREAM_LIMIT: usize = 1_000;
/// How many hypotheses a recall returns at most.
pub const MAX_RELATED_HYPOTHESES: usize = 5;
/// How many relationships near the results a recall looks hypotheses up by.
const RELATED_EDGE_LIMIT: usize = 50;

/// What one dream pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DreamReport {
    /// Eligible relationships read.
    pub relationships: usize,
    /// Hypotheses the rule table proposed from them.
    pub proposed: usize,
    /// Of those, new to the team.
    pub added: usize,
    /// Open hypotheses written `stale` because a source is no longer active.
    pub staled: usize,
    /// Hypotheses the optional model read in this pass (0 without one).
    pub model_readings: usize,
}

/// A person's decision on a hypothesis.
#[derive(Debug, Clone)]
pub enum HypothesisDecision {
    /// Confirmed by a new structured remember that proves it (evidence and at least one
    /// relationship, verified like any other write).
    Confirm {
        reason: String,
        proof: RememberRequest,
    },
    Reject {
        reason: String,
    },
}

/// A resolved hypothesis, with the write that confirmed it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Resolved {
    pub hypothesis: Hypothesis,
    pub proof: Option<RememberOutcome>,
}

/// How many teams one background pass dreams for at most (the rest wait for the next).
pub const MAX_TEAMS_PER_PASS: usize = 16;

impl<S> Memory<S> {
    /// Remembers that `actor`'s team may have new or changed relationships, for the next
    /// background pass ([`Memory::derive_changed`]).
    pub(crate) fn note_graph_change(&self, actor: &Actor) {
        if let Ok(mut changed) = self.graph_changed.lock() {
            changed.entry(actor.team).or_insert(*actor);
        }
    }
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// The background pass of a long-lived process: for up to `max_teams` of the teams
    /// whose graph changed since the last pass, one dream pass (at most `limit`
    /// proposals) and one community pass; returns how many teams it ran for. A team's
    /// failure is logged and skipped.
    pub async fn derive_changed(&self, max_teams: usize, limit: usize) -> usize {
        let teams: Vec<Actor> = match self.graph_changed.lock() {
            Ok(mut changed) => {
                let taken: Vec<TeamId> = changed.keys().take(max_teams).copied().collect();
                taken.iter().filter_map(|t| changed.remove(t)).collect()
            }
            Err(_) => Vec::new(),
        };
        for actor in &teams {
            match self.dream(actor, limit).await {
                Ok(report) => tracing::debug!(team = %actor.team, ?report, "dream pass"),
                Err(err) => tracing::warn!(team = %actor.team, %err, "dream pass failed"),
            }
            match self.compute_communities(actor).await {
                Ok(report) => tracing::debug!(team = %actor.team, ?report, "community pass"),
                Err(err) => tracing::warn!(team = %actor.team, %err, "community pass failed"),
            }
        }
        teams.len()
    }

    /// One dream pass over the team: deterministic, at most `limit` proposals; then,
    /// with a hypothesis model, its readings of the new ones.
    pub async fn dream(&self, actor: &Actor, limit: usize) -> Result<DreamReport> {
        let relationships = self.store().dream_inputs(actor, DREAM_INPUT_LIMIT).await?;
        let proposed = dream(&relationships, limit);
        let report = DreamReport {
            relationships: relationships.len(),
            proposed: proposed.len(),
            ..DreamReport::default()
        };
        let pass = self.store().record_hypotheses(actor, proposed).await?;
        // The reading is optional: its failure leaves the pass's own work standing.
        let model_readings = self.read_new_hypotheses(actor).await.unwrap_or_else(|err| {
            tracing::warn!(team = %actor.team, %err, "hypothesis reading failed");
            0
        });
        Ok(DreamReport {
            added: pass.added,
            staled: pass.staled,
            model_readings,
            ..report
        })
    }

    /// The team's hypotheses with one of `statuses` (all when empty), newest first.
    pub async fn hypotheses(
        &self,
        actor: &Actor,
        statuses: Vec<HypothesisStatus>,
        limit: usize,
    ) -> Result<Vec<Hypothesis>> {
        let filter = HypothesisFilter {
            statuses,
            limit,
            ..HypothesisFilter::default()
        };
        Ok(self.store().hypotheses(actor, filter).await?)
    }

    /// One hypothesis of the team; `HypothesisNotFound` otherwise.
    pub async fn hypothesis(&self, actor: &Actor, id: HypothesisId) -> Result<Hypothesis> {
        let filter = HypothesisFilter {
            ids: Some(vec![id]),
            limit: 1,
            ..HypothesisFilter::default()
        };
        let found = self.store().hypotheses(actor, filter).await?.pop();
        Ok(found.ok_or(StoreError::HypothesisNotFound { id })?)
    }

    /// Confirms (with its proof, written first like any structured remember) or rejects
    /// an open hypothesis. The proof stays written even if the hypothesis was resolved by
    /// someone else meanwhile (then `Conflict`): it is evidence in its own right.
    pub async fn resolve_hypothesis(
        &self,
        actor: &Actor,
        id: HypothesisId,
        decision: HypothesisDecision,
    ) -> Result<Resolved> {
        let current = self.hypothesis(actor, id).await?;
        if current.status != HypothesisStatus::Open {
            return Err(StoreError::Conflict(format!(
                "hypothesis {id} is {}, not open",
                current.status
            ))
            .into());
        }
        let at = self.store().clock().now();
        let (resolution, proof) = match decision {
            HypothesisDecision::Reject { reason } => (
                HypothesisResolution {
                    status: HypothesisStatus::Rejected,
                    reason: checked_reason(reason)?,
                    confirmed_by: Vec::new(),
                    at,
                },
                None,
            ),
            HypothesisDecision::Confirm { reason, proof } => {
                let reason = checked_reason(reason)?;
                if proof.relationships.is_empty() || proof.evidence.is_empty() {
                    return Err(StoreError::from(ValidationError::new(
                        "proof",
                        "confirming a hypothesis needs a remember request with evidence and \
                         at least one relationship that proves it",
                    ))
                    .into());
                }
                let outcome = self.remember_request(actor, proof).await?;
                let confirmed_by = outcome
                    .relationships
                    .iter()
                    .map(|r| r.relationship_id)
                    .collect();
                (
                    HypothesisResolution {
                        status: HypothesisStatus::Confirmed,
                        reason,
                        confirmed_by,
                        at,
                    },
                    Some(outcome),
                )
            }
        };
        let hypothesis = self
            .store()
            .resolve_hypothesis(actor, id, resolution)
            .await?;
        Ok(Resolved { hypothesis, proof })
    }

    /// The open and confirmed hypotheses whose sources include a relationship of the
    /// discovery paths or one the returned evidence proves (`near`; both sources still
    /// proven by team evidence), at most [`MAX_RELATED_HYPOTHESES`]. A failed read (or a
    /// failed `near` read) is recorded as a degraded `hypotheses` branch and answered
    /// with none: this field is optional.
    pub(crate) async fn related_hypotheses(
        &self,
        actor: &Actor,
        near: &std::result::Result<Vec<GraphEdge>, String>,
        paths: &[DiscoveryPath],
        degraded: &mut Vec<Degradation>,
    ) -> Vec<Hypothesis> {
        let lookup = async {
            let near = near.as_ref().map_err(|reason| reason.clone())?;
            let mut relationships: Vec<_> = near
                .iter()
                .map(|e| e.relationship.relationship_id)
                .chain(
                    paths
                        .iter()
                        .flat_map(|p| p.relationships.iter().map(|e| e.relationship_id)),
                )
                .collect();
            relationships.sort_unstable();
            relationships.dedup();
            if relationships.is_empty() {
                return Ok(Vec::new());
            }
            let filter = HypothesisFilter {
                statuses: vec![HypothesisStatus::Open, HypothesisStatus::Confirmed],
                relationships: Some(relationships),
                team_proven: true,
                limit: MAX_RELATED_HYPOTHESES,
                ..HypothesisFilter::default()
            };
            self.store()
                .hypotheses(actor, filter)
                .await
                .map_err(|err| err.to_string())
        };
        match lookup.await {
            Ok(found) => found,
            Err(reason) => {
                self.omit_optional("hypotheses", reason, degraded).await;
                Vec::new()
            }
        }
    }

    /// The relationships the returned evidence proves (at most [`RELATED_EDGE_LIMIT`]):
    /// where hypotheses and communities are looked up from. A failure is kept as its
    /// reason, for each optional branch to record as its own degradation.
    pub(crate) async fn near_results(
        &self,
        actor: &Actor,
        view: GraphView,
        hits: &[RecallHit],
    ) -> std::result::Result<Vec<GraphEdge>, String> {
        let evidence = hits.iter().map(|h| h.evidence.id).collect();
        self.store()
            .edges_supported_by(actor, evidence, view, RELATED_EDGE_LIMIT)
            .await
            .map_err(|err| err.to_string())
    }

    /// An optional branch (hypotheses, communities) omitted: recorded as degraded, in
    /// the recall's telemetry and the store's log.
    pub(crate) async fn omit_optional(
        &self,
        branch: &str,
        reason: String,
        degraded: &mut Vec<Degradation>,
    ) {
        let degradation = Degradation {
            branch: branch.into(),
            reason,
            at: self.store().clock().now(),
        };
        tracing::warn!(branch, reason = %degradation.reason, "optional recall branch omitted");
        if let Err(err) = self.store().record_degradation(degradation.clone()).await {
            tracing::warn!(%err, "could not record degradation");
        }
        degraded.push(degradation);
    }
}

fn checked_reason(reason: String) -> Result<String> {
    let reason = reason.trim().to_string();
    if reason.is_empty() || reason.chars().count() > 1_000 {
        return Err(StoreError::from(ValidationError::new(
            "reason",
            "must be 1 to 1,000 characters",
        ))
        .into());
    }
    Ok(reason)
}

/// Runs the background passes of a long-lived process: every `interval`, for the teams
/// whose graph changed since the last pass (at most [`MAX_TEAMS_PER_PASS`] at a time), a
/// dream pass ([`DEFAULT_DREAM_LIMIT`] proposals each) and a community pass. Never on the
/// write path.
pub fn spawn_deriver<S>(
    memory: std::sync::Arc<Memory<S>>,
    interval: std::time::Duration,
) -> tokio::task::JoinHandle<()>
where
    S: GraphStore + SearchIndex + 'static,
{
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            memory
                .derive_changed(MAX_TEAMS_PER_PASS, DEFAULT_DREAM_LIMIT)
                .await;
        }
    })
}
