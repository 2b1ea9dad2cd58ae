//! The MCP transport: mnem's memory operations as MCP tools, served with the official
//! Rust SDK (`rmcp`). Thin glue like the CLI: arguments are parsed into core types, the
//! service does the work, results are the public shapes as JSON text.
//!
//! Architecture invariant: the principal (team and profile) is fixed when the server is
//! built, before any tool runs; no tool argument can name or change it. Logs go to
//! stderr: on stdio, stdout is the protocol.

mod input;

use std::sync::Arc;

use mnem_core::{Actor, PublicRecall};
use mnem_service::{Memory, ServiceError};
use mnem_store::{GraphStore, GraphView, SearchIndex, StoreError};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use serde::Serialize;
use tokio::sync::Notify;

pub use input::{CorrectInput, ForgetInput, RecallInput, RetractInput, TraceInput};

/// How an agent should use the tools, sent once at initialisation.
const INSTRUCTIONS: &str = "Long-term memory for this team. Call recall_memory at the start \
of each turn that may depend on earlier conversations, decisions or documents; answer from \
its `results` (ranked evidence) and treat `discovery_paths` as hints, not answers. When \
something stays uncertain, recall again with a focused query and the ids you have seen in \
known_evidence_ids / known_relationship_ids. Call trace_memory when asked why something is \
believed, when claims conflict, or before acting on a high-stakes fact. Call remember when \
the user states something worth keeping, citing spans of the evidence for any relationship \
you propose.";

/// The memory tools of one principal over one store.
#[derive(Clone)]
pub struct MemoryTools<S> {
    memory: Arc<Memory<S>>,
    actor: Actor,
    /// Wakes the embedding worker after a write, when the process runs one.
    written: Option<Arc<Notify>>,
    tool_router: ToolRouter<Self>,
}

impl<S> MemoryTools<S> {
    /// Notifies `wake` after every write, so a background embedding worker picks the new
    /// documents up at once.
    pub fn notifying(mut self, wake: Arc<Notify>) -> Self {
        self.written = Some(wake);
        self
    }

    fn wrote(&self) {
        if let Some(wake) = &self.written {
            wake.notify_one();
        }
    }
}

/// A tool failure as the agent should see it: what to fix, never internals.
fn failure(err: ServiceError) -> String {
    match err {
        ServiceError::Store(
            err @ (StoreError::Invalid(_)
            | StoreError::NotFound { .. }
            | StoreError::RelationshipNotFound { .. }
            | StoreError::Conflict(_)
            | StoreError::NotPermitted { .. }),
        ) => err.to_string(),
        ServiceError::Dependency { .. } => err.to_string(),
        other => {
            tracing::error!(error = %other, "tool failed");
            "internal error; the server log has the details".into()
        }
    }
}

fn json<T: Serialize>(value: &T) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode the result: {e}"))
}

#[tool_router]
impl<S: GraphStore + SearchIndex + 'static> MemoryTools<S> {
    /// Tools acting as `actor` (its team and profile) on `memory`.
    pub fn new(memory: Arc<Memory<S>>, actor: Actor) -> Self {
        Self {
            memory,
            actor,
            written: None,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Recall ranked evidence for a query, within a byte budget, plus compact discovery paths through verified relationships. Use it every turn that may depend on memory. `results` are the evidence to answer from, best first; `discovery_paths` are follow-up hints (relationship ids for trace_memory, entity ids for expand_from_entity_ids). Pass ids you have already seen in known_evidence_ids / known_relationship_ids to get new context on a follow-up call. Requires `query` or `expand_from_entity_ids`."
    )]
    async fn recall_memory(
        &self,
        Parameters(input): Parameters<RecallInput>,
    ) -> Result<String, String> {
        let query = input.into_query().map_err(|e| e.to_string())?;
        let recall = self
            .memory
            .recall(&self.actor, query)
            .await
            .map_err(failure)?;
        json(&PublicRecall::new(&recall.hits, recall.discovery_paths))
    }

    #[tool(
        description = "Remember evidence (1-50 items: what was said, observed or documented) and, optionally, relationship claims it proves (subject, predicate, object, and `supports` citing character spans [start, end) of the evidence). Claims are verified against the cited text: a claim whose span does not name subject, predicate and object stays an unverified candidate. The whole request is checked before anything is stored. Reuse an `idempotency_key` to retry safely."
    )]
    async fn remember(
        &self,
        Parameters(request): Parameters<mnem_core::graph::RememberRequest>,
    ) -> Result<String, String> {
        let outcome = self
            .memory
            .remember_request(&self.actor, request)
            .await
            .map_err(failure)?;
        self.wrote();
        json(&outcome)
    }

    #[tool(
        description = "Explain one relationship: its supporting evidence with quotes, verification events, lifecycle transitions, conflicting claims and corrections. Use it when asked why something is believed, when claims conflict, or before a high-stakes decision. `known_at` shows it as memory stood at that time."
    )]
    async fn trace_memory(
        &self,
        Parameters(input): Parameters<TraceInput>,
    ) -> Result<String, String> {
        let (id, view): (_, GraphView) = input.into_parts().map_err(|e| e.to_string())?;
        let trace = self
            .memory
            .trace(&self.actor, id, view)
            .await
            .map_err(failure)?;
        json(&trace)
    }

    #[tool(
        description = "Retract evidence that is wrong or obsolete: it is never recalled again (its history is kept) and the relationships it supported are re-assessed."
    )]
    async fn retract_evidence(
        &self,
        Parameters(input): Parameters<RetractInput>,
    ) -> Result<String, String> {
        self.memory
            .retract_evidence(&self.actor, input.evidence_ids.clone(), input.reason)
            .await
            .map_err(failure)?;
        json(&serde_json::json!({ "retracted": input.evidence_ids }))
    }

    #[tool(
        description = "Correct a relationship: writes a new version citing evidence, fenced on the version you read from trace_memory (`expected_version`). Your own claim is superseded; another author's claim is kept unchanged beside yours."
    )]
    async fn correct_relationship(
        &self,
        Parameters(input): Parameters<CorrectInput>,
    ) -> Result<String, String> {
        let outcome = self
            .memory
            .correct_relationship(&self.actor, input.relationship_id, input.correction)
            .await
            .map_err(failure)?;
        self.wrote();
        json(&outcome)
    }

    #[tool(
        description = "Permanently erase your own private evidence and whatever was derived only from it, leaving a content-free tombstone. Team evidence cannot be forgotten; retract it instead."
    )]
    async fn forget(&self, Parameters(input): Parameters<ForgetInput>) -> Result<String, String> {
        self.memory
            .forget(&self.actor, input.evidence_ids.clone())
            .await
            .map_err(failure)?;
        json(&serde_json::json!({ "erased": input.evidence_ids }))
    }
}

#[tool_handler(router = self.tool_router)]
impl<S: GraphStore + SearchIndex + 'static> ServerHandler for MemoryTools<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnem", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serves the tools over stdin/stdout until the client disconnects.
pub async fn serve_stdio<S: GraphStore + SearchIndex + 'static>(
    tools: MemoryTools<S>,
) -> Result<(), String> {
    let running = tools
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP initialisation failed: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("MCP session ended abnormally: {e}"))?;
    Ok(())
}
