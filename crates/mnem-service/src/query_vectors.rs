//! A bounded cache of recent query vectors. Embedding the query is the largest part of a
//! hybrid recall (8–15 ms with the built-in model on two cores); agents repeat queries
//! (a retried tool call, the same question asked per turn, paged recalls), and a repeat
//! costs a hash lookup instead. Keyed on the exact text: the vector depends on nothing
//! else for one embedder, and a `Memory` has one embedder for its whole life.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};

use lru::LruCache;

/// Entries kept: 384-dim vectors are 1.5 KiB, so ~400 KiB at most.
pub const QUERY_VECTORS_KEPT: usize = 256;

pub struct QueryVectors {
    recent: Mutex<LruCache<String, Arc<[f32]>>>,
}

impl QueryVectors {
    pub fn new(capacity: usize) -> Self {
        Self {
            recent: Mutex::new(LruCache::new(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    pub fn get(&self, text: &str) -> Option<Arc<[f32]>> {
        self.lock().get(text).cloned()
    }

    pub fn put(&self, text: &str, vector: Arc<[f32]>) {
        self.lock().put(text.to_string(), vector);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Arc<[f32]>>> {
        self.recent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_vector_is_returned_for_the_same_text_only() {
        let cache = QueryVectors::new(4);
        cache.put("where is the key", Arc::from(vec![1.0, 0.0]));
        assert_eq!(
            cache.get("where is the key").as_deref(),
            Some(&[1.0, 0.0][..])
        );
        assert!(cache.get("where is the key?").is_none());
    }

    #[test]
    fn the_least_recently_used_text_leaves_first() {
        let cache = QueryVectors::new(2);
        cache.put("a", Arc::from(vec![1.0]));
        cache.put("b", Arc::from(vec![2.0]));
        assert!(cache.get("a").is_some()); // "b" is now the least recent
        cache.put("c", Arc::from(vec![3.0]));
        assert!(cache.get("b").is_none());
        assert!(cache.get("a").is_some());
        assert!(cache.get("c").is_some());
    }
}
