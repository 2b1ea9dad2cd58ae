//! The MCP tools through the rmcp client over an in-process pipe: the same JSON-RPC a
//! stdio client speaks, on a real SQLite store.

use std::sync::Arc;

use mnem_core::{ManualClock, Timestamp};
use mnem_mcp::MemoryTools;
use mnem_service::Memory;
use mnem_sqlite::SqliteStore;
use mnem_store::EvidenceStore;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

type Client = RunningService<RoleClient, ()>;

/// A server for team `team` on `store`, and a client connected to it.
async fn connect(store: SqliteStore, team: &str) -> Client {
    let actor = store.open_team(team).await.unwrap();
    let memory = Arc::new(Memory::open(store, None).await.unwrap());
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let tools = MemoryTools::new(
        mnem_api::Operations::new(memory),
        mnem_core::Principal::local(actor),
    );
    tokio::spawn(async move {
        let running = tools.serve(server_side).await.unwrap();
        let _ = running.waiting().await;
    });
    ().serve(client_side).await.unwrap()
}

fn store() -> SqliteStore {
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_seconds(1_700_000_000),
        1_000,
    ));
    SqliteStore::open_in_memory(clock).unwrap()
}

async fn call(client: &Client, tool: &'static str, arguments: Value) -> CallToolResult {
    let arguments = arguments.as_object().unwrap().clone();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .unwrap()
}

fn text(result: &CallToolResult) -> &str {
    result.content[0]
        .as_text()
        .map(|t| t.text.as_str())
        .unwrap()
}

/// The JSON a successful tool returned: as structured content, and the same as text
/// for clients that read only the text block.
fn ok(result: &CallToolResult) -> Value {
    assert_ne!(result.is_error, Some(true), "tool failed: {}", text(result));
    let from_text: Value = serde_json::from_str(text(result)).unwrap();
    assert_eq!(result.structured_content.as_ref(), Some(&from_text));
    from_text
}

#[tokio::test]
async fn the_tools_are_listed_with_schemas_that_refuse_unknown_fields() {
    let client = connect(store(), "t").await;
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    // Exactly the tools the operations table names.
    let mut table: Vec<&str> = mnem_api::OPERATIONS
        .iter()
        .filter_map(|op| op.tool)
        .collect();
    table.sort();
    assert_eq!(names, table);
    assert_eq!(names.len(), 12);
    for tool in &tools {
        assert_eq!(
            tool.input_schema.get("additionalProperties"),
            Some(&json!(false)),
            "{}",
            tool.name
        );
        assert!(tool.description.as_ref().is_some_and(|d| d.len() > 80));
        assert!(
            tool.title.as_ref().is_some_and(|t| !t.is_empty()),
            "{}",
            tool.name
        );
        let schema = Value::Object((*tool.input_schema).clone());
        assert!(
            !mnem_api::schema::has_unportable(&schema),
            "{}: {schema}",
            tool.name
        );
        // Hints a client may act on (asking before a destructive call), agreeing with the
        // operations table's write rule.
        let op = mnem_api::Operation::of_tool(&tool.name).expect("a tool of the table");
        let hints = tool.annotations.as_ref().expect("annotations");
        assert_eq!(
            hints.read_only_hint == Some(true),
            !op.writes,
            "{}",
            tool.name
        );
        if op.writes {
            assert!(hints.destructive_hint.is_some(), "{}", tool.name);
            assert!(hints.idempotent_hint.is_some(), "{}", tool.name);
        }
    }
    let destructive = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        tool.annotations.as_ref().and_then(|a| a.destructive_hint)
    };
    assert_eq!(destructive("forget"), Some(true));
    assert_eq!(destructive("remember"), Some(false));
    // The three tools a program reads field by field declare their answers' outline.
    let mut outlined: Vec<&str> = tools
        .iter()
        .filter(|t| t.output_schema.is_some())
        .map(|t| t.name.as_ref())
        .collect();
    outlined.sort();
    assert_eq!(outlined, ["recall_memory", "remember", "trace_memory"]);
    assert!(tools
        .iter()
        .all(|t| !t.input_schema.contains_key("$schema")));
    let weight: usize = tools
        .iter()
        .map(|t| serde_json::to_string(t).unwrap().len())
        .sum();
    eprintln!("the tool list weighs {weight} bytes");
    // Every agent carries the list in its context: a budget, so growth is a decision.
    assert!(weight < 23_500, "the tool list weighs {weight} bytes");
    let remember = tools.iter().find(|t| t.name == "remember").unwrap();
    let evidence = serde_json::to_string(&remember.input_schema).unwrap();
    assert!(
        evidence.contains("A scope path"),
        "evidence fields are described"
    );
    let recall = tools.iter().find(|t| t.name == "recall_memory").unwrap();
    assert_eq!(
        recall.input_schema["properties"]["limit"]["minimum"],
        json!(1)
    );
    let info = client.peer_info().unwrap();
    assert!(info
        .instructions
        .as_deref()
        .unwrap()
        .contains("trace_memory"));
}

/// Whether `answer` fits a tool's declared outline: every field it always has is there,
/// and every field present is a listed one of the listed JSON type.
fn fits_outline(answer: &Value, outline: &serde_json::Map<String, Value>) -> Result<(), String> {
    let fields = answer.as_object().ok_or("not an object")?;
    for required in outline["required"].as_array().ok_or("no required list")? {
        let name = required.as_str().ok_or("a required entry is not a name")?;
        if !fields.contains_key(name) {
            return Err(format!("{name} is missing"));
        }
    }
    for (name, value) in fields {
        let declared = &outline["properties"][name];
        let kinds: Vec<&str> = match &declared["type"] {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{name} is not a listed field with a type")),
        };
        let kind = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let fits = kinds.contains(&kind) || (kind == "integer" && kinds.contains(&"number"));
        if !fits {
            return Err(format!("{name} is {kind}, declared {kinds:?}"));
        }
    }
    Ok(())
}

#[tokio::test]
async fn remember_recall_trace_over_mcp() {
    let client = connect(store(), "t").await;
    let tools = client.list_all_tools().await.unwrap();
    let outline = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).expect(name);
        tool.output_schema.clone().expect("an outline")
    };
    let outcome = ok(&call(
        &client,
        "remember",
        json!({
            "evidence": [{"content": "Mark works on Atlas.", "source": "standup"}],
            "relationships": [{
                "subject": {"name": "Mark", "kind": "person"}, "predicate": "works_on",
                "object": {"entity": {"name": "Atlas", "kind": "project"}},
                "supports": [{"evidence": 0, "start": 0, "end": 19}]
            }]
        }),
    )
    .await);
    let relationship = outcome["relationships"][0]["relationship_id"].clone();
    assert_eq!(outcome["relationships"][0]["status"], "active");
    assert_eq!(fits_outline(&outcome, &outline("remember")), Ok(()));

    let recalled = ok(&call(
        &client,
        "recall_memory",
        json!({"query": "who works on Atlas"}),
    )
    .await);
    assert_eq!(recalled["results"][0]["context"], "Mark works on Atlas.");
    assert_eq!(fits_outline(&recalled, &outline("recall_memory")), Ok(()));
    let mut unlisted = recalled.clone();
    unlisted["score"] = json!(0.5);
    assert!(fits_outline(&unlisted, &outline("recall_memory")).is_err());
    assert_eq!(
        recalled["discovery_paths"][0]["relationships"][0]["relationship_id"],
        relationship
    );

    let trace = ok(&call(
        &client,
        "trace_memory",
        json!({"relationship_id": relationship}),
    )
    .await);
    assert_eq!(trace["supports"][0]["quote"], "Mark works on Atlas");
    assert_eq!(fits_outline(&trace, &outline("trace_memory")), Ok(()));

    // Evidence written without a source is sourced to the transport, as the CLI's is.
    ok(&call(
        &client,
        "remember",
        json!({"evidence": [{"content": "Lena reviews the Atlas release."}]}),
    )
    .await);
    let unsourced = ok(&call(&client, "recall_memory", json!({"query": "Lena release"})).await);
    assert_eq!(unsourced["results"][0]["source"], "mcp");
}

#[tokio::test]
async fn a_repeated_remember_names_the_stored_item_and_feedback_is_recorded() {
    let client = connect(store(), "t").await;
    let remember = || {
        call(
            &client,
            "remember",
            json!({"evidence": [{"content": "The launch moved to May.", "source": "chat"}]}),
        )
    };
    let first = ok(&remember().await);
    let id = first["evidence"][0]["evidence_id"].clone();
    assert_eq!(first["evidence"][0].get("duplicate"), None);
    let again = ok(&call(
        &client,
        "remember",
        json!({"evidence": [{"content": "The launch moved to May.", "source": "email"}]}),
    )
    .await);
    assert_eq!(again["evidence"][0]["evidence_id"], id);
    assert_eq!(again["evidence"][0]["duplicate"], "alias");

    let feedback = ok(&call(
        &client,
        "submit_recall_feedback",
        json!({"query": "when is the launch",
               "results": [{"evidence_id": id, "rank": 1, "judgment": "useful"}]}),
    )
    .await);
    assert!(feedback["feedback_id"].is_string());
    let bad = call(
        &client,
        "submit_recall_feedback",
        json!({"query": "when is the launch",
               "results": [{"evidence_id": id, "rank": 0, "judgment": "useful"}]}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("results[0].rank"), "{}", text(&bad));

    let exported = ok(&call(&client, "export_memory_pack", json!({})).await);
    let pack = mnem_core::pack::Pack::decode(exported["pack"].as_str().expect("pack text"))
        .expect("the pack decodes");
    assert_eq!(exported["counts"]["evidence"], json!(pack.evidence.len()));
    assert!(pack.evidence.iter().any(|e| json!(e.evidence_id) == id));
    let capped = call(&client, "export_memory_pack", json!({"max_bytes": 10})).await;
    assert_eq!(capped.is_error, Some(true));
    assert!(text(&capped).contains("max_bytes"), "{}", text(&capped));
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_that_name_the_field() {
    let client = connect(store(), "t").await;
    let empty = call(&client, "recall_memory", json!({})).await;
    assert_eq!(empty.is_error, Some(true));
    assert!(text(&empty).starts_with("query:"), "{}", text(&empty));
    let span = call(
        &client,
        "remember",
        json!({
            "evidence": [{"content": "short"}],
            "relationships": [{
                "subject": {"name": "a"}, "predicate": "p", "object": {"entity": {"name": "b"}},
                "supports": [{"evidence": 0, "start": 0, "end": 99}]
            }]
        }),
    )
    .await;
    assert_eq!(span.is_error, Some(true));
    assert!(text(&span).contains("relationships[0].supports[0].end"));
    let unknown = client
        .call_tool(
            CallToolRequestParams::new("recall_memory").with_arguments(
                json!({"query": "x", "team": "other"})
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        )
        .await;
    let refused = match unknown {
        Err(_) => true,
        Ok(result) => result.is_error == Some(true),
    };
    assert!(refused, "an unknown argument (here: a team) is refused");
}

#[tokio::test]
async fn each_server_sees_only_its_own_team() {
    let shared = store();
    let ours = connect(shared.clone(), "ours").await;
    let theirs = connect(shared, "theirs").await;
    ok(&call(
        &ours,
        "remember",
        json!({"evidence": [{"content": "the vault code is 1234"}]}),
    )
    .await);
    let seen = ok(&call(&theirs, "recall_memory", json!({"query": "vault code"})).await);
    assert_eq!(seen["results"], json!([]));
    let own = ok(&call(&ours, "recall_memory", json!({"query": "vault code"})).await);
    assert_eq!(own["results"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_recall_window_brings_the_neighbouring_turns_in_order_and_bad_windows_name_the_field() {
    let client = connect(store(), "t").await;
    let turns = [
        "Ann: are we still on for Saturday?",
        "Ben: yes, the climbing gym at ten",
        "Ann: great, I will bring the rope",
    ];
    for (i, turn) in turns.iter().enumerate() {
        ok(&call(
            &client,
            "remember",
            json!({"evidence": [{"content": turn, "source_key": "chat-1",
                                 "observed_at": format!("2024-03-0{}T10:00:00Z", i + 1)}]}),
        )
        .await);
    }
    let recalled = ok(&call(
        &client,
        "recall_memory",
        json!({"query": "climbing gym", "window": 1}),
    )
    .await);
    let result = &recalled["results"][0];
    assert_eq!(result["context"], turns[1]);
    assert_eq!(result["before"][0]["context"], turns[0]);
    assert_eq!(result["after"][0]["context"], turns[2]);
    assert_eq!(
        result["after"][0]["hit"], true,
        "the turn after a match is itself a match under follow-on credit"
    );
    assert_eq!(result["before"][0]["hit"], false);
    let plain = ok(&call(
        &client,
        "recall_memory",
        json!({"query": "climbing gym", "window": 0}),
    )
    .await);
    assert!(
        plain["results"][0].get("before").is_none(),
        "window 0: the original shape"
    );
    let bad = call(
        &client,
        "recall_memory",
        json!({"query": "gym", "window": 6}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("window"), "{}", text(&bad));
}

#[tokio::test]
async fn hypotheses_and_community_summaries_stay_apart_from_results_over_the_tools() {
    let store = store();
    let client = connect(store.clone(), "acme").await;
    for (text, subject, predicate, object) in [
        ("Mark works on Atlas", "Mark", "works_on", "Atlas"),
        ("Atlas uses Redis", "Atlas", "uses", "Redis"),
    ] {
        ok(&call(
            &client,
            "remember",
            json!({"evidence": [{"content": text}],
                   "relationships": [{"subject": {"name": subject}, "predicate": predicate,
                                      "object": {"entity": {"name": object}},
                                      "supports": [{"evidence": 0, "start": 0, "end": text.len()}]}]}),
        )
        .await);
    }
    // Dreaming runs as a pass (`mnem dream`), not as a tool.
    let actor = store.open_team("acme").await.unwrap();
    let memory = Memory::open(store.clone(), None).await.unwrap();
    assert_eq!(memory.dream(&actor, 10).await.unwrap().added, 1);

    let listed = ok(&call(&client, "list_hypotheses", json!({"statuses": ["open"]})).await);
    let id = listed["hypotheses"][0]["hypothesis_id"].clone();
    assert!(id.is_string());
    let read = ok(&call(&client, "get_hypothesis", json!({"hypothesis_id": id})).await);
    assert_eq!(read["status"], "open");
    let recalled = ok(&call(
        &client,
        "recall_memory",
        json!({"query": "Mark Redis", "include_hypotheses": true}),
    )
    .await);
    assert_eq!(recalled["related_hypotheses"][0]["hypothesis_id"], id);
    let plain = ok(&call(&client, "recall_memory", json!({"query": "Mark Redis"})).await);
    assert!(plain.get("related_hypotheses").is_none());
    assert_eq!(plain["results"], recalled["results"]);
    // Communities, too, are computed by a pass; recall shows them only when asked.
    assert_eq!(
        memory
            .compute_communities(&actor)
            .await
            .unwrap()
            .communities,
        1
    );
    let clustered = ok(&call(
        &client,
        "recall_memory",
        json!({"query": "Mark Redis", "include_communities": true}),
    )
    .await);
    assert_eq!(
        clustered["community_summaries"][0]["kind"],
        "community_summary"
    );
    assert!(clustered["community_summaries"][0]["summary"]
        .as_str()
        .expect("summary")
        .contains("Atlas"));
    assert_eq!(plain["results"], clustered["results"]);
    assert!(plain.get("community_summaries").is_none());

    let unproven = call(
        &client,
        "resolve_hypothesis",
        json!({"hypothesis_id": id, "decision": "confirm", "reason": "asked"}),
    )
    .await;
    assert_eq!(unproven.is_error, Some(true));
    assert!(text(&unproven).contains("proof"), "{}", text(&unproven));
    let rejected = ok(&call(
        &client,
        "resolve_hypothesis",
        json!({"hypothesis_id": id, "decision": "reject", "reason": "Mark only reads the docs"}),
    )
    .await);
    assert_eq!(rejected["hypothesis"]["status"], "rejected");
    let bad_status = call(&client, "list_hypotheses", json!({"statuses": ["maybe"]})).await;
    assert_eq!(bad_status.is_error, Some(true));
    assert!(
        text(&bad_status).contains("statuses[0]"),
        "{}",
        text(&bad_status)
    );
}
