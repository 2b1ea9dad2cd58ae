//! Typed ids, so a team id can never be passed where an evidence id is expected.
//! Ids are UUIDv7 (time-ordered); generating them needs a clock and randomness, so that
//! happens in the store, not here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ValidationError;

macro_rules! uuid_id {
    ($name:ident, $field:literal) => {
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        pub struct $name(pub Uuid);

        impl $name {
            pub fn as_uuid(&self) -> &Uuid {
                &self.0
            }

            pub fn as_bytes(&self) -> &[u8; 16] {
                self.0.as_bytes()
            }

            pub fn from_bytes(bytes: [u8; 16]) -> Self {
                Self(Uuid::from_bytes(bytes))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s.trim())
                    .map(Self)
                    .map_err(|_| ValidationError::new($field, format!("`{s}` is not a UUID")))
            }
        }
    };
}

uuid_id!(EvidenceId, "evidence_id");
uuid_id!(TeamId, "team_id");
uuid_id!(ProfileId, "profile_id");
uuid_id!(EntityId, "entity_id");
uuid_id!(RelationshipId, "relationship_id");
uuid_id!(FeedbackId, "feedback_id");
uuid_id!(HypothesisId, "hypothesis_id");
uuid_id!(CommunityId, "community_id");

/// Who is asking: a profile inside a team. Every store operation takes one, so no query
/// can be issued without the tenant boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Actor {
    pub team: TeamId,
    pub profile: ProfileId,
}
