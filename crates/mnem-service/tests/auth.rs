//! API keys: a token authenticates to exactly the team, profile and access it was issued
//! for; wrong secrets, revoked and expired keys are refused at once; only a hash is stored.

mod common;

use std::sync::Arc;

use common::clock;
use mnem_core::{Access, KeyRefusal, KeyToken, Timestamp};
use mnem_service::{AuthError, Authenticator};
use mnem_sqlite::SqliteStore;
use mnem_store::{CredentialStore, EvidenceStore, GraphStore, StoreError};

async fn authenticator() -> (Authenticator<SqliteStore>, Arc<SqliteStore>) {
    let (auth, store, _clock) = authenticator_with_clock().await;
    (auth, store)
}

/// An authenticator over a store with team `acme`, and the store's clock.
async fn authenticator_with_clock() -> (
    Authenticator<SqliteStore>,
    Arc<SqliteStore>,
    Arc<mnem_core::ManualClock>,
) {
    let clock = clock();
    let store = Arc::new(SqliteStore::open_in_memory(clock.clone()).unwrap());
    store.create_team("acme").await.unwrap();
    (Authenticator::new(Arc::clone(&store)), store, clock)
}

#[tokio::test]
async fn an_issued_key_authenticates_as_its_team_profile_and_access() {
    let (auth, store) = authenticator().await;
    let issued = auth
        .issue("acme", "alice", Access::Read, None)
        .await
        .unwrap();
    let principal = auth.authenticate(&issued.token).await.unwrap();
    let alice = store.open_profile("acme", "alice").await.unwrap();
    assert_eq!(principal.actor, alice);
    assert_eq!(principal.access, Access::Read);
    assert_eq!(
        principal.key_prefix.as_deref(),
        Some(&*issued.record.prefix)
    );
    // The second presentation takes the remembered-digest path and agrees.
    assert_eq!(auth.authenticate(&issued.token).await.unwrap(), principal);
}

#[tokio::test]
async fn only_an_argon2id_hash_of_the_secret_is_stored() {
    let (auth, store) = authenticator().await;
    let issued = auth
        .issue("acme", "bob", Access::Write, None)
        .await
        .unwrap();
    let secret = KeyToken::parse(&issued.token).unwrap().secret;
    let stored = store.api_key(&issued.record.prefix).await.unwrap().unwrap();
    assert!(stored.secret_hash.starts_with("$argon2id$"));
    assert!(!stored.secret_hash.contains(&secret));
}

#[tokio::test]
async fn a_wrong_secret_is_invalid_even_after_the_right_one_was_seen() {
    let (auth, _store) = authenticator().await;
    let issued = auth
        .issue("acme", "alice", Access::Write, None)
        .await
        .unwrap();
    auth.authenticate(&issued.token).await.unwrap();
    let mut forged = issued.token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'a' { 'b' } else { 'a' });
    assert!(matches!(
        auth.authenticate(&forged).await,
        Err(AuthError::Invalid)
    ));
    assert!(matches!(
        auth.authenticate("mnem_nothinghere_x").await,
        Err(AuthError::Invalid)
    ));
}

#[tokio::test]
async fn a_revoked_key_is_refused_at_once_even_when_remembered() {
    let (auth, _store) = authenticator().await;
    let issued = auth
        .issue("acme", "alice", Access::Write, None)
        .await
        .unwrap();
    auth.authenticate(&issued.token).await.unwrap();
    let revoked = auth.revoke("acme", &issued.record.prefix).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(matches!(
        auth.authenticate(&issued.token).await,
        Err(AuthError::Refused(KeyRefusal::Revoked))
    ));
}

#[tokio::test]
async fn a_key_another_authenticator_remembers_is_still_refused_once_revoked() {
    // Two servers on one database: revoking through one refuses on the other.
    let (first, store) = authenticator().await;
    let second = Authenticator::new(Arc::clone(&store));
    let issued = first
        .issue("acme", "alice", Access::Read, None)
        .await
        .unwrap();
    second.authenticate(&issued.token).await.unwrap();
    first.revoke("acme", &issued.record.prefix).await.unwrap();
    assert!(matches!(
        second.authenticate(&issued.token).await,
        Err(AuthError::Refused(KeyRefusal::Revoked))
    ));
}

#[tokio::test]
async fn an_expired_key_is_refused() {
    let (auth, store, clock) = authenticator_with_clock().await;
    let expires = store.clock().now().plus_seconds(60);
    let issued = auth
        .issue("acme", "alice", Access::Read, Some(expires))
        .await
        .unwrap();
    auth.authenticate(&issued.token).await.unwrap();
    clock.advance_seconds(61);
    assert!(matches!(
        auth.authenticate(&issued.token).await,
        Err(AuthError::Refused(KeyRefusal::Expired))
    ));
}

#[tokio::test]
async fn keys_need_an_existing_team_and_teams_are_created_once() {
    let (auth, store) = authenticator().await;
    assert!(matches!(
        auth.issue("nope", "alice", Access::Read, None).await,
        Err(AuthError::Store(StoreError::TeamNotFound { .. }))
    ));
    assert!(matches!(
        store.create_team("acme").await,
        Err(StoreError::Conflict(_))
    ));
    let first = auth.issue("acme", "a", Access::Read, None).await.unwrap();
    let second = auth.issue("acme", "b", Access::Write, None).await.unwrap();
    let listed: Vec<String> = store
        .team_keys("acme")
        .await
        .unwrap()
        .into_iter()
        .map(|key| key.prefix)
        .collect();
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&first.record.prefix));
    assert!(listed.contains(&second.record.prefix));
    assert_ne!(first.token, second.token);
}

#[tokio::test]
async fn a_key_is_revoked_only_inside_its_own_team() {
    let (auth, store) = authenticator().await;
    store.create_team("beta").await.unwrap();
    let issued = auth
        .issue("acme", "alice", Access::Write, None)
        .await
        .unwrap();
    let across = auth.revoke("beta", &issued.record.prefix).await;
    assert!(
        matches!(
            across,
            Err(AuthError::Store(StoreError::KeyNotFound { .. }))
        ),
        "{across:?}"
    );
    auth.authenticate(&issued.token).await.expect("still works");
    let unknown = auth.revoke("acme", "nosuchprefix").await;
    assert!(matches!(
        unknown,
        Err(AuthError::Store(StoreError::KeyNotFound { .. }))
    ));
    auth.revoke("acme", &issued.record.prefix).await.unwrap();
}

#[tokio::test]
async fn a_key_cannot_be_issued_already_expired_or_past_the_stamp_range() {
    let (auth, store) = authenticator().await;
    let past = store.clock().now().plus_seconds(-60);
    let refused = auth.issue("acme", "alice", Access::Read, Some(past)).await;
    assert!(
        matches!(&refused, Err(AuthError::Store(StoreError::Invalid(e))) if e.field == "expires_at"),
        "{refused:?}"
    );
    let too_far = Timestamp::MAX.plus_micros(1);
    let refused = auth
        .issue("acme", "alice", Access::Read, Some(too_far))
        .await;
    assert!(
        matches!(&refused, Err(AuthError::Store(StoreError::Invalid(e))) if e.field == "expires_at"),
        "{refused:?}"
    );
    let future = store.clock().now().plus_seconds(3_600);
    auth.issue("acme", "alice", Access::Read, Some(future))
        .await
        .expect("a future expiry is fine");
}

/// The console's key lives only in its process: it authenticates there, and another
/// authenticator over the same store (a later `mnem serve`, or the same server after a
/// `kill -9`) refuses it, because nothing of it was ever stored.
#[tokio::test]
async fn a_session_key_works_only_in_the_process_that_made_it() {
    let (_, store) = authenticator().await;
    let alice = store.open_profile("acme", "alice").await.unwrap();
    let console = mnem_service::SessionKey::issue(alice, Access::Read).unwrap();
    let serving = Authenticator::new(Arc::clone(&store)).with_session_key(console.clone());
    let principal = serving.authenticate(console.token()).await.unwrap();
    assert_eq!(principal.actor, alice);
    assert_eq!(principal.access, Access::Read);
    assert!(store.team_keys("acme").await.unwrap().is_empty());
    let later = Authenticator::new(Arc::clone(&store));
    assert!(matches!(
        later.authenticate(console.token()).await,
        Err(AuthError::Invalid)
    ));
    let prefix = KeyToken::parse(console.token()).unwrap().prefix;
    let wrong = format!(
        "mnem_{prefix}_{}",
        "x".repeat(mnem_core::auth::KEY_SECRET_LEN)
    );
    assert!(matches!(
        serving.authenticate(&wrong).await,
        Err(AuthError::Invalid)
    ));
}
