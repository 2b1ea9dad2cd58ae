//! The degradation contract (CONTRACT §2), one test per row, plus the embedding worker and
//! the OpenAI-compatible provider against a fake local endpoint (a remote embedding API
//! is the one thing that cannot exist here).

mod common;

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{clock, stand_in_endpoint, store_with_note};
use mnem_conformance::vector_cases::builtin;
use mnem_core::{NewEvidence, RecallQuery, Timestamp, DEFAULT_PROFILE};
use mnem_embed::{Embedder, OpenAiCompatible, OpenAiConfig};
use mnem_service::{spawn_worker, Memory, ServiceError, MAX_EMBED_ATTEMPTS};
use mnem_sqlite::SqliteStore;
use mnem_store::{EvidenceStore, SearchIndex};

/// An OpenAI-compatible endpoint on a port nothing listens on.
fn unreachable_provider() -> Arc<dyn Embedder> {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // dropped: the port is closed again
    Arc::new(OpenAiCompatible::new(OpenAiConfig {
        base_url: format!("http://127.0.0.1:{port}"),
        model: "absent".into(),
        dims: 384,
        api_key: None,
    }))
}

#[tokio::test]
async fn required_query_embedding_unavailable_is_a_dependency_error() {
    let (store, actor) = store_with_note().await;
    let mut profile = DEFAULT_PROFILE;
    profile.vector_required = true;
    let memory = Memory::open(store, Some(unreachable_provider()))
        .await
        .unwrap()
        .with_profile(profile);
    let result = memory.recall(&actor, RecallQuery::text("backup")).await;
    assert!(
        matches!(
            result,
            Err(ServiceError::Dependency {
                what: "query embedding",
                ..
            })
        ),
        "{result:?}"
    );
}

#[tokio::test]
async fn optional_vector_branch_unavailable_answers_from_full_text_and_records_it() {
    let (store, actor) = store_with_note().await;
    let memory = Memory::open(store, Some(unreachable_provider()))
        .await
        .unwrap();
    let recall = memory
        .recall(&actor, RecallQuery::text("backup"))
        .await
        .unwrap();
    assert_eq!(recall.hits.len(), 1, "full-text still answers");
    assert_eq!(recall.degraded.len(), 1);
    assert_eq!(recall.degraded[0].branch, "vector");
    let status = memory.status().await.unwrap();
    let recorded = status.last_degradation.expect("recorded for status");
    assert_eq!(recorded.branch, "vector");
    assert!(recorded.reason.contains("127.0.0.1"), "{}", recorded.reason);
}

#[tokio::test]
async fn no_embedder_is_lexical_only_and_reported_degraded() {
    let (store, actor) = store_with_note().await;
    let memory = Memory::open(store, None).await.unwrap();
    let recall = memory
        .recall(&actor, RecallQuery::text("backup"))
        .await
        .unwrap();
    assert_eq!(recall.hits.len(), 1);
    assert_eq!(recall.degraded[0].branch, "vector");
    let status = memory.status().await.unwrap();
    assert_eq!(
        status.last_degradation, None,
        "lexical-only by configuration is no outage to remember"
    );
}

#[tokio::test]
async fn required_full_text_failure_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    let store = SqliteStore::open(&path, clock()).unwrap();
    let actor = store.open_team("t").await.unwrap();
    store
        .remember(&actor, NewEvidence::new("the backup job runs nightly"))
        .await
        .unwrap();
    // Break the full-text index underneath the store, as corruption would.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("DROP TABLE lexical_blocks").unwrap();
    drop(conn);
    let memory = Memory::open(store, None).await.unwrap();
    let result = memory.recall(&actor, RecallQuery::text("backup")).await;
    assert!(matches!(result, Err(ServiceError::Store(_))), "{result:?}");
}

#[tokio::test]
async fn failing_embeddings_are_retried_a_bounded_number_of_times() {
    let (store, _actor) = store_with_note().await;
    let memory = Memory::open(store.clone(), Some(unreachable_provider()))
        .await
        .unwrap();
    for pass in 1..=MAX_EMBED_ATTEMPTS {
        let report = memory.embed_pending().await.unwrap();
        assert_eq!(
            report.failed_attempts, 1,
            "pass {pass} tries once and stops"
        );
    }
    let fresh = store
        .freshness(Timestamp::from_seconds(1_700_000_100))
        .await
        .unwrap();
    assert_eq!(fresh.pending_document_count, 0);
    assert_eq!(fresh.failed_document_count, 1, "given up after the bound");
    assert_eq!(memory.embed_pending().await.unwrap().failed_attempts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_worker_embeds_new_writes() {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let actor = store.open_team("t").await.unwrap();
    let memory = Arc::new(Memory::open(store.clone(), Some(builtin())).await.unwrap());
    let wake = Arc::new(tokio::sync::Notify::new());
    let worker = spawn_worker(
        Arc::clone(&memory),
        Arc::clone(&wake),
        Duration::from_secs(60),
    );
    memory
        .remember(&actor, NewEvidence::new("The cat sits outside"))
        .await
        .unwrap();
    wake.notify_one();
    let mut current = 0;
    for _ in 0..200 {
        current = store
            .freshness(Timestamp::from_seconds(1_800_000_000))
            .await
            .unwrap()
            .current_document_count;
        if current == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    worker.abort();
    assert_eq!(current, 1, "the worker embedded the write");
}

/// A stand-in `/v1/embeddings` with fixed vectors, answering out of order (the API
/// allows it).
fn fake_openai_endpoint(vectors: Vec<Vec<f32>>) -> (String, Arc<Mutex<Vec<String>>>) {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .enumerate()
        .rev()
        .map(|(index, v)| serde_json::json!({ "index": index, "embedding": v }))
        .collect();
    stand_in_endpoint(serde_json::json!({ "data": data }).to_string())
}

#[test]
fn fake_openai_endpoint_vectors_come_back_in_input_order_and_normalised() {
    let (url, server) = fake_openai_endpoint(vec![vec![3.0, 4.0], vec![0.0, 2.0]]);
    let provider = OpenAiCompatible::new(OpenAiConfig {
        base_url: url,
        model: "test-model".into(),
        dims: 2,
        api_key: Some("secret".into()),
    });
    let vectors = provider.embed(&["first", "second"]).unwrap();
    assert_eq!(vectors, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
    let request: serde_json::Value = serde_json::from_str(&server.lock().unwrap()[0]).unwrap();
    assert_eq!(request["model"], "test-model");
    assert_eq!(request["input"], serde_json::json!(["first", "second"]));
    assert_eq!(provider.contract().provider, "openai-compatible");
}

#[test]
fn fake_openai_endpoint_wrong_width_is_refused() {
    let (url, server) = fake_openai_endpoint(vec![vec![1.0, 0.0, 0.0]]);
    let provider = OpenAiCompatible::new(OpenAiConfig {
        base_url: url,
        model: "m".into(),
        dims: 2,
        api_key: None,
    });
    assert!(provider.embed(&["x"]).is_err());
    assert_eq!(server.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_one_shot_write_embeds_its_own_team_first_and_never_another_teams_backlog() {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let alpha = store.open_team("alpha").await.unwrap();
    let beta = store.open_team("beta").await.unwrap();
    for i in 0..40 {
        // A crash left alpha's writes without vectors.
        store
            .remember(&alpha, NewEvidence::new(format!("alpha backlog note {i}")))
            .await
            .unwrap();
    }
    let memory = Memory::open(store, Some(builtin())).await.unwrap();
    memory
        .remember(&beta, NewEvidence::new("beta's fresh note"))
        .await
        .unwrap();
    let report = memory
        .embed_own_writes(&beta, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(report.embedded, 1, "beta's one document only");
    assert!(!report.left_pending);
    let now = memory.store().clock().now();
    let fresh = memory.store().freshness(now).await.unwrap();
    assert_eq!(
        fresh.pending_document_count, 40,
        "alpha's backlog is left alone"
    );
}

#[tokio::test]
async fn a_one_shot_write_stops_at_its_budget_after_its_newest_batch() {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let team = store.open_team("busy").await.unwrap();
    for i in 0..100 {
        store
            .remember(&team, NewEvidence::new(format!("older backlog note {i}")))
            .await
            .unwrap();
    }
    let memory = Memory::open(store, Some(builtin())).await.unwrap();
    let newest = memory
        .remember(&team, NewEvidence::new("the newest note"))
        .await
        .unwrap();
    let report = memory
        .embed_own_writes(&team, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        report.embedded,
        mnem_service::OWN_WRITE_BATCH,
        "one batch, then stop"
    );
    assert!(
        report.left_pending,
        "the rest is left to a long-lived worker"
    );
    let still_pending = memory
        .store()
        .team_pending_documents(team.team, 500)
        .await
        .unwrap();
    assert!(
        still_pending
            .iter()
            .all(|d| d.target != mnem_store::DocumentTarget::Evidence(newest.evidence.id)),
        "the newest write has its vector"
    );
    let now = memory.store().clock().now();
    let fresh = memory.store().freshness(now).await.unwrap();
    assert_eq!(
        fresh.pending_document_count,
        101 - mnem_service::OWN_WRITE_BATCH as u64,
        "status counts what is left"
    );
}
