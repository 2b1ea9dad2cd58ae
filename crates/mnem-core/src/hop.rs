//! The entity hop: a second round through what the first round's results mention.
//!
//! A question whose answer is spread over several items ("what activities does Melanie
//! do?") is matched by one of them; the others share none of its words but may share a
//! rare name or phrase with the one that matched ("pottery class" in both). Each of the
//! first [`RankingProfile::hop_leaders`] results, and the query itself, mention things
//! ([`crate::mention`]); an item of the team that mentions one of them ranks at least
//! [`RankingProfile::hop_share`] × the result's score (the query's mentions count as the
//! first result's). A thing mentioned by more than
//! [`RankingProfile::hop_max_mentions`] items is a hub (a speaker's name, a word pair
//! every turn uses) and is never followed: it would bring in everything.
//!
//! Backends only read: the service asks the store which eligible items mention the keys
//! ([`Mentioned`]), and this module scores. Credit is computed from the scores before
//! any is given, so it never chains.

use std::collections::{HashMap, HashSet};

use crate::mention::mentions;
use crate::pipeline::{Credit, RankingProfile, RecallHit, RecallPlan};
use crate::{Actor, Evidence, EvidenceId};

/// What the store knows about one mention key in a team.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mentioned {
    /// How many of the team's stored items mention it (eligible to this reader or not:
    /// rarity is the team's, like the full-text statistics), counted up to one past the
    /// cut-off asked for.
    pub items: u64,
    /// The items that mention it and are eligible for the recall, when it is no hub
    /// (`items` ≤ the cut-off); empty for a hub.
    pub eligible: Vec<EvidenceId>,
}

/// The entity hop's read: each key some stored text mentions, and the records of the
/// eligible items that mention a rare one, except those the caller already holds (the
/// first round's results: most of a leader's rare keys are its own alone).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MentionRead {
    pub keys: HashMap<String, Mentioned>,
    pub records: HashMap<EvidenceId, Evidence>,
}

impl MentionRead {
    /// A read begun from each key's team count (as a backend counts it, up to
    /// `max_items + 1`): an entry per key some text mentions, and the keys that are no hub
    /// (at most `max_items` texts), whose eligible items the backend reads next.
    pub fn counted(
        counts: impl IntoIterator<Item = (String, u64)>,
        max_items: usize,
    ) -> (Self, Vec<String>) {
        let mut read = Self::default();
        let mut rare = Vec::new();
        for (key, items) in counts {
            // A key listed twice is read once (the store's read joins on the list).
            if items == 0 || read.keys.contains_key(&key) {
                continue;
            }
            if items <= max_items as u64 {
                rare.push(key.clone());
            }
            let eligible = Vec::new();
            read.keys.insert(key, Mentioned { items, eligible });
        }
        (read, rare)
    }
}

/// The givers of credit with what each mentions: the query (as the first result), then
/// the first `hop_leaders` results; none when the profile does not hop or the recall is a
/// listing. Worked out once per recall: the store reads their [`Givers::keys`], then
/// [`hop_from`] credits through them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Givers(Vec<Giver>);

#[derive(Debug, Clone, PartialEq)]
struct Giver {
    mentions: Vec<String>,
    id: EvidenceId,
    score: f64,
}

impl Givers {
    pub fn of(hits: &[RecallHit], plan: &RecallPlan, profile: &RankingProfile) -> Self {
        if profile.hop_share <= 0.0 || plan.is_listing() {
            return Self::default();
        }
        let giver = |mentions, hit: &RecallHit| Giver {
            mentions,
            id: hit.evidence.id,
            score: hit.score.value(),
        };
        let query = hits
            .first()
            .map(|top| giver(mentions(&plan.query.query), top));
        let leaders = hits
            .iter()
            .take(profile.hop_leaders)
            .map(|hit| giver(mentions(&hit.evidence.content), hit));
        Self(query.into_iter().chain(leaders).collect())
    }

    /// The keys worth reading: what the givers mention, de-duplicated.
    pub fn keys(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        self.0
            .iter()
            .flat_map(|giver| &giver.mentions)
            .filter(|key| seen.insert(*key))
            .cloned()
            .collect()
    }
}

/// Gives every eligible item that mentions a rare thing a leader (or the query) mentions
/// a score of at least `hop_share` × that leader's score, adding it to the hits when it
/// was not a candidate. A new hit must satisfy the query's anchors and floor like any
/// other; the hits come back in the order contract's order.
pub fn hop(
    hits: Vec<RecallHit>,
    read: &MentionRead,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    let givers = Givers::of(&hits, plan, profile);
    hop_from(hits, &givers, read, plan, actor, profile)
}

/// [`hop`] through givers already worked out for `hits` (the ones whose keys were read).
pub fn hop_from(
    hits: Vec<RecallHit>,
    givers: &Givers,
    read: &MentionRead,
    plan: &RecallPlan,
    actor: &Actor,
    profile: &RankingProfile,
) -> Vec<RecallHit> {
    if profile.hop_share <= 0.0 || read.keys.is_empty() {
        return hits;
    }
    let mut credit = Credit::new(&hits);
    for giver in &givers.0 {
        let earned = profile.hop_share * giver.score;
        for key in &giver.mentions {
            let Some(found) = read.keys.get(key) else {
                continue;
            };
            if found.items > profile.hop_max_mentions as u64 {
                continue;
            }
            for &item in &found.eligible {
                if item != giver.id {
                    credit.give(item, || read.records.get(&item), earned, giver.id);
                }
            }
        }
    }
    credit.settle(hits, plan, actor, "mention", |components, leader| {
        components.hop_from = Some(leader)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::{self, ScoreComponents, DEFAULT_PROFILE};
    use crate::{NewEvidence, ProfileId, RecallQuery, Score, TeamId, Timestamp};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };

    fn evidence(id: u128, content: &str) -> Evidence {
        let mut new = NewEvidence::new(content);
        new.observed_at = Some(Timestamp::from_seconds(id as i64));
        new.into_evidence(
            EvidenceId(Uuid::from_u128(id)),
            ACTOR.team,
            ACTOR.profile,
            Timestamp::from_seconds(id as i64),
        )
        .unwrap()
    }

    fn hit(evidence: &Evidence, score: f64) -> RecallHit {
        pipeline::hit(
            evidence.clone(),
            Score::from_unit(score),
            ScoreComponents::default(),
        )
    }

    fn plan(query: &str) -> RecallPlan {
        RecallPlan::new(
            RecallQuery::text(query).validated().unwrap(),
            Timestamp::from_seconds(1_000_000),
        )
    }

    fn profile(share: f64) -> RankingProfile {
        RankingProfile {
            hop_share: share,
            hop_leaders: 2,
            hop_max_mentions: 3,
            ..DEFAULT_PROFILE
        }
    }

    /// A read where `key` is mentioned by `items` texts of the team, `eligible` of them
    /// eligible; the records of all of them are read (the core ignores those it holds).
    fn read(entries: &[(&str, u64, &[&Evidence])]) -> MentionRead {
        let mut read = MentionRead::default();
        for (key, items, eligible) in entries {
            let ids = eligible.iter().map(|e| e.id).collect();
            read.keys.insert(
                key.to_string(),
                Mentioned {
                    items: *items,
                    eligible: ids,
                },
            );
            for e in *eligible {
                read.records.insert(e.id, (*e).clone());
            }
        }
        read
    }

    fn ids(hits: &[RecallHit]) -> Vec<u128> {
        hits.iter().map(|h| h.evidence.id.0.as_u128()).collect()
    }

    #[test]
    fn counts_keep_every_mentioned_key_and_name_the_rare_ones() {
        let counts = [
            ("pottery", 2),
            ("melanie", 9),
            ("never", 0),
            ("class", 5),
            ("pottery", 2),
        ];
        let (read, rare) =
            MentionRead::counted(counts.iter().map(|(key, n)| (key.to_string(), *n)), 5);
        assert_eq!(rare, ["pottery", "class"], "each rare key named once");
        assert_eq!(
            read.keys["melanie"].items, 9,
            "a hub is kept, with its count"
        );
        assert!(!read.keys.contains_key("never"), "no text mentions it");
        assert!(read.keys.values().all(|k| k.eligible.is_empty()));
    }

    #[test]
    fn an_item_sharing_a_rare_phrase_with_the_leader_joins_above_a_weak_match() {
        let leader = evidence(1, "I signed up for a pottery class last week");
        let weak = evidence(2, "my week was long");
        let other = evidence(3, "the pottery class made a bowl");
        let hits = vec![hit(&leader, 1.0), hit(&weak, 0.3)];
        let found = read(&[("potteri class", 2, &[&leader, &other])]);
        let out = hop(
            hits,
            &found,
            &plan("what did I sign up for"),
            &ACTOR,
            &profile(0.5),
        );
        assert_eq!(ids(&out), vec![1, 3, 2]);
        assert_eq!(out[1].score.value(), 0.5);
        assert_eq!(out[1].components.hop_from, Some(leader.id));
    }

    #[test]
    fn a_hub_is_never_followed() {
        let leader = evidence(1, "I signed up for a pottery class last week");
        let other = evidence(3, "the pottery class made a bowl");
        let hits = vec![hit(&leader, 1.0)];
        let found = read(&[("potteri class", 4, &[&leader, &other])]);
        let out = hop(hits, &found, &plan("sign up"), &ACTOR, &profile(0.5));
        assert_eq!(ids(&out), vec![1]);
    }

    #[test]
    fn credit_never_lowers_a_score_and_comes_from_the_best_leader() {
        let first = evidence(1, "Berlin trip with Anna");
        let second = evidence(2, "Anna called");
        let strong = evidence(3, "Anna again");
        let hits = vec![hit(&first, 1.0), hit(&second, 0.8), hit(&strong, 0.9)];
        let found = read(&[("anna", 3, &[&first, &second, &strong])]);
        let out = hop(hits, &found, &plan("berlin trip"), &ACTOR, &profile(0.5));
        let score = |id: u128| out.iter().find(|h| h.evidence.id.0.as_u128() == id);
        assert_eq!(score(3).map(|h| h.score.value()), Some(0.9));
        assert_eq!(score(3).and_then(|h| h.components.hop_from), None);
        assert_eq!(score(2).map(|h| h.score.value()), Some(0.8));
    }

    #[test]
    fn the_querys_own_mentions_count_as_the_top_results() {
        let top = evidence(1, "something about trips");
        let named = evidence(2, "we finally saw the Grand Canyon");
        let hits = vec![hit(&top, 0.8)];
        let found = read(&[("grand canyon", 1, &[&named])]);
        let out = hop(
            hits,
            &found,
            &plan("when did we visit the Grand Canyon"),
            &ACTOR,
            &profile(0.5),
        );
        assert_eq!(ids(&out), vec![1, 2]);
        assert_eq!(out[1].score.value(), 0.4);
    }

    #[test]
    fn only_the_first_leaders_give_credit() {
        let first = evidence(1, "plain words");
        let second = evidence(2, "more plain words");
        let third = evidence(3, "we visited Zanzibar");
        let other = evidence(4, "Zanzibar was hot");
        let hits = vec![hit(&first, 1.0), hit(&second, 0.9), hit(&third, 0.8)];
        let found = read(&[("zanzibar", 2, &[&third, &other])]);
        let out = hop(hits, &found, &plan("plain"), &ACTOR, &profile(0.5));
        assert_eq!(ids(&out), vec![1, 2, 3]);
    }

    #[test]
    fn no_keys_are_read_when_the_profile_does_not_hop() {
        let leader = evidence(1, "we visited Zanzibar");
        let hits = vec![hit(&leader, 1.0)];
        assert!(Givers::of(&hits, &plan("trip"), &profile(0.0))
            .keys()
            .is_empty());
        assert!(Givers::of(&hits, &plan("trip"), &profile(0.5))
            .keys()
            .contains(&"zanzibar".to_string()));
    }
}
