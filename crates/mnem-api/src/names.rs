//! Every operation's names, once: the HTTP JSON API path (`POST /v1/<name>`), the MCP
//! tool (when there is one), and whether it needs a key with `write` scope. The
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
}

const fn op(name: &'static str, tool: Option<&'static str>, writes: bool) -> Operation {
    Operation { name, tool, writes }
}

/// Every operation, in the order documents list them.
pub const OPERATIONS: &[Operation] = &[
    op("recall", Some("recall_memory"), false),
    op("remember", Some("remember"), true),
    op("trace", Some("trace_memory"), false),
    op("export", Some("export_memory_pack"), false),
    op("hypotheses", Some("list_hypotheses"), false),
    op("hypothesis", Some("get_hypothesis"), false),
    op("resolve_hypothesis", Some("resolve_hypothesis"), true),
    op("retract", Some("retract_evidence"), true),
    op("release", Some("release_evidence"), true),
    op("feedback", Some("submit_recall_feedback"), true),
    // Listing held items is for operators reviewing them, not for an agent's context.
    op("quarantined", None, true),
    op("correct", Some("correct_relationship"), true),
    op("forget", Some("forget"), true),
    // The console's reads: score parts, one item's history, the store's health.
    op("explain", None, false),
    op("show", None, false),
    op("status", None, false),
    // A streamed JSON Lines body, for loading transcripts; agents remember one at a time.
    op("import", None, true),
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
