//! Credentials as data: the API-key token format, what a key grants, and when a stored key
//! still counts. Hashing and randomness are I/O and live in the service; the rules live here.
//!
//! A token is `mnem_<prefix>_<secret>`. The prefix is public: it names the stored key row
//! (one indexed lookup, shown in listings and logs). Only the secret is hashed, so a
//! database dump reveals which keys exist, never a usable one.

use crate::{Actor, Timestamp, ValidationError};

/// Lowercase letters and digits: tokens survive shells, URLs and headers unquoted.
const TOKEN_ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
pub const KEY_PREFIX_LEN: usize = 12;
/// 40 symbols of 36 ≈ 206 bits of entropy.
pub const KEY_SECRET_LEN: usize = 40;
const TOKEN_TAG: &str = "mnem_";

word_enum!(
    /// What a credential may do. `write` includes `read`; `admin` includes `write` and
    /// may also retract or quarantine evidence another profile wrote.
    Access, "scope", { Read => "read", Write => "write", Admin => "admin" }
);

/// Who a request acts as, fixed by authentication before any handler runs. No request
/// argument can name or change it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub actor: Actor,
    pub access: Access,
    /// The key's public prefix; `None` for the local, keyless principal.
    pub key_prefix: Option<String>,
}

impl Principal {
    /// The embedded, single-user principal: full access, no key.
    pub fn local(actor: Actor) -> Self {
        Self {
            actor,
            access: Access::Write,
            key_prefix: None,
        }
    }

    pub fn can_write(&self) -> bool {
        matches!(self.access, Access::Write | Access::Admin)
    }

    /// Whose evidence this principal's lifecycle changes may touch.
    pub fn rights(&self) -> Rights {
        if self.access == Access::Admin {
            Rights::Admin
        } else {
            Rights::Author
        }
    }
}

/// Whose evidence a retract or quarantine may touch. One author never deletes or hides
/// another's knowledge (CONTRACT §3): only the evidence's own profile may, or a profile
/// acting with the explicit `admin` scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rights {
    Author,
    Admin,
}

/// A key's token split into its lookup prefix and its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyToken {
    pub prefix: String,
    pub secret: String,
}

impl KeyToken {
    /// Builds a token from random bytes (at least prefix + secret length of them): each
    /// byte picks one symbol. The modulo bias over 36 symbols is under 1.2% per symbol,
    /// far inside the 206-bit margin.
    pub fn from_random(bytes: &[u8]) -> Result<Self, ValidationError> {
        if bytes.len() < KEY_PREFIX_LEN + KEY_SECRET_LEN {
            return Err(ValidationError::new(
                "random",
                format!(
                    "{} bytes needed, {} given",
                    KEY_PREFIX_LEN + KEY_SECRET_LEN,
                    bytes.len()
                ),
            ));
        }
        let symbol = |b: &u8| TOKEN_ALPHABET[*b as usize % TOKEN_ALPHABET.len()] as char;
        Ok(Self {
            prefix: bytes[..KEY_PREFIX_LEN].iter().map(symbol).collect(),
            secret: bytes[KEY_PREFIX_LEN..KEY_PREFIX_LEN + KEY_SECRET_LEN]
                .iter()
                .map(symbol)
                .collect(),
        })
    }

    /// Parses a presented token. The error never echoes the token: it is a secret.
    pub fn parse(token: &str) -> Result<Self, ValidationError> {
        let malformed = || ValidationError::new("api_key", "not an mnem API key");
        let rest = token.trim().strip_prefix(TOKEN_TAG).ok_or_else(malformed)?;
        let (prefix, secret) = rest.split_once('_').ok_or_else(malformed)?;
        let well_formed = |part: &str, len: usize| {
            part.len() == len && part.bytes().all(|b| TOKEN_ALPHABET.contains(&b))
        };
        if !well_formed(prefix, KEY_PREFIX_LEN) || !well_formed(secret, KEY_SECRET_LEN) {
            return Err(malformed());
        }
        Ok(Self {
            prefix: prefix.to_string(),
            secret: secret.to_string(),
        })
    }

    /// The prefix a person means by `text`: the prefix itself, or the key as printed
    /// (`mnem_<prefix>` or the whole `mnem_<prefix>_<secret>`), whichever was pasted.
    pub fn prefix_of(text: &str) -> &str {
        let text = text.trim();
        let rest = text.strip_prefix(TOKEN_TAG).unwrap_or(text);
        rest.split_once('_').map_or(rest, |(prefix, _)| prefix)
    }

    /// The token as handed to the user, once.
    pub fn reveal(&self) -> String {
        format!("{TOKEN_TAG}{}_{}", self.prefix, self.secret)
    }
}

/// A stored API key: what it grants and its lifecycle; `secret_hash` is a PHC string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub prefix: String,
    pub actor: Actor,
    pub team_name: String,
    pub profile_name: String,
    pub access: Access,
    pub secret_hash: String,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

/// Why a well-formed, correctly hashed key is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeyRefusal {
    #[error("the API key was revoked")]
    Revoked,
    #[error("the API key has expired")]
    Expired,
}

impl ApiKeyRecord {
    /// Whether the key may be used at `now`: never once revoked, never from its expiry on.
    pub fn usable_at(&self, now: Timestamp) -> Result<(), KeyRefusal> {
        if self.revoked_at.is_some_and(|at| at <= now) {
            return Err(KeyRefusal::Revoked);
        }
        if self.expires_at.is_some_and(|at| at <= now) {
            return Err(KeyRefusal::Expired);
        }
        Ok(())
    }

    pub fn principal(&self) -> Principal {
        Principal {
            actor: self.actor,
            access: self.access,
            key_prefix: Some(self.prefix.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_prefix_is_read_from_any_form_a_key_is_shown_in() {
        assert_eq!(KeyToken::prefix_of("abcdefghijkl"), "abcdefghijkl");
        assert_eq!(KeyToken::prefix_of("mnem_abcdefghijkl"), "abcdefghijkl");
        assert_eq!(
            KeyToken::prefix_of(" mnem_abcdefghijkl_secretsecret "),
            "abcdefghijkl"
        );
    }

    use super::*;
    use crate::{ProfileId, TeamId};
    use uuid::Uuid;

    fn token() -> KeyToken {
        let bytes: Vec<u8> = (0..=255u8).cycle().skip(7).take(64).collect();
        KeyToken::from_random(&bytes).unwrap()
    }

    fn record(expires_at: Option<i64>, revoked_at: Option<i64>) -> ApiKeyRecord {
        ApiKeyRecord {
            prefix: "abc".into(),
            actor: Actor {
                team: TeamId(Uuid::nil()),
                profile: ProfileId(Uuid::nil()),
            },
            team_name: "t".into(),
            profile_name: "p".into(),
            access: Access::Read,
            secret_hash: "$argon2id$…".into(),
            created_at: Timestamp::from_micros(0),
            expires_at: expires_at.map(Timestamp::from_micros),
            revoked_at: revoked_at.map(Timestamp::from_micros),
        }
    }

    #[test]
    fn a_revealed_token_parses_back_to_its_parts() {
        let token = token();
        assert_eq!(token.prefix.len(), KEY_PREFIX_LEN);
        assert_eq!(token.secret.len(), KEY_SECRET_LEN);
        assert_eq!(KeyToken::parse(&token.reveal()).unwrap(), token);
    }

    #[test]
    fn malformed_tokens_are_refused_without_echoing_them() {
        let good = token().reveal();
        for bad in [
            String::new(),
            "Bearer x".to_string(),
            good.replace("mnem_", "mnam_"),
            good[..good.len() - 1].to_string(),
            format!("{good}a"),
            good.to_uppercase(),
        ] {
            let err = KeyToken::parse(&bad).unwrap_err();
            assert_eq!(err.field, "api_key");
            assert!(bad.len() < 10 || !err.to_string().contains(&bad[5..]));
        }
    }

    #[test]
    fn too_little_randomness_is_refused() {
        assert!(KeyToken::from_random(&[0u8; 51]).is_err());
    }

    #[test]
    fn revocation_and_expiry_take_effect_at_their_instant() {
        let now = Timestamp::from_micros(100);
        assert_eq!(record(None, None).usable_at(now), Ok(()));
        assert_eq!(record(Some(101), None).usable_at(now), Ok(()));
        assert_eq!(
            record(Some(100), None).usable_at(now),
            Err(KeyRefusal::Expired)
        );
        assert_eq!(
            record(None, Some(100)).usable_at(now),
            Err(KeyRefusal::Revoked)
        );
        assert_eq!(
            record(Some(50), Some(60)).usable_at(now),
            Err(KeyRefusal::Revoked)
        );
    }

    #[test]
    fn only_write_access_writes() {
        let mut principal = record(None, None).principal();
        assert!(!principal.can_write());
        principal.access = Access::Write;
        assert!(principal.can_write());
        assert_eq!(principal.key_prefix.as_deref(), Some("abc"));
    }
}
