//! Follow-on credit: the item right after a strong match in its source group is ranked
//! at least a share of that match.
//!
//! In a conversation the words of a question are usually in the turn that asks it and
//! its answer in the reply ("what are your plans for the summer?" → "researching
//! adoption agencies"); in a document the sentence that matches introduces the one that
//! says it. Full text and the built-in model both score the item that repeats the query's
//! words, so the item after it is often missing from the pool or far down. Credit runs
//! forwards only: lifting the item *before* a match was measured and did not help (see
//! ARCHITECTURE "Ranking signals tried").
//!
//! Backends only read: the service asks the store for each leader's next eligible item in
//! its group ([`crate::window::Neighbours::after`], exactly the eligibility of a window
//! neighbour, which is a result's), and this module scores.

use std::collections::HashMap;

use crate::pipeline::{Credit, RankingProfile, RecallHit, RecallPlan};
use crate::window::Neighbours;
use crate::{signals, Actor, Evidence, EvidenceId};

/// The hits whose followers are worth reading: the first `limit` ranked hits that belong
/// to a source group, when the profile gives follow-on credit and the recall is ranked.
pub fn leaders(hits: &[RecallHit], plan: &RecallPlan, profile: &RankingProfile) -> Vec<Evidence> {
    if profile.follow_share <= 0.0 || plan.is_listing() {
        return Vec::new();
    }
    leading(hits, plan)
        .map(|hit| hit.evidence.clone())
        .collect()
}

/// The first `limit` ranked hits that belong to a source group: the only ones that give
/// credit.
fn leading<'a>(hits: &'a [RecallHit], plan: &RecallPlan) -> impl Iterator<Item = &'a RecallHit> {
    hits.iter()
        .take(plan.query.limit)
        .filter(|hit| hit.evidence.source_key.is_some())
}

/// Gives each leader's next item in its group (`neighbours[leader].after[0]`) a score of
/// at least `follow_share` × the leader's score, and, when that item only asks
/// ([`signals::only_asks`]), the item after it (`after[1]`, its answer) at least
/// `follow_through` × the leader's score; each is added to the hits when it was not a
/// candidate. Credit is computed from the scores before any is given, so it never
/// chains (a follower's follower gets nothing through the follower's own score). A new
/// hit must satisfy the query's anchors and floor like any other; the hits come back in
/// the order contract's order.
pub fn follow_on(
    hits: Vec<RecallHit>,
    neighbours: &HashMap<EvidenceId, Neighbours>,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    let share = profile.follow_share;
    if share <= 0.0 || neighbours.is_empty() {
        return hits;
    }
    // Only the leaders give credit, whatever else `neighbours` holds (`mnem eval --fit`
    // passes every candidate's), so a profile ranks offline exactly as in a recall.
    let mut credit = Credit::new(&hits);
    for hit in leading(&hits, plan) {
        let Some(after) = neighbours.get(&hit.evidence.id).map(|n| &n.after) else {
            continue;
        };
        let Some(next) = after.first() else {
            continue;
        };
        let leader = hit.evidence.id;
        credit.give(next.id, || Some(next), share * hit.score.value(), leader);
        // A follow-up question about the leader ("what did you do there?") says nothing
        // itself: its answer, the item after it, is the leader's continuation.
        if profile.follow_through > 0.0 && signals::only_asks(next) {
            if let Some(answer) = after.get(1) {
                let earned = profile.follow_through * hit.score.value();
                credit.give(answer.id, || Some(answer), earned, leader);
            }
        }
    }
    credit.settle(hits, plan, actor, "follower", |components, leader| {
        components.follows = Some(leader)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{ScoreComponents, DEFAULT_PROFILE};
    use crate::{NewEvidence, ProfileId, RecallQuery, Score, TeamId, Timestamp};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    fn evidence(id: u128, content: &str, group: Option<&str>, observed: i64) -> Evidence {
        let mut new = NewEvidence::new(content);
        new.observed_at = Some(Timestamp::from_seconds(observed));
        new.source_key = group.map(str::to_string);
        new.into_evidence(
            EvidenceId(Uuid::from_u128(id)),
            ACTOR.team,
            ACTOR.profile,
            Timestamp::from_seconds(observed),
        )
        .unwrap()
    }

    fn hit(evidence: &Evidence, score: f64) -> RecallHit {
        RecallHit {
            context: evidence.content.clone(),
            evidence: evidence.clone(),
            score: Score::from_unit(score),
            components: ScoreComponents::default(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    fn plan(query: &str) -> RecallPlan {
        RecallPlan::new(
            RecallQuery::text(query).validated().unwrap(),
            Timestamp::from_seconds(1_000_000),
        )
    }

    fn profile(share: f64) -> RankingProfile {
        RankingProfile {
            follow_share: share,
            ..DEFAULT_PROFILE
        }
    }

    /// `leader` is followed by `next` in its group.
    fn followed_by(pairs: &[(&Evidence, &Evidence)]) -> HashMap<EvidenceId, Neighbours> {
        pairs
            .iter()
            .map(|(leader, next)| {
                let neighbours = Neighbours {
                    before: Vec::new(),
                    after: vec![(*next).clone()],
                };
                (leader.id, neighbours)
            })
            .collect()
    }

    fn ids(hits: &[RecallHit]) -> Vec<u128> {
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
    }

    fn score_of(hits: &[RecallHit], id: u128) -> f64 {
        let hit = hits.iter().find(|h| h.evidence.id.0.as_u128() == id);
        hit.map(|h| h.score.value()).unwrap_or(f64::NAN)
    }

    #[test]
    fn the_reply_to_a_strong_match_joins_the_results_above_a_weaker_match() {
        let question = evidence(1, "what are your summer plans", Some("s1"), 10);
        let reply = evidence(2, "researching adoption agencies", Some("s1"), 11);
        let weak = evidence(3, "plans for a garden", Some("s2"), 12);
        let hits = vec![hit(&question, 1.0), hit(&weak, 0.5)];
        let plan = plan("summer plans");
        let out = follow_on(
            hits,
            &followed_by(&[(&question, &reply)]),
            &plan,
            &ACTOR,
            &profile(0.7),
        );
        assert_eq!(ids(&out), vec![1, 2, 3]);
        assert!((score_of(&out, 2) - 0.7).abs() < 1e-12);
        assert_eq!(out[1].components.follows, Some(question.id));
    }

    #[test]
    fn credit_never_lowers_a_score_and_never_chains() {
        let a = evidence(1, "a", Some("s1"), 10);
        let b = evidence(2, "b", Some("s1"), 11);
        let c = evidence(3, "c", Some("s1"), 12);
        // b already scores above its credit; c follows b, which earned nothing from a.
        let hits = vec![hit(&a, 1.0), hit(&b, 0.9), hit(&c, 0.1)];
        let next = followed_by(&[(&a, &b), (&b, &c)]);
        let out = follow_on(hits, &next, &plan("a b c"), &ACTOR, &profile(0.5));
        assert!((score_of(&out, 2) - 0.9).abs() < 1e-12);
        assert_eq!(out[1].components.follows, None);
        assert!((score_of(&out, 3) - 0.45).abs() < 1e-12);
    }

    #[test]
    fn a_follower_earns_from_its_best_leader_only() {
        let a = evidence(1, "a", Some("s1"), 10);
        let b = evidence(2, "b", Some("s2"), 10);
        let shared = evidence(3, "c", Some("s1"), 11);
        let hits = vec![hit(&a, 0.4), hit(&b, 0.8)];
        let next = followed_by(&[(&a, &shared), (&b, &shared)]);
        let out = follow_on(hits, &next, &plan("a b"), &ACTOR, &profile(0.5));
        assert_eq!(out.len(), 3);
        assert!((score_of(&out, 3) - 0.4).abs() < 1e-12);
        let follower = out.iter().find(|h| h.evidence.id == shared.id);
        assert_eq!(follower.and_then(|h| h.components.follows), Some(b.id));
    }

    #[test]
    fn a_new_follower_must_satisfy_the_anchors_and_the_floor() {
        let question = evidence(1, "what did we decide on ABC-12", Some("s1"), 10);
        let reply = evidence(2, "nothing tagged", Some("s1"), 11);
        let hits = vec![hit(&question, 1.0)];
        let next = followed_by(&[(&question, &reply)]);
        let anchored = follow_on(hits.clone(), &next, &plan("ABC-12"), &ACTOR, &profile(0.7));
        assert_eq!(ids(&anchored), vec![1]);
        let mut floored = plan("what");
        floored.query.min_score = Some(0.8);
        let out = follow_on(hits, &next, &floored, &ACTOR, &profile(0.7));
        assert_eq!(ids(&out), vec![1]);
    }

    #[test]
    fn only_the_first_limit_results_give_credit() {
        let first = evidence(1, "a", Some("s1"), 10);
        let second = evidence(2, "b", Some("s2"), 10);
        let after_first = evidence(3, "c", Some("s1"), 11);
        let after_second = evidence(4, "d", Some("s2"), 11);
        let hits = vec![hit(&first, 1.0), hit(&second, 0.9)];
        let next = followed_by(&[(&first, &after_first), (&second, &after_second)]);
        let mut limited = plan("a b");
        limited.query.limit = 1;
        let out = follow_on(hits, &next, &limited, &ACTOR, &profile(0.5));
        assert_eq!(ids(&out), vec![1, 2, 3]);
    }

    #[test]
    fn no_share_reads_nothing_and_changes_nothing() {
        let question = evidence(1, "q", Some("s1"), 10);
        let reply = evidence(2, "r", Some("s1"), 11);
        let hits = vec![hit(&question, 1.0)];
        assert!(leaders(&hits, &plan("q"), &profile(0.0)).is_empty());
        let next = followed_by(&[(&question, &reply)]);
        let out = follow_on(hits.clone(), &next, &plan("q"), &ACTOR, &profile(0.0));
        assert_eq!(out, hits);
    }

    #[test]
    fn leaders_are_the_first_limit_results_that_belong_to_a_group() {
        let grouped = evidence(1, "a", Some("s1"), 10);
        let loose = evidence(2, "b", None, 11);
        let late = evidence(3, "c", Some("s1"), 12);
        let hits = vec![hit(&grouped, 1.0), hit(&loose, 0.9), hit(&late, 0.8)];
        let mut limited = plan("a b c");
        limited.query.limit = 2;
        let chosen = leaders(&hits, &limited, &profile(0.5));
        assert_eq!(
            chosen.iter().map(|e| e.id).collect::<Vec<_>>(),
            vec![grouped.id]
        );
    }

    fn turn(id: u128, content: &str, observed: i64) -> Evidence {
        let mut turn = evidence(id, content, Some("s1"), observed);
        turn.source_type = crate::SourceType::Conversation;
        turn
    }

    #[test]
    fn credit_passes_through_a_follow_up_question_to_its_answer_only() {
        let told = turn(1, "Ann: we went camping in the mountains", 10);
        let asked = turn(2, "Cy: Fun! What did you do?", 11);
        let answer = turn(3, "Ann: roasted marshmallows", 12);
        let said = turn(4, "Cy: I love the mountains too.", 11);
        let read = |next: &Evidence| {
            let neighbours = Neighbours {
                before: Vec::new(),
                after: vec![next.clone(), answer.clone()],
            };
            HashMap::from([(told.id, neighbours)])
        };
        let through = |share: f64| RankingProfile {
            follow_through: share,
            ..profile(0.7)
        };
        let hits = vec![hit(&told, 1.0)];
        let out = follow_on(
            hits.clone(),
            &read(&asked),
            &plan("camping"),
            &ACTOR,
            &through(0.5),
        );
        assert_eq!(ids(&out), vec![1, 2, 3]);
        assert!((score_of(&out, 3) - 0.5).abs() < 1e-12);
        assert_eq!(out[2].components.follows, Some(told.id));
        // Off, or after a follower that says something, the credit stops at the follower.
        let off = follow_on(
            hits.clone(),
            &read(&asked),
            &plan("camping"),
            &ACTOR,
            &through(0.0),
        );
        assert_eq!(ids(&off), vec![1, 2]);
        let stated = follow_on(hits, &read(&said), &plan("camping"), &ACTOR, &through(0.5));
        assert_eq!(ids(&stated), vec![1, 4]);
    }
}
