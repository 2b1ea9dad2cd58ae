//! The deterministic verifier (CONTRACT §1): a claim is entailed by its cited
//! spans only when every span is really in the evidence (the quote, when given, equals
//! the text at the span) and the subject, the predicate surface and the object all
//! appear in the cited text. It is conservative: anything it cannot see is
//! `insufficient`, never `entailed`.

use super::model::Verdict;

pub const DETERMINISTIC_VERIFIER: &str = "deterministic-1";

/// One cited span, resolved against its evidence text.
#[derive(Debug, Clone)]
pub struct CitedText<'a> {
    /// The evidence text at `[start, end)`.
    pub text_at_span: &'a str,
    /// What the client said the span says, if it said.
    pub claimed_quote: Option<&'a str>,
}

/// What the verifier looks for, each as the alternatives any of which will do (an
/// entity's name and its aliases; a value's canonical text and its surface).
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    pub subject: Vec<&'a str>,
    pub predicate_surface: &'a str,
    pub object: Vec<&'a str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub verdict: Verdict,
    pub confidence: f64,
    pub rationale: String,
}

/// The code points `[start, end)` of `text`, or `None` when the span is out of range.
pub fn char_span(text: &str, start: usize, end: usize) -> Option<&str> {
    if start >= end {
        return None;
    }
    let mut indices = text.char_indices().map(|(i, _)| i).chain([text.len()]);
    let from = indices.nth(start)?;
    let to = indices.nth(end - start - 1)?;
    Some(&text[from..to])
}

/// Lowercase alphanumeric words: matching on words means "Mark" is not found inside
/// "Marketing" and punctuation ("Dense-Mem.") does not matter.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn contains_phrase(haystack: &[String], phrase: &str) -> bool {
    let needle = words(phrase);
    !needle.is_empty()
        && haystack
            .windows(needle.len())
            .any(|w| w == needle.as_slice())
}

pub fn verify(claim: &Claim<'_>, spans: &[CitedText<'_>]) -> Finding {
    let insufficient = |rationale: String| Finding {
        verdict: Verdict::Insufficient,
        confidence: 0.0,
        rationale,
    };
    if spans.is_empty() {
        return insufficient("no span cited".into());
    }
    for (i, span) in spans.iter().enumerate() {
        if let Some(quote) = span.claimed_quote {
            if quote != span.text_at_span {
                return insufficient(format!(
                    "support {i}: the quote differs from the evidence text at the span"
                ));
            }
        }
    }
    let cited: Vec<String> = spans
        .iter()
        .flat_map(|span| {
            // A separator word keeps a phrase from matching across two spans.
            words(span.text_at_span)
                .into_iter()
                .chain(["\u{0}".to_string()])
        })
        .collect();
    let found_any = |alternatives: &[&str]| alternatives.iter().any(|a| contains_phrase(&cited, a));
    let mut missing = Vec::new();
    if !found_any(&claim.subject) {
        missing.push(format!(
            "subject `{}`",
            claim.subject.first().unwrap_or(&"")
        ));
    }
    if !contains_phrase(&cited, claim.predicate_surface) {
        missing.push(format!("predicate `{}`", claim.predicate_surface));
    }
    if !found_any(&claim.object) {
        missing.push(format!("object `{}`", claim.object.first().unwrap_or(&"")));
    }
    if missing.is_empty() {
        Finding {
            verdict: Verdict::Entailed,
            confidence: 1.0,
            rationale: "subject, predicate and object appear in the cited spans".into(),
        }
    } else {
        insufficient(format!("not in the cited spans: {}", missing.join(", ")))
    }
}

/// The default confidence an entailment model must reach for its verdict to count.
pub const DEFAULT_MODEL_CONFIDENCE: f64 = 0.7;

/// One verdict from the deterministic finding and, when a model verifier ran, its finding:
/// the spans must check out first; then a configured model must be confident
/// (`threshold`) that they entail (or contradict) the claim, else it is insufficient.
pub fn combined_verdict(
    deterministic: &Finding,
    model: Option<&Finding>,
    threshold: f64,
) -> Verdict {
    if deterministic.verdict != Verdict::Entailed {
        return deterministic.verdict;
    }
    match model {
        None => Verdict::Entailed,
        Some(m) if m.confidence >= threshold && m.verdict != Verdict::Insufficient => m.verdict,
        Some(_) => Verdict::Insufficient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim<'a>(subject: &'a str, predicate: &'a str, object: &'a str) -> Claim<'a> {
        Claim {
            subject: vec![subject],
            predicate_surface: predicate,
            object: vec![object],
        }
    }

    fn span(text: &str) -> CitedText<'_> {
        CitedText {
            text_at_span: text,
            claimed_quote: None,
        }
    }

    #[test]
    fn a_span_naming_all_three_parts_entails() {
        let f = verify(
            &claim("Mark", "works on", "Dense-Mem"),
            &[span("Mark works on Dense-Mem.")],
        );
        assert_eq!(f.verdict, Verdict::Entailed);
    }

    #[test]
    fn a_missing_object_is_insufficient_and_named() {
        let f = verify(
            &claim("Mark", "works on", "Redis"),
            &[span("Mark works on Dense-Mem.")],
        );
        assert_eq!(f.verdict, Verdict::Insufficient);
        assert!(f.rationale.contains("object `Redis`"), "{}", f.rationale);
    }

    #[test]
    fn names_match_whole_words_only() {
        let f = verify(
            &claim("Mark", "works on", "Dense"),
            &[span("Marketing works on Dense-Mem")],
        );
        assert_eq!(f.verdict, Verdict::Insufficient);
    }

    #[test]
    fn an_alias_counts_for_the_entity() {
        let c = Claim {
            subject: vec!["Mark Twain", "Sam"],
            predicate_surface: "wrote",
            object: vec!["Tom Sawyer"],
        };
        assert_eq!(
            verify(&c, &[span("Sam wrote Tom Sawyer")]).verdict,
            Verdict::Entailed
        );
    }

    #[test]
    fn parts_may_come_from_different_spans_but_a_phrase_may_not_straddle_them() {
        let c = claim("Mark", "works on", "Dense-Mem");
        assert_eq!(
            verify(&c, &[span("Mark joined. He works on"), span("Dense-Mem")]).verdict,
            Verdict::Entailed
        );
        assert_eq!(
            verify(&c, &[span("Mark works"), span("on Dense-Mem")]).verdict,
            Verdict::Insufficient
        );
    }

    #[test]
    fn a_quote_that_differs_from_the_text_is_insufficient() {
        let c = claim("Mark", "works on", "Dense-Mem");
        let spans = [CitedText {
            text_at_span: "Mark works on Dense-Mem",
            claimed_quote: Some("Mark works on Dense-Mem and Redis"),
        }];
        assert_eq!(verify(&c, &spans).verdict, Verdict::Insufficient);
    }

    #[test]
    fn char_span_counts_code_points() {
        assert_eq!(char_span("Zoë likes tea", 0, 3), Some("Zoë"));
        assert_eq!(char_span("Zoë likes tea", 4, 13), Some("likes tea"));
        assert_eq!(char_span("Zoë", 0, 4), None);
        assert_eq!(char_span("Zoë", 2, 2), None);
    }

    #[test]
    fn a_model_verdict_counts_only_above_its_threshold_and_after_the_spans() {
        let entailed = |confidence| Finding {
            verdict: Verdict::Entailed,
            confidence,
            rationale: String::new(),
        };
        let contradicted = Finding {
            verdict: Verdict::Contradicted,
            confidence: 0.9,
            rationale: String::new(),
        };
        let spans_fail = Finding {
            verdict: Verdict::Insufficient,
            confidence: 0.0,
            rationale: String::new(),
        };
        let t = DEFAULT_MODEL_CONFIDENCE;
        assert_eq!(combined_verdict(&entailed(1.0), None, t), Verdict::Entailed);
        assert_eq!(
            combined_verdict(&entailed(1.0), Some(&entailed(0.8)), t),
            Verdict::Entailed
        );
        assert_eq!(
            combined_verdict(&entailed(1.0), Some(&entailed(0.6)), t),
            Verdict::Insufficient
        );
        assert_eq!(
            combined_verdict(&entailed(1.0), Some(&contradicted), t),
            Verdict::Contradicted
        );
        assert_eq!(
            combined_verdict(&spans_fail, Some(&entailed(0.99)), t),
            Verdict::Insufficient
        );
    }
}
