//! The operations layer: what the network transports offer, written once. MCP tools and
//! the HTTP JSON API parse into these inputs (JSON Schemas that refuse unknown fields,
//! errors that name the field), call [`Operations`], and map [`OpError`] classes to their
//! own codes, so neither holds a rule the other lacks. (The CLI reaches them through
//! `mnem mcp` and `mnem serve`; its own commands still build core queries from flags.) [`OPERATIONS`] names each
//! operation once, with its MCP tool and whether it writes.

mod input;
mod names;
mod ops;

pub use input::{
    CorrectInput, ExportInput, ForgetInput, GetHypothesisInput, ListHypothesesInput,
    QuarantinedInput, RecallInput, ReleaseInput, ResolveHypothesisInput, RetractInput, ShowInput,
    StatusInput, TraceInput, DEFAULT_HELD_LISTED, MAX_PACK_BYTES,
};
pub use names::{Operation, OPERATIONS};
pub use ops::{OpError, OpErrorClass, Operations, RecallObserver};
