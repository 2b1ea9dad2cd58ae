//! Code comments cite the contract as `CONTRACT §N` (docs/CONTRACT.md). A citation of a
//! section the document does not have, or of a document a clone of the repository does
//! not hold (the design notes it came from), points a reader nowhere.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`, skipping build output.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source tree") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() && name != "target" && !name.starts_with('.') {
            sources(&path, found);
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

/// The section numbers of `## N. Title` headings.
fn sections(contract: &str) -> Vec<u32> {
    contract
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|title| title.split('.').next()?.parse().ok())
        .collect()
}

/// The section numbers cited after `CONTRACT ` in `text`: `§2`, `§1–§4` (both ends).
fn cited(text: &str) -> Vec<u32> {
    let mut numbers = Vec::new();
    for (at, _) in text.match_indices("CONTRACT §") {
        let rest = &text[at + "CONTRACT ".len()..];
        for part in rest
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .split('–')
        {
            let digits: String = part
                .trim_start_matches('§')
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if let Ok(n) = digits.parse() {
                numbers.push(n);
            }
        }
    }
    numbers
}

#[test]
fn every_contract_citation_names_a_section_of_the_document() {
    let root = workspace();
    let contract = std::fs::read_to_string(root.join("docs/CONTRACT.md")).expect("CONTRACT.md");
    let known = sections(&contract);
    assert_eq!(
        known,
        (1..=8).collect::<Vec<_>>(),
        "sections 1 to 8 in order"
    );
    let mut files = Vec::new();
    sources(&root.join("crates"), &mut files);
    let mut wrong = Vec::new();
    let mut citations = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).expect("source");
        for n in cited(&text) {
            citations += 1;
            if !known.contains(&n) {
                wrong.push(format!("{}: §{n}", file.display()));
            }
        }
        for gone in ["SPEC §", "SPEC.md", "seed 000", "seed 003", "../shared"] {
            if text.contains(gone) && !file.ends_with("contract_references.rs") {
                wrong.push(format!(
                    "{}: cites `{gone}`, which a clone does not hold",
                    file.display()
                ));
            }
        }
    }
    assert!(citations > 20, "the scan found the citations ({citations})");
    assert_eq!(wrong, Vec::<String>::new());
}

#[test]
fn a_citation_is_read_with_its_range() {
    assert_eq!(
        cited("(CONTRACT §2 step 8) and CONTRACT §1–§4."),
        vec![2, 1, 4]
    );
    assert_eq!(sections("# t\n## 1. A\ntext\n## 2. B\n"), vec![1, 2]);
}
