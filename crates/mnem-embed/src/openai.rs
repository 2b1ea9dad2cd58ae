//! Any OpenAI-compatible `/v1/embeddings` endpoint: OpenAI, Ollama, vLLM, TEI.

use std::time::Duration;

use mnem_core::embedding::l2_normalise;
use mnem_core::EmbeddingContract;
use serde::Deserialize;
use serde_json::json;

use crate::{check_shape, EmbedError, Embedder};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Base URL up to (not including) `/v1`, e.g. `http://localhost:11434`.
    pub base_url: String,
    pub model: String,
    pub dims: usize,
    pub api_key: Option<String>,
}

pub struct OpenAiCompatible {
    config: OpenAiConfig,
    contract: EmbeddingContract,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAiCompatible {
    pub fn new(config: OpenAiConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let contract = EmbeddingContract {
            provider: "openai-compatible".into(),
            model: config.model.clone(),
            dims: config.dims,
            normalization: "l2".into(),
            version: 1,
        };
        Self {
            config,
            contract,
            agent,
        }
    }

    fn endpoint(&self) -> String {
        format!(
            "{}/v1/embeddings",
            self.config.base_url.trim_end_matches('/')
        )
    }
}

impl Embedder for OpenAiCompatible {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let endpoint = self.endpoint();
        let unavailable = |reason: String| EmbedError::Unavailable {
            endpoint: endpoint.clone(),
            reason,
        };
        let mut request = self.agent.post(&endpoint);
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let mut response = request
            .send_json(json!({ "model": self.config.model, "input": texts }))
            .map_err(|e| unavailable(e.to_string()))?;
        let mut parsed: EmbeddingsResponse = response
            .body_mut()
            .read_json()
            .map_err(|e| unavailable(format!("unreadable response: {e}")))?;
        // The API may answer out of order; `index` says which input each vector is for.
        parsed.data.sort_by_key(|item| item.index);
        let mut vectors: Vec<Vec<f32>> =
            parsed.data.into_iter().map(|item| item.embedding).collect();
        check_shape(&vectors, texts.len(), &self.contract)?;
        vectors.iter_mut().for_each(|v| l2_normalise(v));
        Ok(vectors)
    }
}
