//! The built-in model: all-MiniLM-L6-v2 on candle, weights compiled into the binary (see
//! models/all-minilm-l6-v2/PROVENANCE.md), so embedding works offline with no set-up.
//!
//! Throughput is decided by padding: a batch costs its longest member times its size, so
//! texts are sorted by token count and cut into batches under a token budget; short
//! texts never pay for a long neighbour.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use mnem_core::embedding::l2_normalise;
use mnem_core::text::floor_char_boundary;
use mnem_core::EmbeddingContract;
use rayon::prelude::*;
use tokenizers::{Tokenizer, TruncationParams};

use crate::{check_shape, EmbedError, Embedder};

static WEIGHTS: &[u8] = include_bytes!("../../../models/all-minilm-l6-v2/model.f16.safetensors");
static TOKENIZER: &[u8] = include_bytes!("../../../models/all-minilm-l6-v2/tokenizer.json");
static CONFIG: &str = include_str!("../../../models/all-minilm-l6-v2/config.json");

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
/// Padded tokens per forward pass. Small on purpose: on 2 CPU cores candle ran 64
/// LongMemEval turns at 10.6/s with 256-token batches, 9.7/s at 1,024 and 7.0/s at
/// 4,096 (`mnem bench`), so batching pays only by grouping many short texts.
const BATCH_TOKEN_BUDGET: usize = 512;
const MAX_BATCH: usize = 64;

/// A vector with the position of its text in the caller's slice.
type Indexed = (usize, Vec<f32>);

pub struct MiniLm {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    contract: EmbeddingContract,
}

impl MiniLm {
    pub fn builtin() -> Result<Self, EmbedError> {
        let load = |what: &str, err: String| EmbedError::Load(format!("{what}: {err}"));
        let device = Device::Cpu;
        let config: Config =
            serde_json::from_str(CONFIG).map_err(|e| load("config.json", e.to_string()))?;
        // Read in place from the binary (no copy); stored as float16 to halve it, widened
        // to float32 here.
        let vb = VarBuilder::from_slice_safetensors(WEIGHTS, DType::F32, &device)
            .map_err(|e| load("weights", e.to_string()))?;
        let model = BertModel::load(vb, &config).map_err(|e| load("model", e.to_string()))?;
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
            model,
            tokenizer,
            device,
            contract: EmbeddingContract {
                provider: "builtin".into(),
                model: "all-MiniLM-L6-v2".into(),
                dims: config.hidden_size,
                normalization: "l2".into(),
                version: 2,
            },
        })
    }

    /// Runs one padded batch and mean-pools over real tokens.
    fn forward(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let width = batch.iter().map(|t| t.len()).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(batch.len() * width);
        let mut mask = Vec::with_capacity(batch.len() * width);
        for tokens in batch {
            ids.extend(tokens.iter().copied());
            ids.extend(std::iter::repeat_n(0u32, width - tokens.len()));
            mask.extend(std::iter::repeat_n(1u32, tokens.len()));
            mask.extend(std::iter::repeat_n(0u32, width - tokens.len()));
        }
        let shape = (batch.len(), width);
        let ids = Tensor::from_vec(ids, shape, &self.device)?;
        let mask = Tensor::from_vec(mask, shape, &self.device)?;
        let token_types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &token_types, Some(&mask))?;
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?;
        let mut pooled: Vec<Vec<f32>> = summed.broadcast_div(&counts)?.to_vec2()?;
        pooled.iter_mut().for_each(|v| l2_normalise(v));
        Ok(pooled)
    }
}

/// Cuts texts (indices in ascending token-count order) into batches under the token
/// budget; the last member of each batch is its widest.
fn length_batches(tokens: &[Vec<u32>], order: &[usize]) -> Vec<Vec<usize>> {
    let mut batches = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len()
            && end - start < MAX_BATCH
            && tokens[order[end]].len() * (end - start + 1) <= BATCH_TOKEN_BUDGET
        {
            end += 1;
        }
        batches.push(order[start..end].to_vec());
        start = end;
    }
    batches
}

impl Embedder for MiniLm {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let heads: Vec<&str> = texts
            .iter()
            .map(|t| &t[..floor_char_boundary(t, MAX_TOKENIZED_BYTES)])
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(heads, true)
            .map_err(|e| EmbedError::Inference(format!("tokenizer: {e}")))?;
        let tokens: Vec<Vec<u32>> = encodings.iter().map(|e| e.get_ids().to_vec()).collect();
        let mut order: Vec<usize> = (0..tokens.len()).collect();
        order.sort_by_key(|&i| tokens[i].len());

        let batches = length_batches(&tokens, &order);
        // candle runs matrix products on all cores but the element-wise work (softmax,
        // GELU, layer norm) on one. Batches run in parallel on rayon's pool — the same
        // pool candle's matrix products use, so nesting never oversubscribes the cores
        // (`mnem eval longmemeval … --questions 8`, 2 cores, 256-document calls: 45.5
        // turns/s on two extra OS threads beside rayon's, 53.7/s on rayon's pool).
        let results: Vec<Result<Vec<Indexed>, EmbedError>> = batches
            .par_iter()
            .map(|members| {
                let batch: Vec<&[u32]> = members.iter().map(|&m| tokens[m].as_slice()).collect();
                let vectors = self
                    .forward(&batch)
                    .map_err(|e| EmbedError::Inference(e.to_string()))?;
                Ok(members.iter().copied().zip(vectors).collect())
            })
            .collect();
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); tokens.len()];
        for result in results {
            for (index, vector) in result? {
                out[index] = vector;
            }
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
    fn cutting_a_long_text_before_tokenizing_changes_no_vector() {
        let model = MiniLm::builtin().unwrap();
        let long = "evidence window budget résumé ".repeat(3_000); // ~90 KB
        let head = &long[..floor_char_boundary(&long, 4_000)];
        let vectors = model.embed(&[long.as_str(), head]).unwrap();
        let same = dot(&vectors[0], &vectors[1]);
        assert!(same > 0.9999, "{same}");
    }

    #[test]
    fn batching_by_length_does_not_change_any_vector() {
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
