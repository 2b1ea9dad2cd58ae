//! Score normalisation: every branch's raw relevance becomes a score in (0, 1].

use std::cmp::Ordering;
use std::fmt;

use serde::{Serialize, Serializer};

/// A relevance score in (0, 1], larger is better. It is a read-side annotation, computed
/// per recall and never stored. Zero is unrepresentable on purpose: "it matched" must
/// survive any floor of 0, and a store that cannot rank reports [`Score::UNRANKED`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score(f64);

impl Score {
    /// "It matched, no opinion how well": what a store or branch that cannot rank reports.
    pub const UNRANKED: Score = Score(1.0);
    /// The smallest score a match can have, so rounding never yields 0.
    pub const FLOOR: f64 = 1e-9;

    /// Maps a non-negative relevance (larger is better, unbounded) onto (0, 1) with
    /// x / (1 + x): monotone, so it never reorders a branch's own ranking.
    pub fn from_relevance(relevance: f64) -> Self {
        let mapped = if relevance.is_nan() {
            0.0
        } else if relevance == f64::INFINITY {
            1.0
        } else {
            let x = relevance.max(0.0);
            x / (1.0 + x)
        };
        Self(mapped.clamp(Self::FLOOR, 1.0))
    }

    /// A value already on the unit scale (a normalised fusion score), clamped into
    /// (0, 1].
    pub fn from_unit(value: f64) -> Self {
        if value.is_nan() {
            return Self(Self::FLOOR);
        }
        Self(value.clamp(Self::FLOOR, 1.0))
    }

    pub fn value(self) -> f64 {
        self.0
    }

    /// Total order for sorting; scores are never NaN by construction.
    pub fn total_cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl fmt::Display for Score {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.4}", self.0)
    }
}

impl Serialize for Score {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bm25_relevance_maps_by_the_contract_formula() {
        let r = 3.0_f64;
        assert!((Score::from_relevance(r).value() - r / (1.0 + r)).abs() < 1e-12);
    }

    #[test]
    fn a_zero_or_degenerate_relevance_still_scores_above_zero() {
        assert!(Score::from_relevance(0.0).value() > 0.0);
        assert!(Score::from_relevance(1e-300).value() > 0.0);
        assert!(Score::from_relevance(-0.5).value() > 0.0);
        assert!(Score::from_relevance(f64::NAN).value() > 0.0);
        assert!(Score::from_relevance(f64::INFINITY).value() <= 1.0);
    }

    proptest! {
        #[test]
        fn every_relevance_maps_into_the_unit_interval(x in proptest::num::f64::ANY) {
            let s = Score::from_relevance(x).value();
            prop_assert!(s > 0.0 && s <= 1.0);
        }

        #[test]
        fn mapping_never_reorders_a_branch(a in 0.0f64..1e6, b in 0.0f64..1e6) {
            let (sa, sb) = (Score::from_relevance(a), Score::from_relevance(b));
            if a < b { prop_assert!(sa.value() <= sb.value()); }
        }
    }
}
