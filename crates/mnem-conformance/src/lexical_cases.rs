//! Lexical relevance is defined once, in `mnem_core::lexical`: these cases hold every
//! backend's lexical branch to that definition, number for number, over the team's own
//! texts. Two backends that both pass give the same relevance to the same corpus.

use std::collections::{BTreeMap, HashMap};

use mnem_core::lexical::{document_terms, query_terms, Bm25, CorpusStats};
use mnem_core::{
    Actor, Candidate, Evidence, EvidenceId, NewEvidence, RecallQuery, Space, Timestamp,
};
use mnem_store::EvidenceStore;

use crate::helpers::{Backend, Fixture};

/// Relevance may differ by float rounding (SQL arithmetic vs Rust), nothing more.
const TOLERANCE: f64 = 1e-6;

/// Far after every stamp the cases write.
const NOW: Timestamp = Timestamp::from_seconds(4_000_000_000);

/// The relevance `mnem_core::lexical` gives each of `texts` (a team's every counted text,
/// by id) for `query`: `None` for a text sharing no term.
fn core_relevance(texts: &[(EvidenceId, &str)], query: &str) -> HashMap<EvidenceId, f64> {
    let documents: Vec<_> = texts
        .iter()
        .map(|(id, text)| (*id, document_terms(text)))
        .filter(|(_, terms)| terms.length > 0)
        .collect();
    let mut containing: BTreeMap<&str, u64> = BTreeMap::new();
    for (_, terms) in &documents {
        for term in terms.frequencies.keys() {
            *containing.entry(term).or_insert(0) += 1;
        }
    }
    let bm25 = Bm25::new(CorpusStats {
        documents: documents.len() as u64,
        total_length: documents.iter().map(|(_, t)| u64::from(t.length)).sum(),
    });
    let terms = query_terms(query);
    documents
        .iter()
        .filter(|(_, doc)| terms.iter().any(|t| doc.frequencies.contains_key(t)))
        .map(|(id, doc)| {
            let parts = terms.iter().map(|term| {
                let idf = bm25.idf(containing.get(term.as_str()).copied().unwrap_or(0));
                (idf, doc.frequencies.get(term).copied().unwrap_or(0))
            });
            (*id, bm25.score(parts, doc.length))
        })
        .collect()
}

fn relevance_by_id(candidates: &[Candidate]) -> HashMap<EvidenceId, f64> {
    candidates
        .iter()
        .map(|c| (c.evidence.id, c.relevance.expect("a text query ranks")))
        .collect()
}

pub async fn lexical_relevance_is_the_cores_bm25_over_the_teams_own_texts<S: Backend>(
    fx: Fixture<S>,
) {
    // Another team's texts are dense in the query terms: if its counts leaked into this
    // team's idf or average length, every number below would move. They are written as
    // one batch, so a term shared by many texts of one write is counted once per text.
    let other = fx.store.open_team("other-team").await.expect("team");
    let dense = (0..12)
        .map(|i| NewEvidence::new(format!("deploy pipeline deploy {}", "pipeline ".repeat(i))))
        .collect();
    fx.store
        .remember_batch(&other, dense)
        .await
        .expect("remember batch");
    let texts = [
        "The deploy pipeline failed twice on Friday",
        "Deploying the pipelines again: deploy, deploy, deploy",
        "Café menu: croissants, coffee and a long note about nothing in particular at all",
        "pipeline",
        "Rollback finished; the deployment is healthy",
        "Nothing here matches the query at all",
    ];
    // Single writes and a batch count the same.
    let mut written: Vec<Evidence> = Vec::new();
    for text in &texts[..3] {
        written.push(fx.remember(text).await);
    }
    let batch = texts[3..].iter().map(|t| NewEvidence::new(*t)).collect();
    written.extend(
        fx.store
            .remember_batch(&fx.actor, batch)
            .await
            .expect("remember batch")
            .into_iter()
            .map(|stored| stored.evidence),
    );
    // A retracted text is hidden but still counted, like an index entry not yet removed;
    // a forgotten one is gone from the counts too.
    let retracted = fx.remember("deploy notes, retracted later").await;
    fx.store
        .retract(&fx.actor, retracted.id, None)
        .await
        .expect("retract");
    let mut private = NewEvidence::new("deploy secrets, forgotten later");
    private.space = Space::Private;
    let forgotten = fx.remember_with(private).await;
    fx.memory
        .forget(&fx.actor, vec![forgotten.id])
        .await
        .expect("forget");

    let mut counted: Vec<(EvidenceId, &str)> =
        written.iter().map(|e| (e.id, e.content.as_str())).collect();
    counted.push((retracted.id, retracted.content.as_str()));
    for query in [
        "deploy pipeline",
        "deployment",
        "cafe coffee",
        "pipeline rollback healthy",
        "the",
    ] {
        let want: HashMap<_, _> = core_relevance(&counted, query)
            .into_iter()
            .filter(|(id, _)| *id != retracted.id)
            .collect();
        let got = fx
            .store
            .lexical_candidates(&fx.actor, &RecallQuery::text(query), NOW, 50)
            .await
            .expect("lexical");
        let got = relevance_by_id(&got);
        let mut got_ids: Vec<_> = got.keys().collect();
        let mut want_ids: Vec<_> = want.keys().collect();
        got_ids.sort();
        want_ids.sort();
        assert_eq!(got_ids, want_ids, "{query:?}: the matching texts");
        for (id, want) in &want {
            let got = got[id];
            assert!(
                (got - want).abs() < TOLERANCE,
                "{query:?}: {id} scored {got}, the core's BM25 says {want}"
            );
        }
    }
}

/// MaxScore pruning never changes the lexical branch: `pruned` and `full` are two handles
/// on one store, the second with pruning off (backends expose that switch for this test
/// only). Run by each backend's own tests, since making the pair is backend-specific.
pub async fn pruning_never_changes_the_lexical_branch<S: EvidenceStore>(
    pruned: &S,
    full: &S,
    actor: &Actor,
) {
    // "status" is in every text, "update" in half (both common); each rare word in one
    // text of twenty, at different term frequencies and lengths, so scores spread.
    let rare = [
        "kestrel", "saffron", "quartz", "lagoon", "ember", "falcon", "garnet", "harbor", "indigo",
        "juniper", "kayak", "lantern", "meadow", "nectar", "opal", "pepper", "quill", "raven",
        "sorrel", "tundra",
    ];
    for i in 0..400 {
        let mut text = String::from("status");
        if i % 2 == 0 {
            text.push_str(" update update");
        }
        text.push_str(&format!(" {}", rare[i % rare.len()]).repeat(1 + i % 3));
        text.push_str(&" filler".repeat(i % 7));
        pruned
            .remember(actor, NewEvidence::new(text))
            .await
            .expect("remember");
    }
    // A rare word only in long texts: its matches score below short texts dense in a
    // common word, so pruning must notice its bound fails and read everything.
    for _ in 0..5 {
        let text = format!("zircon{}", " filler".repeat(300));
        pruned
            .remember(actor, NewEvidence::new(text))
            .await
            .expect("remember");
    }
    let queries = [
        "status kestrel",
        "status update saffron",
        "update quartz lagoon",
        "status update",
        "ember",
        "status update kestrel saffron quartz lagoon ember falcon garnet harbor",
        "update zircon",
    ];
    for text in queries {
        for pool in [1, 5, 40, 200] {
            let query = RecallQuery::text(text);
            let ranked = |c: &Candidate| (c.evidence.id, c.relevance);
            let with_pruning: Vec<_> = pruned
                .lexical_candidates(actor, &query, NOW, pool)
                .await
                .expect("pruned")
                .iter()
                .map(ranked)
                .collect();
            let without: Vec<_> = full
                .lexical_candidates(actor, &query, NOW, pool)
                .await
                .expect("full")
                .iter()
                .map(ranked)
                .collect();
            assert_eq!(with_pruning, without, "query {text:?}, pool {pool}");
        }
    }
}
