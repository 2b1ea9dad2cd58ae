//! The full-text index and the lexical branch, on mnem's own terms
//! (`mnem_core::lexical`): per-team posting lists and statistics, scored by the core's
//! BM25.
//!
//! Tables (migration 0009): `lexical_fts`, a contentless FTS5 index whose tokens are the
//! core's terms prefixed with the team's id (so every team has posting lists and
//! document counts of its own), read through the fts5vocab tables `lexical_instances`
//! (a term's occurrences by doc: its frequency) and `lexical_rows` (its document count);
//! `lexical_stats` (a team's documents and their total length) and
//! `evidence.text_length`. They are written in the evidence's transaction, so a write is
//! searchable as soon as it commits, and a team's statistics never include another
//! team's texts.

use std::collections::HashMap;

use mnem_core::lexical::{document_terms, Bm25, CorpusStats, DocumentTerms};
use mnem_core::{Actor, Candidate, Order, RecallQuery, TeamId, Timestamp};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};

use crate::recall_branches::{hydrate, push_eligibility, Statement};

/// Adds a stored text to its team's posting lists and statistics.
pub(crate) fn index(
    conn: &Connection,
    team: TeamId,
    doc: i64,
    content: &str,
) -> rusqlite::Result<()> {
    count(conn, team.as_bytes(), doc, content, 1)
}

/// Removes a text (about to be erased) from its team's posting lists and statistics.
pub(crate) fn unindex(
    conn: &Connection,
    team: TeamId,
    doc: i64,
    content: &str,
) -> rusqlite::Result<()> {
    count(conn, team.as_bytes(), doc, content, -1)
}

/// The token a team's term is indexed under: the team's id in hex, then the term. The
/// prefix has a fixed length, so no two (team, term) pairs share a token.
fn token(team: &[u8], term: &str) -> String {
    let mut token = String::with_capacity(team.len() * 2 + term.len());
    for byte in team {
        token.push_str(&format!("{byte:02x}"));
    }
    token.push_str(term);
    token
}

/// The indexed text of a document: each term's token as often as the term occurs.
fn indexed_text(team: &[u8], terms: &DocumentTerms) -> String {
    let mut text = String::new();
    for (term, frequency) in &terms.frequencies {
        let token = token(team, term);
        for _ in 0..*frequency {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&token);
        }
    }
    text
}

/// Adds (`sign` 1) or removes (`sign` -1) one text's postings and counts. Removal gives
/// FTS5 the tokens it indexed, re-derived from the same text.
fn count(
    conn: &Connection,
    team: &[u8],
    doc: i64,
    content: &str,
    sign: i64,
) -> rusqlite::Result<()> {
    let terms = document_terms(content);
    if terms.length == 0 {
        return Ok(());
    }
    let length = i64::from(terms.length);
    conn.prepare_cached(
        "INSERT INTO lexical_stats (team_id, documents, total_length) VALUES (?1, ?2, ?3) \
         ON CONFLICT (team_id) DO UPDATE SET documents = documents + excluded.documents, \
         total_length = total_length + excluded.total_length",
    )?
    .execute(params![team, sign, sign * length])?;
    conn.prepare_cached("UPDATE evidence SET text_length = ?1 WHERE doc = ?2")?
        .execute(params![if sign > 0 { length } else { 0 }, doc])?;
    let text = indexed_text(team, &terms);
    if sign > 0 {
        conn.prepare_cached("INSERT INTO lexical_fts (rowid, terms) VALUES (?1, ?2)")?
            .execute(params![doc, text])?;
    } else {
        conn.prepare_cached(
            "INSERT INTO lexical_fts (lexical_fts, rowid, terms) VALUES ('delete', ?1, ?2)",
        )?
        .execute(params![doc, text])?;
    }
    Ok(())
}

/// Indexes every stored text: the migration that introduced these tables runs it once.
pub(crate) fn index_all(conn: &Connection) -> rusqlite::Result<usize> {
    let mut texts = conn.prepare(
        "SELECT e.team_id, e.doc, t.content FROM evidence e \
         JOIN evidence_content t ON t.doc = e.doc WHERE t.content <> ''",
    )?;
    let rows = texts.query_map([], |row| {
        let team: Vec<u8> = row.get(0)?;
        Ok((team, row.get::<_, i64>(1)?, row.get::<_, String>(2)?))
    })?;
    let mut indexed = 0;
    for row in rows {
        let (team, doc, content) = row?;
        count(conn, &team, doc, &content, 1)?;
        indexed += 1;
        if indexed % 10_000 == 0 {
            tracing::info!(indexed, "indexing stored texts on mnem's terms");
        }
    }
    Ok(indexed)
}

/// Re-analysing one stored text to complete its score costs about as much as reading this
/// many posting rows (a turn of ~20 words against ~1 µs per joined row).
const ANALYSIS_COST_IN_ROWS: u64 = 20;

/// One query term that occurs in the team: its term, token and BM25 weight.
struct QueryTerm {
    term: String,
    token: String,
    idf: f64,
    /// Documents of the team holding it: about the rows its posting list holds.
    documents: u64,
}

/// A matching eligible document: its relevance so far and what the branch orders by.
struct Match {
    relevance: f64,
    length: u32,
    scope_depth: i64,
    observed_at: i64,
    evidence_id: Vec<u8>,
}

/// The lexical branch for a text query: the `pool` best eligible matches by BM25 (or by
/// recency, for a recency-ordered query), with their relevance.
///
/// Terms are read rarest first. After each term, if the pool is full and its last score
/// already beats the most the unread (commoner) terms could give a document that has
/// none of the read ones, no unseen document can enter the pool: the seen ones that can
/// still make it are completed (their texts analysed again) and the rest of the posting
/// lists are never read (MaxScore). `prune = false` reads every list (the oracle the pruning is tested against).
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
    let terms = query_terms(conn, &team, &query.lexical_terms(), &bm25)?;
    // What the terms after each one could add at most.
    let mut unread_bound = vec![0.0; terms.len()];
    for j in (0..terms.len().saturating_sub(1)).rev() {
        unread_bound[j] = unread_bound[j + 1] + Bm25::term_bound(terms[j + 1].idf);
    }
    let ranked = query.order == Order::Relevance;
    let mut found: HashMap<i64, Match> = HashMap::new();
    for (j, term) in terms.iter().enumerate() {
        read_postings(conn, actor, query, now, term, &bm25, &mut found)?;
        let last = j + 1 == terms.len();
        if prune && ranked && !last && pool > 0 && found.len() >= pool {
            let threshold = nth_best(&found, pool);
            if threshold > unread_bound[j] {
                // Only matches that could still reach the pool need completing. Both ways
                // are exact, so the cheaper one is taken: completing re-analyses each such
                // text, reading on walks the unread lists.
                let unread = &terms[j + 1..];
                let contenders = found
                    .values()
                    .filter(|m| m.relevance + unread_bound[j] >= threshold)
                    .count() as u64;
                let unread_rows: u64 = unread.iter().map(|t| t.documents).sum();
                if contenders * ANALYSIS_COST_IN_ROWS < unread_rows {
                    found.retain(|_, m| m.relevance + unread_bound[j] >= threshold);
                    complete(conn, unread, &bm25, &mut found)?;
                    break;
                }
            }
        }
    }
    let widened = query.scope_filter().is_widened();
    // The keys of mnem_core::compare_hits, in its precedence, so the rows this cut keeps
    // are the rows the core ranks first.
    let order = |(_, a): &(i64, Match), (_, b): &(i64, Match)| {
        let by_relevance = if ranked {
            b.relevance.total_cmp(&a.relevance)
        } else {
            std::cmp::Ordering::Equal
        };
        let by_scope = if widened {
            b.scope_depth.cmp(&a.scope_depth)
        } else {
            std::cmp::Ordering::Equal
        };
        by_relevance
            .then(by_scope)
            .then(b.observed_at.cmp(&a.observed_at))
            .then(a.evidence_id.cmp(&b.evidence_id))
    };
    let mut ordered: Vec<(i64, Match)> = found.into_iter().collect();
    if pool > 0 && ordered.len() > pool {
        ordered.select_nth_unstable_by(pool - 1, order);
    }
    ordered.truncate(pool);
    ordered.sort_by(order);
    let selected: Vec<(f64, i64)> = ordered.iter().map(|(doc, m)| (m.relevance, *doc)).collect();
    hydrate(conn, &selected, query.known_at)
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

/// The query's terms that occur in the team, rarest (highest idf) first.
fn query_terms(
    conn: &Connection,
    team: &[u8],
    terms: &[String],
    bm25: &Bm25,
) -> rusqlite::Result<Vec<QueryTerm>> {
    let mut documents_holding =
        conn.prepare_cached("SELECT doc FROM lexical_rows WHERE term = ?1")?;
    let mut found = Vec::with_capacity(terms.len());
    for term in terms {
        let token = token(team, term);
        let holding: Option<i64> = documents_holding
            .query_row([&token], |row| row.get(0))
            .optional()?;
        if let Some(holding) = holding.filter(|&n| n > 0) {
            let idf = bm25.idf(holding as u64);
            found.push(QueryTerm {
                term: term.clone(),
                token,
                idf,
                documents: holding as u64,
            });
        }
    }
    found.sort_by(|a, b| b.idf.total_cmp(&a.idf).then(a.term.cmp(&b.term)));
    Ok(found)
}

/// Adds one term's eligible postings to the matches. The statement returns one row per
/// occurrence (grouping in SQL cost a temporary B-tree: 56 ms against 32 ms for a term in
/// 17k documents); the occurrences are counted here into the term's frequency per doc.
fn read_postings(
    conn: &Connection,
    actor: &Actor,
    query: &RecallQuery,
    now: Timestamp,
    term: &QueryTerm,
    bm25: &Bm25,
    found: &mut HashMap<i64, Match>,
) -> rusqlite::Result<()> {
    let mut stmt = Statement {
        sql: "SELECT v.doc, e.text_length, e.scope_depth, e.observed_at, e.evidence_id \
              FROM lexical_instances v JOIN evidence e ON e.doc = v.doc WHERE v.term = ?"
            .into(),
        params: vec![Value::Text(term.token.clone())],
    };
    push_eligibility(&mut stmt, actor, query, now);
    let mut prepared = conn.prepare_cached(&stmt.sql)?;
    let mut rows = prepared.query(rusqlite::params_from_iter(stmt.params))?;
    let mut frequencies: HashMap<i64, u32> = HashMap::new();
    while let Some(row) = rows.next()? {
        let doc: i64 = row.get(0)?;
        let frequency = frequencies.entry(doc).or_insert(0);
        *frequency += 1;
        if *frequency == 1 && !found.contains_key(&doc) {
            found.insert(
                doc,
                Match {
                    relevance: 0.0,
                    length: count_u32(row.get(1)?),
                    scope_depth: row.get(2)?,
                    observed_at: row.get(3)?,
                    evidence_id: row.get(4)?,
                },
            );
        }
    }
    for (doc, frequency) in frequencies {
        if let Some(entry) = found.get_mut(&doc) {
            entry.relevance += bm25.term_score(term.idf, frequency, entry.length);
        }
    }
    Ok(())
}

/// Adds the unread terms' contributions to the matches already found: their texts are
/// analysed again (the same analyzer made the index), which reads a few hundred rows where
/// the unread posting lists hold most of the team.
fn complete(
    conn: &Connection,
    unread: &[QueryTerm],
    bm25: &Bm25,
    found: &mut HashMap<i64, Match>,
) -> rusqlite::Result<()> {
    if unread.is_empty() || found.is_empty() {
        return Ok(());
    }
    let docs: Vec<i64> = found.keys().copied().collect();
    for chunk in docs.chunks(500) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let sql = format!("SELECT doc, content FROM evidence_content WHERE doc IN ({marks})");
        let mut texts = conn.prepare(&sql)?;
        let mut rows = texts.query(rusqlite::params_from_iter(chunk.iter()))?;
        while let Some(row) = rows.next()? {
            let doc: i64 = row.get(0)?;
            let terms = document_terms(row.get_ref(1)?.as_str()?);
            if let Some(entry) = found.get_mut(&doc) {
                for term in unread {
                    let frequency = terms.frequencies.get(&term.term).copied().unwrap_or(0);
                    entry.relevance += bm25.term_score(term.idf, frequency, entry.length);
                }
            }
        }
    }
    Ok(())
}

/// The `n`-th highest relevance among the matches (`n` ≥ 1, at most their number).
fn nth_best(found: &HashMap<i64, Match>, n: usize) -> f64 {
    let mut scores: Vec<f64> = found.values().map(|m| m.relevance).collect();
    let (_, nth, _) = scores.select_nth_unstable_by(n - 1, |a, b| b.total_cmp(a));
    *nth
}

fn count_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}
