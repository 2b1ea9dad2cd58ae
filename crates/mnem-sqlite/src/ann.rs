//! The approximate vector index for large teams: one in-memory HNSW graph per (team,
//! embedding contract), built on first use and caught up from `search_documents` on
//! every query, so writes by other processes on the same file are picked up too.
//!
//! Eligibility is never approximated: the eligible documents are selected in SQL exactly
//! as for the exact scan, and the graph search only visits those. A selective filter
//! (few eligible documents) goes to the exact scan instead, where a filtered graph walk
//! would lose recall.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use hnsw_rs::prelude::{Distance, Hnsw};
use mnem_core::TeamId;
use rusqlite::{params, Connection};

/// Graph degree and construction beam: recall ≥ 0.98 against the exact scan at 10 in the
/// filtered multi-team test (`tests/ann_recall.rs`).
const MAX_CONNECTIONS: usize = 16;
const MAX_LAYERS: usize = 16;
const EF_CONSTRUCTION: usize = 200;
/// Fewer eligible documents than this many per requested candidate: exact scan.
const SELECTIVE_FACTOR: usize = 20;

/// 1 − dot product, for unit vectors the cosine distance; clamped at 0 because rounding
/// can push the dot product of a vector with itself just above 1.
#[derive(Default, Clone, Copy)]
struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        (1.0 - dot).max(0.0)
    }
}

struct TeamGraph {
    graph: Hnsw<'static, f32, UnitDot>,
    indexed: HashSet<i64>,
    /// `updated_at` of the newest row folded in; rows at or after it are re-read.
    watermark: i64,
}

/// One graph per team and embedding-contract key.
type GraphKey = (TeamId, String);

/// The graphs of one store over one derived-document table (shared by its clones).
pub struct AnnIndexes {
    /// `search_documents` (evidence) or `graph_documents` (discovery): both have `doc`,
    /// `team_id`, `contract`, `state`, `vector` and `updated_at`.
    table: &'static str,
    graphs: Mutex<HashMap<GraphKey, Arc<Mutex<TeamGraph>>>>,
}

impl AnnIndexes {
    pub fn over(table: &'static str) -> Self {
        Self {
            table,
            graphs: Mutex::default(),
        }
    }
}

/// What the vector branch should do for one query.
pub enum Plan {
    Exact,
    /// Similarity-ordered `(similarity, doc)` from the graph, best first.
    Approximate(Vec<(f32, i64)>),
}

impl AnnIndexes {
    /// Documents held by all graphs (diagnostics and tests).
    pub fn indexed_documents(&self) -> usize {
        let graphs = self.graphs.lock().unwrap_or_else(PoisonError::into_inner);
        graphs
            .values()
            .map(|g| {
                g.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .indexed
                    .len()
            })
            .sum()
    }

    /// Searches the team's graph when the team has at least `threshold` current vectors
    /// under the contract and `eligible` (sorted docs) is not selective.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        conn: &Connection,
        team: TeamId,
        contract_key: &str,
        threshold: usize,
        eligible: &[usize],
        query: &[f32],
        pool: usize,
    ) -> rusqlite::Result<Plan> {
        if eligible.len() < threshold || eligible.len() < pool * SELECTIVE_FACTOR {
            return Ok(Plan::Exact);
        }
        let graph = self.graph_for(team, contract_key, eligible.len());
        let mut graph = graph.lock().unwrap_or_else(PoisonError::into_inner);
        catch_up(conn, self.table, &mut graph, team, contract_key)?;
        let ef = (pool * 2).max(256);
        let filter: &[usize] = eligible;
        let filter = |id: &usize| filter.binary_search(id).is_ok();
        let mut seen = HashSet::new();
        let found = graph
            .graph
            .search_filter(query, pool, ef, Some(&filter))
            .into_iter()
            .filter(|n| seen.insert(n.d_id))
            .map(|n| (1.0 - n.distance, n.d_id as i64))
            .collect();
        Ok(Plan::Approximate(found))
    }
}

impl AnnIndexes {
    /// The team's graph for the contract, created empty (sized for `capacity`) on first use.
    fn graph_for(
        &self,
        team: TeamId,
        contract_key: &str,
        capacity: usize,
    ) -> Arc<Mutex<TeamGraph>> {
        let mut graphs = self.graphs.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = graphs
            .entry((team, contract_key.to_string()))
            .or_insert_with(|| {
                Arc::new(Mutex::new(TeamGraph {
                    graph: Hnsw::new(
                        MAX_CONNECTIONS,
                        capacity.max(1024),
                        MAX_LAYERS,
                        EF_CONSTRUCTION,
                        UnitDot,
                    ),
                    indexed: HashSet::new(),
                    watermark: i64::MIN,
                }))
            });
        Arc::clone(entry)
    }

    /// Builds the graph of every team with at least `threshold` current vectors now, so
    /// the first query of a long-lived process does not pay for it (seconds at 10k).
    /// Returns the number of graphs built or caught up.
    pub fn warm(&self, conn: &Connection, threshold: usize) -> rusqlite::Result<usize> {
        let mut stmt = conn.prepare(&format!(
            "SELECT team_id, contract, COUNT(*) FROM {} WHERE state = 'current' \
             AND vector IS NOT NULL GROUP BY team_id, contract HAVING COUNT(*) >= ?1",
            self.table
        ))?;
        let large: Vec<(TeamId, String, i64)> = stmt
            .query_map(params![threshold as i64], |row| {
                let team: Vec<u8> = row.get(0)?;
                let team: [u8; 16] = team.try_into().map_err(|_| {
                    rusqlite::Error::InvalidColumnType(
                        0,
                        "team_id".into(),
                        rusqlite::types::Type::Blob,
                    )
                })?;
                Ok((TeamId::from_bytes(team), row.get(1)?, row.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (team, contract_key, count) in &large {
            let graph = self.graph_for(*team, contract_key, *count as usize);
            let mut graph = graph.lock().unwrap_or_else(PoisonError::into_inner);
            catch_up(conn, self.table, &mut graph, *team, contract_key)?;
        }
        Ok(large.len())
    }
}

/// Folds rows written since the graph's watermark into it.
fn catch_up(
    conn: &Connection,
    table: &str,
    graph: &mut TeamGraph,
    team: TeamId,
    contract_key: &str,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT doc, vector, updated_at FROM {table} \
         WHERE team_id = ?1 AND contract = ?2 AND state = 'current' AND updated_at >= ?3"
    ))?;
    let mut fresh: Vec<(usize, Vec<f32>)> = Vec::new();
    let mut rows = stmt.query(params![team.as_bytes(), contract_key, graph.watermark])?;
    let mut watermark = graph.watermark;
    while let Some(row) = rows.next()? {
        let doc: i64 = row.get(0)?;
        let updated_at: i64 = row.get(2)?;
        watermark = watermark.max(updated_at);
        if graph.indexed.insert(doc) {
            let blob = row.get_ref(1)?.as_blob()?;
            let vector = blob
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            fresh.push((doc as usize, vector));
        }
    }
    if !fresh.is_empty() {
        tracing::info!(documents = fresh.len(), "adding vectors to the ANN index");
        let batch: Vec<(&[f32], usize)> =
            fresh.iter().map(|(doc, v)| (v.as_slice(), *doc)).collect();
        graph.graph.parallel_insert_slice(&batch);
    }
    graph.watermark = watermark;
    Ok(())
}
