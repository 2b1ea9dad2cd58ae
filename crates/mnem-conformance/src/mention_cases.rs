//! Mentions and the entity hop (`mnem_core::mention`, `mnem_core::hop`): an item that
//! shares a rare name with a result joins it, a hub never brings anything, and a
//! mention never surfaces an item its reader could not recall. Each case recalls by a
//! word only the leader holds ("ferry"); the others share only the name "Zanzibar",
//! always inside a sentence (a sentence's first word is not read as a name).

use std::collections::HashSet;

use mnem_core::hop::MentionRead;
use mnem_core::{
    Actor, Evidence, EvidenceId, NewEvidence, RankingProfile, RecallQuery, Space, CONVEX_6_PROFILE,
    DEFAULT_PROFILE,
};

use crate::helpers::{want_set, Backend, Fixture};

const KEY: &str = "zanzibar";

/// The default's hop, with credit half the leader's (the default gives 0.2) and a hub
/// past `max_mentions`.
fn hopping(max_mentions: usize) -> RankingProfile {
    RankingProfile {
        hop_share: 0.5,
        hop_leaders: 5,
        hop_max_mentions: max_mentions,
        ..DEFAULT_PROFILE
    }
}

fn query() -> RecallQuery {
    RecallQuery::text("ferry")
}

/// The entity hop's store read for `keys` as `actor`, at the fixture's clock.
async fn read_mentions<S: Backend>(
    fx: &Fixture<S>,
    actor: &Actor,
    keys: &[&str],
    max_items: usize,
    known: HashSet<EvidenceId>,
) -> MentionRead {
    fx.store
        .mentioned(
            actor,
            &query().validated().expect("valid"),
            fx.clock.peek(),
            keys.iter().map(|key| key.to_string()).collect(),
            max_items,
            known,
        )
        .await
        .expect("mentioned")
}

/// How many of the fixture's team's texts mention [`KEY`], as the hop's read counts.
async fn texts_naming_the_key<S: Backend>(fx: &Fixture<S>) -> u64 {
    read_mentions(fx, &fx.actor, &[KEY], 8, HashSet::new())
        .await
        .keys
        .get(KEY)
        .map_or(0, |found| found.items)
}

fn ids(items: &[&Evidence]) -> HashSet<EvidenceId> {
    items.iter().map(|e| e.id).collect()
}

pub async fn an_item_sharing_a_rare_mention_with_a_result_joins_it<S: Backend>(fx: Fixture<S>) {
    let leader = fx
        .remember("We booked the ferry to Zanzibar for June.")
        .await;
    let sharing = fx.remember("The sunsets in Zanzibar were unreal.").await;
    fx.remember("The sunsets at home are grey.").await;
    let fx = fx.with_profile(CONVEX_6_PROFILE);
    let plain = fx.recall(query()).await;
    want_set(
        &plain,
        &[&leader],
        "without the hop only the match is found",
    );
    let fx = fx.with_profile(hopping(3));
    let hits = fx.recall(query()).await;
    want_set(
        &hits,
        &[&leader, &sharing],
        "the item naming Zanzibar joins",
    );
    assert_eq!(
        hits.iter()
            .find(|h| h.evidence.id == sharing.id)
            .and_then(|h| h.components.hop_from),
        Some(leader.id),
        "its score comes from the leader"
    );
    assert_eq!(hits[0].evidence.id, leader.id, "the leader stays first");
}

pub async fn a_hub_mention_is_never_followed<S: Backend>(fx: Fixture<S>) {
    let fx = fx.with_profile(hopping(2));
    let leader = fx
        .remember("We booked the ferry to Zanzibar for June.")
        .await;
    fx.remember("The sunsets in Zanzibar were unreal.").await;
    fx.remember("We walked the spice markets of Zanzibar.")
        .await;
    let hits = fx.recall(query()).await;
    want_set(
        &hits,
        &[&leader],
        "three texts name Zanzibar: past the cut-off of 2",
    );
}

pub async fn a_mention_never_surfaces_an_item_its_reader_could_not_recall<S: Backend>(
    fx: Fixture<S>,
) {
    let fx = fx.with_profile(hopping(8));
    let other_team = fx.store.open_team("other-team").await.expect("team");
    let colleague = fx.profile("colleague").await;
    let leader = fx
        .remember("We booked the ferry to Zanzibar for June.")
        .await;
    let eligible = fx.remember("The sunsets in Zanzibar were unreal.").await;
    let retracted = fx
        .remember("Visa forms for Zanzibar, retracted later.")
        .await;
    let held = fx
        .remember("Hotel code in Zanzibar, held for review.")
        .await;
    let mut expiring = NewEvidence::new("Taxi number in Zanzibar, expiring soon.");
    expiring.expires_at = Some(fx.clock.peek().plus_seconds(60));
    let expiring = fx.remember_with(expiring).await;
    let mut private = NewEvidence::new("A surprise in Zanzibar, the colleague's own.");
    private.space = Space::Private;
    fx.store
        .remember(&colleague, private)
        .await
        .expect("remember private");
    fx.store
        .remember(
            &other_team,
            NewEvidence::new("Notes on Zanzibar of another team."),
        )
        .await
        .expect("remember other team");
    fx.store
        .retract(&fx.actor, retracted.id, None)
        .await
        .expect("retract");
    fx.store
        .quarantine_evidence(&fx.actor, vec![held.id], "held".into())
        .await
        .expect("quarantine");
    fx.clock.advance_seconds(120);
    assert!(fx.clock.peek() > expiring.expires_at.expect("expiry"));

    let hits = fx.recall(query()).await;
    want_set(
        &hits,
        &[&leader, &eligible],
        "retracted, held, expired, private and other-team items stay out",
    );
    let read = read_mentions(&fx, &fx.actor, &[KEY], 8, HashSet::from([leader.id])).await;
    let found = &read.keys[KEY];
    assert_eq!(
        found.items, 6,
        "rarity counts the team's own texts, whoever may read them, never another team's"
    );
    assert_eq!(
        found.eligible.iter().copied().collect::<HashSet<_>>(),
        ids(&[&leader, &eligible]),
        "the backend itself returns only eligible items"
    );
    assert_eq!(
        read.records.keys().copied().collect::<HashSet<_>>(),
        ids(&[&eligible]),
        "records are read only for items the caller does not hold"
    );
    let theirs = read_mentions(&fx, &other_team, &[KEY], 8, HashSet::new()).await;
    assert_eq!(
        theirs.keys[KEY].items, 1,
        "the other team counts its own only"
    );
}

pub async fn a_forgotten_text_mentions_nothing<S: Backend>(fx: Fixture<S>) {
    let leader = fx
        .remember("We booked the ferry to Zanzibar for June.")
        .await;
    let mut private = NewEvidence::new("My diary of Zanzibar, forgotten later.");
    private.space = Space::Private;
    let forgotten = fx.remember_with(private).await;
    assert_eq!(texts_naming_the_key(&fx).await, 2, "both texts mention it");
    fx.memory
        .forget(&fx.actor, vec![forgotten.id])
        .await
        .expect("forget");
    assert_eq!(
        texts_naming_the_key(&fx).await,
        1,
        "the erased text's mention is gone"
    );
    let fx = fx.with_profile(hopping(3));
    want_set(&fx.recall(query()).await, &[&leader], "and brings nothing");
}

/// The hop's store read, whole: each key some text mentions has its team count (up to
/// the cut-off and one more), a key listed twice is read once, a hub lists no items, a
/// key nothing mentions has no entry; an item that is no hub's lists under each key it
/// mentions, and its full record comes back only when the caller does not know it yet.
pub async fn the_mention_read_counts_lists_and_reads_only_unknown_records<S: Backend>(
    fx: Fixture<S>,
) {
    let known = fx
        .remember("We booked the ferry to Zanzibar with Okonkwo.")
        .await;
    let unknown = fx.remember("The sunsets in Zanzibar were unreal.").await;
    for place in ["Lisbon", "Porto", "Faro"] {
        fx.remember(&format!("We flew with Okonkwo to {place} in May."))
            .await;
    }
    let keys = [KEY, "okonkwo", "nowhere", KEY];
    let read = read_mentions(&fx, &fx.actor, &keys, 3, HashSet::from([known.id])).await;
    let mut keys: Vec<&str> = read.keys.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["okonkwo", KEY],
        "one entry per key some text mentions"
    );
    assert_eq!(read.keys[KEY].items, 2, "two texts name Zanzibar");
    let mut listed = read.keys[KEY].eligible.clone();
    listed.sort_unstable();
    let mut want = vec![known.id, unknown.id];
    want.sort_unstable();
    assert_eq!(
        listed, want,
        "listed once each, though the key was asked twice"
    );
    assert_eq!(
        read.keys["okonkwo"].items, 4,
        "a hub is counted to one past the cut-off"
    );
    assert!(
        read.keys["okonkwo"].eligible.is_empty(),
        "a hub lists nothing"
    );
    let records: HashSet<EvidenceId> = read.records.keys().copied().collect();
    assert_eq!(
        records,
        HashSet::from([unknown.id]),
        "only the unknown item is read whole"
    );
    assert_eq!(
        read.records[&unknown.id].content, unknown.content,
        "its record is the stored one"
    );
}
