//! The embedding contract: what produced a vector. One contract is active per store; a
//! vector made under any other contract is never compared with a query vector, because
//! vectors from different models (or versions, or normalisations) share no space.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EmbeddingContract {
    /// `builtin`, `openai-compatible`, …
    pub provider: String,
    pub model: String,
    pub dims: usize,
    /// How vectors are normalised before storage (`l2`: unit length, so dot = cosine).
    pub normalization: String,
    /// Bumped when the provider's preprocessing changes (e.g. the truncation length),
    /// which changes vectors without changing the model name.
    pub version: u32,
}

impl EmbeddingContract {
    /// A stable one-line identity, stored beside every vector made under this contract.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/v{}",
            self.provider, self.model, self.dims, self.normalization, self.version
        )
    }
}

impl fmt::Display for EmbeddingContract {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} ({} dims, {}, v{})",
            self.provider, self.model, self.dims, self.normalization, self.version
        )
    }
}

/// Scales `vector` to unit length in place; the zero vector stays zero.
pub fn l2_normalise(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Dot product; equal to cosine similarity for unit vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalised_vectors_have_unit_length_and_dot_is_cosine() {
        let mut a = vec![3.0, 4.0];
        l2_normalise(&mut a);
        assert!((dot(&a, &a) - 1.0).abs() < 1e-6);
        assert_eq!(a, vec![0.6, 0.8]);
        let mut zero = vec![0.0, 0.0];
        l2_normalise(&mut zero);
        assert_eq!(zero, vec![0.0, 0.0]);
    }
}
