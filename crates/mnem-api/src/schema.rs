//! Schemas as every client reads them: what schemars writes for Rust types, made
//! portable for the MCP tool list and the OpenAPI document.
//!
//! schemars names Rust's integer and float widths as formats (`uint`, `uint32`, `int64`,
//! `double`), which no JSON Schema vocabulary defines; code generators warn on them. And
//! it writes an `Option` field as a union with `null` (`"type": ["string", "null"]`, or
//! `anyOf` with a `{"type": "null"}` branch), which generators turn into a second,
//! "nullable" type for a field that is simply optional. Both are rewritten here; a field
//! left out means the same as before, and a `null` sent anyway is still read as absent.
//! An answer's schema keeps its `null` unions: there a `null` is really sent.
//! A `const` (the tag of a tagged union) becomes a one-word `enum`: the same constraint,
//! which OpenAPI 3.0 generators read (openapi-python-client drops a union member whose
//! property is a `const`).

use serde_json::{Map, Value};

/// Formats schemars writes for numbers, which carry no meaning beyond `type` and `minimum`.
const RUST_NUMBER_FORMATS: [&str; 12] = [
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "float", "double",
];

/// Rewrites `schema` in place: Rust number formats dropped, unions with `null` reduced to
/// the other member.
pub fn make_portable(schema: &mut Value) {
    rewrite(schema, true);
}

/// [`make_portable`] for the schema of an answer, which keeps the unions with `null` of
/// the fields it always sends (`null` included), and drops them from the fields it leaves
/// out when they have no value (not `required`): those are absent, never `null`.
pub fn make_portable_answer(schema: &mut Value) {
    rewrite(schema, false);
}

/// Drops the `null` member of each property `object` does not require.
fn drop_null_of_optional_fields(object: &mut Map<String, Value>) {
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if let (false, Value::Object(property)) = (required.contains(name), property) {
                drop_null_member(property);
            }
        }
    }
}

fn rewrite(schema: &mut Value, drop_null: bool) {
    match schema {
        Value::Object(object) => {
            drop_rust_format(object);
            if drop_null {
                drop_null_member(object);
            } else {
                drop_null_of_optional_fields(object);
            }
            const_as_enum(object);
            for value in object.values_mut() {
                rewrite(value, drop_null);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| rewrite(item, drop_null)),
        _ => {}
    }
}

fn drop_rust_format(object: &mut Map<String, Value>) {
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| RUST_NUMBER_FORMATS.contains(&format))
    {
        object.remove("format");
    }
}

fn const_as_enum(object: &mut Map<String, Value>) {
    if let Some(value) = object.remove("const") {
        object.insert("enum".into(), Value::Array(vec![value]));
    }
}

fn drop_null_member(object: &mut Map<String, Value>) {
    // "type": ["string", "null"] → "type": "string"
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".into(), only);
        }
    }
    // "anyOf": [{…}, {"type": "null"}] → the other member, merged into this schema (which
    // may hold a description beside the anyOf).
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(members)) = object.get_mut(key) else {
            continue;
        };
        if !members.iter().any(is_null) {
            continue;
        }
        members.retain(|m| !is_null(m));
        if let [Value::Object(only)] = members.as_mut_slice() {
            let only = std::mem::take(only);
            object.remove(key);
            for (k, v) in only {
                object.entry(k).or_insert(v);
            }
        }
    }
    // A `null`, empty-list or `false` default says no more than leaving the field out
    // (the server reads an absent field so), and every agent carries the tool list.
    let says_nothing = |v: &Value| {
        v.is_null() || *v == Value::Bool(false) || v.as_array().is_some_and(|a| a.is_empty())
    };
    if object.get("default").is_some_and(says_nothing) {
        object.remove("default");
    }
}

/// Whether `schema` still holds anything [`make_portable`] rewrites (for tests).
pub fn has_unportable(schema: &Value) -> bool {
    unportable(schema, true)
}

/// Whether `schema` still holds anything [`make_portable_answer`] rewrites anywhere (a Rust
/// number format, a `const`), for tests; `null` unions are an answer's to keep.
pub fn has_unportable_answer(schema: &Value) -> bool {
    unportable(schema, false)
}

fn unportable(schema: &Value, nullable_too: bool) -> bool {
    match schema {
        Value::Object(object) => {
            let format = object.get("format").and_then(Value::as_str);
            let nullable = match object.get("type") {
                Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
                Some(t) => t == "null",
                None => false,
            };
            format.is_some_and(|f| RUST_NUMBER_FORMATS.contains(&f))
                || (nullable && nullable_too)
                || object.contains_key("const")
                || object.values().any(|v| unportable(v, nullable_too))
        }
        Value::Array(items) => items.iter().any(|v| unportable(v, nullable_too)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_keeps_null_only_where_it_sends_null() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "contract": {"anyOf": [{"$ref": "#/$defs/Contract"}, {"type": "null"}]},
                "partial": {"type": ["boolean", "null"], "format": "uint8"},
                "count": {"type": "integer", "format": "uint"}
            },
            "required": ["contract", "count"]
        });
        make_portable_answer(&mut schema);
        assert_eq!(
            schema["properties"]["contract"]["anyOf"][1],
            json!({"type": "null"})
        );
        assert_eq!(schema["properties"]["partial"], json!({"type": "boolean"}));
        assert_eq!(schema["properties"]["count"], json!({"type": "integer"}));
    }

    #[test]
    fn rust_formats_and_null_unions_are_rewritten() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint", "minimum": 0},
                "score": {"type": "number", "format": "double"},
                "id": {"type": "string", "format": "uuid"},
                "order": {"description": "how", "anyOf": [{"$ref": "#/$defs/Order"}, {"type": "null"}]},
                "object": {"oneOf": [{"type": "string"}, {"type": "object"}]},
                "since": {"type": ["string", "null"], "default": null},
                "tag": {"type": "string", "const": "entity"}
            }
        });
        assert!(has_unportable(&schema));
        make_portable(&mut schema);
        assert!(!has_unportable(&schema), "{schema}");
        let p = &schema["properties"];
        assert_eq!(p["limit"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(p["score"], json!({"type": "number"}));
        assert_eq!(p["id"]["format"], "uuid", "standard formats stay");
        assert_eq!(
            p["order"],
            json!({"description": "how", "$ref": "#/$defs/Order"})
        );
        assert_eq!(
            p["object"]["oneOf"].as_array().map(Vec::len),
            Some(2),
            "real unions stay"
        );
        assert_eq!(p["since"], json!({"type": "string"}));
        assert_eq!(p["tag"], json!({"type": "string", "enum": ["entity"]}));
    }
}
