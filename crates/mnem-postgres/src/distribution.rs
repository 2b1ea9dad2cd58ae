//! How the schema is laid out for a distribution by team (Citus, or any sharding on one
//! column): every table of team data carries [`DISTRIBUTION_COLUMN`] in its primary key
//! and in every unique constraint, and every statement the backend sends names the team
//! it reads or writes, so a team's rows live together and each statement can be routed to
//! the node holding them. The few tables a request reads before it knows its team are
//! [`REFERENCE_TABLES`], held whole by every node. The PostgreSQL tests hold the schema
//! and the statements to this (`tests/distribution.rs`).

/// The column every table of team data is distributed by.
pub const DISTRIBUTION_COLUMN: &str = "team_id";

/// Tables every node would hold whole, with why each is not distributed by team.
pub const REFERENCE_TABLES: &[(&str, &str)] = &[
    (
        "teams",
        "a team is found by its name before any team is known",
    ),
    (
        "api_keys",
        "a key is found by its public prefix: a request presents only its token",
    ),
    (
        "store_meta",
        "the store's settings (the embedding contract), one row each",
    ),
    ("mnem_schema", "the schema version the migrations reached"),
];

/// The statements that read or write every team at once, by design, each marked in its
/// text by a comment after its first keyword (`/* all teams: NAME */`; `pg_stat_statements`
/// keeps a comment there, and drops one before the statement),
/// with why it spans teams. Under Citus each is a query across all shards (see
/// ARCHITECTURE.md, scale-out); the claim's `FOR UPDATE` would have to become one claim
/// per team with pending jobs.
pub const CROSS_TEAM_STATEMENTS: &[(&str, &str)] = &[
    (
        "/* all teams: claim */",
        "the embedding worker takes the oldest pending jobs of any team",
    ),
    (
        "/* all teams: reindex */",
        "`mnem reindex` re-queues every document after the embedding contract changed",
    ),
    (
        "/* all teams: freshness */",
        "the search-freshness gauges (`/metrics`, `status`) count the whole store",
    ),
];

/// Whether `table` is one of the [`REFERENCE_TABLES`].
pub fn is_reference_table(table: &str) -> bool {
    REFERENCE_TABLES.iter().any(|(name, _)| *name == table)
}
