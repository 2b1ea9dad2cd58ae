//! Output: human text by default, JSON with `--json`. Results go to stdout; nothing else
//! does.

use mnem_core::{Evidence, EvidenceId, LifecycleEvent, PublicRecall, PublicResult, RecallHit};
use serde::Serialize;
use serde_json::json;

fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

pub fn remembered(evidence: &Evidence, as_json: bool) {
    if as_json {
        print_json(&json!({ "evidence_id": evidence.id }));
    } else {
        println!("{}", evidence.id);
    }
}

/// `--explain` adds each result's score to the public shape; nothing else does.
#[derive(Serialize)]
struct ExplainedResult<'a> {
    #[serde(flatten)]
    result: &'a PublicResult,
    score: f64,
}

pub fn recalled(hits: &[RecallHit], as_json: bool, explain: bool) {
    let public = PublicRecall::from_hits(hits);
    if as_json {
        if explain {
            let results: Vec<ExplainedResult<'_>> = public
                .results
                .iter()
                .zip(hits)
                .map(|(result, hit)| ExplainedResult {
                    result,
                    score: hit.score.value(),
                })
                .collect();
            print_json(&json!({ "results": results }));
        } else {
            print_json(&json!(public));
        }
        return;
    }
    if hits.is_empty() {
        println!("No matching evidence.");
        return;
    }
    for (rank, (result, hit)) in public.results.iter().zip(hits).enumerate() {
        println!("{:>2}. {}", rank + 1, result.context);
        let score = if explain {
            format!("  score {}", hit.score)
        } else {
            String::new()
        };
        println!(
            "    {}  {}  {}  {}{score}",
            result.observed_at, result.kind, result.source, result.evidence_id
        );
    }
}

pub fn deleted(id: EvidenceId, as_json: bool) {
    if as_json {
        print_json(&json!({ "evidence_id": id, "state": "retracted" }));
    } else {
        println!("retracted {id}");
    }
}

pub fn shown(evidence: &Evidence, history: &[LifecycleEvent], as_json: bool) {
    if as_json {
        print_json(&json!({ "evidence": evidence, "history": history }));
        return;
    }
    println!("{}", evidence.content);
    println!("  id           {}", evidence.id);
    println!("  state        {}", evidence.state);
    println!("  kind         {}", evidence.kind);
    println!(
        "  source       {} ({}, {})",
        evidence.source, evidence.source_type, evidence.authority
    );
    println!("  scope        /{}", evidence.scope);
    println!("  observed_at  {}", evidence.observed_at);
    println!("  recorded_at  {}", evidence.recorded_at);
    if let Some(expires_at) = evidence.expires_at {
        println!("  expires_at   {expires_at}");
    }
    for r in &evidence.refs {
        println!("  ref          {r}");
    }
    for event in history {
        let reason = event.reason.as_deref().unwrap_or("");
        println!("  history      {}  {}  {reason}", event.at, event.state);
    }
}
