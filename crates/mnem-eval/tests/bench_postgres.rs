//! `mnem bench` with a PostgreSQL database: each size is measured on both backends, and
//! then side by side (the two backends in turns over the same queries). Needs
//! `MNEM_PG_URL` (`scripts/pg.sh start`); skipped loudly without it outside CI.

use mnem_eval::bench::{run, BenchOptions};
use mnem_postgres::testing;

#[tokio::test]
async fn a_postgres_run_times_both_backends_side_by_side_over_the_same_queries() {
    let Some(url) = testing::url() else { return };
    let database = testing::fresh_database_url(&url).await.unwrap();
    let options = BenchOptions {
        sizes: vec![300],
        teams: 2,
        queries: 4,
        seed: 42,
        model: None,
        progress: false,
        database: Some(database),
    };
    let report = run(&options).await.unwrap();

    let backends: Vec<&str> = report.sizes.iter().map(|s| s.backend).collect();
    assert_eq!(backends, ["sqlite", "postgres"]);
    assert_eq!(report.side_by_side.len(), 1);
    let paired = &report.side_by_side[0];
    assert_eq!(paired.items, 300);
    let profiles: Vec<&str> = paired.profiles.iter().map(|p| p.profile.as_str()).collect();
    assert_eq!(profiles, ["lexical", "hybrid, HNSW vectors"]);
    for profile in &paired.profiles {
        assert!(profile.sqlite_ms.p50 > 0.0, "{}", profile.profile);
        assert!(profile.postgres_ms.p50 > 0.0, "{}", profile.profile);
        assert!(
            profile.sqlite_ms.p99 >= profile.sqlite_ms.p50,
            "{}",
            profile.profile
        );
        assert!(
            profile.postgres_ms.p99 >= profile.postgres_ms.p50,
            "{}",
            profile.profile
        );
    }
    let table = report.table();
    assert!(table.contains("[side by side] N = 300"), "{table}");
}
