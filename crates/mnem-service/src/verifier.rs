//! The optional model verifier (SPEC §1, issue item 3): asks an OpenAI-compatible chat
//! endpoint whether the cited spans entail a claim, in JSON. It runs only after the
//! deterministic verifier passed, and its verdict counts only at or above the configured
//! confidence (`mnem_core::graph::combined_verdict`).

use std::time::Duration;

use mnem_core::graph::{Finding, Verdict};
use serde::Deserialize;
use serde_json::json;

/// A model that judges entailment. Blocking: the service calls it on the blocking pool.
pub trait EntailmentModel: Send + Sync {
    /// Names the verifier in verification events (`chat:<model>`).
    fn name(&self) -> String;
    /// Judges whether `spans` entail `claim`; an error is an unavailable verifier.
    fn judge(&self, claim: &str, spans: &[String]) -> Result<Finding, String>;
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatVerifierConfig {
    /// Base URL up to (not including) `/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
}

pub struct ChatVerifier {
    config: ChatVerifierConfig,
    agent: ureq::Agent,
}

impl ChatVerifier {
    pub fn new(config: ChatVerifierConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Self { config, agent }
    }
}

const INSTRUCTIONS: &str = "You check whether quoted evidence entails a claim. Use only the \
quotes. Answer with one JSON object and nothing else: {\"verdict\": \"entailed\" | \
\"contradicted\" | \"insufficient\", \"confidence\": number from 0 to 1, \"rationale\": \
one short sentence}.";

#[derive(Deserialize)]
struct ChatResponse {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
}

#[derive(Deserialize)]
struct Message {
    content: String,
}

#[derive(Deserialize)]
struct Judgement {
    verdict: String,
    confidence: f64,
    #[serde(default)]
    rationale: String,
}

/// Reads the model's JSON answer, tolerating prose or a code fence around the object.
pub fn parse_judgement(content: &str) -> Result<Finding, String> {
    let start = content.find('{').ok_or("no JSON object in the answer")?;
    let end = content.rfind('}').ok_or("no JSON object in the answer")?;
    let judgement: Judgement = serde_json::from_str(&content[start..=end])
        .map_err(|e| format!("unreadable judgement: {e}"))?;
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
        format!("chat:{}", self.config.model)
    }

    fn judge(&self, claim: &str, spans: &[String]) -> Result<Finding, String> {
        let endpoint = format!(
            "{}/v1/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let quotes: String = spans
            .iter()
            .enumerate()
            .map(|(i, s)| format!("Quote {}: \"{}\"\n", i + 1, s))
            .collect();
        let body = json!({
            "model": self.config.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": INSTRUCTIONS},
                {"role": "user", "content": format!("{quotes}\nClaim: {claim}")},
            ],
        });
        let mut request = self.agent.post(&endpoint);
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let response: ChatResponse = request
            .send_json(body)
            .map_err(|e| format!("{endpoint}: {e}"))?
            .body_mut()
            .read_json()
            .map_err(|e| format!("{endpoint}: unreadable response: {e}"))?;
        let content = response
            .choices
            .into_iter()
            .next()
            .ok_or("the response has no choices")?
            .message
            .content;
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
