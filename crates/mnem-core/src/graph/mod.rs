//! The semantic layer (CONTRACT §1–§5): entities and relationship claims that are
//! proven by evidence spans, verified, moved through an explicit lifecycle, traced, and
//! shown in recall only as compact discovery paths. Pure like the rest of the core: the
//! backends read facts and persist, these modules decide.

pub mod assess;
pub mod community;
pub mod discovery;
pub mod dream;
pub mod model;
pub mod request;
pub mod trace;
pub mod verify;

pub use assess::{
    initial_standing, recomputed_standing, single_valued_conflicts, ConflictAction, Rival,
    Standing, SupportStanding,
};
pub use community::{
    detect_communities, fill_unused_slots, fingerprint, Community, DetectedCommunity,
    DetectionError, NamedEntity, PredicateCount, COMMUNITY_ALGORITHM,
};
pub use discovery::{
    bounded_seeds, name_candidates, second_hop_entities, select_paths, Adjacency, DiscoveryLimits,
    DiscoveryPath, Frontier, GraphEdge, PathEdge, PathRequest, Seed, DEFAULT_PATH_LIMIT,
    MAX_PATH_LIMIT,
};
pub use dream::{
    bounded_model_statement, dream, dreamable, Hypothesis, HypothesisStatus, ModelReading,
    ProposedHypothesis, SourceRef, DREAM_RULES, MAX_MODEL_STATEMENT_CHARS,
};
pub use model::{
    normalise_name, semantic_group_key, Entity, EntityKind, EntitySummary, ObjectSummary, Polarity,
    Relationship, RelationshipStatus, Support, Tier, Transition, TypedValue, Verdict,
    VerificationEvent,
};
pub use request::{
    Citation, CitedEvidence, Correction, EntityInput, EntityRef, EvidenceInput, ObjectInput,
    PredicateInput, Proposal, ProposedObject, RelationshipInput, RememberRequest, SupportInput,
    ValidRemember,
};
pub use trace::{
    recent_oldest_first, traced_supports, CitedSpan, EvidenceOutcome, RelationshipOutcome,
    RelationshipRef, RememberOutcome, Trace, TracedSupport, TRACE_MAX_EVENTS,
    TRACE_MAX_QUOTE_BYTES,
};
pub use verify::{
    char_span, combined_verdict, verify, CitedText, Claim, Finding, DEFAULT_MODEL_CONFIDENCE,
    DETERMINISTIC_VERIFIER,
};
