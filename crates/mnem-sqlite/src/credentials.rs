//! Teams and API keys ([`CredentialStore`]): plain rows, looked up by the key's public
//! prefix; the secret's hash is checked by the service, never here.

use mnem_core::{Actor, ApiKeyRecord, ProfileId, TeamId, Timestamp};
use mnem_store::{
    new_uuid_v7, validate_profile_name, validate_team_name, CredentialStore, NewApiKey, Result,
    StoreError,
};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::rows::{parsed, UuidBytes};
use crate::{ensure_profile, DbResult, SqliteStore};

const KEY_COLUMNS: &str = "k.key_prefix, k.team_id, k.profile_id, t.name, p.name, k.access, \
     k.secret_hash, k.created_at, k.expires_at, k.revoked_at \
     FROM api_keys k JOIN teams t ON t.team_id = k.team_id \
     JOIN profiles p ON p.team_id = k.team_id AND p.profile_id = k.profile_id";

fn key_from_row(row: &Row<'_>) -> rusqlite::Result<ApiKeyRecord> {
    let micros = |index: usize| -> rusqlite::Result<Option<Timestamp>> {
        Ok(row
            .get::<_, Option<i64>>(index)?
            .map(Timestamp::from_micros))
    };
    Ok(ApiKeyRecord {
        prefix: row.get(0)?,
        actor: Actor {
            team: TeamId::from_bytes(row.get::<_, UuidBytes>(1)?.0),
            profile: ProfileId::from_bytes(row.get::<_, UuidBytes>(2)?.0),
        },
        team_name: row.get(3)?,
        profile_name: row.get(4)?,
        access: parsed(row, 5)?,
        secret_hash: row.get(6)?,
        created_at: Timestamp::from_micros(row.get(7)?),
        expires_at: micros(8)?,
        revoked_at: micros(9)?,
    })
}

/// Read on every authenticated request (expiry and revocation are never cached), so the
/// statement stays prepared on the connection instead of being parsed each time (2% of
/// `mnem serve`'s CPU answering lexical recalls over 45k turns).
fn key_by_prefix(conn: &Connection, prefix: &str) -> Result<Option<ApiKeyRecord>> {
    conn.prepare_cached(&format!("SELECT {KEY_COLUMNS} WHERE k.key_prefix = ?1"))
        .db()?
        .query_row(params![prefix], key_from_row)
        .optional()
        .db()
}

fn team_exists(conn: &Connection, name: &str) -> Result<bool> {
    conn.query_row("SELECT 1 FROM teams WHERE name = ?1", params![name], |_| {
        Ok(())
    })
    .optional()
    .db()
    .map(|found| found.is_some())
}

impl CredentialStore for SqliteStore {
    async fn create_team(&self, name: &str) -> Result<TeamId> {
        let name = validate_team_name(name)?.to_string();
        let now = self.clock.now();
        self.with_tx(move |tx| {
            if team_exists(tx, &name)? {
                return Err(StoreError::Conflict(format!(
                    "team `{name}` already exists"
                )));
            }
            let id = TeamId(new_uuid_v7(now));
            tx.execute(
                "INSERT INTO teams (team_id, name, created_at) VALUES (?1, ?2, ?3)",
                params![id.as_bytes(), name, now.as_micros()],
            )
            .db()?;
            Ok(id)
        })
        .await
    }

    async fn insert_key(&self, key: NewApiKey) -> Result<ApiKeyRecord> {
        validate_team_name(&key.team)?;
        validate_profile_name(&key.profile)?;
        let now = self.clock.now();
        self.with_tx(move |tx| {
            if !team_exists(tx, &key.team)? {
                return Err(StoreError::TeamNotFound { name: key.team });
            }
            let actor = ensure_profile(tx, &key.team, &key.profile, now)?;
            tx.execute(
                "INSERT INTO api_keys (key_prefix, team_id, profile_id, access, secret_hash, \
                 created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    key.prefix,
                    actor.team.as_bytes(),
                    actor.profile.as_bytes(),
                    key.access.as_str(),
                    key.secret_hash,
                    now.as_micros(),
                    key.expires_at.map(Timestamp::as_micros),
                ],
            )
            .db()?;
            key_by_prefix(tx, &key.prefix)?
                .ok_or_else(|| StoreError::Backend("inserted API key not readable".into()))
        })
        .await
    }

    async fn api_key(&self, prefix: &str) -> Result<Option<ApiKeyRecord>> {
        let prefix = prefix.to_string();
        self.with_reader(move |conn| key_by_prefix(conn, &prefix))
            .await
    }

    async fn revoke_key(&self, prefix: &str) -> Result<ApiKeyRecord> {
        let prefix = prefix.to_string();
        let now = self.clock.now();
        self.with_tx(move |tx| {
            tx.execute(
                "UPDATE api_keys SET revoked_at = ?2 WHERE key_prefix = ?1 AND revoked_at IS NULL",
                params![prefix, now.as_micros()],
            )
            .db()?;
            key_by_prefix(tx, &prefix)?.ok_or(StoreError::KeyNotFound { prefix })
        })
        .await
    }

    async fn team_keys(&self, team: &str) -> Result<Vec<ApiKeyRecord>> {
        let team = validate_team_name(team)?.to_string();
        self.with_reader(move |conn| {
            if !team_exists(conn, &team)? {
                return Err(StoreError::TeamNotFound { name: team });
            }
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {KEY_COLUMNS} WHERE t.name = ?1 ORDER BY k.created_at DESC, k.key_prefix"
                ))
                .db()?;
            let keys = stmt
                .query_map(params![team], key_from_row)
                .db()?
                .collect::<rusqlite::Result<Vec<_>>>()
                .db()?;
            Ok(keys)
        })
        .await
    }
}
