//! `Operations::call`: every operation reachable by name on a real SQLite store, inputs
//! parsed as the routes parse them.

use std::sync::Arc;

use mnem_api::{OpErrorClass, Operations, NOT_CALLABLE, OPERATIONS};
use mnem_core::{ManualClock, Principal, Timestamp};
use mnem_service::Memory;
use mnem_sqlite::SqliteStore;
use mnem_store::EvidenceStore;
use serde_json::json;

async fn operations() -> (Operations<SqliteStore>, Principal) {
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_seconds(1_700_000_000),
        1_000,
    ));
    let store = SqliteStore::open_in_memory(clock).unwrap();
    let actor = store.open_team("t").await.unwrap();
    let memory = Arc::new(Memory::open(store, None).await.unwrap());
    (Operations::new(memory), Principal::local(actor))
}

#[tokio::test]
async fn every_operation_but_the_streamed_import_is_called_by_its_name() {
    let (ops, caller) = operations().await;
    for op in OPERATIONS {
        let answer = ops.call(&caller, op.name, json!({})).await;
        let unknown = matches!(&answer, Err(err) if err.field() == Some("operation"));
        assert_eq!(unknown, NOT_CALLABLE.contains(&op.name), "{}", op.name);
    }
}

#[tokio::test]
async fn a_remembered_text_is_recalled_through_call() {
    let (ops, caller) = operations().await;
    let written = ops
        .call(
            &caller,
            "remember",
            json!({"evidence": [{"content": "Ann moved to Lisbon in May."}]}),
        )
        .await
        .unwrap();
    let id = written["evidence"][0]["evidence_id"]
        .as_str()
        .unwrap()
        .to_string();
    let recalled = ops
        .call(&caller, "recall", json!({"query": "where did Ann move"}))
        .await
        .unwrap();
    assert_eq!(recalled["results"][0]["evidence_id"], id);
}

#[tokio::test]
async fn an_unknown_field_is_refused_and_named() {
    let (ops, caller) = operations().await;
    let err = ops
        .call(&caller, "recall", json!({"query": "x", "limt": 3}))
        .await
        .unwrap_err();
    assert_eq!(err.class(), OpErrorClass::BadRequest);
    assert_eq!(err.field(), Some("limt"));
}

#[tokio::test]
async fn a_bad_value_deep_in_the_input_is_named_by_its_path() {
    let (ops, caller) = operations().await;
    let err = ops
        .call(
            &caller,
            "remember",
            json!({"evidence": [{"content": "x", "observed_at": 1}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.class(), OpErrorClass::BadRequest);
    assert_eq!(err.field(), Some("evidence[0].observed_at"));
}
