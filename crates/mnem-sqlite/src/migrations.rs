//! Versioned schema migrations keyed on `PRAGMA user_version`. Each migration runs in its
//! own transaction together with the version bump, so a crash leaves the file at a whole
//! version. A file written by a newer build is refused rather than guessed at.

use mnem_store::{Result, StoreError};
use rusqlite::Connection;

use crate::DbResult;

/// Work a migration does in Rust after its SQL, in the same transaction (what SQL alone
/// cannot derive, like the terms of mnem's own analyzer).
type Backfill = fn(&Connection) -> rusqlite::Result<()>;

/// Index `i` holds the migration that takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_search_documents.sql"),
    include_str!("migrations/0003_graph.sql"),
    include_str!("migrations/0004_graph_documents.sql"),
    include_str!("migrations/0005_api_keys.sql"),
    include_str!("migrations/0006_source_groups.sql"),
    include_str!("migrations/0007_admin_keys.sql"),
    include_str!("migrations/0008_vector_changes.sql"),
    include_str!("migrations/0009_lexical_index.sql"),
    include_str!("migrations/0010_evidence_writes.sql"),
    include_str!("migrations/0011_recall_feedback.sql"),
    include_str!("migrations/0012_hypotheses.sql"),
    include_str!("migrations/0013_communities.sql"),
    include_str!("migrations/0014_hypothesis_model_readings.sql"),
    include_str!("migrations/0015_lexical_blocks.sql"),
    include_str!("migrations/0016_irregular_forms.sql"),
    include_str!("migrations/0017_mentions.sql"),
];

/// The Rust step of a migration, by the version it produces.
fn backfill(version: i64) -> Option<Backfill> {
    match version {
        // Version 9's FTS5 index is dropped by 15, which rebuilds the index and the
        // statistics from the stored texts: a file older than 9 is indexed once, at 15.
        10 => Some(|conn| {
            let rehashed = rehash_current(conn)?;
            tracing::info!(rehashed, "content hashes recomputed on normalised text");
            Ok(())
        }),
        15 => Some(|conn| {
            let indexed = crate::lexical::index_all(conn)?;
            tracing::info!(indexed, "full-text index rebuilt as block posting lists");
            Ok(())
        }),
        16 => Some(|conn| {
            let indexed = crate::lexical::index_all(conn)?;
            tracing::info!(indexed, "full-text index rebuilt with irregular word forms");
            Ok(())
        }),
        17 => Some(|conn| {
            let indexed = crate::mentions::index_all(conn)?;
            tracing::info!(indexed, "mentions derived from the stored texts");
            Ok(())
        }),
        _ => None,
    }
}

/// De-duplication keys its lookup on the hash of whitespace-normalised text; items
/// stored before hashed their exact text. Recomputed for current items (the only ones a
/// write can repeat), in Rust: the normalisation is mnem's, not SQL's.
fn rehash_current(conn: &Connection) -> rusqlite::Result<usize> {
    let mut read = conn.prepare(
        "SELECT e.doc, t.content, e.content_hash FROM evidence e \
         JOIN evidence_content t ON t.doc = e.doc WHERE e.state = 'current'",
    )?;
    let changed: Vec<(i64, String)> = read
        .query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?
        .filter_map(|row| match row {
            Ok((doc, content, stored)) => {
                let hash = mnem_core::evidence::content_hash(&content);
                (hash != stored).then_some(Ok((doc, hash)))
            }
            Err(err) => Some(Err(err)),
        })
        .collect::<rusqlite::Result<_>>()?;
    let mut write = conn.prepare("UPDATE evidence SET content_hash = ?1 WHERE doc = ?2")?;
    for (doc, hash) in &changed {
        write.execute(rusqlite::params![hash, doc])?;
    }
    Ok(changed.len())
}

pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_to(conn, SCHEMA_VERSION)
}

/// Migrates up to `target` only: how the tests make a file an older build left.
fn migrate_to(conn: &mut Connection, target: i64) -> Result<()> {
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .db()?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    for (index, sql) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target as usize)
        .skip(found as usize)
    {
        let tx = conn.transaction().db()?;
        tx.execute_batch(sql).db()?;
        let version = index as i64 + 1;
        if let Some(step) = backfill(version) {
            step(&tx).db()?;
        }
        tx.pragma_update(None, "user_version", version).db()?;
        tx.commit().db()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::OptionalExtension;

    /// A file at version 8 holding texts of two teams, as an older build left it.
    fn version_8_file() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        for (index, sql) in MIGRATIONS[..8].iter().enumerate() {
            conn.execute_batch(sql).unwrap();
            conn.pragma_update(None, "user_version", index as i64 + 1)
                .unwrap();
        }
        let texts = [
            ([1u8; 16], "Deploy the pipeline"),
            ([1u8; 16], "the pipelines deployed twice"),
            ([2u8; 16], "pipeline"),
        ];
        for (doc, (team, content)) in texts.iter().enumerate() {
            conn.execute(
                "INSERT OR IGNORE INTO teams (team_id, name, created_at) VALUES (?1, ?2, 0)",
                rusqlite::params![team.as_slice(), format!("team {}", team[0])],
            )
            .unwrap();
            conn.execute(
                "INSERT OR IGNORE INTO profiles (team_id, profile_id, name, created_at) \
                 VALUES (?1, ?1, 'owner', 0)",
                [team.as_slice()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO evidence (doc, team_id, evidence_id, owner_profile_id, kind, \
                 source_type, source, authority, source_group, labels, refs, scope, \
                 scope_depth, space, observed_at, recorded_at, content_hash, state) \
                 VALUES (?1, ?2, ?3, ?2, 'note', 'manual', 's', 'unknown', 'g', '[]', '[]', '', \
                 0, 'team', 0, 0, 'h', 'current')",
                rusqlite::params![doc as i64 + 1, team.as_slice(), [doc as u8; 16].as_slice()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO evidence_content (doc, team_id, content) VALUES (?1, ?2, ?3)",
                rusqlite::params![doc as i64 + 1, team.as_slice(), content],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn an_older_file_is_indexed_per_team_as_block_posting_lists() {
        let mut conn = version_8_file();
        migrate(&mut conn).unwrap();
        let stats = |team: [u8; 16]| -> (i64, i64) {
            conn.query_row(
                "SELECT documents, total_length FROM lexical_stats WHERE team_id = ?1",
                [team.as_slice()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap()
        };
        assert_eq!(stats([1; 16]), (2, 7));
        assert_eq!(stats([2; 16]), (1, 1));
        let holding = |team: [u8; 16], term: &str| -> i64 {
            conn.query_row(
                "SELECT documents FROM lexical_terms WHERE team_id = ?1 AND term = ?2",
                rusqlite::params![team.as_slice(), term],
                |row| row.get(0),
            )
            .optional()
            .unwrap()
            .unwrap_or(0)
        };
        let postings = |team: [u8; 16], term: &str| -> i64 {
            conn.query_row(
                "SELECT coalesce(sum(postings), 0) FROM lexical_blocks \
                 WHERE team_id = ?1 AND term = ?2",
                rusqlite::params![team.as_slice(), term],
                |row| row.get(0),
            )
            .unwrap()
        };
        assert_eq!(postings([1; 16], "pipelin"), 2);
        assert_eq!(postings([2; 16], "deploy"), 0);
        assert_eq!(holding([1; 16], "pipelin"), 2);
        assert_eq!(holding([1; 16], "deploy"), 2);
        assert_eq!(holding([1; 16], "twice"), 1);
        assert_eq!(holding([2; 16], "pipelin"), 1);
        assert_eq!(holding([2; 16], "deploy"), 0);
        let length: i64 = conn
            .query_row(
                "SELECT text_length FROM evidence WHERE doc = 2",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(length, 4);
    }

    #[test]
    fn an_older_files_texts_get_their_mentions_per_team() {
        let mut conn = version_8_file();
        conn.execute(
            "UPDATE evidence_content SET content = 'We deploy the Pipeline twice' WHERE doc = 2",
            [],
        )
        .unwrap();
        migrate(&mut conn).unwrap();
        let mentioning = |team: [u8; 16], key: &str| -> Vec<i64> {
            let mut stmt = conn
                .prepare("SELECT doc FROM mentions WHERE team_id = ?1 AND entity_key = ?2")
                .unwrap();
            stmt.query_map(rusqlite::params![team.as_slice(), key], |row| row.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap()
        };
        assert_eq!(
            mentioning([1; 16], "pipelin"),
            vec![2],
            "a name inside a sentence"
        );
        assert_eq!(mentioning([1; 16], "deploy pipelin"), Vec::<i64>::new());
        assert_eq!(
            mentioning([2; 16], "pipelin"),
            Vec::<i64>::new(),
            "per team"
        );
    }

    #[test]
    fn a_file_indexed_before_irregular_forms_is_indexed_again() {
        let mut conn = version_8_file();
        conn.execute(
            "UPDATE evidence_content SET content = 'Ann made a window' WHERE doc = 3",
            [],
        )
        .unwrap();
        migrate_to(&mut conn, 15).unwrap();
        // What a build without the irregular forms stored: "made" as its own term.
        for table in ["lexical_terms", "lexical_blocks"] {
            conn.execute(
                &format!("UPDATE {table} SET term = 'made' WHERE term = 'make'"),
                [],
            )
            .unwrap();
        }
        migrate(&mut conn).unwrap();
        let holding = |term: &str| -> i64 {
            conn.query_row(
                "SELECT count(*) FROM lexical_terms WHERE team_id = ?1 AND term = ?2",
                rusqlite::params![[2u8; 16].as_slice(), term],
                |row| row.get(0),
            )
            .unwrap()
        };
        assert_eq!(holding("make"), 1);
        assert_eq!(holding("made"), 0);
        let stats: (i64, i64) = conn
            .query_row(
                "SELECT documents, total_length FROM lexical_stats WHERE team_id = ?1",
                [[2u8; 16].as_slice()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .unwrap();
        assert_eq!(stats, (1, 4));
    }
}
