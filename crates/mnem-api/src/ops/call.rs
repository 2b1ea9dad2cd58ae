//! Every JSON operation by its name: for a transport that carries the name as data (the
//! Python bindings) rather than as a route or a tool. The input is parsed as the route's
//! body is, so a field the operation does not know is refused and named.

use mnem_core::{Principal, ValidationError};
use mnem_store::{GraphStore, SearchIndex};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{OpError, Operations};

/// Operations `call` does not carry, with why: a streamed import is a transport of its
/// own (bindings import through `remember` batches or a pack).
pub const NOT_CALLABLE: &[&str] = &["import"];

impl<S: GraphStore + SearchIndex + 'static> Operations<S> {
    /// Runs operation `name` (an [`crate::OPERATIONS`] name) on a JSON input.
    pub async fn call(
        &self,
        caller: &Principal,
        name: &str,
        input: Value,
    ) -> Result<Value, OpError> {
        macro_rules! dispatch {
            ($($name:literal => $op:ident,)+) => {
                match name {
                    $($name => self.$op(caller, parsed(input)?).await,)+
                    _ => Err(OpError::Invalid(ValidationError::new(
                        "operation",
                        format!("unknown operation `{name}`"),
                    ))),
                }
            };
        }
        dispatch! {
            "recall" => recall,
            "remember" => remember,
            "trace" => trace,
            "export" => export_pack,
            "hypotheses" => list_hypotheses,
            "hypothesis" => get_hypothesis,
            "resolve_hypothesis" => resolve_hypothesis,
            "retract" => retract,
            "release" => release,
            "feedback" => feedback,
            "quarantined" => quarantined,
            "correct" => correct,
            "forget" => forget,
            "explain" => explain,
            "show" => show,
            "status" => status,
            "scopes" => scopes,
        }
    }
}

/// An operation's input from JSON, parsed as the routes parse a body: a refusal says
/// where in the input it is ("evidence[0].observed_at: …") and names that field.
fn parsed<T: DeserializeOwned>(input: Value) -> Result<T, OpError> {
    serde_path_to_error::deserialize(input).map_err(|err| {
        let reason = err.to_string();
        let field = rejected_field(&reason).unwrap_or_else(|| "input".into());
        OpError::Invalid(ValidationError::new(field, reason))
    })
}

/// The input a refused body is about, as its own `field` (not only inside the message):
/// a path-aware parse (axum's, `serde_path_to_error`'s) puts the path to the offending
/// value, an unknown key included, before the message ("evidence[0].observed_at: …");
/// a missing field has no path and is named by serde ("missing field `query`").
pub fn rejected_field(text: &str) -> Option<String> {
    let detail = text.split_once("target type: ").map_or(text, |(_, d)| d);
    let (path, message) = match detail.split_once(": ") {
        Some((path, message)) if !path.contains(' ') => (path.trim_matches('.'), message),
        _ => ("", detail),
    };
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|marker| message.split_once(marker))
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(name, _)| name);
    match (path, named) {
        ("", named) => named.map(str::to_string),
        (path, _) => Some(path.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::rejected_field;

    #[test]
    fn a_rejection_names_its_field() {
        let prefix = "Failed to deserialize the JSON body into the target type: ";
        for (text, want) in [
            (
                "unknown field `team`, expected one of `query`",
                Some("team"),
            ),
            ("missing field `query` at line 1 column 2", Some("query")),
            (
                "evidence[0].observed_at: invalid type: integer `1`",
                Some("evidence[0].observed_at"),
            ),
            (
                "evidence[0].colour: unknown field `colour`, expected …",
                Some("evidence[0].colour"),
            ),
            ("expected value at line 1 column 1", None),
        ] {
            assert_eq!(
                rejected_field(&format!("{prefix}{text}")).as_deref(),
                want,
                "{text}"
            );
        }
    }
}
