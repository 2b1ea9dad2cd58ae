//! The notes `mnem import --format markdown ROOT` may read: `.md`, `.markdown` and `.txt`
//! files under ROOT (hidden entries skipped), and never anything outside it.
//!
//! A folder of notes is often someone else's (a cloned wiki, a shared drive), so what it
//! links to is not trusted: a link is followed only to a regular file inside ROOT (its
//! text is imported under the link's own path); a link that leaves ROOT, a broken link,
//! a linked folder (its files, inside ROOT, are read where they are) and anything that is
//! not a regular file (a FIFO would block the import, `/dev/zero` would never end) are
//! reported as problems and skipped. A note larger than [`MAX_NOTE_BYTES`] is refused
//! without being read whole. Files are opened without following a final link and
//! without blocking, and checked again on the open handle, so a file swapped for a link
//! or a FIFO after the walk is refused too.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::{Path, PathBuf};

use mnem_core::import::{Document, ImportProblem, Location};
use mnem_core::Timestamp;

use crate::Failure;

/// The largest note a folder import reads (8 MiB). Notes are split into fragments of at
/// most the evidence limit; a text file past this is a dump or a mistake, not a note.
pub const MAX_NOTE_BYTES: u64 = 8 << 20;

/// What a folder import found: the notes it read, and what it skipped and why.
#[derive(Debug, Default)]
pub struct Notes {
    pub documents: Vec<Document>,
    pub problems: Vec<ImportProblem>,
}

/// A note to read: `shown` is its path under the root (as stored), `open` the file whose
/// text it has (the resolved target for a link inside the root).
struct Candidate {
    shown: String,
    open: PathBuf,
}

/// The notes under `root` (or `root` itself when it names a file), in path order.
/// `now` dates a note whose modification time cannot be read.
pub fn read_notes(root: &Path, now: Timestamp) -> Result<Notes, Failure> {
    let cannot = |e: std::io::Error| Failure::Input(format!("cannot read {}: {e}", root.display()));
    let meta = std::fs::metadata(root).map_err(cannot)?;
    let mut notes = Notes::default();
    let mut candidates = Vec::new();
    if meta.is_dir() {
        let base = std::fs::canonicalize(root).map_err(cannot)?;
        walk(&base, &base, &mut candidates, &mut notes.problems).map_err(cannot)?;
    } else if meta.is_file() {
        // A file the user named themselves: read it (through a link, if it is one).
        let shown = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| root.display().to_string());
        let open = std::fs::canonicalize(root).map_err(cannot)?;
        candidates.push(Candidate { shown, open });
    } else {
        return Err(Failure::Input(format!(
            "cannot read {}: not a folder or a regular file",
            root.display()
        )));
    }
    candidates.sort_by(|a, b| a.shown.cmp(&b.shown));
    for candidate in candidates {
        match read_note(&candidate.open) {
            Ok((text, modified)) => notes.documents.push(Document {
                path: candidate.shown,
                text,
                modified: modified.unwrap_or(now),
            }),
            Err(reason) => notes.problems.push(problem(&candidate.shown, reason)),
        }
    }
    notes.problems.sort_by(|a, b| a.at.file.cmp(&b.at.file));
    Ok(notes)
}

fn problem(shown: &str, reason: impl Into<String>) -> ImportProblem {
    ImportProblem {
        at: Location::file(shown),
        reason: reason.into(),
    }
}

/// Collects the notes under `dir` (inside the canonical `root`); entries that cannot be
/// notes of this folder are problems.
fn walk(
    root: &Path,
    dir: &Path,
    found: &mut Vec<Candidate>,
    problems: &mut Vec<ImportProblem>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let shown = relative(root, &path);
        // `file_type` describes the entry itself: a link is seen as a link.
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(root, &path, found, problems)?;
            continue;
        }
        if !is_note_name(&path) && !kind.is_symlink() {
            continue;
        }
        if kind.is_symlink() {
            match std::fs::canonicalize(&path) {
                Err(_) if is_note_name(&path) => {
                    problems.push(problem(&shown, "a broken link: skipped"))
                }
                Err(_) => {}
                Ok(target) if !target.starts_with(root) => {
                    if is_note_name(&path) || target.is_dir() {
                        problems.push(problem(&shown, "a link that leaves the folder: skipped"));
                    }
                }
                Ok(target) if target.is_dir() => problems.push(problem(
                    &shown,
                    "a linked folder is not followed (its notes are read where they are)",
                )),
                Ok(target) if is_note_name(&path) => found.push(Candidate {
                    shown,
                    open: target,
                }),
                Ok(_) => {}
            }
        } else if kind.is_file() {
            found.push(Candidate { shown, open: path });
        } else {
            problems.push(problem(&shown, "not a regular file: skipped"));
        }
    }
    Ok(())
}

fn is_note_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "md" | "markdown" | "txt"))
}

/// `path` under `root`, `/`-separated.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The text of one note and its modification time; the reason it cannot be read.
fn read_note(path: &Path) -> Result<(String, Option<Timestamp>), String> {
    let file = open_no_follow(path).map_err(|e| format!("cannot open: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file: skipped".into());
    }
    if meta.len() > MAX_NOTE_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The size was checked on the open handle; `take` bounds a file still growing.
    file.take(MAX_NOTE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_NOTE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| format!("not readable as UTF-8 text: {}", e.utf8_error()))?;
    Ok((text, modified(&meta)))
}

fn too_large(bytes: u64) -> String {
    format!("is {bytes} bytes; notes larger than {MAX_NOTE_BYTES} bytes are not imported")
}

/// Opens `path` for reading without following a final link and without waiting for a
/// writer (a FIFO opens at once and is then refused as not a regular file).
#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// A file's modification time, to the microsecond.
pub fn modified(meta: &Metadata) -> Option<Timestamp> {
    let at = meta.modified().ok()?;
    let micros = at.duration_since(std::time::UNIX_EPOCH).ok()?.as_micros();
    Some(Timestamp::from_micros(i64::try_from(micros).ok()?))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn now() -> Timestamp {
        Timestamp::from_micros(1_700_000_000_000_000)
    }

    fn paths(notes: &Notes) -> Vec<&str> {
        notes.documents.iter().map(|d| d.path.as_str()).collect()
    }

    fn skipped(notes: &Notes) -> Vec<&str> {
        notes.problems.iter().map(|p| p.at.file.as_str()).collect()
    }

    #[test]
    fn links_that_leave_the_folder_are_skipped_and_reported() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "outside secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("notes");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.md"), "inside").unwrap();
        symlink(outside.path().join("secret.md"), root.join("secret.md")).unwrap();
        symlink(
            "../../../../../../../../etc/hostname",
            root.join("host.txt"),
        )
        .unwrap();
        symlink(outside.path(), root.join("elsewhere")).unwrap();
        let notes = read_notes(&root, now()).unwrap();
        assert_eq!(paths(&notes), ["a.md"]);
        assert_eq!(skipped(&notes), ["elsewhere", "host.txt", "secret.md"]);
        assert!(notes.documents.iter().all(|d| d.text == "inside"));
    }

    #[test]
    fn a_link_to_a_note_inside_the_folder_is_read_under_its_own_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/real.md"), "real text").unwrap();
        symlink("sub/real.md", dir.path().join("alias.md")).unwrap();
        symlink("sub", dir.path().join("linked")).unwrap();
        let notes = read_notes(dir.path(), now()).unwrap();
        assert_eq!(paths(&notes), ["alias.md", "sub/real.md"]);
        assert_eq!(skipped(&notes), ["linked"]);
    }

    #[test]
    fn devices_and_fifos_are_skipped_without_reading_or_blocking() {
        let dir = tempfile::tempdir().unwrap();
        symlink("/dev/zero", dir.path().join("zero.md")).unwrap();
        let fifo = dir.path().join("pipe.md");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        std::fs::write(dir.path().join("ok.md"), "fine").unwrap();
        let notes = read_notes(dir.path(), now()).unwrap();
        assert_eq!(paths(&notes), ["ok.md"]);
        assert_eq!(skipped(&notes), ["pipe.md", "zero.md"]);
    }

    #[test]
    fn a_note_over_the_size_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = File::create(dir.path().join("big.md")).unwrap();
        big.set_len(MAX_NOTE_BYTES + 1).unwrap();
        std::fs::write(dir.path().join("small.md"), "small").unwrap();
        let notes = read_notes(dir.path(), now()).unwrap();
        assert_eq!(paths(&notes), ["small.md"]);
        assert_eq!(skipped(&notes), ["big.md"]);
        assert!(notes.problems[0].reason.contains("larger than"));
    }

    #[test]
    fn a_named_fifo_is_refused_rather_than_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.md");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        assert!(read_notes(&fifo, now()).is_err());
    }
}
