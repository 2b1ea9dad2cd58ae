//! API keys: issuing (random token, Argon2id hash of its secret) and authenticating a
//! presented token to a [`Principal`].
//!
//! Argon2id is deliberately slow (about 28 ms here at the default parameters: `mnem key
//! create` takes 33 ms against 5 ms for `mnem key list`), far too slow to pay on
//! every request. After one successful verification the process remembers a SHA-256 of
//! that secret for that prefix, in memory only; later requests compare digests. The key
//! row is still read on every request, so revocation and expiry apply at once, on every
//! server sharing the database.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use mnem_core::{
    Access, ApiKeyRecord, KeyRefusal, KeyToken, Principal, Timestamp, ValidationError,
};
use mnem_store::{CredentialStore, EvidenceStore, NewApiKey, StoreError};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Verified secrets remembered per process; past this many the memory starts over (a
/// rebuild costs one Argon2 verification per active key).
const VERIFIED_CACHE_LIMIT: usize = 10_000;

#[derive(Debug, Error)]
pub enum AuthError {
    #[error("missing API key: send `Authorization: Bearer <key>`")]
    Missing,
    /// Malformed, unknown and wrong secrets look the same to the caller.
    #[error("invalid API key")]
    Invalid,
    #[error(transparent)]
    Refused(#[from] KeyRefusal),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("key hashing failed: {0}")]
    Hashing(String),
    /// Too many keys checked the slow way for this key prefix or client address: the
    /// check did not run.
    #[error("too many unverified key attempts; retry in {} s", retry_after.as_secs().max(1))]
    Throttled { retry_after: Duration },
}

/// A new key: the token is shown to the user once and never stored.
#[derive(Debug, Clone)]
pub struct IssuedKey {
    pub token: String,
    pub record: ApiKeyRecord,
}

type SecretDigest = [u8; 32];

/// Issues and checks API keys against a [`CredentialStore`].
pub struct Authenticator<S> {
    store: Arc<S>,
    verified: Mutex<HashMap<String, SecretDigest>>,
    session: Option<SessionKey>,
}

/// A key that exists only in one process's memory — the console's (`mnem ui`). It is never
/// written to the store, so it dies with the process however the process ends (Ctrl-C, a
/// closed terminal, `kill -9`), and no other server sharing the store ever accepts it.
#[derive(Clone)]
pub struct SessionKey {
    token: String,
    digest: SecretDigest,
    /// Carries the key's prefix, as a stored key's principal does.
    principal: Principal,
}

impl std::fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is never printed.
        f.debug_struct("SessionKey")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl SessionKey {
    /// A fresh random key acting as `actor` with `access`, in the usual token format.
    pub fn issue(actor: mnem_core::Actor, access: Access) -> Result<Self, AuthError> {
        let token = random_token()?;
        Ok(Self {
            token: token.reveal(),
            digest: digest(&token.secret),
            principal: Principal {
                actor,
                access,
                key_prefix: Some(token.prefix),
            },
        })
    }

    fn prefix(&self) -> Option<&str> {
        self.principal.key_prefix.as_deref()
    }

    /// The token to hand to the one client it is for (shown once).
    pub fn token(&self) -> &str {
        &self.token
    }
}

fn digest(secret: &str) -> SecretDigest {
    Sha256::digest(secret.as_bytes()).into()
}

/// A fresh token (prefix and secret) from the system's randomness.
fn random_token() -> Result<KeyToken, AuthError> {
    KeyToken::from_random(&random_bytes(
        mnem_core::auth::KEY_PREFIX_LEN + mnem_core::auth::KEY_SECRET_LEN,
    )?)
    .map_err(|e| AuthError::Hashing(e.to_string()))
}

fn random_bytes(len: usize) -> Result<Vec<u8>, AuthError> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Hashing(format!("no randomness: {e}")))?;
    Ok(bytes)
}

impl<S: CredentialStore + EvidenceStore + 'static> Authenticator<S> {
    pub fn new(store: Arc<S>) -> Self {
        Self {
            store,
            verified: Mutex::new(HashMap::new()),
            session: None,
        }
    }

    /// Also accepts `key`, from memory only (see [`SessionKey`]).
    pub fn with_session_key(mut self, key: SessionKey) -> Self {
        self.session = Some(key);
        self
    }

    /// Creates a key for `profile` in the existing team `team`.
    pub async fn issue(
        &self,
        team: &str,
        profile: &str,
        access: Access,
        expires_at: Option<Timestamp>,
    ) -> Result<IssuedKey, AuthError> {
        if let Some(expires_at) = expires_at {
            expires_at
                .in_range("expires_at")
                .map_err(StoreError::from)?;
            if expires_at <= self.store.clock().now() {
                return Err(StoreError::from(ValidationError::new(
                    "expires_at",
                    format!("{expires_at} is not in the future: the key would never work"),
                ))
                .into());
            }
        }
        let token = random_token()?;
        let salt = SaltString::encode_b64(&random_bytes(16)?)
            .map_err(|e| AuthError::Hashing(e.to_string()))?;
        let secret = token.secret.clone();
        let secret_hash = tokio::task::spawn_blocking(move || {
            Argon2::default()
                .hash_password(secret.as_bytes(), &salt)
                .map(|hash| hash.to_string())
                .map_err(|e| AuthError::Hashing(e.to_string()))
        })
        .await
        .map_err(|e| AuthError::Hashing(e.to_string()))??;
        let record = self
            .store
            .insert_key(NewApiKey {
                prefix: token.prefix.clone(),
                team: team.to_string(),
                profile: profile.to_string(),
                access,
                secret_hash,
                expires_at,
            })
            .await?;
        Ok(IssuedKey {
            token: token.reveal(),
            record,
        })
    }

    /// The principal a presented token acts as. Every failure but a store failure is
    /// `Invalid` or `Refused`: the caller learns nothing about which keys exist.
    pub async fn authenticate(&self, presented: &str) -> Result<Principal, AuthError> {
        self.authenticate_gated(presented, |_| Ok(())).await
    }

    /// [`Self::authenticate`], asking `gate` (with the key prefix) before any attempt that
    /// is not a secret already verified by this process: such an attempt costs a store
    /// lookup and an Argon2 check, so unknown prefixes and wrong secrets are what a gate
    /// bounds. `Err(wait)` from the gate refuses with `Throttled` and runs neither.
    pub async fn authenticate_gated(
        &self,
        presented: &str,
        gate: impl FnOnce(&str) -> Result<(), Duration>,
    ) -> Result<Principal, AuthError> {
        let token = KeyToken::parse(presented).map_err(|_| AuthError::Invalid)?;
        let presented_digest = digest(&token.secret);
        if let Some(session) = self
            .session
            .as_ref()
            .filter(|s| s.prefix() == Some(token.prefix.as_str()))
        {
            if session.digest == presented_digest {
                return Ok(session.principal.clone());
            }
            gate(&token.prefix).map_err(|retry_after| AuthError::Throttled { retry_after })?;
            return Err(AuthError::Invalid);
        }
        let known = self.remembered(&token.prefix) == Some(presented_digest);
        if !known {
            gate(&token.prefix).map_err(|retry_after| AuthError::Throttled { retry_after })?;
        }
        let record = self
            .store
            .api_key(&token.prefix)
            .await?
            .ok_or(AuthError::Invalid)?;
        // Expiry and revocation are read from the store on every request, known or not.
        record.usable_at(self.store.clock().now())?;
        if !known {
            self.verify_slowly(&record, token.secret).await?;
            self.remember_verified(&record.prefix, presented_digest);
        }
        Ok(record.principal())
    }

    /// Revokes a key of `team`: refused from the next request on, on every server. A key
    /// of another team is `KeyNotFound`, exactly as an unknown prefix, so one team's
    /// operator can neither revoke nor probe another's.
    pub async fn revoke(&self, team: &str, prefix: &str) -> Result<ApiKeyRecord, AuthError> {
        // The key as printed (`mnem_<prefix>…`) names it as well as its bare prefix.
        let prefix = mnem_core::KeyToken::prefix_of(prefix);
        let owned = self.store.api_key(prefix).await?;
        if owned.is_none_or(|record| record.team_name != team) {
            return Err(StoreError::KeyNotFound {
                prefix: prefix.to_string(),
            }
            .into());
        }
        let record = self.store.revoke_key(prefix).await?;
        self.lock().remove(prefix);
        Ok(record)
    }

    async fn verify_slowly(&self, record: &ApiKeyRecord, secret: String) -> Result<(), AuthError> {
        let stored = record.secret_hash.clone();
        tokio::task::spawn_blocking(move || {
            let hash = PasswordHash::new(&stored)
                .map_err(|e| AuthError::Hashing(format!("stored key hash unreadable: {e}")))?;
            Argon2::default()
                .verify_password(secret.as_bytes(), &hash)
                .map_err(|_| AuthError::Invalid)
        })
        .await
        .map_err(|e| AuthError::Hashing(e.to_string()))?
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, SecretDigest>> {
        // The map holds only digests; a panic elsewhere cannot leave it half-written.
        self.verified
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    fn remembered(&self, prefix: &str) -> Option<SecretDigest> {
        self.lock().get(prefix).copied()
    }

    fn remember_verified(&self, prefix: &str, digest: SecretDigest) {
        let mut verified = self.lock();
        if verified.len() >= VERIFIED_CACHE_LIMIT {
            verified.clear();
        }
        verified.insert(prefix.to_string(), digest);
    }
}
