//! `mnem._native`: the embedded store in-process for Python, and the `mnem` command line
//! ([`cli`], what the wheel's `mnem` command runs). One class, [`Store`], opens
//! a SQLite store as one team's profile and runs any operation by name on JSON text, the
//! same inputs and answers as the HTTP API (`mnem_api::Operations::call`). The Python
//! package `mnem` wraps it in typed methods, result classes and exception classes.
//!
//! Threading: every call releases the GIL while it runs, so Python threads may share one
//! `Store`; the store serialises its own writes.

use std::path::PathBuf;
use std::sync::Arc;

use mnem_api::{OpError, Operation, Operations};
use mnem_core::import::{read_chat, ChatSource};
use mnem_core::{Actor, Principal, Scope, Timestamp};
use mnem_embed::ProviderChoice;
use mnem_service::{ImportReport, Memory, IMPORT_BATCH, OWN_WRITE_EMBED_BUDGET};
use mnem_sqlite::SqliteStore;
use mnem_store::{GraphStore, ImportMode, SystemClock};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    _native,
    NativeError,
    PyException,
    "An operation refused or failed: args are (code, message, field or None)."
);

/// One team's profile on an embedded store.
#[pyclass(frozen)]
struct Store {
    ops: Operations<SqliteStore>,
    actor: Actor,
    runtime: tokio::runtime::Runtime,
}

#[pymethods]
impl Store {
    /// Opens (creating if need be) the store at `path` — the per-user default store when
    /// `None` — as `profile` of `team`. `embedder` is `builtin` (the model inside) or
    /// `none` (full-text recall only).
    #[new]
    #[pyo3(signature = (path, team, profile, embedder))]
    fn new(
        py: Python<'_>,
        path: Option<PathBuf>,
        team: String,
        profile: String,
        embedder: String,
    ) -> PyResult<Self> {
        let choice = match embedder.as_str() {
            "builtin" => ProviderChoice::Builtin,
            "none" => ProviderChoice::None,
            other => {
                return Err(invalid(
                    "embedder",
                    format!("`{other}`: use `builtin` or `none`"),
                ))
            }
        };
        let path = mnem_cli::embedded_store_path(path).map_err(|reason| invalid("path", reason))?;
        py.detach(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|err| internal(err.to_string()))?;
            let embedder = mnem_embed::build(&choice).map_err(|err| internal(err.to_string()))?;
            let (ops, actor) = runtime.block_on(async {
                let store = SqliteStore::open(&path, Arc::new(SystemClock))
                    .map_err(|err| invalid("path", format!("{}: {err}", path.display())))?;
                let actor = store
                    .open_profile(&team, &profile)
                    .await
                    .map_err(|err| invalid("team", err.to_string()))?;
                let memory = Memory::open(store, embedder)
                    .await
                    .map_err(|err| internal(err.to_string()))?;
                Ok::<_, PyErr>((Operations::new(Arc::new(memory)).via("python"), actor))
            })?;
            Ok(Store {
                ops,
                actor,
                runtime,
            })
        })
    }

    /// Runs `operation` (`recall`, `remember`, `show`, …) on the JSON text `input`;
    /// returns the answer as JSON text. After a write, what it wrote is embedded before
    /// the call returns (bounded), so the next recall finds it by meaning too.
    fn call(&self, py: Python<'_>, operation: &str, input: &str) -> PyResult<String> {
        let input: serde_json::Value =
            serde_json::from_str(input).map_err(|err| invalid("input", err.to_string()))?;
        py.detach(|| {
            self.runtime.block_on(async {
                let caller = Principal::local(self.actor);
                let answer = self
                    .ops
                    .call(&caller, operation, input)
                    .await
                    .map_err(refused)?;
                if Operation::named(operation).is_some_and(|op| op.writes) {
                    self.embed_own_writes().await?;
                }
                Ok(answer.to_string())
            })
        })
    }

    /// Imports a chat transcript (`mnem import --format chat`'s formats, e.g. one object
    /// `{"session": …, "messages": [{"role": …, "content": …}, …]}`) through the same
    /// reader and batched writer as that command: one turn per message, `role: content`,
    /// grouped by session, untimed turns a second apart from `start` (RFC 3339; default
    /// now). `scope` places every turn. Returns the import's report as JSON text; a
    /// message that could not be read is listed there under `failed`, the rest are kept.
    #[pyo3(signature = (transcript, scope=None, start=None))]
    fn import_chat(
        &self,
        py: Python<'_>,
        transcript: &str,
        scope: Option<&str>,
        start: Option<&str>,
    ) -> PyResult<String> {
        let scope = scope
            .map(Scope::parse)
            .transpose()
            .map_err(|err| invalid("scope", err.reason))?;
        let start = match start {
            Some(text) => {
                Timestamp::parse("start", text).map_err(|err| invalid("start", err.reason))?
            }
            None => self.ops.now(),
        };
        let source = ChatSource {
            file: "python".into(),
            default_session: "python".into(),
            start,
        };
        let read = read_chat(transcript, &source);
        let mut items = read.items;
        if let Some(scope) = scope {
            items
                .iter_mut()
                .for_each(|item| item.evidence.scope = scope.clone());
        }
        let mut report = ImportReport {
            failed: read.problems,
            ..ImportReport::default()
        };
        py.detach(|| {
            self.runtime.block_on(async {
                self.ops
                    .memory()
                    .import_items(&self.actor, items, IMPORT_BATCH, &mut report, &|_| {})
                    .await
                    .map_err(|err| refused(OpError::from(err)))?;
                self.embed_own_writes().await?;
                serde_json::to_string(&report).map_err(|err| internal(err.to_string()))
            })
        })
    }

    /// Imports a memory pack (the text `export` answers under `pack`) into this team:
    /// `trusted` keeps tiers and statuses as exported, otherwise claims arrive for review.
    /// Returns the import's report as JSON text.
    fn import_pack(&self, py: Python<'_>, pack: &str, trusted: bool) -> PyResult<String> {
        let mode = if trusted {
            ImportMode::Trusted
        } else {
            ImportMode::Review
        };
        py.detach(|| {
            self.runtime.block_on(async {
                let report = self
                    .ops
                    .memory()
                    .import_pack(&self.actor, pack, mode)
                    .await
                    .map_err(|err| refused(OpError::from(err)))?;
                self.embed_own_writes().await?;
                serde_json::to_string(&report).map_err(|err| internal(err.to_string()))
            })
        })
    }
}

impl Store {
    /// Embeds what this profile just wrote (bounded), so the next recall finds it by
    /// meaning too.
    async fn embed_own_writes(&self) -> PyResult<()> {
        self.ops
            .memory()
            .embed_own_writes(&self.actor, OWN_WRITE_EMBED_BUDGET)
            .await
            .map(|_| ())
            .map_err(|err| internal(err.to_string()))
    }
}

/// An operation's refusal as the exception the Python package maps to its classes.
fn refused(err: OpError) -> PyErr {
    PyErr::new::<NativeError, _>((
        err.class().code(),
        err.public_message(),
        err.field().map(str::to_string),
    ))
}

fn invalid(field: &str, reason: String) -> PyErr {
    PyErr::new::<NativeError, _>(("invalid_request", reason, Some(field.to_string())))
}

fn internal(reason: String) -> PyErr {
    PyErr::new::<NativeError, _>(("internal", reason, None::<String>))
}

/// Runs the `mnem` command line `argv` (program name first) in this process and returns
/// its exit status: the wheel's `mnem` command, so the wheel carries one copy of the
/// program and its model. The GIL is released for the whole run (`mnem serve` and
/// `mnem mcp` run until stopped).
#[pyfunction]
fn cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(move || mnem_cli::main_with(argv))
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<Store>()?;
    module.add_function(wrap_pyfunction!(cli, module)?)?;
    module.add("NativeError", module.py().get_type::<NativeError>())?;
    Ok(())
}
