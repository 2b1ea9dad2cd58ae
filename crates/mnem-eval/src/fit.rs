//! Fitting a ranking profile's constants to a development file (`mnem eval --fit OUT`):
//! every scored question's branch candidates are read from the store once, then re-ranked
//! offline by the core's own pipeline ([`mnem_core::rank_all`], the entity hop, then
//! [`mnem_core::pipeline::settle`]) under candidate profiles,
//! so what is fitted is exactly what ships. Coordinate ascent on turn MRR: one constant at a
//! time over a fixed grid, a move kept only when it raises MRR by more than [`MIN_GAIN`];
//! sweeps repeat until none does. Deterministic: same file, same store, same result.

use std::collections::{BTreeMap, HashMap, HashSet};

use mnem_core::hop::{hop, MentionRead};
use mnem_core::pipeline::learned::{FeatureContext, Reranker, FEATURES};
use mnem_core::pipeline::settle;
use mnem_core::{
    parse_profile, rank_all, Actor, BranchCandidates, EvidenceId, Neighbours, RankingProfile,
    RecallPlan,
};
use serde::Serialize;

use crate::EvalError;

/// Ranks past this count as a miss, as in the deep recall the rank metrics use.
const DEPTH: usize = crate::run::DEEP_LIMIT;

/// A move must gain this much MRR to be kept: below it, a change is as likely one
/// question's luck as a better method (one question of 150 moving one rank is ~0.003).
pub const MIN_GAIN: f64 = 0.002;

/// Sweeps over every key at most; each sweep is one pass over the keys.
pub const MAX_SWEEPS: usize = 4;

/// What is searched, in order. `lexical_weight` stays at its value as the scale the others
/// are measured against (fusion normalises by the weights' sum, so only ratios matter);
/// `branch_pool` is not fitted because the candidates were read once at the starting depth;
/// `tier_boost` and `corroboration_boost` are not, because the benchmark files hold no
/// relationships and no repeated texts (their candidates have no support to weigh).
pub const FITTED_KEYS: [&str; 12] = [
    "vector_weight",
    "lexical_rank_weight",
    "vector_rank_weight",
    "rrf_k",
    "vector_min_similarity",
    "phrase_boost",
    "temporal_boost",
    "group_boost",
    "recency_boost",
    "speaker_boost",
    "question_discount",
    "follow_share",
];

/// One scored question, ready to re-rank: its plan, the store's candidates and the
/// evidence that answers it.
pub struct FitQuestion {
    pub actor: Actor,
    pub plan: RecallPlan,
    pub branches: Vec<BranchCandidates>,
    /// What the query and every candidate mention, for the entity hop.
    pub mentions: MentionRead,
    /// The next item after each grouped candidate (and each item the hop can bring in),
    /// for follow-on credit.
    pub followers: HashMap<EvidenceId, Neighbours>,
    pub gold: HashSet<EvidenceId>,
}

/// The outcome, reported beside the eval and written (the spec alone) to the `--fit` file.
#[derive(Debug, Clone, Serialize)]
pub struct FitReport {
    pub start: String,
    pub fitted: String,
    pub questions: usize,
    pub start_mrr: f64,
    pub fitted_mrr: f64,
    /// Each kept move: key, new value, MRR after it.
    pub moves: Vec<(String, f64, f64)>,
}

/// Turn MRR of `profile` over `questions` (a miss past [`DEPTH`] counts 0).
pub fn mrr(questions: &[FitQuestion], profile: &RankingProfile) -> f64 {
    if questions.is_empty() {
        return 0.0;
    }
    let total: f64 = questions
        .iter()
        .map(|q| {
            let hits = rank_all(q.branches.clone(), &q.plan, &q.actor, profile);
            let hits = hop(hits, &q.mentions, &q.plan, &q.actor, profile);
            let hits = settle(hits, &q.followers, &q.plan, &q.actor, profile);
            hits.iter()
                .take(DEPTH)
                .position(|hit| q.gold.contains(&hit.evidence.id))
                .map_or(0.0, |i| 1.0 / (i + 1) as f64)
        })
        .sum();
    total / questions.len() as f64
}

/// The values tried for a key, given its current value: proportional steps around it, and
/// a ladder from zero so a signal the start leaves off can be switched on.
fn grid(key: &str, current: f64) -> Vec<f64> {
    let mut values: Vec<f64> = [0.0, 0.5, 0.75, 1.25, 1.5, 2.0]
        .iter()
        .map(|f| current * f)
        .chain([0.05, 0.1, 0.2, 0.4, 0.8])
        .collect();
    if key == "rrf_k" {
        values = vec![1.0, 5.0, 10.0, 20.0, 40.0, 60.0];
    }
    if key == "follow_share" {
        values = vec![0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
    }
    if key == "question_discount" {
        values = vec![0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
    }
    if key == "vector_min_similarity" {
        values = vec![0.0, 0.1, 0.15, 0.2, 0.25, 0.3];
    }
    values.retain(|v| (*v - current).abs() > 1e-12);
    values.sort_by(f64::total_cmp);
    values.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    values
}

/// A profile spec from a base name and the overrides so far (in key order, so equal
/// settings spell the same version).
fn spec(base: &str, overrides: &BTreeMap<&'static str, f64>) -> String {
    let mut spec = base.to_string();
    for (key, value) in overrides {
        spec.push_str(&format!(":{key}={}", round(*value)));
    }
    spec
}

/// Four significant decimals: a fitted constant is not more precise than the data.
fn round(value: f64) -> f64 {
    (value * 1e4).round() / 1e4
}

/// Coordinate ascent from `start` (a profile spec such as `hybrid`). `progress` hears each
/// kept move.
pub fn fit(
    questions: &[FitQuestion],
    start: &str,
    mut progress: impl FnMut(&str, f64),
) -> Result<FitReport, EvalError> {
    let base = start.split(':').next().unwrap_or_default().to_string();
    let profile = |overrides: &BTreeMap<&'static str, f64>| {
        parse_profile(&spec(&base, overrides)).map_err(|e| EvalError::Fit(e.to_string()))
    };
    // The start's own overrides become the first settings.
    let mut overrides: BTreeMap<&'static str, f64> = BTreeMap::new();
    let starting = parse_profile(start).map_err(|e| EvalError::Fit(e.to_string()))?;
    let initial = parse_profile(&base).map_err(|e| EvalError::Fit(e.to_string()))?;
    for key in FITTED_KEYS {
        let (now, was) = (value_of(&starting, key), value_of(&initial, key));
        if (now - was).abs() > 1e-12 {
            overrides.insert(key, now);
        }
    }
    let start_mrr = mrr(questions, &profile(&overrides)?);
    let mut best = start_mrr;
    let mut moves = Vec::new();
    for _ in 0..MAX_SWEEPS {
        let mut moved = false;
        for key in FITTED_KEYS {
            let current = overrides
                .get(key)
                .copied()
                .unwrap_or_else(|| value_of(&initial, key));
            let mut winner = None;
            for value in grid(key, current) {
                let mut trial = overrides.clone();
                trial.insert(key, round(value));
                let score = mrr(questions, &profile(&trial)?);
                if score > best + MIN_GAIN && winner.is_none_or(|(_, s)| score > s) {
                    winner = Some((round(value), score));
                }
            }
            if let Some((value, score)) = winner {
                overrides.insert(key, value);
                best = score;
                moved = true;
                moves.push((key.to_string(), value, score));
                progress(&spec(&base, &overrides), score);
            }
        }
        if !moved {
            break;
        }
    }
    Ok(FitReport {
        start: start.to_string(),
        fitted: profile(&overrides)?.version.into_owned(),
        questions: questions.len(),
        start_mrr,
        fitted_mrr: best,
        moves,
    })
}

/// Gradient steps of the reranker fit: the loss is convex in the weights, so plain
/// full-batch descent has one optimum to approach; steps and step size are fixed so a fit
/// is reproducible.
const RERANK_STEPS: usize = 4_000;
const RERANK_STEP_SIZE: f64 = 0.2;
/// Pull towards the start's weights (the identity: the order before), so a weight moves
/// only as far as the whole file asks, not one question.
const RERANK_L2: f64 = 0.01;

/// One question's results under the start profile, as the reranker sees them.
struct RankedList {
    features: Vec<[f64; FEATURES.len()]>,
    gold: Vec<bool>,
}

/// Fits the reranker's weights ([`mnem_core::pipeline::learned`]) on top of `start`: each
/// scored question's first [`DEPTH`] results under `start` (fused, boosted, followed),
/// a listwise softmax loss whose target is spread evenly over the question's gold results,
/// plus [`RERANK_L2`] towards the start. Only the weights of `features` move (every
/// feature when it is empty); the others stay at the start's (the identity's when the
/// start has no reranker). Questions without a gold result in the list teach nothing and
/// are left out of the loss (not of the MRR). Deterministic.
pub fn fit_reranker(
    questions: &[FitQuestion],
    start: &str,
    features: &[String],
) -> Result<FitReport, EvalError> {
    let mut starting = parse_profile(start).map_err(|e| EvalError::Fit(e.to_string()))?;
    let start_mrr = mrr(questions, &starting);
    let identity = starting.reranker.unwrap_or(Reranker::IDENTITY).weights;
    let mut fitted_feature = [features.is_empty(); FEATURES.len()];
    for feature in features {
        let index = FEATURES.iter().position(|f| f == feature).ok_or_else(|| {
            EvalError::Fit(format!(
                "unknown reranker feature {feature:?} ({})",
                FEATURES.join(", ")
            ))
        })?;
        fitted_feature[index] = true;
    }
    starting.reranker = None;
    let lists: Vec<RankedList> = questions
        .iter()
        .map(|q| {
            let hits = rank_all(q.branches.clone(), &q.plan, &q.actor, &starting);
            let hits = hop(hits, &q.mentions, &q.plan, &q.actor, &starting);
            let hits = settle(hits, &q.followers, &q.plan, &q.actor, &starting);
            let context = FeatureContext::new(&q.plan.query.query);
            let top = &hits[..hits.len().min(DEPTH)];
            RankedList {
                features: top.iter().map(|hit| context.features(hit)).collect(),
                gold: top
                    .iter()
                    .map(|hit| q.gold.contains(&hit.evidence.id))
                    .collect(),
            }
        })
        .filter(|list| list.gold.iter().any(|g| *g) && list.gold.len() > 1)
        .collect();
    let mut weights = identity;
    for _ in 0..RERANK_STEPS {
        let mut gradient = [0.0; FEATURES.len()];
        for list in &lists {
            add_list_gradient(list, &weights, &mut gradient);
        }
        for (i, g) in gradient.iter_mut().enumerate() {
            *g = *g / lists.len().max(1) as f64 + 2.0 * RERANK_L2 * (weights[i] - identity[i]);
        }
        for ((w, g), fitted) in weights.iter_mut().zip(gradient).zip(fitted_feature) {
            if fitted {
                *w -= RERANK_STEP_SIZE * g;
            }
        }
    }
    let base = start.split(':').next().unwrap_or_default();
    let mut fitted = base.to_string();
    for (feature, weight) in FEATURES.iter().zip(weights) {
        fitted.push_str(&format!(":rr_{feature}={}", round(weight)));
    }
    let profile = parse_profile(&fitted).map_err(|e| EvalError::Fit(e.to_string()))?;
    let fitted_mrr = mrr(questions, &profile);
    Ok(FitReport {
        start: start.to_string(),
        fitted: profile.version.into_owned(),
        questions: lists.len(),
        start_mrr,
        fitted_mrr,
        // The weights are the fitted spec itself; there are no coordinate moves to list.
        moves: Vec::new(),
    })
}

/// Adds one list's gradient of `−mean over gold of log softmax(logits)[gold]`.
fn add_list_gradient(list: &RankedList, weights: &[f64; FEATURES.len()], out: &mut [f64]) {
    let model = Reranker { weights: *weights };
    let logits: Vec<f64> = list.features.iter().map(|x| model.logit(x)).collect();
    let top = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = logits.iter().map(|z| (z - top).exp()).collect();
    let total: f64 = exps.iter().sum();
    let golds = list.gold.iter().filter(|g| **g).count() as f64;
    for ((x, e), gold) in list.features.iter().zip(&exps).zip(&list.gold) {
        // d/dz_i = softmax_i − target_i, target spread evenly over the gold results.
        let target = if *gold { 1.0 / golds } else { 0.0 };
        let coefficient = e / total - target;
        for (o, v) in out.iter_mut().zip(x) {
            *o += coefficient * v;
        }
    }
}

/// A fitted key's value in a profile.
fn value_of(profile: &RankingProfile, key: &str) -> f64 {
    match key {
        "vector_weight" => profile.vector_weight,
        "lexical_rank_weight" => profile.lexical_rank_weight,
        "vector_rank_weight" => profile.vector_rank_weight,
        "rrf_k" => profile.rrf_k,
        "vector_min_similarity" => profile.vector_min_similarity,
        "phrase_boost" => profile.phrase_boost,
        "temporal_boost" => profile.temporal_boost,
        "group_boost" => profile.group_boost,
        "recency_boost" => profile.recency_boost,
        "follow_share" => profile.follow_share,
        "speaker_boost" => profile.speaker_boost,
        "question_discount" => profile.question_discount,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnem_core::{Branch, Candidate, NewEvidence, ProfileId, RecallQuery, TeamId, Timestamp};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    fn candidate(id: u128, text: &str, relevance: f64) -> Candidate {
        let evidence = NewEvidence::new(text)
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                ACTOR.team,
                ACTOR.profile,
                Timestamp::from_seconds(id as i64),
            )
            .unwrap();
        Candidate::new(evidence, Some(relevance))
    }

    /// The full-text branch puts a distractor first; the vector branch knows better. A
    /// fit that starts with the vector branch weak must find a heavier vector weight.
    fn vector_knows_best(n: u128) -> Vec<FitQuestion> {
        (0..n)
            .map(|q| {
                let (gold, other) = (10 * q + 1, 10 * q + 2);
                FitQuestion {
                    actor: ACTOR,
                    plan: RecallPlan::new(
                        RecallQuery::text("apples"),
                        Timestamp::from_seconds(1_000),
                    ),
                    branches: vec![
                        BranchCandidates {
                            branch: Branch::Lexical,
                            candidates: vec![
                                candidate(other, "other", 2.0),
                                candidate(gold, "gold", 1.8),
                            ],
                        },
                        BranchCandidates {
                            branch: Branch::Vector,
                            candidates: vec![
                                candidate(gold, "gold", 0.9),
                                candidate(other, "other", 0.3),
                            ],
                        },
                    ],
                    mentions: MentionRead::default(),
                    followers: HashMap::new(),
                    gold: HashSet::from([EvidenceId(Uuid::from_u128(gold))]),
                }
            })
            .collect()
    }

    #[test]
    fn mrr_counts_the_first_gold_result() {
        let questions = vector_knows_best(3);
        let lexical_heavy = parse_profile("hybrid:vector_weight=0.05").unwrap();
        assert_eq!(mrr(&questions, &lexical_heavy), 0.5);
        let vector_heavy = parse_profile("hybrid:vector_weight=2").unwrap();
        assert_eq!(mrr(&questions, &vector_heavy), 1.0);
        assert_eq!(mrr(&[], &vector_heavy), 0.0);
    }

    #[test]
    fn ascent_finds_the_weight_that_ranks_gold_first_and_names_it_in_the_spec() {
        let questions = vector_knows_best(3);
        let report = fit(&questions, "hybrid:vector_weight=0.05", |_, _| {}).unwrap();
        assert_eq!(report.start_mrr, 0.5);
        assert_eq!(report.fitted_mrr, 1.0);
        assert!(report.fitted.starts_with("convex-8:"));
        let fitted = parse_profile(&report.fitted.replacen("convex-8", "hybrid", 1)).unwrap();
        assert_eq!(mrr(&questions, &fitted), 1.0);
        assert_eq!(report.moves.len(), 1);
    }

    #[test]
    fn nothing_to_gain_leaves_the_start_unchanged() {
        let questions = vector_knows_best(2);
        let report = fit(&questions, "hybrid:vector_weight=2", |_, _| {}).unwrap();
        assert_eq!(report.fitted_mrr, report.start_mrr);
        assert!(report.moves.is_empty());
        assert_eq!(report.fitted, "convex-8:vector_weight=2");
    }

    /// Both branches put a distractor first; only the gold item holds every query term.
    /// The reranker fit must learn to weigh coverage and rank gold first.
    fn coverage_knows_best(n: u128) -> Vec<FitQuestion> {
        (0..n)
            .map(|q| {
                let (gold, other) = (10 * q + 1, 10 * q + 2);
                let texts = [(other, "green apples"), (gold, "green apples and pears")];
                let branch = |branch, relevance: [f64; 2]| BranchCandidates {
                    branch,
                    candidates: texts
                        .iter()
                        .zip(relevance)
                        .map(|(&(id, text), r)| candidate(id, text, r))
                        .collect(),
                };
                FitQuestion {
                    actor: ACTOR,
                    plan: RecallPlan::new(
                        RecallQuery::text("apples pears").validated().unwrap(),
                        Timestamp::from_seconds(1_000),
                    ),
                    branches: vec![
                        branch(Branch::Lexical, [2.0, 1.9]),
                        branch(Branch::Vector, [0.9, 0.85]),
                    ],
                    mentions: MentionRead::default(),
                    followers: HashMap::new(),
                    gold: HashSet::from([EvidenceId(Uuid::from_u128(gold))]),
                }
            })
            .collect()
    }

    #[test]
    fn the_reranker_fit_learns_the_feature_that_finds_gold_and_names_it_in_the_spec() {
        let questions = coverage_knows_best(4);
        let report = fit_reranker(&questions, "hybrid", &[]).unwrap();
        assert_eq!(report.start_mrr, 0.5);
        assert_eq!(report.fitted_mrr, 1.0);
        assert!(report.fitted.starts_with("convex-8:rr_score="));
        let fitted = parse_profile(&report.fitted).unwrap();
        let coverage = fitted.reranker.unwrap().weights[5];
        assert!(coverage > 0.0, "coverage weight {coverage}");
        assert_eq!(mrr(&questions, &fitted), 1.0);
        // Held features keep the start's weights.
        let held = fit_reranker(&questions, "hybrid:rr_both=0.5", &["coverage".into()]).unwrap();
        let held = parse_profile(&held.fitted)
            .unwrap()
            .reranker
            .unwrap()
            .weights;
        assert_eq!((held[0], held[3]), (1.0, 0.5));
        assert!(held[5] > 0.0);
        assert!(fit_reranker(&questions, "hybrid", &["colour".into()]).is_err());
    }

    #[test]
    fn the_grid_reaches_zero_and_steps_around_the_current_value() {
        let values = grid("group_boost", 0.0);
        assert_eq!(values, [0.05, 0.1, 0.2, 0.4, 0.8]);
        let values = grid("vector_weight", 0.5);
        assert!(values.contains(&0.0) && values.contains(&1.0) && values.contains(&0.25));
        assert!(!values.contains(&0.5));
    }
}
