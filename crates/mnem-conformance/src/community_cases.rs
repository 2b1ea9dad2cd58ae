//! Communities (CONTRACT §5: "optional Hypotheses and communities never replace direct
//! evidence results"): computed from the team's eligible relationships only, versioned,
//! kept apart from evidence, shown in recall only in result slots the results left
//! unused, never across teams.

use mnem_core::graph::Community;
use mnem_core::{Actor, EvidenceId, RecallQuery};
use mnem_service::{CommunityReport, Recall};
use serde_json::{json, Value};

use crate::dream_cases::{chain_requests, claim};
use crate::graph_cases::write;
use crate::helpers::{an_optional_branch_fails_quietly, ids, remember_all, Backend, Fixture};

/// The Atlas team: four claims tying Mark, Lena, Atlas and Redis together (dreaming's
/// chain and two more).
fn atlas_claims() -> Vec<Value> {
    let mut claims = chain_requests().to_vec();
    claims.push(claim(
        "Lena works on Atlas",
        ("Lena", "person"),
        "works_on",
        ("Atlas", "project"),
    ));
    claims.push(claim(
        "Lena maintains Redis",
        ("Lena", "person"),
        "maintains",
        ("Redis", "product"),
    ));
    claims
}

/// The Borealis team: a triangle of Ana, Borealis and Kafka, nothing shared with Atlas.
fn borealis_claims() -> Vec<Value> {
    vec![
        claim(
            "Ana leads Borealis",
            ("Ana", "person"),
            "leads",
            ("Borealis", "project"),
        ),
        claim(
            "Borealis uses Kafka",
            ("Borealis", "project"),
            "uses",
            ("Kafka", "product"),
        ),
        claim(
            "Ana maintains Kafka",
            ("Ana", "person"),
            "maintains",
            ("Kafka", "product"),
        ),
    ]
}

/// Writes `claims`; returns the evidence id of each.
async fn write_all<S: Backend>(
    fx: &Fixture<S>,
    actor: &Actor,
    claims: Vec<Value>,
) -> Vec<EvidenceId> {
    let mut written = Vec::new();
    for request in claims {
        written.push(write(fx, actor, request).await.evidence[0].evidence_id);
    }
    written
}

fn names(community: &Community) -> Vec<&str> {
    community
        .top_entities
        .iter()
        .map(|e| e.name.as_str())
        .collect()
}

fn asking(text: &str, limit: usize) -> RecallQuery {
    let mut query = RecallQuery::text(text);
    query.limit = limit;
    query.include_communities = true;
    query
}

async fn compute<S: Backend>(fx: &Fixture<S>, actor: &Actor) -> CommunityReport {
    fx.memory
        .compute_communities(actor)
        .await
        .expect("compute communities")
}

pub async fn summaries_fill_only_slots_the_results_left<S: Backend>(fx: Fixture<S>) {
    write_all(&fx, &fx.actor, atlas_claims()).await;
    write_all(&fx, &fx.actor, borealis_claims()).await;
    let report = compute(&fx, &fx.actor).await;
    assert_eq!(report.communities, 2);
    let plain = fx
        .memory
        .recall(&fx.actor, RecallQuery::text("Atlas Redis"))
        .await
        .expect("recall");
    assert!(!plain.hits.is_empty(), "the query matches evidence");
    let limit = plain.hits.len() + 2;
    let with = fx
        .memory
        .recall(&fx.actor, asking("Atlas Redis", limit))
        .await
        .expect("recall");
    assert_eq!(plain.community_summaries, None, "not asked, not returned");
    assert_eq!(ids(&with.hits), ids(&plain.hits), "the same results");
    let scores = |r: &Recall| r.hits.iter().map(|h| h.score).collect::<Vec<_>>();
    assert_eq!(scores(&with), scores(&plain), "the same scores");
    assert_eq!(with.discovery_paths, plain.discovery_paths);
    let shown = with.community_summaries.clone().expect("asked");
    assert!(
        !shown.is_empty(),
        "a free slot, a community near the results"
    );
    assert!(shown.len() <= limit - with.hits.len(), "only free slots");
    assert!(
        names(&shown[0]).contains(&"Atlas"),
        "{:?}",
        names(&shown[0])
    );
    assert!(shown[0].matched_entities > 0);
    let public = serde_json::to_value(with.public()).expect("json");
    assert_eq!(
        public["community_summaries"][0]["kind"],
        "community_summary"
    );
    assert_eq!(
        public["results"].as_array().map(Vec::len),
        Some(with.hits.len()),
        "summaries are not results"
    );

    let full = fx
        .memory
        .recall(&fx.actor, asking("Atlas Redis", plain.hits.len()))
        .await
        .expect("recall");
    assert_eq!(ids(&full.hits), ids(&plain.hits));
    assert_eq!(
        full.community_summaries,
        Some(Vec::new()),
        "no free slot, no summary"
    );
    let mut tight = asking("Atlas Redis", limit);
    tight.context_bytes = plain.hits.iter().map(|h| h.bytes()).sum();
    let no_bytes = fx.memory.recall(&fx.actor, tight).await.expect("recall");
    assert_eq!(ids(&no_bytes.hits), ids(&plain.hits));
    assert_eq!(
        no_bytes.community_summaries,
        Some(Vec::new()),
        "no bytes left, no summary"
    );
}

pub async fn communities_are_versioned_and_follow_the_graph<S: Backend>(fx: Fixture<S>) {
    write_all(&fx, &fx.actor, atlas_claims()).await;
    let first = compute(&fx, &fx.actor).await;
    assert_eq!(first.version, 1);
    assert!(first.changed);
    assert_eq!(first.communities, 1);
    let listed = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(
        listed[0].summary,
        "Atlas, Lena, Redis and Mark, linked by 4 relationships, mostly works_on (2), \
         maintains (1), uses (1)."
    );
    let again = compute(&fx, &fx.actor).await;
    assert_eq!(again.version, 1, "nothing changed, the version stays");
    assert!(!again.changed);

    let borealis = write_all(&fx, &fx.actor, borealis_claims()).await;
    let second = compute(&fx, &fx.actor).await;
    assert_eq!(second.version, 2);
    assert_eq!(second.communities, 2);
    let listed = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(listed.len(), 2);
    assert!(
        listed.iter().all(|c| c.version == 2),
        "only the latest version"
    );
    assert!(listed
        .iter()
        .any(|c| names(c).contains(&"Borealis") && c.entity_count == 3));

    // Two of Borealis's three claims lose their evidence: a pair is not a community.
    fx.memory
        .retract_evidence(&fx.actor, borealis[1..].to_vec(), Some("wrong team".into()))
        .await
        .expect("retract");
    let third = compute(&fx, &fx.actor).await;
    assert_eq!(third.version, 3);
    let listed = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert!(names(&listed[0]).contains(&"Atlas"));
    assert!(listed
        .iter()
        .all(|c| !c.summary.contains("Borealis") && !c.summary.contains("Kafka")));
}

pub async fn communities_never_cross_teams<S: Backend>(fx: Fixture<S>) {
    write_all(&fx, &fx.actor, atlas_claims()).await;
    compute(&fx, &fx.actor).await;
    let mine = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(mine.len(), 1);
    let other = fx.store.open_team("other-team").await.expect("team");
    // The same words in another team, with no relationships: nothing to cluster.
    fx.memory
        .remember(&other, mnem_core::NewEvidence::new("Atlas uses Redis"))
        .await
        .expect("remember");
    let theirs = compute(&fx, &other).await;
    assert_eq!(theirs.communities, 0);
    assert_eq!(
        theirs.relationships, 0,
        "another team's relationships are not read"
    );
    let listed = fx.memory.communities(&other, 10).await.expect("list");
    assert!(listed.is_empty());
    let recall = fx
        .memory
        .recall(&other, asking("Atlas Redis", 10))
        .await
        .expect("recall");
    assert_eq!(recall.hits.len(), 1, "their own item");
    assert_eq!(recall.community_summaries, Some(Vec::new()));
    let expanded = fx
        .memory
        .recall(&other, {
            let mut query = asking("Atlas", 10);
            query.expand_from_entity_ids =
                mine[0].top_entities.iter().map(|e| e.entity_id).collect();
            query
        })
        .await
        .expect("recall");
    assert_eq!(
        expanded.community_summaries,
        Some(Vec::new()),
        "another team's entity ids find nothing"
    );
}

pub async fn a_claim_only_private_notes_prove_is_never_clustered<S: Backend>(fx: Fixture<S>) {
    write_all(&fx, &fx.actor, atlas_claims()).await;
    let mut private = claim(
        "Mark works on Zephyr",
        ("Mark", "person"),
        "works_on",
        ("Zephyr", "project"),
    );
    private["evidence"][0]["space"] = json!("private");
    let mut private_link = claim(
        "Zephyr uses Redis",
        ("Zephyr", "project"),
        "uses",
        ("Redis", "product"),
    );
    private_link["evidence"][0]["space"] = json!("private");
    write(&fx, &fx.actor, private).await;
    write(&fx, &fx.actor, private_link).await;
    let report = compute(&fx, &fx.actor).await;
    assert_eq!(
        report.relationships, 4,
        "only the team-proven claims are read"
    );
    let listed = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].entity_count, 4);
    assert!(!names(&listed[0]).contains(&"Zephyr"));
    assert!(!listed[0].summary.contains("Zephyr"));
}

pub async fn a_write_queues_its_team_for_the_community_pass<S: Backend>(fx: Fixture<S>) {
    write_all(&fx, &fx.actor, atlas_claims()).await;
    assert_eq!(fx.memory.derive_changed(16, 100).await, 1);
    let listed = fx.memory.communities(&fx.actor, 10).await.expect("list");
    assert_eq!(listed.len(), 1, "the background pass computed them");
    assert_eq!(listed[0].version, 1);
}

/// The optional community lookup failing — `break_lookup` makes it fail the backend's
/// own way — leaves recall answering the same results without summaries, and the
/// failure recorded as a degraded `communities` branch. Run by each backend's own tests,
/// since breaking a store takes its own tools.
pub async fn a_failing_community_lookup_is_omitted_and_recorded<S>(
    memory: &mnem_service::Memory<S>,
    actor: &Actor,
    break_lookup: impl std::future::Future<Output = ()>,
) where
    S: mnem_store::GraphStore + mnem_store::SearchIndex,
{
    remember_all(memory, actor, atlas_claims()).await;
    let report = memory.compute_communities(actor).await.expect("compute");
    assert_eq!(report.communities, 1);
    an_optional_branch_fails_quietly(
        memory,
        actor,
        (asking("Atlas Redis", 10), "communities"),
        |recall| recall.community_summaries.as_ref().map(Vec::len),
        break_lookup,
    )
    .await;
}
