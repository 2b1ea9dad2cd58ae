//! The ranking pipeline (CONTRACT §2 steps 4–6), written once for every backend: fuse branch
//! candidates by evidence id (RRF), rerank deterministically (hard anchors, phrases,
//! temporal intent), normalise to (0, 1], filter, order, fit the byte budget, limit.
//!
//! `profile` holds the constants, `plan` what a query asks before branches run, `budget`
//! the byte budget; fusion and rerank are here.

mod budget;
mod credit;
mod excerpt;
pub mod learned;
mod plan;
mod profile;

pub use budget::{fit_budget, MIN_CONTEXT_BYTES};
pub(crate) use credit::Credit;
pub(crate) use excerpt::Sentences;
pub use excerpt::{excerpt, ELISION, MIN_SHARE_BYTES};
use plan::contains_phrase;
pub use plan::RecallPlan;
pub use profile::{
    parse_profile, profile_named, Fusion, RankingProfile, CONVEX_1_PROFILE, CONVEX_2_PROFILE,
    CONVEX_3_PROFILE, CONVEX_4_PROFILE, CONVEX_5_PROFILE, CONVEX_6_PROFILE, CONVEX_7_PROFILE,
    DEFAULT_PROFILE, LEXICAL_PROFILE, NUMERIC_KEYS, RRF_PROFILE, VECTOR_PROFILE,
};

use std::collections::HashMap;

use serde::Serialize;

use crate::order::sort_hits;
use crate::signals::{self, Support};
use crate::window::WindowItem;
use crate::{Actor, Candidate, Evidence, EvidenceId, Score};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Branch {
    Lexical,
    Vector,
}

/// One branch's candidates, best first.
#[derive(Debug, Clone)]
pub struct BranchCandidates {
    pub branch: Branch,
    pub candidates: Vec<Candidate>,
}

/// Why a result scored what it did: operator diagnostics (`--explain`), never public.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScoreComponents {
    pub lexical_rank: Option<usize>,
    pub vector_rank: Option<usize>,
    /// Each branch's relevance over that branch's best, in [0, 1] (0 when absent from it).
    pub lexical: f64,
    pub vector: f64,
    pub fused: f64,
    pub phrase: bool,
    pub temporal: bool,
    /// A conversation turn spoken by someone the query names.
    pub speaker: bool,
    /// A conversation turn that only asks ([`crate::signals::only_asks`]), when the
    /// profile discounts such turns.
    pub asks: bool,
    /// The source group's support and the place in the pool's time span, each in [0, 1]
    /// (0 when the profile does not weigh them: they are not computed then).
    pub group: f64,
    pub recency: f64,
    /// What memory says for the item ([`crate::signals::Support`]); the default when the
    /// profile does not weigh it (it is not read then).
    pub support: Support,
    /// The result this one follows in its group, when follow-on credit set its score.
    pub follows: Option<EvidenceId>,
    /// The result whose rare mention this one shares, when the entity hop
    /// ([`crate::hop`]) set its score.
    pub hop_from: Option<EvidenceId>,
}

/// A ranked result: the evidence, its read-side score, and the context returned for it
/// (the content, cut to the byte budget), with its evidence window when one was asked
/// for (`before` and `after` it in its source group, in group order).
#[derive(Debug, Clone, PartialEq)]
pub struct RecallHit {
    pub evidence: Evidence,
    pub score: Score,
    pub context: String,
    pub components: ScoreComponents,
    pub before: Vec<WindowItem>,
    pub after: Vec<WindowItem>,
}

impl RecallHit {
    /// Every byte this result returns: its context and its window's.
    pub fn bytes(&self) -> usize {
        self.context.len()
            + self
                .window_items()
                .map(|item| item.context.len())
                .sum::<usize>()
    }

    /// The window's items in group order (the hit itself sits between `before` and
    /// `after`).
    pub fn window_items(&self) -> impl Iterator<Item = &WindowItem> {
        self.before.iter().chain(&self.after)
    }
}

/// A branch's candidates with those of its hinted read ([`RecallPlan::hinted_query`])
/// that it did not already hold, best relevance first: a branch scores an item the same
/// whatever the period it searched, so the union is the branch as if its pool had
/// reached them. Ties keep the branch's own order, then the hinted read's.
pub fn with_hinted(mut candidates: Vec<Candidate>, hinted: Vec<Candidate>) -> Vec<Candidate> {
    let held: std::collections::HashSet<_> = candidates.iter().map(|c| c.evidence.id).collect();
    let before = candidates.len();
    candidates.extend(
        hinted
            .into_iter()
            .filter(|c| !held.contains(&c.evidence.id)),
    );
    if candidates.len() == before {
        return candidates;
    }
    let relevance = |c: &Candidate| c.relevance.unwrap_or(f64::NEG_INFINITY);
    candidates.sort_by(|a, b| relevance(b).total_cmp(&relevance(a)));
    candidates
}

/// Spends a recall's byte budget: each result longer than its share is first cut down to
/// the sentences that best match the query ([`excerpt`]), then [`fit_budget`] keeps what
/// fits, windows included.
pub fn fit_recall_budget(hits: &mut Vec<RecallHit>, query: &crate::RecallQuery) {
    excerpt::focus(hits, &query.query, query.context_bytes, query.limit);
    fit_budget(hits, query.context_bytes);
}

/// Runs the pipeline over the branches a backend produced. Deterministic: the same
/// candidates give the same hits on every backend.
pub fn rank(
    branches: Vec<BranchCandidates>,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    let mut hits = rank_all(branches, plan, actor, profile);
    fit_recall_budget(&mut hits, &plan.query);
    hits.truncate(plan.query.limit);
    hits
}

/// Every eligible candidate, fused, reranked, floored and in the order contract's order,
/// before the byte budget and the limit: what evidence windows are assembled from
/// ([`crate::window::assemble`]), which then calls [`fit_budget`] itself.
pub fn rank_all(
    branches: Vec<BranchCandidates>,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    let query = &plan.query;
    let mut hits = if plan.is_listing() {
        unranked(branches)
    } else {
        fuse(branches, profile)
    };
    hits.retain(|hit| {
        let eligible = query.admits(&hit.evidence, actor, plan.now);
        debug_assert!(eligible, "backend returned an ineligible candidate");
        eligible && plan.anchors.iter().all(|a| a.satisfied_by(&hit.evidence))
    });
    if !plan.is_listing() {
        rerank(&mut hits, plan, profile);
    }
    if let Some(floor) = query.min_score {
        hits.retain(|hit| hit.score.value() >= floor);
    }
    sort_hits(&mut hits, query.order, query.scope_filter().is_widened());
    hits
}

/// The ranking steps that need the follow-on read ([`crate::follow`]): its credit, the
/// named-speaker boost, then the profile's fitted reranker ([`learned`]). Every caller
/// ranks through here, so a recall and `mnem eval --fit` order results alike.
pub fn settle(
    hits: Vec<RecallHit>,
    followers: &HashMap<EvidenceId, crate::window::Neighbours>,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    let mut hits = crate::follow::follow_on(hits, followers, plan, actor, profile);
    discount_questions(&mut hits, plan, profile);
    boost_named_speakers(&mut hits, plan, profile);
    learned::rerank(&mut hits, plan, profile);
    hits
}

/// A conversation turn that only asks ([`signals::only_asks`]) keeps `1 − question_discount`
/// of its score. After follow-on credit, so the reply that answers it is credited from the
/// question's full score: the question repeats the query's words, the reply holds what
/// was asked for.
fn discount_questions(hits: &mut Vec<RecallHit>, plan: &RecallPlan, profile: &RankingProfile) {
    if profile.question_discount <= 0.0 || plan.is_listing() {
        return;
    }
    let kept = 1.0 - profile.question_discount;
    let mut any = false;
    for hit in hits.iter_mut() {
        hit.components.asks = signals::only_asks(&hit.evidence);
        if hit.components.asks {
            hit.score = Score::from_unit(hit.score.value() * kept);
            any = true;
        }
    }
    if any {
        floor_and_order(hits, plan);
    }
}

/// A conversation turn spoken by someone the query names
/// ([`signals::NamedSpeakers`]) scores `1 + speaker_boost` times the others, divided by
/// that maximum so scores stay in (0, 1]; nothing changes when no result is such a turn.
/// After follow-on credit, not with the boosts before it: the reply that answers is often
/// the named speaker's, credited from the other speaker's question, and boosting before
/// the credit lifted the named speaker's own weaker matches past those questions instead
/// (LoCoMo turn R@5 0.617 → 0.577 before, → 0.637 after; ARCHITECTURE has the table).
fn boost_named_speakers(hits: &mut Vec<RecallHit>, plan: &RecallPlan, profile: &RankingProfile) {
    if profile.speaker_boost <= 0.0 || plan.is_listing() {
        return;
    }
    let speakers = signals::NamedSpeakers::of(&plan.query.query);
    let mut any = false;
    for hit in hits.iter_mut() {
        hit.components.speaker = speakers.spoke(&hit.evidence);
        any |= hit.components.speaker;
    }
    if !any {
        return;
    }
    let most = 1.0 + profile.speaker_boost;
    for hit in hits.iter_mut() {
        let multiplier = if hit.components.speaker { most } else { 1.0 };
        hit.score = Score::from_unit(hit.score.value() * multiplier / most);
    }
    floor_and_order(hits, plan);
}

/// After a step that rescored hits: the floor again (it holds against the scores a
/// reader sees), then the order contract's order.
pub(crate) fn floor_and_order(hits: &mut Vec<RecallHit>, plan: &RecallPlan) {
    if let Some(floor) = plan.query.min_score {
        hits.retain(|hit| hit.score.value() >= floor);
    }
    sort_hits(
        hits,
        plan.query.order,
        plan.query.scope_filter().is_widened(),
    );
}

/// A result with its whole content (as readers get it) as context and no window yet.
pub(crate) fn hit(evidence: Evidence, score: Score, components: ScoreComponents) -> RecallHit {
    RecallHit {
        context: evidence.content_for_readers(),
        evidence,
        score,
        components,
        before: Vec::new(),
        after: Vec::new(),
    }
}

fn unranked(branches: Vec<BranchCandidates>) -> Vec<RecallHit> {
    let mut seen: HashMap<EvidenceId, ()> = HashMap::new();
    branches
        .into_iter()
        .flat_map(|b| b.candidates)
        .filter(|c| seen.insert(c.evidence.id, ()).is_none())
        .map(|c| hit(c.evidence, Score::UNRANKED, ScoreComponents::default()))
        .collect()
}

/// Reciprocal rank fusion keyed by evidence id, each id counted once per branch (at its
/// best position), normalised by the best attainable sum so a result first in every
/// branch scores 1. A single branch keeps its own relevance mapped into (0, 1].
fn fuse(branches: Vec<BranchCandidates>, profile: &RankingProfile) -> Vec<RecallHit> {
    let weight = |branch: Branch| match branch {
        Branch::Lexical => profile.lexical_weight,
        Branch::Vector => profile.vector_weight,
    };
    let rank_weight = |branch: Branch| match branch {
        Branch::Lexical => profile.lexical_rank_weight,
        Branch::Vector => profile.vector_rank_weight,
    };
    let rank_credit = |rank: usize| (profile.rrf_k + 1.0) / (profile.rrf_k + rank as f64);
    // Normalisers: the best attainable sum, so a result first in (or best in) every
    // branch scores 1.
    let best_possible: f64 = branches
        .iter()
        .map(|b| match profile.fusion {
            Fusion::Rrf => weight(b.branch) / (profile.rrf_k + 1.0),
            Fusion::Convex => weight(b.branch) + rank_weight(b.branch),
        })
        .sum();
    // With one branch there is nothing to fuse, and the branch's own relevance grades a
    // match better than its rank can: the full-text branch alone scores BM25 relevance r
    // mapped by r/(1+r), exactly as a lexical-only store always has. Order is the same either way.
    let single_branch = branches.len() == 1;
    let mut own_relevance: HashMap<EvidenceId, f64> = HashMap::new();
    let mut fused: HashMap<EvidenceId, (Evidence, ScoreComponents)> = HashMap::new();
    for branch in branches {
        let w = weight(branch.branch);
        let rw = rank_weight(branch.branch);
        let candidates: Vec<Candidate> = branch
            .candidates
            .into_iter()
            .filter(|candidate| {
                branch.branch != Branch::Vector
                    || candidate
                        .relevance
                        .is_none_or(|similarity| similarity >= profile.vector_min_similarity)
            })
            .collect();
        let best = BestRelevance::of(&candidates);
        let mut rank = 0;
        for candidate in candidates {
            let id = candidate.evidence.id;
            if let (true, Some(relevance)) = (single_branch, candidate.relevance) {
                own_relevance.entry(id).or_insert(relevance);
            }
            let relevance = candidate.relevance;
            let entry = fused.entry(id).or_insert_with(|| {
                let components = ScoreComponents {
                    support: candidate.support,
                    ..ScoreComponents::default()
                };
                (candidate.evidence, components)
            });
            let (slot, scaled) = match branch.branch {
                Branch::Lexical => (&mut entry.1.lexical_rank, &mut entry.1.lexical),
                Branch::Vector => (&mut entry.1.vector_rank, &mut entry.1.vector),
            };
            if slot.is_some() {
                continue; // an id counts once per branch
            }
            rank += 1;
            *slot = Some(rank);
            *scaled = best.scale(relevance);
            entry.1.fused += match profile.fusion {
                Fusion::Rrf => w / (profile.rrf_k + rank as f64),
                Fusion::Convex => w * best.scale(relevance) + rw * rank_credit(rank),
            };
        }
    }
    fused
        .into_values()
        .map(|(evidence, mut components)| {
            components.fused = match own_relevance.get(&evidence.id) {
                Some(&relevance) => Score::from_relevance(relevance).value(),
                None => components.fused / best_possible,
            };
            let score = Score::from_unit(components.fused);
            hit(evidence, score, components)
        })
        .collect()
}

/// One branch's best relevance, for convex fusion.
struct BestRelevance(Option<f64>);

impl BestRelevance {
    fn of(candidates: &[Candidate]) -> Self {
        Self(
            candidates
                .iter()
                .filter_map(|c| c.relevance)
                .reduce(f64::max),
        )
    }

    /// Relevance over the branch's best, in [0, 1]; a branch without relevance (or with
    /// nothing above zero) gives each candidate full credit.
    fn scale(&self, relevance: Option<f64>) -> f64 {
        match (relevance, self.0) {
            (Some(value), Some(best)) if best > 0.0 => (value / best).clamp(0.0, 1.0),
            _ => 1.0,
        }
    }
}

/// Bounded multiplicative signals. The multiplier is divided by its maximum, so a score
/// stays in (0, 1] and a boost can reorder close results but never lift an unrelated one
/// past a strong match by more than the boost's bound. Phrase and time are all-or-nothing;
/// group support and recency are graded, judged over the fused pool before any boost;
/// tier and corroboration are graded per item ([`Support`]) and enter the maximum only
/// when some candidate has any, so a team without relationships or repeated texts scores
/// exactly as before they existed.
fn rerank(hits: &mut [RecallHit], plan: &RecallPlan, profile: &RankingProfile) {
    let phrase_weight = if plan.phrases.is_empty() {
        0.0
    } else {
        profile.phrase_boost
    };
    let temporal_weight = if plan.time_hint.is_some() {
        profile.temporal_boost
    } else {
        0.0
    };
    let supported = |grade: fn(&Support) -> f64, weight: f64| {
        let any = hits.iter().any(|hit| grade(&hit.components.support) > 0.0);
        if any {
            weight
        } else {
            0.0
        }
    };
    let tier_weight = supported(Support::tier_grade, profile.tier_boost);
    let corroboration_weight = supported(Support::corroboration_grade, profile.corroboration_boost);
    let max_multiplier = 1.0
        + phrase_weight
        + temporal_weight
        + profile.group_boost
        + profile.recency_boost
        + tier_weight
        + corroboration_weight;
    // Pool-wide passes only when the profile weighs them: a hot-path cost otherwise.
    let unweighed = || vec![0.0; hits.len()];
    let group = if profile.group_boost > 0.0 {
        signals::group_support(hits)
    } else {
        unweighed()
    };
    let recency = if profile.recency_boost > 0.0 {
        signals::recency(hits)
    } else {
        unweighed()
    };
    for ((hit, group), recency) in hits.iter_mut().zip(group).zip(recency) {
        let components = &mut hit.components;
        components.phrase = contains_phrase(&hit.evidence.content, &plan.phrases);
        components.temporal = plan
            .time_hint
            .is_some_and(|range| range.contains(hit.evidence.observed_at));
        components.group = group;
        components.recency = recency;
        let flag = |on: bool, weight: f64| if on { weight } else { 0.0 };
        let multiplier = 1.0
            + flag(components.phrase, phrase_weight)
            + flag(components.temporal, temporal_weight)
            + profile.group_boost * group
            + profile.recency_boost * recency
            + tier_weight * components.support.tier_grade()
            + corroboration_weight * components.support.corroboration_grade();
        hit.score = Score::from_unit(components.fused * multiplier / max_multiplier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Tier;
    use crate::{NewEvidence, ProfileId, RecallQuery, TeamId, Timestamp};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    fn evidence(id: u128, content: &str, observed: i64) -> Evidence {
        let mut new = NewEvidence::new(content);
        new.observed_at = Some(Timestamp::from_seconds(observed));
        new.into_evidence(
            EvidenceId(Uuid::from_u128(id)),
            ACTOR.team,
            ACTOR.profile,
            Timestamp::from_seconds(observed),
        )
        .unwrap()
    }

    /// Candidates best first, with relevance falling by position as a branch reports it.
    fn branch(branch: Branch, items: &[&Evidence]) -> BranchCandidates {
        BranchCandidates {
            branch,
            candidates: items
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    Candidate::new(
                        (*e).clone(),
                        Some(match branch {
                            Branch::Lexical => (items.len() - i) as f64,
                            Branch::Vector => 0.9 - 0.01 * i as f64,
                        }),
                    )
                })
                .collect(),
        }
    }

    #[test]
    fn a_hinted_read_adds_only_what_the_branch_lacked_in_relevance_order() {
        let (a, b, c, d) = (
            evidence(1, "a", 1),
            evidence(2, "b", 2),
            evidence(3, "c", 3),
            evidence(4, "d", 4),
        );
        let candidate = |e: &Evidence, relevance: f64| Candidate::new(e.clone(), Some(relevance));
        let merged = with_hinted(
            vec![candidate(&a, 3.0), candidate(&b, 2.0)],
            vec![candidate(&c, 2.5), candidate(&b, 2.0), candidate(&d, 1.0)],
        );
        let order: Vec<EvidenceId> = merged.iter().map(|c| c.evidence.id).collect();
        assert_eq!(order, vec![a.id, c.id, b.id, d.id]);
        assert_eq!(
            merged[1].relevance,
            Some(2.5),
            "relevance as the read gave it"
        );

        let unchanged = with_hinted(
            vec![candidate(&b, 1.0), candidate(&a, 3.0)],
            vec![candidate(&a, 3.0)],
        );
        let order: Vec<EvidenceId> = unchanged.iter().map(|c| c.evidence.id).collect();
        assert_eq!(
            order,
            vec![b.id, a.id],
            "nothing new: the branch's own order"
        );
    }

    fn plan(query: RecallQuery) -> RecallPlan {
        RecallPlan::new(
            query.validated().unwrap(),
            Timestamp::from_seconds(1_000_000),
        )
    }

    fn ids(hits: &[RecallHit]) -> Vec<u128> {
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
    }

    fn turn(id: u128, content: &str) -> Evidence {
        let mut evidence = evidence(id, content, id as i64);
        evidence.source_type = crate::SourceType::Conversation;
        evidence
    }

    fn scored(evidence: Evidence, score: f64) -> RecallHit {
        hit(
            evidence,
            Score::from_unit(score),
            ScoreComponents::default(),
        )
    }

    #[test]
    fn a_turn_by_the_speaker_the_query_names_rises_and_a_note_with_a_colon_does_not() {
        let plan = plan(RecallQuery::text("what do Melanie's kids like"));
        let mut hits = vec![
            scored(turn(1, "Caroline: my kids like the museum"), 0.9),
            scored(turn(2, "Melanie: they love dinosaurs, the kids do"), 0.7),
            scored(evidence(3, "Melanie: a note, not a turn", 3), 0.8),
        ];
        boost_named_speakers(&mut hits, &plan, &DEFAULT_PROFILE);
        assert_eq!(ids(&hits), vec![2, 1, 3]);
        assert!(hits[0].components.speaker);
        assert!(!hits[2].components.speaker);
        assert!(hits.iter().all(|h| h.score.value() <= 1.0));
    }

    #[test]
    fn without_a_named_speaker_among_the_results_nothing_changes() {
        let unnamed = plan(RecallQuery::text("what do the kids like"));
        let mut hits = vec![
            scored(turn(1, "Caroline: my kids like the museum"), 0.9),
            scored(turn(2, "Melanie: they love dinosaurs"), 0.7),
        ];
        let before = hits.clone();
        boost_named_speakers(&mut hits, &unnamed, &DEFAULT_PROFILE);
        assert_eq!(hits, before);
        // A profile without the boost leaves even a named speaker's turn alone.
        let mut hits = before.clone();
        let named = plan(RecallQuery::text("what does Melanie like"));
        boost_named_speakers(&mut hits, &named, &CONVEX_3_PROFILE);
        assert_eq!(hits, before);
    }

    fn grouped(mut evidence: Evidence) -> Evidence {
        evidence.source_key = Some("chat".into());
        evidence
    }

    #[test]
    fn a_turn_that_only_asks_sinks_below_a_statement_and_its_reply_keeps_full_credit() {
        let plan = plan(RecallQuery::text("what got Melanie into running"));
        let question = grouped(turn(1, "Caroline: Wow! What got you into running?"));
        let reply = grouped(turn(2, "Melanie: To de-stress. It clears my head."));
        let statement = grouped(turn(3, "Melanie: I ran farther this week."));
        let hits = vec![
            scored(question.clone(), 0.9),
            scored(statement.clone(), 0.8),
        ];
        let followers = HashMap::from([(
            question.id,
            crate::window::Neighbours {
                before: Vec::new(),
                after: vec![reply],
            },
        )]);
        let profile = RankingProfile {
            question_discount: 0.35,
            speaker_boost: 0.0,
            ..DEFAULT_PROFILE
        };
        let settled = settle(hits.clone(), &followers, &plan, &ACTOR, &profile);
        assert_eq!(ids(&settled), vec![3, 2, 1]);
        let score = |id: u128| {
            let hit = settled.iter().find(|h| h.evidence.id.0.as_u128() == id);
            hit.unwrap().score.value()
        };
        // The reply is credited from the question's score before the discount.
        assert!((score(2) - 0.7 * 0.9).abs() < 1e-12);
        assert!((score(1) - 0.65 * 0.9).abs() < 1e-12);
        assert!(settled[2].components.asks);
        assert!(!settled[0].components.asks);
        // Without the discount the question keeps its place.
        let plain = RankingProfile {
            question_discount: 0.0,
            ..profile
        };
        let settled = settle(hits, &followers, &plan, &ACTOR, &plain);
        assert_eq!(ids(&settled), vec![1, 3, 2]);
        assert!(settled.iter().all(|h| !h.components.asks));
    }

    #[test]
    fn rrf_rewards_agreement_between_branches() {
        let (a, b, c) = (
            evidence(1, "a", 1),
            evidence(2, "b", 2),
            evidence(3, "c", 3),
        );
        let hits = rank(
            vec![
                branch(Branch::Lexical, &[&a, &b, &c]),
                branch(Branch::Vector, &[&c, &b, &a]),
            ],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &RRF_PROFILE,
        );
        // a and c tie on fused score (1st + 3rd); b is 2nd + 2nd, which RRF scores
        // slightly lower than 1st + 3rd; ties break by recency.
        assert_eq!(ids(&hits), vec![3, 1, 2]);
        assert_eq!(hits[0].components.lexical_rank, Some(3));
        assert_eq!(hits[0].components.vector_rank, Some(1));
    }

    #[test]
    fn convex_fusion_keeps_a_decisive_full_text_match_first() {
        // Full text: a is far better than b and c (relevance 10 vs 2 and 1). Vector: b and
        // c lead a only slightly. Ranks alone (RRF) would put b, present high in both,
        // first; convex fusion keeps the size of a's lead.
        let (a, b, c) = (
            evidence(1, "a", 1),
            evidence(2, "b", 2),
            evidence(3, "c", 3),
        );
        let mut lexical = branch(Branch::Lexical, &[&a, &b, &c]);
        for (candidate, relevance) in lexical.candidates.iter_mut().zip([10.0, 2.0, 1.0]) {
            candidate.relevance = Some(relevance);
        }
        let mut vector = branch(Branch::Vector, &[&b, &c, &a]);
        for (candidate, similarity) in vector.candidates.iter_mut().zip([0.62, 0.61, 0.60]) {
            candidate.relevance = Some(similarity);
        }
        let branches = vec![lexical, vector];
        let plan = plan(RecallQuery::text("zzz"));
        // Equal weights, so the fusion rule alone makes the difference.
        let convex = RankingProfile {
            fusion: Fusion::Convex,
            ..RRF_PROFILE
        };
        let hits = rank(branches.clone(), &plan, &ACTOR, &convex);
        assert_eq!(ids(&hits), vec![1, 2, 3]);
        let rrf = rank(branches, &plan, &ACTOR, &RRF_PROFILE);
        assert_eq!(ids(&rrf)[0], 2, "RRF: second + first beats first + third");
    }

    #[test]
    fn convex_fusion_scores_stay_in_the_unit_interval_with_one_for_best_in_every_branch() {
        let (a, b) = (evidence(1, "a", 1), evidence(2, "b", 2));
        let convex = RankingProfile {
            fusion: Fusion::Convex,
            ..DEFAULT_PROFILE
        };
        let hits = rank(
            vec![
                branch(Branch::Lexical, &[&a, &b]),
                branch(Branch::Vector, &[&a, &b]),
            ],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &convex,
        );
        assert_eq!(hits[0].score.value(), 1.0);
        assert!(hits[1].score.value() > 0.0 && hits[1].score.value() < 1.0);
    }

    #[test]
    fn dissimilar_vector_neighbours_are_not_results() {
        let (near, far) = (evidence(1, "near", 1), evidence(2, "far", 2));
        let mut vector = branch(Branch::Vector, &[&near, &far]);
        vector.candidates[0].relevance = Some(0.6);
        vector.candidates[1].relevance = Some(0.05);
        let hits = rank(
            vec![vector],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![1]);
    }

    #[test]
    fn a_lone_full_text_branch_scores_by_the_bm25_mapping() {
        let (a, b) = (evidence(1, "a", 1), evidence(2, "b", 2));
        let mut lexical = branch(Branch::Lexical, &[&a, &b]);
        lexical.candidates[0].relevance = Some(3.0); // bm25 = -3
        lexical.candidates[1].relevance = Some(1.0);
        let hits = rank(
            vec![lexical],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![1, 2]);
        assert_eq!(hits[0].score.value(), 3.0 / 4.0, "-b/(1-b) with b = -3");
        assert_eq!(hits[1].score.value(), 0.5);
    }

    #[test]
    fn first_in_every_branch_scores_one() {
        let a = evidence(1, "a", 1);
        let hits = rank(
            vec![
                branch(Branch::Lexical, &[&a]),
                branch(Branch::Vector, &[&a]),
            ],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(hits[0].score.value(), 1.0);
    }

    #[test]
    fn an_id_counts_once_per_branch() {
        let (a, b) = (evidence(1, "a", 1), evidence(2, "b", 2));
        let hits = rank(
            vec![branch(Branch::Lexical, &[&a, &a, &a, &b])],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![1, 2]);
        assert_eq!(
            hits[1].components.lexical_rank,
            Some(2),
            "duplicates take no rank"
        );
    }

    #[test]
    fn a_result_must_itself_satisfy_every_anchor() {
        let both = evidence(1, "ABC-12 fixed in v2.1", 1);
        let one = evidence(2, "ABC-12 is open", 2);
        let other = evidence(3, "v2.1 released", 3);
        let hits = rank(
            vec![branch(Branch::Lexical, &[&one, &other, &both])],
            &plan(RecallQuery::text("was ABC-12 fixed in v2.1")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![1]);
    }

    #[test]
    fn temporal_intent_lifts_evidence_from_the_hinted_period() {
        let now = Timestamp::parse("t", "2024-05-15T12:00:00Z").unwrap();
        let yesterday = evidence(
            1,
            "lunch was pasta",
            now.plus_seconds(-86_400).as_micros() / 1_000_000,
        );
        let older = evidence(
            2,
            "lunch was soup",
            now.plus_seconds(-10 * 86_400).as_micros() / 1_000_000,
        );
        let query = RecallQuery {
            request_time: Some(now),
            ..RecallQuery::text("what was lunch yesterday")
        };
        let plan = RecallPlan::new(query.validated().unwrap(), now);
        let hits = rank(
            vec![branch(Branch::Lexical, &[&older, &yesterday])],
            &plan,
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![1, 2]);
        assert!(hits[0].components.temporal);
    }

    #[test]
    fn group_support_lifts_a_member_of_a_relevant_session_over_an_equal_loner() {
        let grouped = |id, key: &str| {
            let mut e = evidence(id, "x", id as i64);
            e.source_key = Some(key.to_string());
            e
        };
        // The full-text branch scores loner (1) and member (2) alike; 3 and 4 are weaker
        // turns of member's session. The loner is newer, so it wins the tie without help.
        let (member, a, b) = (grouped(2, "s"), grouped(3, "s"), grouped(4, "s"));
        let loner = evidence(5, "x", 5);
        let mut lexical = branch(Branch::Lexical, &[&loner, &member, &a, &b]);
        for (candidate, relevance) in lexical.candidates.iter_mut().zip([4.0, 4.0, 1.0, 1.0]) {
            candidate.relevance = Some(relevance);
        }
        let plan = plan(RecallQuery::text("zzz"));
        let plain = rank(vec![lexical.clone()], &plan, &ACTOR, &DEFAULT_PROFILE);
        assert_eq!(ids(&plain)[..2], [5, 2]);
        let boosted = RankingProfile {
            group_boost: 0.5,
            ..DEFAULT_PROFILE
        };
        let hits = rank(vec![lexical], &plan, &ACTOR, &boosted);
        assert_eq!(ids(&hits)[..2], [2, 5]);
        assert!(hits[0].components.group > 0.0);
        assert_eq!(hits[1].components.group, 0.0);
        assert!(hits.iter().all(|h| h.score.value() <= 1.0));
    }

    #[test]
    fn group_support_is_bounded_by_its_boost() {
        let grouped = |id, key: &str| {
            let mut e = evidence(id, "x", id as i64);
            e.source_key = Some(key.to_string());
            e
        };
        // A strong loner (0.9 on the unit scale) against a session of three weak matches
        // (0.5 each, so each is supported at 0.5): with the boost at 0.5 a member's
        // multiplier is 1.25, lifting it to 0.625 of the loner's scale, not past it.
        let loner = evidence(1, "x", 1);
        let (m1, m2, m3) = (grouped(2, "s"), grouped(3, "s"), grouped(4, "s"));
        let mut lexical = branch(Branch::Lexical, &[&loner, &m1, &m2, &m3]);
        for (candidate, relevance) in lexical.candidates.iter_mut().zip([9.0, 1.0, 1.0, 1.0]) {
            candidate.relevance = Some(relevance);
        }
        let boosted = RankingProfile {
            group_boost: 0.5,
            ..DEFAULT_PROFILE
        };
        let hits = rank(
            vec![lexical],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &boosted,
        );
        assert_eq!(ids(&hits)[0], 1);
    }

    /// One full-text branch over `items` with the given relevances and supports.
    fn supported_branch(items: &[(&Evidence, f64, Support)]) -> BranchCandidates {
        let evidence: Vec<&Evidence> = items.iter().map(|(e, _, _)| *e).collect();
        let mut lexical = branch(Branch::Lexical, &evidence);
        for (candidate, (_, relevance, support)) in lexical.candidates.iter_mut().zip(items) {
            candidate.relevance = Some(*relevance);
            candidate.support = *support;
        }
        lexical
    }

    const FACT: Support = Support {
        tier: Some(Tier::Fact),
        other_source_groups: 0,
    };

    #[test]
    fn a_supported_item_rises_above_an_equally_relevant_plain_one() {
        // Equal relevance; the plain item is newer, so it wins the tie without support.
        let (proven, plain) = (evidence(1, "x", 1), evidence(2, "x", 2));
        let unsupported = supported_branch(&[
            (&plain, 4.0, Support::default()),
            (&proven, 4.0, Support::default()),
        ]);
        let query = plan(RecallQuery::text("zzz"));
        let hits = rank(vec![unsupported], &query, &ACTOR, &DEFAULT_PROFILE);
        assert_eq!(ids(&hits), [2, 1]);
        for support in [
            FACT,
            Support {
                tier: Some(Tier::ValidatedClaim),
                other_source_groups: 0,
            },
            Support {
                tier: None,
                other_source_groups: 1,
            },
        ] {
            let lexical =
                supported_branch(&[(&plain, 4.0, Support::default()), (&proven, 4.0, support)]);
            let hits = rank(vec![lexical], &query, &ACTOR, &DEFAULT_PROFILE);
            assert_eq!(ids(&hits), [1, 2], "{support:?}");
            assert_eq!(hits[0].components.support, support);
            assert!(hits[0].score.value() <= 1.0);
        }
    }

    #[test]
    fn a_candidate_tier_earns_nothing() {
        let (claimed, plain) = (evidence(1, "x", 1), evidence(2, "x", 2));
        let candidate = Support {
            tier: Some(Tier::Candidate),
            other_source_groups: 0,
        };
        let lexical = supported_branch(&[
            (&plain, 4.0, Support::default()),
            (&claimed, 4.0, candidate),
        ]);
        let hits = rank(
            vec![lexical],
            &plan(RecallQuery::text("zzz")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), [2, 1]);
        assert_eq!(hits[0].score, hits[1].score);
    }

    #[test]
    fn tier_cannot_lift_a_weak_match_past_a_strong_one() {
        // Every support signal at its bound multiplies by 1.25 at most. One branch maps
        // relevance r to r/(1+r): the plain item scores 0.9; a fact at 2 (0.667, 74% of
        // it) stays second; at 6 (0.857, 95%) the credit decides.
        let (fact, plain) = (evidence(1, "x", 1), evidence(2, "x", 2));
        let full = Support {
            tier: Some(Tier::Fact),
            other_source_groups: 5,
        };
        let query = plan(RecallQuery::text("zzz"));
        for (relevance, expected) in [(2.0, [2, 1]), (6.0, [1, 2])] {
            let lexical =
                supported_branch(&[(&plain, 9.0, Support::default()), (&fact, relevance, full)]);
            let hits = rank(vec![lexical], &query, &ACTOR, &DEFAULT_PROFILE);
            assert_eq!(ids(&hits), expected, "fact at {relevance} against 9");
        }
    }

    #[test]
    fn without_support_in_the_pool_scores_are_the_profile_without_signals() {
        // The signals enter the normaliser only when some candidate has support, so a
        // team without relationships scores exactly as convex-2 did.
        let (a, b) = (evidence(1, "x", 1), evidence(2, "x", 2));
        let lexical =
            supported_branch(&[(&a, 5.0, Support::default()), (&b, 3.0, Support::default())]);
        let query = plan(RecallQuery::text("zzz"));
        let now = rank(vec![lexical.clone()], &query, &ACTOR, &DEFAULT_PROFILE);
        let before = rank(vec![lexical], &query, &ACTOR, &CONVEX_2_PROFILE);
        let scores = |hits: &[RecallHit]| hits.iter().map(|h| h.score).collect::<Vec<_>>();
        assert_eq!(scores(&now), scores(&before));
        let with_fact = supported_branch(&[(&a, 5.0, Support::default()), (&b, 3.0, FACT)]);
        let lowered = rank(vec![with_fact], &query, &ACTOR, &DEFAULT_PROFILE);
        assert!(lowered[0].score.value() < now[0].score.value());
    }

    #[test]
    fn rank_credit_rewards_being_first_in_a_branch_beside_relevance() {
        // Full text: a barely ahead of b. Vector: b far ahead of a in rank but both
        // close in similarity. Relevance alone keeps a first; rank credit on the vector
        // branch lets b's first place count.
        let (a, b) = (evidence(1, "a", 1), evidence(2, "b", 2));
        let mut lexical = branch(Branch::Lexical, &[&a, &b]);
        for (candidate, relevance) in lexical.candidates.iter_mut().zip([5.0, 4.9]) {
            candidate.relevance = Some(relevance);
        }
        let mut vector = branch(Branch::Vector, &[&b, &a]);
        for (candidate, similarity) in vector.candidates.iter_mut().zip([0.50, 0.49]) {
            candidate.relevance = Some(similarity);
        }
        let plan = plan(RecallQuery::text("zzz"));
        let plain = rank(
            vec![lexical.clone(), vector.clone()],
            &plan,
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&plain), [1, 2]);
        let credited = RankingProfile {
            vector_rank_weight: 0.5,
            rrf_k: 1.0,
            ..DEFAULT_PROFILE
        };
        let hits = rank(vec![lexical, vector], &plan, &ACTOR, &credited);
        assert_eq!(ids(&hits), [2, 1]);
        assert!(hits[0].score.value() <= 1.0);
    }

    #[test]
    fn an_exact_phrase_beats_close_scattered_terms() {
        let scattered = evidence(1, "the release was late; notes about it", 1);
        let phrase = evidence(2, "we wrote the release notes", 2);
        let mut lexical = branch(Branch::Lexical, &[&scattered, &phrase]);
        lexical.candidates[0].relevance = Some(1.1); // a slightly better BM25 …
        lexical.candidates[1].relevance = Some(1.0); // … than the exact phrase
        let hits = rank(
            vec![lexical],
            &plan(RecallQuery::text("\"release notes\"")),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        assert_eq!(ids(&hits), vec![2, 1]);
    }

    #[test]
    fn budget_bounds_all_contexts_together_and_cuts_at_char_boundaries() {
        let long = evidence(1, &"é".repeat(100), 3); // 200 bytes
        let short = evidence(2, &"x".repeat(80), 2);
        let mut hits: Vec<RecallHit> = [long, short]
            .into_iter()
            .map(|e| hit(e, Score::UNRANKED, ScoreComponents::default()))
            .collect();
        fit_budget(&mut hits, 151);
        assert_eq!(
            hits.len(),
            1,
            "what is left after the first is under the minimum"
        );
        assert_eq!(
            hits[0].context.len(),
            150,
            "cut to a char boundary under 151"
        );
        assert!(hits[0].context.chars().all(|c| c == 'é'));
    }

    #[test]
    fn budget_keeps_whole_contexts_that_fit() {
        let mut hits: Vec<RecallHit> = (0..5)
            .map(|i| {
                hit(
                    evidence(i, &"y".repeat(100), i as i64),
                    Score::UNRANKED,
                    ScoreComponents::default(),
                )
            })
            .collect();
        fit_budget(&mut hits, 350);
        let sizes: Vec<usize> = hits.iter().map(|h| h.context.len()).collect();
        assert_eq!(
            sizes,
            vec![100, 100, 100],
            "50 bytes left is under the minimum"
        );
    }

    fn window_item(id: u128, bytes: usize, hit: bool, distance: usize) -> WindowItem {
        let evidence = evidence(id, &"w".repeat(bytes), id as i64);
        WindowItem {
            context: evidence.content.clone(),
            evidence,
            hit,
            distance,
            results_above: 0,
        }
    }

    fn windowed_hit(
        id: u128,
        bytes: usize,
        before: Vec<WindowItem>,
        after: Vec<WindowItem>,
    ) -> RecallHit {
        RecallHit {
            before,
            after,
            ..hit(
                evidence(id, &"h".repeat(bytes), id as i64),
                Score::UNRANKED,
                ScoreComponents::default(),
            )
        }
    }

    #[test]
    fn a_merged_hit_ranked_below_later_results_is_paid_after_them() {
        // The merged hit (id 11) sits in the first result's window but ranks below both
        // results: 250 bytes hold both results, not the weak match in the early window;
        // 300 bytes hold it too, after the results.
        for (budget, kept) in [(250, vec![]), (300, vec![11])] {
            let mut deep = window_item(11, 100, true, 0);
            deep.results_above = 2;
            let mut hits = vec![
                windowed_hit(1, 100, vec![], vec![deep]),
                windowed_hit(2, 100, vec![], vec![]),
            ];
            fit_budget(&mut hits, budget);
            assert_eq!(ids(&hits), vec![1, 2], "{budget}");
            assert_eq!(kept_ids(&hits[0]), kept, "{budget}");
        }
    }

    fn kept_ids(hit: &RecallHit) -> Vec<u128> {
        hit.window_items()
            .map(|item| item.evidence.id.0.as_u128())
            .collect()
    }

    #[test]
    fn a_merged_hit_is_paid_for_before_the_next_result_and_neighbours_after_every_result() {
        let mut hits = vec![
            windowed_hit(
                1,
                100,
                vec![window_item(11, 50, false, 1)],
                vec![window_item(12, 100, true, 0)],
            ),
            windowed_hit(2, 100, vec![window_item(21, 50, false, 1)], vec![]),
        ];
        // 300 bytes: both results and the merged hit; nothing is left for neighbours.
        fit_budget(&mut hits, 300);
        assert_eq!(hits.len(), 2);
        assert_eq!(kept_ids(&hits[0]), vec![12]);
        assert!(kept_ids(&hits[1]).is_empty());
        assert_eq!(hits.iter().map(RecallHit::bytes).sum::<usize>(), 300);
    }

    #[test]
    fn neighbours_nearest_a_hit_are_kept_first_across_results() {
        let mut hits = vec![
            windowed_hit(
                1,
                100,
                vec![window_item(11, 40, false, 2), window_item(12, 40, false, 1)],
                vec![],
            ),
            windowed_hit(2, 100, vec![], vec![window_item(21, 40, false, 1)]),
        ];
        // 290 bytes: results (200), then both distance-1 neighbours (80); 10 are left.
        fit_budget(&mut hits, 290);
        assert_eq!(kept_ids(&hits[0]), vec![12]);
        assert_eq!(kept_ids(&hits[1]), vec![21]);
        assert!(hits.iter().map(RecallHit::bytes).sum::<usize>() <= 290);
    }

    #[test]
    fn limit_applies_after_the_floor_and_budget() {
        let items: Vec<Evidence> = (1..=5)
            .map(|i| evidence(i, "same text", i as i64))
            .collect();
        let refs: Vec<&Evidence> = items.iter().collect();
        let query = RecallQuery {
            limit: 2,
            min_score: Some(0.7),
            ..RecallQuery::text("zzz")
        };
        let hits = rank(
            vec![branch(Branch::Lexical, &refs)],
            &plan(query),
            &ACTOR,
            &DEFAULT_PROFILE,
        );
        // A lone lexical branch scores x/(1+x): 5/6, 4/5, 3/4 pass the 0.7 floor, 2/3
        // and 1/2 do not; the limit then keeps two.
        assert_eq!(ids(&hits), vec![1, 2]);
    }
}
