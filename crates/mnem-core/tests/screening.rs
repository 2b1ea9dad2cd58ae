//! Both error rates of write-time screening, on committed corpora: benign look-alikes
//! (quoted attacks, invisible characters in pasted text, ordinary URLs, keys and hashes)
//! must all pass; real injection attempts must be held, except the paraphrases marked
//! "(expected miss)", which no phrase rule can catch and are kept to show the limit.
//! Both are screened as documents, the source that gets every rule. Conversation turns
//! that look like attacks and are not (flags that lost their base emoji, URL-encoded
//! chart images, assistants writing chat-template tokens) must pass as turns, their
//! tokens escaped for readers.
//! `cargo test -p mnem-core --test screening -- --nocapture` prints the rates.

use mnem_core::screen::{for_readers, screen, template_tokens};
use mnem_core::SourceType;
use serde::Deserialize;

#[derive(Deserialize)]
struct Sample {
    why: String,
    text: String,
}

fn corpus(name: &str) -> Vec<Sample> {
    let path = format!("{}/tests/screening/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{path}: {e}: {line}")))
        .collect()
}

fn rate(part: usize, whole: usize) -> String {
    format!(
        "{part}/{whole} ({:.1}%)",
        100.0 * part as f64 / whole.max(1) as f64
    )
}

/// Each sample screening holds as `source`, with why.
fn held_as(samples: &[Sample], source: SourceType) -> Vec<String> {
    samples
        .iter()
        .filter_map(|s| {
            let findings = screen(&s.text, source);
            (!findings.is_empty()).then(|| format!("{}: {findings:?}", s.why))
        })
        .collect()
}

#[test]
fn no_benign_look_alike_is_held() {
    let samples = corpus("benign.jsonl");
    assert!(samples.len() >= 50, "the benign corpus shrank");
    let held = held_as(&samples, SourceType::Document);
    println!("benign held: {}", rate(held.len(), samples.len()));
    assert!(held.is_empty(), "false positives:\n{}", held.join("\n"));
}

#[test]
fn injection_attempts_are_held() {
    let samples = corpus("injections.jsonl");
    assert!(samples.len() >= 40, "the injection corpus shrank");
    let (mut held, mut missed) = (0, Vec::new());
    for sample in &samples {
        if screen(&sample.text, SourceType::Document).is_empty() {
            missed.push(sample);
        } else {
            held += 1;
        }
    }
    println!("injections held: {}", rate(held, samples.len()));
    for sample in &missed {
        println!("  missed: {}", sample.why);
    }
    let unexpected: Vec<&str> = missed
        .iter()
        .filter(|s| !s.why.contains("(expected miss)"))
        .map(|s| s.why.as_str())
        .collect();
    assert!(unexpected.is_empty(), "attacks that passed: {unexpected:?}");
}

#[test]
fn no_conversation_look_alike_is_held_and_its_tokens_are_escaped() {
    let samples = corpus("conversation.jsonl");
    assert!(samples.len() >= 10, "the conversation corpus shrank");
    let held = held_as(&samples, SourceType::Conversation);
    println!(
        "conversation look-alikes held: {}",
        rate(held.len(), samples.len())
    );
    assert!(held.is_empty(), "false holds:\n{}", held.join("\n"));
    let with_tokens: Vec<&Sample> = samples
        .iter()
        .filter(|s| !template_tokens(&s.text).is_empty())
        .collect();
    assert!(
        with_tokens.len() >= 4,
        "the corpus lost its template tokens"
    );
    for sample in with_tokens {
        let shown = for_readers(&sample.text);
        assert_eq!(
            template_tokens(&shown),
            Vec::<String>::new(),
            "{}",
            sample.why
        );
    }
}
