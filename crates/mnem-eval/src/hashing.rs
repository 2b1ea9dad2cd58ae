//! A feature-hashing embedder for `mnem bench`: each word adds ±1 to one of 384
//! dimensions, then the vector is L2-normalised. A real (if weak) bag-of-words embedding
//! at microseconds per text, so a 100k-item corpus gets vectors in seconds instead of
//! the half hour or more the built-in model would take on two cores (it embeds ~53 real
//! conversation turns/s, `mnem eval`). The exact scan's cost depends
//! only on the count and width of vectors; an HNSW search's also on how they cluster, and
//! hashed bags of words cluster less than sentence embeddings do (more of the graph is
//! visited), so the HNSW figures are on the pessimistic side. The model's own query
//! embedding time is measured and reported separately.

use mnem_core::embedding::l2_normalise;
use mnem_core::EmbeddingContract;
use mnem_embed::{EmbedError, Embedder};
use sha2::{Digest, Sha256};

pub const DIMS: usize = 384;

pub struct HashingEmbedder {
    contract: EmbeddingContract,
}

impl Default for HashingEmbedder {
    fn default() -> Self {
        Self {
            contract: EmbeddingContract {
                provider: "feature-hashing".into(),
                model: "bench-words".into(),
                dims: DIMS,
                normalization: "l2".into(),
                version: 1,
            },
        }
    }
}

impl Embedder for HashingEmbedder {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut vector = vec![0f32; DIMS];
                for word in text.split_whitespace() {
                    let digest = Sha256::digest(word.to_lowercase().as_bytes());
                    let slot = u16::from_le_bytes([digest[0], digest[1]]) as usize % DIMS;
                    vector[slot] += if digest[2] & 1 == 0 { 1.0 } else { -1.0 };
                }
                if vector.iter().all(|&x| x == 0.0) {
                    vector[0] = 1.0; // empty text: any unit vector
                }
                l2_normalise(&mut vector);
                vector
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnem_core::embedding::dot;

    #[test]
    fn shared_words_make_vectors_similar_and_every_vector_is_unit_length() {
        let embedder = HashingEmbedder::default();
        let v = embedder
            .embed(&["kalo mine rusa", "kalo mine tevi", "padu reno tima", ""])
            .unwrap();
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]) + 0.3);
        for vector in &v {
            assert_eq!(vector.len(), DIMS);
            assert!((dot(vector, vector) - 1.0).abs() < 1e-5);
        }
    }
}
