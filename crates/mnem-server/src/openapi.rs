//! The OpenAPI 3.1 document at `/openapi.json`, generated from the same types the JSON
//! API deserialises (and the MCP tools publish), so the document cannot drift from what
//! the server accepts.

use mnem_api::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ShowInput,
    StatusInput, TraceInput,
};
use mnem_core::graph::RememberRequest;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// One API operation: `POST /v1/<name>`.
struct Operation {
    name: &'static str,
    summary: &'static str,
    /// The request body's content, by media type.
    request: Value,
}

/// A JSON request body of `schema`.
fn json_body(schema: Value) -> Value {
    json!({"application/json": {"schema": schema}})
}

fn error_response(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    })
}

fn path_item(op: &Operation) -> Value {
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({"description": "The result, as the MCP tool of the same name returns it",
               "content": {"application/json": {"schema": {"type": "object"}}}}),
    );
    responses.insert(
        "400".into(),
        error_response("Invalid request; `field` names the input"),
    );
    responses.insert(
        "401".into(),
        error_response("Missing, invalid, revoked or expired API key"),
    );
    // Whether it needs a write key is said once, in `mnem_api::OPERATIONS`.
    if mnem_api::Operation::named(op.name).is_none_or(|named| named.writes) {
        responses.insert("403".into(), error_response("The key is read-only"));
        responses.insert(
            "409".into(),
            error_response("Conflict (idempotency key reused with another request, stale version)"),
        );
    }
    responses.insert("404".into(), error_response("Not found in this team"));
    responses.insert("413".into(), error_response("Request body too large"));
    responses.insert(
        "429".into(),
        json!({"description": "Rate limited; retry after `Retry-After` seconds",
               "headers": {"Retry-After": {"schema": {"type": "integer"}}},
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
    );
    let mut post = json!({
        "operationId": op.name,
        "summary": op.summary,
        "security": [{"apiKey": []}],
        "requestBody": {"required": true, "content": op.request},
        "responses": responses,
    });
    if op.name == "import" {
        post["parameters"] = json!([
            {"name": "source", "in": "query", "required": false, "schema": {"type": "string"},
             "description": "Names the transcript in each item's `source` (default `import`)"},
            {"name": "session", "in": "query", "required": false, "schema": {"type": "string"},
             "description": "The session of turns that name none (default `import`)"},
            {"name": "start", "in": "query", "required": false, "schema": {"type": "string"},
             "description": "RFC 3339: when a session without times began (default now; \
                             give it, or times on the turns, so a re-sent transcript changes \
                             nothing)"},
        ]);
    }
    json!({ "post": post })
}

/// The whole document.
pub fn document() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    let mut generator = settings.into_generator();
    let mut schema =
        |f: fn(&mut schemars::SchemaGenerator) -> schemars::Schema| f(&mut generator).to_value();
    fn of<T: JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<T>()
    }
    let operations = [
        Operation {
            name: "recall",
            summary:
                "Ranked evidence within a byte budget, plus discovery paths (MCP: recall_memory)",
            request: json_body(schema(of::<RecallInput>)),
        },
        Operation {
            name: "remember",
            summary: "Store evidence and the relationship claims it proves; a text the team \
                      already holds answers the stored id with `duplicate` (MCP: remember)",
            request: json_body(schema(of::<RememberRequest>)),
        },
        Operation {
            name: "trace",
            summary:
                "One relationship with its evidence, verification and history (MCP: trace_memory)",
            request: json_body(schema(of::<TraceInput>)),
        },
        Operation {
            name: "export",
            summary: "The caller's memory (or a scope/time slice) as a memory pack: JSON Lines \
                      with a SHA-256 manifest, never vectors (MCP: export_memory_pack)",
            request: json_body(schema(of::<ExportInput>)),
        },
        Operation {
            name: "hypotheses",
            summary: "The team's hypotheses (dreaming), newest first, by status; never \
                      evidence (MCP: list_hypotheses)",
            request: json_body(schema(of::<ListHypothesesInput>)),
        },
        Operation {
            name: "hypothesis",
            summary: "One hypothesis with its sources and resolution (MCP: get_hypothesis)",
            request: json_body(schema(of::<GetHypothesisInput>)),
        },
        Operation {
            name: "resolve_hypothesis",
            summary: "Confirm an open hypothesis with a proof written as a remember, or reject \
                      it (MCP: resolve_hypothesis)",
            request: json_body(schema(of::<ResolveHypothesisInput>)),
        },
        Operation {
            name: "retract",
            summary: "Retract your writes of evidence; what it supported is re-assessed, an \
                      item others also wrote stays (MCP: retract_evidence)",
            request: json_body(schema(of::<RetractInput>)),
        },
        Operation {
            name: "feedback",
            summary: "Record how useful one recall's results were; changes nothing it judges \
                      (MCP: submit_recall_feedback)",
            request: json_body(schema(of::<mnem_core::feedback::FeedbackInput>)),
        },
        Operation {
            name: "release",
            summary: "Return quarantined evidence to recall after review (MCP: release_evidence)",
            request: json_body(schema(of::<ReleaseInput>)),
        },
        Operation {
            name: "quarantined",
            summary: "Evidence held out of recall, newest first, with why it was held",
            request: json_body(schema(of::<QuarantinedInput>)),
        },
        Operation {
            name: "correct",
            summary: "A new, version-fenced version of a relationship (MCP: correct_relationship)",
            request: json_body(schema(of::<CorrectInput>)),
        },
        Operation {
            name: "forget",
            summary: "Erase your own private evidence and what derives only from it (MCP: forget)",
            request: json_body(schema(of::<ForgetInput>)),
        },
        Operation {
            name: "explain",
            summary: "A recall with each result's score and score components: operator \
                      diagnostics (the console), never the agent-facing shape",
            request: json_body(schema(of::<RecallInput>)),
        },
        Operation {
            name: "show",
            summary: "One evidence item with its lifecycle history, its writes and its \
                      recall usage",
            request: json_body(schema(of::<ShowInput>)),
        },
        Operation {
            name: "status",
            summary: "Ranking profile, embedding contract, the caller's team's documents \
                      waiting for vectors, the last degraded branch",
            request: json_body(schema(of::<StatusInput>)),
        },
        Operation {
            name: "import",
            summary: "A chat transcript as JSON Lines (one turn per line, or OpenAI-style \
                      `messages` per line), streamed and written in batches; answers what was \
                      stored, already stored or failed, failures by line number",
            request: json!({"application/x-ndjson": {"schema": {"type": "string"}}}),
        },
    ];
    let mut paths = Map::new();
    for op in &operations {
        paths.insert(format!("/v1/{}", op.name), path_item(op));
    }
    let mut schemas = generator.take_definitions(true);
    schemas.insert(
        "Error".into(),
        json!({"type": "object", "required": ["error"], "properties": {"error": {
        "type": "object", "required": ["code", "message"], "properties": {
            "code": {"type": "string"},
            "message": {"type": "string"},
            "field": {"type": "string", "description": "The input the error is about"}
        }}}}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mnem",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Long-term memory for agents and teams. Every call acts as the team and profile of its API key; no argument can name another team."
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer", "description": "`mnem key create` prints the key once"}}
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_document_lists_every_operation_and_its_key_scope() {
        let doc = super::document();
        let paths = doc["paths"].as_object().expect("paths");
        let mut documented: Vec<&str> = paths
            .keys()
            .map(|path| path.trim_start_matches("/v1/"))
            .collect();
        let mut named: Vec<&str> = mnem_api::OPERATIONS.iter().map(|op| op.name).collect();
        documented.sort_unstable();
        named.sort_unstable();
        assert_eq!(documented, named);
        for op in mnem_api::OPERATIONS {
            let responses = &paths[&format!("/v1/{}", op.name)]["post"]["responses"];
            assert_eq!(responses.get("403").is_some(), op.writes, "{}", op.name);
        }
    }
}
