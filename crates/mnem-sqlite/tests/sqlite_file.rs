//! Behaviour specific to the SQLite file: persistence across opens, WAL, migrations, and
//! arbitrary query text against the real FTS5 parser.

use std::sync::Arc;

use mnem_conformance::helpers::{conversation_turn, texts_after};
use mnem_core::{ManualClock, NewEvidence, RecallQuery, Timestamp};
use mnem_service::Memory;
use mnem_sqlite::{SqliteStore, SCHEMA_VERSION};
use mnem_store::{EvidenceStore, StoreError, SystemClock};
use proptest::prelude::*;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        Timestamp::from_seconds(1_700_000_000),
        1_000,
    ))
}

#[tokio::test]
async fn evidence_survives_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    let id = {
        let store = SqliteStore::open(&path, clock()).unwrap();
        let actor = store.open_team("local").await.unwrap();
        store
            .remember(&actor, NewEvidence::new("persisted across opens"))
            .await
            .unwrap()
            .evidence
            .id
    };
    let store = SqliteStore::open(&path, Arc::new(SystemClock)).unwrap();
    let actor = store.open_team("local").await.unwrap();
    let memory = Memory::open(store, None).await.unwrap();
    let hits = memory
        .recall(&actor, RecallQuery::text("persisted"))
        .await
        .unwrap()
        .hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].evidence.id, id);
}

#[tokio::test]
async fn file_uses_wal_and_records_the_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    drop(SqliteStore::open(&path, clock()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(version, SCHEMA_VERSION);
}

#[tokio::test]
async fn a_file_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    drop(SqliteStore::open(&path, clock()).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(conn);
    let err = SqliteStore::open(&path, clock()).err().expect("refused");
    assert!(matches!(err, StoreError::SchemaTooNew { found, .. } if found == SCHEMA_VERSION + 1));
}

#[tokio::test]
async fn lifecycle_log_rejects_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    let store = SqliteStore::open(&path, clock()).unwrap();
    let actor = store.open_team("local").await.unwrap();
    store
        .remember(&actor, NewEvidence::new("logged"))
        .await
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert!(conn
        .execute("UPDATE evidence_events SET state = 'erased'", [])
        .is_err());
    assert!(conn.execute("DELETE FROM evidence_events", []).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever a user types, recall never surfaces an FTS5 syntax error.
    #[test]
    fn arbitrary_query_text_never_errors(query in "\\PC{0,80}") {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            let store = SqliteStore::open_in_memory(clock()).unwrap();
            let actor = store.open_team("local").await.unwrap();
            store.remember(&actor, NewEvidence::new("alpha beta \"gamma\" NEAR(delta)")).await.unwrap();
            let memory = Memory::open(store.clone(), None).await.unwrap();
            let result = memory.recall(&actor, RecallQuery::text(query.clone())).await;
            prop_assert!(result.is_ok(), "query {:?}: {:?}", query, result.err());
            Ok(())
        })?;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reads_on_the_reader_connections_see_every_committed_write() {
    // A file store reads on separate connections; a write must be visible to the very
    // next read, whichever connection serves it, while other reads run beside it.
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("mnem.db"), clock()).unwrap();
    let actor = store.open_team("local").await.unwrap();
    let memory = Arc::new(Memory::open(store, None).await.unwrap());
    for round in 0..12 {
        let id = memory
            .remember(&actor, NewEvidence::new(format!("marker{round} written")))
            .await
            .unwrap()
            .evidence
            .id;
        let reads = (0..6).map(|_| {
            let memory = Arc::clone(&memory);
            tokio::spawn(async move {
                memory
                    .recall(&actor, RecallQuery::text(format!("marker{round}")))
                    .await
                    .unwrap()
                    .hits
            })
        });
        for read in reads.collect::<Vec<_>>() {
            let hits = read.await.unwrap();
            assert_eq!(hits.len(), 1, "round {round}");
            assert_eq!(hits[0].evidence.id, id);
        }
    }
}

/// An optional recall lookup's failure case (its assertions in `mnem_conformance`), run
/// with `$table` renamed away midway: recall must still answer.
macro_rules! optional_lookup_fails {
    ($name:ident, $table:literal, $case:path) => {
        #[tokio::test]
        async fn $name() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("mnem.db");
            let store = SqliteStore::open(&path, clock()).unwrap();
            let actor = store.open_team("local").await.unwrap();
            let memory = Memory::open(store, None).await.unwrap();
            let remove_table = async {
                let conn = rusqlite::Connection::open(&path).unwrap();
                conn.execute_batch(concat!("ALTER TABLE ", $table, " RENAME TO gone"))
                    .unwrap();
            };
            $case(&memory, &actor, remove_table).await;
        }
    };
}

optional_lookup_fails!(
    a_failing_hypothesis_lookup_is_omitted_and_recorded,
    "hypotheses",
    mnem_conformance::dream_cases::a_failing_hypothesis_lookup_is_omitted_and_recorded
);
optional_lookup_fails!(
    a_failing_community_lookup_is_omitted_and_recorded,
    "community_members",
    mnem_conformance::community_cases::a_failing_community_lookup_is_omitted_and_recorded
);

/// Another process holding the write lock past the wait makes a write `Busy` (a server
/// answers 503 with `Retry-After`), not a backend failure; once the lock is released the
/// same write goes through.
#[tokio::test]
async fn a_write_while_another_process_holds_the_lock_is_busy_then_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnem.db");
    let store = SqliteStore::open(&path, clock())
        .unwrap()
        .with_busy_timeout(std::time::Duration::from_millis(50))
        .unwrap();
    let actor = store.open_team("local").await.unwrap();
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let held = store
        .remember(&actor, NewEvidence::new("written while locked"))
        .await;
    assert!(matches!(held, Err(StoreError::Busy)), "{held:?}");
    other.execute_batch("COMMIT").unwrap();
    let stored = store
        .remember(&actor, NewEvidence::new("written while locked"))
        .await;
    assert!(stored.is_ok(), "{stored:?}");
}

#[tokio::test]
async fn a_recalls_reads_after_its_branches_share_one_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("mnem.db"), clock()).unwrap();
    let actor = store.open_team("shared-read").await.unwrap();
    let first = store
        .remember(&actor, conversation_turn(1))
        .await
        .unwrap()
        .evidence;
    let (before, during) = store
        .reading_together(&actor, async {
            let before = texts_after(&store, &actor, &first).await;
            // Committed by the writer while the scope is open.
            store.remember(&actor, conversation_turn(2)).await.unwrap();
            (before, texts_after(&store, &actor, &first).await)
        })
        .await;
    assert_eq!(before, Vec::<String>::new());
    // Each read in a transaction of its own would see turn 2 here.
    assert_eq!(during, Vec::<String>::new());
    let after = texts_after(&store, &actor, &first).await;
    assert_eq!(after, vec!["turn 2 of the conversation".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_shared_read_leaves_no_reader_inside_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("mnem.db"), clock()).unwrap();
    let actor = store.open_team("cancelled-read").await.unwrap();
    let first = store
        .remember(&actor, conversation_turn(1))
        .await
        .unwrap()
        .evidence;
    let cancelled = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        store.reading_together(&actor, async {
            texts_after(&store, &actor, &first).await;
            std::future::pending::<()>().await
        }),
    )
    .await;
    assert!(cancelled.is_err(), "the scoped reads were cut off");
    store.remember(&actor, conversation_turn(2)).await.unwrap();
    // Reads take the reader connections in turn, so these reach every one of them; one
    // left inside the cancelled scope's transaction would still show its old snapshot.
    for read in 0..8 {
        let after = texts_after(&store, &actor, &first).await;
        assert_eq!(
            after,
            vec!["turn 2 of the conversation".to_string()],
            "read {read}"
        );
    }
}

#[tokio::test]
async fn a_long_shared_read_lets_the_threads_other_tasks_run() {
    // One thread: a task spawned beside the scope runs only when the scope's reads yield.
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("mnem.db"), clock()).unwrap();
    let actor = store.open_team("long-read").await.unwrap();
    let first = store
        .remember(&actor, conversation_turn(1))
        .await
        .unwrap()
        .evidence;
    let other_ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&other_ran);
    tokio::spawn(async move { flag.store(true, std::sync::atomic::Ordering::SeqCst) });
    let ran_during = store
        .reading_together(&actor, async {
            let started = std::time::Instant::now();
            while started.elapsed() < std::time::Duration::from_millis(20) {
                texts_after(&store, &actor, &first).await;
            }
            other_ran.load(std::sync::atomic::Ordering::SeqCst)
        })
        .await;
    assert!(
        ran_during,
        "20 ms of scoped reads never let the other task run"
    );
}

#[tokio::test]
async fn a_shared_read_of_one_store_never_answers_another_stores_reads() {
    let dir = tempfile::tempdir().unwrap();
    let scoped = SqliteStore::open(&dir.path().join("scoped.db"), clock()).unwrap();
    let other = SqliteStore::open(&dir.path().join("other.db"), clock()).unwrap();
    let scoped_actor = scoped.open_team("scoped").await.unwrap();
    let other_actor = other.open_team("other").await.unwrap();
    scoped
        .remember(&scoped_actor, conversation_turn(1))
        .await
        .unwrap();
    let first = other
        .remember(&other_actor, conversation_turn(1))
        .await
        .unwrap()
        .evidence;
    other
        .remember(&other_actor, conversation_turn(2))
        .await
        .unwrap();
    let read = scoped
        .reading_together(&scoped_actor, async {
            texts_after(&other, &other_actor, &first).await
        })
        .await;
    // Read on the scoped store's file, the other store's team has no rows at all.
    assert_eq!(read, vec!["turn 2 of the conversation".to_string()]);
}
