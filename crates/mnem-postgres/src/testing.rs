//! Test support: a fresh, migrated database per test, copied from `mnem_template` (made
//! by `scripts/pg.sh`), so every conformance case starts from an empty store exactly as
//! it does on SQLite.

use std::sync::Arc;

use mnem_core::Clock;
use mnem_store::{Result, StoreError};
use tokio::sync::OnceCell;
use tokio_postgres::{Config, NoTls};

use crate::{migrations, DbResult, PgStore};

/// The environment variable naming the server the PostgreSQL tests run against.
pub const URL_VARIABLE: &str = "MNEM_PG_URL";

const TEMPLATE: &str = "mnem_template";

/// A database with pgvector and nothing of mnem's (`scripts/pg.sh` makes it), the
/// template of databases migrated only part of the way.
const BARE: &str = "mnem_bare";

/// The URL the tests use; `None` skips them, loudly, outside CI. In CI (`CI` set) a
/// missing URL is a failure: the suite must never pass by not running.
pub fn url() -> Option<String> {
    match std::env::var(URL_VARIABLE) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{URL_VARIABLE} is not set in CI: the PostgreSQL suite must run there")
        }
        _ => {
            eprintln!(
                "SKIPPED: {URL_VARIABLE} is not set, so this PostgreSQL test did not run \
                 (start one with `scripts/pg.sh start`)"
            );
            None
        }
    }
}

static TEMPLATE_READY: OnceCell<()> = OnceCell::const_new();

/// Opens a store on a new database of its own, copied from the migrated template.
pub async fn fresh_store(url: &str, clock: Arc<dyn Clock>) -> Result<PgStore> {
    let config = fresh_database(url).await?;
    PgStore::connect_config(config, clock, 4).await
}

/// A new database of its own, copied from the migrated template: its settings.
pub async fn fresh_database(url: &str) -> Result<Config> {
    let base: Config = url.parse().map_err(StoreError::backend)?;
    TEMPLATE_READY
        .get_or_try_init(|| async {
            let mut template = base.clone();
            template.dbname(TEMPLATE);
            migrations::migrate(&template).await
        })
        .await?;
    copy_database(base, "mnem_t", TEMPLATE).await
}

/// A new database named `<prefix>_<uuid>`, copied from `template`: its settings.
async fn copy_database(base: Config, prefix: &str, template: &str) -> Result<Config> {
    let name = format!(
        "{prefix}_{}",
        mnem_store::new_uuid_v7(mnem_store::SystemClock.now()).simple()
    );
    let (client, connection) = base.connect(NoTls).await.db()?;
    let driver = tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
        .await
        .db()?;
    drop(client);
    let _ = driver.await;
    let mut config = base;
    config.dbname(&name);
    Ok(config)
}

/// A new, empty database of its own migrated only up to `version`, as an older build
/// left it: for tests of a later migration.
pub async fn database_at_version(url: &str, version: i64) -> Result<Config> {
    let base: Config = url.parse().map_err(StoreError::backend)?;
    let config = copy_database(base, &format!("mnem_t_v{version}"), BARE).await?;
    migrations::migrate_to(&config, version).await?;
    Ok(config)
}

/// A new database of its own as a URL (for processes started by a test): `url` with its
/// database name replaced.
pub async fn fresh_database_url(url: &str) -> Result<String> {
    let config = fresh_database(url).await?;
    let name = config.get_dbname().unwrap_or_default().to_string();
    let base = url.split('?').next().unwrap_or(url);
    let prefix = base.rsplit_once('/').map_or(base, |(head, _)| head);
    Ok(format!("{prefix}/{name}"))
}

/// The team's evidence counted twice inside one of the store's read transactions, with
/// `between` awaited (a write the caller commits on other connections) in the middle:
/// what one read sees while another server writes during it.
pub async fn evidence_counted_around<F>(
    store: &PgStore,
    team: mnem_core::TeamId,
    between: F,
) -> Result<(i64, i64)>
where
    F: std::future::Future<Output = Result<()>>,
{
    const COUNT: &str = "/* test probe */ SELECT count(*) FROM evidence WHERE team_id = $1";
    let mut client = store.client().await?;
    let tx = crate::begin(&mut client, Some(team), true).await?;
    let first: i64 = tx.query_one(COUNT, &[&team.0]).await.db()?.get(0);
    between.await?;
    let second: i64 = tx.query_one(COUNT, &[&team.0]).await.db()?.get(0);
    tx.commit().await.db()?;
    Ok((first, second))
}
