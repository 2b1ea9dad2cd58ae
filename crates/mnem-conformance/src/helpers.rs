//! Helpers that keep each case to one assertion per line: `want_set` for questions about
//! membership (so a set answer cannot pin an order the contract leaves open), `want_order`
//! for order, and `want_increasing_stamps`, which fails outright if two writes share a
//! stamp instead of letting a window assertion quietly weaken.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use mnem_core::{
    Actor, Evidence, EvidenceId, ManualClock, NewEvidence, RankingProfile, RecallHit, RecallQuery,
    Timestamp,
};
use mnem_embed::Embedder;
use mnem_service::Memory;
use mnem_store::{EvidenceStore, GraphStore, SearchIndex};

/// What a backend must be to run the suite: both storage traits, cheaply cloneable.
pub trait Backend: GraphStore + SearchIndex + Clone {}

impl<S: GraphStore + SearchIndex + Clone> Backend for S {}

/// 2024-01-01T00:00:00Z: every case starts its clock here.
pub const START: Timestamp = Timestamp::from_seconds(1_704_067_200);

/// A fresh store behind the service layer, its hand-driven clock (one millisecond per
/// reading) and a team.
pub struct Fixture<S> {
    pub memory: Memory<S>,
    pub store: S,
    pub clock: Arc<ManualClock>,
    pub actor: Actor,
}

impl<S: Backend> Fixture<S> {
    /// Another profile of the fixture's team (created on first use).
    pub async fn profile(&self, name: &str) -> Actor {
        self.store
            .open_profile("conformance", name)
            .await
            .expect("open profile")
    }

    /// Lexical-only: the contract rules hold with no embedding provider at all.
    /// `open` makes a fresh, empty store driven by the given clock.
    pub async fn open<F, Fut>(open: F) -> Self
    where
        F: Fn(Arc<ManualClock>) -> Fut,
        Fut: Future<Output = S>,
    {
        Self::open_with(open, None).await
    }

    pub async fn open_with<F, Fut>(open: F, embedder: Option<Arc<dyn Embedder>>) -> Self
    where
        F: Fn(Arc<ManualClock>) -> Fut,
        Fut: Future<Output = S>,
    {
        let clock = Arc::new(ManualClock::new(START, 1_000));
        let store = open(Arc::clone(&clock)).await;
        let actor = store.open_team("conformance").await.expect("open team");
        let memory = Memory::open(store.clone(), embedder)
            .await
            .expect("open memory");
        Self {
            memory,
            store,
            clock,
            actor,
        }
    }

    /// The same store and clock, recalled through `profile` instead of the default.
    pub fn with_profile(mut self, profile: RankingProfile) -> Self {
        self.memory = self.memory.with_profile(profile);
        self
    }

    /// Runs the embedding worker until nothing is pending.
    pub async fn embed_pending(&self) {
        self.memory.embed_pending().await.expect("embed pending");
    }

    pub async fn remember(&self, content: &str) -> Evidence {
        self.remember_with(NewEvidence::new(content)).await
    }

    pub async fn remember_with(&self, new: NewEvidence) -> Evidence {
        self.store
            .remember(&self.actor, new)
            .await
            .expect("remember")
            .evidence
    }

    /// Writes `content` observed `offset_seconds` after [`START`].
    pub async fn remember_at(&self, content: &str, offset_seconds: i64) -> Evidence {
        let mut new = NewEvidence::new(content);
        new.observed_at = Some(START.plus_seconds(offset_seconds));
        self.remember_with(new).await
    }

    pub async fn recall(&self, query: RecallQuery) -> Vec<RecallHit> {
        self.recall_as(&self.actor, query).await
    }

    pub async fn recall_as(&self, actor: &Actor, query: RecallQuery) -> Vec<RecallHit> {
        self.memory.recall(actor, query).await.expect("recall").hits
    }
}

/// A listing: an empty query with the given limit.
pub fn listing(limit: usize) -> RecallQuery {
    RecallQuery {
        limit,
        ..RecallQuery::default()
    }
}

pub fn ids(hits: &[RecallHit]) -> Vec<EvidenceId> {
    hits.iter().map(|h| h.evidence.id).collect()
}

#[track_caller]
pub fn want_set(hits: &[RecallHit], want: &[&Evidence], what: &str) {
    let got: BTreeSet<EvidenceId> = ids(hits).into_iter().collect();
    let want_ids: BTreeSet<EvidenceId> = want.iter().map(|e| e.id).collect();
    assert_eq!(
        hits.len(),
        got.len(),
        "{what}: an evidence id came back twice"
    );
    assert_eq!(
        got,
        want_ids,
        "{what}: got {:?}, want {:?}",
        contents(hits),
        want.iter().map(|e| e.content.as_str()).collect::<Vec<_>>()
    );
}

#[track_caller]
pub fn want_order(hits: &[RecallHit], want: &[&Evidence], what: &str) {
    let want_ids: Vec<EvidenceId> = want.iter().map(|e| e.id).collect();
    assert_eq!(
        ids(hits),
        want_ids,
        "{what}: got {:?}, want {:?}",
        contents(hits),
        want.iter().map(|e| e.content.as_str()).collect::<Vec<_>>()
    );
}

#[track_caller]
pub fn want_empty(hits: &[RecallHit], what: &str) {
    assert!(
        hits.is_empty(),
        "{what}: want nothing, got {:?}",
        contents(hits)
    );
}

/// Fails if any two consecutive writes share (or reverse) an `observed_at` or a
/// `recorded_at` stamp.
#[track_caller]
pub fn want_increasing_stamps(items: &[&Evidence]) {
    for pair in items.windows(2) {
        assert!(
            pair[0].observed_at < pair[1].observed_at,
            "observed_at not strictly increasing: {} then {}",
            pair[0].observed_at,
            pair[1].observed_at
        );
        assert!(
            pair[0].recorded_at < pair[1].recorded_at,
            "recorded_at not strictly increasing: {} then {}",
            pair[0].recorded_at,
            pair[1].recorded_at
        );
    }
}

fn contents(hits: &[RecallHit]) -> Vec<&str> {
    hits.iter().map(|h| h.evidence.content.as_str()).collect()
}

/// Writes each structured remember request (JSON) through `memory`.
pub async fn remember_all<S: GraphStore + SearchIndex>(
    memory: &Memory<S>,
    actor: &Actor,
    requests: impl IntoIterator<Item = serde_json::Value>,
) {
    for request in requests {
        let request: mnem_core::graph::RememberRequest =
            serde_json::from_value(request).expect("request json");
        memory
            .remember_request(actor, request)
            .await
            .expect("remember");
    }
}

/// An optional recall branch (`branch`: `hypotheses`, `communities`) failing: `query`
/// answers the same results before and after `break_lookup`; what the branch adds
/// (`shown`, `Some(count)` when asked) goes from one item to none; the failure is
/// recorded as a degraded `branch`, in the recall and in the store's log.
pub async fn an_optional_branch_fails_quietly<S: GraphStore + SearchIndex>(
    memory: &Memory<S>,
    actor: &Actor,
    (query, branch): (RecallQuery, &str),
    shown: fn(&mnem_service::Recall) -> Option<usize>,
    break_lookup: impl Future<Output = ()>,
) {
    let before = memory.recall(actor, query.clone()).await.expect("recall");
    assert_eq!(shown(&before), Some(1), "{branch} shown before");
    break_lookup.await;
    let after = memory.recall(actor, query).await.expect("recall");
    assert_eq!(shown(&after), Some(0), "{branch} omitted after");
    assert_eq!(ids(&after.hits), ids(&before.hits));
    assert!(after.degraded.iter().any(|d| d.branch == branch));
    let recorded = memory
        .store()
        .last_degradation()
        .await
        .expect("read")
        .expect("recorded");
    assert_eq!(recorded.branch, branch);
}

/// Turn `n` of one conversation (source group `conversation`), stamped `n` seconds into
/// 2026: for the backends' own tests of a recall's reads.
pub fn conversation_turn(n: i64) -> NewEvidence {
    let mut new = NewEvidence::new(format!("turn {n} of the conversation"));
    new.source_key = Some("conversation".into());
    new.observed_at = Some(Timestamp::from_seconds(1_767_225_600 + n));
    new
}

/// The texts after `hit` in its group, as the windows read them.
pub async fn texts_after<S: EvidenceStore>(
    store: &S,
    actor: &Actor,
    hit: &Evidence,
) -> Vec<String> {
    let mut read = store
        .neighbours(
            actor,
            &RecallQuery::text("conversation"),
            store.clock().now(),
            vec![hit.clone()],
            2,
        )
        .await
        .expect("neighbours");
    read.remove(&hit.id)
        .map(|found| found.after.into_iter().map(|e| e.content).collect())
        .unwrap_or_default()
}
