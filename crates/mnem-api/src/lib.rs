//! The operations layer: what every transport offers, written once. MCP tools, the HTTP
//! JSON API and the CLI parse into these inputs (JSON Schemas that refuse unknown fields,
//! errors that name the field), call [`Operations`], and map [`OpError`] classes to their
//! own codes, so no transport holds a rule another lacks. [`OPERATIONS`] names each
//! operation once, with its MCP tool and whether it writes.

mod input;
mod names;
mod ops;

pub use input::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, TraceInput,
    DEFAULT_HELD_LISTED, MAX_PACK_BYTES,
};
pub use names::{Operation, OPERATIONS};
pub use ops::{OpError, OpErrorClass, Operations, RecallObserver};
