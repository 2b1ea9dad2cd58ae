//! Fuzzing input strategies on stable Rust. Each target (`tests/targets.rs`) runs its
//! input path on two kinds of input: arbitrary text or JSON, and *mutations of a committed
//! corpus* (`corpus/<target>.txt`, one seed per line): characters inserted, deleted or
//! replaced, seeds spliced together — close enough to valid input to reach the deep
//! branches a purely random string never does. A target passes when nothing panics and
//! its invariants hold; proptest shrinks any failure to a minimal input.
//!
//! `MNEM_FUZZ_CASES` sets the cases per target: the default is a few seconds' smoke run
//! for CI; a long local run sets it high (see docs/fuzzing.md).

pub mod targets;

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value};

/// Cases per target when `MNEM_FUZZ_CASES` is not set: a CI smoke run.
pub const SMOKE_CASES: u32 = 2_000;

/// The proptest configuration of every target.
pub fn config() -> ProptestConfig {
    let cases = std::env::var("MNEM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SMOKE_CASES);
    ProptestConfig {
        cases,
        // A failure is shrunk and reported; nothing is written next to the sources.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The seeds of a corpus: each non-empty line of `corpus/<name>.txt` (`\n` and `\t`
/// written in the file are unescaped, so a seed can span lines; `#` starts a comment)
/// and each file of `corpus/<name>/` whole (for seeds a line cannot hold, like packs).
pub fn corpus(name: &str) -> Vec<String> {
    let root = format!("{}/corpus", env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<String> = std::fs::read_to_string(format!("{root}/{name}.txt"))
        .map(|text| {
            text.lines()
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .map(|line| line.replace("\\n", "\n").replace("\\t", "\t"))
                .collect()
        })
        .unwrap_or_default();
    if let Ok(files) = std::fs::read_dir(format!("{root}/{name}")) {
        let mut paths: Vec<_> = files.filter_map(|f| f.ok().map(|f| f.path())).collect();
        paths.sort();
        for path in paths {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
            seeds.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    assert!(!seeds.is_empty(), "corpus {root}/{name} has no seeds");
    seeds
}

/// One edit of a seed.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, char),
    Delete(usize),
    Replace(usize, char),
    Splice(usize, String),
}

fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    for edit in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % (len + 1) };
        match edit {
            Edit::Insert(i, c) => {
                let i = at(*i, chars.len());
                chars.insert(i, *c);
            }
            Edit::Delete(i) if !chars.is_empty() => {
                let i = i % chars.len();
                chars.remove(i);
            }
            Edit::Replace(i, c) if !chars.is_empty() => {
                let i = i % chars.len();
                chars[i] = *c;
            }
            Edit::Splice(i, other) => {
                let i = at(*i, chars.len());
                chars.splice(i..i, other.chars());
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Characters worth inserting: ASCII, punctuation the grammars use, and the Unicode that
/// breaks naive byte slicing (multi-byte letters, combining marks, invisible characters).
fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => any::<char>(),
        4 => proptest::char::range(' ', '~'),
        2 => select(vec!['-', ':', '/', '#', '"', '`', '@', '.', 'T', 'Z', '+', '\u{0}']),
        2 => select(vec![
            'é', 'ß', '日', '🙂', '\u{301}', '\u{200B}', '\u{202E}', '\u{FEFF}', '\u{E0041}',
            'İ', 'ｉ',
        ]),
    ]
}

/// Arbitrary text, or a seed of `seeds` mutated by up to eight edits.
pub fn text_from(seeds: Vec<String>) -> impl Strategy<Value = String> {
    let splices = select(seeds.clone());
    let edit = prop_oneof![
        (any::<usize>(), interesting_char()).prop_map(|(i, c)| Edit::Insert(i, c)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), interesting_char()).prop_map(|(i, c)| Edit::Replace(i, c)),
        (any::<usize>(), splices).prop_map(|(i, s)| Edit::Splice(i, s)),
    ];
    prop_oneof![
        1 => any::<String>(),
        4 => (select(seeds), proptest::collection::vec(edit, 0..8))
            .prop_map(|(seed, edits)| apply(&seed, &edits)),
    ]
}

/// Arbitrary JSON whose object keys come from `keys` (a request's vocabulary) and whose
/// strings come from `strings`: shaped enough to pass the outer parsing and reach
/// validation.
pub fn json_from(
    keys: &'static [&'static str],
    strings: Vec<String>,
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1_000i64..1_000).prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text_from(strings).prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((select(keys), inner), 0..6).prop_map(|pairs| {
                Value::Object(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}
