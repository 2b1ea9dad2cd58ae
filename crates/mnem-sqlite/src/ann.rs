//! The approximate vector index of large teams: one usearch HNSW index per (derived
//! table, team, embedding contract), saved in a directory beside the store file so a
//! process opens it instead of rebuilding it, and caught up before every search from
//! `change_seq`, a per-team sequence that SQLite triggers stamp on every change of a
//! derived row (migration 0008).
//!
//! The index only proposes. The documents it returns are read again in SQL, where
//! eligibility is exact and similarity is recomputed from the stored f32 vector, so a
//! stale, half-saved or 8-bit quantised index can cost recall, never a wrong score or an
//! ineligible result. When too few proposals are eligible (a selective filter) the
//! search widens, as pgvector's iterative scan does, and then falls back to the exact
//! scan, which is always right.
//!
//! Crash safety: a saved index is written to a temporary file, synced and renamed, and
//! its name carries the `change_seq` it has folded in. A process killed at any point
//! leaves the previous file (or none), which the next process catches up from.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use cxx::Exception;
use mnem_core::lexical::topk::presumed_pool;
use mnem_core::TeamId;
use rusqlite::{params, Connection, OptionalExtension};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Graph degree and beams: recall@10 ≥ 0.98 against the exact scan in the filtered
/// multi-team test (`tests/ann_recall.rs`). usearch searches with max(beam, wanted).
const CONNECTIVITY: usize = 16;
const EXPANSION_ADD: usize = 128;
const EXPANSION_SEARCH: usize = 128;
/// The first search asks for as many proposals as the lexical top-k presumes
/// (`mnem_core::lexical::topk::presumed_pool`: the wanted candidates and an eighth more; at
/// least `MIN_FETCH`), widening by `WIDEN` while too few are eligible, up to
/// `MAX_FETCH_FACTOR` per wanted candidate; past that the filter is selective and the exact
/// scan is cheaper. The eighth absorbs a few ineligible proposals (another profile's
/// private text) without a second search. Twice the pool, asked before, searched 33%
/// longer (`examples/ann_kinds.rs`, inner i8: p50 0.730 against 0.547 ms, same
/// recall@10) and re-read twice the rows; at 100k (`mnem bench`, the two alternating query
/// by query in one process) hybrid recall p50 / p95 / p99 fell from 2.98 / 5.21 / 6.90 to
/// 2.62 / 4.71 / 6.06 ms.
const MIN_FETCH: usize = 32;
const WIDEN: usize = 4;
const MAX_FETCH_FACTOR: usize = 32;
/// Changes folded in since the last save before a search saves the index again.
const SAVE_AFTER: usize = 1024;
/// A temporary save file untouched this long was left by a killed process.
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(600);
/// Concurrent searches one index serves (usearch keeps a scratch context per thread).
const SEARCH_CONTEXTS: usize = 16;

/// One team's index under one contract; `index` is `None` until the first vector.
struct TeamIndex {
    index: Option<Index>,
    /// The highest `change_seq` folded in.
    watermark: i64,
    /// Changes folded in since the index was loaded or saved.
    unsaved: usize,
}

impl TeamIndex {
    fn empty() -> Self {
        Self {
            index: None,
            watermark: 0,
            unsaved: 0,
        }
    }

    fn size(&self) -> usize {
        self.index.as_ref().map_or(0, Index::size)
    }
}

type TeamKey = (TeamId, String);

/// The indexes of one store over one derived-document table (shared by its clones).
pub struct AnnIndexes {
    /// `search_documents` (evidence) or `graph_documents` (discovery): both have `doc`,
    /// `team_id`, `contract`, `state`, `vector` and `change_seq`.
    table: &'static str,
    /// Where indexes are saved; `None` (an in-memory store) keeps them in memory only.
    dir: Option<PathBuf>,
    teams: Mutex<HashMap<TeamKey, Arc<RwLock<TeamIndex>>>>,
    /// Indexes opened from a saved file rather than built.
    loaded: AtomicUsize,
}

/// Takes proposed docs, returns the eligible ones with their exact similarity.
pub type Verify<'a> = dyn FnMut(&[i64]) -> rusqlite::Result<Vec<(f32, i64)>> + 'a;

/// What the vector branch should do for one query.
pub enum Plan {
    Exact,
    /// Eligible `(similarity, doc)`, similarity exact, best first.
    Approximate(Vec<(f32, i64)>),
}

impl AnnIndexes {
    pub fn over(table: &'static str, dir: Option<PathBuf>) -> Self {
        Self {
            table,
            dir,
            teams: Mutex::default(),
            loaded: AtomicUsize::new(0),
        }
    }

    /// Documents held by the indexes this process has open (diagnostics and tests).
    pub fn indexed_documents(&self) -> usize {
        let teams = self.teams.lock().unwrap_or_else(PoisonError::into_inner);
        teams
            .values()
            .map(|t| t.read().unwrap_or_else(PoisonError::into_inner).size())
            .sum()
    }

    /// Indexes this process opened from a saved file.
    pub fn loaded_from_disk(&self) -> usize {
        self.loaded.load(Ordering::Relaxed)
    }

    /// Searches the team's index when it holds at least `threshold` vectors under the
    /// contract. `verify` takes proposed docs and returns the eligible ones with their
    /// exact similarity; the plan is `Exact` when the index cannot answer well.
    #[allow(clippy::too_many_arguments)]
    pub fn search(
        &self,
        conn: &Connection,
        team: TeamId,
        contract_key: &str,
        threshold: usize,
        query: &[f32],
        pool: usize,
        verify: &mut Verify<'_>,
    ) -> rusqlite::Result<Plan> {
        let Some(handle) = self.open(conn, team, contract_key, threshold)? else {
            return Ok(Plan::Exact);
        };
        self.catch_up_and_maybe_save(conn, team, contract_key, &handle, SAVE_AFTER)?;
        let state = handle.read().unwrap_or_else(PoisonError::into_inner);
        let Some(index) = &state.index else {
            return Ok(Plan::Exact);
        };
        let size = index.size();
        if size < threshold.max(1) || index.dimensions() != query.len() {
            return Ok(Plan::Exact);
        }
        let mut seen = std::collections::HashSet::new();
        let mut found: Vec<(f32, i64)> = Vec::new();
        let mut want = presumed_pool(pool).max(MIN_FETCH);
        loop {
            let count = want.min(size);
            let matches = match index.search(query, count) {
                Ok(matches) => matches,
                Err(error) => {
                    tracing::warn!(%error, "vector index search failed; scanning exactly");
                    return Ok(Plan::Exact);
                }
            };
            let fresh: Vec<i64> = matches
                .keys
                .iter()
                .map(|&key| key as i64)
                .filter(|doc| seen.insert(*doc))
                .collect();
            if !fresh.is_empty() {
                found.extend(verify(&fresh)?);
            }
            if found.len() >= pool {
                break;
            }
            if count >= size || want >= pool * MAX_FETCH_FACTOR {
                // Few eligible documents among many: the exact scan finds them all.
                return Ok(Plan::Exact);
            }
            want *= WIDEN;
        }
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        found.truncate(pool);
        Ok(Plan::Approximate(found))
    }

    /// Opens, catches up and saves the index of every team with at least `threshold`
    /// current vectors now, so no first query waits for a build. Returns how many.
    pub fn warm(&self, conn: &Connection, threshold: usize) -> rusqlite::Result<usize> {
        let mut stmt = conn.prepare(&format!(
            "SELECT team_id, contract FROM {} WHERE state = 'current' \
             AND vector IS NOT NULL GROUP BY team_id, contract HAVING COUNT(*) >= ?1",
            self.table
        ))?;
        let large: Vec<(TeamId, String)> = stmt
            .query_map(params![threshold.max(1) as i64], |row| {
                Ok((team_from_blob(row.get(0)?)?, row.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (team, contract_key) in &large {
            if let Some(handle) = self.open(conn, *team, contract_key, threshold)? {
                self.catch_up_and_maybe_save(conn, *team, contract_key, &handle, 1)?;
            }
        }
        Ok(large.len())
    }
}

impl AnnIndexes {
    /// The team's index when the team has at least `threshold` current vectors: already
    /// open in this process, else the newest saved one, else a new empty one. `None` for
    /// a small team, which the exact scan serves (one bounded read per query).
    fn open(
        &self,
        conn: &Connection,
        team: TeamId,
        contract_key: &str,
        threshold: usize,
    ) -> rusqlite::Result<Option<Arc<RwLock<TeamIndex>>>> {
        let key = (team, contract_key.to_string());
        let mut teams = self.teams.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = teams.get(&key) {
            return Ok(Some(Arc::clone(open)));
        }
        if !has_at_least(conn, self.table, team, contract_key, threshold)? {
            return Ok(None);
        }
        let newest = newest_change(conn, self.table, team)?;
        let state = self
            .load(team, contract_key, newest)
            .unwrap_or_else(TeamIndex::empty);
        let handle = Arc::new(RwLock::new(state));
        teams.insert(key, Arc::clone(&handle));
        Ok(Some(handle))
    }

    fn catch_up_and_maybe_save(
        &self,
        conn: &Connection,
        team: TeamId,
        contract_key: &str,
        handle: &RwLock<TeamIndex>,
        save_after: usize,
    ) -> rusqlite::Result<()> {
        // Usually nothing changed: searches then share the read lock.
        let newest = newest_change(conn, self.table, team)?;
        {
            let state = handle.read().unwrap_or_else(PoisonError::into_inner);
            if state.watermark >= newest && state.unsaved < save_after {
                return Ok(());
            }
        }
        let mut state = handle.write().unwrap_or_else(PoisonError::into_inner);
        if catch_up(conn, self.table, team, contract_key, &mut state)? == CatchUp::Rebuild {
            // An erased document's vector is in the index: rebuild without it, and drop
            // the saved files that hold it.
            self.remove_saved(team, contract_key, i64::MAX);
            *state = TeamIndex::empty();
            catch_up(conn, self.table, team, contract_key, &mut state)?;
        }
        if state.unsaved >= save_after {
            self.save(team, contract_key, &mut state);
        }
        Ok(())
    }
}

#[derive(PartialEq)]
enum CatchUp {
    Done,
    /// A document held by the index was erased.
    Rebuild,
}

/// Folds the rows changed since the index's watermark into it: current vectors under the
/// contract are added (or replaced), anything else is removed.
fn catch_up(
    conn: &Connection,
    table: &str,
    team: TeamId,
    contract_key: &str,
    state: &mut TeamIndex,
) -> rusqlite::Result<CatchUp> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT doc, state, contract, vector, change_seq FROM {table} \
         WHERE team_id = ?1 AND change_seq > ?2 ORDER BY change_seq"
    ))?;
    let mut rows = stmt.query(params![team.as_bytes(), state.watermark])?;
    let mut adds: Vec<(u64, Vec<f32>)> = Vec::new();
    let mut removes: Vec<u64> = Vec::new();
    let mut watermark = state.watermark;
    while let Some(row) = rows.next()? {
        let doc = row.get::<_, i64>(0)? as u64;
        let row_state: String = row.get(1)?;
        let contract: Option<String> = row.get(2)?;
        watermark = row.get(4)?;
        let vector = row.get_ref(3)?.as_blob_or_null()?.filter(|b| !b.is_empty());
        match vector {
            Some(blob) if row_state == "current" && contract.as_deref() == Some(contract_key) => {
                adds.push((doc, decode(blob)))
            }
            _ => {
                let held = state.index.as_ref().is_some_and(|i| i.contains(doc));
                if row_state == "erased" && held {
                    return Ok(CatchUp::Rebuild);
                }
                removes.push(doc);
            }
        }
    }
    let changes = adds.len() + removes.len();
    if changes > 0 {
        if let Err(error) = apply(state, adds, &removes) {
            // The index is derived: start it again rather than serve a half-applied one.
            tracing::warn!(%error, "vector index update failed; rebuilding it");
            *state = TeamIndex::empty();
            return Ok(CatchUp::Rebuild);
        }
        state.unsaved += changes;
    }
    state.watermark = watermark;
    Ok(CatchUp::Done)
}

fn apply(
    state: &mut TeamIndex,
    adds: Vec<(u64, Vec<f32>)>,
    removes: &[u64],
) -> Result<(), Exception> {
    if state.index.is_none() {
        let Some((_, first)) = adds.first() else {
            return Ok(());
        };
        state.index = Some(new_index(first.len())?);
    }
    let Some(index) = state.index.as_ref() else {
        return Ok(());
    };
    for doc in removes {
        if index.contains(*doc) {
            index.remove(*doc)?;
        }
    }
    let adds: Vec<(u64, Vec<f32>)> = adds
        .into_iter()
        .filter(|(_, v)| v.len() == index.dimensions())
        .collect();
    if adds.is_empty() {
        return Ok(());
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let needed = index.size() + adds.len();
    if needed > index.capacity() {
        index.reserve_capacity_and_threads(
            needed.max(index.capacity() * 2),
            SEARCH_CONTEXTS.max(threads),
        )?;
    }
    let started = Instant::now();
    let bulk = adds.len() >= 10_000;
    if bulk {
        tracing::info!(vectors = adds.len(), "building the vector index");
    }
    for (doc, _) in &adds {
        if index.contains(*doc) {
            index.remove(*doc)?;
        }
    }
    // usearch adds are thread-safe once thread contexts are reserved.
    let chunk = adds.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = adds
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .try_for_each(|(doc, vector)| index.add(*doc, vector.as_slice()))
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })?;
    if bulk {
        tracing::info!(
            vectors = adds.len(),
            seconds = started.elapsed().as_secs_f64(),
            "vector index built"
        );
    }
    Ok(())
}

fn new_index(dimensions: usize) -> Result<Index, Exception> {
    let options = IndexOptions {
        dimensions,
        // Every embedding contract L2-normalises its vectors and the exact re-score is a
        // dot product, so the inner product proposes what cosine would with one
        // accumulator instead of three.
        metric: MetricKind::IP,
        // A quarter of the memory and file of f32; the exact re-score makes up the
        // precision. `examples/ann_kinds.rs` over 37,000 real all-MiniLM-L6-v2 vectors
        // (LongMemEval turns), 472 queries alternating in one process, asking 112: p50
        // search 0.695 ms cosine bf16, 0.632 inner bf16, 0.587 inner f32, 0.547 inner i8;
        // recall@10 0.9996 / 0.9998 / 0.9994 / 0.9998 and recall@100 0.982 / 0.982 /
        // 0.982 / 0.979 against the exact scan; built in 8.4 / 5.6 / 7.2 / 6.2 s on 2
        // cores. (Without usearch's SIMD kernels f16 converts in software: 3.6× slower to
        // build than bf16.) An index saved under the earlier cosine bf16 kind keeps it:
        // `Index::restore` reads the kind from the file, and proposals are re-scored alike.
        quantization: ScalarKind::I8,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    };
    Index::new(&options)
}

/// Saved indexes: `<table>-<team>-<contract hash>.<change_seq>.usearch`.
impl AnnIndexes {
    fn prefix(&self, team: TeamId, contract_key: &str) -> String {
        format!(
            "{}-{}-{:016x}.",
            self.table,
            team.as_uuid().simple(),
            fnv1a(contract_key)
        )
    }

    /// Saved files of the team's index, newest first.
    fn saved(&self, team: TeamId, contract_key: &str) -> Vec<(i64, PathBuf)> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let prefix = self.prefix(team, contract_key);
        let Ok(entries) = fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut saved: Vec<(i64, PathBuf)> = entries
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let name = path.file_name()?.to_str()?;
                let seq = name.strip_prefix(&prefix)?.strip_suffix(".usearch")?;
                Some((seq.parse().ok()?, path))
            })
            .collect();
        saved.sort_by_key(|(seq, _)| std::cmp::Reverse(*seq));
        saved
    }

    /// The newest saved index that loads and is not ahead of the store (a file from a
    /// newer copy of the store would miss the changes this copy made since).
    fn load(&self, team: TeamId, contract_key: &str, newest_change: i64) -> Option<TeamIndex> {
        for (watermark, path) in self.saved(team, contract_key) {
            if watermark > newest_change {
                continue;
            }
            let loaded = path
                .to_str()
                .ok_or_else(|| "a non-UTF-8 path".to_string())
                .and_then(|p| Index::restore(p).map_err(|e| e.to_string()))
                .and_then(|index| {
                    index.change_expansion_search(EXPANSION_SEARCH);
                    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                    index
                        .reserve_capacity_and_threads(index.size(), SEARCH_CONTEXTS.max(threads))
                        .map_err(|e| e.to_string())?;
                    Ok(index)
                });
            match loaded {
                Ok(index) => {
                    self.loaded.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(path = %path.display(), vectors = index.size(), "vector index loaded");
                    return Some(TeamIndex {
                        index: Some(index),
                        watermark,
                        unsaved: 0,
                    });
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "a saved vector index did not load; trying an older one or rebuilding");
                }
            }
        }
        None
    }

    /// Writes the index to a temporary file, syncs it, renames it into place and removes
    /// older saves. A failure is logged: the index is derived, the next save retries.
    fn save(&self, team: TeamId, contract_key: &str, state: &mut TeamIndex) {
        let (Some(dir), Some(index)) = (&self.dir, &state.index) else {
            return;
        };
        let prefix = self.prefix(team, contract_key);
        let target = dir.join(format!("{prefix}{:020}.usearch", state.watermark));
        let temporary = dir.join(format!("{prefix}{}.tmp", std::process::id()));
        let result = (|| -> Result<(), String> {
            fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let text = temporary.to_str().ok_or("a non-UTF-8 path")?;
            index.save(text).map_err(|e| e.to_string())?;
            fs::File::open(&temporary)
                .and_then(|f| f.sync_all())
                .map_err(|e| e.to_string())?;
            fs::rename(&temporary, &target).map_err(|e| e.to_string())?;
            fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| e.to_string())
        })();
        match result {
            Ok(()) => {
                state.unsaved = 0;
                self.remove_saved(team, contract_key, state.watermark);
            }
            Err(error) => {
                let _ = fs::remove_file(&temporary);
                tracing::warn!(path = %target.display(), %error, "saving the vector index failed");
            }
        }
    }

    /// Removes the team's saved indexes older than `watermark`, and temporary files a
    /// killed process left (a live save takes seconds, so an old one has no writer).
    fn remove_saved(&self, team: TeamId, contract_key: &str, watermark: i64) {
        for (seq, path) in self.saved(team, contract_key) {
            if seq < watermark {
                let _ = fs::remove_file(path);
            }
        }
        let Some(Ok(entries)) = self.dir.as_ref().map(fs::read_dir) else {
            return;
        };
        let prefix = self.prefix(team, contract_key);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let abandoned = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > ABANDONED_AFTER);
            if name.starts_with(&prefix) && name.ends_with(".tmp") && abandoned {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// The team's highest `change_seq` (0 when it has no rows).
fn newest_change(conn: &Connection, table: &str, team: TeamId) -> rusqlite::Result<i64> {
    conn.prepare_cached(&format!(
        "SELECT COALESCE(MAX(change_seq), 0) FROM {table} WHERE team_id = ?1"
    ))?
    .query_row(params![team.as_bytes()], |row| row.get(0))
}

/// Whether the team has at least `threshold` current vectors under the contract, reading
/// at most that many index entries.
fn has_at_least(
    conn: &Connection,
    table: &str,
    team: TeamId,
    contract_key: &str,
    threshold: usize,
) -> rusqlite::Result<bool> {
    let threshold = threshold.max(1);
    let found: Option<i64> = conn
        .prepare_cached(&format!(
            "SELECT 1 FROM {table} WHERE team_id = ?1 AND state = 'current' \
             AND contract = ?2 LIMIT 1 OFFSET ?3"
        ))?
        .query_row(
            params![team.as_bytes(), contract_key, threshold as i64 - 1],
            |row| row.get(0),
        )
        .optional()?;
    Ok(found.is_some())
}

fn decode(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn team_from_blob(blob: Vec<u8>) -> rusqlite::Result<TeamId> {
    let bytes: [u8; 16] = blob.try_into().map_err(|_| {
        rusqlite::Error::InvalidColumnType(0, "team_id".into(), rusqlite::types::Type::Blob)
    })?;
    Ok(TeamId::from_bytes(bytes))
}

/// A stable 64-bit hash of the contract key for file names (FNV-1a): the key itself may
/// hold characters a file name cannot.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
