//! The SQLite lexical branch beyond the conformance suite: its MaxScore pruning against
//! reading every posting list, on one file opened twice.

use std::sync::Arc;

use mnem_sqlite::SqliteStore;
use mnem_store::{EvidenceStore, SystemClock};

#[tokio::test]
async fn pruning_common_terms_never_changes_the_lexical_branch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    let store = SqliteStore::open(&path, Arc::new(SystemClock)).unwrap();
    let full = SqliteStore::open(&path, Arc::new(SystemClock))
        .unwrap()
        .without_lexical_pruning();
    let actor = store.open_team("words").await.unwrap();
    mnem_conformance::lexical_cases::pruning_never_changes_the_lexical_branch(
        &store, &full, &actor,
    )
    .await;
}
