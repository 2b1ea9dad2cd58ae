//! The full-text index and the lexical branch, on mnem's own terms
//! (`mnem_core::lexical`): per-team block posting lists and statistics, searched by the
//! core's top-k ([`mnem_core::lexical::topk`]) and scored by the core's BM25.
//!
//! Tables (migration 0015): `lexical_blocks`, each team's postings per term in blocks of
//! up to 128 ([`mnem_core::lexical::blocks`]) keyed by their last doc; `lexical_terms`, a
//! term's document count and the extremes that bound its scores; `lexical_stats` (a
//! team's documents and their total length) and `evidence.text_length`. They are written
//! in the evidence's transaction, so a write is searchable as soon as it commits, and a
//! team's statistics never include another team's texts.

use std::collections::HashMap;

use mnem_core::lexical::blocks::{
    Block, BlockChanges, BlockEdit, BlockError, BlockSummary, Posting, StoredBlock,
};
use mnem_core::lexical::topk::{BranchOrder, Need, OrderKeys, SearchTerm, TopK};
use mnem_core::lexical::{document_terms, Bm25, CorpusStats, DocumentTerms};
use mnem_core::{Actor, Candidate, RecallQuery, TeamId, Timestamp};
use rusqlite::types::{Type, Value};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::recall_branches::{hydrate, push_eligibility, small_period, Statement};
use crate::rows::doc_array;

/// Adds a stored text to its team's posting lists and statistics.
pub(crate) fn index(
    conn: &Connection,
    team: TeamId,
    doc: i64,
    content: &str,
) -> rusqlite::Result<()> {
    let terms = document_terms(content);
    if terms.length == 0 {
        return Ok(());
    }
    count_document(conn, team.as_bytes(), doc, &terms, 1)?;
    for (term, &frequency) in &terms.frequencies {
        let posting = Posting {
            doc,
            frequency,
            length: terms.length,
        };
        count_term(conn, team.as_bytes(), term, posting)?;
        add_posting(conn, team.as_bytes(), term, posting)?;
    }
    Ok(())
}

/// Removes a text (about to be erased) from its team's posting lists and statistics; its
/// terms are re-derived from the same text.
pub(crate) fn unindex(
    conn: &Connection,
    team: TeamId,
    doc: i64,
    content: &str,
) -> rusqlite::Result<()> {
    let terms = document_terms(content);
    if terms.length == 0 {
        return Ok(());
    }
    count_document(conn, team.as_bytes(), doc, &terms, -1)?;
    for term in terms.frequencies.keys() {
        remove_posting(conn, team.as_bytes(), term, doc)?;
    }
    Ok(())
}

/// Adds (`sign` 1) or removes (`sign` -1) a text from its team's document count and total
/// length, and records (or clears) its length.
fn count_document(
    conn: &Connection,
    team: &[u8],
    doc: i64,
    terms: &DocumentTerms,
    sign: i64,
) -> rusqlite::Result<()> {
    let length = i64::from(terms.length);
    conn.prepare_cached(
        "INSERT INTO lexical_stats (team_id, documents, total_length) VALUES (?1, ?2, ?3) \
         ON CONFLICT (team_id) DO UPDATE SET documents = documents + excluded.documents, \
         total_length = total_length + excluded.total_length",
    )?
    .execute(params![team, sign, sign * length])?;
    conn.prepare_cached("UPDATE evidence SET text_length = ?1 WHERE doc = ?2")?
        .execute(params![if sign > 0 { length } else { 0 }, doc])?;
    Ok(())
}

/// Counts one more document holding `term`, widening the term's bounds to its posting.
fn count_term(
    conn: &Connection,
    team: &[u8],
    term: &str,
    posting: Posting,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO lexical_terms (team_id, term, documents, max_frequency, min_length) \
         VALUES (?1, ?2, 1, ?3, ?4) ON CONFLICT (team_id, term) DO UPDATE SET \
         documents = documents + 1, \
         max_frequency = max(max_frequency, excluded.max_frequency), \
         min_length = min(min_length, excluded.min_length)",
    )?
    .execute(params![team, term, posting.frequency, posting.length])?;
    Ok(())
}

/// The stored block that holds (or would hold) `doc`: the first ending at or after it,
/// else the term's last block.
fn block_for(
    conn: &Connection,
    team: &[u8],
    term: &str,
    doc: i64,
) -> rusqlite::Result<Option<(i64, Block)>> {
    let read =
        |row: &Row<'_>| -> rusqlite::Result<(i64, Vec<u8>)> { Ok((row.get(0)?, row.get(1)?)) };
    let found = conn
        .prepare_cached(
            "SELECT last_doc, data FROM lexical_blocks WHERE team_id = ?1 AND term = ?2 \
             AND last_doc >= ?3 ORDER BY last_doc LIMIT 1",
        )?
        .query_row(params![team, term, doc], read)
        .optional()?;
    let found = match found {
        Some(found) => Some(found),
        None => conn
            .prepare_cached(
                "SELECT last_doc, data FROM lexical_blocks WHERE team_id = ?1 AND term = ?2 \
                 ORDER BY last_doc DESC LIMIT 1",
            )?
            .query_row(params![team, term], read)
            .optional()?,
    };
    found
        .map(|(last_doc, data)| Ok((last_doc, Block::decode(&data).map_err(damaged)?)))
        .transpose()
}

fn add_posting(
    conn: &Connection,
    team: &[u8],
    term: &str,
    posting: Posting,
) -> rusqlite::Result<()> {
    let mut edit = BlockEdit::new(
        block_for(conn, team, term, posting.doc)?
            .into_iter()
            .collect(),
    );
    edit.insert(posting);
    write_changes(conn, team, term, edit.changes())
}

fn remove_posting(conn: &Connection, team: &[u8], term: &str, doc: i64) -> rusqlite::Result<()> {
    let mut edit = BlockEdit::new(block_for(conn, team, term, doc)?.into_iter().collect());
    if !edit.remove(doc) {
        return Ok(());
    }
    write_changes(conn, team, term, edit.changes())?;
    // The document count falls; the bounds stay (loose is still safe).
    conn.prepare_cached(
        "UPDATE lexical_terms SET documents = documents - 1 WHERE team_id = ?1 AND term = ?2",
    )?
    .execute(params![team, term])?;
    conn.prepare_cached(
        "DELETE FROM lexical_terms WHERE team_id = ?1 AND term = ?2 AND documents <= 0",
    )?
    .execute(params![team, term])?;
    Ok(())
}

/// Deletes the blocks an edit changed and stores what they became.
fn write_changes(
    conn: &Connection,
    team: &[u8],
    term: &str,
    changes: BlockChanges,
) -> rusqlite::Result<()> {
    for last_doc in changes.deleted {
        conn.prepare_cached(
            "DELETE FROM lexical_blocks WHERE team_id = ?1 AND term = ?2 AND last_doc = ?3",
        )?
        .execute(params![team, term, last_doc])?;
    }
    for block in &changes.stored {
        store_block(conn, team, term, block)?;
    }
    Ok(())
}

/// Stores a non-empty block under its last doc.
fn store_block(conn: &Connection, team: &[u8], term: &str, block: &Block) -> rusqlite::Result<()> {
    let Some(s) = block.summary() else {
        return Ok(());
    };
    conn.prepare_cached(
        "INSERT INTO lexical_blocks (team_id, term, last_doc, first_doc, postings, \
         max_frequency, min_length, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        team,
        term,
        s.last_doc,
        s.first_doc,
        s.postings,
        s.max_frequency,
        s.min_length,
        block.encode()
    ])?;
    Ok(())
}

/// A stored block that does not decode: the file is damaged.
fn damaged(err: BlockError) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, Type::Blob, Box::new(err))
}

/// Indexes every stored text, in doc order, a team's term at a time in memory: the
/// migration that introduced these tables runs it once. Each term's open block is written
/// when it fills and at the end, so a block is written once rather than per text.
pub(crate) fn index_all(conn: &Connection) -> rusqlite::Result<usize> {
    let mut texts = conn.prepare(
        "SELECT e.team_id, e.doc, t.content FROM evidence e \
         JOIN evidence_content t ON t.doc = e.doc WHERE t.content <> '' ORDER BY e.doc",
    )?;
    let rows = texts.query_map([], |row| {
        let team: Vec<u8> = row.get(0)?;
        Ok((team, row.get::<_, i64>(1)?, row.get::<_, String>(2)?))
    })?;
    struct Open {
        block: Block,
        documents: i64,
        max_frequency: u32,
        min_length: u32,
    }
    let mut open: HashMap<(Vec<u8>, String), Open> = HashMap::new();
    let mut indexed = 0;
    for row in rows {
        let (team, doc, content) = row?;
        let terms = document_terms(&content);
        if terms.length == 0 {
            continue;
        }
        count_document(conn, &team, doc, &terms, 1)?;
        for (term, &frequency) in &terms.frequencies {
            let posting = Posting {
                doc,
                frequency,
                length: terms.length,
            };
            let entry = open.entry((team.clone(), term.clone())).or_insert(Open {
                block: Block::default(),
                documents: 0,
                max_frequency: 0,
                min_length: u32::MAX,
            });
            entry.documents += 1;
            entry.max_frequency = entry.max_frequency.max(frequency);
            entry.min_length = entry.min_length.min(terms.length);
            if let Some(spilled) = entry.block.insert(posting) {
                let full = std::mem::replace(&mut entry.block, spilled);
                store_block(conn, &team, term, &full)?;
            }
        }
        indexed += 1;
        if indexed % 10_000 == 0 {
            tracing::info!(indexed, "indexing stored texts as block posting lists");
        }
    }
    for ((team, term), entry) in open {
        store_block(conn, &team, &term, &entry.block)?;
        conn.prepare_cached(
            "INSERT INTO lexical_terms (team_id, term, documents, max_frequency, min_length) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            team,
            term,
            entry.documents,
            entry.max_frequency,
            entry.min_length
        ])?;
    }
    Ok(indexed)
}

/// The lexical branch for a text query: the `pool` best eligible matches by BM25 (or by
/// recency, for a recency-ordered query), with their relevance. The core's top-k drives
/// the reads: blocks of a term from a doc on, and the eligibility of the documents that
/// could enter the pool. `prune = false` scores every match (the oracle the pruning is
/// tested against).
pub(crate) fn search(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    pool: usize,
    prune: bool,
) -> rusqlite::Result<Vec<Candidate>> {
    let team = actor.team.as_bytes().to_vec();
    let Some(stats) = corpus_stats(conn, &team)? else {
        return Ok(Vec::new());
    };
    let bm25 = Bm25::new(stats);
    let (terms, search_terms) = query_terms(conn, &team, &query.lexical_terms(), &bm25)?;
    let order = BranchOrder::of(query, prune);
    let mut topk = TopK::new(bm25, &search_terms, pool, order);
    if !search_terms.is_empty() && small_period(conn, actor, query)? {
        // A short period of a long history: the walk visits only its texts.
        topk.supply_eligible_set(eligible_docs(conn, actor, query, now, None)?);
    }
    loop {
        match topk.need().map_err(damaged)? {
            Need::Blocks(reads) => {
                for read in reads {
                    let (blocks, complete) =
                        read_blocks(conn, &team, &terms[read.term], read.from, read.blocks)?;
                    topk.supply_blocks(read.term, blocks, complete);
                }
            }
            Need::Eligibility(docs) => {
                let eligible = eligible_docs(conn, actor, query, now, Some(&docs))?;
                topk.supply_eligible(eligible);
            }
            Need::EligibleSet => {
                let eligible = eligible_docs(conn, actor, query, now, None)?;
                topk.supply_eligible_set(eligible);
            }
            Need::Done => break,
        }
    }
    let selected: Vec<(f64, i64)> = topk
        .results()
        .into_iter()
        .map(|(doc, relevance, _)| (relevance, doc))
        .collect();
    hydrate(conn, &selected, query.known_at)
}

/// Up to `count` blocks of a term from the first ending at or after `from`, and whether
/// they are the last ones.
fn read_blocks(
    conn: &Connection,
    team: &[u8],
    term: &str,
    from: i64,
    count: usize,
) -> rusqlite::Result<(Vec<StoredBlock>, bool)> {
    let count = count.max(1);
    let mut stmt = conn.prepare_cached(
        "SELECT first_doc, last_doc, postings, max_frequency, min_length, data \
         FROM lexical_blocks WHERE team_id = ?1 AND term = ?2 AND last_doc >= ?3 \
         ORDER BY last_doc LIMIT ?4",
    )?;
    let blocks = stmt
        .query_map(params![team, term, from, count as i64], |row| {
            Ok((
                BlockSummary {
                    first_doc: row.get(0)?,
                    last_doc: row.get(1)?,
                    postings: row.get(2)?,
                    max_frequency: row.get(3)?,
                    min_length: row.get(4)?,
                },
                row.get::<_, Vec<u8>>(5)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let complete = blocks.len() < count;
    Ok((blocks, complete))
}

/// The eligible ones among `docs` (all of the team's, for `None`), with their order keys.
fn eligible_docs(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    docs: Option<&[i64]>,
) -> rusqlite::Result<Vec<(i64, OrderKeys)>> {
    const COLUMNS: &str = "e.doc, e.scope_depth, e.observed_at, e.evidence_id";
    let mut stmt = match docs {
        Some(docs) => Statement {
            sql: format!(
                "SELECT {COLUMNS} FROM json_each(?) AS wanted CROSS JOIN evidence e \
                 WHERE e.doc = wanted.value"
            ),
            params: vec![Value::Text(doc_array(docs))],
        },
        None => Statement {
            sql: format!("SELECT {COLUMNS} FROM evidence e WHERE 1"),
            params: Vec::new(),
        },
    };
    push_eligibility(&mut stmt, actor, query, now);
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let rows = prepared.query_map(rusqlite::params_from_iter(stmt.params), |row| {
        let id: Vec<u8> = row.get(3)?;
        let evidence_id = uuid::Uuid::from_slice(&id).map_err(|err| {
            rusqlite::Error::FromSqlConversionFailure(3, Type::Blob, Box::new(err))
        })?;
        Ok((
            row.get::<_, i64>(0)?,
            OrderKeys {
                scope_depth: row.get(1)?,
                observed_at: row.get(2)?,
                evidence_id,
            },
        ))
    })?;
    rows.collect()
}

fn corpus_stats(conn: &Connection, team: &[u8]) -> rusqlite::Result<Option<CorpusStats>> {
    conn.prepare_cached(
        "SELECT documents, total_length FROM lexical_stats WHERE team_id = ?1 AND documents > 0",
    )?
    .query_row([team], |row| {
        Ok(CorpusStats {
            documents: row.get::<_, i64>(0)?.max(0) as u64,
            total_length: row.get::<_, i64>(1)?.max(0) as u64,
        })
    })
    .optional()
}

/// The query's terms that occur in the team, in the query's order, and what the search
/// knows of each.
fn query_terms(
    conn: &Connection,
    team: &[u8],
    terms: &[String],
    bm25: &Bm25,
) -> rusqlite::Result<(Vec<String>, Vec<SearchTerm>)> {
    let mut stmt = conn.prepare_cached(
        "SELECT documents, max_frequency, min_length FROM lexical_terms \
         WHERE team_id = ?1 AND term = ?2 AND documents > 0",
    )?;
    let mut found = (Vec::new(), Vec::new());
    for term in terms {
        let known = stmt
            .query_row(params![team, term], |row| {
                Ok((
                    row.get::<_, i64>(0)?,
                    row.get::<_, u32>(1)?,
                    row.get::<_, u32>(2)?,
                ))
            })
            .optional()?;
        if let Some((documents, max_frequency, min_length)) = known {
            let idf = bm25.idf(documents.max(0) as u64);
            found.0.push(term.clone());
            found
                .1
                .push(SearchTerm::new(bm25, idf, max_frequency, min_length));
        }
    }
    Ok(found)
}
