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
        }
    }
}

/// An operation's input from JSON; what serde refuses names the field when it can.
fn parsed<T: DeserializeOwned>(input: Value) -> Result<T, OpError> {
    serde_json::from_value(input).map_err(|err| {
        let reason = err.to_string();
        // serde names an unknown or missing field in backticks: the first is the field.
        let field = reason
            .split('`')
            .nth(1)
            .filter(|_| reason.contains("field"))
            .unwrap_or("input")
            .to_string();
        OpError::Invalid(ValidationError::new(field, reason))
    })
}
