//! The BERT encoder of all-MiniLM-L6-v2 with mean pooling, for inference on the CPU.
//!
//! Written for this one model rather than run through a general tensor library because
//! recall waits on it: a query is one short sequence, and a general library's per-call
//! costs (packing every weight matrix, allocating every intermediate, waking threads for
//! element-wise work) were 15 ms of a query's embedding. Here the float16 weights are
//! read in place from the bytes they were loaded from (only the query, key and value
//! matrices are copied, to stack them: 5 MB), the sequences of a batch are packed end to
//! end (no padding), and the parallel work is the matrix products (`kernel`) and the
//! attention heads.

mod activation;
mod kernel;

use kernel::{matmul_transposed, Epilogue, Weights};
use mnem_core::embedding::l2_normalise;
use rayon::prelude::*;
use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;
use thiserror::Error;

/// The fields of a Hugging Face BERT `config.json` the forward pass needs.
#[derive(Debug, Clone, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    pub layer_norm_eps: f64,
    pub hidden_act: String,
}

#[derive(Debug, Error)]
pub enum EncoderError {
    #[error("config: {0}")]
    Config(String),
    #[error("weights: {0}")]
    Weights(String),
    #[error("tensor {name}: {problem}")]
    Tensor { name: String, problem: String },
    #[error("token id {id} is outside the vocabulary of {vocab}")]
    Token { id: u32, vocab: usize },
    #[error("a sequence of {len} tokens is longer than the model's {max} positions")]
    Length { len: usize, max: usize },
    #[error("sequence {index} has no tokens (a vector needs at least one)")]
    Empty { index: usize },
}

/// A linear layer: float16 weights (outputs × inputs) and a float32 bias.
struct Dense<'a> {
    weight: std::borrow::Cow<'a, [u8]>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Dense<'_> {
    /// `x` (rows × inputs) → rows × outputs.
    fn apply(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.apply_then(x, rows, false)
    }

    /// As `apply`, with GELU on each output.
    fn apply_gelu(&self, x: &[f32], rows: usize) -> Vec<f32> {
        self.apply_then(x, rows, true)
    }

    fn apply_then(&self, x: &[f32], rows: usize, gelu: bool) -> Vec<f32> {
        let mut out = vec![0.0; rows * self.outputs];
        let then = Epilogue {
            bias: Some(&self.bias),
            gelu,
        };
        let weights = Weights::F16(&self.weight);
        matmul_transposed(
            x,
            (rows, self.inputs),
            weights,
            self.outputs,
            then,
            &mut out,
        );
        out
    }
}

struct LayerNorm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl LayerNorm {
    fn apply(&self, x: &mut [f32]) {
        let width = self.gamma.len();
        for row in x.chunks_exact_mut(width) {
            let mean = row.iter().sum::<f32>() / width as f32;
            let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / width as f32;
            let scale = 1.0 / (variance + self.eps).sqrt();
            for ((v, g), b) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
                *v = (*v - mean) * scale * g + b;
            }
        }
    }
}

struct Layer<'a> {
    /// Query, key and value projections stacked (3·hidden outputs): one product, so one
    /// parallel section, instead of three.
    query_key_value: Dense<'a>,
    attention_output: Dense<'a>,
    attention_norm: LayerNorm,
    intermediate: Dense<'a>,
    output: Dense<'a>,
    output_norm: LayerNorm,
}

pub struct Encoder<'a> {
    config: Config,
    word_embeddings: &'a [u8],
    position_embeddings: &'a [u8],
    /// Every token is segment 0: sentence embedding uses one segment.
    token_type_embedding: Vec<f32>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer<'a>>,
}

/// Reads named tensors out of one safetensors file, checking dtype and shape.
struct Reader<'a> {
    tensors: SafeTensors<'a>,
}

impl<'a> Reader<'a> {
    fn raw(&self, name: &str, shape: &[usize]) -> Result<&'a [u8], EncoderError> {
        let problem = |problem: String| EncoderError::Tensor {
            name: name.to_string(),
            problem,
        };
        let view = self
            .tensors
            .tensor(name)
            .map_err(|e| problem(e.to_string()))?;
        if view.dtype() != Dtype::F16 {
            return Err(problem(format!("dtype {:?}, expected F16", view.dtype())));
        }
        if view.shape() != shape {
            return Err(problem(format!(
                "shape {:?}, expected {shape:?}",
                view.shape()
            )));
        }
        Ok(view.data())
    }

    fn widened(&self, name: &str, len: usize) -> Result<Vec<f32>, EncoderError> {
        let bytes = self.raw(name, &[len])?;
        Ok(bytes
            .chunks_exact(2)
            .map(|pair| half::f16::from_le_bytes([pair[0], pair[1]]).to_f32())
            .collect())
    }

    fn dense(
        &self,
        prefix: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<Dense<'a>, EncoderError> {
        Ok(Dense {
            weight: self
                .raw(&format!("{prefix}.weight"), &[outputs, inputs])?
                .into(),
            bias: self.widened(&format!("{prefix}.bias"), outputs)?,
            inputs,
            outputs,
        })
    }

    /// Several layers over the same input as one: their weights and biases stacked.
    fn stacked(
        &self,
        prefixes: &[String],
        inputs: usize,
        outputs: usize,
    ) -> Result<Dense<'a>, EncoderError> {
        let mut weight = Vec::with_capacity(prefixes.len() * outputs * inputs * 2);
        let mut bias = Vec::with_capacity(prefixes.len() * outputs);
        for prefix in prefixes {
            let part = self.dense(prefix, inputs, outputs)?;
            weight.extend_from_slice(&part.weight);
            bias.extend(part.bias);
        }
        Ok(Dense {
            weight: weight.into(),
            bias,
            inputs,
            outputs: prefixes.len() * outputs,
        })
    }

    fn norm(&self, prefix: &str, width: usize, eps: f32) -> Result<LayerNorm, EncoderError> {
        Ok(LayerNorm {
            gamma: self.widened(&format!("{prefix}.weight"), width)?,
            beta: self.widened(&format!("{prefix}.bias"), width)?,
            eps,
        })
    }
}

impl<'a> Encoder<'a> {
    /// Borrows the float16 weights of `safetensors` (Hugging Face BERT names, no `bert.`
    /// prefix) for as long as the encoder lives.
    pub fn load(safetensors: &'a [u8], config: Config) -> Result<Self, EncoderError> {
        if config.hidden_act != "gelu" {
            return Err(EncoderError::Config(format!(
                "hidden_act {:?}: only \"gelu\" is implemented",
                config.hidden_act
            )));
        }
        if config.num_attention_heads == 0
            || !config
                .hidden_size
                .is_multiple_of(config.num_attention_heads)
        {
            return Err(EncoderError::Config(format!(
                "hidden_size {} does not split into {} heads",
                config.hidden_size, config.num_attention_heads
            )));
        }
        let reader = Reader {
            tensors: SafeTensors::deserialize(safetensors)
                .map_err(|e| EncoderError::Weights(e.to_string()))?,
        };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps as f32;
        let token_types = reader.raw("embeddings.token_type_embeddings.weight", &[2, hidden])?;
        let token_type_embedding = token_types[..2 * hidden]
            .chunks_exact(2)
            .map(|pair| half::f16::from_le_bytes([pair[0], pair[1]]).to_f32())
            .collect();
        let layers = (0..config.num_hidden_layers)
            .map(|l| {
                let p = format!("encoder.layer.{l}");
                Ok(Layer {
                    query_key_value: reader.stacked(
                        &["query", "key", "value"].map(|part| format!("{p}.attention.self.{part}")),
                        hidden,
                        hidden,
                    )?,
                    attention_output: reader.dense(
                        &format!("{p}.attention.output.dense"),
                        hidden,
                        hidden,
                    )?,
                    attention_norm: reader.norm(
                        &format!("{p}.attention.output.LayerNorm"),
                        hidden,
                        eps,
                    )?,
                    intermediate: reader.dense(
                        &format!("{p}.intermediate.dense"),
                        hidden,
                        config.intermediate_size,
                    )?,
                    output: reader.dense(
                        &format!("{p}.output.dense"),
                        config.intermediate_size,
                        hidden,
                    )?,
                    output_norm: reader.norm(&format!("{p}.output.LayerNorm"), hidden, eps)?,
                })
            })
            .collect::<Result<Vec<_>, EncoderError>>()?;
        Ok(Self {
            word_embeddings: reader.raw(
                "embeddings.word_embeddings.weight",
                &[config.vocab_size, hidden],
            )?,
            position_embeddings: reader.raw(
                "embeddings.position_embeddings.weight",
                &[config.max_position_embeddings, hidden],
            )?,
            token_type_embedding,
            embedding_norm: reader.norm("embeddings.LayerNorm", hidden, eps)?,
            layers,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// One unit-length, mean-pooled vector per token sequence.
    pub fn embed(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>, EncoderError> {
        for (index, sequence) in sequences.iter().enumerate() {
            if sequence.is_empty() {
                return Err(EncoderError::Empty { index });
            }
            if sequence.len() > self.config.max_position_embeddings {
                return Err(EncoderError::Length {
                    len: sequence.len(),
                    max: self.config.max_position_embeddings,
                });
            }
            if let Some(&id) = sequence
                .iter()
                .find(|&&id| id as usize >= self.config.vocab_size)
            {
                return Err(EncoderError::Token {
                    id,
                    vocab: self.config.vocab_size,
                });
            }
        }
        let spans = spans(sequences);
        let mut hidden = self.embeddings(sequences);
        for layer in &self.layers {
            hidden = self.layer(layer, hidden, &spans);
        }
        let width = self.config.hidden_size;
        Ok(spans
            .iter()
            .map(|span| {
                let mut pooled = vec![0.0f32; width];
                for row in hidden[span.start * width..span.end * width].chunks_exact(width) {
                    pooled.iter_mut().zip(row).for_each(|(p, v)| *p += v);
                }
                let count = span.len() as f32; // at least one: checked above
                pooled.iter_mut().for_each(|p| *p /= count);
                l2_normalise(&mut pooled);
                pooled
            })
            .collect())
    }

    /// Word + position + segment embeddings, normalised: rows × hidden.
    fn embeddings(&self, sequences: &[&[u32]]) -> Vec<f32> {
        let width = self.config.hidden_size;
        let f16_row = |table: &[u8], row: usize, column: usize| {
            let at = 2 * (row * width + column);
            half::f16::from_le_bytes([table[at], table[at + 1]]).to_f32()
        };
        let mut hidden =
            Vec::with_capacity(sequences.iter().map(|s| s.len()).sum::<usize>() * width);
        for sequence in sequences {
            for (position, &id) in sequence.iter().enumerate() {
                hidden.extend((0..width).map(|c| {
                    f16_row(self.word_embeddings, id as usize, c)
                        + f16_row(self.position_embeddings, position, c)
                        + self.token_type_embedding[c]
                }));
            }
        }
        self.embedding_norm.apply(&mut hidden);
        hidden
    }

    fn layer(&self, layer: &Layer, hidden: Vec<f32>, spans: &[std::ops::Range<usize>]) -> Vec<f32> {
        let rows = hidden.len() / self.config.hidden_size;
        let context = self.attention(layer, &hidden, rows, spans);
        let mut attended = layer.attention_output.apply(&context, rows);
        attended.iter_mut().zip(&hidden).for_each(|(a, h)| *a += h);
        layer.attention_norm.apply(&mut attended);
        let inner = layer.intermediate.apply_gelu(&attended, rows);
        let mut output = layer.output.apply(&inner, rows);
        output.iter_mut().zip(&attended).for_each(|(o, a)| *o += a);
        layer.output_norm.apply(&mut output);
        output
    }

    /// Multi-head self-attention within each sequence's own rows (no mask: packing left
    /// no padding to hide).
    fn attention(
        &self,
        layer: &Layer,
        hidden: &[f32],
        rows: usize,
        spans: &[std::ops::Range<usize>],
    ) -> Vec<f32> {
        let width = self.config.hidden_size;
        let heads = self.config.num_attention_heads;
        let head_width = width / heads;
        // Each row: its query, key and value, side by side.
        let projected = layer.query_key_value.apply(hidden, rows);
        let stride = 3 * width;
        let scale = 1.0 / (head_width as f32).sqrt();
        let one_head = |span: &std::ops::Range<usize>, head: usize| {
            let len = span.len();
            let column = head * head_width;
            let mut q = vec![0.0f32; len * head_width];
            let mut k = vec![0.0f32; len * head_width];
            let mut v_t = vec![0.0f32; head_width * len];
            for (i, row) in span.clone().enumerate() {
                let at = row * stride + column;
                let query = &projected[at..at + head_width];
                let key = &projected[at + width..at + width + head_width];
                let value = &projected[at + 2 * width..at + 2 * width + head_width];
                let slot = i * head_width..(i + 1) * head_width;
                q[slot.clone()]
                    .iter_mut()
                    .zip(query)
                    .for_each(|(q, v)| *q = v * scale);
                k[slot].copy_from_slice(key);
                for (d, v) in value.iter().enumerate() {
                    v_t[d * len + i] = *v;
                }
            }
            let plain = Epilogue::default();
            let mut scores = vec![0.0f32; len * len];
            matmul_transposed(
                &q,
                (len, head_width),
                Weights::F32(&k),
                len,
                plain,
                &mut scores,
            );
            scores.chunks_exact_mut(len).for_each(softmax);
            let mut head_context = vec![0.0f32; len * head_width];
            let values = Weights::F32(&v_t);
            matmul_transposed(
                &scores,
                (len, len),
                values,
                head_width,
                plain,
                &mut head_context,
            );
            head_context
        };
        // Heads are independent: both cores take some, as they do in the products around.
        let per_head: Vec<Vec<f32>> = spans
            .par_iter()
            .flat_map(|span| (0..heads).into_par_iter().map(move |head| (span, head)))
            .map(|(span, head)| one_head(span, head))
            .collect();
        let mut context = vec![0.0f32; rows * width];
        let places = spans
            .iter()
            .flat_map(|span| (0..heads).map(move |head| (span, head)));
        for ((span, head), head_context) in places.zip(per_head) {
            let column = head * head_width;
            for (i, row) in span.clone().enumerate() {
                context[row * width + column..row * width + column + head_width]
                    .copy_from_slice(&head_context[i * head_width..(i + 1) * head_width]);
            }
        }
        context
    }
}

/// Each sequence's rows in the packed batch.
fn spans(sequences: &[&[u32]]) -> Vec<std::ops::Range<usize>> {
    let mut start = 0;
    sequences
        .iter()
        .map(|s| {
            let span = start..start + s.len();
            start = span.end;
            span
        })
        .collect()
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        total += *v;
    }
    row.iter_mut().for_each(|v| *v /= total);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minilm::{CONFIG, WEIGHTS};

    fn config() -> Config {
        serde_json::from_str(CONFIG).unwrap()
    }

    #[test]
    fn a_token_outside_the_vocabulary_is_refused_by_id() {
        let encoder = Encoder::load(WEIGHTS, config()).unwrap();
        let error = encoder.embed(&[&[101, 30_522, 102]]).err().unwrap();
        assert!(
            matches!(
                error,
                EncoderError::Token {
                    id: 30_522,
                    vocab: 30_522
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_sequence_longer_than_the_positions_is_refused_with_its_length() {
        let encoder = Encoder::load(WEIGHTS, config()).unwrap();
        let long = vec![1000u32; 513];
        let error = encoder.embed(&[&long]).err().unwrap();
        assert!(
            matches!(error, EncoderError::Length { len: 513, max: 512 }),
            "{error}"
        );
    }

    #[test]
    fn an_empty_sequence_is_refused_with_its_position() {
        let encoder = Encoder::load(WEIGHTS, config()).unwrap();
        let error = encoder.embed(&[&[101, 102], &[]]).err().unwrap();
        assert!(matches!(error, EncoderError::Empty { index: 1 }), "{error}");
    }

    #[test]
    fn an_activation_other_than_gelu_is_refused_at_load() {
        let config = Config {
            hidden_act: "relu".into(),
            ..config()
        };
        let error = Encoder::load(WEIGHTS, config).err().unwrap();
        assert!(error.to_string().contains("relu"), "{error}");
    }

    #[test]
    fn a_weight_of_the_wrong_shape_is_refused_with_its_name() {
        let config = Config {
            intermediate_size: 1024,
            ..config()
        };
        let error = Encoder::load(WEIGHTS, config).err().unwrap();
        assert!(
            error
                .to_string()
                .contains("encoder.layer.0.intermediate.dense.weight"),
            "{error}"
        );
    }

    #[test]
    fn sequences_packed_together_attend_only_within_themselves() {
        let encoder = Encoder::load(WEIGHTS, config()).unwrap();
        let first: &[u32] = &[101, 7592, 2088, 102];
        let second: &[u32] = &[101, 4937, 2024, 2041, 102];
        let packed = encoder.embed(&[first, second]).unwrap();
        let alone = [
            encoder.embed(&[first]).unwrap(),
            encoder.embed(&[second]).unwrap(),
        ];
        for (together, apart) in packed.iter().zip(alone.iter().map(|v| &v[0])) {
            let worst = together
                .iter()
                .zip(apart)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-6, "packing changed a vector by {worst}");
        }
    }
}
