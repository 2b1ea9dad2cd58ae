//! A recall's eligibility rules and selectors as one SQL condition over `evidence e`, the
//! same rules [`RecallQuery::admits`] states, so `LIMIT` (or a vector top-k) only ever
//! cuts rows the core would keep. Written once for both backends: they differ only in
//! how a parameter is bound, which [`Binder`] says.

use mnem_core::{Actor, LifecycleState, RecallQuery, ScopeFilter, Space, Timestamp};
use uuid::Uuid;

use crate::evidence_state_expr;

/// One value bound as a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Id(Uuid),
    Int(i64),
    Text(String),
}

/// A list of values of one type, for a membership test.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlList {
    Ids(Vec<Uuid>),
    Texts(Vec<String>),
}

/// How a backend binds the parameters of the statement it is building.
pub trait Binder {
    /// Binds `value` and returns its placeholder (`?`, `$3`). Placeholders are written
    /// into the text in the order they are bound.
    fn bind(&mut self, value: SqlValue) -> String;

    /// A condition that `column` is one of `values` — or, `negated`, none of them —
    /// binding what it needs (`column IN (?, ?)`, `column = ANY ($3)`).
    fn member(&mut self, column: &str, values: SqlList, negated: bool) -> String;
}

/// ` AND …` conditions admitting exactly the evidence `query` may return to `actor` at
/// `now`, binding their parameters through `binder` as the text is written.
pub fn eligibility(
    binder: &mut impl Binder,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
) -> String {
    let mut sql = String::new();
    let mut and = |condition: String| {
        sql.push_str(" AND ");
        sql.push_str(&condition);
    };
    and(format!(
        "e.team_id = {}",
        binder.bind(SqlValue::Id(actor.team.0))
    ));
    // `known_at`: the state as memory knew it then (evidence recorded later reads as
    // erased, so it is out).
    and(format!(
        "({}) = {}",
        evidence_state_expr(query.known_at),
        binder.bind(SqlValue::Text(LifecycleState::Current.as_str().into()))
    ));
    and(format!(
        "(e.expires_at IS NULL OR e.expires_at > {})",
        binder.bind(SqlValue::Int(query.validity_instant(now).as_micros()))
    ));
    and(format!(
        "(e.space = '{}' OR e.owner_profile_id = {})",
        Space::Team.as_str(),
        binder.bind(SqlValue::Id(actor.profile.0))
    ));
    if let Some(valid_at) = query.valid_at {
        and(format!(
            "e.observed_at <= {}",
            binder.bind(SqlValue::Int(valid_at.as_micros()))
        ));
    }
    if !query.known_evidence_ids.is_empty() {
        let ids = query.known_evidence_ids.iter().map(|id| id.0).collect();
        and(binder.member("e.evidence_id", SqlList::Ids(ids), true));
    }
    if !query.kinds.is_empty() {
        and(binder.member("e.kind", SqlList::Texts(query.kinds.clone()), false));
    }
    if let Some(since) = query.since {
        and(format!(
            "e.observed_at >= {}",
            binder.bind(SqlValue::Int(since.as_micros()))
        ));
    }
    if let Some(until) = query.until {
        and(format!(
            "e.observed_at < {}",
            binder.bind(SqlValue::Int(until.as_micros()))
        ));
    }
    match query.scope_filter() {
        ScopeFilter::Any => {}
        ScopeFilter::Exact(scope) => and(format!(
            "e.scope = {}",
            binder.bind(SqlValue::Text(scope.to_path()))
        )),
        ScopeFilter::Widened(scopes) => {
            let paths = scopes.iter().map(|s| s.to_path()).collect();
            and(binder.member("e.scope", SqlList::Texts(paths), false))
        }
        ScopeFilter::Subtree(root) => {
            // The scope itself, or a path that starts with it and a separator (`a/`
            // reads `a/b`, never `ab`). `substr` counts characters on both backends; the
            // length is a number written in the text (PostgreSQL would read a bound one
            // as the wrong integer type), never user text.
            let under = format!("{}{}", root.to_path(), mnem_core::Scope::SEPARATOR);
            let length = under.chars().count();
            and(format!(
                "(e.scope = {} OR substr(e.scope, 1, {length}) = {})",
                binder.bind(SqlValue::Text(root.to_path())),
                binder.bind(SqlValue::Text(under)),
            ))
        }
    }
    if !query.refs.is_empty() {
        // Correlated to the row: an item has a handful of refs, read by its key.
        let pairs: Vec<String> = query
            .refs
            .iter()
            .map(|r| {
                let kind = binder.bind(SqlValue::Text(r.kind.clone()));
                let id = binder.bind(SqlValue::Text(r.id.clone()));
                format!("(r.ref_kind = {kind} AND r.ref_id = {id})")
            })
            .collect();
        and(format!(
            "EXISTS (SELECT 1 FROM evidence_refs r WHERE r.team_id = e.team_id \
             AND r.evidence_id = e.evidence_id AND ({}))",
            pairs.join(" OR ")
        ));
    }
    sql
}

/// A statement counting the team's current texts observed inside the query's period, up
/// to `cap` (bound here): an upper bound on what the query may recall there, read from
/// the listing index alone (`team_id, state, observed_at`), so a period found larger
/// than `cap` costs at most `cap` index entries. `None` when the query has no period,
/// or reads the past (`known_at`: a text's state then is not its column).
pub fn period_count(
    binder: &mut impl Binder,
    actor: &Actor,
    query: &RecallQuery,
    cap: usize,
) -> Option<String> {
    if !query.has_period() || query.known_at.is_some() {
        return None;
    }
    let mut sql = format!(
        "SELECT count(*) FROM (SELECT 1 FROM evidence e WHERE e.team_id = {} AND e.state = {}",
        binder.bind(SqlValue::Id(actor.team.0)),
        binder.bind(SqlValue::Text(LifecycleState::Current.as_str().into())),
    );
    if let Some(since) = query.since {
        let since = binder.bind(SqlValue::Int(since.as_micros()));
        sql.push_str(&format!(" AND e.observed_at >= {since}"));
    }
    if let Some(until) = query.until {
        let until = binder.bind(SqlValue::Int(until.as_micros()));
        sql.push_str(&format!(" AND e.observed_at < {until}"));
    }
    let cap = binder.bind(SqlValue::Int(i64::try_from(cap).unwrap_or(i64::MAX)));
    sql.push_str(&format!(" LIMIT {cap}) period"));
    Some(sql)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnem_core::{EvidenceId, ProfileId, Ref, Scope, TeamId};

    /// Binds like SQLite (`?`, lists expanded), recording the values in order.
    #[derive(Default)]
    struct Recorded(Vec<SqlValue>);

    impl Binder for Recorded {
        fn bind(&mut self, value: SqlValue) -> String {
            self.0.push(value);
            "?".into()
        }
        fn member(&mut self, column: &str, values: SqlList, negated: bool) -> String {
            let values: Vec<SqlValue> = match values {
                SqlList::Ids(ids) => ids.into_iter().map(SqlValue::Id).collect(),
                SqlList::Texts(texts) => texts.into_iter().map(SqlValue::Text).collect(),
            };
            let marks = vec!["?"; values.len()].join(", ");
            self.0.extend(values);
            let not = if negated { "NOT " } else { "" };
            format!("{column} {not}IN ({marks})")
        }
    }

    fn actor() -> Actor {
        Actor {
            team: TeamId(Uuid::from_u128(1)),
            profile: ProfileId(Uuid::from_u128(2)),
        }
    }

    #[test]
    fn a_period_is_counted_only_for_a_query_that_has_one_and_reads_the_present() {
        let plain = RecallQuery::text("atlas");
        assert_eq!(
            period_count(&mut Recorded::default(), &actor(), &plain, 9),
            None
        );
        let period = RecallQuery {
            since: Some(Timestamp::from_micros(10)),
            until: Some(Timestamp::from_micros(20)),
            ..plain.clone()
        };
        let mut binder = Recorded::default();
        let sql = period_count(&mut binder, &actor(), &period, 9).expect("a period");
        assert_eq!(sql.matches('?').count(), binder.0.len());
        assert_eq!(
            binder.0,
            vec![
                SqlValue::Id(Uuid::from_u128(1)),
                SqlValue::Text("current".into()),
                SqlValue::Int(10),
                SqlValue::Int(20),
                SqlValue::Int(9),
            ]
        );
        let past = RecallQuery {
            known_at: Some(Timestamp::from_micros(15)),
            ..period
        };
        assert_eq!(
            period_count(&mut Recorded::default(), &actor(), &past, 9),
            None
        );
    }

    #[test]
    fn a_plain_query_binds_only_the_rules_every_recall_has() {
        let mut binder = Recorded::default();
        let sql = eligibility(
            &mut binder,
            &actor(),
            &RecallQuery::text("atlas"),
            Timestamp::from_micros(5),
        );
        assert_eq!(sql.matches('?').count(), 4);
        assert_eq!(binder.0.len(), 4);
        assert_eq!(binder.0[0], SqlValue::Id(Uuid::from_u128(1)));
        assert_eq!(binder.0[1], SqlValue::Text("current".into()));
        assert_eq!(binder.0[2], SqlValue::Int(5));
        assert_eq!(binder.0[3], SqlValue::Id(Uuid::from_u128(2)));
    }

    #[test]
    fn every_selector_binds_its_values_in_the_order_of_their_placeholders() {
        let query = RecallQuery {
            kinds: vec!["fact".into(), "decision".into()],
            since: Some(Timestamp::from_micros(10)),
            until: Some(Timestamp::from_micros(20)),
            valid_at: Some(Timestamp::from_micros(15)),
            scope: Some(Scope::parse("acme/api").unwrap()),
            include_ancestors: true,
            known_evidence_ids: vec![EvidenceId(Uuid::from_u128(9))],
            refs: vec![Ref {
                kind: "ticket".into(),
                id: "T-1".into(),
            }],
            ..RecallQuery::text("atlas")
        };
        let mut binder = Recorded::default();
        let sql = eligibility(&mut binder, &actor(), &query, Timestamp::from_micros(50));
        assert_eq!(sql.matches('?').count(), binder.0.len());
        let valid_at = SqlValue::Int(15);
        let at = |value: &SqlValue| binder.0.iter().position(|v| v == value);
        assert_eq!(
            at(&valid_at),
            Some(2),
            "the validity instant is valid_at, not now"
        );
        assert!(sql.contains("e.observed_at <= ?"));
        assert!(sql.contains("e.evidence_id NOT IN (?)"));
        assert!(sql.contains("e.kind IN (?, ?)"));
        assert!(sql.contains("e.observed_at >= ?"));
        assert!(sql.contains("e.observed_at < ?"));
        assert!(sql.contains("e.scope IN (?, ?, ?)"), "{sql}");
        assert!(sql.contains("(r.ref_kind = ? AND r.ref_id = ?)"));
        let texts: Vec<&str> = binder
            .0
            .iter()
            .filter_map(|v| match v {
                SqlValue::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            ["current", "fact", "decision", "acme/api", "acme", "", "ticket", "T-1"]
        );
    }
}
