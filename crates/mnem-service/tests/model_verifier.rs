//! The optional model verifier against a local stand-in for an OpenAI-compatible chat
//! endpoint (a remote LLM cannot exist here; every test says so in its name).

mod common;

use std::sync::Arc;

use common::{clock, stand_in_endpoint};
use mnem_core::graph::{
    RelationshipOutcome, RelationshipStatus, RememberRequest, Tier, Verdict,
    DEFAULT_MODEL_CONFIDENCE,
};
use mnem_core::Actor;
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

/// Remembers the claim "Mark works on Atlas" cited on `text`, with the model verifier
/// at `url` (threshold 0.7); returns the memory, the team's actor and the claim's outcome.
async fn claim_judged_at(
    url: String,
    text: &str,
) -> (Memory<SqliteStore>, Actor, RelationshipOutcome) {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let verifier = ChatVerifier::new(ChatVerifierConfig {
        base_url: url,
        model: "judge".into(),
        api_key: None,
    });
    let memory = Memory::open(store, None)
        .await
        .unwrap()
        .with_verifier(Arc::new(verifier), DEFAULT_MODEL_CONFIDENCE);
    let actor = memory.store().open_team("t").await.unwrap();
    let outcome = memory
        .remember_request(&actor, request(text))
        .await
        .unwrap();
    (memory, actor, outcome.relationships[0].clone())
}

#[tokio::test]
async fn stand_in_llm_confident_entailment_validates_and_is_recorded() {
    let (url, bodies) = stand_in_endpoint(answer("entailed", 0.9));
    let (memory, actor, r) = claim_judged_at(url, "Mark works on Atlas").await;
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
    let (_, _, r) = claim_judged_at(url, "Mark works on Atlas").await;
    assert_eq!(r.tier, Tier::Candidate);
    assert_eq!(r.verdict, Verdict::Insufficient);
}

#[tokio::test]
async fn stand_in_llm_confident_contradiction_rejects() {
    let (url, _) = stand_in_endpoint(answer("contradicted", 0.95));
    let (_, _, r) = claim_judged_at(url, "Mark works on Atlas").await;
    assert_eq!(r.status, RelationshipStatus::Rejected);
}

#[tokio::test]
async fn stand_in_llm_is_not_asked_when_the_spans_do_not_check_out() {
    let (url, bodies) = stand_in_endpoint(answer("entailed", 1.0));
    let (_, _, r) = claim_judged_at(url, "Mark likes tea").await;
    assert_eq!(r.tier, Tier::Candidate);
    assert!(bodies.lock().unwrap().is_empty(), "no model call");
}

#[tokio::test]
async fn unreachable_llm_verifier_leaves_a_candidate_and_says_why() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let (memory, actor, r) = claim_judged_at(url, "Mark works on Atlas").await;
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
