//! A fitted linear reranker: the last ranking step, over features the pipeline already
//! has for every result (its score so far, each branch's relevance and rank, follow-on
//! credit) and three it reads from the text (how many of the query's terms it holds, its
//! length, whether its speaker is named in the query).
//!
//! No cross-encoder weights ship in a registry package, so the model is a weighted sum
//! whose weights are profile constants (`rr_*`), fitted by `mnem eval --fit OUT
//! --fit-reranker` (a listwise softmax loss over each question's results). A built-in
//! profile would commit its weights with that command; none does, because no fit carried
//! over from one development file to the other (ARCHITECTURE "Ranking signals tried").
//! The new score is the logistic of the sum: in (0, 1), and with only the `score` weight
//! at 1 the order is exactly the order before.

use serde::Serialize;

use super::{RankingProfile, RecallHit, RecallPlan};
use crate::lexical::{matched_terms, query_terms};
use crate::signals::NamedSpeakers;
use crate::Score;

/// The features, in weight order; profile specs name a weight `rr_<feature>`.
pub const FEATURES: [&str; 10] = [
    "score",
    "lexical",
    "vector",
    "both",
    "followed",
    "coverage",
    "length",
    "speaker",
    "lexical_top",
    "vector_top",
];

/// One weight per feature ([`FEATURES`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reranker {
    pub weights: [f64; FEATURES.len()],
}

impl Reranker {
    /// The order before: the score alone.
    pub const IDENTITY: Reranker = Reranker {
        weights: [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    };

    /// The weight of a feature named as in [`FEATURES`].
    pub fn weight_mut(&mut self, feature: &str) -> Option<&mut f64> {
        let index = FEATURES.iter().position(|f| *f == feature)?;
        Some(&mut self.weights[index])
    }

    /// The model's sum for one result's features.
    pub fn logit(&self, features: &[f64; FEATURES.len()]) -> f64 {
        self.weights.iter().zip(features).map(|(w, f)| w * f).sum()
    }
}

/// What the features are read against: the query's terms and the words that could name
/// a speaker.
pub struct FeatureContext {
    terms: Vec<String>,
    speakers: NamedSpeakers,
}

impl FeatureContext {
    pub fn new(query: &str) -> Self {
        Self {
            terms: query_terms(query),
            speakers: NamedSpeakers::of(query),
        }
    }

    /// A result's features, in [`FEATURES`] order.
    pub fn features(&self, hit: &RecallHit) -> [f64; FEATURES.len()] {
        let c = &hit.components;
        let text = &hit.evidence.content;
        let coverage = if self.terms.is_empty() {
            0.0
        } else {
            matched_terms(text, &self.terms) as f64 / self.terms.len() as f64
        };
        let top = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / r as f64);
        [
            hit.score.value().max(Score::FLOOR).ln(),
            c.lexical,
            c.vector,
            f64::from(u8::from(
                c.lexical_rank.is_some() && c.vector_rank.is_some(),
            )),
            f64::from(u8::from(c.follows.is_some())),
            coverage,
            (1.0 + text.len() as f64).ln() / 10.0,
            f64::from(u8::from(self.speakers.spoke(&hit.evidence))),
            top(c.lexical_rank),
            top(c.vector_rank),
        ]
    }
}

/// Rescores every ranked hit by the profile's reranker, when it has one, then applies the
/// floor again and restores the order contract's order.
pub fn rerank(hits: &mut Vec<RecallHit>, plan: &RecallPlan, profile: &RankingProfile) {
    let Some(model) = &profile.reranker else {
        return;
    };
    if plan.is_listing() || hits.is_empty() {
        return;
    }
    let context = FeatureContext::new(&plan.query.query);
    for hit in hits.iter_mut() {
        let logit = model.logit(&context.features(hit));
        hit.score = Score::from_unit(1.0 / (1.0 + (-logit).exp()));
    }
    super::floor_and_order(hits, plan);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{hit, ScoreComponents, DEFAULT_PROFILE};
    use crate::{
        Actor, EvidenceId, NewEvidence, ProfileId, RecallQuery, SourceType, TeamId, Timestamp,
    };
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    fn ranked(id: u128, text: &str, score: f64) -> RecallHit {
        let evidence = NewEvidence::new(text)
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                ACTOR.team,
                ACTOR.profile,
                Timestamp::from_seconds(id as i64),
            )
            .unwrap();
        hit(
            evidence,
            Score::from_unit(score),
            ScoreComponents::default(),
        )
    }

    /// The first scores higher; the second holds both of "kids dinosaurs".
    fn museum_then_kids() -> Vec<RecallHit> {
        vec![
            ranked(1, "dinosaurs at the museum", 0.8),
            ranked(2, "the kids love dinosaurs", 0.7),
        ]
    }

    fn coverage_weighted(weight: f64) -> RankingProfile {
        let mut model = Reranker::IDENTITY;
        *model.weight_mut("coverage").unwrap() = weight;
        with_model(model.weights)
    }

    fn plan(query: RecallQuery) -> RecallPlan {
        RecallPlan::new(query.validated().unwrap(), Timestamp::from_seconds(1_000))
    }

    fn ids(hits: &[RecallHit]) -> Vec<u128> {
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
    }

    fn with_model(weights: [f64; FEATURES.len()]) -> RankingProfile {
        RankingProfile {
            reranker: Some(Reranker { weights }),
            ..DEFAULT_PROFILE
        }
    }

    #[test]
    fn the_model_reorders_by_its_features_and_keeps_scores_in_the_unit_interval() {
        // b scores a little lower but holds both query terms; a weight on coverage lifts it.
        let mut hits = museum_then_kids();
        let plan = plan(RecallQuery::text("kids dinosaurs"));
        rerank(&mut hits, &plan, &coverage_weighted(2.0));
        assert_eq!(ids(&hits), vec![2, 1]);
        assert!(hits
            .iter()
            .all(|h| h.score.value() > 0.0 && h.score.value() < 1.0));
    }

    #[test]
    fn the_identity_model_keeps_the_order() {
        let mut hits = museum_then_kids();
        let plan = plan(RecallQuery::text("kids dinosaurs"));
        rerank(&mut hits, &plan, &with_model(Reranker::IDENTITY.weights));
        assert_eq!(ids(&hits), vec![1, 2]);
    }

    #[test]
    fn the_floor_applies_to_the_new_scores() {
        let mut hits = vec![
            ranked(1, "dinosaurs at the museum", 0.9),
            ranked(2, "nothing in common", 0.5),
        ];
        let plan = plan(RecallQuery {
            min_score: Some(0.4),
            ..RecallQuery::text("dinosaurs")
        });
        // Coverage 1: hit 1 rises to σ(ln 0.9 + 1) ≈ 0.71, hit 2 stays σ(ln 0.5) ≈ 0.33.
        rerank(&mut hits, &plan, &coverage_weighted(1.0));
        assert_eq!(ids(&hits), vec![1]);
    }

    #[test]
    fn a_profile_without_a_model_changes_nothing() {
        let mut hits = vec![ranked(1, "a", 0.2), ranked(2, "b", 0.7)];
        let before = hits.clone();
        let plan = plan(RecallQuery::text("a"));
        rerank(
            &mut hits,
            &plan,
            &RankingProfile {
                reranker: None,
                ..DEFAULT_PROFILE
            },
        );
        assert_eq!(hits, before);
    }

    #[test]
    fn the_identity_model_is_a_monotone_map_of_the_score() {
        let low = [0.2f64.ln(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let high = [0.6f64.ln(), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        assert!(Reranker::IDENTITY.logit(&low) < Reranker::IDENTITY.logit(&high));
    }

    #[test]
    fn only_a_conversation_turn_has_a_speaker() {
        let context = FeatureContext::new("What did Ann plan?");
        let note = ranked(1, "Ann: the plan", 0.5);
        let mut turn = note.clone();
        turn.evidence.source_type = SourceType::Conversation;
        let speaker = FEATURES.iter().position(|f| *f == "speaker").unwrap();
        assert_eq!(context.features(&turn)[speaker], 1.0);
        assert_eq!(context.features(&note)[speaker], 0.0);
    }

    #[test]
    fn every_feature_has_a_weight_name() {
        let mut model = Reranker::IDENTITY;
        for feature in FEATURES {
            assert!(model.weight_mut(feature).is_some(), "{feature}");
        }
        assert!(model.weight_mut("colour").is_none());
    }
}
