//! The candidate query: every eligibility rule and selector of a recall as one SQL
//! statement, so `LIMIT` cuts only rows the core would keep.

use mnem_core::{
    Actor, Candidate, LifecycleState, Order, RecallQuery, ScopeFilter, Space, Timestamp,
};
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::fts::match_expression;
use crate::rows::{evidence_from_row, EVIDENCE_COLUMNS, EVIDENCE_COLUMN_COUNT};

/// The narrow columns the candidate query filters and sorts on, before hydration.
const SORT_COLUMNS: &str = "e.doc AS doc, e.scope_depth AS scope_depth, \
     e.observed_at AS observed_at, e.evidence_id AS evidence_id";

/// SQL text plus positional parameters, built together so they cannot drift apart.
struct Statement {
    sql: String,
    params: Vec<Value>,
}

impl Statement {
    fn push(&mut self, sql: &str, param: Value) {
        self.sql.push_str(sql);
        self.params.push(param);
    }

    /// Appends ` AND column IN (?, ?, …)`.
    fn push_in(&mut self, column: &str, values: impl IntoIterator<Item = Value>) {
        let start = self.params.len();
        self.params.extend(values);
        let marks = vec!["?"; self.params.len() - start].join(", ");
        self.sql.push_str(&format!(" AND {column} IN ({marks})"));
    }
}

pub fn candidates(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
) -> rusqlite::Result<Vec<Candidate>> {
    let fts_match = if query.is_listing() {
        None
    } else {
        match match_expression(&query.terms()) {
            Some(expression) => Some(expression),
            // Text without a single term can match nothing.
            None => return Ok(Vec::new()),
        }
    };

    let mut stmt = Statement {
        sql: String::new(),
        params: Vec::new(),
    };
    match &fts_match {
        Some(expression) => {
            // bm25() is <= 0, more negative is better; its negation is the relevance.
            stmt.sql = format!(
                "SELECT {SORT_COLUMNS}, -bm25(evidence_fts) AS relevance \
                 FROM evidence_fts JOIN evidence e ON e.doc = evidence_fts.rowid \
                 WHERE evidence_fts MATCH ?"
            );
            stmt.params.push(Value::Text(expression.clone()));
        }
        None => {
            stmt.sql = format!("SELECT {SORT_COLUMNS}, NULL AS relevance FROM evidence e WHERE 1");
        }
    }

    stmt.push(
        " AND e.team_id = ?",
        Value::Blob(actor.team.as_bytes().to_vec()),
    );
    stmt.push(
        " AND e.state = ?",
        Value::Text(LifecycleState::Current.as_str().into()),
    );
    stmt.push(
        " AND (e.expires_at IS NULL OR e.expires_at > ?)",
        Value::Integer(now.as_micros()),
    );
    stmt.push(
        &format!(
            " AND (e.space = '{}' OR e.owner_profile_id = ?)",
            Space::Team.as_str()
        ),
        Value::Blob(actor.profile.as_bytes().to_vec()),
    );
    if !query.kinds.is_empty() {
        stmt.push_in("e.kind", query.kinds.iter().cloned().map(Value::Text));
    }
    if let Some(since) = query.since {
        stmt.push(" AND e.observed_at >= ?", Value::Integer(since.as_micros()));
    }
    if let Some(until) = query.until {
        stmt.push(" AND e.observed_at < ?", Value::Integer(until.as_micros()));
    }
    let scope_filter = query.scope_filter();
    match &scope_filter {
        ScopeFilter::Any => {}
        ScopeFilter::Exact(scope) => stmt.push(" AND e.scope = ?", Value::Text(scope.to_path())),
        ScopeFilter::Widened(scopes) => {
            stmt.push_in("e.scope", scopes.iter().map(|s| Value::Text(s.to_path())))
        }
    }
    if !query.refs.is_empty() {
        let pairs = vec!["(r.ref_kind = ? AND r.ref_id = ?)"; query.refs.len()].join(" OR ");
        stmt.sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM evidence_refs r \
               WHERE r.team_id = e.team_id AND r.evidence_id = e.evidence_id AND ({pairs}))"
        ));
        for r in &query.refs {
            stmt.params.push(Value::Text(r.kind.clone()));
            stmt.params.push(Value::Text(r.id.clone()));
        }
    }

    // The same keys, in the same precedence, as mnem_core::compare_hits, so the rows this
    // LIMIT keeps are the rows the core ranks first.
    let mut order_keys: Vec<&str> = Vec::new();
    if fts_match.is_some() && query.order == Order::Relevance {
        order_keys.push("relevance DESC");
    }
    if scope_filter.is_widened() {
        order_keys.push("scope_depth DESC");
    }
    order_keys.extend(["observed_at DESC", "evidence_id ASC"]);
    stmt.sql
        .push_str(&format!(" ORDER BY {}", order_keys.join(", ")));
    stmt.push(" LIMIT ?", Value::Integer(query.candidate_pool() as i64));

    // Filter and sort narrow rows, then hydrate only the rows that survived LIMIT:
    // sorting full rows would carry every match's content through the sort.
    let outer_order: Vec<String> = order_keys.iter().map(|key| format!("c.{key}")).collect();
    let sql = format!(
        "SELECT {EVIDENCE_COLUMNS}, c.relevance FROM ({inner}) c \
         JOIN evidence e ON e.doc = c.doc \
         JOIN evidence_content t ON t.doc = c.doc AND t.team_id = e.team_id \
         ORDER BY {outer}",
        inner = stmt.sql,
        outer = outer_order.join(", "),
    );
    let mut prepared = conn.prepare_cached(&sql)?;
    let rows = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| {
        Ok(Candidate {
            evidence: evidence_from_row(row)?,
            relevance: row.get(EVIDENCE_COLUMN_COUNT)?,
        })
    })?;
    rows.collect()
}
