//! Recall feedback: recorded as reported, never acted on while ranking; replayed offline
//! to compare ranking profiles on a team's own judged queries.

use mnem_core::feedback::{FeedbackInput, RankingQuality, RecallFeedback};
use mnem_core::{Actor, EvidenceId, FeedbackId, RecallQuery};
use mnem_store::{new_uuid_v7, GraphStore, SearchIndex, StoreError};

use crate::{Memory, Result};

/// How many results a replayed query asks for: enough for recall@10.
pub const REPLAY_LIMIT: usize = 10;

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// Records what a client reported about one recall: the query, the results with their
    /// ranks, its judgments, the actor, and the ranking profile this service ranks with.
    /// Every result must be an item the actor can see (`NotFound` otherwise). It changes
    /// no weight, no evidence and no relationship.
    pub async fn submit_recall_feedback(
        &self,
        actor: &Actor,
        input: FeedbackInput,
    ) -> Result<RecallFeedback> {
        let input = input.validated().map_err(StoreError::from)?;
        for result in &input.results {
            self.store().get(actor, result.evidence_id).await?;
        }
        let at = self.store().clock().now();
        let feedback = RecallFeedback {
            id: FeedbackId(new_uuid_v7(at)),
            actor: actor.profile,
            at,
            ranking_profile: self.profile().version.to_string(),
            query: input.query,
            results: input.results,
        };
        self.store()
            .record_feedback(actor, feedback.clone())
            .await?;
        Ok(feedback)
    }

    /// Re-runs each feedback's query under this service's ranking profile against memory
    /// as it is now (first [`REPLAY_LIMIT`] results, no windows, no discovery) and scores
    /// where the items judged useful land.
    pub async fn replay_feedback(
        &self,
        actor: &Actor,
        feedback: &[RecallFeedback],
    ) -> Result<RankingQuality> {
        let mut replays: Vec<(Vec<EvidenceId>, Vec<EvidenceId>)> = Vec::new();
        for item in feedback {
            let useful = item.useful();
            if useful.is_empty() {
                continue;
            }
            let query = RecallQuery {
                limit: REPLAY_LIMIT,
                window: 0,
                path_limit: 0,
                ..RecallQuery::text(item.query.clone())
            };
            let ranked = self
                .recall(actor, query)
                .await?
                .hits
                .iter()
                .map(|hit| hit.evidence.id)
                .collect();
            replays.push((useful, ranked));
        }
        Ok(RankingQuality::of(
            replays.iter().map(|(u, r)| (u.as_slice(), r.as_slice())),
        ))
    }
}
