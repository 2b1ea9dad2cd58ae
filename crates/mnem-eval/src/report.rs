//! What an eval run measured — per question (`QuestionResult`, `BudgetResult`) and summed
//! up: quality per question group, bytes, latency, leaks; printed as a table or
//! serialised as one JSON document. `run` fills these; nothing here reaches back into it.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::dataset::QuestionClass;
use crate::metrics::{mean, ndcg, percentile, recall_any, recall_fraction, reciprocal_rank};

/// What one question got under one profile and window.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionResult {
    pub profile: String,
    pub window: usize,
    pub question_id: String,
    pub category: String,
    pub class: QuestionClass,
    pub gold_items: usize,
    pub gold_groups: usize,
    /// 1-based ranks of gold turns in the deep recall.
    pub item_ranks: Vec<usize>,
    /// 1-based ranks of gold sessions (a session ranks where its best turn ranks).
    pub group_ranks: Vec<usize>,
    /// The benchmark ids of the deep recall's first ten turns, in rank order: what a
    /// gold turn ranked below, for reading misses from the `--out` file.
    pub top_items: Vec<String>,
    /// What the agent-facing recall returned under each byte budget.
    pub budgets: Vec<BudgetResult>,
    pub top_score: Option<f64>,
    /// Results from another team (must be zero).
    pub leaks: usize,
}

/// One agent-facing recall of a question, under one byte budget.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetResult {
    pub context_bytes: usize,
    /// For each gold turn that was returned (as a result, or in a result's window), the
    /// 1-based rank of the result that carried it; ascending.
    pub item_ranks: Vec<usize>,
    /// Whether the returned text (results and windows, as excerpted) holds the answer,
    /// for a question whose answer a gold turn quotes word for word; `None` otherwise.
    pub answer_kept: Option<bool>,
    pub returned: usize,
    /// Every context byte returned, windows included.
    pub bytes: usize,
    pub latency_ms: f64,
    pub query_embedding_ms: f64,
    /// Time spent reading and assembling evidence windows.
    pub windows_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: &'static str,
    pub embedder: String,
    pub limit: usize,
    pub context_bytes: Vec<usize>,
    pub ingest: IngestReport,
    pub profiles: Vec<ProfileReport>,
    /// `--fit`: the fitted profile (measured last) and how it was reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<crate::FitReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IngestReport {
    pub items: usize,
    pub teams: usize,
    pub write_secs: f64,
    pub writes_per_sec: f64,
    pub embedded: usize,
    pub embed_secs: f64,
    pub embeds_per_sec: f64,
    /// Turns the write-time screening held (stored `quarantined`, so never recalled), and
    /// how many of them a scored question cites: benign text must not be hidden.
    pub quarantined: usize,
    pub gold_quarantined: usize,
    /// Turns that repeated a stored turn (same text, session and time) and so made no item
    /// of their own (content-hash de-duplication).
    pub deduplicated: usize,
    /// What the entity hop could reach ([`crate::mentions`]).
    pub mentions: crate::mentions::MentionReport,
}

/// Quality over one group of questions. Session metrics follow LongMemEval (a session
/// ranks where its best turn ranks); turn metrics follow LoCoMo (share of gold turns).
#[derive(Debug, Clone, Serialize)]
pub struct GroupMetrics {
    pub group: String,
    pub questions: usize,
    pub session_recall_any_at_1: f64,
    pub session_recall_any_at_5: f64,
    pub session_recall_any_at_10: f64,
    pub session_ndcg_any_at_10: f64,
    /// What the agent-facing recall returned, per byte budget.
    pub in_bytes: Vec<InBytes>,
    /// Any gold turn among the top 5 of the deep ranking (single items, no budget).
    pub turn_recall_any_at_5: f64,
    pub turn_recall_at_5: f64,
    pub turn_recall_at_10: f64,
    pub turn_mrr: f64,
    /// Mean score of the first result (for abstention: lower is better).
    pub mean_top_score: f64,
}

/// Gold turns inside what the agent-facing recall returned under one byte budget: as a
/// result, or inside a result's window.
#[derive(Debug, Clone, Serialize)]
pub struct InBytes {
    pub context_bytes: usize,
    /// Share of gold turns returned.
    pub turn_recall: f64,
    /// Any gold turn returned.
    pub turn_recall_any: f64,
    /// Any gold turn returned within the first 5 results (their windows included).
    pub turn_recall_any_at_5: f64,
}

impl GroupMetrics {
    fn of(group: String, budgets: &[usize], results: &[&QuestionResult]) -> Self {
        let avg = |f: &dyn Fn(&QuestionResult) -> f64| {
            mean(&results.iter().map(|r| f(r)).collect::<Vec<_>>())
        };
        let in_bytes = budgets
            .iter()
            .enumerate()
            .map(|(b, &context_bytes)| {
                let ranks = |r: &QuestionResult| r.budgets[b].item_ranks.clone();
                InBytes {
                    context_bytes,
                    turn_recall: avg(&|r| recall_fraction(&ranks(r), r.gold_items, usize::MAX)),
                    turn_recall_any: avg(&|r| recall_any(&ranks(r), usize::MAX)),
                    turn_recall_any_at_5: avg(&|r| recall_any(&ranks(r), 5)),
                }
            })
            .collect();
        Self {
            group,
            questions: results.len(),
            session_recall_any_at_1: avg(&|r| recall_any(&r.group_ranks, 1)),
            session_recall_any_at_5: avg(&|r| recall_any(&r.group_ranks, 5)),
            session_recall_any_at_10: avg(&|r| recall_any(&r.group_ranks, 10)),
            session_ndcg_any_at_10: avg(&|r| ndcg(&r.group_ranks, r.gold_groups, 10)),
            in_bytes,
            turn_recall_any_at_5: avg(&|r| recall_any(&r.item_ranks, 5)),
            turn_recall_at_5: avg(&|r| recall_fraction(&r.item_ranks, r.gold_items, 5)),
            turn_recall_at_10: avg(&|r| recall_fraction(&r.item_ranks, r.gold_items, 10)),
            turn_mrr: avg(&|r| reciprocal_rank(&r.item_ranks)),
            mean_top_score: avg(&|r| r.top_score.unwrap_or(0.0)),
        }
    }
}

/// Percentiles of a sample, in its unit.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

impl Spread {
    pub(crate) fn of(samples: &[f64]) -> Self {
        Self {
            p50: percentile(samples, 50.0),
            p95: percentile(samples, 95.0),
            p99: percentile(samples, 99.0),
        }
    }
}

/// Size and speed of the agent-facing recall under one byte budget.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetReport {
    pub context_bytes: usize,
    pub bytes_returned: Spread,
    pub results_returned: Spread,
    pub latency_ms: Spread,
    pub latency_without_query_embedding_ms: Spread,
    pub query_embedding_ms: Spread,
    pub windows_ms: Spread,
    /// Scored questions whose answer a gold turn quotes word for word, and how many of
    /// them got that answer in the returned text: an excerpt that keeps a gold turn but
    /// cuts its answer out counts under `in N`, not here.
    pub answer_quoted: usize,
    pub answer_kept: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileReport {
    pub profile: String,
    /// The evidence window the agent-facing recalls asked for.
    pub window: usize,
    /// Headline: every scored question.
    pub overall: GroupMetrics,
    /// Scored questions by benchmark category.
    pub by_category: Vec<GroupMetrics>,
    /// Abstention (LongMemEval `_abs`) and adversarial (LoCoMo category 5) questions.
    pub separate: Vec<GroupMetrics>,
    pub unscorable: usize,
    pub budgets: Vec<BudgetReport>,
    /// Results whose team differs from the asking team: must be 0.
    pub cross_team_leaks: usize,
}

impl ProfileReport {
    pub fn summarise(
        profile: &str,
        window: usize,
        budgets: &[usize],
        results: &[QuestionResult],
    ) -> Self {
        let scored: Vec<&QuestionResult> = results
            .iter()
            .filter(|r| r.class == QuestionClass::Scored)
            .collect();
        let mut categories: BTreeMap<&str, Vec<&QuestionResult>> = BTreeMap::new();
        for result in &scored {
            categories.entry(&result.category).or_default().push(result);
        }
        let separate = [
            (QuestionClass::Abstention, "abstention"),
            (QuestionClass::Adversarial, "adversarial"),
        ]
        .into_iter()
        .filter_map(|(class, name)| {
            let group: Vec<&QuestionResult> = results.iter().filter(|r| r.class == class).collect();
            (!group.is_empty()).then(|| GroupMetrics::of(name.into(), budgets, &group))
        })
        .collect();
        let budget_reports = budgets
            .iter()
            .enumerate()
            .map(|(b, &context_bytes)| {
                let samples = |f: &dyn Fn(&BudgetResult) -> f64| -> Vec<f64> {
                    results.iter().map(|r| f(&r.budgets[b])).collect()
                };
                let quoted = scored.iter().filter_map(|r| r.budgets[b].answer_kept);
                BudgetReport {
                    context_bytes,
                    bytes_returned: Spread::of(&samples(&|r| r.bytes as f64)),
                    results_returned: Spread::of(&samples(&|r| r.returned as f64)),
                    latency_ms: Spread::of(&samples(&|r| r.latency_ms)),
                    latency_without_query_embedding_ms: Spread::of(&samples(&|r| {
                        r.latency_ms - r.query_embedding_ms
                    })),
                    query_embedding_ms: Spread::of(&samples(&|r| r.query_embedding_ms)),
                    windows_ms: Spread::of(&samples(&|r| r.windows_ms)),
                    answer_quoted: quoted.clone().count(),
                    answer_kept: quoted.filter(|&kept| kept).count(),
                }
            })
            .collect();
        Self {
            profile: profile.to_string(),
            window,
            overall: GroupMetrics::of("overall".into(), budgets, &scored),
            by_category: categories
                .into_iter()
                .map(|(name, group)| GroupMetrics::of(name.to_string(), budgets, &group))
                .collect(),
            separate,
            unscorable: results
                .iter()
                .filter(|r| r.class == QuestionClass::Unscorable)
                .count(),
            budgets: budget_reports,
            cross_team_leaks: results.iter().map(|r| r.leaks).sum(),
        }
    }
}

/// A table column: its heading and how to read it off a group.
type Column = (&'static str, fn(&GroupMetrics) -> f64);

impl EvalReport {
    /// A readable table: the dataset's own metrics first, then bytes and latency.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let i = &self.ingest;
        let _ = writeln!(
            s,
            "{}: {} items in {} teams; remember {:.0}/s ({:.1}s); embedded {} at {:.1}/s ({:.1}s); embedder {}",
            self.dataset, i.items, i.teams, i.writes_per_sec, i.write_secs, i.embedded,
            i.embeds_per_sec, i.embed_secs, self.embedder
        );
        let _ = writeln!(
            s,
            "held by screening at write: {} turns, {} of them cited by a scored question; \
             repeats absorbed by de-duplication: {}",
            i.quarantined, i.gold_quarantined, i.deduplicated
        );
        let m = &i.mentions;
        let _ = writeln!(
            s,
            "mentions: {} keys per turn (p50); questions citing 2+ turns: {}, of them {} where \
             two cited turns share a mention at most {} turns make ({} sharing any)",
            m.keys_p50, m.multi_turn_questions, m.linked, m.cut_off, m.linked_at_all
        );
        let budgets: Vec<String> = self.context_bytes.iter().map(|b| b.to_string()).collect();
        let _ = writeln!(
            s,
            "agent-facing recall: limit {}, budgets {} bytes; `in N` = gold turns among what \
             fits N bytes (results and their windows)",
            self.limit,
            budgets.join(", ")
        );
        let columns: &[Column] = if self.dataset == "locomo" {
            &[
                ("T-R@5", |g| g.turn_recall_at_5),
                ("T-R@10", |g| g.turn_recall_at_10),
                ("T-MRR", |g| g.turn_mrr),
                ("S-any@5", |g| g.session_recall_any_at_5),
            ]
        } else {
            &[
                ("S-any@1", |g| g.session_recall_any_at_1),
                ("S-any@5", |g| g.session_recall_any_at_5),
                ("S-any@10", |g| g.session_recall_any_at_10),
                ("S-nDCG@10", |g| g.session_ndcg_any_at_10),
                ("T-any@5", |g| g.turn_recall_any_at_5),
            ]
        };
        // Per budget: LoCoMo counts the share of gold turns, LongMemEval any gold turn
        // within the first five results.
        let budget_value = |g: &InBytes| {
            if self.dataset == "locomo" {
                g.turn_recall
            } else {
                g.turn_recall_any_at_5
            }
        };
        let budget_heading = if self.dataset == "locomo" {
            "T-R in"
        } else {
            "T-any@5 in"
        };
        for profile in &self.profiles {
            let _ = writeln!(s, "\nprofile {} window {}", profile.profile, profile.window);
            let _ = write!(s, "  {:<28} {:>5}", "questions", "n");
            for (name, _) in columns {
                let _ = write!(s, " {name:>10}");
            }
            for budget in &self.context_bytes {
                let _ = write!(s, " {:>15}", format!("{budget_heading} {budget}"));
            }
            let _ = writeln!(s, " {:>9}", "top-score");
            let rows = std::iter::once(&profile.overall)
                .chain(&profile.by_category)
                .chain(&profile.separate);
            for group in rows {
                let _ = write!(s, "  {:<28} {:>5}", group.group, group.questions);
                for (_, value) in columns {
                    let _ = write!(s, " {:>10.3}", value(group));
                }
                for in_bytes in &group.in_bytes {
                    let _ = write!(s, " {:>15.3}", budget_value(in_bytes));
                }
                let _ = writeln!(s, " {:>9.3}", group.mean_top_score);
            }
            let spread = |x: &Spread| format!("p50 {:.1} p95 {:.1} p99 {:.1}", x.p50, x.p95, x.p99);
            for budget in &profile.budgets {
                let _ = writeln!(
                    s,
                    "  in {} B: bytes returned p50 {:.0} p95 {:.0}; results p50 {:.0}; answer kept {} of {}; recall ms {}; without query embedding {}; windows p50 {:.1}",
                    budget.context_bytes,
                    budget.bytes_returned.p50,
                    budget.bytes_returned.p95,
                    budget.results_returned.p50,
                    budget.answer_kept,
                    budget.answer_quoted,
                    spread(&budget.latency_ms),
                    spread(&budget.latency_without_query_embedding_ms),
                    budget.windows_ms.p50,
                );
            }
            let _ = writeln!(s, "  cross-team leaks: {}", profile.cross_team_leaks);
            if profile.unscorable > 0 {
                let _ = writeln!(s, "  unscorable (no gold evidence): {}", profile.unscorable);
            }
        }
        if let Some(fit) = &self.fit {
            let _ = writeln!(
                s,
                "\nfit on {} scored questions: turn MRR {:.4} ({}) -> {:.4} ({})",
                fit.questions, fit.start_mrr, fit.start, fit.fitted_mrr, fit.fitted
            );
            for (key, value, mrr) in &fit.moves {
                let _ = writeln!(s, "  {key} = {value} -> MRR {mrr:.4}");
            }
        }
        s
    }
}
