//! The command line, declared with clap. Values are parsed into core types here, so a
//! malformed flag fails before anything is opened or written.

use std::num::NonZeroU32;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use mnem_core::graph::HypothesisStatus;
use mnem_core::{
    Access, Authority, EntityId, EvidenceId, HypothesisId, Order, RankingProfile, Ref,
    RelationshipId, Scope, SourceType, Timestamp,
};

#[derive(Debug, Parser)]
#[command(
    name = "mnem",
    version,
    about = "Long-term memory for AI agents: remember evidence, recall it ranked.",
    propagate_version = true
)]
pub struct Cli {
    /// The store file. Defaults to mnem.db in the platform data directory.
    #[arg(
        long,
        global = true,
        help_heading = "Store and team",
        env = "MNEM_DB",
        value_name = "PATH"
    )]
    pub db: Option<PathBuf>,

    /// A PostgreSQL server instead of the embedded file: `postgres://user@host/db`. Many
    /// `mnem serve` processes may share one. Migrations run at start.
    #[arg(
        long,
        global = true,
        help_heading = "Store and team",
        env = "MNEM_DATABASE_URL",
        value_name = "URL",
        conflicts_with = "db"
    )]
    pub database: Option<String>,

    /// Connections per process to the PostgreSQL server.
    #[arg(long, global = true, help_heading = "Store and team", env = "MNEM_PG_POOL", default_value_t = mnem_postgres::DEFAULT_POOL_SIZE)]
    pub pg_pool: usize,

    /// The team (tenant) to act in; memory commands create it on first use, `key`
    /// commands need it created (`mnem team create`), so a mistyped name issues no key.
    #[arg(
        long,
        global = true,
        help_heading = "Store and team",
        env = "MNEM_TEAM",
        default_value = "local"
    )]
    pub team: String,

    /// The profile (person or agent) to act as inside the team; created on first use.
    #[arg(
        long = "as",
        global = true,
        help_heading = "Store and team",
        env = "MNEM_AS",
        default_value = "default",
        value_name = "PROFILE"
    )]
    pub as_profile: String,

    /// Print machine-readable JSON instead of human text.
    #[arg(long, global = true, help_heading = "Store and team")]
    pub json: bool,

    /// Embedding provider: the built-in local model, an OpenAI-compatible endpoint, or
    /// none (lexical-only recall). `openai` reads --embed-url, --embed-model and
    /// --embed-dims (or MNEM_EMBED_URL, MNEM_EMBED_MODEL, MNEM_EMBED_DIMS; the key from
    /// MNEM_EMBED_API_KEY), options shown only here because nothing else uses them.
    #[arg(long, global = true, help_heading = "Embedding", env = "MNEM_EMBEDDER", default_value = "builtin", value_parser = ["builtin", "openai", "none"])]
    pub embedder: String,

    /// Base URL of the OpenAI-compatible endpoint (without /v1).
    #[arg(
        long,
        global = true,
        help_heading = "Embedding",
        hide = true,
        env = "MNEM_EMBED_URL",
        default_value = "https://api.openai.com"
    )]
    pub embed_url: String,

    /// Model name sent to the OpenAI-compatible endpoint.
    #[arg(
        long,
        global = true,
        help_heading = "Embedding",
        hide = true,
        env = "MNEM_EMBED_MODEL",
        default_value = "text-embedding-3-small"
    )]
    pub embed_model: String,

    /// Vector width the OpenAI-compatible model returns.
    #[arg(
        long,
        global = true,
        help_heading = "Embedding",
        hide = true,
        env = "MNEM_EMBED_DIMS",
        default_value_t = 1536
    )]
    pub embed_dims: usize,

    /// A team's vectors are searched through an HNSW index once it has at least this
    /// many; smaller teams are scanned exactly. On SQLite the index is saved beside the
    /// store file (`<file>-vectors/`) and every process, one-shot commands included,
    /// loads it and catches up; the first process to need it builds it.
    #[arg(long, global = true, help_heading = "Embedding", env = "MNEM_ANN_THRESHOLD", default_value_t = crate::ANN_THRESHOLD)]
    pub ann_threshold: usize,

    #[command(subcommand)]
    pub command: Command,
}

/// The optional model verifier, for the commands that write relationship claims (its key
/// comes from `MNEM_VERIFIER_KEY`, never a flag, so it stays out of shell history).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model verifier (optional)")]
pub struct VerifierArgs {
    /// An OpenAI-compatible chat endpoint (base URL without /v1) that must also judge
    /// every relationship entailed before it is validated. Off when unset.
    #[arg(long, env = "MNEM_VERIFIER_URL")]
    pub verifier_url: Option<String>,
    /// Chat model the verifier endpoint runs.
    #[arg(long, env = "MNEM_VERIFIER_MODEL", default_value = "gpt-4o-mini")]
    pub verifier_model: String,
    /// The verifier's verdict counts only at or above this confidence.
    #[arg(long, env = "MNEM_VERIFIER_THRESHOLD", default_value_t = mnem_core::graph::DEFAULT_MODEL_CONFIDENCE, value_parser = parse_confidence)]
    pub verifier_threshold: f64,
}

fn parse_confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("`{s}` is not a number from 0 to 1")),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Store one piece of evidence and print its id.
    Remember(RememberArgs),
    /// Recall evidence ranked by relevance (or recency); an empty query lists.
    Recall(RecallArgs),
    /// Retract evidence: recall never returns it again; its history is kept, and the
    /// relationships it supported are re-assessed.
    #[command(alias = "delete")]
    Retract(RetractArgs),
    /// Hold evidence out of recall and support pending review.
    Quarantine(QuarantineArgs),
    /// Return held (quarantined) evidence to recall after review.
    Release(ReleaseArgs),
    /// List evidence held out of recall, with why it was held.
    List(ListArgs),
    /// Physically erase your own private evidence and what was derived from it.
    Forget(ForgetArgs),
    /// Explain one relationship: its evidence, verification, history and conflicts.
    Trace(TraceArgs),
    /// Write a corrected version of a relationship (JSON from --file).
    Correct(CorrectArgs),
    /// Show one evidence record with its lifecycle history, its writes and its usage.
    Show(ShowArgs),
    /// Record how useful a recall's results were, or replay recorded feedback under
    /// another ranking profile.
    #[command(subcommand)]
    Feedback(FeedbackCommand),
    /// Propose hypotheses from pairs of the team's verified relationships that meet at an
    /// entity (a fixed rule table: works_on + uses → "may depend on", …) and mark stale
    /// the open ones whose source changed. Deterministic; hypotheses are never evidence.
    Dream(DreamArgs),
    /// List, show, confirm (with a proof written as evidence) or reject hypotheses.
    #[command(subcommand)]
    Hypotheses(HypothesesCommand),
    /// The team's communities: clusters of entities its verified relationships tie
    /// together (Leiden), each with a short summary; `--compute` recomputes them first
    /// (a new version when they changed). Derived, never evidence.
    Communities(CommunitiesArgs),
    /// Write the team's memory (evidence with its history, relationships with theirs,
    /// entities, aliases; never vectors) as a memory pack: canonical JSON Lines ending in
    /// a SHA-256 manifest. `--scope`, `--since` and `--until` take a slice.
    Export(ExportArgs),
    /// Bring memory in: a memory pack (one transaction, all or nothing; relationships
    /// land as candidates unless `--mode trusted`), chat transcripts, a folder of notes,
    /// or a benchmark's conversations. Importing the same input again changes nothing.
    Import(ImportArgs),
    /// Serve the memory tools over MCP on stdin/stdout (for desktop MCP clients), as the
    /// --team and --as principal; logs go to stderr.
    Mcp(McpArgs),
    /// Serve MCP (streamable HTTP at /mcp) and the JSON API (/v1/) to many clients,
    /// each authenticated by an API key (`mnem key create`).
    Serve(ServeArgs),
    /// The web console on this store: serves it (with the JSON API) on loopback and
    /// prints its address with a read-only key for --team, valid until the server stops.
    Ui(ServeArgs),
    /// Manage teams (tenants) for `mnem serve`.
    #[command(subcommand)]
    Team(TeamCommand),
    /// Manage API keys for `mnem serve`: the key fixes team, profile and scope.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Search freshness, the embedding contract, and the last degraded branch.
    Status,
    /// Re-embed every document with the active embedder (needed to switch models).
    Reindex,
    /// Measure ingest, recall latency, store size and memory on a synthetic corpus.
    Bench(BenchCommand),
    /// Measure retrieval quality on a public benchmark (LongMemEval, LoCoMo).
    Eval(EvalCommand),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (loopback by default; put TLS in front for other hosts).
    #[arg(long, env = "MNEM_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: std::net::SocketAddr,
    /// Sustained requests per second allowed per API key.
    #[arg(long, env = "MNEM_RATE_LIMIT", default_value_t = NonZeroU32::new(50).expect("non-zero"))]
    pub rate_limit: NonZeroU32,
    /// Requests a key may make in a burst before the sustained rate applies.
    #[arg(long, env = "MNEM_RATE_BURST", default_value_t = NonZeroU32::new(100).expect("non-zero"))]
    pub burst: NonZeroU32,
    /// Key checks per minute, per key prefix and per client address, that are not a key
    /// this server already verified (wrong secrets, unknown prefixes, first uses); over
    /// it, 429 before any Argon2 work.
    #[arg(long, env = "MNEM_UNVERIFIED_PER_MINUTE", default_value_t = NonZeroU32::new(20).expect("non-zero"))]
    pub unverified_per_minute: NonZeroU32,
    /// A bearer token that lets a scraper on another host read /metrics (store-wide
    /// counts); without it /metrics answers loopback peers only.
    #[arg(long, env = "MNEM_METRICS_TOKEN", hide_env_values = true)]
    pub metrics_token: Option<String>,
    /// Largest request body accepted, in bytes.
    #[arg(long, env = "MNEM_MAX_BODY_BYTES", default_value_t = 4 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// A Host name clients use to reach /mcp besides loopback (repeatable); other Host
    /// headers are refused (DNS-rebinding protection).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// A reverse proxy's address range (repeatable, `10.0.0.0/8`, `::1/128`): requests
    /// from it are charged, for the per-address budget, to the client its
    /// X-Forwarded-For names; from any other peer that header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<mnem_server::IpNet>,
    #[command(flatten)]
    pub verifier: VerifierArgs,
    #[command(flatten)]
    pub hypothesis_model: HypothesisModelArgs,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub verifier: VerifierArgs,
    #[command(flatten)]
    pub hypothesis_model: HypothesisModelArgs,
}

/// The optional chat model that reads new hypotheses after each dream pass (its key
/// comes from `MNEM_HYPOTHESIS_MODEL_KEY`, never a flag, so it stays out of shell
/// history).
#[derive(Debug, Args)]
#[command(next_help_heading = "Hypothesis model (optional)")]
pub struct HypothesisModelArgs {
    /// An OpenAI-compatible chat endpoint (base URL without /v1) that phrases each new
    /// hypothesis as one sentence and scores its plausibility, kept beside the rule's
    /// statement. Off when unset.
    #[arg(long, env = "MNEM_HYPOTHESIS_MODEL_URL")]
    pub hypothesis_model_url: Option<String>,
    /// Chat model the hypothesis endpoint runs.
    #[arg(long, env = "MNEM_HYPOTHESIS_MODEL", default_value = "gpt-4o-mini")]
    pub hypothesis_model: String,
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team.
    Create {
        /// The team's name (letters, digits, `-`, `_`, `.`).
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Create an API key for --team acting as --profile; the key is printed once.
    Create(KeyCreateArgs),
    /// Revoke a key by its prefix; refused at once everywhere.
    Revoke {
        /// The key's prefix as `mnem key list` shows it, or the key itself (`mnem_…`).
        prefix: String,
    },
    /// List the keys of --team (prefixes, profiles, scopes, expiry; never secrets).
    List,
}

#[derive(Debug, Subcommand)]
pub enum FeedbackCommand {
    /// Record a judgment of one recall: its query, the ids it returned in order, and which
    /// of them were useful, not useful or wrong. Changes nothing in memory.
    Submit(FeedbackSubmitArgs),
    /// Re-run the team's judged queries under --profile and under --baseline against
    /// memory as it is now, and print where the items judged useful rank (MRR, recall@5,
    /// recall@10) under each.
    Replay(Box<FeedbackReplayArgs>),
}

#[derive(Debug, Args)]
pub struct FeedbackSubmitArgs {
    /// The query of the recall judged.
    pub query: String,
    /// The ids the recall returned, best first (comma-separated).
    #[arg(long, required = true, value_delimiter = ',', value_parser = parse_evidence_id)]
    pub returned: Vec<EvidenceId>,
    /// Returned ids that helped answer the query.
    #[arg(long, value_delimiter = ',', value_parser = parse_evidence_id)]
    pub useful: Vec<EvidenceId>,
    /// Returned ids that were beside the point.
    #[arg(long, value_delimiter = ',', value_parser = parse_evidence_id)]
    pub not_useful: Vec<EvidenceId>,
    /// Returned ids that state something false or outdated.
    #[arg(long, value_delimiter = ',', value_parser = parse_evidence_id)]
    pub wrong: Vec<EvidenceId>,
}

#[derive(Debug, Args)]
pub struct FeedbackReplayArgs {
    /// The ranking profile to try (`hybrid`, `convex-2`, `lexical`, a version, or
    /// `NAME:key=value…`).
    #[arg(long, value_parser = parse_profile)]
    pub profile: RankingProfile,
    /// The profile it is compared with (default: the one recall uses).
    #[arg(long, value_parser = parse_profile, default_value = "hybrid")]
    pub baseline: RankingProfile,
    /// The newest N feedback records are replayed.
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct KeyCreateArgs {
    /// The profile the key acts as (created on first use); defaults to --as.
    #[arg(long)]
    pub profile: Option<String>,
    /// `read` (recall, trace), `write` (also remember, retract and quarantine its own
    /// evidence, release, correct, forget) or `admin` (also retract or quarantine
    /// evidence another profile wrote).
    #[arg(long, required_unless_present = "scope")]
    pub access: Option<Access>,
    /// The old spelling of --access (every other --scope is a path), still accepted with
    /// a warning.
    #[arg(long, hide = true, conflicts_with = "access")]
    pub scope: Option<Access>,
    /// When the key stops working (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_parser = parse_expires_at, conflicts_with = "expires_in_days")]
    pub expires_at: Option<Timestamp>,
    /// Days from now until the key stops working.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=36_500))]
    pub expires_in_days: Option<u32>,
}

#[derive(Debug, Args)]
pub struct EvalCommand {
    /// The benchmark format of FILE.
    #[arg(value_parser = ["longmemeval", "locomo"])]
    pub dataset: String,
    /// The benchmark file (JSON, the dataset's original format).
    pub file: PathBuf,
    /// Ranking profiles to compare on the same ingested store, comma-separated
    /// (hybrid, lexical, vector). Default: all three with an embedder, else lexical.
    /// Constants can be overridden to measure a variant: hybrid:vector_weight=0.5.
    #[arg(long, value_delimiter = ',', value_parser = parse_profile)]
    pub profile: Vec<RankingProfile>,
    /// Ask only the first N questions (and ingest only their haystacks).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub questions: Option<u64>,
    /// Keep document vectors in this file and reuse them on the next run (same model
    /// and preprocessing only): for comparing ranking variants without re-embedding.
    #[arg(long, value_name = "FILE")]
    pub embed_cache: Option<PathBuf>,
    /// Write one JSON line per question and profile (gold ranks, bytes, latency).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Results per agent-facing recall.
    #[arg(long, default_value_t = mnem_core::recall::DEFAULT_LIMIT)]
    pub limit: usize,
    /// Byte budgets of the agent-facing recall, comma-separated: each question is asked
    /// once per budget, and gold turns count only when returned within it.
    #[arg(long, value_delimiter = ',', default_values_t = mnem_eval::AGENT_BUDGETS)]
    pub context_bytes: Vec<usize>,
    /// Evidence windows to compare, comma-separated: every profile runs once per window
    /// (neighbours on each side of a result; 0 = the results alone).
    #[arg(long, value_delimiter = ',', default_values_t = [mnem_core::recall::DEFAULT_WINDOW])]
    pub window: Vec<usize>,
    /// Fit the first profile's constants to this file's scored questions (coordinate
    /// ascent on turn MRR, re-ranking each question's candidates offline), write the
    /// fitted profile spec to OUT (usable as --profile), and measure it after the others.
    #[arg(long, value_name = "OUT")]
    pub fit: Option<PathBuf>,
    /// With --fit: fit the reranker's feature weights (`rr_*`) on top of the first profile
    /// (a listwise softmax loss over each question's first 50 results) instead of its
    /// constants; only the features listed (`--fit-reranker=score,coverage`; all when none
    /// is), the rest held where the first profile has them.
    #[arg(
        long,
        requires = "fit",
        value_name = "FEATURES",
        value_delimiter = ',',
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub fit_reranker: Option<Vec<String>>,
    /// Embed each turn together with the turn before it in its session (queries as
    /// always): measures contextual document vectors against the plain ones.
    #[arg(long)]
    pub contextual_vectors: bool,
    /// Only screen every turn as a write would (no ingest, no recall) and list the turns
    /// it would hold: a false-positive count on real conversations, in seconds.
    #[arg(long)]
    pub screening_only: bool,
}

fn parse_profile(text: &str) -> Result<RankingProfile, String> {
    mnem_core::parse_profile(text).map_err(|e| e.to_string())
}
#[derive(Debug, Args)]
pub struct BenchCommand {
    /// Corpus sizes to measure, comma-separated, smallest first (1000000 on request).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 100_000])]
    pub sizes: Vec<usize>,
    /// Teams sharing the store (sizes proportional to 1/rank).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub teams: u64,
    /// Recalls timed per profile and size.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(1..))]
    pub queries: u64,
    /// Seed of the synthetic corpus: the same seed writes the same corpus.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Measure discovery paths instead: recall latency with paths off and on over a
    /// synthetic graph (the --graph-* sizes; --sizes and --teams do not apply).
    #[arg(long)]
    pub graph: bool,
    /// With --graph: evidence items in the synthetic graph corpus.
    #[arg(long, default_value_t = 10_000, requires = "graph")]
    pub graph_evidence: usize,
    /// With --graph: relationship claims among them (each proven by one item).
    #[arg(long, default_value_t = 20_000, requires = "graph")]
    pub graph_relationships: usize,
    /// With --graph: distinct entities the claims link.
    #[arg(long, default_value_t = 2_000, requires = "graph")]
    pub graph_entities: usize,
}

#[derive(Debug, Args)]
pub struct RememberArgs {
    /// The evidence text; `-` reads it from standard input.
    #[arg(allow_hyphen_values = true, required_unless_present = "file")]
    pub text: Option<String>,
    /// A structured request (JSON: evidence, relationships, predicates,
    /// idempotency_key); `-` reads standard input. The evidence flags belong in the
    /// JSON, so passing one with --file is refused rather than ignored.
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "text", "kind", "source", "source_type", "authority", "source_group", "source_key",
        "scope", "observed_at", "expires_at", "refs", "labels", "private",
    ])]
    pub file: Option<PathBuf>,
    /// A free label: fact, preference, decision, observation (default), …
    #[arg(long)]
    pub kind: Option<String>,
    /// Provenance: where this came from.
    #[arg(long, default_value = "cli")]
    pub source: String,
    /// What kind of source it is: conversation, document, observation or manual.
    #[arg(long, default_value = "manual", value_parser = parse_source_type)]
    pub source_type: SourceType,
    /// How far the source can be trusted: authoritative, primary, secondary, inferred or
    /// unknown (only authoritative evidence can make a claim a fact).
    #[arg(long, default_value = "unknown", value_parser = parse_authority)]
    pub authority: Authority,
    /// Independence key for corroboration (defaults to --source).
    #[arg(long)]
    pub source_group: Option<String>,
    /// A stable handle of the conversation, thread or document this belongs to: recall
    /// returns a result's neighbours with the same key as its evidence window.
    #[arg(long)]
    pub source_key: Option<String>,
    /// A scope path such as acme/api; omitted means team-wide.
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// When it happened or was said (RFC 3339 or YYYY-MM-DD); defaults to now.
    #[arg(long, value_parser = parse_observed_at)]
    pub observed_at: Option<Timestamp>,
    /// When it stops being recalled (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_parser = parse_expires_at)]
    pub expires_at: Option<Timestamp>,
    /// A typed reference kind:id (repeatable), e.g. issue:ABC-123.
    #[arg(long = "ref", value_name = "KIND:ID", value_parser = parse_ref)]
    pub refs: Vec<Ref>,
    /// A label (repeatable).
    #[arg(long = "label")]
    pub labels: Vec<String>,
    /// Visible to this profile only.
    #[arg(long)]
    pub private: bool,
    #[command(flatten)]
    pub verifier: VerifierArgs,
}

#[derive(Debug, Args)]
pub struct RecallArgs {
    /// What to look for; empty lists evidence in order.
    #[arg(default_value = "", allow_hyphen_values = true)]
    pub query: String,
    /// At most this many results (fewer when the byte budget runs out first).
    #[arg(long, default_value_t = mnem_core::recall::DEFAULT_LIMIT)]
    pub limit: usize,
    /// Only these kinds (repeatable; a union).
    #[arg(long = "kind")]
    pub kinds: Vec<String>,
    /// Observed at or after this time (inclusive).
    #[arg(long, value_parser = parse_since)]
    pub since: Option<Timestamp>,
    /// Observed before this time (exclusive).
    #[arg(long, value_parser = parse_until)]
    pub until: Option<Timestamp>,
    /// Drop results scoring below this (scores are in (0, 1]).
    #[arg(long, allow_negative_numbers = true)]
    pub min_score: Option<f64>,
    /// `relevance` (best match first) or `recent` (newest observed first, scores kept).
    #[arg(long, default_value = "relevance", value_parser = parse_order)]
    pub order: Order,
    /// Only this scope path …
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// … and its ancestors up to team-wide.
    #[arg(long, requires = "scope", conflicts_with = "include_descendants")]
    pub include_ancestors: bool,
    /// … and every scope under it.
    #[arg(long, requires = "scope")]
    pub include_descendants: bool,
    /// Only evidence carrying one of these refs (repeatable).
    #[arg(long = "ref", value_name = "KIND:ID", value_parser = parse_ref)]
    pub refs: Vec<Ref>,
    /// Byte budget for all returned contexts together (windows included).
    #[arg(long, default_value_t = mnem_core::recall::DEFAULT_CONTEXT_BYTES)]
    pub context_bytes: usize,
    /// Evidence window: also return up to N neighbours on each side of each result from
    /// its source group (same source_key, in observed order); 0 turns windows off.
    #[arg(long, default_value_t = mnem_core::recall::DEFAULT_WINDOW)]
    pub window: usize,
    /// Also show hypotheses (`mnem dream`) linked to the results or discovery paths, apart
    /// from them: speculation, never evidence.
    #[arg(long)]
    pub hypotheses: bool,
    /// Also show summaries of the communities (`mnem communities`) around the results,
    /// only in result slots the results left unused; never evidence.
    #[arg(long)]
    pub communities: bool,
    /// Read time hints ("yesterday") as of this instant instead of now (replays).
    #[arg(long, value_parser = parse_request_time)]
    pub request_time: Option<Timestamp>,
    /// Add each result's score and its components (operator diagnostics; not part of
    /// the public shape).
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub time: TimeView,
    /// Evidence already seen: not returned again (repeatable).
    #[arg(long = "known-evidence", value_name = "ID", value_parser = parse_evidence_id)]
    pub known_evidence: Vec<EvidenceId>,
    /// Relationships already seen: not in discovery paths (repeatable).
    #[arg(long = "known-relationship", value_name = "ID", value_parser = parse_relationship_id)]
    pub known_relationships: Vec<RelationshipId>,
    /// Start discovery from this entity too (repeatable).
    #[arg(long = "expand-from", value_name = "ENTITY_ID", value_parser = parse_entity_id)]
    pub expand_from: Vec<EntityId>,
    /// Discovery paths to return at most (0 turns discovery off).
    #[arg(long, default_value_t = mnem_core::graph::DEFAULT_PATH_LIMIT)]
    pub path_limit: usize,
}

/// Time travel: what was valid then, as it was known then.
#[derive(Debug, Args)]
pub struct TimeView {
    /// Real-world time: what was valid at this instant (RFC 3339 or YYYY-MM-DD).
    #[arg(long, value_parser = parse_valid_at)]
    pub valid_at: Option<Timestamp>,
    /// System time: what memory knew at this instant, from its append-only logs.
    #[arg(long, value_parser = parse_known_at)]
    pub known_at: Option<Timestamp>,
}

#[derive(Debug, Args)]
pub struct RetractArgs {
    /// The evidence ids to retract.
    #[arg(required = true, value_parser = parse_evidence_id)]
    pub ids: Vec<EvidenceId>,
    /// Why, kept in the lifecycle log.
    #[arg(long)]
    pub reason: Option<String>,
    /// Act on evidence another profile wrote (the `admin` scope); without it, only
    /// evidence written as `--as` may be changed.
    #[arg(long)]
    pub admin: bool,
}

#[derive(Debug, Args)]
pub struct QuarantineArgs {
    /// The evidence ids to hold out of recall.
    #[arg(required = true, value_parser = parse_evidence_id)]
    pub ids: Vec<EvidenceId>,
    /// Why, kept in the lifecycle log.
    #[arg(long, required = true)]
    pub reason: String,
    /// Act on evidence another profile wrote (the `admin` scope); without it, only
    /// evidence written as `--as` may be changed.
    #[arg(long)]
    pub admin: bool,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The held evidence ids to return to recall.
    #[arg(required = true, value_parser = parse_evidence_id)]
    pub ids: Vec<EvidenceId>,
    /// Why it is safe, kept in the lifecycle log.
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Held evidence (quarantined at write by screening, or by an operator), most
    /// recently recorded first. The one listing so far; `mnem recall ""` lists current
    /// evidence.
    #[arg(long, required = true)]
    pub quarantined: bool,
    /// At most this many items.
    #[arg(long, default_value_t = 50, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    pub limit: usize,
}

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Your private evidence ids to erase.
    #[arg(required = true, value_parser = parse_evidence_id)]
    pub ids: Vec<EvidenceId>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The relationship to explain.
    #[arg(value_parser = parse_relationship_id)]
    pub id: RelationshipId,
    #[command(flatten)]
    pub time: TimeView,
}

#[derive(Debug, Args)]
pub struct CorrectArgs {
    /// The relationship to correct.
    #[arg(value_parser = parse_relationship_id)]
    pub id: RelationshipId,
    /// The correction (JSON: expected_version, reason, supports, and any of object,
    /// polarity, predicate_surface, valid_from, valid_to); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub verifier: VerifierArgs,
}

#[derive(Debug, Args)]
pub struct DreamArgs {
    /// Propose at most this many hypotheses in this pass.
    #[arg(long, default_value_t = mnem_service::DEFAULT_DREAM_LIMIT)]
    pub limit: usize,
    #[command(flatten)]
    pub hypothesis_model: HypothesisModelArgs,
}

#[derive(Debug, Args)]
pub struct CommunitiesArgs {
    /// Recompute the communities from the team's current relationships first.
    #[arg(long)]
    pub compute: bool,
    /// List at most this many (largest first).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

#[derive(Debug, Subcommand)]
pub enum HypothesesCommand {
    /// The team's hypotheses, newest first (all statuses unless --status).
    List {
        /// Only these statuses (`open`, `confirmed`, `rejected`, `stale`; repeatable or
        /// comma-separated).
        #[arg(long, value_delimiter = ',', value_parser = parse_hypothesis_status)]
        status: Vec<HypothesisStatus>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// One hypothesis: its statement, status, sources and resolution.
    Show {
        /// The hypothesis.
        #[arg(value_parser = parse_hypothesis_id)]
        id: HypothesisId,
    },
    /// Confirm an open hypothesis by writing its proof: a structured remember request
    /// (JSON from --file, `-` for stdin) with evidence and at least one relationship.
    Confirm {
        /// The hypothesis.
        #[arg(value_parser = parse_hypothesis_id)]
        id: HypothesisId,
        /// Why it holds.
        #[arg(long)]
        reason: String,
        /// The proof: a remember request, as `mnem remember --file` takes.
        #[arg(long)]
        file: PathBuf,
        #[command(flatten)]
        verifier: VerifierArgs,
    },
    /// Reject an open hypothesis.
    Reject {
        /// The hypothesis.
        #[arg(value_parser = parse_hypothesis_id)]
        id: HypothesisId,
        /// Why it does not hold.
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Where to write the pack (`-`: standard output).
    #[arg(long, short, default_value = "-")]
    pub output: PathBuf,
    /// Only evidence in this scope or under it (`acme/api`).
    #[arg(long, value_parser = parse_scope)]
    pub scope: Option<Scope>,
    /// Only evidence observed at or after this RFC 3339 time.
    #[arg(long, value_parser = parse_since)]
    pub since: Option<Timestamp>,
    /// Only evidence observed before this RFC 3339 time.
    #[arg(long, value_parser = parse_until)]
    pub until: Option<Timestamp>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// What to import: a memory pack or a transcript file (`-`: standard input), or a
    /// folder of notes (or one note) for `--format markdown`.
    pub path: PathBuf,
    /// `pack`: a memory pack (`mnem export`); `chat`: JSON Lines of turns or OpenAI-style
    /// `messages`; `markdown`: a folder of .md/.markdown/.txt files; `longmemeval`,
    /// `locomo`: those benchmarks' files (their conversations, not their questions).
    #[arg(long, value_enum, default_value_t = ImportFormat::Pack)]
    pub format: ImportFormat,
    /// For packs: `review` lands relationships as candidates (kept out of discovery and
    /// tier signals until this team verifies them); `trusted` keeps tiers and history as
    /// exported.
    #[arg(long, value_enum, default_value_t = PackMode::Review)]
    pub mode: PackMode,
    /// Write nothing if any line or file cannot be read (without it, those are reported
    /// with their line number or path and the rest is imported).
    #[arg(long)]
    pub strict: bool,
    /// Scope every imported item (not for packs, which carry their own).
    #[arg(long)]
    pub scope: Option<String>,
    /// Label every imported item; repeatable (not for packs).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// For chat: when a session without times began (its turns follow one second
    /// apart); default the file's modification time, or now for standard input.
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,
    /// For markdown: the largest fragment, in bytes (headings and paragraphs are kept
    /// whole while they fit).
    #[arg(long, default_value_t = mnem_core::import::DEFAULT_CHUNK_BYTES)]
    pub chunk_bytes: usize,
    /// Items written per transaction.
    #[arg(long, default_value_t = mnem_service::IMPORT_BATCH)]
    pub batch: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    Pack,
    Chat,
    Markdown,
    Longmemeval,
    Locomo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PackMode {
    Review,
    Trusted,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The evidence item to show.
    #[arg(value_parser = parse_evidence_id)]
    pub id: EvidenceId,
}

// clap needs plain `fn(&str) -> Result<T, String>`; the core's errors already name the
// field, so their reason is the message.

fn parse_stamp(field: &str, s: &str) -> Result<Timestamp, String> {
    Timestamp::parse(field, s).map_err(|e| e.reason)
}

fn parse_observed_at(s: &str) -> Result<Timestamp, String> {
    parse_stamp("observed_at", s)
}

fn parse_expires_at(s: &str) -> Result<Timestamp, String> {
    parse_stamp("expires_at", s)
}

fn parse_since(s: &str) -> Result<Timestamp, String> {
    parse_stamp("since", s)
}

fn parse_until(s: &str) -> Result<Timestamp, String> {
    parse_stamp("until", s)
}

fn parse_valid_at(s: &str) -> Result<Timestamp, String> {
    parse_stamp("valid_at", s)
}

fn parse_known_at(s: &str) -> Result<Timestamp, String> {
    parse_stamp("known_at", s)
}

fn parse_relationship_id(s: &str) -> Result<RelationshipId, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_entity_id(s: &str) -> Result<EntityId, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_request_time(s: &str) -> Result<Timestamp, String> {
    parse_stamp("request_time", s)
}

fn parse_order(s: &str) -> Result<Order, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_source_type(s: &str) -> Result<SourceType, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_authority(s: &str) -> Result<Authority, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    Scope::parse(s).map_err(|e| e.reason)
}

fn parse_ref(s: &str) -> Result<Ref, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_hypothesis_id(s: &str) -> Result<HypothesisId, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_hypothesis_status(s: &str) -> Result<HypothesisStatus, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

fn parse_evidence_id(s: &str) -> Result<EvidenceId, String> {
    s.parse().map_err(|e: mnem_core::ValidationError| e.reason)
}

#[cfg(test)]
mod help_tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every option and argument of every command, as `command path: --name`, that has
    /// no description.
    fn undescribed(command: &clap::Command, path: &str, found: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                found.push(format!("{path}: {id}"));
            }
        }
        for sub in command.get_subcommands() {
            undescribed(sub, &format!("{path} {}", sub.get_name()), found);
        }
    }

    #[test]
    fn every_option_of_every_command_is_described() {
        let mut found = Vec::new();
        undescribed(&Cli::command(), "mnem", &mut found);
        assert_eq!(found, Vec::<String>::new());
    }
}
