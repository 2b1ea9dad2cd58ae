//! The operations layer: every operation's rules, written once for every transport.
//! [`Operations`] has a typed method per operation (core types in, service results out)
//! that the CLI calls with its typed flags, and a JSON method per operation that MCP tools
//! and the HTTP API call: it parses an input (JSON Schemas that refuse unknown fields,
//! errors that name the field), calls the typed method and encodes the result. Transports
//! map [`OpError`] classes to their own codes, so none holds a rule another lacks.
//! [`OPERATIONS`] names each operation once, with its MCP tool and whether it writes.

mod input;
mod names;
mod ops;
pub mod output;
pub mod schema;

pub use input::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ScopesInput,
    ShowInput, StatusInput, TraceInput, DEFAULT_HELD_LISTED, DEFAULT_SCOPES_LISTED, MAX_PACK_BYTES,
};
pub use names::{Operation, OPERATIONS};
pub use ops::{
    rejected_field, OpError, OpErrorClass, Operations, RecallObserver, Retraction, NOT_CALLABLE,
};
