//! The OpenAPI 3.1 document at `/openapi.json`, generated from the same types the JSON
//! API deserialises and encodes (and the MCP tools publish), so the document cannot drift
//! from what the server accepts and answers.

use std::collections::HashMap;

use mnem_api::schema::{make_portable, make_portable_answer};
use mnem_api::{output, Operation, OPERATIONS};
use mnem_api::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ScopesInput,
    ShowInput, StatusInput, TraceInput,
};
use mnem_core::graph::RememberRequest;
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

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

fn path_item(op: &Operation, request: Value, answer: Value) -> Value {
    let mut responses = Map::new();
    responses.insert(
        "200".into(),
        json!({"description": match op.name {
                   "explain" => "A recall's answer, each result also carrying its `score` and \
                                 score `components`",
                   _ => "The result, as the MCP tool of the same name returns it",
               },
               "content": {"application/json": {"schema": answer}}}),
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
    if op.writes {
        responses.insert("403".into(), error_response("The key is read-only"));
        responses.insert(
            "409".into(),
            error_response("Conflict (idempotency key reused with another request, stale version)"),
        );
    }
    responses.insert("404".into(), error_response("Not found in this team"));
    responses.insert("413".into(), error_response("Request body too large"));
    // The JSON body's own rejections (the streamed import reads lines, not one body).
    if op.name != "import" {
        responses.insert(
            "415".into(),
            error_response("The body is not sent as `application/json`"),
        );
        responses.insert(
            "422".into(),
            error_response("The JSON does not fit the input schema; `field` names the input"),
        );
    }
    responses.insert(
        "429".into(),
        json!({"description": "Rate limited; retry after `Retry-After` seconds",
               "headers": {"Retry-After": {"schema": {"type": "integer"}}},
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
    );
    let mut post = json!({
        "operationId": op.name,
        "summary": match op.tool {
            Some(tool) => format!("{} (MCP: {tool})", op.summary),
            None => op.summary.to_string(),
        },
        "security": [{"apiKey": []}],
        "requestBody": {"required": true, "content": request},
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

/// Moves each union (`oneOf`/`anyOf`) written inline as a property of a component — as a
/// flattened Rust enum is — into a component of its own, `<Component><Property>`, and
/// refers to it. The same schema; code generators that read a union only as a named
/// schema (openapi-python-client drops an inline union nested in another) see one.
fn hoist_inline_unions(schemas: &mut Map<String, Value>) {
    let mut pending: Vec<String> = schemas.keys().cloned().collect();
    while let Some(name) = pending.pop() {
        let mut hoisted = Vec::new();
        if let Some(schema) = schemas.get_mut(&name) {
            hoist_from(schema, &name, &mut hoisted);
        }
        for (component, schema) in hoisted {
            pending.push(component.clone());
            schemas.insert(component, schema);
        }
    }
}

/// Hoists the inline unions among `schema`'s properties, here and in its own union
/// members, naming each after `owner`.
fn hoist_from(schema: &mut Value, owner: &str, hoisted: &mut Vec<(String, Value)>) {
    // A union of one schema with `null` (an answer's optional value) stays where it is:
    // generators read it as a nullable field.
    let is_union = |v: &Value| {
        ["oneOf", "anyOf"].iter().any(|key| {
            v.get(key)
                .and_then(Value::as_array)
                .is_some_and(|members| members.iter().filter(|m| !is_null(m)).count() > 1)
        })
    };
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        for (property, value) in properties.iter_mut() {
            if is_union(value) {
                let component = format!("{owner}{}", camel(property));
                let inline = std::mem::replace(
                    value,
                    json!({"$ref": format!("#/components/schemas/{component}")}),
                );
                hoisted.push((component, inline));
            }
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(members)) = schema.get_mut(key) {
            for (i, member) in members.iter_mut().enumerate() {
                hoist_from(member, &format!("{owner}{i}"), hoisted);
            }
        }
    }
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// `source_type` → `SourceType`.
fn camel(name: &str) -> String {
    name.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// A function that registers a type's schema with a generator and refers to it.
type Of = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

fn of<T: JsonSchema>(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    generator.subschema_for::<T>()
}

/// The schema of an operation's answer ([`output::answer_schema`]); null for an operation
/// without one, which the document test refuses.
fn answer(name: &str, generator: &mut schemars::SchemaGenerator) -> Value {
    output::answer_schema(name, generator).map_or(Value::Null, |schema| schema.to_value())
}

/// The schema of an operation's request body.
fn request(name: &str, generator: &mut schemars::SchemaGenerator) -> Value {
    let mut schema = |f: Of| f(generator).to_value();
    match name {
        "recall" | "explain" => json_body(schema(of::<RecallInput>)),
        "remember" => json_body(schema(of::<RememberRequest>)),
        "trace" => json_body(schema(of::<TraceInput>)),
        "export" => json_body(schema(of::<ExportInput>)),
        "hypotheses" => json_body(schema(of::<ListHypothesesInput>)),
        "hypothesis" => json_body(schema(of::<GetHypothesisInput>)),
        "resolve_hypothesis" => json_body(schema(of::<ResolveHypothesisInput>)),
        "retract" => json_body(schema(of::<RetractInput>)),
        "feedback" => json_body(schema(of::<mnem_core::feedback::FeedbackInput>)),
        "release" => json_body(schema(of::<ReleaseInput>)),
        "quarantined" => json_body(schema(of::<QuarantinedInput>)),
        "correct" => json_body(schema(of::<CorrectInput>)),
        "forget" => json_body(schema(of::<ForgetInput>)),
        "show" => json_body(schema(of::<ShowInput>)),
        "status" => json_body(schema(of::<StatusInput>)),
        "scopes" => json_body(schema(of::<ScopesInput>)),
        "import" => json!({"application/x-ndjson": {"schema": {"type": "string"}}}),
        // A new operation without a request schema here fails the document test.
        _ => Value::Null,
    }
}

/// `schemas`, each made portable by `rewrite` ([`mnem_api::schema`]).
fn portable(mut schemas: Map<String, Value>, rewrite: fn(&mut Value)) -> Map<String, Value> {
    for schema in schemas.values_mut() {
        rewrite(schema);
    }
    schemas
}

/// Adds the answers' definitions to the requests'. Where both define a name differently
/// (a type read and written, whose optional fields an answer always has), the answer's
/// becomes `<Name>Answer`; returns those renamings.
fn merge_answers(
    schemas: &mut Map<String, Value>,
    answers: Map<String, Value>,
) -> HashMap<String, String> {
    let renamed: HashMap<String, String> = answers
        .iter()
        .filter(|(name, schema)| schemas.get(*name).is_some_and(|read| read != *schema))
        .map(|(name, _)| (name.clone(), format!("{name}Answer")))
        .collect();
    for (name, mut schema) in answers {
        rename_refs(&mut schema, &renamed);
        let name = renamed.get(&name).cloned().unwrap_or(name);
        schemas.insert(name, schema);
    }
    renamed
}

/// Points every `$ref` to a renamed component at its new name.
fn rename_refs(schema: &mut Value, renamed: &HashMap<String, String>) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get_mut("$ref") {
                let name = target.trim_start_matches(COMPONENTS);
                if let Some(new) = renamed.get(name) {
                    *target = format!("{COMPONENTS}{new}");
                }
            }
            object.values_mut().for_each(|v| rename_refs(v, renamed));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_refs(v, renamed)),
        _ => {}
    }
}

const COMPONENTS: &str = "#/components/schemas/";

/// The whole document.
pub fn document() -> Value {
    // Requests are described as the server reads them, answers as it writes them (a
    // field a request may leave out, an answer may always have): two generators.
    let generator = |settings: SchemaSettings| {
        let mut settings = settings;
        settings.definitions_path = "/components/schemas".into();
        settings.into_generator()
    };
    let mut requests = generator(SchemaSettings::draft2020_12());
    let mut answers = generator(SchemaSettings::draft2020_12().for_serialize());
    let mut bodies: Vec<(&Operation, Value, Value)> = OPERATIONS
        .iter()
        .map(|op| {
            let body = request(op.name, &mut requests);
            (op, body, answer(op.name, &mut answers))
        })
        .collect();
    let mut schemas = portable(requests.take_definitions(true), make_portable);
    let answered = portable(answers.take_definitions(true), make_portable_answer);
    let renamed = merge_answers(&mut schemas, answered);
    hoist_inline_unions(&mut schemas);
    let mut paths = Map::new();
    for (op, body, answer) in &mut bodies {
        make_portable(body);
        make_portable_answer(answer);
        rename_refs(answer, &renamed);
        let item = path_item(op, body.take(), answer.take());
        paths.insert(format!("/v1/{}", op.name), item);
    }
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
    use serde_json::json;

    #[test]
    fn no_union_is_left_inline_as_a_property_and_every_reference_resolves() {
        let doc = super::document();
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        fn walk(v: &serde_json::Value, in_properties: bool, found: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(o) => {
                    let members = |key: &str| {
                        o.get(key)
                            .and_then(|m| m.as_array())
                            .map_or(0, |m| m.iter().filter(|m| !super::is_null(m)).count())
                    };
                    // A union with `null` is an answer's nullable field, not a choice.
                    if in_properties && (members("oneOf") > 1 || members("anyOf") > 1) {
                        found.push(format!("inline union {v}"));
                    }
                    if let Some(serde_json::Value::String(r)) = o.get("$ref") {
                        found.push(r.clone());
                    }
                    for (k, child) in o {
                        if k == "properties" {
                            for p in child.as_object().into_iter().flat_map(|p| p.values()) {
                                walk(p, true, found);
                            }
                        } else {
                            walk(child, false, found);
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|c| walk(c, false, found)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(&doc, false, &mut found);
        assert!(
            found.iter().all(|f| !f.starts_with("inline union")),
            "{found:?}"
        );
        for reference in found {
            let name = reference.trim_start_matches("#/components/schemas/");
            assert!(schemas.contains_key(name), "{reference} does not resolve");
        }
        // The typed literal of a relationship's object, once inline in a union member.
        assert!(
            schemas.contains_key("ObjectInput1Value"),
            "{:?}",
            schemas.keys()
        );
    }

    #[test]
    fn an_answer_type_that_a_request_names_differently_is_renamed_with_its_references() {
        let mut schemas = serde_json::Map::new();
        schemas.insert("Scope".into(), json!({"type": "string"}));
        let mut answers = serde_json::Map::new();
        answers.insert("Scope".into(), json!({"type": ["string", "null"]}));
        answers.insert(
            "Held".into(),
            json!({"properties": {"scope": {"$ref": "#/components/schemas/Scope"}}}),
        );
        let renamed = super::merge_answers(&mut schemas, answers);
        assert_eq!(renamed["Scope"], "ScopeAnswer");
        assert_eq!(
            schemas["Scope"],
            json!({"type": "string"}),
            "the request's stays"
        );
        assert_eq!(schemas["ScopeAnswer"], json!({"type": ["string", "null"]}));
        assert_eq!(
            schemas["Held"]["properties"]["scope"]["$ref"],
            "#/components/schemas/ScopeAnswer"
        );
    }

    #[test]
    fn every_operation_documents_the_object_it_answers() {
        let doc = super::document();
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        for op in mnem_api::OPERATIONS {
            let ok = &doc["paths"][format!("/v1/{}", op.name)]["post"]["responses"]["200"];
            let schema = &ok["content"]["application/json"]["schema"];
            let name = schema["$ref"].as_str().unwrap_or_default();
            let name = name.trim_start_matches(super::COMPONENTS);
            let answer = schemas.get(name);
            assert!(answer.is_some(), "{}: 200 is {schema}", op.name);
            let answer = answer.expect("checked");
            assert_eq!(answer["type"], "object", "{}", op.name);
            assert!(
                answer["required"].as_array().is_some_and(|r| !r.is_empty()),
                "{}: an answer names the fields it always has",
                op.name
            );
        }
    }

    #[test]
    fn every_operation_is_documented_with_its_request_and_key_scope() {
        let doc = super::document();
        let paths = doc["paths"].as_object().expect("paths");
        assert_eq!(paths.len(), mnem_api::OPERATIONS.len());
        for op in mnem_api::OPERATIONS {
            let post = &paths[&format!("/v1/{}", op.name)]["post"];
            let content = &post["requestBody"]["content"];
            assert!(
                content.as_object().is_some_and(|c| !c.is_empty()),
                "{}: no request schema",
                op.name
            );
            assert_eq!(
                post["responses"].get("403").is_some(),
                op.writes,
                "{}",
                op.name
            );
            for status in ["400", "401", "404", "413", "429"] {
                assert!(
                    post["responses"].get(status).is_some(),
                    "{} {status}",
                    op.name
                );
            }
            for status in ["415", "422"] {
                let json_body = op.name != "import";
                assert_eq!(
                    post["responses"].get(status).is_some(),
                    json_body,
                    "{status}"
                );
            }
            let summary = post["summary"].as_str().expect("summary");
            if let Some(tool) = op.tool {
                assert!(summary.ends_with(&format!("(MCP: {tool})")), "{summary}");
            }
        }
    }
}
