//! The text screening reads: what a reader sees (invisible characters dropped,
//! full-width letters folded), what is hidden from them (text smuggled in Unicode tag
//! characters), lowercase words with their offsets, and the spans that are quoted rather
//! than said.

use std::ops::Range;

/// Characters that change nothing a reader sees: zero-width spaces and joiners,
/// direction marks and bidirectional controls, word joiners and invisible operators,
/// the soft hyphen, variation selectors, filler characters, tag characters and control
/// characters other than tab and line breaks. They are dropped before matching so they
/// can neither hide a phrase (`ig\u{200B}nore`) nor be a reason to hold ordinary text
/// pasted from a web page; the stored text keeps them.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}'                    // soft hyphen
        | '\u{034F}'                  // combining grapheme joiner
        | '\u{061C}'                  // Arabic letter mark
        | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
        | '\u{17B4}' | '\u{17B5}'     // Khmer inherent vowels
        | '\u{180B}'..='\u{180F}'     // Mongolian variation selectors
        | '\u{200B}'..='\u{200F}'     // zero-width space, (non-)joiner, direction marks
        | '\u{202A}'..='\u{202E}'     // bidirectional embeddings and overrides
        | '\u{2060}'..='\u{206F}'     // word joiner, invisible operators, isolates
        | '\u{FE00}'..='\u{FE0F}'     // variation selectors
        | '\u{FEFF}'                  // zero-width no-break space
        | '\u{E0000}'..='\u{E007F}'   // tag characters
        | '\u{E0100}'..='\u{E01EF}'   // variation selectors supplement
    ) || (c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
}

/// Full-width ASCII (`ｉｇｎｏｒｅ`) folded to ASCII, so a look-alike spelling matches.
fn fold_width(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        other => other,
    }
}

/// The text as a reader sees it.
pub(super) fn visible(text: &str) -> String {
    text.chars()
        .filter(|c| !is_invisible(*c))
        .map(fold_width)
        .collect()
}

const TAG_BASE: u32 = 0xE0000;
const CANCEL_TAG: char = '\u{E007F}';
const BLACK_FLAG: char = '\u{1F3F4}';

/// Text written in Unicode tag characters (U+E0020..U+E007E mirror printable ASCII):
/// invisible on screen, read by a model ("ASCII smuggling"). Emoji flag sequences — up
/// to seven lowercase tag letters or digits after U+1F3F4 or ended by the cancel tag
/// U+E007F (🏴 for Scotland; copy-paste and truncation often lose the base emoji and keep
/// the tags) — are the tags' one ordinary use and are skipped.
pub(super) fn smuggled(text: &str) -> String {
    let mut hidden = String::new();
    let mut run = String::new();
    let mut after_flag = false;
    let mut previous = '\0';
    let flush = |run: &mut String, flag: bool, hidden: &mut String| {
        let is_flag_sequence = flag
            && run.len() <= 7
            && run
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !run.is_empty() && !is_flag_sequence {
            if !hidden.is_empty() {
                hidden.push(' ');
            }
            hidden.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        let code = c as u32;
        if (TAG_BASE + 0x20..=TAG_BASE + 0x7E).contains(&code) {
            if run.is_empty() {
                after_flag = previous == BLACK_FLAG;
            }
            run.push(char::from_u32(code - TAG_BASE).unwrap_or(' '));
        } else if c == CANCEL_TAG {
            flush(&mut run, true, &mut hidden);
        } else if !(TAG_BASE..=TAG_BASE + 0x7F).contains(&code) {
            flush(&mut run, after_flag, &mut hidden);
        }
        previous = c;
    }
    flush(&mut run, after_flag, &mut hidden);
    hidden
}

/// A lowercase word and where it starts in the text it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// Byte offsets of the word in the text it was read from.
    pub at: usize,
    pub end: usize,
    pub text: String,
}

/// Alphanumeric runs, lowercased; punctuation and spacing between them are ignored.
pub(super) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut current: Option<Word> = None;
    for (at, c) in text.char_indices() {
        if c.is_alphanumeric() {
            let word = current.get_or_insert_with(|| Word {
                at,
                end: at,
                text: String::new(),
            });
            word.text.extend(c.to_lowercase());
            word.end = at + c.len_utf8();
        } else if let Some(word) = current.take() {
            out.push(word);
        }
    }
    out.extend(current);
    out
}

/// Quotation pairs: a span between them is a mention, not an instruction.
const QUOTE_PAIRS: &[(char, char)] = &[
    ('"', '"'),
    ('`', '`'),
    ('\u{201C}', '\u{201D}'), // “ ”
    ('\u{2018}', '\u{2019}'), // ‘ ’
    ('\u{201E}', '\u{201C}'), // „ “
    ('\u{00AB}', '\u{00BB}'), // « »
    ('\u{300C}', '\u{300D}'), // 「 」
];

/// A quotation never spans a blank line: an unmatched mark cannot swallow a document.
const PARAGRAPH_BREAK: &str = "\n\n";
/// Nor more than this many bytes, which also keeps the scan linear: a text of unmatched
/// opening marks costs this much per mark, not the rest of the text.
const MAX_QUOTE_BYTES: usize = 2_000;

/// For each byte of `text`, whether it is quoted: inside a pair of quotation marks or
/// backticks, a fenced code block, or a `>` block-quote line.
pub(super) fn quoted_mask(text: &str) -> Vec<bool> {
    let mut mask = vec![false; text.len()];
    // Ranges of one kind never overlap, so marking them costs at most twice the text.
    for range in quoted(text) {
        mask[range].fill(true);
    }
    mask
}

/// Byte ranges of `text` that are quoted: inside a pair of quotation marks or
/// backticks, a fenced code block, or a `>` block-quote line.
pub(super) fn quoted(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut line_start = 0;
    let mut fence_open: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let end = line_start + line.len();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            match fence_open.take() {
                Some(open) => ranges.push(open..end),
                None => fence_open = Some(line_start),
            }
        } else if fence_open.is_none() && trimmed.starts_with('>') {
            ranges.push(line_start..end);
        }
        line_start = end;
    }
    if let Some(open) = fence_open {
        ranges.push(open..text.len());
    }
    let mut at = 0;
    while let Some(c) = text[at..].chars().next() {
        let after = at + c.len_utf8();
        let close = QUOTE_PAIRS
            .iter()
            .find(|(open, _)| *open == c)
            .map(|&(_, close)| close);
        at = after;
        let Some(close) = close else { continue };
        let rest = &text[after..];
        let rest = &rest[..crate::text::floor_char_boundary(rest, MAX_QUOTE_BYTES)];
        let paragraph = rest.find(PARAGRAPH_BREAK).unwrap_or(rest.len());
        if let Some(offset) = rest[..paragraph].find(close) {
            let end = after + offset + close.len_utf8();
            ranges.push(after - c.len_utf8()..end);
            at = end;
        }
    }
    ranges
}
