use thiserror::Error;

/// Input that breaks the contract, named by the field that carries it so a caller (or a
/// CLI user) can fix the one thing that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    pub field: String,
    pub reason: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Text holding U+0000 is refused on every path (CONTRACT §"Text"): PostgreSQL's `text`
/// cannot store it, so one backend would refuse what the other stored; a NUL in memory
/// text is an encoding accident, never words, so it is refused by name rather than
/// silently dropped or replaced.
pub fn refuse_nul(field: &str, text: &str) -> Result<(), ValidationError> {
    match text.find('\0') {
        None => Ok(()),
        Some(at) => Err(ValidationError::new(
            field,
            format!("holds a NUL character (U+0000) at byte {at}"),
        )),
    }
}

/// The first string in `value` (keys included) holding U+0000, named as a field path
/// (`relationships[2].subject.name`) under `prefix`; a whole request checked at once.
pub fn nul_in_json(value: &serde_json::Value, prefix: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) if s.contains('\0') => Some(prefix.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_in_json(v, &format!("{prefix}[{i}]"))),
        Value::Object(fields) => fields.iter().find_map(|(k, v)| {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            if k.contains('\0') {
                Some(path)
            } else {
                nul_in_json(v, &path)
            }
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_is_refused_with_its_field_and_place() {
        let err = refuse_nul("content", "ab\0c").unwrap_err();
        assert_eq!(err.field, "content");
        assert!(err.reason.contains("byte 2"));
        assert!(refuse_nul("content", "plain").is_ok());
    }

    #[test]
    fn a_nul_deep_in_a_request_is_named_by_its_path() {
        let value =
            serde_json::json!({"evidence": [{"content": "ok"}, {"labels": ["a", "b\u{0}"]}]});
        assert_eq!(
            nul_in_json(&value, "").as_deref(),
            Some("evidence[1].labels[1]")
        );
        assert_eq!(nul_in_json(&serde_json::json!({"a": ["x"]}), ""), None);
    }
}
