//! The ordering contract, written once. Every backend's candidates are sorted here, so two
//! backends that agree on scores agree on order, and two that cannot rank (every score 1)
//! both degrade to recency.

use std::cmp::Ordering;

use crate::{Order, RecallHit};

/// Under `relevance`: score (higher first), then scope depth (deeper first, widened reads
/// only), then `observed_at` (newest first), then evidence id (ascending) so the order is
/// total. Under `recent` the score key is skipped.
pub fn compare_hits(order: Order, widened: bool, a: &RecallHit, b: &RecallHit) -> Ordering {
    let by_score = match order {
        Order::Relevance => b.score.total_cmp(&a.score),
        Order::Recent => Ordering::Equal,
    };
    by_score
        .then_with(|| {
            if widened {
                b.evidence.scope.depth().cmp(&a.evidence.scope.depth())
            } else {
                Ordering::Equal
            }
        })
        .then_with(|| b.evidence.observed_at.cmp(&a.evidence.observed_at))
        .then_with(|| a.evidence.id.cmp(&b.evidence.id))
}

pub fn sort_hits(hits: &mut [RecallHit], order: Order, widened: bool) {
    hits.sort_by(|a, b| compare_hits(order, widened, a, b));
}

#[cfg(test)]
mod tests {
    //! Items here differ on several keys at once, so each test pins which key wins rather
    //! than assuming it (no conformance run can: a store that cannot rank scores all 1).
    use super::*;
    use crate::{EvidenceId, NewEvidence, ProfileId, Scope, Score, TeamId, Timestamp};
    use uuid::Uuid;

    fn hit(id: u128, score: f64, scope: &str, observed: i64) -> RecallHit {
        let mut new = NewEvidence::new("x");
        new.scope = Scope::parse(scope).unwrap();
        new.observed_at = Some(Timestamp::from_seconds(observed));
        let evidence = new
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                TeamId(Uuid::nil()),
                ProfileId(Uuid::nil()),
                Timestamp::from_seconds(observed),
            )
            .unwrap();
        RecallHit {
            context: evidence.content.clone(),
            evidence,
            score: Score::from_relevance(score),
            components: Default::default(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    fn sorted_ids(mut hits: Vec<RecallHit>, order: Order, widened: bool) -> Vec<u128> {
        sort_hits(&mut hits, order, widened);
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
    }

    #[test]
    fn score_beats_scope_depth_recency_and_id() {
        let hits = vec![hit(1, 1.0, "a/b", 900), hit(2, 5.0, "", 100)];
        assert_eq!(sorted_ids(hits, Order::Relevance, true), vec![2, 1]);
    }

    #[test]
    fn scope_depth_beats_recency_on_widened_reads() {
        let hits = vec![hit(1, 1.0, "", 900), hit(2, 1.0, "a/b", 100)];
        assert_eq!(sorted_ids(hits, Order::Relevance, true), vec![2, 1]);
    }

    #[test]
    fn scope_depth_is_ignored_on_exact_reads() {
        let hits = vec![hit(1, 1.0, "", 900), hit(2, 1.0, "a/b", 100)];
        assert_eq!(sorted_ids(hits, Order::Relevance, false), vec![1, 2]);
    }

    #[test]
    fn recency_beats_id() {
        let hits = vec![hit(1, 1.0, "", 100), hit(2, 1.0, "", 900)];
        assert_eq!(sorted_ids(hits, Order::Relevance, false), vec![2, 1]);
    }

    #[test]
    fn id_ascending_breaks_full_ties() {
        let hits = vec![hit(9, 1.0, "", 100), hit(3, 1.0, "", 100)];
        assert_eq!(sorted_ids(hits, Order::Relevance, false), vec![3, 9]);
    }

    #[test]
    fn recent_order_ignores_score_but_keeps_scope_depth() {
        let hits = vec![
            hit(1, 9.0, "a", 100),
            hit(2, 0.1, "a", 900),
            hit(3, 0.1, "a/b", 50),
        ];
        assert_eq!(sorted_ids(hits, Order::Recent, true), vec![3, 2, 1]);
    }
}
