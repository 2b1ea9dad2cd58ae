//! Teams and API keys ([`CredentialStore`]): global rows looked up by the key's public
//! prefix (a request presents only its token; the team is what the lookup finds). The
//! profile name is read under the key's team, like every tenant row.

use mnem_core::{Actor, ApiKeyRecord, ProfileId, TeamId, Timestamp};
use mnem_store::{
    new_uuid_v7, validate_profile_name, validate_team_name, CredentialStore, NewApiKey, Result,
    StoreError,
};
use tokio_postgres::{Row, Transaction};
use uuid::Uuid;

use crate::prepared::{self, Session};
use crate::rows::{col, optional_stamp, parsed};
use crate::{begin, ensure_profile, set_team, DbResult, PgStore};

const KEY_COLUMNS: &str = "k.key_prefix, k.team_id, k.profile_id, t.name, k.access, \
     k.secret_hash, k.created_at, k.expires_at, k.revoked_at \
     FROM api_keys k JOIN teams t ON t.team_id = k.team_id";

/// A key row with its profile's name.
fn key_from_row(row: &Row, profile_name: String) -> Result<ApiKeyRecord> {
    Ok(ApiKeyRecord {
        prefix: col(row, 0)?,
        actor: Actor {
            team: TeamId(col(row, 1)?),
            profile: ProfileId(col(row, 2)?),
        },
        team_name: col(row, 3)?,
        profile_name,
        access: parsed(row, 4)?,
        secret_hash: col(row, 5)?,
        created_at: Timestamp::from_micros(col(row, 6)?),
        expires_at: optional_stamp(row, 7)?,
        revoked_at: optional_stamp(row, 8)?,
    })
}

async fn profile_name(tx: &impl Session, team: Uuid, profile: Uuid) -> Result<String> {
    set_team(tx, TeamId(team)).await?;
    col(
        &prepared::query_one(
            tx,
            "SELECT name FROM profiles WHERE team_id = $1 AND profile_id = $2",
            &[&team, &profile],
        )
        .await?,
        0,
    )
}

async fn keys_from_rows(tx: &impl Session, rows: &[Row]) -> Result<Vec<ApiKeyRecord>> {
    let mut keys = Vec::with_capacity(rows.len());
    for row in rows {
        let name = profile_name(tx, col(row, 1)?, col(row, 2)?).await?;
        keys.push(key_from_row(row, name)?);
    }
    Ok(keys)
}

/// Read on every authenticated request (expiry and revocation are never cached), so its
/// statements stay prepared on the connection: a bare text costs a parse round trip and
/// a close each time, three of them per request before.
async fn key_by_prefix(tx: &impl Session, prefix: &str) -> Result<Option<ApiKeyRecord>> {
    let rows = prepared::query(
        tx,
        &format!("SELECT {KEY_COLUMNS} WHERE k.key_prefix = $1"),
        &[&prefix],
    )
    .await?;
    Ok(keys_from_rows(tx, &rows).await?.pop())
}

async fn team_exists(tx: &Transaction<'_>, name: &str) -> Result<bool> {
    Ok(tx
        .query_opt("SELECT 1 FROM teams WHERE name = $1", &[&name])
        .await
        .db()?
        .is_some())
}

impl CredentialStore for PgStore {
    async fn create_team(&self, name: &str) -> Result<TeamId> {
        let name = validate_team_name(name)?;
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        let id = TeamId(new_uuid_v7(now));
        let inserted = tx
            .execute(
                "INSERT INTO teams (team_id, name, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
                &[&id.0, &name, &now.as_micros()],
            )
            .await
            .db()?;
        if inserted == 0 {
            return Err(StoreError::Conflict(format!(
                "team `{name}` already exists"
            )));
        }
        tx.commit().await.db()?;
        Ok(id)
    }

    async fn insert_key(&self, key: NewApiKey) -> Result<ApiKeyRecord> {
        validate_team_name(&key.team)?;
        validate_profile_name(&key.profile)?;
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        if !team_exists(&tx, &key.team).await? {
            return Err(StoreError::TeamNotFound { name: key.team });
        }
        let actor = ensure_profile(&tx, &key.team, &key.profile, now).await?;
        tx.execute(
            "INSERT INTO api_keys (key_prefix, team_id, profile_id, access, secret_hash, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &key.prefix,
                &actor.team.0,
                &actor.profile.0,
                &key.access.as_str(),
                &key.secret_hash,
                &now.as_micros(),
                &key.expires_at.map(Timestamp::as_micros),
            ],
        )
        .await
        .db()?;
        let record = key_by_prefix(&tx, &key.prefix)
            .await?
            .ok_or_else(|| StoreError::Backend("inserted API key not readable".into()))?;
        tx.commit().await.db()?;
        Ok(record)
    }

    async fn api_key(&self, prefix: &str) -> Result<Option<ApiKeyRecord>> {
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, true).await?;
        key_by_prefix(&tx, prefix).await
    }

    async fn revoke_key(&self, prefix: &str) -> Result<ApiKeyRecord> {
        let now = self.clock.now();
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, false).await?;
        tx.execute(
            "UPDATE api_keys SET revoked_at = $2 WHERE key_prefix = $1 AND revoked_at IS NULL",
            &[&prefix, &now.as_micros()],
        )
        .await
        .db()?;
        let record = key_by_prefix(&tx, prefix)
            .await?
            .ok_or_else(|| StoreError::KeyNotFound {
                prefix: prefix.to_string(),
            })?;
        tx.commit().await.db()?;
        Ok(record)
    }

    async fn team_keys(&self, team: &str) -> Result<Vec<ApiKeyRecord>> {
        let team = validate_team_name(team)?;
        let mut client = self.client().await?;
        let tx = begin(&mut client, None, true).await?;
        if !team_exists(&tx, team).await? {
            return Err(StoreError::TeamNotFound {
                name: team.to_string(),
            });
        }
        let rows = tx
            .query(
                &format!(
                    "SELECT {KEY_COLUMNS} WHERE t.name = $1 ORDER BY k.created_at DESC, k.key_prefix"
                ),
                &[&team],
            )
            .await
            .db()?;
        keys_from_rows(&tx, &rows).await
    }
}
