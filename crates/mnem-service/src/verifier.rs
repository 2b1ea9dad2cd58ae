//! The optional model verifier: asks an OpenAI-compatible chat
//! endpoint whether the cited spans entail a claim, in JSON. It runs only after the
//! deterministic verifier passed, and its verdict counts only at or above the configured
//! confidence (`mnem_core::graph::combined_verdict`).

use mnem_core::graph::{Finding, Verdict};
use serde::Deserialize;

use crate::chat::{json_object, ChatConfig, ChatEndpoint};

/// A model that judges entailment. Blocking: the service calls it on the blocking pool.
pub trait EntailmentModel: Send + Sync {
    /// Names the verifier in verification events (`chat:<model>`).
    fn name(&self) -> String;
    /// Judges whether `spans` entail `claim`; an error is an unavailable verifier.
    fn judge(&self, claim: &str, spans: &[String]) -> Result<Finding, String>;
}

/// The entailment judge on an OpenAI-compatible chat endpoint.
pub struct ChatVerifier {
    endpoint: ChatEndpoint,
}

impl ChatVerifier {
    pub fn new(config: ChatConfig) -> Self {
        Self {
            endpoint: ChatEndpoint::new(config),
        }
    }
}

const INSTRUCTIONS: &str = "You check whether quoted evidence entails a claim. Use only the \
quotes. Answer with one JSON object and nothing else: {\"verdict\": \"entailed\" | \
\"contradicted\" | \"insufficient\", \"confidence\": number from 0 to 1, \"rationale\": \
one short sentence}.";

#[derive(Deserialize)]
struct Judgement {
    verdict: String,
    confidence: f64,
    #[serde(default)]
    rationale: String,
}

/// Reads the model's JSON answer, tolerating prose or a code fence around the object.
pub fn parse_judgement(content: &str) -> Result<Finding, String> {
    let object = json_object(content).ok_or("no JSON object in the answer")?;
    let judgement: Judgement =
        serde_json::from_str(object).map_err(|e| format!("unreadable judgement: {e}"))?;
    let verdict: Verdict = judgement
        .verdict
        .parse()
        .map_err(|e: mnem_core::ValidationError| e.reason)?;
    if !(0.0..=1.0).contains(&judgement.confidence) {
        return Err(format!(
            "confidence {} is outside 0..1",
            judgement.confidence
        ));
    }
    Ok(Finding {
        verdict,
        confidence: judgement.confidence,
        rationale: judgement.rationale,
    })
}

impl EntailmentModel for ChatVerifier {
    fn name(&self) -> String {
        self.endpoint.name()
    }

    fn judge(&self, claim: &str, spans: &[String]) -> Result<Finding, String> {
        let quotes: String = spans
            .iter()
            .enumerate()
            .map(|(i, s)| format!("Quote {}: \"{}\"\n", i + 1, s))
            .collect();
        let content = self
            .endpoint
            .ask(INSTRUCTIONS, &format!("{quotes}\nClaim: {claim}"))?;
        parse_judgement(&content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fenced_json_answer_is_read() {
        let f = parse_judgement(
            "```json\n{\"verdict\": \"entailed\", \"confidence\": 0.92, \"rationale\": \"said so\"}\n```",
        )
        .unwrap();
        assert_eq!(f.verdict, Verdict::Entailed);
        assert_eq!(f.confidence, 0.92);
    }

    #[test]
    fn malformed_answers_are_errors_not_verdicts() {
        assert!(parse_judgement("yes it is").is_err());
        assert!(parse_judgement("{\"verdict\": \"probably\", \"confidence\": 0.9}").is_err());
        assert!(parse_judgement("{\"verdict\": \"entailed\", \"confidence\": 7}").is_err());
    }
}
