//! The recall contract (CONTRACT §2): the query, its validation, the candidates a
//! backend returns, and the public result shape. Ranking is in [`crate::pipeline`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::evidence::normalise_kind;
use crate::graph::{DiscoveryPath, DEFAULT_PATH_LIMIT, MAX_PATH_LIMIT};
use crate::pipeline::RecallHit;
use crate::signals::Support;
use crate::text::query_terms;
use crate::window::{WindowItem, MAX_WINDOW};
use crate::{
    Actor, EntityId, Evidence, EvidenceId, LifecycleState, Ref, RelationshipId, Scope, Space,
    Timestamp, ValidationError,
};

pub const MAX_QUERY_CHARS: usize = 512;
pub const DEFAULT_LIMIT: usize = 10;
pub const MAX_LIMIT: usize = 50;
pub const MAX_KINDS: usize = 32;
pub const DEFAULT_CONTEXT_BYTES: usize = 6_000;
pub const MAX_CONTEXT_BYTES: usize = 1_000_000;
pub const MAX_KNOWN_IDS: usize = 200;
pub const MAX_EXPAND_ENTITIES: usize = 50;
/// Neighbours on each side of a result by default (see ARCHITECTURE.md for the
/// measurements behind it).
pub const DEFAULT_WINDOW: usize = 2;

/// Sorts and de-duplicates a list of ids, refusing more than `max`.
fn bounded_ids<T: Ord>(ids: &mut Vec<T>, field: &str, max: usize) -> Result<(), ValidationError> {
    if ids.len() > max {
        return Err(ValidationError::new(field, format!("more than {max} ids")));
    }
    ids.sort();
    ids.dedup();
    Ok(())
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Score, then scope depth (widened reads), then `observed_at` newest, then id.
    #[default]
    Relevance,
    /// Scope depth (widened reads), then `observed_at` newest, then id.
    Recent,
}

impl FromStr for Order {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "relevance" => Ok(Order::Relevance),
            "recent" => Ok(Order::Recent),
            other => Err(ValidationError::new(
                "order",
                format!("`{other}` is not one of: relevance, recent"),
            )),
        }
    }
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Order::Relevance => "relevance",
            Order::Recent => "recent",
        })
    }
}

/// Which scopes a recall reads, resolved from `scope` + `include_ancestors` /
/// `include_descendants`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFilter {
    /// No scope given: the whole team.
    Any,
    /// Exactly this scope; neither ancestors, descendants nor siblings.
    Exact(Scope),
    /// This scope and its ancestors up to team-wide, deepest first. Siblings never.
    Widened(Vec<Scope>),
    /// This scope and every scope under it (`a` reads `a`, `a/b`, `a/b/c`; never `ab`).
    Subtree(Scope),
}

impl ScopeFilter {
    pub fn is_widened(&self) -> bool {
        matches!(self, ScopeFilter::Widened(_))
    }

    pub fn admits(&self, scope: &Scope) -> bool {
        match self {
            ScopeFilter::Any => true,
            ScopeFilter::Exact(wanted) => wanted == scope,
            ScopeFilter::Widened(scopes) => scopes.contains(scope),
            ScopeFilter::Subtree(root) => scope.segments().starts_with(root.segments()),
        }
    }
}

/// A ranked query whose period ([`RecallQuery::has_period`]) holds at most this many of
/// the team's texts is answered from those texts: the full-text branch is handed the
/// eligible set before its walk (which then reads only the blocks holding one of them),
/// and the vector branch compares them exactly instead of asking its index (which, for a
/// period that is a sliver of the team, proposes few of them and widens before it gives
/// up). The branches' results are the same either way; only the reads differ. 2,048 is a
/// day and a half at one text a minute.
pub const SMALL_PERIOD: usize = 2_048;

/// A recall request. All selectors are opt-in: the default query with text is a plain
/// relevance recall of ten items across the whole team.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallQuery {
    /// Free text. Empty means a listing in the order contract's order.
    pub query: String,
    /// Union: an item matches if its kind is any of these.
    pub kinds: Vec<String>,
    /// Inclusive lower bound on `observed_at`.
    pub since: Option<Timestamp>,
    /// Exclusive upper bound on `observed_at`.
    pub until: Option<Timestamp>,
    /// Floor on the normalised score; above 1 empties, 0 keeps every match.
    pub min_score: Option<f64>,
    pub order: Order,
    /// Applied last, after every filter.
    pub limit: usize,
    pub scope: Option<Scope>,
    pub include_ancestors: bool,
    /// With `scope`: also read every scope under it (a namespace and its children).
    pub include_descendants: bool,
    /// Any-of: an item matches if it carries one of these refs (kind and id both equal).
    pub refs: Vec<Ref>,
    /// Byte budget for all returned contexts together.
    pub context_bytes: usize,
    /// The instant time hints ("yesterday") are read against; defaults to the recall's
    /// clock reading. Benchmarks set it to replay history.
    pub request_time: Option<Timestamp>,
    /// Real-world time: evidence observed by then and not yet expired, relationships
    /// whose validity interval holds it. Defaults to now.
    pub valid_at: Option<Timestamp>,
    /// System time: evidence and relationships as they were known then, read from the
    /// append-only logs (erasure is never undone). Defaults to now.
    pub known_at: Option<Timestamp>,
    /// Evidence the caller has already seen: never returned again.
    pub known_evidence_ids: Vec<EvidenceId>,
    /// Relationships the caller has already seen: never in discovery paths.
    pub known_relationship_ids: Vec<RelationshipId>,
    /// Entities to start discovery from, besides names found in the query.
    pub expand_from_entity_ids: Vec<EntityId>,
    /// At most this many discovery paths (0 turns discovery off).
    pub path_limit: usize,
    /// Evidence window: each result also carries up to this many eligible neighbours on
    /// each side from its source group (`source_key`, in `observed_at` then id order);
    /// 0 turns windows off. See [`crate::window`].
    pub window: usize,
    /// Also return hypotheses (dreaming) linked to the returned evidence or paths, in
    /// their own field; they never become results.
    pub include_hypotheses: bool,
    /// Also return summaries of the communities around the results, in their own field,
    /// only in the result slots (and bytes) the results left unused.
    pub include_communities: bool,
}

impl Default for RecallQuery {
    fn default() -> Self {
        Self {
            query: String::new(),
            kinds: Vec::new(),
            since: None,
            until: None,
            min_score: None,
            order: Order::Relevance,
            limit: DEFAULT_LIMIT,
            scope: None,
            include_ancestors: false,
            include_descendants: false,
            refs: Vec::new(),
            context_bytes: DEFAULT_CONTEXT_BYTES,
            request_time: None,
            valid_at: None,
            known_at: None,
            known_evidence_ids: Vec::new(),
            known_relationship_ids: Vec::new(),
            expand_from_entity_ids: Vec::new(),
            path_limit: DEFAULT_PATH_LIMIT,
            window: DEFAULT_WINDOW,
            include_hypotheses: false,
            include_communities: false,
        }
    }
}

impl RecallQuery {
    pub fn text(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            ..Self::default()
        }
    }

    /// Checks every field and returns the canonical form backends receive (kinds
    /// normalised and de-duplicated, refs canonical, text trimmed).
    pub fn validated(mut self) -> Result<Self, ValidationError> {
        self.query = self.query.trim().to_string();
        crate::error::refuse_nul("query", &self.query)?;
        if self.query.chars().count() > MAX_QUERY_CHARS {
            return Err(ValidationError::new(
                "query",
                format!("is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        if self.limit == 0 || self.limit > MAX_LIMIT {
            return Err(ValidationError::new(
                "limit",
                format!("must be between 1 and {MAX_LIMIT}"),
            ));
        }
        if self.kinds.len() > MAX_KINDS {
            return Err(ValidationError::new(
                "kinds",
                format!("more than {MAX_KINDS} kinds"),
            ));
        }
        let mut kinds = self
            .kinds
            .iter()
            .map(|k| normalise_kind(k).map_err(|e| ValidationError::new("kinds", e.reason)))
            .collect::<Result<Vec<_>, _>>()?;
        kinds.sort();
        kinds.dedup();
        self.kinds = kinds;
        for (field, stamp) in [
            ("since", self.since),
            ("until", self.until),
            ("request_time", self.request_time),
            ("valid_at", self.valid_at),
            ("known_at", self.known_at),
        ] {
            Timestamp::check_optional(field, stamp)?;
        }
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if since > until {
                return Err(ValidationError::new("until", "is earlier than since"));
            }
        }
        if let Some(floor) = self.min_score {
            if !floor.is_finite() || floor < 0.0 {
                return Err(ValidationError::new(
                    "min_score",
                    "must be a number of at least 0",
                ));
            }
        }
        if self.include_ancestors && self.scope.is_none() {
            return Err(ValidationError::new(
                "include_ancestors",
                "needs a scope to widen",
            ));
        }
        if self.include_descendants && self.scope.is_none() {
            return Err(ValidationError::new(
                "include_descendants",
                "needs a scope to read under",
            ));
        }
        if self.include_descendants && self.include_ancestors {
            return Err(ValidationError::new(
                "include_descendants",
                "cannot be combined with include_ancestors: read a scope's ancestors or \
                 its descendants",
            ));
        }
        if self.context_bytes == 0 || self.context_bytes > MAX_CONTEXT_BYTES {
            return Err(ValidationError::new(
                "context_bytes",
                format!("must be between 1 and {MAX_CONTEXT_BYTES}"),
            ));
        }
        self.refs = Ref::canonical(self.refs, "refs")?;
        bounded_ids(
            &mut self.known_evidence_ids,
            "known_evidence_ids",
            MAX_KNOWN_IDS,
        )?;
        bounded_ids(
            &mut self.known_relationship_ids,
            "known_relationship_ids",
            MAX_KNOWN_IDS,
        )?;
        bounded_ids(
            &mut self.expand_from_entity_ids,
            "expand_from_entity_ids",
            MAX_EXPAND_ENTITIES,
        )?;
        if self.window > MAX_WINDOW {
            return Err(ValidationError::new(
                "window",
                format!("must be between 0 and {MAX_WINDOW}"),
            ));
        }
        if self.path_limit > MAX_PATH_LIMIT {
            return Err(ValidationError::new(
                "path_limit",
                format!("must be between 0 and {MAX_PATH_LIMIT}"),
            ));
        }
        Ok(self)
    }

    /// The instant expiry is judged at: `valid_at` when asked, else the recall's clock.
    pub fn validity_instant(&self, now: Timestamp) -> Timestamp {
        self.valid_at.unwrap_or(now)
    }

    pub fn scope_filter(&self) -> ScopeFilter {
        match (
            &self.scope,
            self.include_ancestors,
            self.include_descendants,
        ) {
            (None, _, _) => ScopeFilter::Any,
            // Team-wide and everything under it is the whole team.
            (Some(scope), _, true) if scope.depth() == 0 => ScopeFilter::Any,
            (Some(scope), _, true) => ScopeFilter::Subtree(scope.clone()),
            (Some(scope), false, false) => ScopeFilter::Exact(scope.clone()),
            (Some(scope), true, false) => ScopeFilter::Widened(scope.self_and_ancestors()),
        }
    }

    /// The search terms of the text; empty for a listing.
    pub fn terms(&self) -> Vec<String> {
        query_terms(&self.query)
    }

    /// The full-text terms of the text (stemmed and folded as stored texts are): what
    /// the lexical branch matches and scores. Empty for a listing.
    pub fn lexical_terms(&self) -> Vec<String> {
        crate::lexical::query_terms(&self.query)
    }

    /// Whether the query reads only a period (`since` or `until`): a filter that may admit
    /// a small part of a long history, which the branches can then score directly
    /// ([`SMALL_PERIOD`]).
    pub fn has_period(&self) -> bool {
        self.since.is_some() || self.until.is_some()
    }

    /// An empty query lists in the order contract's order. (A non-empty text that yields
    /// no terms, like `?!`, is not a listing: it matches nothing.)
    pub fn is_listing(&self) -> bool {
        self.query.is_empty()
    }

    /// [`ScopeFilter::admits`] without building the ancestor list: `admits` runs once
    /// per candidate on the recall path.
    fn admits_scope(&self, scope: &Scope) -> bool {
        match &self.scope {
            None => true,
            Some(wanted) if self.include_descendants => {
                scope.segments().starts_with(wanted.segments())
            }
            Some(wanted) if self.include_ancestors => {
                wanted.segments().starts_with(scope.segments())
            }
            Some(wanted) => wanted == scope,
        }
    }

    /// Whether `evidence` satisfies every eligibility rule and selector of this query at
    /// `now` for `actor`. Backends push the same rules into their own queries; the
    /// pipeline re-checks, so a backend bug cannot leak an ineligible row.
    /// With `known_at`, backends report each record's state as of then, so the same
    /// check holds for time-travel reads.
    pub fn admits(&self, evidence: &Evidence, actor: &Actor, now: Timestamp) -> bool {
        let valid_at = self.validity_instant(now);
        evidence.team == actor.team
            && evidence.state == LifecycleState::Current
            && (evidence.space == Space::Team || evidence.owner == actor.profile)
            && !evidence.is_expired_at(valid_at)
            && self.valid_at.is_none_or(|at| evidence.observed_at <= at)
            && self.known_at.is_none_or(|at| evidence.recorded_at <= at)
            && !self.known_evidence_ids.contains(&evidence.id)
            && (self.kinds.is_empty() || self.kinds.contains(&evidence.kind))
            && self.since.is_none_or(|since| evidence.observed_at >= since)
            && self.until.is_none_or(|until| evidence.observed_at < until)
            && self.admits_scope(&evidence.scope)
            && (self.refs.is_empty() || self.refs.iter().any(|r| evidence.refs.contains(r)))
    }
}

/// What a backend branch hands the core: an eligible evidence record and the branch's raw
/// relevance (larger is better), or `None` when the branch cannot rank (a listing).
/// Branches return candidates best first; fusion uses the position, not the number.
/// `support` is not the branch's to fill: the service reads it for the fused pool when
/// the ranking profile weighs it (default: supports nothing, one source).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub evidence: Evidence,
    pub relevance: Option<f64>,
    pub support: Support,
}

impl Candidate {
    /// A branch's candidate, with no support read yet.
    pub fn new(evidence: Evidence, relevance: Option<f64>) -> Self {
        Self {
            evidence,
            relevance,
            support: Support::default(),
        }
    }
}

/// One result in the public shape: the context and the handles a client needs, and
/// nothing else (no score, tier or lifecycle history). `before` and `after` carry its
/// evidence window (neighbours of the same source group, in order) and are absent when
/// there is none, so a recall without windows has exactly the original shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PublicResult {
    pub evidence_id: EvidenceId,
    pub context: String,
    /// The context is part of the item's text — its sentences that match the query best,
    /// `…` marking what was left out, or its start when the budget ran low; `show` has
    /// it whole. Absent when the context is the whole text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub observed_at: String,
    pub source: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<PublicWindowItem>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<PublicWindowItem>,
}

/// One neighbour in a result's window. `hit` marks an item that matched the query itself
/// (a result merged into this one because their windows overlapped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PublicWindowItem {
    pub evidence_id: EvidenceId,
    pub context: String,
    /// As [`PublicResult::partial`] (only a merged hit is ever shortened).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    pub observed_at: String,
    pub hit: bool,
}

/// Whether `context` is less than the whole text readers get of `evidence` (compared
/// without copying the text when it has no template token to escape).
fn is_partial(context: &str, evidence: &crate::Evidence) -> bool {
    crate::screen::for_readers(&evidence.content) != context
}

impl From<&WindowItem> for PublicWindowItem {
    fn from(item: &WindowItem) -> Self {
        Self {
            evidence_id: item.evidence.id,
            context: item.context.clone(),
            partial: is_partial(&item.context, &item.evidence),
            observed_at: item.evidence.observed_at.to_rfc3339(),
            hit: item.hit,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PublicRecall {
    pub results: Vec<PublicResult>,
    pub discovery_paths: Vec<DiscoveryPath>,
    /// Only when asked (`include_hypotheses`): speculation linked to the results or paths,
    /// never evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_hypotheses: Option<Vec<PublicHypothesis>>,
    /// Only when asked (`include_communities`): community summaries in the result slots
    /// the results left unused — derived, never evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub community_summaries: Option<Vec<PublicCommunity>>,
    /// One sentence on how to follow up.
    pub guidance: String,
}

/// A hypothesis as a recall shows it: what it says, where it stands, what it came from,
/// and the optional chat model's reading when it gave one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PublicHypothesis {
    pub hypothesis_id: crate::HypothesisId,
    pub statement: String,
    pub status: crate::graph::HypothesisStatus,
    pub source_relationship_ids: [RelationshipId; 2],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_reading: Option<crate::graph::ModelReading>,
}

impl From<&crate::graph::Hypothesis> for PublicHypothesis {
    fn from(h: &crate::graph::Hypothesis) -> Self {
        Self {
            hypothesis_id: h.hypothesis_id,
            statement: h.statement.clone(),
            status: h.status,
            source_relationship_ids: [h.sources[0].relationship_id, h.sources[1].relationship_id],
            model_reading: h.model_reading.clone().filter(|r| r.is_usable()),
        }
    }
}

/// A community summary as a recall shows it: marked (`kind`), with the entities it
/// names (ids to expand from) and the version of the computation that found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PublicCommunity {
    /// Always `community_summary`: a derived entry, not a result.
    pub kind: String,
    pub community_id: crate::CommunityId,
    pub summary: String,
    pub top_entities: Vec<crate::graph::NamedEntity>,
    pub top_predicates: Vec<crate::graph::PredicateCount>,
    pub entity_count: usize,
    pub relationship_count: usize,
    pub version: i64,
    pub computed_at: String,
}

impl From<&crate::graph::Community> for PublicCommunity {
    fn from(c: &crate::graph::Community) -> Self {
        Self {
            kind: "community_summary".into(),
            community_id: c.community_id,
            summary: c.summary.clone(),
            top_entities: c.top_entities.clone(),
            top_predicates: c.top_predicates.clone(),
            entity_count: c.entity_count,
            relationship_count: c.relationship_count,
            version: c.version,
            computed_at: c.computed_at.to_rfc3339(),
        }
    }
}

/// How a client should follow up a recall (CONTRACT §2): narrow with `known_*` ids, expand
/// from an entity, or trace a relationship — in the MCP tools' names.
pub fn guidance(results: usize, paths: usize) -> String {
    guidance_via(FollowUp::Mcp, results, paths)
}

/// The calls a transport's client follows a recall up with, by their names there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUp {
    /// The MCP tools: `recall_memory`, `trace_memory`.
    Mcp,
    /// The JSON API: `POST /v1/recall`, `POST /v1/trace`.
    Http,
}

/// [`guidance`] naming the follow-up calls as `via`'s client makes them.
pub fn guidance_via(via: FollowUp, results: usize, paths: usize) -> String {
    let (recall, trace) = match via {
        FollowUp::Mcp => ("call recall_memory", "call trace_memory(relationship_id)"),
        FollowUp::Http => ("POST /v1/recall", "POST /v1/trace with its relationship_id"),
    };
    match (results, paths) {
        (0, 0) => "Nothing matched; try other words, a wider scope or time window, or remember the missing knowledge.".into(),
        (_, 0) => format!("If something is still uncertain, {recall} again with a focused query and the ids you have seen in known_evidence_ids."),
        _ => format!("Discovery paths are follow-up hints, not answers: {trace} for why one holds, or {recall} with expand_from_entity_ids and the ids you have seen in known_evidence_ids/known_relationship_ids."),
    }
}

impl From<&RecallHit> for PublicResult {
    fn from(hit: &RecallHit) -> Self {
        Self {
            evidence_id: hit.evidence.id,
            context: hit.context.clone(),
            partial: is_partial(&hit.context, &hit.evidence),
            observed_at: hit.evidence.observed_at.to_rfc3339(),
            source: hit.evidence.source.clone(),
            kind: hit.evidence.kind.clone(),
            before: hit.before.iter().map(PublicWindowItem::from).collect(),
            after: hit.after.iter().map(PublicWindowItem::from).collect(),
        }
    }
}

impl PublicRecall {
    pub fn new(hits: &[RecallHit], discovery_paths: Vec<DiscoveryPath>) -> Self {
        Self {
            results: hits.iter().map(PublicResult::from).collect(),
            guidance: guidance(hits.len(), discovery_paths.len()),
            discovery_paths,
            related_hypotheses: None,
            community_summaries: None,
        }
    }

    /// Adds the hypotheses a recall was asked for (`None`: not asked).
    pub fn with_hypotheses(mut self, hypotheses: Option<&[crate::graph::Hypothesis]>) -> Self {
        self.related_hypotheses =
            hypotheses.map(|all| all.iter().map(PublicHypothesis::from).collect());
        self
    }

    /// Adds the community summaries a recall was asked for (`None`: not asked).
    pub fn with_communities(mut self, communities: Option<&[crate::graph::Community]>) -> Self {
        self.community_summaries =
            communities.map(|all| all.iter().map(PublicCommunity::from).collect());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewEvidence, ProfileId, Score, TeamId};
    use uuid::Uuid;

    const TEAM: TeamId = TeamId(Uuid::from_u128(1));
    const OWNER: ProfileId = ProfileId(Uuid::from_u128(2));

    fn candidate(id: u128, observed: i64, relevance: Option<f64>) -> Candidate {
        let mut new = NewEvidence::new(format!("item {id}"));
        new.observed_at = Some(Timestamp::from_seconds(observed));
        let evidence = new
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                TEAM,
                OWNER,
                Timestamp::from_seconds(observed),
            )
            .unwrap();
        Candidate::new(evidence, relevance)
    }

    #[test]
    fn scope_check_agrees_with_the_resolved_filter() {
        let paths = ["", "acme", "acme/api", "acme/api/v2", "acme/web", "other"];
        for wanted in paths {
            for include_ancestors in [false, true] {
                let query = RecallQuery {
                    scope: Some(Scope::parse(wanted).unwrap()),
                    include_ancestors,
                    ..RecallQuery::default()
                };
                for path in paths {
                    let scope = Scope::parse(path).unwrap();
                    assert_eq!(
                        query.admits_scope(&scope),
                        query.scope_filter().admits(&scope),
                        "{wanted} (ancestors {include_ancestors}) vs {path}"
                    );
                }
            }
        }
    }

    #[test]
    fn validation_names_the_field() {
        let bad = |q: RecallQuery| q.validated().unwrap_err().field;
        assert_eq!(
            bad(RecallQuery {
                limit: 0,
                ..RecallQuery::default()
            }),
            "limit"
        );
        assert_eq!(
            bad(RecallQuery {
                limit: 51,
                ..RecallQuery::default()
            }),
            "limit"
        );
        assert_eq!(
            bad(RecallQuery {
                min_score: Some(-0.1),
                ..RecallQuery::default()
            }),
            "min_score"
        );
        assert_eq!(
            bad(RecallQuery {
                min_score: Some(f64::NAN),
                ..RecallQuery::default()
            }),
            "min_score"
        );
        assert_eq!(
            bad(RecallQuery::text("q".repeat(MAX_QUERY_CHARS + 1))),
            "query"
        );
        assert_eq!(
            bad(RecallQuery {
                since: Some(Timestamp::from_seconds(2)),
                until: Some(Timestamp::from_seconds(1)),
                ..RecallQuery::default()
            }),
            "until"
        );
        assert_eq!(
            bad(RecallQuery {
                include_ancestors: true,
                ..RecallQuery::default()
            }),
            "include_ancestors"
        );
    }

    #[test]
    fn public_shape_has_exactly_the_contract_fields() {
        let evidence = candidate(7, 10, None).evidence;
        let hit = RecallHit {
            context: evidence.content.clone(),
            evidence,
            score: Score::UNRANKED,
            components: Default::default(),
            before: Vec::new(),
            after: Vec::new(),
        };
        let json = serde_json::to_value(PublicRecall::new(&[hit], Vec::new())).unwrap();
        let mut top: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        top.sort();
        assert_eq!(top, vec!["discovery_paths", "guidance", "results"]);
        let mut keys: Vec<&str> = json["results"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(
            keys,
            vec!["context", "evidence_id", "kind", "observed_at", "source"]
        );
    }
}
