//! Notes and documents: a Markdown or text file cut into fragments on headings and
//! paragraphs, each under a byte limit. A fragment carries its section's heading lines
//! (so "# Atlas" and "## Restore" stay with the steps under them), `source_key` the
//! file's relative path, `observed_at` its modification time, `source_revision` the caller's revision
//! ([`Document::revision_after`]),
//! and a `sha256:<hash of the file>` ref by which an unchanged file is recognised.
//! Front matter `tags:` (or `labels:`) become labels.

use sha2::{Digest, Sha256};

use super::{ImportItem, ImportProblem, Location};
use crate::text::floor_char_boundary;
use crate::{NewEvidence, Ref, SourceType, Timestamp};

/// The largest fragment, in bytes, unless the caller says otherwise.
pub const DEFAULT_CHUNK_BYTES: usize = 1_500;

/// A file to import, as the caller read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Relative to the imported folder, with `/` separators.
    pub path: String,
    pub text: String,
    pub modified: Timestamp,
}

impl Document {
    /// The ref every fragment of this exact text carries.
    pub fn content_ref(&self) -> Ref {
        Ref::new("sha256", hex(&Sha256::digest(self.text.as_bytes())))
    }

    /// The revision to import this file's text as, given the newest revision stored for
    /// its path: its modification time (microseconds), or one past the stored revision
    /// when that is not older (a file restored with an old time must still supersede
    /// what it replaces, never be born superseded). It depends only on the file and the
    /// store, not on when the import runs, so two imports of the same file at once write
    /// the same fragments and the second is a replay, not a spurious revision.
    pub fn revision_after(&self, newest_stored: Option<i64>) -> i64 {
        let own = self.modified.as_micros();
        newest_stored.map_or(own, |newest| own.max(newest.saturating_add(1)))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A document's fragments and the labels its front matter gives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunked {
    pub labels: Vec<String>,
    pub chunks: Vec<String>,
}

/// The evidence items of `doc` at `revision`, fragments at most `max_bytes` long; a file
/// with no text is a problem (nothing to remember).
pub fn read_document(
    doc: &Document,
    max_bytes: usize,
    revision: i64,
) -> Result<Vec<ImportItem>, ImportProblem> {
    let chunked = chunk_markdown(&doc.text, max_bytes);
    if chunked.chunks.is_empty() {
        return Err(ImportProblem {
            at: Location::file(&doc.path),
            reason: "no text to remember".into(),
        });
    }
    let content_ref = doc.content_ref();
    Ok(chunked
        .chunks
        .into_iter()
        .map(|chunk| {
            let mut evidence = NewEvidence::new(chunk);
            evidence.kind = Some("document".into());
            evidence.source_type = SourceType::Document;
            evidence.source = doc.path.clone();
            evidence.source_key = Some(doc.path.clone());
            evidence.source_revision = Some(revision);
            evidence.observed_at = Some(doc.modified);
            evidence.labels = chunked.labels.clone();
            evidence.refs = vec![content_ref.clone()];
            ImportItem {
                at: Location::file(&doc.path),
                evidence,
            }
        })
        .collect())
}

/// Cuts Markdown into fragments of at most `max_bytes`: a heading starts a new fragment
/// and leads every fragment of its section, under the headings it sits below; paragraphs (a fenced code block is one) are
/// packed whole while they fit, and one too long on its own is cut at line, then
/// sentence, then character boundaries.
pub fn chunk_markdown(text: &str, max_bytes: usize) -> Chunked {
    let max_bytes = max_bytes.max(64);
    let (labels, body) = front_matter(text);
    let mut chunks = Vec::new();
    for section in sections(body) {
        let heading = bounded_heading(&section.heading, max_bytes / 2);
        let heading = heading.as_str();
        let before = chunks.len();
        // Room left for the paragraphs once the heading leads the fragment.
        let room = max_bytes - heading.len() - 2;
        let mut current = String::new();
        let flush = |current: &mut String, chunks: &mut Vec<String>| {
            if !current.is_empty() {
                chunks.push(lead(heading, current));
                current.clear();
            }
        };
        for paragraph in section.paragraphs {
            for piece in split_to_fit(&paragraph, room) {
                if !current.is_empty() && current.len() + 2 + piece.len() > room {
                    flush(&mut current, &mut chunks);
                }
                if !current.is_empty() {
                    current.push_str("\n\n");
                }
                current.push_str(&piece);
            }
        }
        flush(&mut current, &mut chunks);
        if chunks.len() == before && !heading.is_empty() && section.only_heading {
            // A heading alone still says something ("# Atlas").
            chunks.push(heading.to_string());
        }
    }
    Chunked { labels, chunks }
}

/// The heading trail if it takes at most `max` bytes, else its innermost line cut to fit.
fn bounded_heading(trail: &str, max: usize) -> String {
    if trail.len() <= max {
        return trail.to_string();
    }
    let last = trail.lines().last().unwrap_or_default();
    last[..floor_char_boundary(last, max)].to_string()
}

fn lead(heading: &str, body: &str) -> String {
    if heading.is_empty() {
        body.to_string()
    } else {
        format!("{heading}\n\n{body}")
    }
}

struct Section {
    /// The heading lines above the section's text, outermost first ("# Atlas\n## Restore").
    heading: String,
    paragraphs: Vec<String>,
    only_heading: bool,
}

/// The body's sections: text before the first heading, then one per heading, each led
/// by its heading and the headings it is under; paragraphs split on blank lines outside
/// code fences.
fn sections(body: &str) -> Vec<Section> {
    let mut out = vec![Section {
        heading: String::new(),
        paragraphs: Vec::new(),
        only_heading: false,
    }];
    let mut trail: Vec<(usize, &str)> = Vec::new();
    let mut paragraph: Vec<&str> = Vec::new();
    let mut fenced = false;
    let end = |paragraph: &mut Vec<&str>, out: &mut Vec<Section>| {
        if !paragraph.is_empty() {
            let text = paragraph.join("\n").trim_end().to_string();
            if !text.trim().is_empty() {
                if let Some(last) = out.last_mut() {
                    last.paragraphs.push(text);
                }
            }
            paragraph.clear();
        }
    };
    for line in body.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            paragraph.push(line);
            continue;
        }
        if fenced {
            paragraph.push(line);
            continue;
        }
        if let Some(level) = heading_level(trimmed) {
            end(&mut paragraph, &mut out);
            trail.retain(|(outer, _)| *outer < level);
            trail.push((level, line.trim()));
            out.push(Section {
                heading: trail.iter().map(|(_, h)| *h).collect::<Vec<_>>().join("\n"),
                paragraphs: Vec::new(),
                only_heading: true,
            });
            continue;
        }
        if line.trim().is_empty() {
            end(&mut paragraph, &mut out);
        } else {
            paragraph.push(line);
        }
    }
    end(&mut paragraph, &mut out);
    // A heading whose subsection follows at once leads that subsection's fragments: it
    // needs none of its own.
    let parents: Vec<bool> = out
        .windows(2)
        .map(|pair| {
            pair[1]
                .heading
                .starts_with(&format!("{}\n", pair[0].heading))
        })
        .chain([false])
        .collect();
    for (section, parent) in out.iter_mut().zip(parents) {
        if parent {
            section.only_heading = false;
        }
    }
    out
}

/// The level of an ATX heading (`# ` to `###### `).
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|c| *c == '#').count();
    ((1..=6).contains(&hashes) && line[hashes..].starts_with([' ', '\t'])).then_some(hashes)
}

/// A paragraph as pieces of at most `room` bytes: whole if it fits, else cut after
/// lines, then after sentences, then at a character boundary.
fn split_to_fit(paragraph: &str, room: usize) -> Vec<String> {
    if paragraph.len() <= room {
        return vec![paragraph.to_string()];
    }
    let mut pieces = Vec::new();
    let mut current = String::new();
    for unit in units(paragraph) {
        if !current.is_empty() && current.len() + unit.len() > room {
            pieces.push(current.trim_end().to_string());
            current.clear();
        }
        let mut unit = unit;
        while unit.len() > room {
            let cut =
                floor_char_boundary(unit, room).max(unit.chars().next().map_or(1, char::len_utf8));
            pieces.push(unit[..cut].to_string());
            unit = &unit[cut..];
        }
        current.push_str(unit);
    }
    if !current.trim().is_empty() {
        pieces.push(current.trim_end().to_string());
    }
    pieces.retain(|p| !p.trim().is_empty());
    pieces
}

/// A paragraph cut after each line end and each sentence end (`. `, `! `, `? `), with
/// the separators kept so the pieces join back to the paragraph.
fn units(paragraph: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = paragraph.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        let sentence_end =
            matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_some_and(|n| *n == b' ');
        if *b == b'\n' || sentence_end {
            let end = if sentence_end { i + 2 } else { i + 1 };
            out.push(&paragraph[start..end]);
            start = end;
        }
    }
    if start < paragraph.len() {
        out.push(&paragraph[start..]);
    }
    out
}

/// The labels of a leading `---` front matter block (`tags:` or `labels:`, inline
/// `[a, b]`, `a, b`, or `- a` items below) and the text after it.
fn front_matter(text: &str) -> (Vec<String>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (Vec::new(), text);
    };
    let Some(close) = rest
        .match_indices("\n---")
        .map(|(i, _)| i)
        .find(|&i| matches!(rest[i + 4..].chars().next(), None | Some('\n' | '\r')))
    else {
        return (Vec::new(), text);
    };
    let block = &rest[..close];
    let body = rest[close + 4..].trim_start_matches(['\r', '\n']);
    let mut labels = Vec::new();
    let mut in_list = false;
    for line in block.lines() {
        let (key, value) = match line.split_once(':') {
            Some((key, value)) if !line.starts_with([' ', '\t', '-']) => (key.trim(), value),
            _ => {
                if in_list {
                    if let Some(item) = line.trim().strip_prefix('-') {
                        labels.push(unquote(item));
                    }
                }
                continue;
            }
        };
        in_list = matches!(key, "tags" | "labels");
        if in_list {
            let value = value.trim().trim_start_matches('[').trim_end_matches(']');
            labels.extend(value.split(',').map(unquote));
        }
    }
    labels.retain(|l| !l.is_empty());
    labels.sort();
    labels.dedup();
    (labels, body)
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches(['"', '\'']).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lead_their_fragments_and_paragraphs_pack_under_the_limit() {
        let text = "Intro line.\n\n# Atlas\n\n## Setup\n\nInstall Redis.\n\nRun `make`.\n\n## Restore\n\nStop the workers.\n\n## Owners\n## Next\n";
        let chunked = chunk_markdown(text, 1_500);
        assert_eq!(
            chunked.chunks,
            vec![
                "Intro line.",
                "# Atlas\n## Setup\n\nInstall Redis.\n\nRun `make`.",
                "# Atlas\n## Restore\n\nStop the workers.",
                "# Atlas\n## Owners",
                "# Atlas\n## Next",
            ]
        );
    }

    #[test]
    fn a_long_section_is_cut_and_every_piece_keeps_its_heading_and_the_limit() {
        let sentence = "The restore takes about ten minutes per shard. ";
        let text = format!(
            "## Restore\n\n{}\n\n{}",
            sentence.repeat(20),
            sentence.repeat(3)
        );
        let chunked = chunk_markdown(&text, 300);
        assert!(chunked.chunks.len() > 3, "{:?}", chunked.chunks);
        for chunk in &chunked.chunks {
            assert!(chunk.len() <= 300, "{} bytes", chunk.len());
            assert!(chunk.starts_with("## Restore\n\n"), "{chunk}");
        }
        let body: String = chunked
            .chunks
            .iter()
            .map(|c| c.trim_start_matches("## Restore\n\n").replace("\n\n", " "))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(body.matches("ten minutes").count(), 23, "nothing lost");
    }

    #[test]
    fn a_heading_trail_longer_than_half_the_limit_is_cut_and_fragments_keep_the_limit() {
        let text = format!(
            "# {}\n## {}\n\n{}",
            "T".repeat(80),
            "S".repeat(80),
            "word ".repeat(60)
        );
        let chunked = chunk_markdown(&text, 128);
        assert!(chunked.chunks.len() > 2);
        for chunk in &chunked.chunks {
            assert!(chunk.len() <= 128, "{} bytes: {chunk}", chunk.len());
            assert!(chunk.starts_with("## SSS"), "{chunk}");
        }
    }

    #[test]
    fn a_fence_is_one_paragraph_and_its_hashes_are_no_heading() {
        let text = "## Script\n\n```sh\n# not a heading\n\necho hi\n```\n";
        let chunked = chunk_markdown(text, 1_500);
        assert_eq!(
            chunked.chunks,
            vec!["## Script\n\n```sh\n# not a heading\n\necho hi\n```"]
        );
    }

    #[test]
    fn a_word_longer_than_the_limit_is_cut_at_character_boundaries() {
        let chunked = chunk_markdown(&"é".repeat(200), 64);
        assert!(chunked.chunks.iter().all(|c| c.len() <= 64));
        assert_eq!(chunked.chunks.concat(), "é".repeat(200));
    }

    #[test]
    fn front_matter_tags_become_labels_and_leave_the_text() {
        let text = "---\ntitle: Runbook\ntags: [ops, \"atlas\"]\nlabels:\n  - oncall\n  - ops\n---\n# Runbook\n\nPage the on-call.\n";
        let chunked = chunk_markdown(text, 1_500);
        assert_eq!(chunked.labels, vec!["atlas", "oncall", "ops"]);
        assert_eq!(chunked.chunks, vec!["# Runbook\n\nPage the on-call."]);
        let plain = chunk_markdown("---\nnot front matter", 1_500);
        assert_eq!(plain.labels, Vec::<String>::new());
        assert_eq!(plain.chunks, vec!["---\nnot front matter"]);
    }

    #[test]
    fn a_files_revision_is_its_time_unless_the_store_holds_a_later_one() {
        let doc = Document {
            path: "a.md".into(),
            text: "x".into(),
            modified: Timestamp::from_micros(5_000),
        };
        assert_eq!(doc.revision_after(None), 5_000);
        assert_eq!(doc.revision_after(Some(4_000)), 5_000);
        assert_eq!(doc.revision_after(Some(5_000)), 5_001);
        assert_eq!(doc.revision_after(Some(9_000)), 9_001);
    }

    #[test]
    fn a_document_is_fragments_of_one_source_revision_with_its_content_ref() {
        let doc = Document {
            path: "ops/runbook.md".into(),
            text: "# Runbook\n\nPage the on-call.\n".into(),
            modified: Timestamp::from_micros(1_700_000_000_000_000),
        };
        let items = read_document(&doc, 1_500, 42).unwrap();
        assert_eq!(items.len(), 1);
        let e = &items[0].evidence;
        assert_eq!(e.source_key.as_deref(), Some("ops/runbook.md"));
        assert_eq!(e.source_revision, Some(42));
        assert_eq!(e.observed_at, Some(doc.modified));
        assert_eq!(e.source_type, SourceType::Document);
        assert_eq!(e.refs, vec![doc.content_ref()]);
        assert_eq!(doc.content_ref().id.len(), 64);
        let empty = Document {
            text: "\n\n".into(),
            ..doc
        };
        assert_eq!(
            read_document(&empty, 1_500, 1).unwrap_err().reason,
            "no text to remember"
        );
    }
}
