//! Evidence windows: a ranked hit returned together with its neighbouring evidence of the
//! same source group (`source_key`: a session, thread or document), so an agent reads the
//! turns around a match, not the match alone. On conversational data a hit's neighbours
//! carry the answer more often than the next ranked items do.
//!
//! Group order is `observed_at`, then evidence id. A neighbour is eligible by exactly the
//! rules of a result ([`RecallQuery::admits`]): a window never shows what the same request
//! could not have returned directly. Ineligible items are skipped, not counted, so a
//! window does not reveal where hidden evidence sits.
//!
//! Windows are assembled after ranking (they never change which hit ranks where), in
//! rounds: the service reads the neighbours of the hits [`assemble`] asks for, and calls
//! it again until every result it needs has its window. Overlapping windows of one group
//! become one result; every evidence id appears at most once per response.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::pipeline::MIN_SHARE_BYTES;
use crate::{Actor, Evidence, EvidenceId, RecallHit, RecallQuery, Timestamp};

/// Neighbours read on each side of a hit at most.
pub const MAX_WINDOW: usize = 5;

/// A hit's eligible neighbours in its source group, as a backend reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Neighbours {
    /// Before the hit in group order, nearest first.
    pub before: Vec<Evidence>,
    /// After the hit in group order, nearest first.
    pub after: Vec<Evidence>,
}

/// One item of a result's window.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowItem {
    pub evidence: Evidence,
    /// The text returned for it (the content, or nothing of it if the budget ran out).
    pub context: String,
    /// The item is itself a ranked match of the query (merged into this result).
    pub hit: bool,
    /// Positions from the nearest hit of the result: neighbours nearer a hit are kept
    /// first when the byte budget runs low (0 for a merged hit).
    pub distance: usize,
    /// For a merged hit, how many of the response's results rank above it: the byte
    /// budget pays for it right before the next result, in rank order, so a weak match
    /// that happens to sit in an early window never takes the bytes of a better result
    /// (0 for a plain neighbour; a merged hit is never paid before its own result).
    pub results_above: usize,
}

/// What [`assemble`] needs next.
#[derive(Debug)]
pub enum WindowStep {
    /// Every result has its window: ranked, each id at most once, `limit` results at most.
    Done(Vec<RecallHit>),
    /// Read the neighbours of these hits (they have a `source_key`), then call again.
    Read(Vec<Evidence>),
}

/// While results open, a context longer than this many even shares of the budget
/// (`context_bytes / limit`) counts as that many: `excerpt::focus` later cuts it to its
/// share of the budget, so counting a long turn whole let two or three long turns close
/// the list with bytes to spare (LongMemEval: 3 results in 2,000 B, 5 in 6,000 B at
/// p50). Two shares rather than one leaves a long match room to be read whole when few
/// results compete, and reads fewer windows (measured: the same gold turns either way).
pub const OPENING_SHARES: usize = 2;

/// The bytes a result's context is counted at while deciding whether another opens:
/// never less than an excerpt may be cut to, never more than the budget.
fn opening_bytes(hit: &RecallHit, query: &RecallQuery) -> usize {
    let even_share = query.context_bytes / query.limit.max(1);
    let counted = even_share
        .saturating_mul(OPENING_SHARES)
        .max(MIN_SHARE_BYTES)
        .min(query.context_bytes);
    hit.context.len().min(counted)
}

/// Group order: `observed_at`, then id.
fn group_key(evidence: &Evidence) -> (Timestamp, EvidenceId) {
    (evidence.observed_at, evidence.id)
}

/// A result being built: its items in group order and its primary hit, the best ranked
/// of them (drafts are opened in rank order, and a merge keeps the earliest draft's).
struct Draft {
    primary: EvidenceId,
    items: BTreeMap<(Timestamp, EvidenceId), (Evidence, bool)>,
}

impl Draft {
    fn ids(&self) -> impl Iterator<Item = EvidenceId> + '_ {
        self.items.keys().map(|(_, id)| *id)
    }
}

/// Builds up to `limit` results from `ranked` (best first, every filter applied) with
/// windows of up to `window` neighbours on each side, from the neighbours read so far.
///
/// A hit whose window overlaps earlier results' windows (or which already sits inside
/// one) is merged into the earliest of them, which keeps its rank and its primary hit,
/// and grows by the hit's own window. Neighbours are re-checked against the
/// query's eligibility rules and the hit's group, so a backend bug cannot leak a row.
pub fn assemble(
    ranked: &[RecallHit],
    neighbours: &HashMap<EvidenceId, Neighbours>,
    query: &RecallQuery,
    actor: &Actor,
    now: Timestamp,
) -> WindowStep {
    let limit = query.limit;
    let window = query.window;
    let matched: HashSet<EvidenceId> = ranked.iter().map(|hit| hit.evidence.id).collect();
    let mut drafts: Vec<Draft> = Vec::new();
    // Which draft shows each id.
    let mut shown: HashMap<EvidenceId, usize> = HashMap::new();
    // Results that would open past the byte budget: counted, never built.
    let mut past_budget = 0;
    // The drafts' primary contexts together (a merge moves bytes, never adds them).
    let mut primary_bytes = 0;
    for (index, hit) in ranked.iter().enumerate() {
        if drafts.len() + past_budget >= limit {
            break;
        }
        // A result opened after the results' own contexts fill the budget would get no
        // byte (`fit_budget` stops there), so its neighbours are not worth reading. It
        // still takes its place under `limit`, so the later hits that merge into (and
        // widen) earlier windows are the same as if it had been built. Each context
        // counts as it will be returned, at most [`OPENING_SHARES`] even shares.
        if primary_bytes >= query.context_bytes && !shown.contains_key(&hit.evidence.id) {
            past_budget += 1;
            continue;
        }
        let mut items = BTreeMap::new();
        items.insert(group_key(&hit.evidence), (hit.evidence.clone(), true));
        if let (Some(key), true) = (&hit.evidence.source_key, window > 0) {
            let Some(found) = neighbours.get(&hit.evidence.id) else {
                let room = query.context_bytes.saturating_sub(primary_bytes);
                return WindowStep::Read(to_read(ranked, index, neighbours, &shown, room, limit));
            };
            let sides = [&found.before, &found.after];
            for side in sides {
                for neighbour in side.iter().take(window) {
                    if neighbour.source_key.as_ref() == Some(key)
                        && query.admits(neighbour, actor, now)
                    {
                        let is_hit = matched.contains(&neighbour.id);
                        items.insert(group_key(neighbour), (neighbour.clone(), is_hit));
                    }
                }
            }
        }
        let mut overlapping: Vec<usize> = items
            .values()
            .filter_map(|(evidence, _)| shown.get(&evidence.id).copied())
            .collect();
        overlapping.sort_unstable();
        overlapping.dedup();
        let target = match overlapping.first() {
            Some(&first) => {
                // Later drafts this window bridges to fold into the earliest one.
                for &later in overlapping[1..].iter().rev() {
                    let folded = drafts.remove(later);
                    drafts[first].items.extend(folded.items);
                }
                drafts[first].items.extend(items);
                first
            }
            None => {
                primary_bytes += opening_bytes(hit, query);
                drafts.push(Draft {
                    primary: hit.evidence.id,
                    items,
                });
                drafts.len() - 1
            }
        };
        if overlapping.len() > 1 {
            // Draft indexes moved: rebuild the lookup.
            shown.clear();
            for (d, draft) in drafts.iter().enumerate() {
                shown.extend(draft.ids().map(|id| (id, d)));
            }
        } else {
            let ids: Vec<EvidenceId> = drafts[target].ids().collect();
            shown.extend(ids.into_iter().map(|id| (id, target)));
        }
    }
    // Drafts open in rank order and folding keeps the earliest, so their primaries'
    // ranks ascend: a merged hit's place among the results is a binary search.
    let rank: HashMap<EvidenceId, usize> = ranked
        .iter()
        .enumerate()
        .map(|(position, hit)| (hit.evidence.id, position))
        .collect();
    let primary_ranks: Vec<usize> = drafts
        .iter()
        .map(|draft| rank.get(&draft.primary).copied().unwrap_or(usize::MAX))
        .collect();
    let results_above = |id: EvidenceId| {
        let own = rank.get(&id).copied().unwrap_or(usize::MAX);
        primary_ranks.partition_point(|&primary| primary < own)
    };
    WindowStep::Done(
        drafts
            .into_iter()
            .map(|draft| finish(draft, ranked, &results_above))
            .collect(),
    )
}

/// The hits from `from` on whose neighbours are unknown and that this assembly may still
/// need: those already inside a window (they merge and widen it), and new results while
/// the budget's `room` can still show them — up to `batch` of them, so one read serves
/// several rounds' worth (a read is one blocking hop; an extra hit is two index walks).
/// Never empty: the hit at `from` needs its neighbours.
fn to_read(
    ranked: &[RecallHit],
    from: usize,
    neighbours: &HashMap<EvidenceId, Neighbours>,
    shown: &HashMap<EvidenceId, usize>,
    room: usize,
    batch: usize,
) -> Vec<Evidence> {
    let mut bytes = 0;
    let mut wanted = Vec::new();
    for (i, hit) in ranked[from..].iter().enumerate() {
        if wanted.len() >= batch.max(1) {
            break;
        }
        let inside = shown.contains_key(&hit.evidence.id);
        if !inside {
            if i > 0 && bytes >= room {
                continue;
            }
            bytes += hit.context.len();
        }
        if hit.evidence.source_key.is_some() && !neighbours.contains_key(&hit.evidence.id) {
            wanted.push(hit.evidence.clone());
        }
    }
    wanted
}

/// Turns a draft into a result: the primary hit with the items before and after it, each
/// with its distance from the nearest hit.
fn finish(
    draft: Draft,
    ranked: &[RecallHit],
    results_above: &impl Fn(EvidenceId) -> usize,
) -> RecallHit {
    // A draft's primary is always one of `ranked` (drafts open on a ranked hit); the
    // fallback only keeps this total.
    let plain_hit = |evidence: Evidence| {
        crate::pipeline::hit(evidence, crate::Score::UNRANKED, Default::default())
    };
    let items: Vec<(Evidence, bool)> = draft.items.into_values().collect();
    let hit_positions: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, (_, is_hit))| *is_hit)
        .map(|(i, _)| i)
        .collect();
    let distance = |i: usize| {
        hit_positions
            .iter()
            .map(|&h| h.abs_diff(i))
            .min()
            .unwrap_or(0)
    };
    let primary = items
        .iter()
        .position(|(evidence, _)| evidence.id == draft.primary)
        .unwrap_or(0);
    let mut result = ranked
        .iter()
        .find(|hit| hit.evidence.id == draft.primary)
        .cloned()
        .unwrap_or_else(|| plain_hit(items[primary].0.clone()));
    for (i, (evidence, hit)) in items.into_iter().enumerate() {
        if i == primary {
            continue;
        }
        let item = WindowItem {
            context: evidence.content_for_readers(),
            results_above: if hit { results_above(evidence.id) } else { 0 },
            evidence,
            hit,
            distance: distance(i),
        };
        if i < primary {
            result.before.push(item);
        } else {
            result.after.push(item);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NewEvidence, ProfileId, Score, ScoreComponents, Space, TeamId};
    use uuid::Uuid;

    const ACTOR: Actor = Actor {
        team: TeamId(Uuid::from_u128(1)),
        profile: ProfileId(Uuid::from_u128(2)),
    };
    const NOW: i64 = 1_000_000;

    /// Item `n` of group `group`, observed at second `n`.
    fn item(n: u128, group: &str) -> Evidence {
        let mut new = NewEvidence::new(format!("turn {n}"));
        new.observed_at = Some(Timestamp::from_seconds(n as i64));
        new.source_key = Some(group.into());
        new.into_evidence(
            EvidenceId(Uuid::from_u128(n)),
            ACTOR.team,
            ACTOR.profile,
            Timestamp::from_seconds(n as i64),
        )
        .unwrap()
    }

    fn hit(evidence: &Evidence) -> RecallHit {
        RecallHit {
            context: evidence.content.clone(),
            evidence: evidence.clone(),
            score: Score::UNRANKED,
            components: ScoreComponents::default(),
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    /// A group of items 1..=n; neighbours of each as a backend would read them.
    fn group_neighbours(group: &[Evidence], window: usize) -> HashMap<EvidenceId, Neighbours> {
        group
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let before = group[..i].iter().rev().take(window).cloned().collect();
                let after = group[i + 1..].iter().take(window).cloned().collect();
                (e.id, Neighbours { before, after })
            })
            .collect()
    }

    fn query(window: usize, limit: usize) -> RecallQuery {
        RecallQuery {
            window,
            limit,
            ..RecallQuery::text("turn")
        }
    }

    fn done(step: WindowStep) -> Vec<RecallHit> {
        match step {
            WindowStep::Done(results) => results,
            WindowStep::Read(wanted) => panic!("asked to read {} more", wanted.len()),
        }
    }

    fn window_ids(result: &RecallHit) -> Vec<u128> {
        result
            .before
            .iter()
            .map(|i| i.evidence.id.0.as_u128())
            .chain([result.evidence.id.0.as_u128()])
            .chain(result.after.iter().map(|i| i.evidence.id.0.as_u128()))
            .collect()
    }

    fn now() -> Timestamp {
        Timestamp::from_seconds(NOW)
    }

    #[test]
    fn a_hit_comes_with_its_neighbours_in_group_order() {
        let group: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        let ranked = vec![hit(&group[4])];
        let results = done(assemble(
            &ranked,
            &group_neighbours(&group, 2),
            &query(2, 10),
            &ACTOR,
            now(),
        ));
        assert_eq!(window_ids(&results[0]), vec![3, 4, 5, 6, 7]);
        assert_eq!(results[0].before[0].distance, 2);
        assert_eq!(results[0].after[0].distance, 1);
    }

    #[test]
    fn unknown_neighbours_are_asked_for_before_any_result_is_built() {
        let group: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        let ranked = vec![hit(&group[1]), hit(&group[7])];
        match assemble(&ranked, &HashMap::new(), &query(1, 10), &ACTOR, now()) {
            WindowStep::Read(wanted) => {
                let ids: Vec<u128> = wanted.iter().map(|e| e.id.0.as_u128()).collect();
                assert_eq!(ids, vec![2, 8]);
            }
            WindowStep::Done(_) => panic!("neighbours were never read"),
        }
    }

    #[test]
    fn neighbours_are_read_only_for_hits_the_budget_can_still_show() {
        let group: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        let ranked = vec![hit(&group[1]), hit(&group[7])];
        let tight = RecallQuery {
            context_bytes: group[1].content.len(),
            ..query(1, 10)
        };
        match assemble(&ranked, &HashMap::new(), &tight, &ACTOR, now()) {
            WindowStep::Read(wanted) => {
                let ids: Vec<u128> = wanted.iter().map(|e| e.id.0.as_u128()).collect();
                assert_eq!(ids, vec![2], "the second hit gets no byte");
            }
            WindowStep::Done(_) => panic!("neighbours were never read"),
        }
        let results = done(assemble(
            &ranked,
            &group_neighbours(&group, 1),
            &tight,
            &ACTOR,
            now(),
        ));
        assert_eq!(results.len(), 1, "no result is opened past the budget");
    }

    #[test]
    fn long_matches_count_as_their_excerpts_so_they_do_not_close_the_list_early() {
        let long = |n: u128| {
            let mut evidence = item(n, &format!("s{n}"));
            evidence.content = format!("turn {n} {}", "and so on ".repeat(300));
            evidence
        };
        let group: Vec<Evidence> = (1..=6).map(long).collect();
        let ranked: Vec<RecallHit> = group.iter().map(hit).collect();
        let neighbours: HashMap<EvidenceId, Neighbours> = group
            .iter()
            .map(|e| (e.id, Neighbours::default()))
            .collect();
        let budget = RecallQuery {
            context_bytes: 6_000,
            ..query(2, 10)
        };
        assert!(group.iter().all(|e| e.content.len() > 3_000));
        let results = done(assemble(&ranked, &neighbours, &budget, &ACTOR, now()));
        // Counted whole, the first two would fill 6,000 bytes; counted as at most two
        // even shares (1,200 bytes each), five open.
        assert_eq!(results.len(), 5);
    }

    #[test]
    fn overlapping_windows_of_one_group_merge_into_the_better_ranked_result() {
        let group: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        // Hits 6 (best) and 4: windows 4..8 and 2..6 overlap.
        let ranked = vec![hit(&group[5]), hit(&group[3])];
        let results = done(assemble(
            &ranked,
            &group_neighbours(&group, 2),
            &query(2, 10),
            &ACTOR,
            now(),
        ));
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].evidence.id.0.as_u128(), 6);
        assert_eq!(window_ids(&results[0]), vec![2, 3, 4, 5, 6, 7, 8]);
        let four = results[0]
            .before
            .iter()
            .find(|i| i.evidence.id.0.as_u128() == 4)
            .unwrap();
        assert!(four.hit);
        assert_eq!(four.distance, 0);
    }

    #[test]
    fn every_id_appears_once_and_merging_frees_a_slot_for_the_next_hit() {
        let s1: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        let s2: Vec<Evidence> = (11..=19).map(|n| item(n, "s2")).collect();
        let mut neighbours = group_neighbours(&s1, 1);
        neighbours.extend(group_neighbours(&s2, 1));
        let ranked = vec![hit(&s1[4]), hit(&s1[5]), hit(&s2[0])];
        let results = done(assemble(&ranked, &neighbours, &query(1, 2), &ACTOR, now()));
        assert_eq!(results.len(), 2);
        let mut all: Vec<u128> = results.iter().flat_map(window_ids).collect();
        let total = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), total, "an id twice");
        assert_eq!(window_ids(&results[1]), vec![11, 12]);
    }

    #[test]
    fn a_window_bridging_two_results_folds_them_into_the_first() {
        let group: Vec<Evidence> = (1..=9).map(|n| item(n, "s1")).collect();
        // 2 and 8 are apart with window 2 (0..4, 6..9); 5 bridges them.
        let ranked = vec![hit(&group[1]), hit(&group[7]), hit(&group[4])];
        let results = done(assemble(
            &ranked,
            &group_neighbours(&group, 3),
            &query(3, 10),
            &ACTOR,
            now(),
        ));
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].evidence.id.0.as_u128(), 2);
        assert_eq!(window_ids(&results[0]), (1..=9).collect::<Vec<u128>>());
    }

    #[test]
    fn an_ineligible_neighbour_from_a_backend_is_dropped() {
        let group: Vec<Evidence> = (1..=5).map(|n| item(n, "s1")).collect();
        let mut private = group[3].clone();
        private.space = Space::Private;
        private.owner = ProfileId(Uuid::from_u128(99));
        let other_group = item(6, "s2");
        let neighbours = HashMap::from([(
            group[2].id,
            Neighbours {
                before: vec![group[1].clone()],
                after: vec![private, other_group],
            },
        )]);
        let ranked = vec![hit(&group[2])];
        let results = done(assemble(&ranked, &neighbours, &query(2, 10), &ACTOR, now()));
        assert_eq!(window_ids(&results[0]), vec![2, 3]);
    }

    #[test]
    fn window_zero_returns_the_ranked_hits_alone() {
        let group: Vec<Evidence> = (1..=5).map(|n| item(n, "s1")).collect();
        let ranked = vec![hit(&group[2]), hit(&group[3])];
        let results = done(assemble(
            &ranked,
            &HashMap::new(),
            &query(0, 10),
            &ACTOR,
            now(),
        ));
        assert_eq!(results.len(), 2);
        assert!(results
            .iter()
            .all(|r| r.before.is_empty() && r.after.is_empty()));
    }
}
