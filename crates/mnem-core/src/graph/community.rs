//! Communities: clusters of entities the team's eligible relationships tie densely
//! together, found by the Leiden algorithm (modularity at resolution 0.5, fixed seed:
//! deterministic), each with a short deterministic summary (its most connected entities
//! and most frequent predicates). A community is derived, never evidence: a recall that asks for it shows
//! summaries only in result slots the direct ranking left unused, in their own field
//! ([`fill_unused_slots`]). Pure; the stores read the relationships and keep the result.

use std::collections::{BTreeMap, BTreeSet};

use leiden_rs::{GraphDataBuilder, Leiden, LeidenConfig, QualityType};
use serde::{Deserialize, Serialize};

use crate::graph::{dreamable, Relationship};
use crate::{CommunityId, EntityId, RelationshipId, Timestamp};

/// Names how communities are computed (algorithm, quality function, seed, resolution,
/// the eligibility and size rules below). Stored with every computation: a change here
/// is a new name, so stored communities say which rules made them.
pub const COMMUNITY_ALGORITHM: &str = "leiden-modularity-r0.5-seed7-v1";
/// A cluster of fewer entities is not kept: two entities are one relationship, which a
/// discovery path already shows.
pub const MIN_COMMUNITY_ENTITIES: usize = 3;
/// At most this many communities are kept per team (the largest).
pub const MAX_COMMUNITIES: usize = 1_000;
/// Entities and predicates a summary names.
pub const SUMMARY_ENTITIES: usize = 5;
pub const SUMMARY_PREDICATES: usize = 3;

const SEED: u64 = 7;
/// Modularity's resolution. At 1.0 a team's one small connected graph is always split
/// (the whole graph as one cluster scores exactly zero, so any split that scores above
/// zero wins) and the halves fall under [`MIN_COMMUNITY_ENTITIES`]: a team with four
/// linked entities would have no community at all. At 0.5 a connected cluster stays
/// whole unless it really is several dense groups with few links between them (two
/// cliques joined by one bridge still split — see the tests).
const RESOLUTION: f64 = 0.5;

/// The Leiden run could not complete (a graph the library refused).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("community detection failed: {0}")]
pub struct DetectionError(pub String);

/// An entity a summary names, with its id so a client can expand from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamedEntity {
    pub entity_id: EntityId,
    pub name: String,
}

/// A predicate and how many of the community's relationships use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PredicateCount {
    pub predicate: String,
    pub count: usize,
}

/// What a computation found: one cluster, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetectedCommunity {
    /// Every member entity, ascending.
    pub members: Vec<EntityId>,
    /// The eligible relationships between two members, ascending.
    pub relationships: Vec<RelationshipId>,
    pub top_entities: Vec<NamedEntity>,
    pub top_predicates: Vec<PredicateCount>,
    pub summary: String,
}

/// A stored community, as the latest computation for its team left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Community {
    pub community_id: CommunityId,
    /// The team's computation that produced it: grows by one each time the communities
    /// change.
    pub version: i64,
    pub algorithm: String,
    pub computed_at: Timestamp,
    pub entity_count: usize,
    pub relationship_count: usize,
    pub top_entities: Vec<NamedEntity>,
    pub top_predicates: Vec<PredicateCount>,
    pub summary: String,
    /// How many of the entities a lookup asked about are members (0 for a plain listing).
    pub matched_entities: usize,
}

/// The team's communities from `relationships` (the ineligible ones — see
/// [`dreamable`] — ignored): at most [`MAX_COMMUNITIES`] of at least
/// [`MIN_COMMUNITY_ENTITIES`] entities, largest first (then by smallest member id). The
/// same relationships, in any order, give the same communities.
pub fn detect_communities(
    relationships: &[Relationship],
) -> Result<Vec<DetectedCommunity>, DetectionError> {
    let mut eligible: Vec<&Relationship> = relationships
        .iter()
        .filter(|r| dreamable(r))
        .filter(|r| r.object.entity_id() != Some(r.subject.entity_id))
        .collect();
    eligible.sort_by_key(|r| r.relationship_id);
    eligible.dedup_by_key(|r| r.relationship_id);
    // Node numbers follow entity id order, so the input's order cannot change the run.
    let entities: BTreeSet<EntityId> = eligible
        .iter()
        .flat_map(|r| [Some(r.subject.entity_id), r.object.entity_id()])
        .flatten()
        .collect();
    let entities: Vec<EntityId> = entities.into_iter().collect();
    let node = |id: EntityId| entities.binary_search(&id).ok();
    // Parallel relationships between two entities add up to one heavier edge.
    let mut weights: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for r in &eligible {
        if let (Some(a), Some(b)) = (
            node(r.subject.entity_id),
            r.object.entity_id().and_then(node),
        ) {
            *weights.entry((a.min(b), a.max(b))).or_default() += 1.0;
        }
    }
    let membership = leiden_membership(entities.len(), &weights)?;

    let mut clusters: BTreeMap<usize, Vec<EntityId>> = BTreeMap::new();
    for (index, community) in membership.iter().enumerate() {
        clusters
            .entry(*community)
            .or_default()
            .push(entities[index]);
    }
    let mut found: Vec<DetectedCommunity> = clusters
        .into_values()
        .filter(|members| members.len() >= MIN_COMMUNITY_ENTITIES)
        .map(|members| summarise(members, &eligible))
        .collect();
    found.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then_with(|| a.members[0].cmp(&b.members[0]))
    });
    found.truncate(MAX_COMMUNITIES);
    Ok(found)
}

/// What a computation found, as one hash (the algorithm, every community's members,
/// relationships and summary): a pass whose fingerprint matches the stored one changes
/// nothing and keeps its version.
pub fn fingerprint(found: &[DetectedCommunity]) -> String {
    let mut text = String::from(COMMUNITY_ALGORITHM);
    for community in found {
        text.push('\n');
        for id in &community.members {
            text.push_str(&id.to_string());
            text.push(',');
        }
        text.push(';');
        for id in &community.relationships {
            text.push_str(&id.to_string());
            text.push(',');
        }
        text.push(';');
        text.push_str(&community.summary);
    }
    crate::evidence::sha256_hex(text.as_bytes())
}

/// The Leiden partition of `nodes` under `weights`: each node's community number.
fn leiden_membership(
    nodes: usize,
    weights: &BTreeMap<(usize, usize), f64>,
) -> Result<Vec<usize>, DetectionError> {
    if nodes == 0 {
        return Ok(Vec::new());
    }
    let failed = |err: leiden_rs::LeidenError| DetectionError(err.to_string());
    let mut builder = GraphDataBuilder::new(nodes);
    for (&(a, b), &weight) in weights {
        builder.add_edge(a, b, weight).map_err(failed)?;
    }
    let graph = builder.build().map_err(failed)?;
    let config = LeidenConfig {
        seed: Some(SEED),
        quality: QualityType::Modularity,
        resolution: RESOLUTION,
        ..LeidenConfig::default()
    };
    let output = Leiden::new(config).run(&graph).map_err(failed)?;
    Ok((0..nodes)
        .map(|n| output.partition.community_of(n))
        .collect())
}

/// A cluster's relationships and summary: its best-connected entities (most
/// relationships inside the cluster, then name, then id) and most used predicates (then
/// key).
fn summarise(members: Vec<EntityId>, eligible: &[&Relationship]) -> DetectedCommunity {
    let inside = |id: &EntityId| members.binary_search(id).is_ok();
    let internal: Vec<&&Relationship> = eligible
        .iter()
        .filter(|r| {
            inside(&r.subject.entity_id) && r.object.entity_id().is_some_and(|o| inside(&o))
        })
        .collect();
    let mut degree: BTreeMap<EntityId, (usize, String)> = BTreeMap::new();
    let mut predicates: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &internal {
        let object = match &r.object {
            crate::graph::ObjectSummary::Entity(e) => e,
            crate::graph::ObjectSummary::Value { .. } => continue,
        };
        for end in [&r.subject, object] {
            let entry = degree
                .entry(end.entity_id)
                .or_insert_with(|| (0, end.name.clone()));
            entry.0 += 1;
        }
        *predicates.entry(r.predicate.as_str()).or_default() += 1;
    }
    let mut ranked: Vec<(EntityId, usize, String)> = degree
        .into_iter()
        .map(|(id, (count, name))| (id, count, name))
        .collect();
    ranked.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| a.2.cmp(&b.2))
            .then(a.0.cmp(&b.0))
    });
    let top_entities: Vec<NamedEntity> = ranked
        .into_iter()
        .take(SUMMARY_ENTITIES)
        .map(|(entity_id, _, name)| NamedEntity { entity_id, name })
        .collect();
    let mut counted: Vec<PredicateCount> = predicates
        .into_iter()
        .map(|(predicate, count)| PredicateCount {
            predicate: predicate.to_string(),
            count,
        })
        .collect();
    counted.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.predicate.cmp(&b.predicate))
    });
    counted.truncate(SUMMARY_PREDICATES);
    let mut relationships: Vec<RelationshipId> =
        internal.iter().map(|r| r.relationship_id).collect();
    relationships.sort_unstable();
    let summary = summary_text(members.len(), relationships.len(), &top_entities, &counted);
    DetectedCommunity {
        members,
        relationships,
        top_entities,
        top_predicates: counted,
        summary,
    }
}

/// "Mark, Atlas, Redis and 2 more entities, linked by 6 relationships, mostly works_on
/// (3), uses (2)."
fn summary_text(
    entities: usize,
    relationships: usize,
    top: &[NamedEntity],
    predicates: &[PredicateCount],
) -> String {
    let names: Vec<&str> = top.iter().map(|e| e.name.as_str()).collect();
    let named = match (names.split_last(), entities.saturating_sub(names.len())) {
        (Some((last, rest)), 0) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        (_, 0) => names.join(", "),
        (_, more) => format!(
            "{} and {more} more {}",
            names.join(", "),
            if more == 1 { "entity" } else { "entities" }
        ),
    };
    let used: Vec<String> = predicates
        .iter()
        .map(|p| format!("{} ({})", p.predicate, p.count))
        .collect();
    format!(
        "{named}, linked by {relationships} relationship{}, mostly {}.",
        if relationships == 1 { "" } else { "s" },
        used.join(", ")
    )
}

/// Which communities a recall shows: only when the direct ranking left slots unused
/// (`limit` minus `results`), only what still fits the byte budget the results left
/// (`bytes_left`, counted in summary bytes), in the order given (best first). Results
/// are never displaced: a full result list gets none.
pub fn fill_unused_slots(
    limit: usize,
    results: usize,
    mut bytes_left: usize,
    candidates: Vec<Community>,
) -> Vec<Community> {
    let slots = limit.saturating_sub(results);
    let mut shown = Vec::new();
    for community in candidates {
        if shown.len() == slots {
            break;
        }
        if community.summary.len() > bytes_left {
            continue;
        }
        bytes_left -= community.summary.len();
        shown.push(community);
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{EntitySummary, ObjectSummary, Polarity, RelationshipStatus, Tier};
    use crate::ProfileId;
    use uuid::Uuid;

    fn entity(n: u128) -> EntitySummary {
        EntitySummary {
            entity_id: EntityId(Uuid::from_u128(n)),
            name: format!("e{n}"),
        }
    }

    fn link(id: u128, subject: u128, predicate: &str, object: u128) -> Relationship {
        Relationship {
            relationship_id: RelationshipId(Uuid::from_u128(id)),
            owner_profile_id: ProfileId(Uuid::from_u128(1)),
            subject: entity(subject),
            predicate: predicate.into(),
            predicate_surface: predicate.into(),
            object: ObjectSummary::Entity(entity(object)),
            polarity: Polarity::Positive,
            valid_from: None,
            valid_to: None,
            recorded_at: Timestamp::from_seconds(id as i64),
            recorded_to: None,
            semantic_group_key: format!("k{id}"),
            tier: Tier::Fact,
            status: RelationshipStatus::Active,
            version: 1,
            supersedes: None,
        }
    }

    /// Every pair of `nodes` linked, ids from `first_id`.
    fn clique(first_id: u128, nodes: &[u128], predicate: &str) -> Vec<Relationship> {
        let mut out = Vec::new();
        let mut id = first_id;
        for (i, a) in nodes.iter().enumerate() {
            for b in &nodes[i + 1..] {
                out.push(link(id, *a, predicate, *b));
                id += 1;
            }
        }
        out
    }

    fn member_sets(found: &[DetectedCommunity]) -> Vec<Vec<u128>> {
        found
            .iter()
            .map(|c| c.members.iter().map(|m| m.0.as_u128()).collect())
            .collect()
    }

    #[test]
    fn two_cliques_joined_by_one_bridge_are_two_communities() {
        let mut all = clique(100, &[1, 2, 3, 4], "works_on");
        all.extend(clique(200, &[11, 12, 13, 14, 15], "uses"));
        all.push(link(300, 4, "knows", 11));
        let found = detect_communities(&all).expect("detect");
        assert_eq!(
            member_sets(&found),
            vec![vec![11, 12, 13, 14, 15], vec![1, 2, 3, 4]]
        );
        assert_eq!(
            found[0].relationships.len(),
            10,
            "the bridge is inside neither"
        );
        assert_eq!(found[0].top_predicates[0].predicate, "uses");
        assert_eq!(found[0].top_predicates[0].count, 10);
    }

    #[test]
    fn a_small_connected_graph_stays_one_community() {
        // A triangle with one pendant: at resolution 1.0 it splits into two pairs, and
        // pairs are not kept — the team would have no community at all.
        let all = vec![
            link(1, 1, "works_on", 2),
            link(2, 3, "works_on", 2),
            link(3, 2, "uses", 4),
            link(4, 3, "maintains", 4),
        ];
        let found = detect_communities(&all).expect("detect");
        assert_eq!(member_sets(&found), vec![vec![1, 2, 3, 4]]);
    }

    #[test]
    fn the_input_order_does_not_change_the_communities() {
        let mut all = clique(100, &[1, 2, 3, 4], "works_on");
        all.extend(clique(200, &[11, 12, 13, 14], "uses"));
        all.extend(clique(300, &[21, 22, 23, 24], "owns"));
        all.push(link(400, 4, "knows", 11));
        all.push(link(401, 14, "knows", 21));
        let forward = detect_communities(&all).expect("detect");
        all.reverse();
        let backward = detect_communities(&all).expect("detect");
        assert_eq!(forward, backward);
        assert_eq!(forward.len(), 3);
        assert_eq!(fingerprint(&forward), fingerprint(&backward));
        all.pop();
        let changed = detect_communities(&all).expect("detect");
        assert_ne!(
            fingerprint(&changed),
            fingerprint(&forward),
            "one clique link fewer"
        );
    }

    #[test]
    fn planted_groups_under_noise_are_recovered() {
        // Ten groups of 30 entities, each pair inside a group linked with probability
        // 0.3, plus 150 links between random entities anywhere: the groups come back.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        let (groups, size) = (10u128, 30u128);
        let mut all = Vec::new();
        let mut id = 1;
        for g in 0..groups {
            for a in 0..size {
                for b in a + 1..size {
                    if next() % 10 < 3 {
                        all.push(link(id, 1 + g * size + a, "works_on", 1 + g * size + b));
                        id += 1;
                    }
                }
            }
        }
        for _ in 0..150 {
            let a = 1 + u128::from(next()) % (groups * size);
            let b = 1 + u128::from(next()) % (groups * size);
            if a != b {
                all.push(link(id, a, "knows", b));
                id += 1;
            }
        }
        let found = detect_communities(&all).expect("detect");
        let planted: Vec<Vec<u128>> = (0..groups)
            .map(|g| (1 + g * size..1 + (g + 1) * size).collect())
            .collect();
        let mut detected = member_sets(&found);
        detected.sort();
        assert_eq!(detected, planted);
    }

    #[test]
    fn ineligible_relationships_link_nothing() {
        let mut all = clique(100, &[1, 2, 3], "works_on");
        let mut retracted = link(200, 3, "uses", 9);
        retracted.status = RelationshipStatus::Retracted;
        let mut candidate = link(201, 9, "uses", 8);
        candidate.tier = Tier::Candidate;
        let mut denied = link(202, 1, "uses", 7);
        denied.polarity = Polarity::Negative;
        all.extend([retracted, candidate, denied]);
        let found = detect_communities(&all).expect("detect");
        assert_eq!(member_sets(&found), vec![vec![1, 2, 3]]);
    }

    #[test]
    fn a_pair_is_not_a_community_and_nothing_gives_nothing() {
        assert!(detect_communities(&[link(1, 1, "uses", 2)])
            .expect("detect")
            .is_empty());
        assert!(detect_communities(&[]).expect("detect").is_empty());
    }

    #[test]
    fn a_summary_names_the_best_connected_entities_and_most_used_predicates() {
        // A 4-clique of 2..5 plus 1 linked to 4 and 5: 4 and 5 have four links each,
        // 2 and 3 three, 1 two. `uses` on every link of 4, `knows` once.
        let all = vec![
            link(1, 2, "uses", 4),
            link(2, 3, "uses", 4),
            link(3, 4, "uses", 5),
            link(4, 1, "uses", 4),
            link(5, 2, "owns", 3),
            link(6, 2, "owns", 5),
            link(7, 3, "owns", 5),
            link(8, 1, "knows", 5),
        ];
        let found = detect_communities(&all).expect("detect");
        assert_eq!(found.len(), 1);
        let names: Vec<&str> = found[0]
            .top_entities
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, vec!["e4", "e5", "e2", "e3", "e1"]);
        assert_eq!(
            found[0].summary,
            "e4, e5, e2, e3 and e1, linked by 8 relationships, mostly uses (4), owns (3), knows (1)."
        );
    }

    #[test]
    fn a_summary_counts_the_members_it_does_not_name() {
        let found = detect_communities(&clique(1, &[1, 2, 3, 4, 5, 6, 7], "uses")).expect("detect");
        assert_eq!(found[0].top_entities.len(), SUMMARY_ENTITIES);
        assert!(
            found[0]
                .summary
                .contains("and 2 more entities, linked by 21 relationships"),
            "{}",
            found[0].summary
        );
    }

    fn stored(n: u128, summary: &str) -> Community {
        Community {
            community_id: CommunityId(Uuid::from_u128(n)),
            version: 1,
            algorithm: COMMUNITY_ALGORITHM.into(),
            computed_at: Timestamp::from_seconds(1),
            entity_count: 3,
            relationship_count: 3,
            top_entities: Vec::new(),
            top_predicates: Vec::new(),
            summary: summary.into(),
            matched_entities: 1,
        }
    }

    #[test]
    fn summaries_fill_only_slots_and_bytes_the_results_left() {
        let candidates = || vec![stored(1, "aaaa"), stored(2, "bbbbbbbb"), stored(3, "cc")];
        let ids = |shown: Vec<Community>| -> Vec<u128> {
            shown.iter().map(|c| c.community_id.0.as_u128()).collect()
        };
        assert_eq!(
            ids(fill_unused_slots(5, 5, 1_000, candidates())),
            Vec::<u128>::new()
        );
        assert_eq!(
            ids(fill_unused_slots(5, 9, 1_000, candidates())),
            Vec::<u128>::new()
        );
        assert_eq!(
            ids(fill_unused_slots(5, 3, 1_000, candidates())),
            vec![1, 2]
        );
        assert_eq!(
            ids(fill_unused_slots(5, 0, 1_000, candidates())),
            vec![1, 2, 3]
        );
        // Eight bytes left: the first fits, the second would not, the third does.
        assert_eq!(ids(fill_unused_slots(5, 0, 8, candidates())), vec![1, 3]);
        assert_eq!(
            ids(fill_unused_slots(5, 0, 0, candidates())),
            Vec::<u128>::new()
        );
    }
}
