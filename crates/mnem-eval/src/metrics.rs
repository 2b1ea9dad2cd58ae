//! Retrieval metrics, pure functions of a ranked list and a gold set. Ranks are 1-based;
//! a list holds each id once (callers deduplicate, keeping the first occurrence).

/// Keeps the first occurrence of each id: the rank of a session is that of its best turn.
pub fn dedup_in_order<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = std::collections::HashSet::new();
    ids.into_iter().filter(|id| seen.insert(*id)).collect()
}

/// 1-based ranks of the gold ids that appear in `ranked`, ascending.
pub fn gold_ranks(ranked: &[&str], gold: &[String]) -> Vec<usize> {
    let mut ranks: Vec<usize> = ranked
        .iter()
        .enumerate()
        .filter(|(_, id)| gold.iter().any(|g| g == *id))
        .map(|(i, _)| i + 1)
        .collect();
    ranks.sort_unstable();
    ranks
}

/// For each gold id found in `results` (each result a list of ids: a hit and its
/// window), the 1-based rank of the result holding it, ascending. A gold id counts once.
pub fn gold_result_ranks(results: &[Vec<&str>], gold: &[String]) -> Vec<usize> {
    let mut ranks: Vec<usize> = gold
        .iter()
        .filter_map(|g| {
            results
                .iter()
                .position(|ids| ids.iter().any(|id| id == g))
                .map(|i| i + 1)
        })
        .collect();
    ranks.sort_unstable();
    ranks
}

/// LongMemEval `recall_any@k`: 1 when any gold id is in the top k.
pub fn recall_any(ranks: &[usize], k: usize) -> f64 {
    if ranks.iter().any(|&r| r <= k) {
        1.0
    } else {
        0.0
    }
}

/// |gold ∩ top k| / |gold| (LoCoMo turn recall@k). Zero gold scores 0.
pub fn recall_fraction(ranks: &[usize], gold_count: usize, k: usize) -> f64 {
    if gold_count == 0 {
        return 0.0;
    }
    ranks.iter().filter(|&&r| r <= k).count() as f64 / gold_count as f64
}

/// LongMemEval `ndcg_any@k`: binary relevance, DCG of the top k over the DCG of an ideal
/// list with every gold id first. DCG is LongMemEval's own (`eval_utils.dcg`): rank 1
/// gains 1 and rank r ≥ 2 gains 1/log2(r) — so ranks 1 and 2 weigh the same, unlike the
/// 1/log2(r+1) form.
pub fn ndcg(ranks: &[usize], gold_count: usize, k: usize) -> f64 {
    let gain = |rank: usize| {
        if rank <= 1 {
            1.0
        } else {
            1.0 / (rank as f64).log2()
        }
    };
    let dcg: f64 = ranks.iter().filter(|&&r| r <= k).map(|&r| gain(r)).sum();
    let ideal: f64 = (1..=gold_count.min(k)).map(gain).sum();
    if ideal == 0.0 {
        0.0
    } else {
        dcg / ideal
    }
}

/// 1 / rank of the first gold id, 0 when none was retrieved.
pub fn reciprocal_rank(ranks: &[usize]) -> f64 {
    ranks.first().map_or(0.0, |&r| 1.0 / r as f64)
}

/// Nearest-rank percentile (`p` in 0..=100) of unsorted samples; NaN when empty.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gold(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_session_ranks_where_its_best_turn_ranks() {
        let sessions = dedup_in_order(["s3", "s1", "s3", "s2", "s1"]);
        assert_eq!(sessions, ["s3", "s1", "s2"]);
        assert_eq!(gold_ranks(&sessions, &gold(&["s2", "s9"])), [3]);
    }

    #[test]
    fn a_gold_turn_inside_a_window_ranks_with_the_result_that_carries_it() {
        let results = vec![vec!["t1", "t2", "t3"], vec!["t9"], vec!["t5", "t6"]];
        assert_eq!(
            gold_result_ranks(&results, &gold(&["t6", "t2", "t3", "t7"])),
            [1, 1, 3]
        );
        assert_eq!(recall_fraction(&[1, 1, 3], 4, 5), 0.75);
    }

    #[test]
    fn recall_any_counts_a_gold_id_at_exactly_k() {
        assert_eq!(recall_any(&[5], 5), 1.0);
        assert_eq!(recall_any(&[6], 5), 0.0);
        assert_eq!(recall_any(&[], 10), 0.0);
    }

    #[test]
    fn recall_fraction_is_the_share_of_gold_in_the_top_k() {
        assert_eq!(recall_fraction(&[1, 4, 7], 4, 5), 0.5);
        assert_eq!(recall_fraction(&[1], 0, 5), 0.0);
    }

    #[test]
    fn ndcg_is_one_for_an_ideal_list_and_discounts_by_log_rank() {
        assert!((ndcg(&[1, 2], 2, 10) - 1.0).abs() < 1e-12);
        // One gold id at rank 4: 1/log2(4) = 0.5 over an ideal of 1.
        assert!((ndcg(&[4], 1, 10) - 0.5).abs() < 1e-12);
        // LongMemEval's DCG: rank 2 gains as much as rank 1.
        assert!((ndcg(&[2], 1, 10) - 1.0).abs() < 1e-12);
        // Two gold ids, one found at rank 1: 1 / (1 + 1) against an ideal of two.
        assert!((ndcg(&[1], 2, 10) - 0.5).abs() < 1e-12);
        // Three gold ids at ranks 1, 3, 4: (1 + 1/log2 3 + 1/2) / (1 + 1 + 1/log2 3).
        let expected = (1.5 + 1.0 / 3f64.log2()) / (2.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&[1, 3, 4], 3, 10) - expected).abs() < 1e-12);
        assert_eq!(ndcg(&[11], 1, 10), 0.0);
    }

    #[test]
    fn reciprocal_rank_uses_the_first_gold_hit() {
        assert_eq!(reciprocal_rank(&[4, 9]), 0.25);
        assert_eq!(reciprocal_rank(&[]), 0.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        assert_eq!(percentile(&samples, 50.0), 50.0);
        assert_eq!(percentile(&samples, 95.0), 95.0);
        assert_eq!(percentile(&samples, 99.0), 99.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert!(percentile(&[], 50.0).is_nan());
    }
}
