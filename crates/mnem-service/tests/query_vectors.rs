//! A repeated query is embedded once: the service keeps recent query vectors.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mnem_core::{EmbeddingContract, RecallQuery};
use mnem_embed::{EmbedError, Embedder};
use mnem_service::Memory;

/// Counts how often each query text is embedded; its vectors are a fixed function of the
/// text's length (what they are does not matter here, that they are asked for does).
struct CountingEmbedder {
    contract: EmbeddingContract,
    query: &'static str,
    query_calls: AtomicUsize,
}

impl Embedder for CountingEmbedder {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts == [self.query] {
            self.query_calls.fetch_add(1, Ordering::SeqCst);
        }
        Ok(texts
            .iter()
            .map(|t| {
                let x = (t.len() % 7) as f32 + 1.0;
                let norm = (x * x + 1.0).sqrt();
                vec![x / norm, 1.0 / norm]
            })
            .collect())
    }
}

#[tokio::test]
async fn a_repeated_query_is_embedded_once_and_answers_the_same() {
    let (store, actor) = common::store_with_note().await;
    let embedder = Arc::new(CountingEmbedder {
        contract: EmbeddingContract {
            provider: "test".into(),
            model: "counting".into(),
            dims: 2,
            normalization: "l2".into(),
            version: 1,
        },
        query: "when does the backup run",
        query_calls: AtomicUsize::new(0),
    });
    let memory = Memory::open(store, Some(embedder.clone() as Arc<dyn Embedder>))
        .await
        .unwrap();
    memory.embed_pending().await.unwrap();

    let first = memory
        .recall(&actor, RecallQuery::text("when does the backup run"))
        .await
        .unwrap();
    let second = memory
        .recall(&actor, RecallQuery::text("when does the backup run"))
        .await
        .unwrap();
    let ids = |r: &mnem_service::Recall| r.hits.iter().map(|h| h.evidence.id).collect::<Vec<_>>();
    assert_eq!(embedder.query_calls.load(Ordering::SeqCst), 1);
    assert_eq!(ids(&first), ids(&second));
    assert!(!first.hits.is_empty());
}
