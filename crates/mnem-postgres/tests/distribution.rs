//! Ready for a distribution by team (Citus): the schema keeps each team's rows together
//! under every key, and every statement the backend sent while the PostgreSQL suite ran
//! names the team of each table of team data it touches, so distributing needs no query
//! change.
//!
//! The schema: every table is a reference table or carries `team_id`, in its primary key
//! and in every unique index; a foreign key between team tables carries the team on both
//! sides (the rows it joins share a shard), and no reference table refers to a team table.
//!
//! The statements: `scripts/test.sh` empties `pg_stat_statements` before the PostgreSQL tests and runs this
//! after them: it reads every statement the application role (`mnem_app`, which all of
//! the backend's pooled connections act as) executed, trigger bodies included. Migrations
//! and the tests' own raw SQL run as other roles and are not audited.
//!
//! The rule is read off the statement's text: each reference to a team table (after
//! `FROM`, `JOIN`, `UPDATE`, `INTO` or `USING`) needs a `team_id` of its own in the
//! statement, a condition, a join key or an inserted column. It is a lint, not a proof:
//! it cannot tell a `team_id` in a select list from one in a condition, but it does catch
//! a statement that reads a team table and never names a team, and a join that forgets
//! to carry the team across.

use std::collections::{BTreeMap, BTreeSet};

use mnem_postgres::distribution::{
    is_reference_table, CROSS_TEAM_STATEMENTS, DISTRIBUTION_COLUMN, REFERENCE_TABLES,
};
use mnem_postgres::{testing, APP_ROLE};
use tokio_postgres::{Client, Config, NoTls};

/// The words of a statement, lower-cased: identifiers and keywords, nothing else.
fn words(sql: &str) -> Vec<String> {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// How often `sql` refers to each of `tables` as a relation it reads or writes.
fn table_references(sql: &str, tables: &BTreeSet<String>) -> BTreeMap<String, usize> {
    let words = words(sql);
    let mut references = BTreeMap::new();
    for pair in words.windows(2) {
        let relation = pair[1].strip_prefix("public.").unwrap_or(&pair[1]);
        let introduces = matches!(
            pair[0].as_str(),
            "from" | "join" | "update" | "into" | "using"
        );
        if introduces && tables.contains(relation) {
            *references.entry(relation.to_string()).or_insert(0) += 1;
        }
    }
    references
}

/// Why `sql` does not name its team for each team table it touches, or `None` if it does.
fn unrouted(sql: &str, tables: &BTreeSet<String>) -> Option<String> {
    let references = table_references(sql, tables);
    let touched: usize = references.values().sum();
    let named = words(sql)
        .iter()
        .filter(|word| word.rsplit('.').next() == Some(DISTRIBUTION_COLUMN))
        .count();
    (named < touched).then(|| {
        format!(
            "{touched} reference(s) to team tables {:?}, {named} `{DISTRIBUTION_COLUMN}`",
            references.keys().collect::<Vec<_>>()
        )
    })
}

fn tables(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| name.to_string()).collect()
}

#[test]
fn a_statement_that_names_the_team_of_each_table_it_joins_passes() {
    let teams = tables(&["evidence", "evidence_vectors"]);
    let sql = "SELECT e.body FROM evidence e JOIN evidence_vectors v \
               ON v.team_id = e.team_id AND v.evidence_id = e.evidence_id WHERE e.team_id = $1";
    assert_eq!(unrouted(sql, &teams), None);
}

#[test]
fn a_statement_that_never_names_a_team_is_caught() {
    let teams = tables(&["search_jobs"]);
    let sql = "SELECT count(*) FROM search_jobs WHERE state = $1";
    assert!(unrouted(sql, &teams).is_some());
}

#[test]
fn a_join_that_does_not_carry_the_team_across_is_caught() {
    let teams = tables(&["evidence", "evidence_vectors"]);
    let sql = "SELECT e.body FROM evidence e JOIN evidence_vectors v \
               ON v.evidence_id = e.evidence_id WHERE e.team_id = $1";
    assert!(unrouted(sql, &teams).is_some());
}

#[test]
fn a_column_named_like_a_table_is_not_a_reference() {
    let teams = tables(&["evidence"]);
    let sql = "SELECT evidence_id, doc FROM unnest($1::bigint[]) AS evidence (doc)";
    assert_eq!(unrouted(sql, &teams), None);
}

/// A relation's columns by number, from the catalog, for the schema check.
type Columns = BTreeMap<(String, i16), String>;

async fn columns(client: &Client) -> Columns {
    let rows = client
        .query(
            "SELECT c.relname, a.attnum, a.attname FROM pg_attribute a \
             JOIN pg_class c ON c.oid = a.attrelid \
             WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 \
               AND NOT a.attisdropped",
            &[],
        )
        .await
        .expect("columns");
    rows.iter()
        .map(|row| ((row.get(0), row.get(1)), row.get(2)))
        .collect()
}

fn named(columns: &Columns, table: &str, numbers: &[i16]) -> Vec<String> {
    numbers
        .iter()
        .map(|n| columns[&(table.to_string(), *n)].clone())
        .collect()
}

#[tokio::test]
#[ignore = "needs PostgreSQL: scripts/test.sh runs it"]
async fn every_team_table_keeps_its_team_in_every_key_and_reference_tables_refer_to_none() {
    let Some(url) = testing::url() else {
        return;
    };
    let config = testing::fresh_database(&url).await.expect("fresh database");
    let client = connect(&config).await;
    let columns = columns(&client).await;
    let tables: Vec<(String, bool)> = client
        .query(
            "SELECT c.relname, EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
               AND a.attname = $1 AND a.attnotnull AND NOT a.attisdropped) \
             FROM pg_class c \
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')",
            &[&DISTRIBUTION_COLUMN],
        )
        .await
        .expect("tables")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut faults = Vec::new();
    for (table, has_team) in &tables {
        if !is_reference_table(table) && !has_team {
            faults.push(format!(
                "{table}: neither a reference table nor NOT NULL team_id"
            ));
        }
    }
    for (name, _) in REFERENCE_TABLES {
        assert!(
            tables.iter().any(|(table, _)| table == name),
            "reference table {name} is not in the schema"
        );
    }
    let keys = client
        .query(
            "SELECT c.relname, i.relname, x.indkey::int2[] FROM pg_index x \
             JOIN pg_class c ON c.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid \
             WHERE c.relnamespace = 'public'::regnamespace AND x.indisunique",
            &[],
        )
        .await
        .expect("unique indexes");
    let mut unique_keys = 0;
    for row in &keys {
        let (table, index): (String, String) = (row.get(0), row.get(1));
        if is_reference_table(&table) {
            continue;
        }
        unique_keys += 1;
        let key = named(&columns, &table, &row.get::<_, Vec<i16>>(2));
        if !key.iter().any(|column| column == DISTRIBUTION_COLUMN) {
            faults.push(format!(
                "{table}: unique index {index} {key:?} lacks team_id"
            ));
        }
    }
    let foreign = client
        .query(
            "SELECT c.relname, f.relname, k.conname, k.conkey, k.confkey FROM pg_constraint k \
             JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class f ON f.oid = k.confrelid \
             WHERE k.connamespace = 'public'::regnamespace AND k.contype = 'f'",
            &[],
        )
        .await
        .expect("foreign keys");
    for row in &foreign {
        let (from, to, name): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let (from_reference, to_reference) = (is_reference_table(&from), is_reference_table(&to));
        if from_reference && !to_reference {
            faults.push(format!(
                "{name}: reference table {from} refers to team table {to}"
            ));
        }
        if !from_reference && !to_reference {
            let own = named(&columns, &from, &row.get::<_, Vec<i16>>(3));
            let theirs = named(&columns, &to, &row.get::<_, Vec<i16>>(4));
            let carried = own
                .iter()
                .zip(&theirs)
                .any(|(a, b)| a == DISTRIBUTION_COLUMN && b == DISTRIBUTION_COLUMN);
            if !carried {
                faults.push(format!(
                    "{name}: {from} {own:?} -> {to} {theirs:?} lacks team_id"
                ));
            }
        }
    }
    // The check must have had something to check.
    assert!(tables.len() >= 20, "tables: {tables:?}");
    assert!(
        unique_keys >= 20,
        "only {unique_keys} unique keys of team tables"
    );
    assert!(
        faults.is_empty(),
        "not ready for a distribution by team:\n{}",
        faults.join("\n")
    );
}

async fn connect(config: &Config) -> Client {
    let (client, connection) = config.connect(NoTls).await.expect("connect");
    tokio::spawn(connection);
    client
}

/// The tables of team data: every table with the distribution column that is not a
/// reference table, read from a freshly migrated database.
async fn team_tables(url: &str) -> BTreeSet<String> {
    let config = testing::fresh_database(url).await.expect("fresh database");
    let client = connect(&config).await;
    let rows = client
        .query(
            "SELECT c.relname FROM pg_class c \
             JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $1 AND NOT a.attisdropped \
             WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')",
            &[&DISTRIBUTION_COLUMN],
        )
        .await
        .expect("list tables");
    rows.iter()
        .map(|row| row.get::<_, String>(0))
        .filter(|name| !is_reference_table(name))
        .collect()
}

#[tokio::test]
#[ignore = "reads what the PostgreSQL suite sent: scripts/test.sh runs it after that suite"]
async fn every_statement_the_backend_sent_names_the_team_of_each_table_it_touches() {
    let Some(url) = testing::url() else {
        return;
    };
    let teams = team_tables(&url).await;
    assert!(teams.contains("evidence"), "team tables: {teams:?}");
    let client = connect(&url.parse().expect("url")).await;
    let installed = client
        .query_opt(
            "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'",
            &[],
        )
        .await
        .expect("extensions");
    assert!(
        installed.is_some(),
        "pg_stat_statements is not installed in the database of {}: start PostgreSQL \
         with scripts/pg.sh, which loads and installs it",
        testing::URL_VARIABLE
    );
    let evicted: i64 = client
        .query_one("SELECT dealloc FROM pg_stat_statements_info", &[])
        .await
        .expect("statement statistics")
        .get(0);
    assert_eq!(
        evicted, 0,
        "pg_stat_statements evicted statements: raise its max"
    );
    let statements: Vec<String> = client
        .query(
            "SELECT query FROM pg_stat_statements \
             WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = $1)",
            &[&APP_ROLE],
        )
        .await
        .expect("read statements")
        .iter()
        .map(|row| row.get(0))
        .collect();

    let touching: Vec<&String> = statements
        .iter()
        .filter(|sql| !table_references(sql, &teams).is_empty())
        .collect();
    // The suite sends hundreds of distinct statements; a handful means it did not run.
    assert!(
        touching.len() >= 100,
        "only {} statements on team tables were recorded: run this after the PostgreSQL \
         suite, as scripts/test.sh does",
        touching.len()
    );
    // The tests' own probes (row-level security refusing an unfiltered read) and the
    // statements that span teams by design are not held to the rule.
    let allowed = |sql: &str| {
        sql.contains("/* test probe */")
            || CROSS_TEAM_STATEMENTS
                .iter()
                .any(|(marker, _)| sql.contains(marker))
    };
    let offenders: Vec<String> = touching
        .iter()
        .filter(|sql| !allowed(sql))
        .filter_map(|sql| unrouted(sql, &teams).map(|why| format!("{why}:\n    {sql}")))
        .collect();
    assert!(
        offenders.is_empty(),
        "{} of {} statements do not name their team:\n{}",
        offenders.len(),
        touching.len(),
        offenders.join("\n")
    );
    let exempt = touching.iter().filter(|sql| allowed(sql)).count();
    eprintln!(
        "audited {} statements on {} team tables ({exempt} exempt: probes and the \
         statements marked as spanning teams)",
        touching.len(),
        teams.len()
    );
}
