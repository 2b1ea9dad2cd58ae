//! Embedding providers. Each turns texts into unit-length vectors under one
//! [`EmbeddingContract`]; which one is active is configuration, and "none" (no embedder)
//! is a valid choice that leaves recall lexical-only.
//!
//! Architecture invariant: providers are synchronous and CPU- or network-bound; callers
//! run them off the async executor (the embedding worker and the query path use
//! `spawn_blocking`). Nothing here touches the store.

mod encoder;
mod minilm;
mod openai;

use std::sync::Arc;

pub use minilm::MiniLm;
pub use mnem_core::EmbeddingContract;
pub use openai::{OpenAiCompatible, OpenAiConfig};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum EmbedError {
    #[error("embedding model failed to load: {0}")]
    Load(String),
    #[error("embedding failed: {0}")]
    Inference(String),
    #[error("embedding provider {endpoint} unavailable: {reason}")]
    Unavailable { endpoint: String, reason: String },
    #[error(
        "embedding provider returned {got} vectors of {dims} dims; expected {want} of {want_dims}"
    )]
    Shape {
        got: usize,
        dims: usize,
        want: usize,
        want_dims: usize,
    },
}

pub trait Embedder: Send + Sync {
    fn contract(&self) -> &EmbeddingContract;

    /// One unit-length vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Which provider to run; parsed from `--embedder` / `MNEM_EMBEDDER`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProviderChoice {
    Builtin,
    OpenAi(OpenAiConfig),
    None,
}

/// Builds the configured embedder; `None` means lexical-only recall.
pub fn build(choice: &ProviderChoice) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Ok(match choice {
        ProviderChoice::Builtin => Some(Arc::new(MiniLm::builtin()?)),
        ProviderChoice::OpenAi(config) => Some(Arc::new(OpenAiCompatible::new(config.clone()))),
        ProviderChoice::None => None,
    })
}

/// Checks a provider's answer has one vector of the contract's width per input.
pub(crate) fn check_shape(
    vectors: &[Vec<f32>],
    want: usize,
    contract: &EmbeddingContract,
) -> Result<(), EmbedError> {
    let bad_dims = vectors.iter().find(|v| v.len() != contract.dims);
    if vectors.len() != want || bad_dims.is_some() {
        return Err(EmbedError::Shape {
            got: vectors.len(),
            dims: bad_dims.map_or(contract.dims, Vec::len),
            want,
            want_dims: contract.dims,
        });
    }
    Ok(())
}
