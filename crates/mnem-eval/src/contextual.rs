//! Contextual document vectors, as a measurement (`mnem eval --contextual-vectors`): each
//! turn is embedded together with the turn before it in its session, so a reply ("Luna
//! and Oliver!") carries the question it answers ("what are your pets called?"). Only the
//! ingest's document vectors change; queries are embedded as always. The store is not
//! told: this decides whether the embedding worker should do the same, before it is built.

use std::collections::HashMap;
use std::sync::Arc;

use mnem_embed::{EmbedError, Embedder, EmbeddingContract};

use crate::dataset::Dataset;

pub struct ContextualEmbedder {
    inner: Arc<dyn Embedder>,
    /// Turn text → the text of the turn before it in the same session (the first turn
    /// of a session has none). A text that occurs twice keeps its first neighbour.
    previous: HashMap<String, String>,
}

impl ContextualEmbedder {
    pub fn new(inner: Arc<dyn Embedder>, dataset: &Dataset) -> Self {
        let mut previous = HashMap::new();
        for haystack in &dataset.haystacks {
            for pair in haystack.items.windows(2) {
                if pair[0].group == pair[1].group {
                    previous
                        .entry(pair[1].text.clone())
                        .or_insert_with(|| pair[0].text.clone());
                }
            }
        }
        Self { inner, previous }
    }

    /// The text embedded for `text`: the turn first, so the model's truncation cuts the
    /// neighbour, never the turn.
    fn with_context(&self, text: &str) -> String {
        match self.previous.get(text) {
            Some(previous) => format!("{text}\n\n{previous}"),
            None => text.to_string(),
        }
    }
}

impl Embedder for ContextualEmbedder {
    fn contract(&self) -> &EmbeddingContract {
        self.inner.contract()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let texts: Vec<String> = texts.iter().map(|t| self.with_context(t)).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.inner.embed(&refs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::{Haystack, Item};
    use crate::hashing::HashingEmbedder;
    use mnem_core::Timestamp;

    fn item(id: &str, group: &str, text: &str) -> Item {
        Item {
            id: id.into(),
            group: group.into(),
            text: text.into(),
            observed_at: Timestamp::from_seconds(0),
        }
    }

    #[test]
    fn a_turn_is_embedded_with_the_turn_before_it_in_its_session_only() {
        let dataset = Dataset {
            name: "test",
            haystacks: vec![Haystack {
                team: "t".into(),
                items: vec![
                    item("1", "s1", "What are your pets called?"),
                    item("2", "s1", "Luna and Oliver!"),
                    item("3", "s2", "New session"),
                ],
            }],
            questions: Vec::new(),
        };
        let contextual = ContextualEmbedder::new(Arc::new(HashingEmbedder::default()), &dataset);
        assert_eq!(
            contextual.with_context("Luna and Oliver!"),
            "Luna and Oliver!\n\nWhat are your pets called?"
        );
        assert_eq!(contextual.with_context("New session"), "New session");
        assert_eq!(
            contextual.with_context("What are your pets called?"),
            "What are your pets called?"
        );
        let plain = HashingEmbedder::default();
        let vectors = contextual
            .embed(&["Luna and Oliver!", "New session"])
            .unwrap();
        assert_ne!(vectors[0], plain.embed(&["Luna and Oliver!"]).unwrap()[0]);
        assert_eq!(vectors[1], plain.embed(&["New session"]).unwrap()[0]);
    }
}
