//! Content-hash de-duplication (the write contract): a repeated text is one item with
//! several recorded writes; what keeps two items apart; retraction withdraws one writer's
//! write, never another's support; corroboration by other source groups is a bounded
//! ranking signal.

use mnem_core::dedup::Duplicate;
use mnem_core::graph::{RelationshipStatus, RememberRequest, Tier};
use mnem_core::{Clock, LifecycleState, NewEvidence, RecallQuery, Space};
use mnem_service::ServiceError;
use mnem_store::{Remembered, StoreError};
use serde_json::json;

use crate::helpers::{ids, want_order, want_set, Backend, Fixture, START};

fn from(content: &str, source: &str, group: &str) -> NewEvidence {
    let mut new = NewEvidence::new(content);
    new.source = source.into();
    new.source_group = Some(group.into());
    new
}

async fn write<S: Backend>(fx: &Fixture<S>, new: NewEvidence) -> Remembered {
    fx.store.remember(&fx.actor, new).await.expect("remember")
}

/// When the last recorded write of `stored`'s item was observed.
async fn again_observed<S: Backend>(fx: &Fixture<S>, stored: &Remembered) -> mnem_core::Timestamp {
    let writes = fx
        .store
        .writes(&fx.actor, stored.evidence.id)
        .await
        .expect("writes");
    writes.last().expect("a recorded write").observed_at
}

pub async fn a_repeated_text_is_one_item_with_each_write_recorded<S: Backend>(fx: Fixture<S>) {
    let first = write(&fx, from("Ana prefers tea in the morning", "chat", "chat")).await;
    assert_eq!(first.duplicate, None);
    let again = write(
        &fx,
        from("Ana prefers  tea\nin the morning ", "email", "email"),
    )
    .await;
    assert_eq!(again.duplicate, Some(Duplicate::Alias));
    assert_eq!(again.evidence.id, first.evidence.id);
    // Observed at another time, it is another observation; the same one again is a replay.
    let mut same_observation = from("Ana prefers tea in the morning", "email", "email");
    same_observation.observed_at = Some(again_observed(&fx, &again).await);
    let replay = write(&fx, same_observation).await;
    assert_eq!(replay.duplicate, Some(Duplicate::Replay));
    assert_eq!(replay.evidence.id, first.evidence.id);
    let writes = fx
        .store
        .writes(&fx.actor, first.evidence.id)
        .await
        .expect("writes");
    let sources: Vec<&str> = writes.iter().map(|w| w.source.as_str()).collect();
    assert_eq!(sources, ["chat", "email"]);
    let hits = fx.recall(RecallQuery::text("tea morning")).await;
    want_set(&hits, &[&first.evidence], "recall shows the item once");
    let batch = fx
        .store
        .remember_batch(
            &fx.actor,
            vec![
                from("the build is green", "ci", "ci"),
                from("the build is green", "bot", "bot"),
            ],
        )
        .await
        .expect("batch");
    assert_eq!(batch[1].duplicate, Some(Duplicate::Alias));
    assert_eq!(batch[1].evidence.id, batch[0].evidence.id);
}

pub async fn what_a_recall_can_tell_apart_is_never_merged<S: Backend>(fx: Fixture<S>) {
    let text = "the staging database moved to eu-west";
    let kept = write(&fx, from(text, "chat", "chat")).await.evidence;
    let other_team = fx.store.open_team("other-team").await.expect("team");
    let theirs = fx
        .store
        .remember(&other_team, NewEvidence::new(text))
        .await
        .expect("remember");
    let colleague = fx.profile("colleague").await;
    let mut private = NewEvidence::new(text);
    private.space = Space::Private;
    let private = fx
        .store
        .remember(&colleague, private)
        .await
        .expect("remember");
    let mut decision = NewEvidence::new(text);
    decision.kind = Some("decision".into());
    let decision = write(&fx, decision).await;
    let same = fx
        .store
        .remember(&colleague, NewEvidence::new(text))
        .await
        .expect("remember");
    let separate = [&theirs, &private, &decision];
    assert!(separate.iter().all(|r| r.duplicate.is_none()));
    assert!(separate.iter().all(|r| r.evidence.id != kept.id));
    assert_eq!(same.duplicate, Some(Duplicate::Alias));
    assert_eq!(same.evidence.id, kept.id);
}

pub async fn the_same_words_elsewhere_in_a_sequence_stay_in_place<S: Backend>(fx: Fixture<S>) {
    let turn = |session: &str, seconds: i64| {
        let mut new = NewEvidence::new("thanks, that helps");
        new.source_key = Some(session.into());
        new.observed_at = Some(START.plus_seconds(seconds));
        new
    };
    let a1 = write(&fx, turn("session-a", 10)).await;
    let a2 = write(&fx, turn("session-a", 20)).await;
    let b1 = write(&fx, turn("session-b", 10)).await;
    let replayed = write(&fx, turn("session-a", 10)).await;
    let items = [&a1, &a2, &b1];
    assert!(items.iter().all(|r| r.duplicate.is_none()));
    assert_eq!(replayed.duplicate, Some(Duplicate::Replay));
    assert_eq!(replayed.evidence.id, a1.evidence.id);
    // Without windows: a window would merge a turn into its neighbour's result.
    let hits = fx
        .recall(RecallQuery {
            window: 0,
            ..RecallQuery::text("thanks helps")
        })
        .await;
    want_set(
        &hits,
        &[&a1.evidence, &a2.evidence, &b1.evidence],
        "each turn where it was said",
    );
}

pub async fn retracting_one_write_keeps_the_others_support<S: Backend>(fx: Fixture<S>) {
    let text = "Mark works on Dense-Mem";
    let request: RememberRequest = serde_json::from_value(json!({
        "evidence": [{"content": text, "source": "chat"}],
        "relationships": [{
            "subject": {"name": "Mark"}, "predicate": "works_on",
            "object": {"entity": {"name": "Dense-Mem"}},
            "supports": [{"evidence": 0, "start": 0, "end": text.chars().count()}]
        }]
    }))
    .expect("request json");
    let outcome = fx
        .memory
        .remember_request(&fx.actor, request)
        .await
        .expect("remember");
    let id = outcome.evidence[0].evidence_id;
    let relationship = outcome.relationships[0].relationship_id;
    assert_eq!(outcome.relationships[0].tier, Tier::ValidatedClaim);
    let bob = fx.profile("bob").await;
    let echoed = fx
        .memory
        .remember(&bob, from(text, "standup notes", "standup"))
        .await
        .expect("remember");
    assert_eq!(echoed.evidence.id, id);
    let kept = fx
        .memory
        .retract_evidence(&fx.actor, vec![id], Some("I misremembered".into()))
        .await
        .expect("retract my write");
    assert_eq!(kept, vec![id]);
    let item = fx.store.get(&fx.actor, id).await.expect("get");
    assert_eq!(item.state, LifecycleState::Current);
    let again = fx.memory.retract_evidence(&fx.actor, vec![id], None).await;
    assert!(
        matches!(again, Err(ServiceError::Store(StoreError::NotFound { .. }))),
        "a second retraction never reaches bob's write"
    );
    want_order(
        &fx.recall(RecallQuery::text("Dense-Mem")).await,
        &[&item],
        "bob's write still stands",
    );
    let standing = fx
        .memory
        .trace(&fx.actor, relationship, Default::default())
        .await
        .expect("trace");
    assert_eq!(standing.relationship.status, RelationshipStatus::Active);
    let kept = fx
        .memory
        .retract_evidence(&bob, vec![id], None)
        .await
        .expect("bob retracts his");
    assert!(kept.is_empty());
    let item = fx.store.get(&fx.actor, id).await.expect("get");
    assert_eq!(item.state, LifecycleState::Retracted);
    let after = fx
        .memory
        .trace(&fx.actor, relationship, Default::default())
        .await
        .expect("trace");
    assert_eq!(
        after.relationship.status,
        RelationshipStatus::PendingEvidence
    );
}

pub async fn corroboration_by_other_groups_lifts_only_among_equals<S: Backend>(fx: Fixture<S>) {
    // Equal full-text relevance (same length, same query terms). The plain item is
    // newer, so without the signal it wins the tie.
    let echoed = write(&fx, from("the invoice run starts at noon", "chat", "chat")).await;
    let plain = write(&fx, from("the invoice run starts at nine", "chat", "chat")).await;
    let query = || RecallQuery::text("invoice run");
    want_order(
        &fx.recall(query()).await,
        &[&plain.evidence, &echoed.evidence],
        "newest wins the tie",
    );
    let before_echoes = fx.clock.now();
    for group in ["email", "calendar"] {
        let again = write(&fx, from("the invoice run starts at noon", group, group)).await;
        assert_eq!(again.duplicate, Some(Duplicate::Alias));
    }
    let hits = fx.recall(query()).await;
    assert_eq!(ids(&hits), vec![echoed.evidence.id, plain.evidence.id]);
    assert_eq!(hits[0].components.support.other_source_groups, 2);
    // As memory stood before the echoes were written, nothing corroborated it.
    let then = fx
        .recall(RecallQuery {
            known_at: Some(before_echoes),
            ..query()
        })
        .await;
    assert_eq!(ids(&then), vec![plain.evidence.id, echoed.evidence.id]);
}
