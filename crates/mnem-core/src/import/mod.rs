//! Readers that turn what people already have — chat transcripts, folders of notes —
//! into evidence items to write. Pure: callers read the files and write the items; a
//! reader only parses, chunks and reports what it could not read, where.

mod chat;
mod markdown;

use std::fmt;

use serde::Serialize;

use crate::NewEvidence;

pub use chat::{read_chat, read_chat_bytes, ChatLines, ChatSource};
pub use markdown::{chunk_markdown, read_document, Chunked, Document, DEFAULT_CHUNK_BYTES};

/// Where an item or a problem is in the input: a file, and a line of it when the format
/// has lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Location {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Location {
    pub fn file(file: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line: None,
        }
    }

    pub fn line(file: impl Into<String>, line: usize) -> Self {
        Self {
            file: file.into(),
            line: Some(line),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{} line {line}", self.file),
            None => f.write_str(&self.file),
        }
    }
}

/// Something that could not be read or written, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImportProblem {
    pub at: Location,
    pub reason: String,
}

/// One item to write, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportItem {
    pub at: Location,
    pub evidence: NewEvidence,
}

/// What a reader made of its input: the items in input order, and the problems.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportRead {
    pub items: Vec<ImportItem>,
    pub problems: Vec<ImportProblem>,
}

impl ImportRead {
    fn problem(&mut self, at: Location, reason: impl Into<String>) {
        self.problems.push(ImportProblem {
            at,
            reason: reason.into(),
        });
    }
}
