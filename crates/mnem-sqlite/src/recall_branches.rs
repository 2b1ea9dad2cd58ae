//! The candidate branches: every eligibility rule and selector of a recall inside SQL, so
//! `LIMIT` (or the vector top-k) only ever cuts rows the core would keep.

use std::collections::HashMap;

use mnem_core::{
    Actor, Candidate, Evidence, EvidenceId, Neighbours, RecallQuery, Timestamp, SMALL_PERIOD,
};
use rusqlite::types::Value;
use rusqlite::Connection;

use crate::ann::{AnnIndexes, Plan};
use crate::rows::{
    doc_array, evidence_from_row, EVIDENCE_COLUMNS, EVIDENCE_COLUMN_COUNT, EVIDENCE_FROM,
};
use mnem_sql::{SqlList, SqlValue};

/// This backend's evidence columns with `state` as the view sees it.
fn evidence_columns(known_at: Option<Timestamp>) -> String {
    mnem_sql::evidence_columns_at(EVIDENCE_COLUMNS, known_at)
}

/// The narrow columns the candidate query filters and sorts on, before hydration.
const SORT_COLUMNS: &str = "e.doc AS doc, e.scope_depth AS scope_depth, \
     e.observed_at AS observed_at, e.evidence_id AS evidence_id";

/// SQL text plus positional parameters, built together so they cannot drift apart.
pub(crate) struct Statement {
    pub(crate) sql: String,
    pub(crate) params: Vec<Value>,
}

/// The distinct scope paths of the evidence a listing of `query` could return, in path
/// order, at most `limit` ([`mnem_store::EvidenceStore::scopes`]).
pub fn scopes(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    limit: usize,
) -> rusqlite::Result<Vec<String>> {
    let mut stmt = Statement {
        sql: "SELECT DISTINCT e.scope FROM evidence e WHERE 1".into(),
        params: Vec::new(),
    };
    push_eligibility(&mut stmt, actor, query, now);
    stmt.push(" ORDER BY e.scope LIMIT ?", Value::Integer(limit as i64));
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let rows = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| row.get(0))?;
    rows.collect()
}

impl Statement {
    fn push(&mut self, sql: &str, param: Value) {
        self.sql.push_str(sql);
        self.params.push(param);
    }
}

impl mnem_sql::Binder for Statement {
    fn bind(&mut self, value: SqlValue) -> String {
        self.params.push(match value {
            SqlValue::Id(id) => Value::Blob(id.as_bytes().to_vec()),
            SqlValue::Int(n) => Value::Integer(n),
            SqlValue::Text(text) => Value::Text(text),
        });
        "?".into()
    }

    fn member(&mut self, column: &str, values: SqlList, negated: bool) -> String {
        let start = self.params.len();
        match values {
            SqlList::Ids(ids) => self
                .params
                .extend(ids.iter().map(|id| Value::Blob(id.as_bytes().to_vec()))),
            SqlList::Texts(texts) => self.params.extend(texts.into_iter().map(Value::Text)),
        }
        let marks = vec!["?"; self.params.len() - start].join(", ");
        let not = if negated { "NOT " } else { "" };
        format!("{column} {not}IN ({marks})")
    }
}

/// The team's current texts inside the query's period, counted up to `cap` on the
/// listing index ([`mnem_sql::period_count`]); `None` without a period.
pub fn texts_in_period(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    cap: usize,
) -> rusqlite::Result<Option<usize>> {
    let mut stmt = Statement {
        sql: String::new(),
        params: Vec::new(),
    };
    let Some(sql) = mnem_sql::period_count(&mut stmt, actor, query, cap) else {
        return Ok(None);
    };
    let count: i64 = conn
        .prepare_cached(&sql)?
        .query_row(rusqlite::params_from_iter(stmt.params), |row| row.get(0))?;
    Ok(Some(usize::try_from(count).unwrap_or(0)))
}

/// Whether the query has a period holding at most [`SMALL_PERIOD`] of the team's texts:
/// its branches then score the period's texts directly.
pub(crate) fn small_period(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
) -> rusqlite::Result<bool> {
    let count = texts_in_period(conn, actor, query, SMALL_PERIOD + 1)?;
    Ok(count.is_some_and(|count| count <= SMALL_PERIOD))
}

/// Pushes every eligibility rule and selector of `query` onto a statement over
/// `evidence e` ([`mnem_sql::eligibility`]: the rules `RecallQuery::admits` states).
pub(crate) fn push_eligibility(
    stmt: &mut Statement,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
) {
    let conditions = mnem_sql::eligibility(stmt, actor, query, now);
    stmt.sql.push_str(&conditions);
}

/// The lexical branch: BM25 over the team's full-text index for a text query
/// ([`crate::lexical::search`]), or a listing in the order contract's order. One
/// statement filters, orders and limits a listing on narrow rows, then hydrates only the
/// rows that survived.
pub fn lexical(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    pool: usize,
    prune: bool,
) -> rusqlite::Result<Vec<Candidate>> {
    if !query.is_listing() {
        return crate::lexical::search(conn, actor, query, now, pool, prune);
    }
    let mut stmt = Statement {
        sql: format!("SELECT {SORT_COLUMNS} FROM evidence e WHERE 1"),
        params: Vec::new(),
    };
    push_eligibility(&mut stmt, actor, query, now);

    // The same keys, in the same precedence, as mnem_core::compare_hits, so the rows this
    // LIMIT keeps are the rows the core ranks first.
    let order_keys =
        mnem_sql::candidate_order_keys(query.order, query.scope_filter().is_widened(), false);
    stmt.sql
        .push_str(&format!(" ORDER BY {}", order_keys.join(", ")));
    stmt.push(" LIMIT ?", Value::Integer(pool as i64));

    // Sorting full rows would carry every row's content through the sort.
    let outer_order: Vec<String> = order_keys.iter().map(|key| format!("c.{key}")).collect();
    let sql = format!(
        "SELECT {columns}, NULL FROM ({inner}) c \
         JOIN evidence e ON e.doc = c.doc \
         JOIN evidence_content t ON t.doc = c.doc AND t.team_id = e.team_id \
         ORDER BY {outer}",
        columns = evidence_columns(query.known_at),
        inner = stmt.sql,
        outer = outer_order.join(", "),
    );
    let mut prepared = conn.prepare_cached(&sql)?;
    let rows = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| {
        Ok(Candidate::new(
            evidence_from_row(row)?,
            row.get(EVIDENCE_COLUMN_COUNT)?,
        ))
    })?;
    rows.collect()
}

/// Eligible documents with a current vector under the contract: `(doc, vector)` rows of
/// the team's whole set, or — given `proposed`, the docs an index proposes — of those
/// docs only, probed one by one through their key (`CROSS JOIN` keeps SQLite from
/// walking the team's index instead). The proposed docs are one JSON array parameter,
/// so the statement's text does not vary with their number and stays prepared.
fn vector_eligibility(
    proposed: Option<&[i64]>,
    actor: &Actor,
    query: &RecallQuery,
    contract_key: &str,
    now: Timestamp,
) -> Statement {
    let mut stmt = match proposed {
        None => Statement {
            sql: "SELECT e.doc, sd.vector FROM search_documents sd \
                  JOIN evidence e ON e.doc = sd.doc \
                  WHERE sd.state = 'current'"
                .into(),
            params: Vec::new(),
        },
        Some(docs) => Statement {
            sql: "SELECT e.doc, sd.vector FROM json_each(?) AS proposed \
                  CROSS JOIN search_documents sd CROSS JOIN evidence e \
                  WHERE sd.doc = proposed.value AND e.doc = sd.doc \
                  AND sd.state = 'current'"
                .into(),
            params: vec![Value::Text(doc_array(docs))],
        },
    };
    stmt.push(
        " AND sd.contract = ?",
        Value::Text(contract_key.to_string()),
    );
    stmt.push(
        " AND sd.team_id = ?",
        Value::Blob(actor.team.as_bytes().to_vec()),
    );
    push_eligibility(&mut stmt, actor, query, now);
    stmt
}

/// The vector branch. Eligibility is always exact (SQL); similarity is exact by scan for
/// small teams, small periods and selective filters (the oracle), and proposed by the
/// team's vector index, then re-read and re-scored here, when `ann` is enabled and the
/// team is large.
#[allow(clippy::too_many_arguments)]
pub fn vector(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    query_vector: &[f32],
    contract_key: &str,
    now: Timestamp,
    pool: usize,
    ann: Option<(&AnnIndexes, usize)>,
) -> rusqlite::Result<Vec<Candidate>> {
    // A small period is scanned at once: the index would propose few of its texts.
    let ann = match ann {
        Some(ann) if !small_period(conn, actor, query)? => Some(ann),
        _ => None,
    };
    if let Some((indexes, threshold)) = ann {
        let mut verify = |docs: &[i64]| {
            let stmt = vector_eligibility(Some(docs), actor, query, contract_key, now);
            let mut prepared = conn.prepare_cached(&stmt.sql)?;
            scored_rows(&mut prepared, stmt.params, query_vector)
        };
        let plan = indexes.search(
            conn,
            actor.team,
            contract_key,
            threshold,
            query_vector,
            pool,
            &mut verify,
        )?;
        if let Plan::Approximate(found) = plan {
            return hydrate(conn, &widen(&found), query.known_at);
        }
    }
    let stmt = vector_eligibility(None, actor, query, contract_key, now);
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let scored = scored_rows(&mut prepared, stmt.params, query_vector)?;
    hydrate(conn, &widen(&best(scored, pool)), query.known_at)
}

/// The `pool` most similar of `scored`, best first; ties by doc so the branch order is
/// deterministic. Only the kept ones are sorted: an exact scan scores the whole team.
fn best(mut scored: Vec<(f32, i64)>, pool: usize) -> Vec<(f32, i64)> {
    let order = |a: &(f32, i64), b: &(f32, i64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if pool == 0 {
        return Vec::new();
    }
    if scored.len() > pool {
        scored.select_nth_unstable_by(pool - 1, order);
        scored.truncate(pool);
    }
    scored.sort_unstable_by(order);
    scored
}

/// Similarities as the relevance a candidate carries.
fn widen(scored: &[(f32, i64)]) -> Vec<(f64, i64)> {
    scored
        .iter()
        .map(|(similarity, doc)| (f64::from(*similarity), *doc))
        .collect()
}

/// `(similarity, doc)` of every `(doc, vector)` row the statement returns.
pub(crate) fn scored_rows(
    prepared: &mut rusqlite::Statement<'_>,
    params: Vec<Value>,
    query_vector: &[f32],
) -> rusqlite::Result<Vec<(f32, i64)>> {
    let mut scored = Vec::new();
    let mut rows = prepared.query(rusqlite::params_from_iter(params))?;
    while let Some(row) = rows.next()? {
        let doc: i64 = row.get(0)?;
        let blob = row.get_ref(1)?.as_blob()?;
        scored.push((dot_blob(query_vector, blob), doc));
    }
    Ok(scored)
}

/// Dot product of a query vector with a stored little-endian f32 vector.
pub(crate) fn dot_blob(query: &[f32], blob: &[u8]) -> f32 {
    if blob.len() != query.len() * 4 {
        return f32::NEG_INFINITY; // a vector of another width never matches
    }
    blob.chunks_exact(4)
        .zip(query)
        .map(|(bytes, q)| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) * q)
        .sum()
}

/// Reads the selected docs' full records, keeping the given order and relevance.
pub(crate) fn hydrate(
    conn: &Connection,
    selected: &[(f64, i64)],
    known_at: Option<Timestamp>,
) -> rusqlite::Result<Vec<Candidate>> {
    let docs: Vec<i64> = selected.iter().map(|(_, doc)| *doc).collect();
    let mut by_doc = records(conn, &docs, known_at)?;
    Ok(selected
        .iter()
        .filter_map(|(relevance, doc)| {
            by_doc
                .remove(doc)
                .map(|evidence| Candidate::new(evidence, Some(*relevance)))
        })
        .collect())
}

/// The full records of `docs`, in one statement, by doc.
pub(crate) fn records(
    conn: &Connection,
    docs: &[i64],
    known_at: Option<Timestamp>,
) -> rusqlite::Result<HashMap<i64, Evidence>> {
    if docs.is_empty() {
        return Ok(HashMap::new());
    }
    let sql = format!(
        "SELECT {}, e.doc FROM json_each(?1) AS wanted CROSS JOIN {EVIDENCE_FROM} \
         WHERE e.doc = wanted.value",
        evidence_columns(known_at)
    );
    let mut prepared = conn.prepare_cached(&sql)?;
    let rows = prepared.query_map([doc_array(docs)], |row| {
        Ok((
            row.get::<_, i64>(EVIDENCE_COLUMN_COUNT)?,
            evidence_from_row(row)?,
        ))
    })?;
    rows.collect()
}

/// Evidence windows: each hit's eligible neighbours in its source group, nearest first on
/// each side. Two narrow index walks per hit (`evidence_by_group`, eligibility on the
/// narrow row, stopping after `window` eligible rows), then one statement hydrating every
/// neighbour found: reading full records inside the walks cost ~15× more per statement.
pub fn neighbours(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    hits: &[Evidence],
    window: usize,
) -> rusqlite::Result<HashMap<EvidenceId, Neighbours>> {
    if window == 0 {
        return Ok(HashMap::new());
    }
    let side = |hit: &Evidence, key: &str, comparison: &str, direction: &str| {
        let mut stmt = Statement {
            sql: format!(
                "SELECT e.doc FROM evidence e \
                 WHERE e.source_key = ? \
                 AND (e.observed_at, e.evidence_id) {comparison} (?, ?)"
            ),
            params: vec![
                Value::Text(key.to_string()),
                Value::Integer(hit.observed_at.as_micros()),
                Value::Blob(hit.id.as_bytes().to_vec()),
            ],
        };
        push_eligibility(&mut stmt, actor, query, now);
        stmt.sql.push_str(&format!(
            " ORDER BY e.observed_at {direction}, e.evidence_id {direction}"
        ));
        stmt.push(" LIMIT ?", Value::Integer(window as i64));
        let mut prepared = conn.prepare_cached(&stmt.sql)?;
        let docs = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| {
            row.get::<_, i64>(0)
        })?;
        docs.collect::<rusqlite::Result<Vec<i64>>>()
    };
    let mut sides: Vec<(EvidenceId, Vec<i64>, Vec<i64>)> = Vec::new();
    for hit in hits {
        let Some(key) = &hit.source_key else {
            continue;
        };
        sides.push((
            hit.id,
            side(hit, key, "<", "DESC")?,
            side(hit, key, ">", "ASC")?,
        ));
    }
    let mut docs: Vec<i64> = sides
        .iter()
        .flat_map(|(_, before, after)| before.iter().chain(after))
        .copied()
        .collect();
    docs.sort_unstable();
    docs.dedup();
    let by_doc = records(conn, &docs, query.known_at)?;
    let pick = |docs: &[i64]| -> Vec<Evidence> {
        docs.iter()
            .filter_map(|doc| by_doc.get(doc).cloned())
            .collect()
    };
    Ok(sides
        .into_iter()
        .map(|(hit, before, after)| {
            (
                hit,
                Neighbours {
                    before: pick(&before),
                    after: pick(&after),
                },
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan's selection keeps exactly what sorting everything and cutting would.
    #[test]
    fn the_best_of_an_exact_scan_equal_a_full_sort_cut_to_the_pool() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in [0usize, 1, 5, 100, 257] {
            // Few distinct similarities, so ties by doc decide much of the order.
            let scored: Vec<(f32, i64)> = (0..len)
                .map(|doc| ((next() % 7) as f32 / 7.0, doc as i64))
                .collect();
            for pool in [0usize, 1, 10, 100, 300] {
                let mut sorted = scored.clone();
                sorted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
                sorted.truncate(pool);
                assert_eq!(best(scored.clone(), pool), sorted, "len {len} pool {pool}");
            }
        }
    }
}
