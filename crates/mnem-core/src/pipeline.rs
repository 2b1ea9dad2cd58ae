//! The ranking pipeline (CONTRACT §2 steps 4–6), written once for every backend: fuse branch
//! candidates by evidence id (RRF), rerank deterministically (hard anchors, phrases,
//! temporal intent), normalise to (0, 1], filter, order, fit the byte budget, limit.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use crate::anchors::{parse_anchors, Anchor};
use crate::order::sort_hits;
use crate::signals::{self, Support};
use crate::temporal::{parse_time_hint, TimeRange};
use crate::text::floor_char_boundary;
use crate::window::WindowItem;
use crate::{
    Actor, Candidate, Evidence, EvidenceId, Order, RecallQuery, Score, Timestamp, ValidationError,
};

/// Fusion and rerank constants. Versioned: a change here is a ranking change, reported in
/// telemetry and measured with `mnem eval` before it ships.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankingProfile {
    /// Names the constants exactly: a built-in profile's version, or a built-in version
    /// followed by its overrides (`rrf-1:vector_weight=0.5`).
    pub version: Cow<'static, str>,
    /// Which candidate branches a ranked recall runs. A listing always reads through the
    /// full-text store's listing path, whatever this says.
    pub lexical_branch: bool,
    pub vector_branch: bool,
    /// How branch results combine when more than one branch answered.
    pub fusion: Fusion,
    /// RRF damping: a branch's i-th result (1-based) contributes `weight / (k + i)`.
    pub rrf_k: f64,
    pub lexical_weight: f64,
    pub vector_weight: f64,
    /// Vector candidates less similar than this (cosine) are dropped before fusion: a
    /// nearest neighbour is not necessarily a relevant one, and without a floor every
    /// recall would fill its limit with unrelated text.
    pub vector_min_similarity: f64,
    /// Candidates each branch contributes when more than `limit` are needed.
    pub branch_pool: usize,
    /// Convex fusion only: rank credit added beside each branch's relevance, the i-th
    /// result (1-based) earning `weight · (rrf_k + 1) / (rrf_k + i)` (1 for the first).
    /// Relevance says how good a match is; rank says how many beat it.
    pub lexical_rank_weight: f64,
    pub vector_rank_weight: f64,
    /// Bounded multiplicative signals, applied after fusion: the whole query (or a
    /// quoted span) as a phrase, the hinted period, the source group's support
    /// ([`crate::signals::group_support`]), the place in the pool's time span
    /// ([`crate::signals::recency`]). The last two are graded in [0, 1].
    pub phrase_boost: f64,
    pub temporal_boost: f64,
    pub group_boost: f64,
    pub recency_boost: f64,
    /// Bounded support signals ([`crate::signals::Support`]), applied after fusion like
    /// the boosts above: the best tier of the discoverable relationships an item proves
    /// (`fact` full, `validated_claim` half), and other source groups that wrote the same
    /// text. They reorder items of close relevance; they never make an unmatched item a
    /// candidate, and an item without support never gains. 0 skips the store read.
    pub tier_boost: f64,
    pub corroboration_boost: f64,
    /// Follow-on credit ([`crate::follow`]): the next item after each of the first
    /// `limit` results in its source group scores at least this share of that result.
    /// 0 turns it off (and skips the store read it needs).
    pub follow_share: f64,
    /// When true, a recall whose query embedding cannot be computed fails instead of
    /// degrading to the lexical branch.
    pub vector_required: bool,
}

/// How fused branches combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Reciprocal rank fusion: ranks only, `weight / (rrf_k + rank)` per branch.
    Rrf,
    /// Convex combination of each branch's own relevance scaled by the branch's best
    /// (relevance / max: BM25 relevance and floored cosine both start at 0, so this is
    /// min–max with the theoretical minimum), weights normalised to sum 1; absent from a
    /// branch counts 0. Keeps how much better the best match is, which ranks alone throw
    /// away, without stretching a branch whose candidates are all about equally close
    /// (as observed min–max would).
    Convex,
}

/// Convex fusion without follow-on credit: the default before `convex-2`, kept to
/// compare. Both branches, the full-text branch weighted twice the vector branch. Chosen
/// with `mnem eval` on the LongMemEval and LoCoMo development files: convex fusion beat
/// RRF (k = 60, 10 or 20) on both; of the two vector weights tried, 0.5 beat 1.0 on both —
/// the built-in model is the weaker ranker of the two, so it refines the order rather
/// than overruling a decisive full-text match.
pub const CONVEX_1_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-1"),
    lexical_branch: true,
    vector_branch: true,
    fusion: Fusion::Convex,
    rrf_k: 60.0,
    lexical_weight: 1.0,
    vector_weight: 0.5,
    vector_min_similarity: 0.2,
    branch_pool: 100,
    lexical_rank_weight: 0.0,
    vector_rank_weight: 0.0,
    phrase_boost: 0.25,
    temporal_boost: 0.5,
    group_boost: 0.0,
    recency_boost: 0.0,
    tier_boost: 0.0,
    corroboration_boost: 0.0,
    follow_share: 0.0,
    vector_required: false,
};

/// `convex-1` plus follow-on credit ([`crate::follow`]) at 0.7 — the item after a strong
/// match in its group ranks at least 0.7 of it. On the development files (window 2) it
/// lifted LoCoMo turn recall@5 0.537 → 0.617 and MRR 0.464 → 0.497, and LongMemEval turn
/// any@5 0.860 → 0.871 with its session ranks unchanged; 0.5 gained half as much, 0.85 no
/// more (ARCHITECTURE has the table). Kept to compare.
pub const CONVEX_2_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-2"),
    follow_share: 0.7,
    ..CONVEX_1_PROFILE
};

/// Hybrid: `convex-2` plus the bounded support signals — an item proving a `fact` ranks
/// up to 15% higher (`validated_claim` 7.5%), one whose text two other source groups
/// also wrote up to 10%. What every recall uses unless told otherwise. The bounds are
/// chosen, not fitted: the development files hold conversations without relationships or
/// repeated texts, where this profile ranks exactly as `convex-2` (the signals enter only
/// when a candidate has support); small enough that an item needs ~87% of a plain item's
/// relevance before a fact's credit can pass it (the conformance suite holds both sides).
pub const DEFAULT_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-3"),
    tier_boost: 0.15,
    corroboration_boost: 0.1,
    ..CONVEX_2_PROFILE
};

/// Reciprocal rank fusion with equal weights, the first default, kept to compare.
pub const RRF_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("rrf-1"),
    fusion: Fusion::Rrf,
    vector_weight: 1.0,
    ..CONVEX_1_PROFILE
};

/// The full-text branch alone, with the same reranking (follow-on credit included): the
/// baseline `mnem eval` compares against.
pub const LEXICAL_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("lexical-3"),
    vector_branch: false,
    ..DEFAULT_PROFILE
};

/// The vector branch alone (needs an embedder; a recall that cannot embed its query
/// fails rather than silently answering from the full-text branch).
pub const VECTOR_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("vector-3"),
    lexical_branch: false,
    vector_required: true,
    ..DEFAULT_PROFILE
};

/// The numeric constants a profile spec may override (`NAME:key=value`), which are also
/// what `mnem eval --fit` searches over.
pub const NUMERIC_KEYS: [&str; 14] = [
    "rrf_k",
    "lexical_weight",
    "vector_weight",
    "vector_min_similarity",
    "branch_pool",
    "lexical_rank_weight",
    "vector_rank_weight",
    "phrase_boost",
    "temporal_boost",
    "group_boost",
    "recency_boost",
    "tier_boost",
    "corroboration_boost",
    "follow_share",
];

/// The profiles an operator can name (`mnem eval --profile`): by short name or version.
pub fn profile_named(name: &str) -> Option<RankingProfile> {
    [
        ("hybrid", DEFAULT_PROFILE),
        ("convex-1", CONVEX_1_PROFILE),
        ("convex-2", CONVEX_2_PROFILE),
        ("rrf", RRF_PROFILE),
        ("lexical", LEXICAL_PROFILE),
        ("vector", VECTOR_PROFILE),
    ]
    .into_iter()
    .find(|(short, profile)| *short == name || profile.version == name)
    .map(|(_, profile)| profile)
}

/// A named profile with constants overridden, for measuring a variant before it ships:
/// `NAME[:key=value]…`, e.g. `hybrid:vector_weight=0.5:rrf_k=30`. Keys are the numeric
/// fields of [`RankingProfile`]; the result's version is the normalised spec.
pub fn parse_profile(spec: &str) -> Result<RankingProfile, ValidationError> {
    let invalid = |reason: String| ValidationError::new("profile", reason);
    let mut parts = spec.trim().split(':');
    let name = parts.next().unwrap_or_default();
    let mut profile = profile_named(name).ok_or_else(|| {
        invalid(format!(
            "unknown profile {name:?} (hybrid, rrf, lexical, vector, or a version)"
        ))
    })?;
    let mut version = profile.version.to_string();
    for assignment in parts {
        let (key, value) = assignment
            .split_once('=')
            .ok_or_else(|| invalid(format!("{assignment:?} is not key=value")))?;
        if key == "fusion" {
            profile.fusion = match value {
                "rrf" => Fusion::Rrf,
                "convex" => Fusion::Convex,
                other => return Err(invalid(format!("fusion: {other:?} (rrf, convex)"))),
            };
            version.push_str(&format!(":{key}={value}"));
            continue;
        }
        let number: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| invalid(format!("{key}: {value:?} is not a number ≥ 0")))?;
        match key {
            "rrf_k" => profile.rrf_k = number,
            "lexical_weight" => profile.lexical_weight = number,
            "vector_weight" => profile.vector_weight = number,
            "vector_min_similarity" if number <= 1.0 => profile.vector_min_similarity = number,
            "branch_pool" if number >= 1.0 && number.fract() == 0.0 => {
                profile.branch_pool = number as usize
            }
            "lexical_rank_weight" => profile.lexical_rank_weight = number,
            "vector_rank_weight" => profile.vector_rank_weight = number,
            "phrase_boost" => profile.phrase_boost = number,
            "temporal_boost" => profile.temporal_boost = number,
            "group_boost" => profile.group_boost = number,
            "recency_boost" => profile.recency_boost = number,
            "tier_boost" => profile.tier_boost = number,
            "corroboration_boost" => profile.corroboration_boost = number,
            "follow_share" if number <= 1.0 => profile.follow_share = number,
            "vector_min_similarity" | "follow_share" | "branch_pool" => {
                return Err(invalid(format!("{key}: {value} is out of range")))
            }
            other => {
                return Err(invalid(format!(
                    "unknown key {other:?} (fusion, {})",
                    NUMERIC_KEYS.join(", ")
                )))
            }
        }
        version.push_str(&format!(":{key}={value}"));
    }
    profile.version = Cow::Owned(version);
    Ok(profile)
}

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
    pub fused: f64,
    pub phrase: bool,
    pub temporal: bool,
    /// The source group's support and the place in the pool's time span, each in [0, 1]
    /// (0 when the profile does not weigh them: they are not computed then).
    pub group: f64,
    pub recency: f64,
    /// What memory says for the item ([`crate::signals::Support`]); the default when the
    /// profile does not weigh it (it is not read then).
    pub support: Support,
    /// The result this one follows in its group, when follow-on credit set its score.
    pub follows: Option<EvidenceId>,
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

/// What the pipeline derives from a validated query before any branch runs.
#[derive(Debug, Clone)]
pub struct RecallPlan {
    pub query: RecallQuery,
    /// The one clock reading of this recall: expiry is judged against it.
    pub now: Timestamp,
    pub anchors: Vec<Anchor>,
    pub time_hint: Option<TimeRange>,
    /// Quoted phrases, or the whole query when it has several words.
    pub phrases: Vec<String>,
}

impl RecallPlan {
    pub fn new(query: RecallQuery, now: Timestamp) -> Self {
        let reference = query.request_time.unwrap_or(now);
        let time_hint = parse_time_hint(&query.query, reference);
        Self {
            anchors: parse_anchors(&query.query),
            phrases: phrases(&query.query),
            time_hint,
            query,
            now,
        }
    }

    pub fn is_listing(&self) -> bool {
        self.query.is_listing()
    }

    /// How many candidates each branch must return. Exactly `limit` when the core will
    /// keep the backend's own order (a listing, or one lexical branch with nothing that
    /// reorders or drops candidates: the floor only cuts its tail); otherwise a deeper
    /// pool so fusion, anchors and boosts have something to work with.
    pub fn branch_pool(&self, profile: &RankingProfile, fusing: bool) -> usize {
        let reorders = fusing
            || !self.anchors.is_empty()
            || self.time_hint.is_some()
            || !self.phrases.is_empty()
            || (self.query.order == Order::Recent && self.query.min_score.is_some());
        if self.is_listing() || !reorders {
            self.query.limit
        } else {
            profile.branch_pool.max(self.query.limit)
        }
    }
}

/// Phrases a result gets credit for containing: each double-quoted span, else the whole
/// query when it has two to eight words.
fn phrases(query: &str) -> Vec<String> {
    let quoted: Vec<String> = query
        .split('"')
        .skip(1)
        .step_by(2)
        .map(normalise_phrase)
        .filter(|p| p.contains(' '))
        .collect();
    if !quoted.is_empty() {
        return quoted;
    }
    let whole = normalise_phrase(query);
    let words = whole.split(' ').count();
    if (2..=8).contains(&words) {
        vec![whole]
    } else {
        Vec::new()
    }
}

/// Lowercase words joined by single spaces, punctuation dropped.
fn normalise_phrase(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
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
    fit_budget(&mut hits, plan.query.context_bytes);
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

/// A result with its whole content as context and no window yet.
pub(crate) fn hit(evidence: Evidence, score: Score, components: ScoreComponents) -> RecallHit {
    RecallHit {
        context: evidence.content.clone(),
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
            let slot = match branch.branch {
                Branch::Lexical => &mut entry.1.lexical_rank,
                Branch::Vector => &mut entry.1.vector_rank,
            };
            if slot.is_some() {
                continue; // an id counts once per branch
            }
            rank += 1;
            *slot = Some(rank);
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
        let text = normalise_phrase(&hit.evidence.content);
        let components = &mut hit.components;
        components.phrase = plan.phrases.iter().any(|p| text.contains(p.as_str()));
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

/// Smallest piece of a context worth returning when the budget runs low.
pub const MIN_CONTEXT_BYTES: usize = 64;

/// Keeps results in order while their contexts fit `budget` bytes together; a context
/// longer than what is left is cut at a char boundary, unless less than
/// [`MIN_CONTEXT_BYTES`] is left, where the list ends. The first result always gets a
/// context, cut if need be.
///
/// Windows count too, and neighbours are trimmed before hits: a result's merged hits
/// (matches inside its window) are paid for right after its own context, before the next
/// result; plain neighbours only from what every kept result left, nearest a hit first
/// (distance 1 of every result in rank order, then distance 2, …). A window item that
/// does not fit whole is left out (never cut; a later, shorter one may still fit).
pub fn fit_budget(hits: &mut Vec<RecallHit>, budget: usize) {
    let mut used = 0;
    let mut keep = 0;
    // Per result, per window item (before, then after): kept or not.
    let mut kept: Vec<Vec<bool>> = Vec::new();
    for hit in hits.iter_mut() {
        let left = budget - used;
        if hit.context.len() > left {
            if left < MIN_CONTEXT_BYTES.min(budget) && keep > 0 {
                break;
            }
            let cut = floor_char_boundary(&hit.context, left);
            hit.context.truncate(cut);
        }
        used += hit.context.len();
        keep += 1;
        let merged_hits: Vec<bool> = hit
            .window_items()
            .map(|item| {
                let fits = item.hit && item.context.len() <= budget - used;
                if fits {
                    used += item.context.len();
                }
                fits
            })
            .collect();
        kept.push(merged_hits);
        if used >= budget {
            break;
        }
    }
    hits.truncate(keep);
    fit_neighbours(hits, &mut kept, budget - used);
    for (hit, kept) in hits.iter_mut().zip(kept) {
        let (before, after) = kept.split_at(hit.before.len());
        let mut keep = before.iter();
        hit.before.retain(|_| *keep.next().unwrap_or(&false));
        let mut keep = after.iter();
        hit.after.retain(|_| *keep.next().unwrap_or(&false));
    }
}

/// Spends what the results and their merged hits left on plain neighbours, nearest first.
fn fit_neighbours(hits: &[RecallHit], kept: &mut [Vec<bool>], mut left: usize) {
    let widest = hits
        .iter()
        .flat_map(RecallHit::window_items)
        .map(|item| item.distance)
        .max()
        .unwrap_or(0);
    for distance in 1..=widest {
        for (hit, kept) in hits.iter().zip(kept.iter_mut()) {
            for (item, keep) in hit.window_items().zip(kept.iter_mut()) {
                if !item.hit && item.distance == distance && item.context.len() <= left {
                    left -= item.context.len();
                    *keep = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Tier;
    use crate::{NewEvidence, ProfileId, TeamId};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    #[test]
    fn a_profile_spec_overrides_constants_and_names_itself_exactly() {
        let profile = parse_profile("rrf:vector_weight=0.5:rrf_k=30").unwrap();
        assert_eq!(profile.fusion, Fusion::Rrf);
        assert_eq!(profile.vector_weight, 0.5);
        assert_eq!(profile.rrf_k, 30.0);
        assert_eq!(profile.lexical_weight, RRF_PROFILE.lexical_weight);
        assert_eq!(profile.version, "rrf-1:vector_weight=0.5:rrf_k=30");
        let convex = parse_profile("rrf:fusion=convex").unwrap();
        assert_eq!(convex.fusion, Fusion::Convex);
        assert_eq!(convex.version, "rrf-1:fusion=convex");
        assert!(parse_profile("hybrid:fusion=max").is_err());
        assert_eq!(parse_profile("lexical").unwrap(), LEXICAL_PROFILE);
        let signals =
            parse_profile("hybrid:group_boost=0.5:recency_boost=0.1:vector_rank_weight=0.2")
                .unwrap();
        assert_eq!(signals.group_boost, 0.5);
        assert_eq!(signals.recency_boost, 0.1);
        assert_eq!(signals.vector_rank_weight, 0.2);
        assert_eq!(signals.lexical_rank_weight, 0.0);
        for key in NUMERIC_KEYS {
            assert!(parse_profile(&format!("hybrid:{key}=1")).is_ok(), "{key}");
        }
    }

    #[test]
    fn a_bad_profile_spec_names_what_is_wrong() {
        for (spec, needle) in [
            ("bm25", "bm25"),
            ("hybrid:vector_weight", "key=value"),
            ("hybrid:vector_weight=-1", "vector_weight"),
            ("hybrid:vector_weight=NaN", "vector_weight"),
            ("hybrid:colour=3", "colour"),
            ("hybrid:branch_pool=2.5", "branch_pool"),
            ("hybrid:vector_min_similarity=2", "vector_min_similarity"),
        ] {
            let err = parse_profile(spec).unwrap_err();
            assert_eq!(err.field, "profile");
            assert!(err.reason.contains(needle), "{spec}: {}", err.reason);
        }
    }

    #[test]
    fn profiles_are_named_by_short_name_or_version_and_unknown_names_are_none() {
        assert_eq!(profile_named("hybrid"), Some(DEFAULT_PROFILE));
        assert_eq!(profile_named("convex-3"), Some(DEFAULT_PROFILE));
        assert_eq!(profile_named("convex-2"), Some(CONVEX_2_PROFILE));
        assert_eq!(profile_named("convex-1"), Some(CONVEX_1_PROFILE));
        assert_eq!(profile_named("rrf-1"), Some(RRF_PROFILE));
        assert_eq!(profile_named("lexical"), Some(LEXICAL_PROFILE));
        assert_eq!(profile_named("vector-3"), Some(VECTOR_PROFILE));
        assert_eq!(profile_named("bm25"), None);
    }

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

    fn plan(query: RecallQuery) -> RecallPlan {
        RecallPlan::new(
            query.validated().unwrap(),
            Timestamp::from_seconds(1_000_000),
        )
    }

    fn ids(hits: &[RecallHit]) -> Vec<u128> {
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
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
