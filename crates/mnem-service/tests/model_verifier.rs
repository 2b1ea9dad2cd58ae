//! The optional model verifier against a local stand-in for an OpenAI-compatible chat
//! endpoint (a remote LLM cannot exist here; every test says so in its name).

mod common;

use std::sync::Arc;

use common::{clock, stand_in_endpoint};
use mnem_core::graph::{RelationshipStatus, RememberRequest, Tier, Verdict};
use mnem_service::{ChatVerifier, ChatVerifierConfig, Memory};
use mnem_sqlite::SqliteStore;
use mnem_store::{EvidenceStore, GraphView};
use serde_json::json;

/// A chat completion whose message is the given judgement.
fn answer(verdict: &str, confidence: f64) -> String {
    let content = json!({"verdict": verdict, "confidence": confidence, "rationale": "stand-in"});
    json!({"choices": [{"message": {"role": "assistant", "content": content.to_string()}}]})
        .to_string()
}

fn request(text: &str) -> RememberRequest {
    serde_json::from_value(json!({
        "evidence": [{"content": text}],
        "relationships": [{
            "subject": {"name": "Mark"}, "predicate": "works_on",
            "object": {"entity": {"name": "Atlas"}},
            "supports": [{"evidence": 0, "start": 0, "end": text.chars().count()}]
        }]
    }))
    .unwrap()
}

async fn memory_with_verifier(url: String, threshold: f64) -> Memory<SqliteStore> {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let verifier = ChatVerifier::new(ChatVerifierConfig {
        base_url: url,
        model: "judge".into(),
        api_key: None,
    });
    Memory::open(store, None)
        .await
        .unwrap()
        .with_verifier(Arc::new(verifier), threshold)
}

#[tokio::test]
async fn stand_in_llm_confident_entailment_validates_and_is_recorded() {
    let (url, bodies) = stand_in_endpoint(answer("entailed", 0.9));
    let memory = memory_with_verifier(url, 0.7).await;
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request("Mark works on Atlas"))
        .await
        .unwrap();
    let r = &outcome.relationships[0];
    assert_eq!(r.tier, Tier::ValidatedClaim);
    let trace = memory
        .trace(&actor, r.relationship_id, GraphView::default())
        .await
        .unwrap();
    let verifiers: Vec<&str> = trace
        .verification_events
        .iter()
        .map(|e| e.verifier.as_str())
        .collect();
    assert_eq!(verifiers, ["deterministic-1", "chat:judge"]);
    let sent: serde_json::Value = serde_json::from_str(&bodies.lock().unwrap()[0]).unwrap();
    assert_eq!(sent["model"], "judge");
    let prompt = sent["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains("Claim: Mark works on Atlas"), "{prompt}");
}

#[tokio::test]
async fn stand_in_llm_below_threshold_leaves_a_candidate() {
    let (url, _) = stand_in_endpoint(answer("entailed", 0.6));
    let memory = memory_with_verifier(url, 0.7).await;
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request("Mark works on Atlas"))
        .await
        .unwrap();
    assert_eq!(outcome.relationships[0].tier, Tier::Candidate);
    assert_eq!(outcome.relationships[0].verdict, Verdict::Insufficient);
}

#[tokio::test]
async fn stand_in_llm_confident_contradiction_rejects() {
    let (url, _) = stand_in_endpoint(answer("contradicted", 0.95));
    let memory = memory_with_verifier(url, 0.7).await;
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request("Mark works on Atlas"))
        .await
        .unwrap();
    assert_eq!(
        outcome.relationships[0].status,
        RelationshipStatus::Rejected
    );
}

#[tokio::test]
async fn stand_in_llm_is_not_asked_when_the_spans_do_not_check_out() {
    let (url, bodies) = stand_in_endpoint(answer("entailed", 1.0));
    let memory = memory_with_verifier(url, 0.7).await;
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request("Mark likes tea"))
        .await
        .unwrap();
    assert_eq!(outcome.relationships[0].tier, Tier::Candidate);
    assert!(bodies.lock().unwrap().is_empty(), "no model call");
}

#[tokio::test]
async fn unreachable_llm_verifier_leaves_a_candidate_and_says_why() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let memory = memory_with_verifier(format!("http://127.0.0.1:{port}"), 0.7).await;
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request("Mark works on Atlas"))
        .await
        .unwrap();
    let r = &outcome.relationships[0];
    assert_eq!(r.tier, Tier::Candidate);
    let trace = memory
        .trace(&actor, r.relationship_id, GraphView::default())
        .await
        .unwrap();
    let last = trace.verification_events.last().unwrap();
    assert!(
        last.rationale.starts_with("verifier unavailable"),
        "{}",
        last.rationale
    );
}
