//! What only the PostgreSQL backend promises: row-level security that the application
//! role cannot get around, embedding jobs that two servers never both claim, and an HNSW
//! index that answers like the exact scan (and is what answers). Needs `MNEM_PG_URL`;
//! without it each test says so and skips, except in CI, where it fails.

use std::collections::HashSet;
use std::sync::Arc;

use mnem_conformance::helpers::{conversation_turn, texts_after};
use mnem_core::{Access, EmbeddingContract, KeyRefusal, NewEvidence, RecallQuery, Timestamp};
use mnem_postgres::{testing, PgStore, VectorSearch, APP_ROLE};
use mnem_service::{AuthError, Authenticator};
use mnem_store::{
    CredentialStore, DocumentTarget, EvidenceStore, GraphStore, SearchIndex, SystemClock,
};
use tokio_postgres::{Config, NoTls};

async fn fresh() -> Option<(Config, PgStore)> {
    let url = testing::url()?;
    let config = testing::fresh_database(&url).await.expect("fresh database");
    let store = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 4)
        .await
        .expect("connect");
    Some((config, store))
}

/// A store on a fresh database with a pool of one connection: every call after another
/// gets the connection the one before left behind.
async fn fresh_with_one_connection() -> Option<PgStore> {
    let url = testing::url()?;
    let config = testing::fresh_database(&url).await.expect("fresh database");
    let store = PgStore::connect_config(config, Arc::new(SystemClock), 1)
        .await
        .expect("connect");
    Some(store)
}

/// Marks a test's own statement sent as the application role, which
/// `tests/distribution.rs` does not hold to the backend's rules.
const TEST_PROBE: &str = "/* test probe */";

/// A raw connection acting as the application role, outside the store's code.
async fn app_connection(config: &Config) -> tokio_postgres::Client {
    let (client, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
        .batch_execute(&format!("SET ROLE {APP_ROLE}"))
        .await
        .expect("set role");
    client
}

/// Texts of `team` holding `lexeme`, as the statistics count them (read as the owner).
async fn documents_holding(owner: &tokio_postgres::Client, team: uuid::Uuid, lexeme: &str) -> i64 {
    owner
        .query_one(
            "SELECT COALESCE(SUM(documents), 0)::bigint FROM term_stats \
             WHERE team_id = $1 AND lexeme = $2",
            &[&team, &lexeme],
        )
        .await
        .expect("term stats")
        .get(0)
}

/// `team`'s text statistics: its documents and their total length (read as the owner).
async fn text_stats(owner: &tokio_postgres::Client, team: uuid::Uuid) -> (i64, i64) {
    let row = owner
        .query_one(
            "SELECT documents, lexemes FROM text_stats WHERE team_id = $1",
            &[&team],
        )
        .await
        .expect("stats");
    (row.get(0), row.get(1))
}

/// How many texts the lexical branch finds for `query` in `team`, read as the profile
/// whose id is the team's (as the migration tests write them).
async fn lexical_hits(store: &PgStore, team: uuid::Uuid, query: &str) -> usize {
    let actor = mnem_core::Actor {
        team: mnem_core::TeamId(team),
        profile: mnem_core::ProfileId(team),
    };
    store
        .lexical_candidates(
            &actor,
            &RecallQuery::text(query),
            Timestamp::from_seconds(4_000_000_000),
            10,
        )
        .await
        .expect("lexical")
        .len()
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn row_level_security_admits_only_the_transactions_team() {
    let Some((config, store)) = fresh().await else {
        return;
    };
    let alpha = store.open_team("alpha").await.unwrap();
    let beta = store.open_team("beta").await.unwrap();
    store
        .remember(&alpha, NewEvidence::new("alpha's secret plan"))
        .await
        .unwrap();
    store
        .remember(&beta, NewEvidence::new("beta's secret plan"))
        .await
        .unwrap();
    let mut client = app_connection(&config).await;

    // No team named: a statement with no team filter sees nothing at all. (The probes
    // carry TEST_PROBE: the statement audit skips what is not the backend's.)
    let unscoped: i64 = client
        .query_one(&format!("SELECT {TEST_PROBE} count(*) FROM evidence"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(unscoped, 0);

    let tx = client.transaction().await.unwrap();
    tx.execute(
        "SELECT set_config('mnem.team_id', $1, true)",
        &[&alpha.team.0.to_string()],
    )
    .await
    .unwrap();
    let visible: Vec<String> = tx
        .query(&format!("SELECT {TEST_PROBE} content FROM evidence"), &[])
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(visible, vec!["alpha's secret plan".to_string()]);
    // Writing another team's row from alpha's transaction is refused by the policy.
    let forged = tx
        .execute(
            "INSERT INTO evidence_refs (team_id, ref_kind, ref_id, evidence_id) \
             VALUES ($1, 'issue', 'X-1', $1)",
            &[&beta.team.0],
        )
        .await;
    assert!(forged.is_err(), "a cross-team insert was accepted");
    drop(tx);

    // The role can neither switch the policies off nor drop them.
    let off = client
        .batch_execute(&format!(
            "SET row_security = off; SELECT {TEST_PROBE} count(*) FROM evidence"
        ))
        .await;
    assert!(off.is_err(), "row_security = off let the app role read");
    let disable = client
        .batch_execute("ALTER TABLE evidence DISABLE ROW LEVEL SECURITY")
        .await;
    assert!(disable.is_err(), "the app role disabled row-level security");
    let bypass: bool = client
        .query_one(
            "SELECT rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = $1",
            &[&APP_ROLE],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!bypass);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn two_workers_never_claim_the_same_job() {
    let Some((config, first)) = fresh().await else {
        return;
    };
    // A second server: its own pool on the same database.
    let second = PgStore::connect_config(config, Arc::new(SystemClock), 4)
        .await
        .unwrap();
    let actor = first.open_team("jobs").await.unwrap();
    let mut written = HashSet::new();
    for i in 0..60 {
        let evidence = first
            .remember(&actor, NewEvidence::new(format!("note number {i}")))
            .await
            .unwrap();
        written.insert(evidence.evidence.id);
    }
    let mut claimed = Vec::new();
    loop {
        let (a, b) = tokio::join!(first.pending_documents(7), second.pending_documents(7));
        let (a, b) = (a.unwrap(), b.unwrap());
        if a.is_empty() && b.is_empty() {
            break;
        }
        claimed.extend(a.into_iter().chain(b));
    }
    let ids: Vec<_> = claimed
        .iter()
        .map(|doc| match doc.target {
            DocumentTarget::Evidence(id) => id,
            other => panic!("unexpected document {other:?}"),
        })
        .collect();
    let unique: HashSet<_> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "a job was claimed twice");
    assert_eq!(unique, written);
}

/// Deterministic pseudo-random unit vectors (an LCG; no dependency for test data).
fn unit_vectors(count: usize, dims: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            let mut v: Vec<f32> = (0..dims)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn the_hnsw_index_answers_and_agrees_with_the_exact_scan() {
    let Some((config, store)) = fresh().await else {
        return;
    };
    let contract = EmbeddingContract {
        provider: "test".into(),
        model: "random-unit-vectors".into(),
        dims: 64,
        normalization: "l2".into(),
        version: 1,
    };
    store.activate_contract(&contract).await.unwrap();
    let actor = store.open_team("vectors").await.unwrap();
    let count = 3_000;
    let mut observed = Vec::new();
    for i in 0..count {
        let mut new = NewEvidence::new(format!("document {i}"));
        // Every tenth is a decision: a filter the index alone cannot apply.
        new.kind = Some(if i % 10 == 0 { "decision" } else { "note" }.to_string());
        observed.push(
            store
                .remember(&actor, new)
                .await
                .unwrap()
                .evidence
                .observed_at,
        );
    }
    let vectors = unit_vectors(count, contract.dims, 7);
    let mut pending = Vec::new();
    loop {
        let batch = store.pending_documents(500).await.unwrap();
        if batch.is_empty() {
            break;
        }
        pending.extend(batch);
    }
    let embedded: Vec<_> = pending.into_iter().zip(vectors).collect();
    store.store_vectors(&contract, embedded).await.unwrap();
    let exact = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 2)
        .await
        .unwrap()
        .with_vector_search(VectorSearch::Exact);
    // Fresh statistics, as autovacuum gathers them after a bulk write, so the planner
    // knows the table's size (the owner analyzes; the app role may not).
    let (owner, connection) = config.connect(NoTls).await.unwrap();
    tokio::spawn(connection);
    owner
        .batch_execute("ANALYZE evidence; ANALYZE evidence_vectors")
        .await
        .unwrap();

    let now = Timestamp::from_seconds(4_000_000_000);
    let queries = unit_vectors(20, contract.dims, 99);
    let (mut agreed, mut total) = (0, 0);
    for query_vector in &queries {
        let query = RecallQuery::text("anything");
        let approximate = store
            .vector_candidates(&actor, &query, query_vector, &contract, now, 10)
            .await
            .unwrap();
        let oracle = exact
            .vector_candidates(&actor, &query, query_vector, &contract, now, 10)
            .await
            .unwrap();
        assert_eq!(oracle.len(), 10);
        let truth: HashSet<_> = oracle.iter().map(|c| c.evidence.id).collect();
        agreed += approximate
            .iter()
            .filter(|c| truth.contains(&c.evidence.id))
            .count();
        total += truth.len();

        // Filtered to one row in ten: iterative scans keep walking until the pool is full.
        let decisions = RecallQuery {
            kinds: vec!["decision".into()],
            ..RecallQuery::text("anything")
        };
        let filtered = store
            .vector_candidates(&actor, &decisions, query_vector, &contract, now, 10)
            .await
            .unwrap();
        assert_eq!(filtered.len(), 10, "a filtered query came back short");
        assert!(filtered.iter().all(|c| c.evidence.kind == "decision"));
    }
    let recall = agreed as f64 / total as f64;
    assert!(
        recall >= 0.9,
        "HNSW recall@10 against the exact scan: {recall:.3}"
    );

    let plan = store
        .explain_vector_candidates(
            &actor,
            &RecallQuery::text("anything"),
            &queries[0],
            &contract,
            10,
        )
        .await
        .unwrap();
    // The index is made on every partition; the team's statement reads its own alone.
    let graphs = partition_indexes(&owner, "evidence_vectors_hnsw_64").await;
    assert_eq!(graphs.len(), 32, "one HNSW graph a partition: {graphs:?}");
    let walked: Vec<&String> = graphs.iter().filter(|name| plan.contains(*name)).collect();
    assert_eq!(
        walked.len(),
        1,
        "the vector branch did not walk its team's graph alone:\n{plan}"
    );

    // A team with fewer texts than the threshold is compared exactly; at it, the graph.
    for (threshold, walks) in [(count + 1, false), (count, true)] {
        let plan = store
            .clone()
            .with_ann_threshold(threshold)
            .explain_vector_candidates(
                &actor,
                &RecallQuery::text("anything"),
                &queries[0],
                &contract,
                10,
            )
            .await
            .unwrap();
        assert_eq!(
            graphs.iter().any(|name| plan.contains(name)),
            walks,
            "{count} texts, threshold {threshold}:\n{plan}"
        );
    }

    // A short period — the last 2,000 texts, most of this small team, so the planner
    // alone would walk the graph — is compared exactly, read through the listing index.
    let short_period = RecallQuery {
        since: Some(observed[count - 2_000]),
        ..RecallQuery::text("anything")
    };
    let plan = store
        .explain_vector_candidates(&actor, &short_period, &queries[0], &contract, 10)
        .await
        .unwrap();
    assert!(
        !graphs.iter().any(|name| plan.contains(name)),
        "a short period walked the HNSW index:\n{plan}"
    );
}

/// The partitions' own indexes of the partitioned index `parent`.
async fn partition_indexes(owner: &tokio_postgres::Client, parent: &str) -> Vec<String> {
    owner
        .query(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             WHERE i.inhparent = $1::text::regclass ORDER BY c.relname",
            &[&parent],
        )
        .await
        .expect("partition indexes")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn pruning_common_terms_never_changes_the_lexical_branch() {
    let Some((config, store)) = fresh().await else {
        return;
    };
    let actor = store.open_team("words").await.unwrap();
    let full = PgStore::connect_config(config, Arc::new(SystemClock), 2)
        .await
        .unwrap()
        .without_lexical_pruning();
    mnem_conformance::lexical_cases::pruning_never_changes_the_lexical_branch(
        &store, &full, &actor,
    )
    .await;
}

/// A database an older build left at `version`, the owner's connection to it (set to act
/// in the team, so row-level security admits its rows) and a team with an owner profile
/// whose id is the team's.
async fn older_database_with_team(
    url: &str,
    version: i64,
) -> (Config, tokio_postgres::Client, uuid::Uuid) {
    let config = testing::database_at_version(url, version)
        .await
        .expect("database at an older version");
    let (owner, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    let team = uuid::Uuid::now_v7();
    owner
        .batch_execute(&format!(
            "INSERT INTO teams (team_id, name, created_at) VALUES ('{team}', 't', 0); \
             SELECT set_config('mnem.team_id', '{team}', false); \
             INSERT INTO profiles (team_id, profile_id, name, created_at) \
               VALUES ('{team}', '{team}', 'owner', 0);"
        ))
        .await
        .expect("team");
    (config, owner, team)
}

/// A current text written as an older build wrote it: the evidence row alone, observed
/// and recorded at `at` (what a migration's Rust step derives is not there).
async fn store_text_as_older_build(
    owner: &tokio_postgres::Client,
    team: uuid::Uuid,
    id: uuid::Uuid,
    content: &str,
    at: i64,
) {
    owner
        .execute(
            "INSERT INTO evidence (team_id, evidence_id, owner_profile_id, content, kind, \
             source_type, source, authority, source_group, labels, refs, scope, \
             scope_depth, space, observed_at, recorded_at, content_hash, state) \
             VALUES ($1, $2, $1, $3, 'note', 'manual', 's', 'unknown', 'g', '[]', '[]', \
             '', 0, 'team', $4, $4, $3, 'current')",
            &[&team, &id, &content, &at],
        )
        .await
        .expect("evidence");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn migration_15_indexes_irregular_forms_again_and_recounts_the_statistics() {
    let Some(url) = testing::url() else {
        return;
    };
    let (config, owner, team) = older_database_with_team(&url, 14).await;
    // What a version-14 build stored for "Ann made a window": "made" as its own term.
    owner
        .execute(
            "INSERT INTO evidence (team_id, evidence_id, owner_profile_id, content, kind, \
             source_type, source, authority, source_group, labels, refs, scope, \
             scope_depth, space, observed_at, recorded_at, content_hash, state, \
             term_freqs, text_length) \
             VALUES ($1, $2, $1, 'Ann made a window', 'note', 'manual', 's', 'unknown', 'g', \
             '[]', '[]', '', 0, 'team', 0, 0, 'h', 'current', \
             '{\"ann\": 1, \"made\": 1, \"a\": 1, \"window\": 1}', 4)",
            &[&team, &uuid::Uuid::now_v7()],
        )
        .await
        .expect("evidence");

    let store = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 2)
        .await
        .expect("connect");
    assert_eq!(documents_holding(&owner, team, "make").await, 1);
    assert_eq!(documents_holding(&owner, team, "made").await, 0);
    assert_eq!(text_stats(&owner, team).await, (1, 4));
    let trigger: i8 = owner
        .query_one(
            "SELECT tgenabled FROM pg_trigger WHERE tgname = 'evidence_term_stats_change'",
            &[],
        )
        .await
        .expect("trigger")
        .get(0);
    assert_eq!(trigger, b'O' as i8, "the statistics trigger is on again");
    assert_eq!(
        lexical_hits(&store, team, "what did Ann make").await,
        1,
        "the rebuilt posting lists find it"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn migration_16_derives_the_mentions_of_stored_texts() {
    let Some(url) = testing::url() else {
        return;
    };
    let (config, owner, team) = older_database_with_team(&url, 15).await;
    store_text_as_older_build(
        &owner,
        team,
        uuid::Uuid::now_v7(),
        "We flew to Zanzibar in 2019",
        0,
    )
    .await;

    let _store = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 2)
        .await
        .expect("connect");
    let keys: Vec<String> = owner
        .query(
            "SELECT m.entity_key FROM mentions m JOIN evidence e \
             ON e.team_id = m.team_id AND e.doc = m.doc WHERE m.team_id = $1 \
             ORDER BY m.entity_key",
            &[&team],
        )
        .await
        .expect("mentions")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        keys,
        ["2019", "zanzibar"],
        "the stored text's name and year"
    );
    let (enabled, forced): (bool, bool) = owner
        .query_one(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = 'mentions'",
            &[],
        )
        .await
        .map(|row| (row.get(0), row.get(1)))
        .expect("pg_class");
    assert!(enabled && forced, "row-level security is on for mentions");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn migration_17_partitions_the_vectors_by_team_and_keeps_them_searchable() {
    let Some(url) = testing::url() else {
        return;
    };
    let (config, owner, team) = older_database_with_team(&url, 16).await;
    let contract = EmbeddingContract {
        provider: "test".into(),
        model: "random-unit-vectors".into(),
        dims: 64,
        normalization: "l2".into(),
        version: 1,
    };
    owner
        .batch_execute(
            "CREATE INDEX evidence_vectors_hnsw_64 ON evidence_vectors \
               USING hnsw ((embedding::vector(64)) vector_cosine_ops) WHERE dims = 64;",
        )
        .await
        .expect("an older build's vector index");
    let vectors = unit_vectors(3, contract.dims, 5);
    let mut ids = Vec::new();
    for (i, vector) in vectors.iter().enumerate() {
        let id = uuid::Uuid::now_v7();
        store_text_as_older_build(&owner, team, id, &format!("text {i}"), i as i64).await;
        owner
            .execute(
                "INSERT INTO evidence_vectors (team_id, evidence_id, contract, dims, embedding) \
                 VALUES ($1, $2, $3, 64, $4)",
                &[
                    &team,
                    &id,
                    &contract.key(),
                    &pgvector::Vector::from(vector.clone()),
                ],
            )
            .await
            .expect("vector");
        ids.push(id);
    }
    owner
        .execute(
            "INSERT INTO graph_documents (team_id, target_kind, target_id, text, contract, \
             dims, embedding) VALUES ($1, 'entity', $2, 'Zanzibar', $3, 64, $4)",
            &[
                &team,
                &uuid::Uuid::now_v7(),
                &contract.key(),
                &pgvector::Vector::from(vectors[0].clone()),
            ],
        )
        .await
        .expect("discovery document");

    let store = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 2)
        .await
        .expect("connect");
    for (table, rows) in [("evidence_vectors", 3), ("graph_documents", 1)] {
        let (kind, enabled, forced): (i8, bool, bool) = owner
            .query_one(
                "SELECT relkind::\"char\", relrowsecurity, relforcerowsecurity \
                 FROM pg_class WHERE relname = $1",
                &[&table],
            )
            .await
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .expect("pg_class");
        assert_eq!(kind as u8, b'p', "{table} is partitioned");
        assert!(enabled && forced, "row-level security is on for {table}");
        let kept: i64 = owner
            .query_one(
                &format!("SELECT count(*) FROM {table} WHERE team_id = $1"),
                &[&team],
            )
            .await
            .expect("count")
            .get(0);
        assert_eq!(kept, rows, "every row of {table} is kept");
        let graphs = partition_indexes(&owner, &format!("{table}_hnsw_64")).await;
        assert_eq!(graphs.len(), 32, "{table}'s index, made again: {graphs:?}");
    }

    let actor = mnem_core::Actor {
        team: mnem_core::TeamId(team),
        profile: mnem_core::ProfileId(team),
    };
    let nearest = store
        .vector_candidates(
            &actor,
            &RecallQuery::text("anything"),
            &vectors[1],
            &contract,
            Timestamp::from_seconds(4_000_000_000),
            3,
        )
        .await
        .expect("vector branch");
    assert_eq!(nearest.len(), 3, "the app still reads the team's vectors");
    assert_eq!(
        nearest[0].evidence.id.0, ids[1],
        "its own vector is nearest"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn migrations_5_and_13_rederive_stored_texts_and_build_their_posting_lists() {
    let Some(url) = testing::url() else {
        return;
    };
    let config = testing::database_at_version(&url, 4)
        .await
        .expect("database at version 4");
    // Texts as a version-4 build stored them: terms parsed by the database's own
    // configuration (which keeps "café" accented), in two teams.
    let (owner, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    let (mine, theirs) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
    let texts = [
        (mine, "The Café opened its terrace"),
        (mine, "café terraces, café menus"),
        (theirs, "terrace"),
    ];
    for team in [mine, theirs] {
        owner
            .execute(
                "INSERT INTO teams (team_id, name, created_at) VALUES ($1, $2, 0)",
                &[&team, &team.to_string()],
            )
            .await
            .expect("team");
    }
    for (team, content) in texts {
        owner
            .batch_execute(&format!(
                "SELECT set_config('mnem.team_id', '{team}', false)"
            ))
            .await
            .expect("name the team");
        owner
            .execute(
                "INSERT INTO profiles (team_id, profile_id, name, created_at) \
                 VALUES ($1, $1, 'owner', 0) ON CONFLICT DO NOTHING",
                &[&team],
            )
            .await
            .expect("profile");
        owner
            .execute(
                "INSERT INTO evidence (team_id, evidence_id, owner_profile_id, content, kind, \
                 source_type, source, authority, source_group, labels, refs, scope, \
                 scope_depth, space, observed_at, recorded_at, content_hash, state) \
                 VALUES ($1, $2, $1, $3, 'note', 'manual', 's', 'unknown', 'g', '[]', '[]', '', \
                 0, 'team', 0, 0, 'h', 'current')",
                &[&team, &uuid::Uuid::now_v7(), &content],
            )
            .await
            .expect("evidence");
    }
    owner
        .batch_execute(&format!(
            "SELECT set_config('mnem.team_id', '{mine}', false)"
        ))
        .await
        .expect("name the team");
    let old_lexeme: i64 = owner
        .query_one(
            "SELECT COUNT(*) FROM term_stats WHERE team_id = $1 AND lexeme = 'café'",
            &[&mine],
        )
        .await
        .expect("old stats")
        .get(0);
    assert_eq!(old_lexeme, 1, "version 4 kept the accent");

    // Opening the store migrates to the current version.
    let store = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 2)
        .await
        .expect("connect");
    let want_length: i64 = texts[..2]
        .iter()
        .map(|(_, text)| i64::from(mnem_core::lexical::document_terms(text).length))
        .sum();
    assert_eq!(text_stats(&owner, mine).await, (2, want_length));
    let holding = |lexeme| documents_holding(&owner, mine, lexeme);
    assert_eq!(holding("cafe").await, 2, "re-derived: accents folded");
    assert_eq!(holding("café").await, 0, "the old lexeme is gone");
    assert_eq!(holding("terrac").await, 2, "stemmed as the core stems");
    // Migration 13 built the posting lists from the same texts: one block per term here,
    // bounded by the stats beside it.
    let block = owner
        .query_one(
            "SELECT b.postings, b.max_frequency, t.max_frequency, t.min_length \
             FROM lexical_blocks b JOIN term_stats t ON t.team_id = b.team_id \
             AND t.lexeme = b.term WHERE b.team_id = $1 AND b.term = 'cafe'",
            &[&mine],
        )
        .await
        .expect("the term's block");
    assert_eq!(block.get::<_, i32>(0), 2, "both texts hold it");
    assert_eq!(block.get::<_, i32>(1), 2, "the second says it twice");
    assert_eq!(block.get::<_, i64>(2), 2, "the term's bound was backfilled");
    let shortest = texts[..2]
        .iter()
        .map(|(_, text)| i64::from(mnem_core::lexical::document_terms(text).length))
        .min();
    assert_eq!(Some(block.get::<_, i64>(3)), shortest);
    for table in ["evidence", "text_stats", "term_stats", "lexical_blocks"] {
        let (enabled, forced): (bool, bool) = owner
            .query_one(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE relname = $1",
                &[&table],
            )
            .await
            .map(|row| (row.get(0), row.get(1)))
            .expect("pg_class");
        assert!(enabled && forced, "row-level security is back on {table}");
    }
    assert_eq!(
        lexical_hits(&store, mine, "cafe terrace").await,
        2,
        "both of the team's texts, none of the other's"
    );
}

/// An optional recall lookup's failure case (its assertions in `mnem_conformance`), run
/// with `$table` renamed away midway: recall must still answer.
macro_rules! optional_lookup_fails {
    ($name:ident, $table:literal, $case:path) => {
        #[tokio::test]
        #[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
        async fn $name() {
            let Some((config, store)) = fresh().await else {
                return;
            };
            let actor = store.open_team("alpha").await.unwrap();
            let memory = mnem_service::Memory::open(store, None).await.unwrap();
            let remove_table = async {
                let (owner, connection) = config.connect(NoTls).await.expect("connect");
                tokio::spawn(connection);
                owner
                    .batch_execute(concat!("ALTER TABLE ", $table, " RENAME TO gone"))
                    .await
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

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn two_servers_writing_one_team_at_once_lose_no_posting() {
    let Some((config, first)) = fresh().await else {
        return;
    };
    let second = PgStore::connect_config(config.clone(), Arc::new(SystemClock), 4)
        .await
        .expect("a second server");
    let actor = first.open_team("alpha").await.unwrap();
    // Each server writes texts one at a time and in batches, all holding "lantern", so
    // every write edits the same term's last block.
    const EACH: usize = 60;
    let write = |store: PgStore, name: &'static str| {
        tokio::spawn(async move {
            for i in 0..EACH / 2 {
                store
                    .remember(&actor, NewEvidence::new(format!("{name} lantern {i}")))
                    .await
                    .expect("remember");
            }
            let batch: Vec<NewEvidence> = (EACH / 2..EACH)
                .map(|i| NewEvidence::new(format!("{name} lantern {i}")))
                .collect();
            for chunk in batch.chunks(10) {
                store
                    .remember_batch(&actor, chunk.to_vec())
                    .await
                    .expect("remember a batch");
            }
        })
    };
    let (a, b) = tokio::join!(write(first.clone(), "north"), write(second, "south"));
    a.unwrap();
    b.unwrap();

    let (owner, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    owner
        .batch_execute(&format!(
            "SELECT set_config('mnem.team_id', '{}', false)",
            actor.team.0
        ))
        .await
        .unwrap();
    let counted: (i64, i64) = owner
        .query_one(
            "SELECT (SELECT sum(postings)::bigint FROM lexical_blocks WHERE term = 'lantern'), \
             (SELECT documents FROM term_stats WHERE lexeme = 'lantern')",
            &[],
        )
        .await
        .map(|row| (row.get(0), row.get(1)))
        .unwrap();
    assert_eq!(
        counted.0,
        2 * EACH as i64,
        "every write's posting is in a block"
    );
    assert_eq!(counted.1, 2 * EACH as i64, "and counted once");
    let found = first
        .lexical_candidates(
            &actor,
            &RecallQuery::text("lantern"),
            Timestamp::from_seconds(4_000_000_000),
            1_000,
        )
        .await
        .expect("lexical");
    assert_eq!(found.len(), 2 * EACH, "every text is found");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn a_read_sees_one_snapshot_while_another_connection_writes() {
    let Some((_config, store)) = fresh().await else {
        return;
    };
    let team = store.open_team("snapshot").await.unwrap();
    store
        .remember(&team, NewEvidence::new("written before the read"))
        .await
        .unwrap();
    let meanwhile = async {
        store
            .remember(&team, NewEvidence::new("written during the read"))
            .await
            .map(|_| ())
    };
    let (first, second) = testing::evidence_counted_around(&store, team.team, meanwhile)
        .await
        .unwrap();
    assert_eq!(first, 1);
    // Under READ COMMITTED the second statement would see the commit (2).
    assert_eq!(second, 1);
    let after = testing::evidence_counted_around(&store, team.team, async { Ok(()) })
        .await
        .unwrap();
    assert_eq!(after, (2, 2));
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn answers_hold_while_a_connection_cycles_through_more_statements_than_it_keeps() {
    // One connection, so every read below goes through one statement cache.
    let Some(store) = fresh_with_one_connection().await else {
        return;
    };
    let actor = store.open_team("cycling").await.unwrap();
    let mut written = Vec::new();
    for text in ["the kettle is in the shed", "the shed key is blue", "tea"] {
        written.push(
            store
                .remember(&actor, NewEvidence::new(text))
                .await
                .unwrap()
                .evidence
                .id,
        );
    }
    let now = store.clock().now();
    let expected: HashSet<_> = written[..2].iter().copied().collect();
    // A time view is written into the statement's text: each of these recalls sends
    // texts the connection has not prepared, well past the 512 it keeps.
    for step in 0..700 {
        let query = RecallQuery {
            known_at: Some(Timestamp::from_micros(now.as_micros() + 1 + step)),
            ..RecallQuery::text("shed")
        };
        let found: HashSet<_> = store
            .lexical_candidates(&actor, &query, now, 10)
            .await
            .unwrap()
            .iter()
            .map(|candidate| candidate.evidence.id)
            .collect();
        assert_eq!(found, expected, "recall {step} answered differently");
    }
}

/// Turn `n` of one conversation, observed `n` seconds into 2026.

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn a_recalls_reads_after_its_branches_share_one_snapshot() {
    let Some((_config, store)) = fresh().await else {
        return;
    };
    let actor = store.open_team("shared-read").await.unwrap();
    let first = store
        .remember(&actor, conversation_turn(1))
        .await
        .unwrap()
        .evidence;
    let (before, during) = store
        .reading_together(&actor, async {
            let before = texts_after(&store, &actor, &first).await;
            // Committed on another connection while the scope is open.
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

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn a_cancelled_shared_read_never_returns_its_open_transaction_to_the_pool() {
    // One connection: whatever the cancelled scope leaves behind, the next caller gets.
    let Some(store) = fresh_with_one_connection().await else {
        return;
    };
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
    // Pooled inside its read-only transaction, the connection would refuse this write
    // and keep showing the old snapshot.
    store
        .remember(&actor, conversation_turn(2))
        .await
        .expect("a write after the cancelled read");
    let after = texts_after(&store, &actor, &first).await;
    assert_eq!(after, vec!["turn 2 of the conversation".to_string()]);
}

/// Every authenticated request reads its key, then its profile under the key's team,
/// through statements the pooled connection keeps prepared. On one connection, keys of
/// two teams read in turn still find their own team and profile, and a revocation is seen
/// by the very next read.
#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn keys_of_two_teams_read_in_turn_on_one_connection_find_their_own_profiles() {
    let Some(store) = fresh_with_one_connection().await else {
        return;
    };
    let store = Arc::new(store);
    store.create_team("acme").await.expect("team acme");
    store.create_team("globex").await.expect("team globex");
    let auth = Authenticator::new(Arc::clone(&store));
    let alice = auth
        .issue("acme", "alice", Access::Write, None)
        .await
        .expect("alice's key");
    let bob = auth
        .issue("globex", "bob", Access::Read, None)
        .await
        .expect("bob's key");
    let alice_actor = store.open_profile("acme", "alice").await.expect("alice");
    let bob_actor = store.open_profile("globex", "bob").await.expect("bob");
    for _ in 0..3 {
        let read = store.api_key(&alice.record.prefix).await.expect("read");
        let read = read.expect("alice's key is stored");
        assert_eq!(read.team_name, "acme");
        assert_eq!(read.profile_name, "alice");
        let read = store.api_key(&bob.record.prefix).await.expect("read");
        let read = read.expect("bob's key is stored");
        assert_eq!(read.team_name, "globex");
        assert_eq!(read.profile_name, "bob");
        let principal = auth.authenticate(&alice.token).await.expect("alice");
        assert_eq!(principal.actor, alice_actor);
        let principal = auth.authenticate(&bob.token).await.expect("bob");
        assert_eq!(principal.actor, bob_actor);
    }
    auth.revoke("acme", &alice.record.prefix)
        .await
        .expect("revoke");
    assert!(matches!(
        auth.authenticate(&alice.token).await,
        Err(AuthError::Refused(KeyRefusal::Revoked))
    ));
    let principal = auth.authenticate(&bob.token).await.expect("bob");
    assert_eq!(principal.actor, bob_actor);
}
