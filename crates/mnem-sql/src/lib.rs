//! SQL text the relational backends (SQLite, PostgreSQL) share, so a relationship's
//! standing, its discoverability, an evidence item's state under a time view, a recall's
//! eligibility rules and the order a candidate `LIMIT` keeps are written once. Only the
//! parameter style differs between the two; the callers pass theirs in (a placeholder
//! function, or a [`Binder`]).
//!
//! Stamps inlined into this SQL are integers formatted here, never input text.
//!
//! Architecture invariant: text only — no connection, no driver types.

use mnem_core::Timestamp;
use mnem_store::GraphView;

mod eligibility;

pub use eligibility::{eligibility, period_count, Binder, SqlList, SqlValue};

/// An evidence row's columns, in the order both backends' row mappers read them, with
/// `$content` the column that holds the text (it lives in another table on SQLite). The
/// list ends in `e.state`, which [`evidence_columns_at`] may replace.
#[macro_export]
macro_rules! evidence_columns {
    ($content:literal) => {
        concat!(
            "e.evidence_id, e.team_id, e.owner_profile_id, ",
            $content,
            ", e.kind, e.source_type, e.source, e.authority, e.source_group, e.source_key, \
             e.source_revision, e.labels, e.refs, e.scope, e.space, e.observed_at, \
             e.recorded_at, e.expires_at, e.content_hash, e.state"
        )
    };
}

/// How many columns [`evidence_columns!`] lists; extra selected columns start here.
pub const EVIDENCE_COLUMN_COUNT: usize = 20;

/// The standing of `r` as the view sees it: the current columns, or the last transition
/// at or before `known_at`.
fn standing_columns(view: &GraphView) -> String {
    match view.known_at {
        None => "r.tier, r.status, r.version".into(),
        Some(k) => {
            let k = k.as_micros();
            format!(
                "({}), ({}), (SELECT COUNT(*) FROM relationship_transitions t \
                 WHERE t.team_id = r.team_id AND t.relationship_id = r.relationship_id \
                 AND t.at <= {k})",
                last_transition(k, "to_tier"),
                last_transition(k, "to_status")
            )
        }
    }
}

/// `column` of `r`'s last transition at or before `k`.
fn last_transition(k: i64, column: &str) -> String {
    format!(
        "SELECT t.{column} FROM relationship_transitions t \
         WHERE t.team_id = r.team_id AND t.relationship_id = r.relationship_id \
         AND t.at <= {k} ORDER BY t.seq DESC LIMIT 1"
    )
}

/// `r`'s tier or status (`log_column` `to_tier` / `to_status`) under the view.
fn standing_expr(view: &GraphView, log_column: &str, current: &str) -> String {
    match view.known_at {
        None => current.to_string(),
        Some(k) => last_transition(k.as_micros(), log_column),
    }
}

/// How many columns `select_relationships` returns, in this order: id, owner, subject
/// id and name, predicate and surface, object id, name and value, polarity, valid from
/// and to, recorded at and to, semantic group key, supersedes, tier, status, version.
pub const RELATIONSHIP_COLUMNS: usize = 19;

/// `SELECT … FROM relationships r …` with the standing as of the view, filtered to the
/// team given by the placeholder `team` (`?1`, `$1`); callers append ` AND …`
/// conditions.
pub fn select_relationships(view: &GraphView, team: &str) -> String {
    format!(
        "SELECT r.relationship_id, r.owner_profile_id, r.subject_entity_id, s.name, \
         r.predicate, r.predicate_surface, r.object_entity_id, o.name, r.object_value, \
         r.polarity, r.valid_from, r.valid_to, r.recorded_at, r.recorded_to, \
         r.semantic_group_key, r.supersedes, {standing} \
         FROM relationships r \
         JOIN entities s ON s.team_id = r.team_id AND s.entity_id = r.subject_entity_id \
         LEFT JOIN entities o ON o.team_id = r.team_id AND o.entity_id = r.object_entity_id \
         WHERE r.team_id = {team}{known}",
        standing = standing_columns(view),
        known = view
            .known_at
            .map(|k| format!(" AND r.recorded_at <= {}", k.as_micros()))
            .unwrap_or_default(),
    )
}

/// The conditions that make `r` discoverable under the view (CONTRACT §2 step 8): active,
/// verified, valid at `valid_at`.
pub fn discoverable_condition(view: &GraphView) -> String {
    let mut sql = format!(
        " AND ({standing}) = 'active' AND ({tier}) IN ('validated_claim', 'fact')",
        standing = standing_expr(view, "to_status", "r.status"),
        tier = standing_expr(view, "to_tier", "r.tier"),
    );
    if let Some(v) = view.valid_at {
        let v = v.as_micros();
        sql.push_str(&format!(
            " AND (r.valid_from IS NULL OR r.valid_from <= {v}) \
             AND (r.valid_to IS NULL OR r.valid_to > {v})"
        ));
    }
    sql
}

/// What [`support`] reports in its second column.
pub const SUPPORT_TIER: i64 = 1;
pub const SUPPORT_GROUPS: i64 = 2;

/// The support signal's one read: rows `(evidence_id, what, value)` for the items that
/// `among` admits — a condition with `{id}` standing for the evidence id column, e.g.
/// `{id} IN (SELECT id FROM ids)` or `{id} = ANY ($2)`. `what` = [`SUPPORT_TIER`]: the
/// best tier among the discoverable relationships citing the item under the view (2
/// `fact`, 1 `validated_claim`); [`SUPPORT_GROUPS`]: the distinct source groups among its
/// current recorded writes known at the view's `known_at`. An item with neither has no
/// row. `team` is the team placeholder.
pub fn support(view: &GraphView, team: &str, among: &str) -> String {
    let known = |column: &str| {
        view.known_at
            .map(|k| format!(" AND {column} <= {}", k.as_micros()))
            .unwrap_or_default()
    };
    format!(
        "SELECT s.evidence_id, {SUPPORT_TIER}, \
           MAX(CASE WHEN ({tier}) = 'fact' THEN 2 ELSE 1 END) \
         FROM relationship_supports s JOIN relationships r \
           ON r.team_id = s.team_id AND r.relationship_id = s.relationship_id \
         WHERE s.team_id = {team} AND {cited}{known_r}{discoverable} \
         GROUP BY s.evidence_id \
         UNION ALL \
         SELECT w.evidence_id, {SUPPORT_GROUPS}, COUNT(DISTINCT w.source_group) \
         FROM evidence_writes w \
         WHERE w.team_id = {team} AND {written} AND w.state = 'current'{known_w} \
         GROUP BY w.evidence_id",
        tier = standing_expr(view, "to_tier", "r.tier"),
        cited = among.replace("{id}", "s.evidence_id"),
        written = among.replace("{id}", "w.evidence_id"),
        known_r = known("r.recorded_at"),
        known_w = known("w.recorded_at"),
        discoverable = discoverable_condition(view),
    )
}

/// Adds one row `(_, what, value)` of [`support`] to an item's support.
pub fn fold_support(support: &mut mnem_core::signals::Support, what: i64, value: i64) {
    if what == SUPPORT_TIER {
        support.tier = Some(if value >= 2 {
            mnem_core::graph::Tier::Fact
        } else {
            mnem_core::graph::Tier::ValidatedClaim
        });
    } else {
        // The item's own group is one of the distinct groups counted.
        support.other_source_groups = u32::try_from(value - 1).unwrap_or(0);
    }
}

/// A conflict is a live claim, on a single-valued predicate or already disputed.
const CONFLICTING: &str = "AND r.status IN ('active', 'disputed', 'pending_evidence', \
     'needs_review') AND (r.status = 'disputed' OR EXISTS (SELECT 1 FROM predicates p \
     WHERE p.team_id = r.team_id AND p.predicate = r.predicate AND p.single_valued))";

/// Appended to [`select_relationships`] (the team is parameter 1): the conflicts of one
/// relationship — live claims on its subject and predicate with another object or
/// polarity — oldest first, at most `limit`. Parameters 2–6: subject id, predicate, the
/// relationship's own id, its object key, its polarity.
pub fn conflicts_of(mark: fn(usize) -> String, limit: usize) -> String {
    let [subject, predicate, id, object, polarity] = [2, 3, 4, 5, 6].map(mark);
    format!(
        " AND r.subject_entity_id = {subject} AND r.predicate = {predicate} \
         AND r.relationship_id <> {id} AND (r.object_key <> {object} OR r.polarity <> {polarity}) \
         {CONFLICTING} ORDER BY r.recorded_at, r.relationship_id LIMIT {limit}"
    )
}

/// The state of evidence `e` as the view sees it: now, or the last lifecycle event at
/// or before `known_at` (erasure always wins: forgotten is forgotten in every view).
pub fn evidence_state_expr(known_at: Option<Timestamp>) -> String {
    match known_at {
        None => "e.state".into(),
        Some(k) => format!(
            "CASE WHEN e.state = 'erased' OR e.recorded_at > {k} THEN 'erased' ELSE \
             (SELECT ev.state FROM evidence_events ev WHERE ev.team_id = e.team_id \
              AND ev.evidence_id = e.evidence_id AND ev.at <= {k} \
              ORDER BY ev.seq DESC LIMIT 1) END",
            k = k.as_micros()
        ),
    }
}

/// Whether the relationship named by column `id_column` of hypothesis row `h` (a table
/// name or alias) is active now.
fn active_source(h: &str, id_column: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM relationships r WHERE r.team_id = {h}.team_id \
         AND r.relationship_id = {h}.{id_column} AND r.status = 'active')"
    )
}

/// A hypothesis's status as it stands: an `open` one whose source relationship is no
/// longer active (retracted, corrected, superseded, disputed, erased) is `stale`, whether
/// or not a dream pass has written that down yet.
pub fn hypothesis_status() -> String {
    format!(
        "(CASE WHEN h.status = 'open' AND NOT ({} AND {}) THEN 'stale' ELSE h.status END)",
        active_source("h", "first_relationship_id"),
        active_source("h", "second_relationship_id")
    )
}

/// `SELECT` of every hypothesis column, in this order — id, statement, status (as it
/// stands), rule, first source id and version, second source id and version, subject and
/// object entity ids, created at, resolution, resolved at, confirmed_by (JSON), then the
/// model reading's model, read at, statement and plausibility — for the team given by
/// the placeholder `team`; callers append ` AND …` conditions.
pub fn select_hypotheses(team: &str) -> String {
    format!(
        "SELECT h.hypothesis_id, h.statement, {status}, h.rule, h.first_relationship_id, \
         h.first_version, h.second_relationship_id, h.second_version, h.subject_entity_id, \
         h.object_entity_id, h.created_at, h.resolution, h.resolved_at, h.confirmed_by, \
         h.model_name, h.model_read_at, h.model_statement, h.model_plausibility \
         FROM hypotheses h WHERE h.team_id = {team}",
        status = hypothesis_status()
    )
}

/// Appended to [`select_hypotheses`]: status (as it stands) one of `statuses`; nothing
/// when empty. The statuses are a closed vocabulary, written here as literals.
pub fn hypotheses_with_status(statuses: &[mnem_core::graph::HypothesisStatus]) -> String {
    if statuses.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = statuses
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    format!(" AND {} IN ({})", hypothesis_status(), listed.join(", "))
}

/// Appended to [`select_hypotheses`]: a source (first or second) admitted by `among` —
/// a condition with `{id}` standing for the id column, e.g. `{id} IN (SELECT …)` or
/// `{id} = ANY ($2)` — as two indexed lookups, not an OR a planner answers by scanning
/// the team's hypotheses.
pub fn hypotheses_citing(team: &str, among: &str) -> String {
    format!(
        " AND h.hypothesis_id IN (\
         SELECT x.hypothesis_id FROM hypotheses x WHERE x.team_id = {team} AND {first} \
         UNION ALL \
         SELECT x.hypothesis_id FROM hypotheses x WHERE x.team_id = {team} AND {second})",
        first = among.replace("{id}", "x.first_relationship_id"),
        second = among.replace("{id}", "x.second_relationship_id"),
    )
}

/// The end of a hypotheses read: optionally only team-proven ones, newest first, at most
/// `limit`.
pub fn hypotheses_order(team_proven: bool, limit: usize) -> String {
    let proven = if team_proven {
        hypothesis_team_proven()
    } else {
        String::new()
    };
    format!("{proven} ORDER BY h.created_at DESC, h.hypothesis_id LIMIT {limit}")
}

/// Placeholders `1..=n` in a backend's style (`?1`, `$1`).
fn marks(mark: fn(usize) -> String, n: usize) -> Vec<String> {
    (1..=n).map(mark).collect()
}

/// Adds one proposed hypothesis unless the team holds the same sources and rule.
/// Parameters: team, id, first source id and version, second source id and version,
/// subject, object, rule, statement, created at.
pub fn insert_hypothesis(mark: fn(usize) -> String) -> String {
    let m = marks(mark, 11);
    format!(
        "INSERT INTO hypotheses (team_id, hypothesis_id, first_relationship_id, \
         first_version, second_relationship_id, second_version, subject_entity_id, \
         object_entity_id, rule, statement, status, created_at, confirmed_by) \
         VALUES ({}, 'open', {}, '[]') \
         ON CONFLICT (team_id, first_relationship_id, second_relationship_id, rule) DO NOTHING",
        m[..10].join(", "),
        m[10]
    )
}

/// Resolves a hypothesis that is open as it stands. Parameters: team, id, status,
/// resolution, resolved at, confirmed_by (JSON).
pub fn resolve_hypothesis(mark: fn(usize) -> String) -> String {
    let m = marks(mark, 6);
    format!(
        "UPDATE hypotheses AS h SET status = {}, resolution = {}, resolved_at = {}, \
         confirmed_by = {} WHERE h.team_id = {} AND h.hypothesis_id = {} AND {} = 'open'",
        m[2],
        m[3],
        m[4],
        m[5],
        m[0],
        m[1],
        hypothesis_status()
    )
}

/// Appended to [`select_hypotheses`]: only those the optional chat model has not read.
pub const HYPOTHESES_UNREAD_BY_MODEL: &str = " AND h.model_read_at IS NULL";

/// Writes a model's reading of a hypothesis it has not read yet (a second reading,
/// another server's included, changes nothing). Parameters: team, id, model, read at,
/// statement, plausibility.
pub fn record_model_reading(mark: fn(usize) -> String) -> String {
    let m = marks(mark, 6);
    format!(
        "UPDATE hypotheses SET model_name = {}, model_read_at = {}, model_statement = {}, \
         model_plausibility = {} WHERE team_id = {} AND hypothesis_id = {} \
         AND model_read_at IS NULL",
        m[2], m[3], m[4], m[5], m[0], m[1]
    )
}

/// Writes `stale` on the team's open hypotheses whose source is no longer active.
pub fn mark_stale_hypotheses(team: &str) -> String {
    format!(
        "UPDATE hypotheses SET status = 'stale' WHERE team_id = {team} AND status = 'open' \
         AND NOT ({} AND {})",
        active_source("hypotheses", "first_relationship_id"),
        active_source("hypotheses", "second_relationship_id"),
    )
}

/// Proven by a current team evidence item: relationship `r`, as an SQL condition.
///
/// Nested rather than joined so the planner walks the relationship's few supports first:
/// joined, SQLite drove the search from the team's current evidence (its state index)
/// and a 20,000-relationship dream pass took 53 s instead of milliseconds.
const TEAM_PROVEN: &str = "EXISTS (SELECT 1 FROM relationship_supports s \
     WHERE s.team_id = r.team_id AND s.relationship_id = r.relationship_id \
     AND EXISTS (SELECT 1 FROM evidence e WHERE e.team_id = s.team_id \
     AND e.evidence_id = s.evidence_id AND e.space = 'team' AND e.state = 'current'))";

/// Appended to [`select_hypotheses`]: both sources are still proven by a current team
/// evidence item, so any member of the team may be shown the hypothesis.
pub fn hypothesis_team_proven() -> String {
    let proven = |column: &str| {
        format!(
            "EXISTS (SELECT 1 FROM relationships r WHERE r.team_id = h.team_id \
             AND r.relationship_id = h.{column} AND {TEAM_PROVEN})"
        )
    };
    format!(
        " AND {} AND {}",
        proven("first_relationship_id"),
        proven("second_relationship_id")
    )
}

/// Appended to [`select_relationships`] under the default view: what a dream pass starts
/// from — discoverable now, an entity object, asserting, and proven by at least one
/// current *team* evidence item (a hypothesis is shown to the whole team, so it is never
/// derived from a claim only someone's private note supports) — newest first.
pub fn dream_inputs_condition(limit: usize) -> String {
    format!(
        "{discoverable} AND r.object_entity_id IS NOT NULL AND r.polarity = '+' \
         AND {TEAM_PROVEN} ORDER BY r.recorded_at DESC, r.relationship_id LIMIT {limit}",
        discoverable = discoverable_condition(&GraphView::default()),
    )
}

/// A backend's evidence column list (`columns`, ending in `e.state`) with `state` as the
/// view sees it: a `known_at` read reports each record's state as of then, so the core's
/// eligibility re-check means the same thing on every backend.
pub fn evidence_columns_at(columns: &str, known_at: Option<Timestamp>) -> String {
    match known_at {
        None => columns.to_string(),
        Some(_) => columns.replace(
            "e.state",
            &format!("({}) AS state", evidence_state_expr(known_at)),
        ),
    }
}

/// `ORDER BY` keys over a recall branch's narrow candidate rows (columns `relevance`,
/// `scope_depth`, `observed_at`, `evidence_id`), in the precedence of
/// [`mnem_core::compare_hits`], so the rows a `LIMIT` keeps are the rows the core ranks
/// first. `ranked`: the rows carry a relevance (a text query, not a listing).
pub fn candidate_order_keys(
    order: mnem_core::Order,
    widened: bool,
    ranked: bool,
) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if ranked && order == mnem_core::Order::Relevance {
        keys.push("relevance DESC");
    }
    if widened {
        keys.push("scope_depth DESC");
    }
    keys.extend(["observed_at DESC", "evidence_id ASC"]);
    keys
}

/// The team's latest community computation: version and fingerprint.
pub fn latest_community_run(team: &str) -> String {
    format!(
        "SELECT version, fingerprint FROM community_runs WHERE team_id = {team} \
         ORDER BY version DESC LIMIT 1"
    )
}

/// The statements that clear the team's communities before a new version is written
/// (the runs stay: they are the version history).
pub fn clear_communities(team: &str) -> [String; 2] {
    [
        format!("DELETE FROM community_members WHERE team_id = {team}"),
        format!("DELETE FROM communities WHERE team_id = {team}"),
    ]
}

/// Records one computation. Parameters: team, version, algorithm, fingerprint,
/// relationships read, communities kept, computed at.
pub fn insert_community_run(mark: fn(usize) -> String) -> String {
    format!(
        "INSERT INTO community_runs (team_id, version, algorithm, fingerprint, \
         relationships, communities, computed_at) VALUES ({})",
        marks(mark, 7).join(", ")
    )
}

/// Adds one community. Parameters: team, id, version, ordinal, entity count,
/// relationship count, top entities (JSON), top predicates (JSON), summary.
pub fn insert_community(mark: fn(usize) -> String) -> String {
    format!(
        "INSERT INTO communities (team_id, community_id, version, ordinal, entity_count, \
         relationship_count, top_entities, top_predicates, summary) VALUES ({})",
        marks(mark, 9).join(", ")
    )
}

/// Adds one member. Parameters: team, community id, entity id.
pub fn insert_community_member(mark: fn(usize) -> String) -> String {
    format!(
        "INSERT INTO community_members (team_id, community_id, entity_id) VALUES ({})",
        marks(mark, 3).join(", ")
    )
}

/// The team's current communities, every column in this order — id, version, algorithm,
/// computed at, entity count, relationship count, top entities (JSON), top predicates
/// (JSON), summary, matched entities. With `among` (a condition on `{id}`, the member's
/// entity id column, as in [`hypotheses_citing`]) only communities holding one of those
/// entities, the most matched first; without, in the computation's order (largest
/// first).
pub fn select_communities(team: &str, among: Option<&str>, limit: usize) -> String {
    let (matched, only) = match among {
        Some(among) => (
            format!(
                "(SELECT count(*) FROM community_members m WHERE m.team_id = c.team_id \
                 AND m.community_id = c.community_id AND {})",
                among.replace("{id}", "m.entity_id")
            ),
            format!(
                " AND c.community_id IN (SELECT x.community_id FROM community_members x \
                 WHERE x.team_id = {team} AND {})",
                among.replace("{id}", "x.entity_id")
            ),
        ),
        None => ("CAST(0 AS BIGINT)".to_string(), String::new()),
    };
    format!(
        "SELECT c.community_id, c.version, r.algorithm, r.computed_at, c.entity_count, \
         c.relationship_count, c.top_entities, c.top_predicates, c.summary, {matched} AS matched \
         FROM communities c JOIN community_runs r ON r.team_id = c.team_id AND r.version = c.version \
         WHERE c.team_id = {team}{only} ORDER BY matched DESC, c.ordinal LIMIT {limit}"
    )
}

/// One row of [`select_communities`], as each backend reads it.
pub struct CommunityRow {
    pub id: uuid::Uuid,
    pub version: i64,
    pub algorithm: String,
    pub computed_at: i64,
    pub entity_count: i64,
    pub relationship_count: i64,
    pub top_entities: String,
    pub top_predicates: String,
    pub summary: String,
    pub matched: i64,
}

impl TryFrom<CommunityRow> for mnem_core::graph::Community {
    type Error = mnem_store::StoreError;

    fn try_from(row: CommunityRow) -> Result<Self, Self::Error> {
        let count = |n: i64| usize::try_from(n).map_err(mnem_store::StoreError::backend);
        Ok(Self {
            community_id: mnem_core::CommunityId(row.id),
            version: row.version,
            algorithm: row.algorithm,
            computed_at: Timestamp::from_micros(row.computed_at),
            entity_count: count(row.entity_count)?,
            relationship_count: count(row.relationship_count)?,
            top_entities: serde_json::from_str(&row.top_entities)
                .map_err(mnem_store::StoreError::backend)?,
            top_predicates: serde_json::from_str(&row.top_predicates)
                .map_err(mnem_store::StoreError::backend)?,
            summary: row.summary,
            matched_entities: count(row.matched)?,
        })
    }
}

/// The names of a team's profiles among some ids: `among` is a condition on
/// `profile_id` in the backend's style (`{id} IN (…)`, `{id} = ANY ($2)`).
pub fn select_profile_names(team: &str, among: &str) -> String {
    format!(
        "SELECT profile_id, name FROM profiles WHERE team_id = {team} AND {} \
         ORDER BY profile_id",
        among.replace("{id}", "profile_id")
    )
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use mnem_core::{
        sort_hits, EvidenceId, NewEvidence, Order, ProfileId, RecallHit, Scope, Score, TeamId,
        Timestamp,
    };
    use uuid::Uuid;

    use super::{candidate_order_keys, EVIDENCE_COLUMN_COUNT};

    #[test]
    fn the_evidence_column_count_is_the_length_of_the_list() {
        let columns: Vec<&str> = evidence_columns!("t.content").split(", ").collect();
        assert_eq!(columns.len(), EVIDENCE_COLUMN_COUNT);
        assert_eq!(columns[3], "t.content");
        assert_eq!(columns.last(), Some(&"e.state"));
    }

    fn hit(id: u128, score: f64, scope: &str, observed: i64) -> RecallHit {
        let mut new = NewEvidence::new("x");
        new.scope = Scope::parse(scope).expect("scope");
        new.observed_at = Some(Timestamp::from_seconds(observed));
        let evidence = new
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                TeamId(Uuid::nil()),
                ProfileId(Uuid::nil()),
                Timestamp::from_seconds(observed),
            )
            .expect("evidence");
        RecallHit {
            context: evidence.content.clone(),
            evidence,
            score: Score::from_relevance(score),
            components: Default::default(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    /// What SQL does with `keys`: each key compares its column, in order.
    fn sql_order(keys: &[&str], a: &RecallHit, b: &RecallHit) -> Ordering {
        keys.iter().fold(Ordering::Equal, |so_far, key| {
            so_far.then_with(|| match *key {
                "relevance DESC" => b.score.total_cmp(&a.score),
                "scope_depth DESC" => b.evidence.scope.depth().cmp(&a.evidence.scope.depth()),
                "observed_at DESC" => b.evidence.observed_at.cmp(&a.evidence.observed_at),
                "evidence_id ASC" => a.evidence.id.cmp(&b.evidence.id),
                other => panic!("a key this test does not know: {other}"),
            })
        })
    }

    /// Items that tie and differ on every key in turn, so each key's place is tested.
    fn items() -> Vec<RecallHit> {
        let mut all = Vec::new();
        let mut id = 1;
        for score in [0.2, 0.9] {
            for scope in ["", "acme/api"] {
                for observed in [100, 900] {
                    for _ in 0..2 {
                        all.push(hit(id, score, scope, observed));
                        id += 1;
                    }
                }
            }
        }
        all.reverse();
        all
    }

    #[test]
    fn the_sql_order_is_the_cores_order() {
        for order in [Order::Relevance, Order::Recent] {
            for widened in [false, true] {
                let keys = candidate_order_keys(order, widened, true);
                let mut by_sql = items();
                by_sql.sort_by(|a, b| sql_order(&keys, a, b));
                let mut by_core = items();
                sort_hits(&mut by_core, order, widened);
                let ids =
                    |hits: &[RecallHit]| hits.iter().map(|h| h.evidence.id).collect::<Vec<_>>();
                assert_eq!(ids(&by_sql), ids(&by_core), "{order:?}, widened {widened}");
            }
        }
    }

    #[test]
    fn a_listing_orders_without_relevance() {
        let keys = candidate_order_keys(Order::Relevance, true, false);
        assert_eq!(
            keys,
            ["scope_depth DESC", "observed_at DESC", "evidence_id ASC"]
        );
    }
}
