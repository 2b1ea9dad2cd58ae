//! Discovery paths (CONTRACT §2 step 8): chosen after the evidence results are fixed, from
//! a bounded frontier the backend reads — seed entities' adjacency, one more hop from
//! non-hub neighbours, and relationships touching returned evidence. Paths have at most
//! two edges, never revisit an entity, never expand through a hub, carry evidence ids
//! (never evidence text) and are bounded in count, edges and bytes. Nothing here can
//! touch the evidence results: it only reads their ids.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::model::{normalise_name, EntitySummary, ObjectSummary, Polarity, Relationship};
use crate::text::is_stopword;
use crate::{EntityId, EvidenceId, ProfileId, RelationshipId, Timestamp};

pub const DEFAULT_PATH_LIMIT: usize = 5;
pub const MAX_PATH_LIMIT: usize = 20;

/// The bounds of one recall's discovery work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscoveryLimits {
    /// Entities the frontier starts from.
    pub max_seeds: usize,
    /// Edges read per entity; an entity with more is a hub and is not expanded through.
    pub fanout: usize,
    /// Neighbours expanded for the second hop.
    pub max_second_hop: usize,
    /// Edges across all returned paths.
    pub max_edges: usize,
    /// Serialized bytes across all returned paths.
    pub max_bytes: usize,
    /// Cosine similarity an entity or relationship document needs to the query to seed
    /// discovery by meaning.
    pub min_seed_similarity: f64,
}

impl Default for DiscoveryLimits {
    fn default() -> Self {
        Self {
            max_seeds: 8,
            fanout: 16,
            max_second_hop: 8,
            max_edges: 24,
            max_bytes: 4_096,
            // all-MiniLM-L6-v2, one probe of short documents: paraphrased questions scored
            // 0.44–0.59 against the claim or entity they meant ("who is responsible for
            // invoicing" / "Ana manages billing service" 0.47), unrelated ones at most 0.32.
            min_seed_similarity: 0.4,
        }
    }
}

/// An eligible relationship as the backend read it, with its effective supports.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphEdge {
    pub relationship: Relationship,
    pub evidence_ids: Vec<EvidenceId>,
    pub single_valued: bool,
}

impl GraphEdge {
    fn id(&self) -> RelationshipId {
        self.relationship.relationship_id
    }

    fn subject(&self) -> EntityId {
        self.relationship.subject.entity_id
    }

    fn object(&self) -> Option<EntityId> {
        self.relationship.object.entity_id()
    }

    /// The endpoint across the edge from `from`, when it is an entity.
    fn other_end(&self, from: EntityId) -> Option<EntityId> {
        if self.subject() == from {
            self.object()
        } else if self.object() == Some(from) {
            Some(self.subject())
        } else {
            None
        }
    }
}

/// An entity the frontier starts from, weighted by how it was found (name match 1.0,
/// requested expansion 1.0, …).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seed {
    pub entity_id: EntityId,
    pub weight: f64,
}

/// One entity's eligible edges, at most `fanout`; `hub` when there were more.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjacency {
    pub entity_id: EntityId,
    pub edges: Vec<GraphEdge>,
    pub hub: bool,
}

/// One edge in the public shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PathEdge {
    pub relationship_id: RelationshipId,
    pub subject: EntitySummary,
    pub predicate: String,
    pub object: ObjectSummary,
    pub polarity: Polarity,
    /// The author, shown where authorship matters: single-valued predicates, and claims
    /// the frontier holds from more than one author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<ProfileId>,
}

/// A compact follow-up hint: one or two edges plus the ids of their supporting evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DiscoveryPath {
    pub relationships: Vec<PathEdge>,
    pub evidence_ids: Vec<EvidenceId>,
}

/// What the backend read for one recall's frontier.
#[derive(Debug, Clone, Default)]
pub struct Frontier {
    pub seeds: Vec<Seed>,
    /// Adjacency of the seeds.
    pub first_hop: Vec<Adjacency>,
    /// Adjacency of the entities [`second_hop_entities`] chose.
    pub second_hop: Vec<Adjacency>,
    /// Relationships supported by evidence in the results.
    pub touching_results: Vec<GraphEdge>,
}

/// The request-side inputs of path selection.
#[derive(Debug, Clone, Default)]
pub struct PathRequest<'a> {
    pub query_terms: &'a [String],
    pub returned_evidence: &'a [EvidenceId],
    pub known_relationships: &'a [RelationshipId],
    pub valid_at: Option<Timestamp>,
    pub path_limit: usize,
}

/// Longest entity name looked up from a query, in words.
pub const MAX_NAME_WORDS: usize = 4;
/// Most name lookups one query makes.
pub const MAX_NAME_CANDIDATES: usize = 200;

/// The normalised word runs of a query that could name an entity (1 to
/// [`MAX_NAME_WORDS`] words, not only function words), bounded and de-duplicated, for an
/// exact lookup against entity names and aliases.
pub fn name_candidates(query: &str) -> Vec<String> {
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    for len in (1..=MAX_NAME_WORDS).rev() {
        for window in words.windows(len) {
            let content = window.iter().any(|w| {
                let w = normalise_name(w);
                !w.is_empty() && !is_stopword(&w)
            });
            let name = normalise_name(&window.join(" "));
            if content && !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
            if out.len() >= MAX_NAME_CANDIDATES {
                return out;
            }
        }
    }
    out
}

/// The strongest seeds, bounded, de-duplicated, in a deterministic order.
pub fn bounded_seeds(mut seeds: Vec<Seed>, limits: &DiscoveryLimits) -> Vec<Seed> {
    seeds.sort_by(|a, b| {
        b.weight
            .total_cmp(&a.weight)
            .then(a.entity_id.cmp(&b.entity_id))
    });
    let mut seen = HashSet::new();
    seeds.retain(|s| seen.insert(s.entity_id));
    seeds.truncate(limits.max_seeds);
    seeds
}

/// The neighbours worth one more hop: reached from a seed, not seeds themselves, not
/// hubs (their adjacency would be truncated anyway, and a hub says little), bounded.
pub fn second_hop_entities(
    seeds: &[Seed],
    first_hop: &[Adjacency],
    limits: &DiscoveryLimits,
) -> Vec<EntityId> {
    let seed_ids: HashSet<EntityId> = seeds.iter().map(|s| s.entity_id).collect();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for adjacency in first_hop {
        for edge in &adjacency.edges {
            if let Some(next) = edge.other_end(adjacency.entity_id) {
                if !seed_ids.contains(&next) && seen.insert(next) {
                    out.push(next);
                }
            }
        }
    }
    out.truncate(limits.max_second_hop);
    out
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// Fraction of the query's terms that the edge's names, predicate and value mention.
fn term_overlap(edge: &GraphEdge, terms: &HashSet<String>) -> f64 {
    if terms.is_empty() {
        return 0.0;
    }
    let r = &edge.relationship;
    let text = format!(
        "{} {} {} {}",
        r.subject.name,
        r.predicate.replace('_', " "),
        r.predicate_surface,
        r.object.display()
    );
    let edge_words: HashSet<String> = words(&text).collect();
    terms.iter().filter(|t| edge_words.contains(*t)).count() as f64 / terms.len() as f64
}

struct Scored {
    edges: Vec<GraphEdge>,
    score: f64,
}

/// Chooses the paths: every candidate (one edge from a seed or a returned result, or two
/// edges through a non-hub neighbour) is scored by how it was reached, how much of the
/// query it mentions and how much evidence it adds beyond the results; the best are
/// taken greedily while each adds an unseen edge and the edge and byte bounds hold.
pub fn select_paths(
    frontier: &Frontier,
    request: &PathRequest<'_>,
    limits: &DiscoveryLimits,
) -> Vec<DiscoveryPath> {
    let candidates = scored_candidates(frontier, &EdgeScorer::new(request));
    take_paths(candidates, request.path_limit, limits)
}

/// What an edge is worth to this request, and whether it may be shown at all.
struct EdgeScorer {
    known: HashSet<RelationshipId>,
    returned: HashSet<EvidenceId>,
    terms: HashSet<String>,
    valid_at: Option<Timestamp>,
}

impl EdgeScorer {
    fn new(request: &PathRequest<'_>) -> Self {
        Self {
            known: request.known_relationships.iter().copied().collect(),
            returned: request.returned_evidence.iter().copied().collect(),
            terms: request
                .query_terms
                .iter()
                .flat_map(|t| words(t).collect::<Vec<_>>())
                .collect(),
            valid_at: request.valid_at,
        }
    }

    /// Discoverable under the view and not already known to the caller.
    fn usable(&self, edge: &GraphEdge) -> bool {
        edge.relationship.is_discoverable(self.valid_at) && !self.known.contains(&edge.id())
    }

    /// `reach` (how the edge was reached), plus the share of the query it mentions, plus
    /// a little for the share of its evidence the results did not return.
    fn score(&self, edge: &GraphEdge, reach: f64) -> f64 {
        let novel = edge
            .evidence_ids
            .iter()
            .filter(|id| !self.returned.contains(id))
            .count() as f64
            / edge.evidence_ids.len().max(1) as f64;
        reach + term_overlap(edge, &self.terms) + 0.2 * novel
    }
}

/// Every candidate path the frontier offers, scored, best first (ties by edge ids).
fn scored_candidates(frontier: &Frontier, scorer: &EdgeScorer) -> Vec<Scored> {
    let seed_weight: HashMap<EntityId, f64> = frontier
        .seeds
        .iter()
        .map(|s| (s.entity_id, s.weight))
        .collect();
    let second: HashMap<EntityId, &Adjacency> = frontier
        .second_hop
        .iter()
        .filter(|a| !a.hub)
        .map(|a| (a.entity_id, a))
        .collect();

    let mut candidates: Vec<Scored> = Vec::new();
    for edge in frontier
        .touching_results
        .iter()
        .filter(|e| scorer.usable(e))
    {
        candidates.push(Scored {
            score: scorer.score(edge, 1.0),
            edges: vec![edge.clone()],
        });
    }
    for adjacency in &frontier.first_hop {
        let Some(&reach) = seed_weight.get(&adjacency.entity_id) else {
            continue;
        };
        for first in adjacency.edges.iter().filter(|e| scorer.usable(e)) {
            let first_score = scorer.score(first, reach);
            candidates.push(Scored {
                score: first_score,
                edges: vec![first.clone()],
            });
            let Some(middle) = first.other_end(adjacency.entity_id) else {
                continue;
            };
            if middle == adjacency.entity_id {
                continue; // a self-loop leads nowhere new
            }
            let Some(next) = second.get(&middle) else {
                continue;
            };
            for hop in next.edges.iter().filter(|e| scorer.usable(e)) {
                let far = hop.other_end(middle);
                // No edge twice and no return to the start or the middle: cycles end here.
                if hop.id() == first.id() || far == Some(adjacency.entity_id) || far == Some(middle)
                {
                    continue;
                }
                // A second edge is worth less than a first: it is further from the query.
                let score = 0.5 * (first_score + 0.8 * scorer.score(hop, reach));
                candidates.push(Scored {
                    score,
                    edges: vec![first.clone(), hop.clone()],
                });
            }
        }
    }
    candidates.sort_by(|a, b| {
        b.score.total_cmp(&a.score).then_with(|| {
            let ids = |s: &Scored| s.edges.iter().map(GraphEdge::id).collect::<Vec<_>>();
            ids(a).cmp(&ids(b))
        })
    });
    candidates
}

/// Takes candidates in order while each adds an edge not yet shown and the path count,
/// edge and byte bounds hold.
fn take_paths(
    candidates: Vec<Scored>,
    path_limit: usize,
    limits: &DiscoveryLimits,
) -> Vec<DiscoveryPath> {
    let multi_author = authors_per_group(&candidates);
    let mut chosen: Vec<DiscoveryPath> = Vec::new();
    let mut used_edges: HashSet<RelationshipId> = HashSet::new();
    let mut edges_total = 0;
    let mut bytes_total = 0;
    for candidate in candidates {
        if chosen.len() >= path_limit {
            break;
        }
        if candidate.edges.iter().all(|e| used_edges.contains(&e.id())) {
            continue; // nothing new
        }
        if edges_total + candidate.edges.len() > limits.max_edges {
            continue;
        }
        let path = public_path(&candidate.edges, &multi_author);
        let bytes = serde_json::to_vec(&path).map_or(usize::MAX, |b| b.len());
        if bytes_total + bytes > limits.max_bytes {
            continue;
        }
        edges_total += candidate.edges.len();
        bytes_total += bytes;
        used_edges.extend(candidate.edges.iter().map(GraphEdge::id));
        chosen.push(path);
    }
    chosen
}

/// Semantic groups that candidate edges hold from more than one author.
fn authors_per_group(candidates: &[Scored]) -> HashSet<String> {
    let mut owners: BTreeMap<&str, BTreeSet<ProfileId>> = BTreeMap::new();
    for edge in candidates.iter().flat_map(|c| &c.edges) {
        owners
            .entry(edge.relationship.semantic_group_key.as_str())
            .or_default()
            .insert(edge.relationship.owner_profile_id);
    }
    owners
        .into_iter()
        .filter(|(_, o)| o.len() > 1)
        .map(|(k, _)| k.to_string())
        .collect()
}

fn public_path(edges: &[GraphEdge], multi_author: &HashSet<String>) -> DiscoveryPath {
    let mut evidence_ids: Vec<EvidenceId> = edges
        .iter()
        .flat_map(|e| e.evidence_ids.iter().copied())
        .collect();
    evidence_ids.sort();
    evidence_ids.dedup();
    DiscoveryPath {
        relationships: edges
            .iter()
            .map(|e| {
                let r = &e.relationship;
                let authorship_matters =
                    e.single_valued || multi_author.contains(&r.semantic_group_key);
                PathEdge {
                    relationship_id: r.relationship_id,
                    subject: r.subject.clone(),
                    predicate: r.predicate.clone(),
                    object: r.object.clone(),
                    polarity: r.polarity,
                    owner: authorship_matters.then_some(r.owner_profile_id),
                }
            })
            .collect(),
        evidence_ids,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::model::{semantic_group_key, RelationshipStatus, Tier};
    use uuid::Uuid;

    fn entity(n: u128) -> EntitySummary {
        EntitySummary {
            entity_id: EntityId(Uuid::from_u128(n)),
            name: format!("E{n}"),
        }
    }

    fn edge(id: u128, subject: u128, predicate: &str, object: u128) -> GraphEdge {
        let object = ObjectSummary::Entity(entity(object));
        GraphEdge {
            relationship: Relationship {
                relationship_id: RelationshipId(Uuid::from_u128(id)),
                owner_profile_id: ProfileId(Uuid::from_u128(900)),
                subject: entity(subject),
                predicate: predicate.into(),
                predicate_surface: predicate.replace('_', " "),
                semantic_group_key: semantic_group_key(
                    EntityId(Uuid::from_u128(subject)),
                    predicate,
                    &object,
                    Polarity::Positive,
                ),
                object,
                polarity: Polarity::Positive,
                valid_from: None,
                valid_to: None,
                recorded_at: Timestamp::from_seconds(1),
                recorded_to: None,
                tier: Tier::ValidatedClaim,
                status: RelationshipStatus::Active,
                version: 1,
                supersedes: None,
            },
            evidence_ids: vec![EvidenceId(Uuid::from_u128(5000 + id))],
            single_valued: false,
        }
    }

    fn adjacency(entity: u128, edges: Vec<GraphEdge>, hub: bool) -> Adjacency {
        Adjacency {
            entity_id: EntityId(Uuid::from_u128(entity)),
            edges,
            hub,
        }
    }

    fn seed(n: u128) -> Seed {
        Seed {
            entity_id: EntityId(Uuid::from_u128(n)),
            weight: 1.0,
        }
    }

    fn request(limit: usize) -> PathRequest<'static> {
        PathRequest {
            path_limit: limit,
            ..PathRequest::default()
        }
    }

    fn ids(paths: &[DiscoveryPath]) -> Vec<Vec<u128>> {
        paths
            .iter()
            .map(|p| {
                p.relationships
                    .iter()
                    .map(|e| e.relationship_id.0.as_u128())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn name_candidates_are_word_runs_without_bare_function_words() {
        let names = name_candidates("Who works on Dense-Mem?");
        assert!(names.contains(&"dense-mem".to_string()), "{names:?}");
        assert!(names.contains(&"works on dense-mem".to_string()));
        assert!(!names.contains(&"who".to_string()));
        assert!(!names.contains(&"on".to_string()));
    }

    #[test]
    fn two_hops_go_through_the_neighbour_and_stop_there() {
        // 1 -works_on-> 2 -uses-> 3 -uses-> 4: the path from seed 1 ends at 3.
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(1, vec![edge(10, 1, "works_on", 2)], false)],
            second_hop: vec![adjacency(
                2,
                vec![edge(10, 1, "works_on", 2), edge(11, 2, "uses", 3)],
                false,
            )],
            touching_results: vec![],
        };
        let paths = select_paths(&frontier, &request(5), &DiscoveryLimits::default());
        assert_eq!(ids(&paths), vec![vec![10], vec![10, 11]]);
        assert!(paths.iter().all(|p| p.relationships.len() <= 2));
    }

    #[test]
    fn a_cycle_back_to_the_seed_is_not_a_path() {
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(1, vec![edge(10, 1, "knows", 2)], false)],
            second_hop: vec![adjacency(
                2,
                vec![edge(10, 1, "knows", 2), edge(11, 2, "knows", 1)],
                false,
            )],
            touching_results: vec![],
        };
        let paths = select_paths(&frontier, &request(5), &DiscoveryLimits::default());
        assert_eq!(ids(&paths), vec![vec![10]]);
    }

    #[test]
    fn a_hub_is_not_expanded_through() {
        let hub_edges = (0..20).map(|i| edge(100 + i, 2, "has", 200 + i)).collect();
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(1, vec![edge(10, 1, "in", 2)], false)],
            second_hop: vec![adjacency(2, hub_edges, true)],
            touching_results: vec![],
        };
        let paths = select_paths(&frontier, &request(20), &DiscoveryLimits::default());
        assert_eq!(ids(&paths), vec![vec![10]]);
    }

    #[test]
    fn second_hop_skips_seeds_and_is_bounded() {
        let limits = DiscoveryLimits {
            max_second_hop: 2,
            ..DiscoveryLimits::default()
        };
        let first = vec![adjacency(
            1,
            vec![
                edge(10, 1, "r", 2),
                edge(11, 1, "r", 3),
                edge(12, 1, "r", 4),
                edge(13, 1, "r", 7),
            ],
            false,
        )];
        let next = second_hop_entities(&[seed(1), seed(2)], &first, &limits);
        assert_eq!(
            next,
            vec![EntityId(Uuid::from_u128(3)), EntityId(Uuid::from_u128(4))]
        );
    }

    #[test]
    fn ineligible_and_known_relationships_never_appear() {
        let mut candidate = edge(11, 1, "r", 3);
        candidate.relationship.tier = Tier::Candidate;
        let mut disputed = edge(12, 1, "r", 4);
        disputed.relationship.status = RelationshipStatus::Disputed;
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(
                1,
                vec![
                    edge(10, 1, "r", 2),
                    candidate,
                    disputed,
                    edge(13, 1, "r", 5),
                ],
                false,
            )],
            ..Frontier::default()
        };
        let known = [RelationshipId(Uuid::from_u128(13))];
        let request = PathRequest {
            known_relationships: &known,
            path_limit: 10,
            ..PathRequest::default()
        };
        let paths = select_paths(&frontier, &request, &DiscoveryLimits::default());
        assert_eq!(ids(&paths), vec![vec![10]]);
    }

    #[test]
    fn query_terms_rank_matching_edges_first() {
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(
                1,
                vec![edge(10, 1, "likes", 2), edge(11, 1, "works_on", 3)],
                false,
            )],
            ..Frontier::default()
        };
        let terms = ["works".to_string()];
        let request = PathRequest {
            query_terms: &terms,
            path_limit: 1,
            ..PathRequest::default()
        };
        let paths = select_paths(&frontier, &request, &DiscoveryLimits::default());
        assert_eq!(ids(&paths), vec![vec![11]]);
    }

    #[test]
    fn paths_respect_the_byte_and_edge_bounds() {
        let edges: Vec<GraphEdge> = (0..10).map(|i| edge(10 + i, 1, "r", 100 + i)).collect();
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(1, edges, false)],
            ..Frontier::default()
        };
        let one_path_bytes = {
            let all = select_paths(&frontier, &request(1), &DiscoveryLimits::default());
            serde_json::to_vec(&all[0]).unwrap().len()
        };
        let limits = DiscoveryLimits {
            max_bytes: one_path_bytes * 3,
            ..DiscoveryLimits::default()
        };
        assert_eq!(select_paths(&frontier, &request(20), &limits).len(), 3);
        let limits = DiscoveryLimits {
            max_edges: 2,
            ..DiscoveryLimits::default()
        };
        assert_eq!(select_paths(&frontier, &request(20), &limits).len(), 2);
    }

    #[test]
    fn owner_is_shown_when_authors_differ_on_one_claim() {
        let a = edge(10, 1, "r", 2);
        let mut b = edge(11, 1, "r", 2);
        b.relationship.owner_profile_id = ProfileId(Uuid::from_u128(901));
        let lone = edge(12, 1, "s", 3);
        let frontier = Frontier {
            seeds: vec![seed(1)],
            first_hop: vec![adjacency(1, vec![a, b, lone], false)],
            ..Frontier::default()
        };
        let paths = select_paths(&frontier, &request(5), &DiscoveryLimits::default());
        let mut owners: Vec<(u128, bool)> = paths
            .iter()
            .map(|path| &path.relationships[0])
            .map(|edge| (edge.relationship_id.0.as_u128(), edge.owner.is_some()))
            .collect();
        owners.sort_unstable();
        // Every edge is shown once; only the lone claim goes without its author.
        assert_eq!(owners, vec![(10, true), (11, true), (12, false)]);
    }
}
