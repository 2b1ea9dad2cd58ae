//! Contract cases for the vector branch, run with the real built-in model (loaded once
//! per test process): a backend's vector branch must apply the same eligibility as its
//! lexical branch and use only vectors made under the active embedding contract.

use std::sync::{Arc, OnceLock};

use mnem_core::{EmbeddingContract, NewEvidence, RecallQuery};
use mnem_embed::{EmbedError, Embedder, MiniLm};
use mnem_service::{Memory, ServiceError};
use mnem_store::StoreError;

use crate::helpers::{want_empty, want_order, want_set, Backend, Fixture};

/// The built-in model, shared by every case in the process.
pub fn builtin() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<MiniLm>> = OnceLock::new();
    MODEL
        .get_or_init(|| Arc::new(MiniLm::builtin().expect("built-in model loads")))
        .clone()
}

/// The same model presented under another contract version: a stand-in for "a different
/// embedding model", which is what a contract change means to the store.
struct Relabelled {
    inner: Arc<dyn Embedder>,
    contract: EmbeddingContract,
}

impl Embedder for Relabelled {
    fn contract(&self) -> &EmbeddingContract {
        &self.contract
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }
}

fn relabelled() -> Arc<dyn Embedder> {
    let inner = builtin();
    let mut contract = inner.contract().clone();
    contract.version += 1;
    Arc::new(Relabelled { inner, contract })
}

const UNRELATED: &[&str] = &[
    "quarterly tax filing deadline moved",
    "the database migration finished overnight",
    "buy more printer paper",
];

pub async fn paraphrase_without_shared_words_is_found_first<S: Backend>(fx: Fixture<S>) {
    for text in UNRELATED {
        fx.remember(text).await;
    }
    let cat = fx.remember("The cat sits outside").await;
    fx.embed_pending().await;
    let hits = fx
        .recall(RecallQuery::text("feline resting outdoors"))
        .await;
    want_order(&hits[..1], &[&cat], "the paraphrase ranks first");
}

pub async fn writes_are_searchable_before_their_vectors_exist<S: Backend>(fx: Fixture<S>) {
    let note = fx.remember("the espresso machine needs descaling").await;
    let fresh = fx
        .store
        .freshness(fx.clock.peek())
        .await
        .expect("freshness");
    assert_eq!(fresh.pending_document_count, 1, "queued, not embedded");
    want_set(
        &fx.recall(RecallQuery::text("espresso")).await,
        &[&note],
        "full-text finds it before its vector exists",
    );
    fx.embed_pending().await;
    let fresh = fx
        .store
        .freshness(fx.clock.peek())
        .await
        .expect("freshness");
    assert_eq!(fresh.pending_document_count, 0);
    assert_eq!(fresh.current_document_count, 1);
}

pub async fn vector_branch_applies_every_eligibility_rule<S: Backend>(fx: Fixture<S>) {
    let other = fx.store.open_team("other-team").await.expect("team");
    let retracted = fx.remember("The cat sits outside").await;
    let mut decision = NewEvidence::new("The kitten naps on the porch");
    decision.kind = Some("decision".into());
    let kitten = fx.remember_with(decision).await;
    fx.store
        .remember(&other, NewEvidence::new("A feline rests outdoors"))
        .await
        .expect("remember");
    fx.embed_pending().await;
    fx.store
        .retract(&fx.actor, retracted.id, None)
        .await
        .expect("retract");
    let query = RecallQuery::text("feline resting outdoors");
    want_set(
        &fx.recall(query.clone()).await,
        &[&kitten],
        "no retracted or other-team evidence through the vector branch",
    );
    want_empty(
        &fx.recall(RecallQuery {
            kinds: vec!["fact".into()],
            ..query
        })
        .await,
        "selectors apply to the vector branch",
    );
}

pub async fn vectors_under_another_contract_are_never_used<S: Backend>(fx: Fixture<S>) {
    let cat = fx.remember("The cat sits outside").await;
    fx.embed_pending().await;
    let refused = Memory::open(fx.store.clone(), Some(relabelled())).await;
    assert!(
        matches!(
            refused,
            Err(ServiceError::Store(StoreError::ContractMismatch { .. }))
        ),
        "switching contracts is refused until a reindex"
    );
    let switched = Memory::unchecked(fx.store.clone(), Some(relabelled()));
    fx.store
        .reindex(switched.embedder().expect("embedder").contract())
        .await
        .expect("reindex");
    let query = RecallQuery::text("feline resting outdoors");
    let before = switched
        .recall(&fx.actor, query.clone())
        .await
        .expect("recall");
    want_empty(
        &before.hits,
        "old-contract vectors are not used after the switch",
    );
    switched.embed_pending().await.expect("re-embed");
    let after = switched.recall(&fx.actor, query).await.expect("recall");
    want_set(&after.hits, &[&cat], "re-embedded under the new contract");
}

/// Discovery by meaning: a question sharing no word with a claim still starts a path
/// from it (through the claim's and its entities' discovery documents), an unrelated one
/// does not — and neither puts anything into the evidence results.
pub async fn relationship_meaning_seeds_discovery_without_shared_words<S: Backend>(fx: Fixture<S>) {
    let request: mnem_core::graph::RememberRequest = serde_json::from_value(serde_json::json!({
        "evidence": [{"content": "Ana manages the billing service."}],
        "relationships": [{
            "subject": {"name": "Ana", "kind": "person"}, "predicate": "manages",
            "object": {"entity": {"name": "billing service", "kind": "product"}},
            "supports": [{"evidence": 0, "start": 0, "end": 32}]
        }]
    }))
    .expect("request");
    let outcome = fx
        .memory
        .remember_request(&fx.actor, request)
        .await
        .expect("remember");
    fx.embed_pending().await;
    let seen = vec![outcome.evidence[0].evidence_id];
    let ask = |text: &str| RecallQuery {
        known_evidence_ids: seen.clone(),
        ..RecallQuery::text(text)
    };
    let related = fx
        .memory
        .recall(&fx.actor, ask("who is responsible for invoicing"))
        .await;
    let related = related.expect("recall");
    want_empty(&related.hits, "discovery adds no results");
    let found: Vec<_> = related
        .discovery_paths
        .iter()
        .flat_map(|p| p.relationships.iter().map(|e| e.relationship_id))
        .collect();
    assert_eq!(found, vec![outcome.relationships[0].relationship_id]);
    let unrelated = fx
        .memory
        .recall(&fx.actor, ask("what is the weather"))
        .await;
    assert!(unrelated.expect("recall").discovery_paths.is_empty());
}
