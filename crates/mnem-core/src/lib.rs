//! The pure core of mnem: domain types, the recall contract, score normalisation and the
//! one ordering function every backend's results pass through.
//!
//! Architecture invariant: this crate does no I/O. It never reads a clock, a file, the
//! network or a random source; callers hand it stamps and ids. That is what lets every
//! backend rank identically: they produce candidates, this crate decides their order.

#[macro_use]
mod word_enum;

pub mod anchors;
pub mod auth;
pub mod clock;
pub mod dedup;
pub mod embedding;
pub mod error;
pub mod evidence;
pub mod feedback;
pub mod follow;
pub mod graph;
pub mod hop;
pub mod ids;
pub mod import;
pub mod lexical;
pub mod mention;
pub mod order;
pub mod pack;
pub mod pipeline;
pub mod recall;
pub mod score;
pub mod screen;
pub mod signals;
pub mod stamp;
pub mod temporal;
pub mod text;
pub mod window;

pub use auth::{Access, ApiKeyRecord, KeyRefusal, KeyToken, Principal, Rights};
pub use clock::{Clock, ManualClock};
pub use embedding::EmbeddingContract;
pub use error::{refuse_nul, ValidationError};
pub use evidence::{
    Authority, Evidence, LifecycleEvent, LifecycleState, NewEvidence, Ref, Scope, SourceType, Space,
};
pub use ids::{
    Actor, CommunityId, EntityId, EvidenceId, FeedbackId, HypothesisId, ProfileId, RelationshipId,
    TeamId,
};
pub use order::{compare_hits, sort_hits};
pub use pipeline::{
    parse_profile, profile_named, rank, rank_all, Branch, BranchCandidates, Fusion, RankingProfile,
    RecallHit, RecallPlan, ScoreComponents, CONVEX_1_PROFILE, CONVEX_3_PROFILE, CONVEX_4_PROFILE,
    CONVEX_5_PROFILE, CONVEX_6_PROFILE, CONVEX_7_PROFILE, DEFAULT_PROFILE, LEXICAL_PROFILE,
    NUMERIC_KEYS, RRF_PROFILE, VECTOR_PROFILE,
};
pub use recall::{
    Candidate, Order, PublicCommunity, PublicRecall, PublicResult, PublicWindowItem, RecallQuery,
    ScopeFilter, SMALL_PERIOD,
};
pub use score::Score;
pub use stamp::Timestamp;
pub use window::{Neighbours, WindowItem, WindowStep, MAX_WINDOW};
