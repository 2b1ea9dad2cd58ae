//! Named ranking profiles choose the branches a recall runs: the lexical profile never
//! embeds, the vector profile answers from vectors alone and fails rather than quietly
//! falling back to full text.

mod common;

use common::{clock, store_with_note};
use mnem_conformance::vector_cases::builtin;
use mnem_core::{Actor, NewEvidence, RankingProfile, RecallQuery, LEXICAL_PROFILE, VECTOR_PROFILE};
use mnem_service::{Memory, ServiceError};
use mnem_sqlite::SqliteStore;
use mnem_store::EvidenceStore;

#[tokio::test]
async fn vector_profile_finds_a_paraphrase_that_shares_no_word_with_the_query() {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let actor = store.open_team("t").await.unwrap();
    let memory = Memory::open(store, Some(builtin())).await.unwrap();
    let cat = memory
        .remember(&actor, NewEvidence::new("The cat sits outside in the sun"))
        .await
        .unwrap();
    memory
        .remember(&actor, NewEvidence::new("quarterly tax filing deadline"))
        .await
        .unwrap();
    memory.embed_pending().await.unwrap();
    let query = RecallQuery::text("feline resting outdoors");
    let lexical = Memory::open(memory.store().clone(), Some(builtin()))
        .await
        .unwrap()
        .with_profile(LEXICAL_PROFILE)
        .recall(&actor, query.clone())
        .await
        .unwrap();
    assert!(
        lexical.hits.is_empty(),
        "no shared word: {:?}",
        lexical.hits
    );
    let vector = memory
        .with_profile(VECTOR_PROFILE)
        .recall(&actor, query)
        .await
        .unwrap();
    assert_eq!(
        vector.hits.first().map(|h| h.evidence.id),
        Some(cat.evidence.id)
    );
    assert!(vector
        .hits
        .iter()
        .all(|h| h.components.lexical_rank.is_none()));
}

/// One note in a store whose memory has no embedder, under `profile`.
async fn note_without_embedder(profile: RankingProfile) -> (Memory<SqliteStore>, Actor) {
    let (store, actor) = store_with_note().await;
    let memory = Memory::open(store, None)
        .await
        .unwrap()
        .with_profile(profile);
    (memory, actor)
}

#[tokio::test]
async fn lexical_profile_never_reports_a_missing_vector_branch() {
    let (memory, actor) = note_without_embedder(LEXICAL_PROFILE).await;
    let recall = memory
        .recall(&actor, RecallQuery::text("backup"))
        .await
        .unwrap();
    assert_eq!(recall.hits.len(), 1);
    assert!(recall.degraded.is_empty(), "{:?}", recall.degraded);
}

#[tokio::test]
async fn vector_profile_without_an_embedder_is_a_dependency_error() {
    let (memory, actor) = note_without_embedder(VECTOR_PROFILE).await;
    let result = memory.recall(&actor, RecallQuery::text("backup")).await;
    assert!(
        matches!(result, Err(ServiceError::Dependency { .. })),
        "{result:?}"
    );
}
