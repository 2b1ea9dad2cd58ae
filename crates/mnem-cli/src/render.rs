//! Output: human text by default, JSON with `--json`. Results go to stdout; nothing else
//! does.

use mnem_core::dedup::Duplicate;
use mnem_core::feedback::{RankingQuality, RecallFeedback};
use mnem_core::graph::{
    Community, DiscoveryPath, Hypothesis, PathEdge, Polarity, RelationshipOutcome, RememberOutcome,
};
use mnem_core::pack::PackCounts;
use mnem_core::recall::{PublicCommunity, PublicHypothesis};
use mnem_core::{ApiKeyRecord, EvidenceId, LifecycleState, PublicWindowItem, TeamId};
use mnem_service::{
    CommunityReport, DreamReport, EmbedReport, HeldEvidence, IssuedKey, NamedTrace, Recall, Shown,
    Status,
};
use mnem_store::{PackImport, Remembered};
use serde_json::json;

fn print_json(value: &serde_json::Value) {
    println!("{value}");
}

/// The id; a held item also gets its state and reason (in the JSON, and as a warning
/// naming the release command on stderr); a repeat of a stored text says that the id is
/// the stored item's (`duplicate` in the JSON, a note on stderr).
pub fn remembered(stored: &Remembered, held_because: Option<&str>, as_json: bool) {
    let evidence = &stored.evidence;
    let held = evidence.state != LifecycleState::Current;
    if as_json {
        let mut out = json!({ "evidence_id": evidence.id });
        if held {
            out["state"] = json!(evidence.state);
        }
        if let Some(reason) = held_because {
            out["quarantined_because"] = json!(reason);
        }
        if let Some(duplicate) = stored.duplicate {
            out["duplicate"] = json!(duplicate);
        }
        print_json(&out);
    } else {
        println!("{}", evidence.id);
    }
    match stored.duplicate {
        Some(Duplicate::Alias) => eprintln!(
            "note: this text is already stored as {}; this write was recorded beside it \
             (no second item; `mnem show {}` lists its writes)",
            evidence.id, evidence.id
        ),
        Some(Duplicate::Replay) => eprintln!(
            "note: this exact write is already stored as {}; nothing changed",
            evidence.id
        ),
        None => {}
    }
    match (evidence.state, held_because) {
        (LifecycleState::Quarantined, reason) => eprintln!(
            "warning: held for review, not recalled until released ({}); \
             if it is safe: `mnem release {}`",
            reason.unwrap_or("quarantined"),
            evidence.id
        ),
        (state, _) if held => eprintln!(
            "warning: stored {state} (see `mnem show {}`): it will not be recalled",
            evidence.id
        ),
        _ => {}
    }
}

/// `mnem list --quarantined`: each held item with when and why it was held.
pub fn held(items: &[HeldEvidence], as_json: bool) {
    if as_json {
        print_json(&json!(items));
        return;
    }
    if items.is_empty() {
        println!("nothing is held");
        return;
    }
    for item in items {
        let e = &item.evidence;
        let excerpt: String = e.content.chars().take(100).collect();
        println!("{}  {}", e.id, excerpt.replace('\n', " "));
        if let Some(at) = item.held_at {
            println!("    held at  {at}");
        }
        println!(
            "    because  {}",
            item.reason.as_deref().unwrap_or("(no reason recorded)")
        );
    }
}

/// How to follow a recall up with this CLI's own flags (the public shape's `guidance`
/// speaks of the MCP tools' fields).
fn cli_guidance(results: usize, paths: usize) -> &'static str {
    match (results, paths) {
        (0, 0) => "Nothing matched; try other words, a wider --scope or time window, or remember what is missing.",
        (_, 0) => "If something is still uncertain, run `mnem recall` again with a focused query and --known-evidence <ID> for each result you have seen.",
        _ => "Discovery paths are follow-up hints, not answers: `mnem trace <RELATIONSHIP_ID>` says why one holds; `mnem recall --expand-from <ENTITY_ID>` with --known-evidence / --known-relationship explores further.",
    }
}

pub fn recalled(recall: &Recall, as_json: bool, explain: bool) {
    let hits = &recall.hits;
    let mut public = recall.public();
    let guidance = cli_guidance(public.results.len(), public.discovery_paths.len());
    public.guidance = guidance.to_string();
    if as_json {
        if explain {
            let mut explained = recall.explained();
            explained["guidance"] = json!(guidance);
            print_json(&explained);
        } else {
            print_json(&json!(public));
        }
        return;
    }
    if hits.is_empty() {
        println!("No matching evidence.");
    }
    // A window is printed under its result, in group order with the result's place marked,
    // so a neighbour before one result is never read as the end of the one above it.
    let neighbour = |item: &PublicWindowItem| {
        let mark = if item.hit { '+' } else { '·' };
        println!("      {mark} {}", item.context);
    };
    let windowed = public
        .results
        .iter()
        .any(|r| !r.before.is_empty() || !r.after.is_empty());
    for (rank, (result, hit)) in public.results.iter().zip(hits).enumerate() {
        println!("{:>2}. {}", rank + 1, result.context);
        let score = if explain {
            let c = &hit.components;
            let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
            let follows = c
                .follows
                .map(|leader| format!(", follows {leader}"))
                .unwrap_or_default();
            let hop = c
                .hop_from
                .map(|leader| format!(", shares a mention with {leader}"))
                .unwrap_or_default();
            format!(
                "  score {} (lexical #{}, vector #{}{}{}{}{}{follows}{hop})",
                hit.score,
                rank(c.lexical_rank),
                rank(c.vector_rank),
                if c.phrase { ", phrase" } else { "" },
                if c.temporal { ", in time hint" } else { "" },
                if c.speaker { ", named speaker" } else { "" },
                if c.asks { ", asks" } else { "" }
            )
        } else {
            String::new()
        };
        println!(
            "    {}  {}  {}  {}{score}",
            result.observed_at, result.kind, result.source, result.evidence_id
        );
        if !result.before.is_empty() || !result.after.is_empty() {
            result.before.iter().for_each(neighbour);
            println!("      > (result {})", rank + 1);
            result.after.iter().for_each(neighbour);
        }
    }
    if windowed {
        println!(
            "\nUnder each result, its window: its neighbours in the same conversation or \
             document, in order (+ ranked as a match too, · shown for context; `--window 0` \
             turns them off)."
        );
    }
    print_paths(&public.discovery_paths);
    if let Some(related) = &public.related_hypotheses {
        print_hypotheses(related);
    }
    if let Some(summaries) = &public.community_summaries {
        print_community_summaries(summaries);
    }
}

/// Community summaries apart from the results, marked as derived.
fn print_community_summaries(summaries: &[PublicCommunity]) {
    if summaries.is_empty() {
        println!("\nNo community summaries (no unused result slot, or none near the results).");
        return;
    }
    println!("\nCommunities near the results (derived, not evidence):");
    for c in summaries {
        println!("  ~ {}  {}", c.summary, c.community_id);
    }
}

/// Hypotheses apart from the results, marked as speculation.
fn print_hypotheses(related: &[PublicHypothesis]) {
    if related.is_empty() {
        println!("\nNo related hypotheses.");
        return;
    }
    println!("\nRelated hypotheses (speculation, not evidence):");
    for h in related {
        println!("  ? {} [{}]  {}", h.statement, h.status, h.hypothesis_id);
    }
}

fn edge_text(edge: &PathEdge) -> String {
    let negation = if edge.polarity == Polarity::Negative {
        "NOT "
    } else {
        ""
    };
    let owner = edge.owner.map(|o| format!(" (by {o})")).unwrap_or_default();
    format!(
        "{} —{negation}{}→ {}{owner}  [{}]",
        edge.subject.name,
        edge.predicate,
        edge.object.display(),
        edge.relationship_id
    )
}

/// The human form of a recall's discovery paths, after its results.
fn print_paths(paths: &[DiscoveryPath]) {
    if paths.is_empty() {
        return;
    }
    println!("Discovery paths:");
    for path in paths {
        let edges: Vec<String> = path.relationships.iter().map(edge_text).collect();
        println!("  - {}", edges.join("\n    then "));
        let ids: Vec<String> = path.evidence_ids.iter().map(ToString::to_string).collect();
        println!("    evidence {}", ids.join(", "));
    }
}

pub fn remembered_request(outcome: &RememberOutcome, as_json: bool) {
    if as_json {
        print_json(&json!(outcome));
        return;
    }
    for e in &outcome.evidence {
        match &e.quarantined_because {
            Some(why) => println!("evidence      {}  {}: {why}", e.evidence_id, e.state),
            None => println!("evidence      {}  {}", e.evidence_id, e.state),
        }
    }
    for r in &outcome.relationships {
        println!(
            "relationship  {}  {} {} ({})",
            r.relationship_id, r.tier, r.status, r.verdict
        );
    }
}

pub fn corrected(outcome: &RelationshipOutcome, as_json: bool) {
    if as_json {
        print_json(&json!(outcome));
    } else {
        println!(
            "relationship  {}  {} {} ({})",
            outcome.relationship_id, outcome.tier, outcome.status, outcome.verdict
        );
    }
}

/// A retraction: each id retracted, or kept current because another write of the same
/// text still stands (only the caller's writes were withdrawn).
pub fn retracted(ids: &[EvidenceId], kept: &[EvidenceId], as_json: bool) {
    let state = |id: &EvidenceId| {
        if kept.contains(id) {
            "current"
        } else {
            "retracted"
        }
    };
    if as_json {
        let items: Vec<_> = ids
            .iter()
            .map(|id| {
                let mut item = json!({ "evidence_id": id, "state": state(id) });
                if kept.contains(id) {
                    item["still_written_by_others"] = json!(true);
                }
                item
            })
            .collect();
        print_json(&json!(items));
    } else {
        for id in ids {
            if kept.contains(id) {
                println!(
                    "kept {id}: your write was withdrawn; other writes of this text still stand"
                );
            } else {
                println!("retracted {id}");
            }
        }
    }
}

pub fn lifecycle(state: &str, ids: &[EvidenceId], as_json: bool) {
    if as_json {
        let items: Vec<_> = ids
            .iter()
            .map(|id| json!({ "evidence_id": id, "state": state }))
            .collect();
        print_json(&json!(items));
    } else {
        for id in ids {
            println!("{state} {id}");
        }
    }
}

pub fn traced(named: &NamedTrace, as_json: bool) {
    if as_json {
        print_json(&json!(named));
        return;
    }
    let trace = &named.trace;
    let r = &trace.relationship;
    println!(
        "{} —{}{}→ {}",
        r.subject.name,
        if r.polarity == Polarity::Negative {
            "NOT "
        } else {
            ""
        },
        r.predicate_surface,
        r.object.display()
    );
    println!("  id           {}", r.relationship_id);
    println!(
        "  standing     {} / {} (version {})",
        r.tier, r.status, r.version
    );
    let owner = named.profiles.get(&r.owner_profile_id);
    println!(
        "  owner        {}",
        owner.map_or(r.owner_profile_id.to_string(), Clone::clone)
    );
    println!(
        "  recorded     {} → {}",
        r.recorded_at,
        r.recorded_to.map_or("now".into(), |t| t.to_string())
    );
    if r.valid_from.is_some() || r.valid_to.is_some() {
        let show = |t: Option<mnem_core::Timestamp>| t.map_or("…".into(), |t| t.to_string());
        println!(
            "  valid        {} → {}",
            show(r.valid_from),
            show(r.valid_to)
        );
    }
    for s in &trace.supports {
        let quote = s.quote.as_deref().unwrap_or("(not shown)");
        println!(
            "  support      {} [{}..{}] {}{}: \"{quote}\"",
            s.evidence_id,
            s.start,
            s.end,
            s.evidence_state,
            if s.effective { "" } else { ", not counted" }
        );
    }
    for v in &trace.verification_events {
        println!(
            "  verified     {}  {} {:.2} by {}: {}",
            v.at, v.verdict, v.confidence, v.verifier, v.rationale
        );
    }
    for t in &trace.transitions {
        let from = match (t.from_tier, t.from_status) {
            (Some(tier), Some(status)) => format!("{tier}/{status}"),
            _ => "new".into(),
        };
        println!(
            "  transition   {}  {from} → {}/{}: {}",
            t.at, t.to_tier, t.to_status, t.reason
        );
    }
    let others = [
        ("conflict", &trace.conflicts),
        ("supersedes", &trace.supersedes),
        ("superseded by", &trace.superseded_by),
    ];
    for (label, list) in others {
        for other in list {
            println!(
                "  {label:<12} {}  {} {} {} ({}/{}, by {})",
                other.relationship_id,
                other.predicate,
                other.polarity,
                other.object.display(),
                other.tier,
                other.status,
                other.owner_profile_id
            );
        }
    }
    if trace.truncated {
        println!("  (bounded: older events or long quotes were left out)");
    }
}

/// One item: its record, lifecycle history, — when its text was written more than once —
/// each write (who, from where, observed when, whether it still stands), and its usage in
/// recall feedback.
pub fn shown(shown: &Shown, as_json: bool) {
    if as_json {
        print_json(&json!(shown));
        return;
    }
    let Shown {
        evidence,
        neutralised,
        history,
        writes,
        usage,
        profiles,
    } = shown;
    let who = |id: &mnem_core::ProfileId| profiles.get(id).cloned().unwrap_or(id.to_string());
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
    println!("  owner        {}", who(&evidence.owner));
    if let Some(note) = neutralised {
        println!("  neutralised  {note}");
    }
    for event in history {
        let reason = event.reason.as_deref().unwrap_or("");
        println!(
            "  history      {}  {}  by {}  {reason}",
            event.at,
            event.state,
            who(&event.actor)
        );
    }
    for write in writes {
        println!(
            "  written      {}  {} ({}, group {})  observed {}  by {}",
            write.state,
            write.source,
            write.source_type,
            write.source_group,
            write.observed_at,
            who(&write.owner)
        );
    }
    if usage.returned > 0 {
        println!(
            "  feedback     returned {} times: {} useful, {} not useful, {} wrong",
            usage.returned, usage.useful, usage.not_useful, usage.wrong
        );
    }
}

/// A recorded feedback: its id and the ranking profile it was recorded under.
pub fn feedback_recorded(feedback: &RecallFeedback, as_json: bool) {
    if as_json {
        print_json(&json!({
            "feedback_id": feedback.id,
            "ranking_profile": feedback.ranking_profile,
        }));
    } else {
        println!("{}", feedback.id);
    }
}

/// `mnem feedback replay`: where the items judged useful rank under each profile.
pub fn replayed(
    records: usize,
    baseline: (&str, &RankingQuality),
    candidate: (&str, &RankingQuality),
    as_json: bool,
) {
    if as_json {
        print_json(&json!({
            "feedback_records": records,
            "baseline": { "profile": baseline.0, "quality": baseline.1 },
            "candidate": { "profile": candidate.0, "quality": candidate.1 },
        }));
        return;
    }
    println!(
        "{records} feedback records, {} with an item judged useful (replayed against memory as it is now)",
        baseline.1.queries
    );
    println!(
        "  {:<28} {:>8} {:>8} {:>8}",
        "profile", "MRR", "R@5", "R@10"
    );
    for (name, quality) in [baseline, candidate] {
        println!(
            "  {:<28} {:>8.3} {:>8.3} {:>8.3}",
            name, quality.mrr, quality.recall_at_5, quality.recall_at_10
        );
    }
    println!(
        "  {:<28} {:>+8.3} {:>+8.3} {:>+8.3}",
        "change",
        candidate.1.mrr - baseline.1.mrr,
        candidate.1.recall_at_5 - baseline.1.recall_at_5,
        candidate.1.recall_at_10 - baseline.1.recall_at_10
    );
}

/// `held` counts the team's quarantined items this profile can see, up to the listing
/// bound (`at_least` when there may be more).
pub fn status(store: &str, status: &Status, held: usize, at_least: bool, as_json: bool) {
    if as_json {
        let mut out = json!(status);
        out["store"] = json!(store);
        out["quarantined"] = json!({ "count": held, "at_least": at_least });
        print_json(&out);
        return;
    }
    let contract = |c: &Option<mnem_core::EmbeddingContract>| {
        c.as_ref()
            .map_or("none (lexical-only)".to_string(), ToString::to_string)
    };
    let fresh = &status.search_freshness;
    println!("store               {store}");
    println!("ranking profile     {}", status.ranking_profile_version);
    println!("active embedder     {}", contract(&status.active_contract));
    match &status.recorded_contract {
        // Nothing embedded yet: the first embedded write records the active embedder.
        None if status.active_contract.is_some() => {
            println!("store's vectors     none yet (the first write records the active embedder)")
        }
        recorded => {
            println!("store's vectors     {}", contract(recorded));
            if status.active_contract.is_some() && status.active_contract != *recorded {
                println!("                    mismatch: run `mnem reindex` to re-embed");
            }
        }
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
    let more = if at_least { "+" } else { "" };
    println!("held (quarantined)  {held}{more}");
    if held > 0 {
        println!("                    review: `mnem list --quarantined`, then `mnem release ID`");
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

pub fn team_created(name: &str, id: TeamId, as_json: bool) {
    if as_json {
        print_json(&json!({ "team": name, "team_id": id }));
    } else {
        println!("created team {name} ({id})");
    }
}

fn key_json(key: &ApiKeyRecord) -> serde_json::Value {
    json!({
        "prefix": key.prefix,
        "team": key.team_name,
        "profile": key.profile_name,
        "scope": key.access,
        "created_at": key.created_at.to_rfc3339(),
        "expires_at": key.expires_at.map(|t| t.to_rfc3339()),
        "revoked_at": key.revoked_at.map(|t| t.to_rfc3339()),
    })
}

/// The new key, the only time its token is ever shown.
pub fn key_created(issued: &IssuedKey, as_json: bool) {
    if as_json {
        let mut value = key_json(&issued.record);
        value["key"] = json!(issued.token);
        print_json(&value);
    } else {
        println!("{}", issued.token);
        eprintln!(
            "created {} key {} for {}/{} — store it now, it is not shown again",
            issued.record.access,
            issued.record.prefix,
            issued.record.team_name,
            issued.record.profile_name
        );
    }
}

pub fn keys(keys: &[ApiKeyRecord], as_json: bool) {
    if as_json {
        print_json(&json!(keys.iter().map(key_json).collect::<Vec<_>>()));
        return;
    }
    for key in keys {
        let state = match (key.revoked_at, key.expires_at) {
            (Some(at), _) => format!("revoked {}", at.to_rfc3339()),
            (None, Some(at)) => format!("expires {}", at.to_rfc3339()),
            (None, None) => "no expiry".to_string(),
        };
        println!(
            "{}  {}/{}  {}  {}",
            key.prefix, key.team_name, key.profile_name, key.access, state
        );
    }
}

/// `mnem export`: what the pack holds. When the pack itself went to standard output the
/// summary goes to standard error, so the pack stays a clean file.
pub fn exported(counts: &PackCounts, bytes: usize, pack_on_stdout: bool, as_json: bool) {
    let summary = json!({ "counts": counts, "bytes": bytes });
    let text = if as_json {
        serde_json::to_string_pretty(&summary).unwrap_or_default()
    } else {
        format!(
            "exported {} evidence, {} relationships, {} entities, {} predicates, {} profiles \
             ({bytes} bytes)",
            counts.evidence,
            counts.relationships,
            counts.entities,
            counts.predicates,
            counts.profiles
        )
    };
    if pack_on_stdout {
        eprintln!("{text}");
    } else {
        println!("{text}");
    }
}

/// `mnem import`: what was written and what was found already stored.
pub fn imported(report: &PackImport, as_json: bool) {
    if as_json {
        print_json(&json!(report));
        return;
    }
    println!(
        "evidence: {} added, {} already stored, {} merged into the same text",
        report.evidence_added, report.evidence_present, report.evidence_merged
    );
    if report.evidence_held > 0 {
        println!(
            "held by screening: {} (stored quarantined, out of recall until released; `mnem list --quarantined`)",
            report.evidence_held
        );
    }
    println!(
        "entities: {} added, {} matched by name, {} already stored",
        report.entities_added, report.entities_matched, report.entities_present
    );
    println!(
        "relationships: {} added, {} already stored; predicates: {} declared",
        report.relationships_added, report.relationships_present, report.predicates_added
    );
}

/// `mnem import` of transcripts, notes or a benchmark: what happened to every item, and
/// each failure where it was.
pub fn imported_items(
    report: &mnem_service::ImportReport,
    took: std::time::Duration,
    as_json: bool,
) {
    if as_json {
        print_json(&json!({ "report": report, "millis": took.as_millis() }));
        return;
    }
    let seconds = took.as_secs_f64().max(1e-3);
    println!(
        "{} items in {:.1} s ({:.0}/s): {} stored, {} already stored, {} merged with the same \
         text, {} quarantined, {} superseded, {} failed",
        report.items,
        seconds,
        report.items as f64 / seconds,
        report.stored,
        report.already_stored,
        report.merged,
        report.quarantined,
        report.superseded,
        report.failed.len()
    );
    if report.unchanged_documents > 0 {
        println!("{} unchanged files skipped", report.unchanged_documents);
    }
    if report.quarantined > 0 {
        println!("held items: `mnem list --quarantined` shows them, `mnem release` returns them");
    }
    for problem in &report.failed {
        println!("failed: {}: {}", problem.at, problem.reason);
    }
}

/// `mnem dream`: what one pass read, proposed, added and marked stale.
pub fn dreamed(report: &DreamReport, took: std::time::Duration, as_json: bool) {
    if as_json {
        print_json(&json!({ "report": report, "millis": took.as_millis() }));
        return;
    }
    println!(
        "read {} relationships, proposed {} hypotheses ({} new), marked {} stale, in {} ms",
        report.relationships,
        report.proposed,
        report.added,
        report.staled,
        took.as_millis()
    );
    if report.model_readings > 0 {
        println!("the hypothesis model read {}", report.model_readings);
    }
}

/// `mnem communities`: the pass (with `--compute`), then the listing.
pub fn communities(
    report: Option<(CommunityReport, std::time::Duration)>,
    listed: &[Community],
    as_json: bool,
) {
    if as_json {
        let report =
            report.map(|(report, took)| json!({"report": report, "millis": took.as_millis()}));
        print_json(&json!({ "computed": report, "communities": listed }));
        return;
    }
    if let Some((report, took)) = report {
        println!(
            "read {} relationships, found {} {}, version {} ({}), in {} ms",
            report.relationships,
            report.communities,
            if report.communities == 1 {
                "community"
            } else {
                "communities"
            },
            report.version,
            if report.changed { "new" } else { "unchanged" },
            took.as_millis()
        );
    }
    if listed.is_empty() {
        println!("No communities (run `mnem communities --compute`).");
    }
    for c in listed {
        println!(
            "~ {}\n    {}  version {}  {}",
            c.summary,
            c.community_id,
            c.version,
            c.computed_at.to_rfc3339()
        );
    }
}

/// `mnem hypotheses list`.
pub fn hypotheses(listed: &[Hypothesis], as_json: bool) {
    if as_json {
        print_json(&json!(listed));
        return;
    }
    if listed.is_empty() {
        println!("No hypotheses.");
    }
    for h in listed {
        println!("? {} [{}]\n    {}", h.statement, h.status, h.hypothesis_id);
        if let Some(reading) = h.model_reading.as_ref().filter(|r| r.is_usable()) {
            println!("    {}", model_reading(reading));
        }
    }
}

/// A model's reading on one line, marked as the model's: its phrasing (model text, shown
/// as written but bounded to one line when stored) and plausibility.
fn model_reading(reading: &mnem_core::graph::ModelReading) -> String {
    let plausibility = reading
        .plausibility
        .map(|p| format!(" (plausibility {p:.2})"))
        .unwrap_or_default();
    format!(
        "{} says: {}{plausibility}",
        reading.model,
        reading.statement.as_deref().unwrap_or("-")
    )
}

/// `mnem hypotheses show|confirm|reject`.
pub fn hypothesis(h: &Hypothesis, as_json: bool) {
    if as_json {
        print_json(&json!(h));
        return;
    }
    println!("{} [{}]", h.statement, h.status);
    println!("  id {}  rule {}", h.hypothesis_id, h.rule);
    match &h.model_reading {
        Some(reading) if reading.is_usable() => println!("  {}", model_reading(reading)),
        Some(reading) => println!(
            "  {} gave no usable reading ({})",
            reading.model,
            reading.read_at.to_rfc3339()
        ),
        None => {}
    }
    for source in &h.sources {
        println!(
            "  from relationship {} (version {})",
            source.relationship_id, source.version
        );
    }
    if let Some(reason) = &h.resolution {
        let at = h.resolved_at.map(|t| t.to_rfc3339()).unwrap_or_default();
        println!("  resolved {at}: {reason}");
    }
    for id in &h.confirmed_by {
        println!("  proved by relationship {id}");
    }
}
