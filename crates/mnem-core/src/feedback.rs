//! Recall feedback (CONTRACT §3): what a client reports about one recall —
//! the query, the results it got with their ranks, and its judgment of some of them.
//! Feedback is a record, never an instruction: it changes no weight and no relationship.
//! Its use is offline — replaying the judged queries under another ranking profile
//! ([`RankingQuality`]) so a team can choose a profile from its own use.

use serde::{Deserialize, Serialize};

use crate::recall::MAX_QUERY_CHARS;
use crate::{EvidenceId, FeedbackId, ProfileId, Timestamp, ValidationError};

/// The most results one feedback may list (a recall returns at most 50).
pub const MAX_FEEDBACK_RESULTS: usize = 50;

word_enum!(
    /// A client's judgment of one returned result: it helped answer the query
    /// (`useful`), it was beside the point (`not_useful`), or it states something false
    /// or outdated (`wrong`).
    Judgment, "judgment", {
        Useful => "useful",
        NotUseful => "not_useful",
        Wrong => "wrong",
    }
);

/// One returned result as the client saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FeedbackResult {
    pub evidence_id: EvidenceId,
    /// Its place in the recall's results, from 1.
    pub rank: u32,
    /// The client's judgment; absent for a result it did not judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgment: Option<Judgment>,
}

/// Feedback as a client submits it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FeedbackInput {
    /// The query of the recall judged.
    pub query: String,
    /// The results it returned (at most 50), each with its rank and, for some, a judgment.
    pub results: Vec<FeedbackResult>,
}

impl FeedbackInput {
    /// Checks the whole input: a query, 1–50 results, distinct ids and ranks ≥ 1 without
    /// repeats, at least one judgment. Errors name the field (`results[2].rank`).
    pub fn validated(self) -> Result<Self, ValidationError> {
        let query = self.query.trim();
        if query.is_empty() {
            return Err(ValidationError::new("query", "is empty"));
        }
        crate::refuse_nul("query", query)?;
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(ValidationError::new(
                "query",
                format!("is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        if self.results.is_empty() || self.results.len() > MAX_FEEDBACK_RESULTS {
            return Err(ValidationError::new(
                "results",
                format!(
                    "holds {} results; 1 to {MAX_FEEDBACK_RESULTS} are accepted",
                    self.results.len()
                ),
            ));
        }
        for (i, result) in self.results.iter().enumerate() {
            if result.rank == 0 {
                return Err(ValidationError::new(
                    format!("results[{i}].rank"),
                    "ranks start at 1",
                ));
            }
            let earlier = &self.results[..i];
            if earlier.iter().any(|r| r.evidence_id == result.evidence_id) {
                return Err(ValidationError::new(
                    format!("results[{i}].evidence_id"),
                    "is listed twice",
                ));
            }
            if earlier.iter().any(|r| r.rank == result.rank) {
                return Err(ValidationError::new(
                    format!("results[{i}].rank"),
                    format!("rank {} is listed twice", result.rank),
                ));
            }
        }
        if self.results.iter().all(|r| r.judgment.is_none()) {
            return Err(ValidationError::new(
                "results",
                "judge at least one result (useful, not_useful or wrong)",
            ));
        }
        Ok(Self {
            query: query.to_string(),
            results: self.results,
        })
    }
}

/// Stored feedback: the input, who gave it, when, and under which ranking profile the
/// judged recall ran (the server's own, recorded at submission).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallFeedback {
    pub id: FeedbackId,
    pub actor: ProfileId,
    pub at: Timestamp,
    pub ranking_profile: String,
    pub query: String,
    pub results: Vec<FeedbackResult>,
}

impl RecallFeedback {
    /// The results judged useful: what a replay should rank first.
    pub fn useful(&self) -> Vec<EvidenceId> {
        self.results
            .iter()
            .filter(|r| r.judgment == Some(Judgment::Useful))
            .map(|r| r.evidence_id)
            .collect()
    }
}

/// How often an item appeared in judged recalls, and how it was judged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Usage {
    /// Feedback that listed it among a recall's results.
    pub returned: u64,
    pub useful: u64,
    pub not_useful: u64,
    pub wrong: u64,
}

/// Mean ranking quality of the useful items over replayed queries: MRR of the first
/// useful item, and the share of useful items within the first 5 and 10 results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct RankingQuality {
    pub queries: usize,
    pub mrr: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
}

impl RankingQuality {
    /// Scores each `(useful, ranked)` pair — the items judged useful, and the ids a
    /// profile returned, best first — and averages. Queries without a useful item are
    /// skipped: they say nothing about where useful items rank.
    pub fn of<'a>(replays: impl IntoIterator<Item = (&'a [EvidenceId], &'a [EvidenceId])>) -> Self {
        let mut quality = Self::default();
        for (useful, ranked) in replays {
            if useful.is_empty() {
                continue;
            }
            quality.queries += 1;
            let first = ranked.iter().position(|id| useful.contains(id));
            quality.mrr += first.map_or(0.0, |i| 1.0 / (i + 1) as f64);
            let within = |k: usize| {
                let found = ranked
                    .iter()
                    .take(k)
                    .filter(|id| useful.contains(id))
                    .count();
                found as f64 / useful.len() as f64
            };
            quality.recall_at_5 += within(5);
            quality.recall_at_10 += within(10);
        }
        if quality.queries > 0 {
            let n = quality.queries as f64;
            quality.mrr /= n;
            quality.recall_at_5 /= n;
            quality.recall_at_10 /= n;
        }
        quality
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn id(n: u128) -> EvidenceId {
        EvidenceId(Uuid::from_u128(n))
    }

    fn result(n: u128, rank: u32, judgment: Option<Judgment>) -> FeedbackResult {
        FeedbackResult {
            evidence_id: id(n),
            rank,
            judgment,
        }
    }

    #[test]
    fn feedback_needs_a_query_results_and_a_judgment() {
        let input = |query: &str, results| FeedbackInput {
            query: query.into(),
            results,
        };
        let good = vec![result(1, 1, Some(Judgment::Useful)), result(2, 2, None)];
        assert!(input(" tea ", good.clone()).validated().is_ok());
        for (bad, field) in [
            (input("  ", good.clone()), "query"),
            (input("tea", Vec::new()), "results"),
            (input("tea", vec![result(1, 1, None)]), "results"),
            (
                input("tea", vec![result(1, 0, Some(Judgment::Wrong))]),
                "results[0].rank",
            ),
            (
                input(
                    "tea",
                    vec![result(1, 1, Some(Judgment::Wrong)), result(1, 2, None)],
                ),
                "results[1].evidence_id",
            ),
            (
                input(
                    "tea",
                    vec![result(1, 1, Some(Judgment::Wrong)), result(2, 1, None)],
                ),
                "results[1].rank",
            ),
        ] {
            assert_eq!(bad.validated().unwrap_err().field, field);
        }
    }

    #[test]
    fn judgments_read_and_write_as_words() {
        assert_eq!(
            "not_useful".parse::<Judgment>().unwrap(),
            Judgment::NotUseful
        );
        assert_eq!(Judgment::Wrong.to_string(), "wrong");
        assert!("great".parse::<Judgment>().is_err());
    }

    #[test]
    fn quality_averages_over_queries_with_a_useful_item() {
        let (a, b, c) = (id(1), id(2), id(3));
        let first = [a];
        let second = [b, c];
        let none: [EvidenceId; 0] = [];
        let ranked_first = [a, b];
        let ranked_second = [a, a, a, a, a, b, c];
        let quality = RankingQuality::of([
            (&first[..], &ranked_first[..]),
            (&second[..], &ranked_second[..]),
            (&none[..], &ranked_first[..]),
        ]);
        assert_eq!(quality.queries, 2);
        assert!((quality.mrr - (1.0 + 1.0 / 6.0) / 2.0).abs() < 1e-12);
        assert!((quality.recall_at_5 - (1.0 + 0.0) / 2.0).abs() < 1e-12);
        assert!((quality.recall_at_10 - (1.0 + 1.0) / 2.0).abs() < 1e-12);
    }
}
