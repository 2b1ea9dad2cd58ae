//! Every operation's names, once: the HTTP JSON API path (`POST /v1/<name>`), the MCP
//! tool (when there is one), whether it needs a key with `write` scope, and its summary. The
//! server's routes, metric labels and OpenAPI document, and the MCP tool list are checked
//! against this table by tests.

/// One operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// `POST /v1/<name>`.
    pub name: &'static str,
    /// The MCP tool, if the operation is one.
    pub tool: Option<&'static str>,
    /// Needs a key with `write` scope: it writes, or (`quarantined`) shows held items
    /// only writers may review.
    pub writes: bool,
    /// One line for the OpenAPI document.
    pub summary: &'static str,
}

const fn op(
    name: &'static str,
    tool: Option<&'static str>,
    writes: bool,
    summary: &'static str,
) -> Operation {
    Operation {
        name,
        tool,
        writes,
        summary,
    }
}

/// Every operation, in the order documents list them.
pub const OPERATIONS: &[Operation] = &[
    op(
        "recall",
        Some("recall_memory"),
        false,
        "Ranked evidence within a byte budget, plus discovery paths",
    ),
    op(
        "remember",
        Some("remember"),
        true,
        "Store evidence and the relationship claims it proves; a text the team already \
         holds answers the stored id with `duplicate`",
    ),
    op(
        "trace",
        Some("trace_memory"),
        false,
        "One relationship with its evidence, verification and history",
    ),
    op(
        "export",
        Some("export_memory_pack"),
        false,
        "The caller's memory (or a scope/time slice) as a memory pack: JSON Lines with a \
         SHA-256 manifest, never vectors",
    ),
    op(
        "hypotheses",
        Some("list_hypotheses"),
        false,
        "The team's hypotheses (dreaming), newest first, by status; never evidence",
    ),
    op(
        "hypothesis",
        Some("get_hypothesis"),
        false,
        "One hypothesis with its sources and resolution",
    ),
    op(
        "resolve_hypothesis",
        Some("resolve_hypothesis"),
        true,
        "Confirm an open hypothesis with a proof written as a remember, or reject it",
    ),
    op(
        "retract",
        Some("retract_evidence"),
        true,
        "Retract your writes of evidence; what it supported is re-assessed, an item others \
         also wrote stays",
    ),
    op(
        "release",
        Some("release_evidence"),
        true,
        "Return quarantined evidence to recall after review",
    ),
    op(
        "feedback",
        Some("submit_recall_feedback"),
        true,
        "Record how useful one recall's results were; changes nothing it judges",
    ),
    // Listing held items is for operators reviewing them, not for an agent's context.
    op(
        "quarantined",
        None,
        true,
        "Evidence held out of recall, newest first, with why it was held",
    ),
    op(
        "correct",
        Some("correct_relationship"),
        true,
        "A new, version-fenced version of a relationship",
    ),
    op(
        "forget",
        Some("forget"),
        true,
        "Erase your own private evidence and what derives only from it",
    ),
    // The console's reads: score parts, one item's history, the store's health.
    op(
        "explain",
        None,
        false,
        "A recall with each result's score and score components: operator diagnostics \
         (the console), never the agent-facing shape",
    ),
    op(
        "show",
        None,
        false,
        "One evidence item with its lifecycle history, its writes, its recall usage and \
         the names of the profiles they cite",
    ),
    op(
        "status",
        None,
        false,
        "Ranking profile, embedding contract, the caller's team's documents waiting for \
         vectors, the last degraded branch",
    ),
    op(
        "scopes",
        None,
        false,
        "The scopes of the evidence the caller could recall (at and under one, or the \
         whole team's), in path order: what a framework's \"list namespaces\" reads",
    ),
    // A streamed JSON Lines body, for loading transcripts; agents remember one at a time.
    op(
        "import",
        None,
        true,
        "A chat transcript as JSON Lines (one turn per line, or OpenAI-style `messages` \
         per line), streamed and written in batches; answers what was stored, already \
         stored or failed, failures by line number",
    ),
];

impl Operation {
    /// The operation named `name` on the JSON API.
    pub fn named(name: &str) -> Option<&'static Operation> {
        OPERATIONS.iter().find(|op| op.name == name)
    }

    /// The operation behind MCP tool `tool`.
    pub fn of_tool(tool: &str) -> Option<&'static Operation> {
        OPERATIONS.iter().find(|op| op.tool == Some(tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tools_are_unique() {
        let mut names: Vec<&str> = OPERATIONS.iter().map(|op| op.name).collect();
        let mut tools: Vec<&str> = OPERATIONS.iter().filter_map(|op| op.tool).collect();
        let (all_names, all_tools) = (names.len(), tools.len());
        names.sort_unstable();
        names.dedup();
        tools.sort_unstable();
        tools.dedup();
        assert_eq!(names.len(), all_names);
        assert_eq!(tools.len(), all_tools);
        assert_eq!(
            Operation::of_tool("recall_memory").map(|op| op.name),
            Some("recall")
        );
        assert_eq!(Operation::named("forget").map(|op| op.writes), Some(true));
        assert_eq!(Operation::named("nothing"), None);
    }
}
