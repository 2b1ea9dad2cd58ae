//! Set-up shared by the service's test binaries.

use std::sync::Arc;

use mnem_core::{Actor, ManualClock, NewEvidence, Timestamp};
use mnem_sqlite::SqliteStore;
use mnem_store::EvidenceStore;

pub fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        Timestamp::from_seconds(1_700_000_000),
        1_000,
    ))
}

/// An in-memory store holding one note ("the backup job runs nightly") in team `t`.
pub async fn store_with_note() -> (SqliteStore, Actor) {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let actor = store.open_team("t").await.unwrap();
    store
        .remember(&actor, NewEvidence::new("the backup job runs nightly"))
        .await
        .unwrap();
    (store, actor)
}
