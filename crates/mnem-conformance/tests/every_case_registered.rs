//! A conformance case that is written but not listed in `conformance_suite!` runs on no
//! backend and passes silently. Every `pub async fn NAME<…>(fx: Fixture<S>)` in the case
//! modules must be named in the suite macro.

use std::path::Path;

/// The case functions of one module's source: public, async, taking the fixture by value.
fn case_names(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in source.match_indices("pub async fn ") {
        let rest = &source[at + "pub async fn ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let signature = rest.split(')').next().unwrap_or_default();
        if signature.contains("fx: Fixture<S>") {
            names.push(name);
        }
    }
    names
}

/// Whether `name` stands in `text` as a whole identifier.
fn names_whole(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

#[test]
fn every_conformance_case_is_in_the_suite_macro() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let suite = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let mut cases = 0;
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&src).expect("src") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default();
        if !file.ends_with(".rs") || file == "lib.rs" {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("case module");
        for name in case_names(&source) {
            cases += 1;
            if !names_whole(&suite, &name) {
                missing.push(format!("{file}: {name}"));
            }
        }
    }
    assert!(cases > 50, "the scan found the cases ({cases})");
    assert!(missing.is_empty(), "not in conformance_suite!: {missing:?}");
}

#[test]
fn the_scan_finds_a_case_and_a_missing_registration() {
    let source = "pub async fn listed<S: Backend>(fx: Fixture<S>) {}\n\
                  pub async fn helper<S: Backend>(fx: &Fixture<S>, n: usize) {}\n\
                  pub async fn forgotten<S: Backend>(\n    fx: Fixture<S>,\n) {}";
    assert_eq!(case_names(source), ["listed", "forgotten"]);
    assert!(names_whole("cases; listed, other", "listed"));
    assert!(!names_whole("cases; listed_too", "listed"));
}
