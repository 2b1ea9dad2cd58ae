//! The built-in model: all-MiniLM-L6-v2, weights compiled into the binary (see
//! models/all-minilm-l6-v2/PROVENANCE.md), so embedding works offline with no set-up.
//! The forward pass is `crate::encoder`; this file tokenizes and splits the work.

use mnem_core::text::floor_char_boundary;
use mnem_core::EmbeddingContract;
use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationParams};

use crate::encoder::{Config, Encoder};
use crate::{check_shape, EmbedError, Embedder};

pub(crate) static WEIGHTS: &[u8] =
    include_bytes!("../../../models/all-minilm-l6-v2/model.f16.safetensors");
static TOKENIZER: &[u8] = include_bytes!("../../../models/all-minilm-l6-v2/tokenizer.json");
pub(crate) static CONFIG: &str = include_str!("../../../models/all-minilm-l6-v2/config.json");

/// Input is cut at 128 word pieces (the model was trained on up to 256). Measured with
/// `mnem eval longmemeval … --questions 12` (5,473 real turns, 2 cores): 128 embeds 43.1
/// turns/s against 20.2/s at 256, with the same session recall_any@5 (vector 0.917 vs
/// 0.833, hybrid 0.917 both) and hybrid turn MRR 0.423 vs 0.416. Long turns in
/// conversational memory state their point early; the full text stays searchable by the
/// full-text branch. Changing this changes vectors: bump the contract version with it.
pub const MAX_TOKENS: usize = 128;
/// Bytes of a text the tokenizer sees. The model reads only the first `MAX_TOKENS`
/// tokens, and 128 tokens of any ordinary text fit in far fewer bytes (a wordpiece is a
/// few characters; a word over 100 characters is one `[UNK]`), so the cut changes no
/// vector — while tokenizing a whole 64 KiB item builds ~16k tokens with their strings
/// and offsets only for truncation to drop them: 50 such items raised `mnem serve`'s
/// resident memory by hundreds of MiB (`scripts/bench/rss_writes.py`).
pub const MAX_TOKENIZED_BYTES: usize = 16 * 1024;
/// Tokens per forward pass. Sequences are packed end to end, so a chunk wastes nothing
/// on padding; chunks run in parallel, so many texts keep both cores busy, while one
/// short query is one chunk whose matrix products split across the cores instead.
const CHUNK_TOKENS: usize = 512;

pub struct MiniLm {
    encoder: Encoder<'static>,
    tokenizer: Tokenizer,
    contract: EmbeddingContract,
}

impl MiniLm {
    pub fn builtin() -> Result<Self, EmbedError> {
        let load = |what: &str, err: String| EmbedError::Load(format!("{what}: {err}"));
        let config: Config =
            serde_json::from_str(CONFIG).map_err(|e| load("config.json", e.to_string()))?;
        // Read in place from the binary: nothing large is copied or widened at load.
        let encoder = Encoder::load(WEIGHTS, config).map_err(|e| load("model", e.to_string()))?;
        let mut tokenizer =
            Tokenizer::from_bytes(TOKENIZER).map_err(|e| load("tokenizer.json", e.to_string()))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| load("tokenizer truncation", e.to_string()))?;
        tokenizer.with_padding(None);
        Ok(Self {
            contract: EmbeddingContract {
                provider: "builtin".into(),
                model: "all-MiniLM-L6-v2".into(),
                dims: encoder.config().hidden_size,
                normalization: "l2".into(),
                version: 2,
            },
            encoder,
            tokenizer,
        })
    }

    fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, EmbedError> {
        let heads: Vec<&str> = texts
            .iter()
            .map(|t| &t[..floor_char_boundary(t, MAX_TOKENIZED_BYTES)])
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(heads, true)
            .map_err(|e| EmbedError::Inference(format!("tokenizer: {e}")))?;
        Ok(encodings.iter().map(|e| e.get_ids().to_vec()).collect())
    }
}

/// Consecutive runs of sequences of at most `CHUNK_TOKENS` tokens (a longer sequence is
/// a chunk of its own).
fn chunks(tokens: &[Vec<u32>]) -> Vec<std::ops::Range<usize>> {
    let mut chunks = Vec::new();
    let (mut start, mut used) = (0, 0);
    for (index, sequence) in tokens.iter().enumerate() {
        if index > start && used + sequence.len() > CHUNK_TOKENS {
            chunks.push(start..index);
            (start, used) = (index, 0);
        }
        used += sequence.len();
    }
    if start < tokens.len() {
        chunks.push(start..tokens.len());
    }
    chunks
}

impl Embedder for MiniLm {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let tokens = self.tokenize(texts)?;
        let chunked: Vec<Result<Vec<Vec<f32>>, EmbedError>> = chunks(&tokens)
            .into_par_iter()
            .map(|chunk| {
                let sequences: Vec<&[u32]> = tokens[chunk].iter().map(Vec::as_slice).collect();
                self.encoder
                    .embed(&sequences)
                    .map_err(|e| EmbedError::Inference(e.to_string()))
            })
            .collect();
        let mut out = Vec::with_capacity(texts.len());
        for vectors in chunked {
            out.extend(vectors?);
        }
        check_shape(&out, texts.len(), &self.contract)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnem_core::embedding::dot;

    #[test]
    fn vectors_are_unit_length_with_the_contract_width() {
        let model = MiniLm::builtin().unwrap();
        let vectors = model
            .embed(&["hello world", "a much longer sentence about cats and dogs"])
            .unwrap();
        assert_eq!(vectors.len(), 2);
        for v in &vectors {
            assert_eq!(v.len(), 384);
            assert!((dot(v, v) - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn vectors_match_an_independent_implementation() {
        #[derive(serde::Deserialize)]
        struct Reference {
            text: String,
            vector: Vec<f32>,
        }
        let references: Vec<Reference> =
            serde_json::from_str(include_str!("../tests/fixtures/candle_reference.json")).unwrap();
        assert_eq!(references.len(), 8);
        let model = MiniLm::builtin().unwrap();
        let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
        // Together (packed into one chunk) and one by one: both must match.
        let together = model.embed(&texts).unwrap();
        for (reference, vector) in references.iter().zip(&together) {
            let alone = &model.embed(&[reference.text.as_str()]).unwrap()[0];
            for got in [vector, alone] {
                let worst = got
                    .iter()
                    .zip(&reference.vector)
                    .map(|(a, b)| (a - b).abs())
                    .fold(0.0f32, f32::max);
                assert!(worst < 1e-5, "{:?}: max difference {worst}", reference.text);
            }
        }
    }

    #[test]
    fn texts_beyond_one_chunk_keep_their_order() {
        let model = MiniLm::builtin().unwrap();
        let long = "word ".repeat(200); // 128 tokens after truncation: 5 make > 1 chunk
        let texts: Vec<String> = (0..9)
            .map(|i| {
                if i % 2 == 0 {
                    long.clone()
                } else {
                    format!("short text {i}")
                }
            })
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        assert!(chunks(&model.tokenize(&refs).unwrap()).len() > 1);
        let together = model.embed(&refs).unwrap();
        for (text, vector) in refs.iter().zip(&together) {
            let alone = model.embed(&[text]).unwrap();
            assert!(dot(&alone[0], vector) > 0.9999, "{text:?} moved");
        }
    }

    #[test]
    fn cutting_a_long_text_before_tokenizing_changes_no_vector() {
        let model = MiniLm::builtin().unwrap();
        let long = "evidence window budget résumé ".repeat(3_000); // ~90 KB
        let head = &long[..floor_char_boundary(&long, 4_000)];
        let vectors = model.embed(&[long.as_str(), head]).unwrap();
        let same = dot(&vectors[0], &vectors[1]);
        assert!(same > 0.9999, "{same}");
    }

    #[test]
    fn packing_texts_together_does_not_change_any_vector() {
        let model = MiniLm::builtin().unwrap();
        let long = "word ".repeat(400);
        let texts = [
            "short",
            long.as_str(),
            "a medium length sentence here",
            "tiny",
        ];
        let together = model.embed(&texts).unwrap();
        for (text, vector) in texts.iter().zip(&together) {
            let alone = model.embed(&[text]).unwrap();
            assert!(
                dot(&alone[0], vector) > 0.9999,
                "{text:?} changed when batched"
            );
        }
    }

    #[test]
    fn a_paraphrase_is_closer_than_an_unrelated_sentence() {
        let model = MiniLm::builtin().unwrap();
        let v = model
            .embed(&[
                "The cat sits outside",
                "feline resting outdoors",
                "quarterly tax filing deadline",
            ])
            .unwrap();
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]) + 0.2);
    }
}
