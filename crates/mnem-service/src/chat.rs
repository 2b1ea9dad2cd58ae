//! One OpenAI-compatible chat endpoint, as the optional model layers use it (the
//! verifier, the hypothesis reader): a system instruction and one user message in, the
//! first choice's text out, at temperature 0 and asking for a JSON object. Blocking: the
//! service calls it on the blocking pool.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

/// Where a chat model is and which one.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatConfig {
    /// Base URL up to (not including) `/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
}

pub(crate) struct ChatEndpoint {
    config: ChatConfig,
    agent: ureq::Agent,
}

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

impl ChatEndpoint {
    pub(crate) fn new(config: ChatConfig) -> Self {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Self { config, agent }
    }

    /// The model as verification events and readings name it: `chat:<model>`.
    pub(crate) fn name(&self) -> String {
        format!("chat:{}", self.config.model)
    }

    /// The model's answer to `user` under `instructions`; an error when the endpoint
    /// cannot be reached or answers with no choice.
    pub(crate) fn ask(&self, instructions: &str, user: &str) -> Result<String, String> {
        let endpoint = format!(
            "{}/v1/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let body = json!({
            "model": self.config.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": instructions},
                {"role": "user", "content": user},
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
        Ok(response
            .choices
            .into_iter()
            .next()
            .ok_or("the response has no choices")?
            .message
            .content)
    }
}

/// The JSON object in a model's answer, tolerating prose or a code fence around it.
pub(crate) fn json_object(content: &str) -> Option<&str> {
    let start = content.find('{')?;
    let end = content.rfind('}')?;
    (start <= end).then(|| &content[start..=end])
}
