//! The MCP transport: mnem's memory operations as MCP tools, served with the official
//! Rust SDK (`rmcp`). Thin glue like the CLI: arguments are parsed into core types, the
//! service does the work, results are the public shapes as JSON text.
//!
//! Architecture invariant: the principal (team, profile, access) is fixed before any tool
//! runs — when the server is built (stdio, one local user) or by the HTTP layer's
//! authentication of each request — and no tool argument can name or change it. Logs go
//! to stderr: on stdio, stdout is the protocol.

mod stdio_guard;

use mnem_core::Principal;
use mnem_store::{GraphStore, SearchIndex};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Extensions, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};

use mnem_api::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput, OpError,
    Operations, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, TraceInput,
};

/// How an agent should use the tools, sent once at initialisation.
const INSTRUCTIONS: &str = "Long-term memory for this team. Call recall_memory at the start \
of each turn that may depend on earlier conversations, decisions or documents; answer from \
its `results` (ranked evidence) and treat `discovery_paths` as hints, not answers. When \
something stays uncertain, recall again with a focused query and the ids you have seen in \
known_evidence_ids / known_relationship_ids. Call trace_memory when asked why something is \
believed, when claims conflict, or before acting on a high-stakes fact. Call remember when \
the user states something worth keeping, citing spans of the evidence for any relationship \
you propose.";

/// Where a tool call's principal comes from.
#[derive(Clone)]
enum Caller {
    /// One principal for the whole session (stdio: the local user).
    Fixed(Principal),
    /// The principal the HTTP layer authenticated and put in this request's extensions.
    PerRequest,
}

/// The memory tools over one store, acting as a principal fixed before any tool runs.
#[derive(Clone)]
pub struct MemoryTools<S> {
    ops: Operations<S>,
    caller: Caller,
    tool_router: ToolRouter<Self>,
}

impl<S> MemoryTools<S> {
    /// Who this call acts as. On HTTP, a request that reached a tool without an
    /// authenticated principal is refused (the router authenticates every request first,
    /// so this is a wiring error, never a fallback to some default team).
    fn caller(&self, extensions: &Extensions) -> Result<Principal, String> {
        match &self.caller {
            Caller::Fixed(principal) => Ok(principal.clone()),
            Caller::PerRequest => extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Principal>())
                .cloned()
                .ok_or_else(|| "unauthenticated request".to_string()),
        }
    }
}

/// The operations whose tools declare the outline of their answer as `outputSchema`: the
/// three a program calls and reads field by field. Declaring every tool's would cost about
/// 2.7 KB more of the list every agent carries; `/openapi.json` has every answer whole.
const OUTLINED: [&str; 3] = ["recall", "remember", "trace"];

/// A tool's answer: the operation's JSON as structured content (and, for clients that
/// read only text, the same JSON as its text block), or its public error message.
fn answer(result: Result<serde_json::Value, OpError>) -> Result<CallToolResult, String> {
    result
        .map(CallToolResult::structured)
        .map_err(|err| err.public_message())
}

#[tool_router]
impl<S: GraphStore + SearchIndex + 'static> MemoryTools<S> {
    /// Tools acting as `principal` for every call (stdio: the local user).
    pub fn new(ops: Operations<S>, principal: Principal) -> Self {
        Self::with_caller(ops, Caller::Fixed(principal))
    }

    /// Tools acting, per call, as the principal the HTTP layer authenticated for that
    /// request.
    pub fn per_request(ops: Operations<S>) -> Self {
        Self::with_caller(ops, Caller::PerRequest)
    }

    fn with_caller(ops: Operations<S>, caller: Caller) -> Self {
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            // Portable schemas: no Rust number formats, no `null` unions for optional
            // fields; no `$schema`, since MCP reads an embedded schema as JSON Schema
            // 2020-12 unless told otherwise (SEP-1613), and every agent carries the list.
            let mut schema = serde_json::Value::Object((*route.attr.input_schema).clone());
            mnem_api::schema::make_portable(&mut schema);
            if let serde_json::Value::Object(mut object) = schema {
                object.remove("$schema");
                route.attr.input_schema = std::sync::Arc::new(object);
            }
            let op = mnem_api::Operation::of_tool(&route.attr.name);
            if let Some(op) = op.filter(|op| OUTLINED.contains(&op.name)) {
                route.attr.output_schema =
                    mnem_api::output::answer_outline(op.name).map(std::sync::Arc::new);
            }
        }
        Self {
            ops: ops.via("mcp"),
            caller,
            tool_router,
        }
    }

    #[tool(
        description = "Recall ranked evidence for a query within a byte budget, plus discovery paths through verified relationships. Use it whenever an answer may depend on memory. `results`: the evidence to answer from, best first, with the neighbouring items of its conversation or document in `before`/`after` (`window` 0: matches alone). `discovery_paths`: follow-up hints (relationship ids for trace_memory, entity ids for expand_from_entity_ids). On follow-ups, pass the ids already seen in known_evidence_ids / known_relationship_ids.",
        title = "Recall memory",
        annotations(read_only_hint = true)
    )]
    async fn recall_memory(
        &self,
        Parameters(input): Parameters<RecallInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.recall(&caller, input).await)
    }

    #[tool(
        description = "Remember evidence (1-50 items: what was said, observed or documented) and, optionally, relationship claims it proves (subject, predicate, object; `supports` cite character spans [start, end) of the evidence). A claim whose span does not name subject, predicate and object stays unverified. Nothing is stored unless the whole request is valid; reuse an `idempotency_key` to retry safely. A text the team already holds (same words, kind, scope, labels) is not stored twice: the answer gives its id with `duplicate` (`alias`: your write recorded beside it; `replay`: already recorded).",
        title = "Remember evidence",
        annotations(
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remember(
        &self,
        Parameters(input): Parameters<mnem_core::graph::RememberRequest>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.remember(&caller, input).await)
    }

    #[tool(
        description = "Explain one relationship: supporting evidence with quotes, verification, lifecycle, conflicting claims and corrections. Use it when asked why something is believed, when claims conflict, or before a high-stakes decision; `known_at` shows it as memory stood then.",
        title = "Trace a relationship",
        annotations(read_only_hint = true)
    )]
    async fn trace_memory(
        &self,
        Parameters(input): Parameters<TraceInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.trace(&caller, input).await)
    }

    #[tool(
        description = "Retract evidence that is wrong or obsolete: never recalled again (its history is kept); the relationships it supported are re-assessed. Only evidence you wrote, unless your key has the admin scope; if others wrote the same text too, only your write is withdrawn (`kept_written_by_others`).",
        title = "Retract evidence",
        annotations(
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn retract_evidence(
        &self,
        Parameters(input): Parameters<RetractInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.retract(&caller, input).await)
    }

    #[tool(
        description = "Report how useful a recall's results were: the query, the results with their ranks (1 = first) and a judgment where you can tell (`useful`, `not_useful`, `wrong`). A record for ranking review; memory is unchanged (retract_evidence removes false evidence). Needs a write key.",
        title = "Rate recall results",
        annotations(
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn submit_recall_feedback(
        &self,
        Parameters(input): Parameters<mnem_core::feedback::FeedbackInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.feedback(&caller, input).await)
    }

    #[tool(
        description = "Export the team's memory you can see as a memory pack in `pack` (JSON Lines: evidence and relationships with their history, never vectors; a SHA-256 manifest last) with its `counts`, for `mnem import` elsewhere or review. `scope`, `since`, `until` take a slice (a relationship only with all its cited evidence). Refused past `max_bytes` (default 1 MiB).",
        title = "Export a memory pack",
        annotations(read_only_hint = true)
    )]
    async fn export_memory_pack(
        &self,
        Parameters(input): Parameters<ExportInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.export_pack(&caller, input).await)
    }

    #[tool(
        description = "List the team's hypotheses: speculative links derived from two verified relationships meeting at an entity (\"Mark may depend on Redis\"), never evidence. recall_memory with include_hypotheses shows those near a query.",
        title = "List hypotheses",
        annotations(read_only_hint = true)
    )]
    async fn list_hypotheses(
        &self,
        Parameters(input): Parameters<ListHypothesesInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.list_hypotheses(&caller, input).await)
    }

    #[tool(
        description = "Read one hypothesis: its statement, status (open, confirmed, rejected, stale), the two relationships it came from (trace_memory explains each) and any resolution.",
        title = "Read a hypothesis",
        annotations(read_only_hint = true)
    )]
    async fn get_hypothesis(
        &self,
        Parameters(input): Parameters<GetHypothesisInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.get_hypothesis(&caller, input).await)
    }

    #[tool(
        description = "Resolve an open hypothesis: `reject` with a reason, or `confirm` with a reason and a `proof`: a remember request whose evidence and relationship state the fact, written and verified like any (a hypothesis never becomes a relationship by itself). Needs a write key.",
        title = "Resolve a hypothesis",
        annotations(
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn resolve_hypothesis(
        &self,
        Parameters(input): Parameters<ResolveHypothesisInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.resolve_hypothesis(&caller, input).await)
    }

    #[tool(
        description = "Release evidence that screening (or an operator) held, once checked safe: it is recalled again and the relationships it supports are re-assessed. Writes name held items with `state: quarantined` and `quarantined_because`. Needs a write key.",
        title = "Release held evidence",
        annotations(
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn release_evidence(
        &self,
        Parameters(input): Parameters<ReleaseInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.release(&caller, input).await)
    }

    #[tool(
        description = "Correct a relationship: writes a new version citing evidence, fenced on `expected_version` (read from trace_memory). Your own claim is superseded; another author's stays unchanged beside yours.",
        title = "Correct a relationship",
        annotations(
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn correct_relationship(
        &self,
        Parameters(input): Parameters<CorrectInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.correct(&caller, input).await)
    }

    #[tool(
        description = "Permanently erase your own private evidence and whatever was derived only from it, leaving a content-free tombstone. Team evidence cannot be forgotten; retract it instead.",
        title = "Forget private evidence",
        annotations(
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget(
        &self,
        Parameters(input): Parameters<ForgetInput>,
        extensions: Extensions,
    ) -> Result<CallToolResult, String> {
        let caller = self.caller(&extensions)?;
        answer(self.ops.forget(&caller, input).await)
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
    use tokio::io::BufReader;
    // stdin → the guard (which answers what it cannot pass on) → the SDK → stdout, with
    // the guard's answers and the SDK's output sharing one line writer.
    let (guard_to_sdk, sdk_input) = tokio::io::duplex(64 * 1024);
    let (sdk_output, sdk_to_relay) = tokio::io::duplex(64 * 1024);
    let (lines, outgoing) = tokio::sync::mpsc::channel(64);
    let writer = tokio::spawn(stdio_guard::write_lines(outgoing, tokio::io::stdout()));
    let guard = tokio::spawn(stdio_guard::screen_input(
        BufReader::new(tokio::io::stdin()),
        guard_to_sdk,
        lines.clone(),
    ));
    let relay = tokio::spawn(stdio_guard::relay_output(
        BufReader::new(sdk_to_relay),
        lines,
    ));
    let running = tools
        .serve((sdk_input, sdk_output))
        .await
        .map_err(|e| format!("MCP initialisation failed: {e}"))?;
    let ended = running
        .waiting()
        .await
        .map_err(|e| format!("MCP session ended abnormally: {e}"));
    guard.abort();
    // The SDK's output ends with the session; the writer then drains what is left.
    let _ = relay.await;
    let _ = writer.await;
    ended?;
    Ok(())
}
