//! Dreaming (CONTRACT §5): hypotheses live in their own
//! table and response field, never move results or paths, never cross teams, go stale
//! when a source stops being active, and are confirmed only by a proof written as
//! evidence.

use mnem_core::graph::{HypothesisStatus, ModelReading, RememberRequest};
use mnem_core::{Actor, HypothesisId, RecallQuery};
use mnem_service::{HypothesisDecision, ServiceError};
use mnem_store::{HypothesisFilter, StoreError};
use serde_json::{json, Value};

use crate::graph_cases::write;
use crate::helpers::{an_optional_branch_fails_quietly, ids, remember_all, Backend, Fixture};

/// One team evidence item stating `text` and the claim it proves.
pub(crate) fn claim(
    text: &str,
    subject: (&str, &str),
    predicate: &str,
    object: (&str, &str),
) -> Value {
    json!({
        "evidence": [{"content": text, "source": "standup"}],
        "relationships": [{
            "subject": {"name": subject.0, "kind": subject.1},
            "predicate": predicate,
            "object": {"entity": {"name": object.0, "kind": object.1}},
            "supports": [{"evidence": 0, "start": 0, "end": text.chars().count()}]
        }]
    })
}

/// The two remember requests "Mark works on Atlas" and "Atlas uses Redis": together,
/// one hypothesis, "Mark may depend on Redis".
pub fn chain_requests() -> [Value; 2] {
    [
        claim(
            "Mark works on Atlas",
            ("Mark", "person"),
            "works_on",
            ("Atlas", "project"),
        ),
        claim(
            "Atlas uses Redis",
            ("Atlas", "project"),
            "uses",
            ("Redis", "product"),
        ),
    ]
}

/// Writes [`chain_requests`]; returns the evidence id proving the second claim.
async fn chain<S: Backend>(fx: &Fixture<S>, actor: &Actor) -> mnem_core::EvidenceId {
    let [works_on, uses] = chain_requests();
    write(fx, actor, works_on).await;
    write(fx, actor, uses).await.evidence[0].evidence_id
}

/// The optional hypotheses lookup failing — `break_lookup` makes it fail the backend's own
/// way — leaves recall answering the same results without hypotheses, and the failure
/// recorded as a degraded `hypotheses` branch. Run by each backend's own tests, since
/// breaking a store takes its own tools.
pub async fn a_failing_hypothesis_lookup_is_omitted_and_recorded<S>(
    memory: &mnem_service::Memory<S>,
    actor: &Actor,
    break_lookup: impl std::future::Future<Output = ()>,
) where
    S: mnem_store::GraphStore + mnem_store::SearchIndex,
{
    remember_all(memory, actor, chain_requests()).await;
    assert_eq!(memory.dream(actor, 10).await.expect("dream").added, 1);
    an_optional_branch_fails_quietly(
        memory,
        actor,
        (asking("Mark Redis"), "hypotheses"),
        |recall| recall.related_hypotheses.as_ref().map(Vec::len),
        break_lookup,
    )
    .await;
}

fn asking(text: &str) -> RecallQuery {
    let mut query = RecallQuery::text(text);
    query.include_hypotheses = true;
    query
}

pub async fn a_dream_proposes_from_two_claims_and_never_moves_results<S: Backend>(fx: Fixture<S>) {
    chain(&fx, &fx.actor).await;
    let first = fx.memory.dream(&fx.actor, 100).await.expect("dream");
    assert_eq!(first.added, 1);
    let again = fx.memory.dream(&fx.actor, 100).await.expect("dream again");
    assert_eq!(again.proposed, 1);
    assert_eq!(again.added, 0, "a pass keeps each proposal once");
    let listed = fx
        .memory
        .hypotheses(&fx.actor, vec![HypothesisStatus::Open], 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert!(
        listed[0].statement.starts_with("Mark may depend on Redis"),
        "{}",
        listed[0].statement
    );

    let plain = fx
        .memory
        .recall(&fx.actor, RecallQuery::text("Mark Redis"))
        .await
        .expect("recall");
    let with = fx
        .memory
        .recall(&fx.actor, asking("Mark Redis"))
        .await
        .expect("recall");
    assert_eq!(plain.related_hypotheses, None, "not asked, not returned");
    let related = with.related_hypotheses.clone().expect("asked");
    assert_eq!(related.len(), 1);
    assert_eq!(related[0].hypothesis_id, listed[0].hypothesis_id);
    assert_eq!(
        ids(&with.hits),
        ids(&plain.hits),
        "results are the same with or without"
    );
    let scores = |r: &mnem_service::Recall| r.hits.iter().map(|h| h.score).collect::<Vec<_>>();
    assert_eq!(
        scores(&with),
        scores(&plain),
        "no tier weight, no score change"
    );
    assert_eq!(with.discovery_paths, plain.discovery_paths);
    let public = mnem_core::PublicRecall::new(&with.hits, with.discovery_paths.clone())
        .with_hypotheses(Some(&related));
    let text = serde_json::to_value(&public).expect("json");
    assert_eq!(text["related_hypotheses"][0]["status"], "open");
    assert!(text["results"]
        .as_array()
        .expect("results")
        .iter()
        .all(|r| !r["context"]
            .as_str()
            .unwrap_or_default()
            .contains("may depend on")));
}

pub async fn a_hypothesis_goes_stale_when_a_source_stops_being_active<S: Backend>(fx: Fixture<S>) {
    let proof = chain(&fx, &fx.actor).await;
    fx.memory.dream(&fx.actor, 100).await.expect("dream");
    fx.memory
        .retract_evidence(&fx.actor, vec![proof], Some("Atlas moved off Redis".into()))
        .await
        .expect("retract");
    let listed = fx
        .memory
        .hypotheses(&fx.actor, Vec::new(), 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].status,
        HypothesisStatus::Stale,
        "reads stale at once"
    );
    let with = fx
        .memory
        .recall(&fx.actor, asking("Mark Atlas"))
        .await
        .expect("recall");
    assert_eq!(
        with.related_hypotheses,
        Some(Vec::new()),
        "a stale hypothesis is not shown"
    );
    let pass = fx.memory.dream(&fx.actor, 100).await.expect("dream");
    assert_eq!(pass.staled, 1, "the next pass writes it down");
    assert_eq!(pass.proposed, 0);
}

pub async fn hypotheses_never_cross_teams<S: Backend>(fx: Fixture<S>) {
    chain(&fx, &fx.actor).await;
    fx.memory.dream(&fx.actor, 100).await.expect("dream");
    let mine = fx
        .memory
        .hypotheses(&fx.actor, Vec::new(), 10)
        .await
        .expect("list");
    let other = fx.store.open_team("other-team").await.expect("team");
    // The same names in another team: its own entities, nothing to chain with ours.
    let [works_on, _] = chain_requests();
    write(&fx, &other, works_on).await;
    let pass = fx.memory.dream(&other, 100).await.expect("dream");
    assert_eq!(pass.proposed, 0);
    let theirs = fx
        .memory
        .hypotheses(&other, Vec::new(), 10)
        .await
        .expect("list");
    assert!(theirs.is_empty());
    let err = fx
        .memory
        .hypothesis(&other, mine[0].hypothesis_id)
        .await
        .expect_err("another team's id");
    assert!(matches!(
        err,
        ServiceError::Store(StoreError::HypothesisNotFound { .. })
    ));
    let recall = fx
        .memory
        .recall(&other, asking("Mark Atlas Redis"))
        .await
        .expect("recall");
    assert_eq!(recall.related_hypotheses, Some(Vec::new()));
}

/// The optional model's reading is written once beside the rule's statement: a second
/// reading (another server's) changes nothing, another team cannot write one, and a read
/// hypothesis is no longer listed as unread.
pub async fn a_model_reading_is_written_once_beside_the_statement<S: Backend>(fx: Fixture<S>) {
    chain(&fx, &fx.actor).await;
    fx.memory.dream(&fx.actor, 100).await.expect("dream");
    let unread = |actor: Actor| {
        let store = &fx.store;
        async move {
            let filter = HypothesisFilter {
                unread_by_model: true,
                limit: 10,
                ..HypothesisFilter::default()
            };
            store.hypotheses(&actor, filter).await.expect("unread")
        }
    };
    let before = unread(fx.actor).await;
    assert_eq!(before.len(), 1);
    assert_eq!(before[0].model_reading, None);
    let id = before[0].hypothesis_id;
    let reading = |model: &str, plausibility: f64| ModelReading {
        model: model.into(),
        read_at: fx.clock.peek(),
        statement: Some(format!("{model} thinks Mark relies on Redis")),
        plausibility: Some(plausibility),
    };
    let other = fx.store.open_team("other-team").await.expect("team");
    let written = |actor: Actor, r: ModelReading| {
        let store = &fx.store;
        async move { store.record_model_reading(&actor, id, r).await }
    };
    assert!(!written(other, reading("chat:theirs", 0.1))
        .await
        .expect("other team"));
    assert!(written(fx.actor, reading("chat:first", 0.75))
        .await
        .expect("first"));
    assert!(!written(fx.actor, reading("chat:second", 0.2))
        .await
        .expect("second"));
    assert!(unread(fx.actor).await.is_empty());
    let stored = fx.memory.hypothesis(&fx.actor, id).await.expect("get");
    assert_eq!(
        stored.statement, before[0].statement,
        "the rule's statement stays"
    );
    let kept = stored.model_reading.expect("a reading");
    assert_eq!(kept.model, "chat:first");
    assert_eq!(
        kept.statement.as_deref(),
        Some("chat:first thinks Mark relies on Redis")
    );
    assert_eq!(kept.plausibility, Some(0.75));
    assert_eq!(
        stored.status,
        HypothesisStatus::Open,
        "a reading never resolves"
    );
}

pub async fn a_claim_only_private_notes_prove_is_never_dreamed_from<S: Backend>(fx: Fixture<S>) {
    let mut private = claim(
        "Mark works on Atlas",
        ("Mark", "person"),
        "works_on",
        ("Atlas", "project"),
    );
    private["evidence"][0]["space"] = json!("private");
    write(&fx, &fx.actor, private).await;
    write(
        &fx,
        &fx.actor,
        claim(
            "Atlas uses Redis",
            ("Atlas", "project"),
            "uses",
            ("Redis", "product"),
        ),
    )
    .await;
    let pass = fx.memory.dream(&fx.actor, 100).await.expect("dream");
    assert_eq!(pass.relationships, 1, "only the team-proven claim is read");
    assert_eq!(pass.proposed, 0);
}

pub async fn confirming_takes_a_proof_and_a_resolution_is_final<S: Backend>(fx: Fixture<S>) {
    chain(&fx, &fx.actor).await;
    fx.memory.dream(&fx.actor, 100).await.expect("dream");
    let id: HypothesisId = fx
        .memory
        .hypotheses(&fx.actor, Vec::new(), 10)
        .await
        .expect("list")[0]
        .hypothesis_id;
    let empty: RememberRequest =
        serde_json::from_value(json!({"evidence": [{"content": "Mark said so"}]})).expect("json");
    let err = fx
        .memory
        .resolve_hypothesis(
            &fx.actor,
            id,
            HypothesisDecision::Confirm {
                reason: "asked Mark".into(),
                proof: empty,
            },
        )
        .await
        .expect_err("a proof needs a relationship");
    assert!(
        matches!(err, ServiceError::Store(StoreError::Invalid(ref e)) if e.field == "proof"),
        "{err}"
    );
    assert_eq!(
        fx.memory
            .hypothesis(&fx.actor, id)
            .await
            .expect("read")
            .status,
        HypothesisStatus::Open
    );
    let proof: RememberRequest = serde_json::from_value(claim(
        "Mark depends on Redis for the Atlas cache",
        ("Mark", "person"),
        "depends_on",
        ("Redis", "product"),
    ))
    .expect("json");
    let resolved = fx
        .memory
        .resolve_hypothesis(
            &fx.actor,
            id,
            HypothesisDecision::Confirm {
                reason: "asked Mark".into(),
                proof,
            },
        )
        .await
        .expect("confirm");
    assert_eq!(resolved.hypothesis.status, HypothesisStatus::Confirmed);
    let written = resolved.proof.expect("the proof's outcome");
    assert_eq!(
        resolved.hypothesis.confirmed_by,
        vec![written.relationships[0].relationship_id]
    );
    let again = fx
        .memory
        .resolve_hypothesis(
            &fx.actor,
            id,
            HypothesisDecision::Reject {
                reason: "no".into(),
            },
        )
        .await
        .expect_err("already confirmed");
    assert!(matches!(
        again,
        ServiceError::Store(StoreError::Conflict(_))
    ));
}

pub async fn a_write_queues_its_team_for_the_background_pass<S: Backend>(fx: Fixture<S>) {
    chain(&fx, &fx.actor).await;
    let other = fx.store.open_team("quiet-team").await.expect("team");
    assert_eq!(
        fx.memory.derive_changed(16, 100).await,
        1,
        "only the team that wrote"
    );
    let listed = fx
        .memory
        .hypotheses(&fx.actor, Vec::new(), 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        fx.memory.derive_changed(16, 100).await,
        0,
        "nothing changed since"
    );
    let theirs = fx
        .memory
        .hypotheses(&other, Vec::new(), 10)
        .await
        .expect("list");
    assert!(theirs.is_empty());
}
