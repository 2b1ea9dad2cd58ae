//! An on-disk cache of document vectors for repeated eval runs (`--embed-cache FILE`):
//! embedding a LongMemEval haystack takes most of a run, while comparing ranking variants
//! needs the same vectors every time. Keyed by the embedding contract and the text's
//! sha256, so a different model or preprocessing never reads another's vectors. Only the
//! ingest uses it: query embedding is always computed, so its latency stays real.

use std::path::Path;
use std::sync::{Arc, Mutex};

use mnem_embed::{EmbedError, Embedder, EmbeddingContract};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::EvalError;

pub struct CachingEmbedder {
    inner: Arc<dyn Embedder>,
    conn: Mutex<Connection>,
    contract_key: String,
}

impl CachingEmbedder {
    pub fn open(path: &Path, inner: Arc<dyn Embedder>) -> Result<Self, EvalError> {
        let cache_error = |e: rusqlite::Error| EvalError::Read {
            path: path.display().to_string(),
            reason: format!("embedding cache: {e}"),
        };
        let conn = Connection::open(path).map_err(cache_error)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS vectors (
                 contract TEXT NOT NULL,
                 text_sha256 BLOB NOT NULL,
                 vector BLOB NOT NULL,
                 PRIMARY KEY (contract, text_sha256)
             ) WITHOUT ROWID;",
        )
        .map_err(cache_error)?;
        let contract_key = inner.contract().key();
        Ok(Self {
            inner,
            conn: Mutex::new(conn),
            contract_key,
        })
    }
}

fn cache_failure(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(format!("embedding cache: {e}"))
}

impl Embedder for CachingEmbedder {
    fn contract(&self) -> &EmbeddingContract {
        self.inner.contract()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let hashes: Vec<[u8; 32]> = texts.iter().map(|t| Sha256::digest(t).into()).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        {
            let conn = self.conn.lock().map_err(cache_failure)?;
            let mut lookup = conn
                .prepare_cached(
                    "SELECT vector FROM vectors WHERE contract = ?1 AND text_sha256 = ?2",
                )
                .map_err(cache_failure)?;
            for (slot, hash) in out.iter_mut().zip(&hashes) {
                let blob: Option<Vec<u8>> = lookup
                    .query_row(params![self.contract_key, hash.as_slice()], |row| {
                        row.get(0)
                    })
                    .optional()
                    .map_err(cache_failure)?;
                *slot = blob.map(|b| {
                    b.chunks_exact(4)
                        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .collect()
                });
            }
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let miss_texts: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&miss_texts)?;
            let mut conn = self.conn.lock().map_err(cache_failure)?;
            let tx = conn.transaction().map_err(cache_failure)?;
            {
                let mut insert = tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO vectors (contract, text_sha256, vector) VALUES (?1, ?2, ?3)",
                    )
                    .map_err(cache_failure)?;
                for (&i, vector) in missing.iter().zip(vectors) {
                    let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                    insert
                        .execute(params![self.contract_key, hashes[i].as_slice(), blob])
                        .map_err(cache_failure)?;
                    out[i] = Some(vector);
                }
            }
            tx.commit().map_err(cache_failure)?;
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hashing::HashingEmbedder;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the texts that reach the wrapped embedder.
    struct Counting {
        inner: HashingEmbedder,
        texts: AtomicUsize,
    }

    impl Embedder for Counting {
        fn contract(&self) -> &EmbeddingContract {
            self.inner.contract()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            self.inner.embed(texts)
        }
    }

    #[test]
    fn a_second_run_reads_vectors_from_the_cache_and_they_are_identical() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.db");
        let counting = Arc::new(Counting {
            inner: HashingEmbedder::default(),
            texts: AtomicUsize::new(0),
        });
        let first = CachingEmbedder::open(&path, counting.clone())
            .unwrap()
            .embed(&["alpha beta", "gamma"])
            .unwrap();
        assert_eq!(counting.texts.load(Ordering::SeqCst), 2);
        let second = CachingEmbedder::open(&path, counting.clone())
            .unwrap()
            .embed(&["gamma", "alpha beta", "delta"])
            .unwrap();
        assert_eq!(
            counting.texts.load(Ordering::SeqCst),
            3,
            "only delta was new"
        );
        assert_eq!(second[0], first[1]);
        assert_eq!(second[1], first[0]);
    }
}
