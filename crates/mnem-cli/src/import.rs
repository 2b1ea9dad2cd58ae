//! `mnem import` for everything but memory packs: reads the input with its format's
//! reader (`mnem_core::import`, the eval's benchmark readers), then writes it through
//! `Memory::import_items` with a progress bar on stderr.

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use mnem_core::import::{
    read_chat, read_document, ChatSource, Document, ImportItem, ImportProblem, ImportRead, Location,
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
            // One clock reading: every file changed since the last import gets this
            // revision, newer than any earlier import's.
            let revision = memory.store().clock().now().as_micros();
            let into = scope.clone().unwrap_or_else(Scope::root);
            for doc in &documents {
                if memory.holds_document(actor, doc, &into).await? {
                    report.unchanged_documents += 1;
                } else {
                    match read_document(doc, args.chunk_bytes, revision) {
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
            let text = read(path)?;
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
            Ok(Input::Items(read_chat(&text, &source)))
        }
        ImportFormat::Markdown => {
            let (documents, problems) = read_folder(path)?;
            Ok(Input::Documents {
                documents,
                problems,
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

/// The notes under `root` (or `root` itself when it is a file): .md, .markdown and .txt
/// files, hidden folders skipped, in path order; a file that is not UTF-8 text is a
/// problem.
fn read_folder(root: &Path) -> Result<(Vec<Document>, Vec<ImportProblem>), Failure> {
    let meta = std::fs::metadata(root)
        .map_err(|e| Failure::Input(format!("cannot read {}: {e}", root.display())))?;
    let (base, files) = if meta.is_file() {
        let base = root.parent().unwrap_or(Path::new("")).to_path_buf();
        (base, vec![root.to_path_buf()])
    } else {
        let mut files = Vec::new();
        walk(root, &mut files)
            .map_err(|e| Failure::Input(format!("cannot read {}: {e}", root.display())))?;
        files.sort();
        (root.to_path_buf(), files)
    };
    let mut documents = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let relative = file
            .strip_prefix(&base)
            .unwrap_or(&file)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        match std::fs::read_to_string(&file) {
            Ok(text) => documents.push(Document {
                path: relative,
                text,
                modified: modified(&file).unwrap_or_else(now),
            }),
            Err(e) => problems.push(ImportProblem {
                at: Location::file(relative),
                reason: format!("not readable as UTF-8 text: {e}"),
            }),
        }
    }
    Ok((documents, problems))
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
            walk(&path, files)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "md" | "markdown" | "txt"))
        {
            files.push(path);
        }
    }
    Ok(())
}

/// A file's modification time, to the microsecond.
fn modified(path: &Path) -> Option<Timestamp> {
    let at = std::fs::metadata(path).ok()?.modified().ok()?;
    let micros = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros();
    Some(Timestamp::from_micros(i64::try_from(micros).ok()?))
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
