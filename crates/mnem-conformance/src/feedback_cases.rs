//! Recall feedback (CONTRACT §3): recorded as reported, changes nothing it
//! judges, stays inside the team, and replays to a ranking quality.

use mnem_core::feedback::{FeedbackInput, FeedbackResult, Judgment};
use mnem_core::{EvidenceId, RecallQuery};
use mnem_service::ServiceError;
use mnem_store::StoreError;

use crate::helpers::{ids, Backend, Fixture};

fn judged(ranked: &[EvidenceId], judgments: &[Option<Judgment>]) -> FeedbackInput {
    FeedbackInput {
        query: "deploy checklist".into(),
        results: ranked
            .iter()
            .zip(judgments)
            .enumerate()
            .map(|(i, (&evidence_id, &judgment))| FeedbackResult {
                evidence_id,
                rank: i as u32 + 1,
                judgment,
            })
            .collect(),
    }
}

async fn three_matches<S: Backend>(fx: &Fixture<S>) -> Vec<EvidenceId> {
    fx.remember("deploy checklist: run the migrations first")
        .await;
    fx.remember("the deploy checklist lives in the wiki").await;
    fx.remember("deploy notes from the last release").await;
    let hits = fx.recall(RecallQuery::text("deploy checklist")).await;
    assert_eq!(hits.len(), 3);
    ids(&hits)
}

pub async fn feedback_is_recorded_and_changes_nothing_it_judges<S: Backend>(fx: Fixture<S>) {
    let ranked = three_matches(&fx).await;
    let before = fx.recall(RecallQuery::text("deploy checklist")).await;
    let input = judged(
        &ranked,
        &[Some(Judgment::Wrong), Some(Judgment::Useful), None],
    );
    let stored = fx
        .memory
        .submit_recall_feedback(&fx.actor, input)
        .await
        .expect("feedback");
    assert_eq!(stored.ranking_profile, fx.memory.profile().version);
    let after = fx.recall(RecallQuery::text("deploy checklist")).await;
    assert_eq!(ids(&after), ids(&before));
    let scores = |hits: &[mnem_core::RecallHit]| hits.iter().map(|h| h.score).collect::<Vec<_>>();
    assert_eq!(scores(&after), scores(&before));
    let listed = fx.store.feedback(&fx.actor, 10).await.expect("list");
    assert_eq!(listed, vec![stored]);
    let wrong = fx.store.usage(&fx.actor, ranked[0]).await.expect("usage");
    assert_eq!((wrong.returned, wrong.wrong, wrong.useful), (1, 1, 0));
    let useful = fx.store.usage(&fx.actor, ranked[1]).await.expect("usage");
    assert_eq!((useful.returned, useful.useful), (1, 1));
    let unjudged = fx.store.usage(&fx.actor, ranked[2]).await.expect("usage");
    assert_eq!(
        (unjudged.returned, unjudged.useful, unjudged.wrong),
        (1, 0, 0)
    );
}

pub async fn feedback_stays_inside_its_team<S: Backend>(fx: Fixture<S>) {
    let ranked = three_matches(&fx).await;
    fx.memory
        .submit_recall_feedback(&fx.actor, judged(&ranked, &[Some(Judgment::Useful)]))
        .await
        .expect("feedback");
    let other = fx.store.open_team("other-team").await.expect("team");
    let theirs = fx.store.feedback(&other, 10).await.expect("list");
    assert!(theirs.is_empty());
    let crossed = fx
        .memory
        .submit_recall_feedback(&other, judged(&ranked, &[Some(Judgment::Wrong)]))
        .await;
    assert!(matches!(
        crossed,
        Err(ServiceError::Store(StoreError::NotFound { .. }))
    ));
    let unseen = fx.store.usage(&other, ranked[0]).await;
    assert!(matches!(unseen, Err(StoreError::NotFound { .. })));
}

pub async fn replayed_feedback_scores_where_useful_items_rank<S: Backend>(fx: Fixture<S>) {
    let ranked = three_matches(&fx).await;
    let input = judged(
        &ranked,
        &[None, Some(Judgment::Useful), Some(Judgment::NotUseful)],
    );
    let stored = fx
        .memory
        .submit_recall_feedback(&fx.actor, input)
        .await
        .expect("feedback");
    let quality = fx
        .memory
        .replay_feedback(&fx.actor, &[stored])
        .await
        .expect("replay");
    assert_eq!(quality.queries, 1);
    assert_eq!(quality.mrr, 0.5);
    assert_eq!(quality.recall_at_5, 1.0);
}
