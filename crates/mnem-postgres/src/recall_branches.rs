//! The candidate branches: every eligibility rule and selector of a recall inside SQL, so
//! `LIMIT` (or the vector top-k) only ever cuts rows the core would keep. Full text is
//! the core's top-k over block posting lists ([`crate::lexical`]); here are listings and
//! vectors (pgvector's HNSW with iterative scans).

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use mnem_core::{
    Actor, Candidate, EmbeddingContract, Evidence, EvidenceId, Neighbours, RecallQuery, Scope,
    Timestamp, SMALL_PERIOD,
};
use mnem_store::{Result, StoreError};

use crate::prepared::Session;
use crate::rows::{col, evidence_from_row, EVIDENCE_COLUMNS, EVIDENCE_COLUMN_COUNT};
use crate::{param_refs, prepared, DbResult, Param};
use mnem_sql::{SqlList, SqlValue};

/// This backend's evidence columns with `state` as the view sees it.
pub fn evidence_columns(known_at: Option<Timestamp>) -> String {
    mnem_sql::evidence_columns_at(EVIDENCE_COLUMNS, known_at)
}

/// SQL text plus numbered parameters, built together so they cannot drift apart.
#[derive(Default)]
pub struct Statement {
    pub sql: String,
    pub params: Vec<Param>,
}

impl Statement {
    /// Adds a parameter and returns its placeholder (`$n`).
    pub fn arg(
        &mut self,
        value: impl tokio_postgres::types::ToSql + Sync + Send + 'static,
    ) -> String {
        self.params.push(Box::new(value));
        format!("${}", self.params.len())
    }
}

impl mnem_sql::Binder for Statement {
    fn bind(&mut self, value: SqlValue) -> String {
        match value {
            SqlValue::Id(id) => self.arg(id),
            SqlValue::Int(n) => self.arg(n),
            SqlValue::Text(text) => self.arg(text),
        }
    }

    fn member(&mut self, column: &str, values: SqlList, negated: bool) -> String {
        let list = match values {
            SqlList::Ids(ids) => self.arg(ids),
            SqlList::Texts(texts) => self.arg(texts),
        };
        if negated {
            format!("NOT ({column} = ANY ({list}))")
        } else {
            format!("{column} = ANY ({list})")
        }
    }
}

/// The distinct scopes of the evidence a listing of `query` could return, in path order
/// (byte order, as SQLite sorts them), at most `limit`
/// ([`mnem_store::EvidenceStore::scopes`]).
pub(crate) async fn scopes(
    tx: &Transaction<'_>,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<Scope>> {
    let mut stmt = Statement {
        sql: "SELECT DISTINCT e.scope COLLATE \"C\" FROM evidence e WHERE true".into(),
        ..Statement::default()
    };
    push_eligibility(&mut stmt, actor, query, now);
    let limit = stmt.arg(limit as i64);
    stmt.sql.push_str(&format!(" ORDER BY 1 LIMIT {limit}"));
    let rows = tx.query(&stmt.sql, &param_refs(&stmt.params)).await.db()?;
    rows.iter()
        .map(|row| Scope::parse(&col::<String>(row, 0)?).map_err(StoreError::backend))
        .collect()
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

/// A listing (a recall without text): the `pool` first eligible records in the query's
/// order, filtered, ordered and limited on narrow rows, then read in full only for the
/// rows that survived. Text queries are the lexical branch ([`crate::lexical`]).
pub async fn listing(
    tx: &Transaction<'_>,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    pool: usize,
) -> Result<Vec<Candidate>> {
    let mut stmt = Statement::default();
    let team = stmt.arg(actor.team.0);
    stmt.sql = "SELECT e.evidence_id, e.scope_depth, e.observed_at, \
                NULL::float8 AS relevance FROM evidence e WHERE true"
        .into();
    push_eligibility(&mut stmt, actor, query, now);
    let keys =
        mnem_sql::candidate_order_keys(query.order, query.scope_filter().is_widened(), false);
    let limit = stmt.arg(pool as i64);
    stmt.sql
        .push_str(&format!(" ORDER BY {} LIMIT {limit}", keys.join(", ")));
    let outer: Vec<String> = keys.iter().map(|key| format!("c.{key}")).collect();
    let sql = format!(
        "SELECT {columns}, c.relevance FROM ({inner}) c \
         JOIN evidence e ON e.team_id = {team} AND e.evidence_id = c.evidence_id \
         ORDER BY {outer}",
        columns = evidence_columns(query.known_at),
        inner = stmt.sql,
        outer = outer.join(", "),
    );
    query_candidates(tx, &sql, &stmt.params).await
}

/// Runs a candidate statement: full evidence columns, then the relevance.
async fn query_candidates(
    tx: &impl Session,
    sql: &str,
    params: &[Param],
) -> Result<Vec<Candidate>> {
    let rows = tx.query(sql, &param_refs(params)).await.db()?;
    rows.iter().map(candidate_from_row).collect()
}

/// A candidate from a row of full evidence columns followed by the relevance.
pub(crate) fn candidate_from_row(row: &tokio_postgres::Row) -> Result<Candidate> {
    Ok(Candidate::new(
        evidence_from_row(row)?,
        col(row, EVIDENCE_COLUMN_COUNT)?,
    ))
}

/// The vector expression and operator class for a contract's width: `vector(n)` up to
/// pgvector's index limit of 2,000 dimensions, `halfvec(n)` above it.
pub fn vector_cast(dims: usize) -> String {
    if dims > 2000 {
        format!("halfvec({dims})")
    } else {
        format!("vector({dims})")
    }
}

/// How the vector branch may search, as the store is set up.
#[derive(Clone, Copy, Debug)]
pub struct VectorPlan {
    /// Every eligible vector compared, always: the oracle the index is measured against.
    pub exact: bool,
    /// Teams with fewer texts than this are compared exactly: a scan of a few thousand
    /// vectors costs a few milliseconds (4.4 ms for 4,600 of 384 dimensions, top 100),
    /// while the graph of a small team's partition may be mostly other teams' vectors,
    /// walked past until enough of its own pass the filter. 0: the graph for every team.
    pub ann_threshold: usize,
}

/// The vector branch: eligible candidates with a current vector under the contract, best
/// `pool` by cosine similarity. Approximate through the per-width HNSW index of the team's
/// partition (with iterative scans so filtered queries are not cut short) or, when
/// [`scans_exactly`], by comparing every eligible vector.
#[allow(clippy::too_many_arguments)]
pub async fn vector(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    query_vector: &[f32],
    contract: &EmbeddingContract,
    now: Timestamp,
    pool: usize,
    plan: VectorPlan,
) -> Result<Vec<Candidate>> {
    if query_vector.len() != contract.dims {
        return Ok(Vec::new()); // a vector of another width never matches
    }
    let exact = tune_and_choose(tx, actor, query, pool, plan).await?;
    let stmt = vector_statement(actor, query, query_vector, contract, now, pool, exact);
    query_candidates(tx, &stmt.sql, &stmt.params).await
}

/// Sets the transaction's HNSW search ([`tune_vector_scan`]) and says whether the branch
/// [`scans_exactly`]: the settings and the team's text count go as one statement, one
/// round trip where they were two.
async fn tune_and_choose(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    pool: usize,
    plan: VectorPlan,
) -> Result<bool> {
    let row = prepared::query_one(
        tx,
        "SELECT set_config('hnsw.ef_search', $1, true), \
                set_config('hnsw.iterative_scan', 'relaxed_order', true), \
                COALESCE((SELECT documents FROM text_stats WHERE team_id = $2), 0)::int8",
        &[&ef_search(pool), &actor.team.0],
    )
    .await?;
    let team_texts = usize::try_from(col::<i64>(&row, 2)?).unwrap_or(0);
    scans_exactly(tx, actor, query, plan, team_texts).await
}

/// Whether the vector branch compares every eligible vector rather than walk the graph:
/// when the plan says so, when the team is smaller than the plan's threshold, or when
/// the query's period is short ([`small_period`]).
async fn scans_exactly(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    plan: VectorPlan,
    team_texts: usize,
) -> Result<bool> {
    if plan.exact || team_texts < plan.ann_threshold {
        return Ok(true);
    }
    small_period(tx, actor, query).await
}

/// Whether the query has a period holding at most [`SMALL_PERIOD`] of the team's texts:
/// its branches then score the period's texts directly — the full-text walk is handed
/// their eligible set, and the vector branch compares them exactly (the planner reads the
/// period through the listing index) instead of walking the HNSW graph for the few it holds.
pub(crate) async fn small_period(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
) -> Result<bool> {
    let count = texts_in_period(tx, actor, query, SMALL_PERIOD + 1).await?;
    Ok(count.is_some_and(|count| count <= SMALL_PERIOD))
}

/// The vector branch's plan, as `EXPLAIN (ANALYZE, BUFFERS)` prints it (for the operator
/// and for the test that the index, not a scan, answers).
#[allow(clippy::too_many_arguments)]
pub async fn explain_vector(
    tx: &Transaction<'_>,
    actor: &Actor,
    query: &RecallQuery,
    query_vector: &[f32],
    contract: &EmbeddingContract,
    now: Timestamp,
    pool: usize,
    plan: VectorPlan,
) -> Result<String> {
    let exact = tune_and_choose(tx, actor, query, pool, plan).await?;
    let stmt = vector_statement(actor, query, query_vector, contract, now, pool, exact);
    let sql = format!("EXPLAIN (ANALYZE, BUFFERS) {}", stmt.sql);
    let rows = tx.query(&sql, &param_refs(&stmt.params)).await.db()?;
    let lines = rows
        .iter()
        .map(|row| col::<String>(row, 0))
        .collect::<Result<Vec<_>>>()?;
    Ok(lines.join("\n"))
}

#[allow(clippy::too_many_arguments)]
fn vector_statement(
    actor: &Actor,
    query: &RecallQuery,
    query_vector: &[f32],
    contract: &EmbeddingContract,
    now: Timestamp,
    pool: usize,
    exact: bool,
) -> Statement {
    let mut stmt = Statement::default();
    let team = stmt.arg(actor.team.0);
    let q = stmt.arg(pgvector::Vector::from(query_vector.to_vec()));
    let key = stmt.arg(contract.key());
    // The expression must be the index's, cast to the contract's width, for the planner
    // to use the partial index of that width; the uncast form can only scan.
    let distance = if exact {
        format!("(v.embedding <=> {q})")
    } else {
        let cast = vector_cast(contract.dims);
        format!("(v.embedding::{cast} <=> {q}::{cast})")
    };
    stmt.sql = format!(
        "SELECT v.evidence_id, {distance} AS distance FROM evidence_vectors v \
         JOIN evidence e ON e.team_id = v.team_id AND e.evidence_id = v.evidence_id \
         WHERE v.contract = {key} AND v.dims = {dims} AND v.team_id = {team}",
        dims = contract.dims,
    );
    push_eligibility(&mut stmt, actor, query, now);
    let limit = stmt.arg(pool as i64);
    stmt.sql
        .push_str(&format!(" ORDER BY distance LIMIT {limit}"));
    // The index may return neighbours slightly out of order under iterative scans:
    // re-sort the few it found exactly, ties by id, before hydrating.
    stmt.sql = format!(
        "WITH nearest AS MATERIALIZED ({inner}) \
         SELECT {columns}, (1 - n.distance)::float8 FROM nearest n \
         JOIN evidence e ON e.team_id = {team} AND e.evidence_id = n.evidence_id \
         ORDER BY n.distance, n.evidence_id",
        inner = stmt.sql,
        columns = evidence_columns(query.known_at),
    );
    stmt
}

/// The shortest HNSW candidate list a search walks. pgvector's default (40) left a
/// top-10 search at 0.90–0.92 recall against the exact scan on 3,000 random 64-d
/// vectors, run to run; 100 gives 0.99–1.00 for about 0.3 ms more a query.
const MIN_EF_SEARCH: usize = 100;

/// HNSW search settings for this transaction: a candidate list at least as long as the
/// pool (and never shorter than [`MIN_EF_SEARCH`]), and iterative scans that keep walking
/// the graph until enough rows pass the filters (pgvector 0.8).
pub async fn tune_vector_scan(tx: &impl Session, pool: usize) -> Result<()> {
    prepared::execute(
        tx,
        "SELECT set_config('hnsw.ef_search', $1, true), \
                set_config('hnsw.iterative_scan', 'relaxed_order', true)",
        &[&ef_search(pool)],
    )
    .await?;
    Ok(())
}

/// The HNSW candidate list for a pool of `pool`, as `hnsw.ef_search` takes it.
fn ef_search(pool: usize) -> String {
    pool.clamp(MIN_EF_SEARCH, 1000).to_string()
}

/// Evidence windows: each hit's eligible neighbours in its source group, nearest first on
/// each side. One statement per side for all hits: a lateral index walk from each hit's
/// position that stops after `window` eligible rows.
pub async fn neighbours(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    hits: &[Evidence],
    window: usize,
) -> Result<HashMap<EvidenceId, Neighbours>> {
    let grouped: Vec<&Evidence> = hits.iter().filter(|h| h.source_key.is_some()).collect();
    let mut found: HashMap<EvidenceId, Neighbours> = grouped
        .iter()
        .map(|hit| (hit.id, Neighbours::default()))
        .collect();
    if window == 0 || grouped.is_empty() {
        return Ok(HashMap::new());
    }
    // One statement per side; both sent together (tokio-postgres pipelines them), so the
    // two cost one round trip.
    let side = |comparison: &str, direction: &str| {
        let mut stmt = Statement::default();
        let ids = stmt.arg(grouped.iter().map(|h| h.id.0).collect::<Vec<uuid::Uuid>>());
        let stamps = stmt.arg(
            grouped
                .iter()
                .map(|h| h.observed_at.as_micros())
                .collect::<Vec<i64>>(),
        );
        let keys = stmt.arg(
            grouped
                .iter()
                .map(|h| h.source_key.clone().unwrap_or_default())
                .collect::<Vec<String>>(),
        );
        let team = stmt.arg(actor.team.0);
        stmt.sql = format!(
            "SELECT e.evidence_id FROM evidence e \
             WHERE e.source_key = h.key \
             AND (e.observed_at, e.evidence_id) {comparison} (h.at, h.id)"
        );
        push_eligibility(&mut stmt, actor, query, now);
        let limit = stmt.arg(window as i64);
        let inner = std::mem::take(&mut stmt.sql);
        stmt.sql = format!(
            "SELECT {columns}, h.id FROM \
             unnest({ids}::uuid[], {stamps}::int8[], {keys}::text[]) WITH ORDINALITY \
               AS h (id, at, key, ord) \
             CROSS JOIN LATERAL ({inner} \
               ORDER BY e.observed_at {direction}, e.evidence_id {direction} \
               LIMIT {limit}) n \
             JOIN evidence e ON e.team_id = {team} AND e.evidence_id = n.evidence_id \
             ORDER BY h.ord, e.observed_at {direction}, e.evidence_id {direction}",
            columns = evidence_columns(query.known_at),
        );
        stmt
    };
    let (before, after) = (side("<", "DESC"), side(">", "ASC"));
    let (before_params, after_params) = (param_refs(&before.params), param_refs(&after.params));
    let (before_rows, after_rows) = tokio::try_join!(
        prepared::query(tx, &before.sql, &before_params),
        prepared::query(tx, &after.sql, &after_params),
    )?;
    for (rows, is_before) in [(before_rows, true), (after_rows, false)] {
        for row in &rows {
            let hit = EvidenceId(col(row, EVIDENCE_COLUMN_COUNT)?);
            let neighbour = evidence_from_row(row)?;
            if let Some(entry) = found.get_mut(&hit) {
                if is_before {
                    entry.before.push(neighbour);
                } else {
                    entry.after.push(neighbour);
                }
            }
        }
    }
    Ok(found)
}

/// The team's current texts inside the query's period, counted up to `cap` on the
/// listing index ([`mnem_sql::period_count`]); `None` without a period.
pub(crate) async fn texts_in_period(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    cap: usize,
) -> Result<Option<usize>> {
    let mut stmt = Statement::default();
    let Some(sql) = mnem_sql::period_count(&mut stmt, actor, query, cap) else {
        return Ok(None);
    };
    let params = param_refs(&stmt.params);
    let count: i64 = col(&prepared::query_one(tx, &sql, &params).await?, 0)?;
    Ok(Some(usize::try_from(count).unwrap_or(0)))
}
