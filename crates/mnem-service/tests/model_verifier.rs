//! The optional model verifier against a local stand-in for an OpenAI-compatible chat
//! endpoint (a remote LLM cannot exist here; every test says so in its name).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{clock, read_request_body, respond_json, stand_in_endpoint};
use mnem_core::graph::{
    RelationshipOutcome, RelationshipStatus, RememberRequest, Tier, Verdict,
    DEFAULT_MODEL_CONFIDENCE,
};
use mnem_core::Actor;
use mnem_service::{ChatConfig, ChatVerifier, Memory};
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

/// A fresh store with the model verifier at `url` (threshold 0.7), and a team's actor.
async fn judged_by(url: String) -> (Memory<SqliteStore>, Actor) {
    let store = SqliteStore::open_in_memory(clock()).unwrap();
    let verifier = ChatVerifier::new(ChatConfig {
        base_url: url,
        model: "judge".into(),
        api_key: None,
    });
    let memory = Memory::open(store, None)
        .await
        .unwrap()
        .with_verifier(Arc::new(verifier), DEFAULT_MODEL_CONFIDENCE);
    let actor = memory.store().open_team("t").await.unwrap();
    (memory, actor)
}

/// Remembers the claim "Mark works on Atlas" cited on `text`, with the model verifier
/// at `url` (threshold 0.7); returns the memory, the team's actor and the claim's outcome.
async fn claim_judged_at(
    url: String,
    text: &str,
) -> (Memory<SqliteStore>, Actor, RelationshipOutcome) {
    let (memory, actor) = judged_by(url).await;
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

/// A stand-in that serves each request on its own thread, holds it for `hold` so that
/// requests made together overlap, contradicts claims about Orion and entails the rest;
/// returns its URL and the most requests it ever had in flight at once.
fn overlapping_stand_in(hold: std::time::Duration) -> (String, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let seen = Arc::clone(&most);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
            std::thread::spawn(move || {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                let body = read_request_body(&stream);
                std::thread::sleep(hold);
                let response = if body.contains("Orion") {
                    answer("contradicted", 0.95)
                } else {
                    answer("entailed", 0.9)
                };
                in_flight.fetch_sub(1, Ordering::SeqCst);
                respond_json(&mut stream, &response);
            });
        }
    });
    (url, seen)
}

#[tokio::test]
async fn stand_in_llm_judges_several_claims_side_by_side_and_keeps_their_order() {
    let (url, most_in_flight) = overlapping_stand_in(std::time::Duration::from_millis(200));
    let (memory, actor) = judged_by(url).await;
    let projects = [
        "Atlas", "Vega", "Orion", "Lyra", "Orion", "Draco", "Hydra", "Cetus", "Ara", "Grus",
    ];
    let evidence: Vec<_> = projects
        .iter()
        .map(|p| json!({"content": format!("Mark works on {p}")}))
        .collect();
    let relationships: Vec<_> = projects
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({
                "subject": {"name": "Mark"}, "predicate": "works_on",
                "object": {"entity": {"name": p}},
                "supports": [{"evidence": i, "start": 0, "end": "Mark works on ".len() + p.chars().count()}]
            })
        })
        .collect();
    let request: RememberRequest =
        serde_json::from_value(json!({"evidence": evidence, "relationships": relationships}))
            .unwrap();
    let outcome = memory.remember_request(&actor, request).await.unwrap();
    let statuses: Vec<RelationshipStatus> =
        outcome.relationships.iter().map(|r| r.status).collect();
    let expected: Vec<RelationshipStatus> = projects
        .iter()
        .map(|p| match *p {
            "Orion" => RelationshipStatus::Rejected,
            _ => RelationshipStatus::Active,
        })
        .collect();
    assert_eq!(statuses, expected);
    let most = most_in_flight.load(Ordering::SeqCst);
    assert!(most > 1, "the model calls ran one at a time");
    assert!(most <= 8, "{most} model calls in flight, above the bound");
}
