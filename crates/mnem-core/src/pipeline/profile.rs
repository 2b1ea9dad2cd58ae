//! Ranking profiles: the versioned fusion and rerank constants, the named profiles, and
//! the `name:key=value` specs that override them.

use std::borrow::Cow;

use serde::Serialize;

use super::learned::{Reranker, FEATURES};
use crate::ValidationError;

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
    /// A conversation turn spoken by someone the query names
    /// ([`crate::signals::NamedSpeakers`]) scores up to `1 + speaker_boost` times the
    /// others; applied after follow-on credit, and only when some result is such a turn.
    pub speaker_boost: f64,
    /// A conversation turn that only asks ([`crate::signals::only_asks`]) keeps
    /// `1 − question_discount` of its score; applied after follow-on credit, which its
    /// reply earns from the undiscounted score. In [0, 1).
    pub question_discount: f64,
    /// Follow-on credit ([`crate::follow`]): the next item after each of the first
    /// `limit` results in its source group scores at least this share of that result.
    /// 0 turns it off (and skips the store read it needs).
    pub follow_share: f64,
    /// Follow-on credit through a follow-up question ([`crate::follow`]): when a leader's
    /// next item only asks ([`crate::signals::only_asks`]: "what did you do there?"), the
    /// item after that question — its answer — scores at least this share of the leader.
    /// 0 turns it off. At most 1.
    pub follow_through: f64,
    /// The entity hop ([`crate::hop`]): an item that mentions a rare thing
    /// ([`crate::mention`]) one of the first `hop_leaders` results mentions scores at
    /// least `hop_share` × that result. A thing more than `hop_max_mentions` items of the
    /// team mention is a hub and never followed. `hop_share` 0 turns it off (and skips the
    /// store read it needs).
    pub hop_share: f64,
    pub hop_leaders: usize,
    pub hop_max_mentions: usize,
    /// A query with a time hint ("a week ago", "last March") also asks each branch for
    /// up to this many candidates observed inside the hinted period, beside its pool:
    /// the temporal boost can only lift a candidate, and a turn from that period whose
    /// words match less than the pool's tail would never be one. 0 turns it off.
    pub hinted_pool: usize,
    /// When true, a recall whose query embedding cannot be computed fails instead of
    /// degrading to the lexical branch.
    pub vector_required: bool,
    /// The fitted last step ([`super::learned`]), after follow-on credit; none keeps the
    /// scores as fused and boosted.
    pub reranker: Option<Reranker>,
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
    speaker_boost: 0.0,
    question_discount: 0.0,
    follow_share: 0.0,
    follow_through: 0.0,
    hop_share: 0.0,
    hop_leaders: 5,
    hop_max_mentions: 5,
    hinted_pool: 0,
    vector_required: false,
    reranker: None,
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

/// `convex-2` plus the bounded support signals — an item proving a `fact` ranks
/// up to 15% higher (`validated_claim` 7.5%), one whose text two other source groups
/// also wrote up to 10%. The bounds are
/// chosen, not fitted: the development files hold conversations without relationships or
/// repeated texts, where this profile ranks exactly as `convex-2` (the signals enter only
/// when a candidate has support); small enough that an item needs ~87% of a plain item's
/// relevance before a fact's credit can pass it (the conformance suite holds both sides).
/// The default until `convex-4`, kept to compare.
pub const CONVEX_3_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-3"),
    tier_boost: 0.15,
    corroboration_boost: 0.1,
    ..CONVEX_2_PROFILE
};

/// `convex-3` plus the named-speaker boost — a conversation turn spoken by someone the
/// query names ranks up to 65% higher. Found by fitting the reranker of [`super::learned`]
/// on each development file: of its features, this was the only weight that helped the
/// file it was fitted on without costing the other (ARCHITECTURE "Ranking signals tried"
/// has both directions). 0.65 is `e^0.5 − 1`, the plateau's start on LoCoMo (0.5 to 2.5
/// measured the same there). The default until `convex-5`, kept to compare.
pub const CONVEX_4_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-4"),
    speaker_boost: 0.65,
    ..CONVEX_3_PROFILE
};

/// `convex-4` plus the question discount — a conversation turn that only asks keeps 65%
/// of its score, after follow-on credit has passed its full score to the reply. On the
/// development files (window 2) it lifted LoCoMo turn recall@5 0.637 → 0.676 (category 1:
/// 0.359 → 0.417) and MRR 0.539 → 0.548 and left LongMemEval as it was (nDCG@10 0.931 →
/// 0.932); 0.2 gained less, 0.5 the same (ARCHITECTURE "Ranking signals tried" has the
/// table). The default until `convex-6`, kept to compare.
pub const CONVEX_5_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-5"),
    question_discount: 0.35,
    ..CONVEX_4_PROFILE
};

/// `convex-5` plus credit through a follow-up question — when the item after a leading
/// result only asks ("Fun! What did you do?"), the item after that question, its answer,
/// scores at least half the leader: just above the question itself (0.7 of the leader,
/// kept at 65%). The default until `convex-7`, kept to compare. ARCHITECTURE "Ranking
/// signals tried" has the measurements.
pub const CONVEX_6_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-6"),
    follow_through: 0.5,
    ..CONVEX_5_PROFILE
};

/// `convex-6` plus the entity hop ([`crate::hop`]) — an item that mentions a rare name or
/// phrase (at most 5 items of the team mention it) that the query or one of the first
/// five results mentions scores at least 0.2 of that result. Low enough to fill the tail
/// of a result list rather than reorder its head: on the development files it lifted
/// LoCoMo gold turns inside 6,000 B 0.893 → 0.897 (category 1: 0.656 → 0.672) and moved
/// nothing else; 0.35 and 0.5 cost LoCoMo recall@5 or @10 (ARCHITECTURE "Ranking signals
/// tried"). The default until `convex-8`, kept to compare.
pub const CONVEX_7_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-7"),
    hop_share: 0.2,
    hop_max_mentions: 5,
    ..CONVEX_6_PROFILE
};

/// Hybrid: `convex-7` plus the hinted read — a query with a time hint ("a week ago",
/// "last March") also takes each branch's 10 best matches from inside the hinted period,
/// when that period holds at most [`crate::SMALL_PERIOD`] of the team's texts. On the
/// development files it found LongMemEval's one gold session past the first five (session
/// any@5 0.989 → 1.000, nDCG@10 0.934 → 0.935, gold turns inside 6,000 B 0.968 → 0.978)
/// and left LoCoMo as it was, question by question; on a million texts a hinted recall
/// costs a count and two short reads (ARCHITECTURE "Ranking signals tried"). What every
/// recall uses unless told otherwise.
pub const DEFAULT_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("convex-8"),
    hinted_pool: 10,
    ..CONVEX_7_PROFILE
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
    version: Cow::Borrowed("lexical-8"),
    vector_branch: false,
    ..DEFAULT_PROFILE
};

/// The vector branch alone (needs an embedder; a recall that cannot embed its query
/// fails rather than silently answering from the full-text branch).
pub const VECTOR_PROFILE: RankingProfile = RankingProfile {
    version: Cow::Borrowed("vector-8"),
    lexical_branch: false,
    vector_required: true,
    ..DEFAULT_PROFILE
};

/// The numeric constants a profile spec may override (`NAME:key=value`), which are also
/// what `mnem eval --fit` searches over.
pub const NUMERIC_KEYS: [&str; 21] = [
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
    "speaker_boost",
    "question_discount",
    "follow_share",
    "follow_through",
    "hop_share",
    "hop_leaders",
    "hop_max_mentions",
    "hinted_pool",
];

/// The profiles an operator can name (`mnem eval --profile`): by short name or version.
pub fn profile_named(name: &str) -> Option<RankingProfile> {
    [
        ("hybrid", DEFAULT_PROFILE),
        ("convex-1", CONVEX_1_PROFILE),
        ("convex-7", CONVEX_7_PROFILE),
        ("convex-6", CONVEX_6_PROFILE),
        ("convex-5", CONVEX_5_PROFILE),
        ("convex-4", CONVEX_4_PROFILE),
        ("convex-3", CONVEX_3_PROFILE),
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
        if let Some(feature) = key.strip_prefix("rr_") {
            let weight: f64 = value
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| invalid(format!("{key}: {value:?} is not a number")))?;
            let model = profile.reranker.get_or_insert(Reranker::IDENTITY);
            let slot = model.weight_mut(feature).ok_or_else(|| {
                invalid(format!(
                    "unknown reranker feature {feature:?} ({})",
                    FEATURES.join(", ")
                ))
            })?;
            *slot = weight;
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
            "speaker_boost" => profile.speaker_boost = number,
            "question_discount" if number < 1.0 => profile.question_discount = number,
            "follow_share" if number <= 1.0 => profile.follow_share = number,
            "follow_through" if number <= 1.0 => profile.follow_through = number,
            "hop_share" if number <= 1.0 => profile.hop_share = number,
            "hop_leaders" if number.fract() == 0.0 => profile.hop_leaders = number as usize,
            "hop_max_mentions" if number >= 2.0 && number.fract() == 0.0 => {
                profile.hop_max_mentions = number as usize
            }
            "hinted_pool" if number.fract() == 0.0 => profile.hinted_pool = number as usize,
            "vector_min_similarity"
            | "follow_share"
            | "follow_through"
            | "hop_share"
            | "hop_leaders"
            | "hop_max_mentions"
            | "hinted_pool"
            | "branch_pool"
            | "question_discount" => {
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

#[cfg(test)]
mod tests {
    use super::*;

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
            // A discount of 1 would erase a score; a hub cut-off below 2 would cut every
            // key (the leader itself is one of its mentions).
            let value = match key {
                "question_discount" => 0.5,
                "hop_max_mentions" => 2.0,
                _ => 1.0,
            };
            assert!(
                parse_profile(&format!("hybrid:{key}={value}")).is_ok(),
                "{key}"
            );
        }
    }

    #[test]
    fn reranker_weights_are_signed_and_start_from_the_identity() {
        let profile = parse_profile("hybrid:rr_coverage=0.5:rr_both=-0.25").unwrap();
        let model = profile.reranker.unwrap();
        assert_eq!(model.weights[0], 1.0); // score, from the identity
        assert_eq!(model.weights[3], -0.25);
        assert_eq!(model.weights[5], 0.5);
        assert_eq!(profile.version, "convex-8:rr_coverage=0.5:rr_both=-0.25");
        let err = parse_profile("hybrid:rr_colour=1").unwrap_err();
        assert!(err.reason.contains("colour") && err.reason.contains("coverage"));
        assert!(parse_profile("hybrid:rr_score=inf").is_err());
        assert_eq!(parse_profile("hybrid").unwrap().reranker, None);
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
            ("hybrid:question_discount=1", "question_discount"),
        ] {
            let err = parse_profile(spec).unwrap_err();
            assert_eq!(err.field, "profile");
            assert!(err.reason.contains(needle), "{spec}: {}", err.reason);
        }
    }

    #[test]
    fn profiles_are_named_by_short_name_or_version_and_unknown_names_are_none() {
        assert_eq!(profile_named("hybrid"), Some(DEFAULT_PROFILE));
        assert_eq!(profile_named("convex-8"), Some(DEFAULT_PROFILE));
        assert_eq!(profile_named("convex-7"), Some(CONVEX_7_PROFILE));
        assert_eq!(profile_named("convex-6"), Some(CONVEX_6_PROFILE));
        assert_eq!(profile_named("convex-5"), Some(CONVEX_5_PROFILE));
        assert_eq!(profile_named("convex-4"), Some(CONVEX_4_PROFILE));
        assert_eq!(profile_named("convex-3"), Some(CONVEX_3_PROFILE));
        assert_eq!(profile_named("convex-2"), Some(CONVEX_2_PROFILE));
        assert_eq!(profile_named("convex-1"), Some(CONVEX_1_PROFILE));
        assert_eq!(profile_named("rrf-1"), Some(RRF_PROFILE));
        assert_eq!(profile_named("lexical"), Some(LEXICAL_PROFILE));
        assert_eq!(profile_named("vector-8"), Some(VECTOR_PROFILE));
        assert_eq!(profile_named("bm25"), None);
    }
}
