//! Output: human text by default, JSON with `--json`. Results go to stdout; nothing else
//! does.

use mnem_core::{
    Evidence, EvidenceId, LifecycleEvent, PublicRecall, PublicResult, RecallHit, ScoreComponents,
};
use mnem_service::{EmbedReport, Status};
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

/// `--explain` adds each result's score and its components to the public shape;
/// nothing else does.
#[derive(Serialize)]
struct ExplainedResult<'a> {
    #[serde(flatten)]
    result: &'a PublicResult,
    score: f64,
    components: &'a ScoreComponents,
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
                    components: &hit.components,
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
            let c = &hit.components;
            let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
            format!(
                "  score {} (lexical #{}, vector #{}{}{})",
                hit.score,
                rank(c.lexical_rank),
                rank(c.vector_rank),
                if c.phrase { ", phrase" } else { "" },
                if c.temporal { ", in time hint" } else { "" }
            )
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

pub fn status(status: &Status, as_json: bool) {
    if as_json {
        print_json(&json!(status));
        return;
    }
    let contract = |c: &Option<mnem_core::EmbeddingContract>| {
        c.as_ref()
            .map_or("none (lexical-only)".to_string(), ToString::to_string)
    };
    let fresh = &status.search_freshness;
    println!("ranking profile     {}", status.ranking_profile_version);
    println!("active embedder     {}", contract(&status.active_contract));
    println!(
        "store's vectors     {}",
        contract(&status.recorded_contract)
    );
    if status.active_contract.is_some() && status.active_contract != status.recorded_contract {
        println!("                    mismatch: run `mnem reindex` to re-embed");
    }
    println!(
        "search documents    {} current, {} pending, {} failed",
        fresh.current_document_count, fresh.pending_document_count, fresh.failed_document_count
    );
    if let Some(age) = fresh.oldest_pending_age_seconds {
        println!("oldest pending      {age}s");
    }
    match &status.last_degradation {
        Some(d) => println!(
            "last degraded       {} branch at {}: {}",
            d.branch, d.at, d.reason
        ),
        None => println!("last degraded       never"),
    }
}

pub fn reindexed(report: &EmbedReport, as_json: bool) {
    if as_json {
        print_json(&json!(report));
    } else {
        println!(
            "re-embedded {} documents ({} failed attempts)",
            report.embedded, report.failed_attempts
        );
    }
}
