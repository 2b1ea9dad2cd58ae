//! The full-text index and the lexical branch, on mnem's own terms
//! (`mnem_core::lexical`), as on SQLite: per-team block posting lists and statistics,
//! searched by the core's top-k ([`mnem_core::lexical::topk`]) and scored by the core's
//! BM25.
//!
//! Tables (migration 0013): `lexical_blocks`, each team's postings per term in blocks of
//! up to 128 ([`mnem_core::lexical::blocks`]) keyed by their last doc (`evidence.doc`);
//! `term_stats`, a term's document count and the extremes that bound its scores, and
//! `text_stats`, a team's documents and their total length (both counted by trigger).
//! Blocks are written in the evidence's transaction while it holds the lock of the
//! team's `text_stats` row, so a team's blocks are edited by one writer at a time and a
//! write is searchable as soon as it commits.
//!
//! Every read asks for what the search needs in one statement: all of a step's block
//! reads at once (a lateral join per read), the eligibility of a batch of docs by the
//! `(team_id, doc)` index, and the selected records.

use std::collections::{BTreeMap, HashMap};

use deadpool_postgres::Transaction;
use mnem_core::lexical::blocks::{
    Block, BlockChanges, BlockEdit, BlockSummary, Posting, StoredBlock,
};
use mnem_core::lexical::topk::{BlockRead, BranchOrder, Need, OrderKeys, SearchTerm, TopK};
use mnem_core::lexical::{document_terms, Bm25, CorpusStats, DocumentTerms};
use mnem_core::{Actor, Candidate, RecallQuery, Timestamp};
use mnem_store::{Result, StoreError};
use uuid::Uuid;

use crate::prepared::{self, Session};
use crate::recall_branches::{candidate_from_row, evidence_columns, Statement};
use crate::rows::{col, StoredTexts};
use crate::{param_refs, DbResult};

/// Stores blocks given as one array per column (`$1` the team).
const STORE_BLOCKS: &str = "INSERT INTO lexical_blocks (team_id, term, last_doc, first_doc, \
     postings, max_frequency, min_length, data) SELECT $1, * FROM unnest($2::text[], \
     $3::bigint[], $4::bigint[], $5::int[], $6::int[], $7::int[], $8::bytea[])";

/// Deletes the blocks stored under these (term, last doc) keys.
const DELETE_BLOCKS: &str = "DELETE FROM lexical_blocks b \
     USING unnest($2::text[], $3::bigint[]) AS d (term, last_doc) \
     WHERE b.team_id = $1 AND b.term = d.term AND b.last_doc = d.last_doc";

/// Every stored block an edit of these terms from doc `$3` on can touch (the
/// [`BlockEdit`] rule): each ending at or after `$3`, and each term's last one.
const TOUCHED_BLOCKS: &str = "SELECT term, last_doc, data FROM lexical_blocks \
     WHERE team_id = $1 AND term = ANY($2) AND last_doc >= $3 \
     UNION ALL \
     SELECT l.term, l.last_doc, l.data FROM unnest($2::text[]) AS t (term) \
     CROSS JOIN LATERAL (SELECT b.term, b.last_doc, b.data FROM lexical_blocks b \
       WHERE b.team_id = $1 AND b.term = t.term ORDER BY b.last_doc DESC LIMIT 1) l \
     WHERE l.last_doc < $3";

/// The team's statistics row, locked until the transaction ends: the lock a team's block
/// edits are made under (the statistics trigger of the evidence write took it first).
const LOCK_TEAM_INDEX: &str = "SELECT 1 FROM text_stats WHERE team_id = $1 FOR UPDATE";

/// Blocks to store, one array per column, for `unnest`.
#[derive(Default)]
struct BlockRows {
    terms: Vec<String>,
    last_docs: Vec<i64>,
    first_docs: Vec<i64>,
    postings: Vec<i32>,
    max_frequencies: Vec<i32>,
    min_lengths: Vec<i32>,
    data: Vec<Vec<u8>>,
}

impl BlockRows {
    fn push(&mut self, term: &str, block: &Block) {
        let Some(s) = block.summary() else {
            return; // an empty block is never stored
        };
        let int = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
        self.terms.push(term.to_owned());
        self.last_docs.push(s.last_doc);
        self.first_docs.push(s.first_doc);
        self.postings.push(int(s.postings));
        self.max_frequencies.push(int(s.max_frequency));
        self.min_lengths.push(int(s.min_length));
        self.data.push(block.encode());
    }

    fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// Adds a team's new texts (doc, terms) to its posting lists. The statistics were
/// counted by the insert's trigger.
pub(crate) async fn index(
    tx: &Transaction<'_>,
    team: Uuid,
    texts: &[(i64, &DocumentTerms)],
) -> Result<()> {
    let mut by_term: BTreeMap<&str, Vec<Posting>> = BTreeMap::new();
    for (doc, terms) in texts {
        for (term, &frequency) in &terms.frequencies {
            by_term.entry(term).or_default().push(Posting {
                doc: *doc,
                frequency,
                length: terms.length,
            });
        }
    }
    let Some(from) = texts.iter().map(|(doc, _)| *doc).min() else {
        return Ok(());
    };
    if by_term.is_empty() {
        return Ok(());
    }
    let mut edits = touched_blocks(tx, team, by_term.keys().copied(), from).await?;
    for (term, postings) in by_term {
        let edit = edits.entry(term.to_owned()).or_default();
        for posting in postings {
            edit.insert(posting);
        }
    }
    write_changes(tx, team, edits).await
}

/// Removes a text (about to be erased) from its team's posting lists; its terms are
/// re-derived from the same text. The statistics are uncounted by the update's trigger.
pub(crate) async fn unindex(
    tx: &Transaction<'_>,
    team: Uuid,
    doc: i64,
    content: &str,
) -> Result<()> {
    let terms = document_terms(content);
    if terms.length == 0 {
        return Ok(());
    }
    let mut edits =
        touched_blocks(tx, team, terms.frequencies.keys().map(String::as_str), doc).await?;
    for edit in edits.values_mut() {
        edit.remove(doc);
    }
    write_changes(tx, team, edits).await
}

/// Takes the team's index lock and reads the blocks an edit of `terms` from `from` on can
/// touch, as one edit per term.
async fn touched_blocks<'t>(
    tx: &Transaction<'_>,
    team: Uuid,
    terms: impl Iterator<Item = &'t str>,
    from: i64,
) -> Result<HashMap<String, BlockEdit>> {
    prepared::query(tx, LOCK_TEAM_INDEX, &[&team]).await?;
    let terms: Vec<&str> = terms.collect();
    let rows = prepared::query(tx, TOUCHED_BLOCKS, &[&team, &terms, &from]).await?;
    let mut stored: HashMap<String, Vec<(i64, Block)>> = HashMap::new();
    for row in &rows {
        let data: Vec<u8> = col(row, 2)?;
        let block = Block::decode(&data).map_err(StoreError::backend)?;
        stored
            .entry(col(row, 0)?)
            .or_default()
            .push((col(row, 1)?, block));
    }
    Ok(stored
        .into_iter()
        .map(|(term, blocks)| (term, BlockEdit::new(blocks)))
        .collect())
}

/// Deletes the blocks the edits changed, then stores what they became: two statements.
async fn write_changes(
    tx: &Transaction<'_>,
    team: Uuid,
    edits: HashMap<String, BlockEdit>,
) -> Result<()> {
    let (mut deleted_terms, mut deleted_docs) = (Vec::new(), Vec::new());
    let mut stored = BlockRows::default();
    for (term, edit) in edits {
        let BlockChanges {
            deleted,
            stored: blocks,
        } = edit.changes();
        for last_doc in deleted {
            deleted_terms.push(term.clone());
            deleted_docs.push(last_doc);
        }
        for block in &blocks {
            stored.push(&term, block);
        }
    }
    if !deleted_terms.is_empty() {
        prepared::execute(tx, DELETE_BLOCKS, &[&team, &deleted_terms, &deleted_docs]).await?;
    }
    if !stored.is_empty() {
        store_blocks(tx, team, &stored).await?;
    }
    Ok(())
}

async fn store_blocks(
    tx: &tokio_postgres::Transaction<'_>,
    team: Uuid,
    rows: &BlockRows,
) -> Result<()> {
    tx.execute(
        STORE_BLOCKS,
        &[
            &team,
            &rows.terms,
            &rows.last_docs,
            &rows.first_docs,
            &rows.postings,
            &rows.max_frequencies,
            &rows.min_lengths,
            &rows.data,
        ],
    )
    .await
    .db()?;
    Ok(())
}

/// Migration 13's Rust step: every stored text's postings, in doc order, a term's block
/// at a time in memory, written as blocks fill. Row-level security is lifted by the
/// caller (the owner has no team).
pub(crate) async fn index_all(tx: &tokio_postgres::Transaction<'_>) -> Result<usize> {
    let mut open: HashMap<(Uuid, String), Block> = HashMap::new();
    let mut full: HashMap<Uuid, BlockRows> = HashMap::new();
    let mut texts = StoredTexts::new();
    let mut indexed = 0usize;
    loop {
        // Each team's texts in doc order, as block posting lists require.
        let batch = texts.next(tx).await?;
        if batch.is_empty() {
            break;
        }
        for (team, doc, content) in &batch {
            let (team, doc) = (*team, *doc);
            let terms = document_terms(content);
            for (term, &frequency) in &terms.frequencies {
                let posting = Posting {
                    doc,
                    frequency,
                    length: terms.length,
                };
                let block = open.entry((team, term.clone())).or_default();
                if let Some(spilled) = block.insert(posting) {
                    let done = std::mem::replace(block, spilled);
                    full.entry(team).or_default().push(term, &done);
                }
            }
        }
        indexed += batch.len();
        for (team, blocks) in full.drain() {
            store_blocks(tx, team, &blocks).await?;
        }
        tracing::info!(indexed, "indexing stored texts as block posting lists");
    }
    for ((team, term), block) in open {
        full.entry(team).or_default().push(&term, &block);
    }
    for (team, blocks) in full {
        store_blocks(tx, team, &blocks).await?;
    }
    Ok(indexed)
}

/// The lexical branch for a text query: the `pool` best eligible matches by BM25 (or by
/// recency, for a recency-ordered query), with their relevance. The core's top-k drives
/// the reads. `prune = false` scores every match (the oracle the pruning is tested
/// against).
pub(crate) async fn search(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    pool: usize,
    prune: bool,
) -> Result<Vec<Candidate>> {
    let team = actor.team.0;
    let wanted = query.lexical_terms();
    // Two independent reads, sent together: one round trip.
    let (stats, known) = tokio::try_join!(corpus_stats(tx, team), term_stats(tx, team, &wanted))?;
    let Some(stats) = stats else {
        return Ok(Vec::new()); // the team has no text yet
    };
    let bm25 = Bm25::new(stats);
    let (terms, search_terms) = query_terms(&wanted, &known, &bm25);
    let order = BranchOrder::of(query, prune);
    let mut topk = TopK::new(bm25, &search_terms, pool, order);
    if !search_terms.is_empty() && crate::recall_branches::small_period(tx, actor, query).await? {
        // A short period of a long history: the walk visits only its texts.
        topk.supply_eligible_set(eligible_docs(tx, actor, query, now, None).await?);
    }
    loop {
        match topk.need().map_err(StoreError::backend)? {
            Need::Blocks(reads) => {
                for (read, blocks, complete) in read_blocks(tx, team, &terms, &reads).await? {
                    topk.supply_blocks(read.term, blocks, complete);
                }
            }
            Need::Eligibility(docs) => {
                topk.supply_eligible(eligible_docs(tx, actor, query, now, Some(&docs)).await?);
            }
            Need::EligibleSet => {
                topk.supply_eligible_set(eligible_docs(tx, actor, query, now, None).await?);
            }
            Need::Done => break,
        }
    }
    let (docs, relevance): (Vec<i64>, Vec<f64>) = topk
        .results()
        .into_iter()
        .map(|(doc, relevance, _)| (doc, relevance))
        .unzip();
    records(tx, team, query, &docs, &relevance).await
}

async fn corpus_stats(tx: &impl Session, team: Uuid) -> Result<Option<CorpusStats>> {
    let row = prepared::query_opt(
        tx,
        "SELECT documents, lexemes FROM text_stats WHERE team_id = $1 AND documents > 0",
        &[&team],
    )
    .await?;
    row.map(|row| {
        Ok(CorpusStats {
            documents: col::<i64>(&row, 0)?.max(0) as u64,
            total_length: col::<i64>(&row, 1)?.max(0) as u64,
        })
    })
    .transpose()
}

/// Each term the team holds, with its documents, the highest frequency and the shortest
/// length among its postings.
type KnownTerms = HashMap<String, (i64, i64, i64)>;

/// What the team's statistics say of each of `terms` it holds.
async fn term_stats(tx: &impl Session, team: Uuid, terms: &[String]) -> Result<KnownTerms> {
    let rows = prepared::query(
        tx,
        "SELECT lexeme, documents, max_frequency, min_length FROM term_stats \
         WHERE team_id = $1 AND lexeme = ANY($2) AND documents > 0",
        &[&team, &terms],
    )
    .await?;
    let mut known = HashMap::with_capacity(rows.len());
    for row in &rows {
        known.insert(col(row, 0)?, (col(row, 1)?, col(row, 2)?, col(row, 3)?));
    }
    Ok(known)
}

/// The query's terms that occur in the team, in the query's order (the order each
/// document's score is summed in, as on SQLite), and what the search knows of each.
fn query_terms(
    terms: &[String],
    known: &KnownTerms,
    bm25: &Bm25,
) -> (Vec<String>, Vec<SearchTerm>) {
    let bounded = |value: i64| u32::try_from(value.max(0)).unwrap_or(u32::MAX);
    let mut found = (Vec::new(), Vec::new());
    for term in terms {
        if let Some(&(documents, max_frequency, min_length)) = known.get(term) {
            let idf = bm25.idf(documents.max(0) as u64);
            found.0.push(term.clone());
            found.1.push(SearchTerm::new(
                bm25,
                idf,
                bounded(max_frequency),
                bounded(min_length),
            ));
        }
    }
    found
}

/// A read's answer: its blocks in doc order, and whether they are its term's last.
type BlocksRead = (BlockRead, Vec<StoredBlock>, bool);

/// Blocks read at least, whatever a step asks for. The core's top-k asks for one block
/// when it looks a term up at a document (in process, reading ahead doubled what a
/// lookup read), and steps through its reads one round trip at a time: at 100k a search
/// took ~24 steps here, each a loopback round trip costing far more than the blocks
/// (6.1 steps reading at least 8, 2.6 at least 32). Lookups go forward through the
/// documents, so the blocks after the one asked for are the ones later lookups need.
/// The core takes whatever a read returns ([`BlockRead`]: "the caller may read more or
/// fewer").
const READ_AT_LEAST: usize = 32;

/// All of one step's block reads in one statement: each read's blocks in doc order, and
/// whether they are its term's last.
async fn read_blocks(
    tx: &impl Session,
    team: Uuid,
    terms: &[String],
    reads: &[BlockRead],
) -> Result<Vec<BlocksRead>> {
    let names: Vec<&str> = reads.iter().map(|r| terms[r.term].as_str()).collect();
    let froms: Vec<i64> = reads.iter().map(|r| r.from).collect();
    let counts: Vec<i64> = reads
        .iter()
        .map(|r| r.blocks.max(READ_AT_LEAST) as i64)
        .collect();
    let rows = prepared::query(
        tx,
        "SELECT r.n, b.first_doc, b.last_doc, b.postings, b.max_frequency, b.min_length, \
         b.data FROM unnest($2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY \
           AS r (term, from_doc, count, n) \
         CROSS JOIN LATERAL (SELECT * FROM lexical_blocks b WHERE b.team_id = $1 \
           AND b.term = r.term AND b.last_doc >= r.from_doc ORDER BY b.last_doc \
           LIMIT r.count) b \
         ORDER BY r.n, b.last_doc",
        &[&team, &names, &froms, &counts],
    )
    .await?;
    let mut answers: Vec<BlocksRead> = reads
        .iter()
        .map(|&read| (read, Vec::new(), false))
        .collect();
    let count = |value: i32| u32::try_from(value).unwrap_or(0);
    for row in &rows {
        let n: i64 = col(row, 0)?;
        let Some(answer) = usize::try_from(n - 1).ok().and_then(|i| answers.get_mut(i)) else {
            continue;
        };
        answer.1.push((
            BlockSummary {
                first_doc: col(row, 1)?,
                last_doc: col(row, 2)?,
                postings: count(col(row, 3)?),
                max_frequency: count(col(row, 4)?),
                min_length: count(col(row, 5)?),
            },
            col(row, 6)?,
        ));
    }
    for (answer, wanted) in answers.iter_mut().zip(&counts) {
        answer.2 = (answer.1.len() as i64) < *wanted;
    }
    Ok(answers)
}

/// The eligible ones among `docs` (all of the team's, for `None`), with their order keys.
async fn eligible_docs(
    tx: &impl Session,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    docs: Option<&[i64]>,
) -> Result<Vec<(i64, OrderKeys)>> {
    let mut stmt = Statement {
        sql: "SELECT e.doc, e.scope_depth, e.observed_at, e.evidence_id FROM evidence e \
              WHERE true"
            .into(),
        params: Vec::new(),
    };
    if let Some(docs) = docs {
        let docs = stmt.arg(docs.to_vec());
        stmt.sql.push_str(&format!(" AND e.doc = ANY({docs})"));
    }
    let conditions = mnem_sql::eligibility(&mut stmt, actor, query, now);
    stmt.sql.push_str(&conditions);
    let params = param_refs(&stmt.params);
    let rows = prepared::query(tx, &stmt.sql, &params).await?;
    rows.iter()
        .map(|row| {
            Ok((
                col(row, 0)?,
                OrderKeys {
                    scope_depth: col(row, 1)?,
                    observed_at: col(row, 2)?,
                    evidence_id: col(row, 3)?,
                },
            ))
        })
        .collect()
}

/// The selected documents' full records with their relevance, in the given order.
async fn records(
    tx: &impl Session,
    team: Uuid,
    query: &RecallQuery,
    docs: &[i64],
    relevance: &[f64],
) -> Result<Vec<Candidate>> {
    if docs.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {columns}, v.relevance \
         FROM unnest($2::bigint[], $3::float8[]) WITH ORDINALITY AS v (doc, relevance, n) \
         JOIN evidence e ON e.team_id = $1 AND e.doc = v.doc ORDER BY v.n",
        columns = evidence_columns(query.known_at),
    );
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] = [&team, &docs, &relevance];
    let rows = prepared::query(tx, &sql, &params).await?;
    rows.iter().map(candidate_from_row).collect()
}
