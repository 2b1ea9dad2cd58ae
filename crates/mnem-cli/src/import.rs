//! `mnem import` for everything but memory packs: reads the input with its format's
//! reader (`mnem_core::import`, the eval's benchmark readers), then writes it through
//! `Memory::import_items` with a progress bar on stderr.

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use mnem_core::import::{
    read_chat_bytes, read_document, ChatSource, Document, ImportItem, ImportProblem, ImportRead,
    Location,
};
use mnem_core::{Actor, Clock, Scope, Timestamp};
use mnem_service::{ImportReport, Memory};
use mnem_store::{GraphStore, SearchIndex, SystemClock};

use crate::args::{ImportArgs, ImportFormat};
use crate::{read_text, Failure};

/// What a format's reader made of the input.
enum Input {
    Items(ImportRead),
    Documents {
        documents: Vec<Document>,
        problems: Vec<ImportProblem>,
    },
}

/// Reads, checks and writes one import; the report says what happened to every item.
pub async fn import<S: GraphStore + SearchIndex>(
    memory: &Memory<S>,
    actor: &Actor,
    args: &ImportArgs,
) -> Result<ImportReport, Failure> {
    let scope = args
        .scope
        .as_deref()
        .map(Scope::parse)
        .transpose()
        .map_err(|e| Failure::Input(e.to_string()))?;
    let input = read_input(args)?;
    let problems = match &input {
        Input::Items(read) => &read.problems,
        Input::Documents { problems, .. } => problems,
    };
    if args.strict && !problems.is_empty() {
        let listed: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.at, p.reason))
            .collect();
        return Err(Failure::Input(format!(
            "nothing imported (--strict): {}",
            listed.join("; ")
        )));
    }
    let dress = |mut items: Vec<ImportItem>| {
        for item in &mut items {
            if let Some(scope) = &scope {
                item.evidence.scope = scope.clone();
            }
            item.evidence.labels.extend(args.labels.iter().cloned());
        }
        items
    };
    let mut report = ImportReport::default();
    match input {
        Input::Items(read) => {
            report.failed = read.problems;
            let bar = progress(read.items.len() as u64, "items");
            let advance = |n: usize| bar.inc(n as u64);
            memory
                .import_items(actor, dress(read.items), args.batch, &mut report, &advance)
                .await?;
            bar.finish_and_clear();
        }
        Input::Documents {
            documents,
            problems,
        } => {
            report.failed = problems;
            let bar = progress(documents.len() as u64, "files");
            let into = scope.clone().unwrap_or_else(Scope::root);
            for doc in &documents {
                // The stored revision is read before the unchanged check: another import
                // of this file that lands in between is then seen as holding it, and
                // one that has not landed writes the same revision as this one (a
                // replay), never a spurious newer revision.
                let newest = memory.store().newest_revision(actor, &doc.path).await?;
                if memory.holds_document(actor, doc, &into).await? {
                    report.unchanged_documents += 1;
                } else {
                    match read_document(doc, args.chunk_bytes, doc.revision_after(newest)) {
                        Ok(items) => {
                            memory
                                .import_items(actor, dress(items), args.batch, &mut report, &|_| {})
                                .await?
                        }
                        Err(problem) => report.failed.push(problem),
                    }
                }
                bar.inc(1);
            }
            bar.finish_and_clear();
        }
    }
    Ok(report)
}

fn read_input(args: &ImportArgs) -> Result<Input, Failure> {
    let path = &args.path;
    let name = display_name(path);
    match args.format {
        ImportFormat::Pack => Err(Failure::Runtime("packs are imported by main".into())),
        ImportFormat::Chat => {
            let bytes = read_bytes(path)?;
            let start = match &args.start {
                Some(time) => {
                    Timestamp::parse("start", time).map_err(|e| Failure::Input(e.to_string()))?
                }
                None => modified(path).unwrap_or_else(now),
            };
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .filter(|s| s != "-")
                .unwrap_or_else(|| "stdin".into());
            let source = ChatSource {
                file: name,
                default_session: stem,
                start,
            };
            Ok(Input::Items(read_chat_bytes(&bytes, &source)))
        }
        ImportFormat::Markdown => {
            let notes = crate::notes::read_notes(path, now())?;
            Ok(Input::Documents {
                documents: notes.documents,
                problems: notes.problems,
            })
        }
        ImportFormat::Longmemeval | ImportFormat::Locomo => {
            let text = read(path)?;
            let dataset = if args.format == ImportFormat::Locomo {
                mnem_eval::locomo::parse(&text, None)
            } else {
                mnem_eval::longmemeval::parse(&text, None)
            }
            .map_err(|e| Failure::Input(format!("{name}: {e}")))?;
            let items = dataset
                .haystacks
                .iter()
                .flat_map(|h| &h.items)
                .map(|item| ImportItem {
                    at: Location::file(format!("{name} {}", item.id)),
                    evidence: item.evidence(dataset.name),
                })
                .collect();
            Ok(Input::Items(ImportRead {
                items,
                problems: Vec::new(),
            }))
        }
    }
}

/// The bytes of a file, or of standard input for `-` (a reader reports lines that are
/// not UTF-8 where they are).
fn read_bytes(path: &Path) -> Result<Vec<u8>, Failure> {
    let read = if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes).map(|_| bytes)
    } else {
        std::fs::read(path)
    };
    read.map_err(|e| Failure::Input(format!("cannot read {}: {e}", display_name(path))))
}

/// The text of a file, or of standard input for `-`.
fn read(path: &Path) -> Result<String, Failure> {
    if path.as_os_str() == "-" {
        return read_text("-");
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", path.display())))
}

fn display_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".into()
    } else {
        path.display().to_string()
    }
}

/// A file's modification time, to the microsecond.
fn modified(path: &Path) -> Option<Timestamp> {
    crate::notes::modified(&std::fs::metadata(path).ok()?)
}

/// The wall clock, as the store reads it.
fn now() -> Timestamp {
    SystemClock.now()
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
fn progress(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(&format!(
        "{{bar:40}} {{pos}}/{{len}} {what} ({{per_sec}}, {{eta}} left)"
    )) {
        bar.set_style(style);
    }
    bar
}
