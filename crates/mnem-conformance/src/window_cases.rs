//! Evidence windows: a result's neighbours from its source group. Each case writes one
//! group (a `source_key`) whose items are observed one second apart, asserts the stamps
//! strictly increase (so "before" and "after" cannot silently collapse), and recalls one
//! item by a word only it holds. Windows are asserted under `convex-1`, which gives no
//! follow-on credit (under the default the next turn would be a merged match); the
//! credit has its own case at the end.

use mnem_core::{
    Evidence, EvidenceId, NewEvidence, RecallHit, RecallQuery, SourceType, Space, CONVEX_1_PROFILE,
    CONVEX_3_PROFILE, CONVEX_4_PROFILE, CONVEX_5_PROFILE, DEFAULT_PROFILE,
};

use crate::helpers::{want_increasing_stamps, want_order, Backend, Fixture};

const GROUP: &str = "session-7";

/// Turn `n` of the case's group: "turn n …", observed `n` seconds after the start.
fn turn(n: i64, words: &str) -> NewEvidence {
    let mut new = NewEvidence::new(format!("turn {n} {words}"));
    new.source_key = Some(GROUP.into());
    new.observed_at = Some(crate::helpers::START.plus_seconds(n));
    new
}

/// Writes turns 1..=count of the group, those at `needles` holding `word`.
async fn group<S: Backend>(
    fx: &Fixture<S>,
    count: i64,
    needles: &[i64],
    word: &str,
) -> Vec<Evidence> {
    let mut items = Vec::new();
    for n in 1..=count {
        let words = if needles.contains(&n) {
            word
        } else {
            "small talk"
        };
        items.push(fx.remember_with(turn(n, words)).await);
    }
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    items
}

fn windowed(query: &str, window: usize) -> RecallQuery {
    RecallQuery {
        window,
        ..RecallQuery::text(query)
    }
}

/// The window of a result in group order, the result itself included.
fn window_ids(hit: &RecallHit) -> Vec<EvidenceId> {
    hit.before
        .iter()
        .map(|item| item.evidence.id)
        .chain([hit.evidence.id])
        .chain(hit.after.iter().map(|item| item.evidence.id))
        .collect()
}

fn ids_of(items: &[&Evidence]) -> Vec<EvidenceId> {
    items.iter().map(|e| e.id).collect()
}

pub async fn evidence_window_brings_neighbours_of_the_same_group_in_order<S: Backend>(
    fx: Fixture<S>,
) {
    let fx = fx.with_profile(CONVEX_1_PROFILE);
    let items = group(&fx, 7, &[4], "zeppelin").await;
    let mut elsewhere = NewEvidence::new("turn 5 small talk in another session");
    elsewhere.source_key = Some("session-8".into());
    elsewhere.observed_at = items[4].observed_at.into();
    fx.remember_with(elsewhere).await;
    let hits = fx.recall(windowed("zeppelin", 2)).await;
    want_order(&hits, &[&items[3]], "the match is the one result");
    assert_eq!(
        window_ids(&hits[0]),
        ids_of(&[&items[1], &items[2], &items[3], &items[4], &items[5]]),
        "two neighbours each side, in group order, no other group"
    );
    assert!(
        hits[0].window_items().all(|item| !item.hit),
        "no neighbour matched"
    );
    let alone = fx.recall(windowed("zeppelin", 0)).await;
    assert!(
        alone[0].before.is_empty() && alone[0].after.is_empty(),
        "window 0 is off"
    );
}

pub async fn evidence_window_never_shows_what_the_reader_could_not_recall<S: Backend>(
    fx: Fixture<S>,
) {
    let fx = fx.with_profile(CONVEX_1_PROFILE);
    let other_team = fx.store.open_team("other-team").await.expect("team");
    let colleague = fx.profile("colleague").await;
    let mut items = Vec::new();
    for n in 1..=9 {
        let words = if n == 5 { "zeppelin" } else { "small talk" };
        let mut new = turn(n, words);
        if n == 3 {
            new.expires_at = Some(fx.clock.peek().plus_seconds(60));
        }
        let item = match n {
            // Another team's item in a group of the same name, between two of ours.
            4 => {
                fx.store
                    .remember(&other_team, new)
                    .await
                    .expect("remember")
                    .evidence
            }
            // Another profile's private item.
            6 => {
                new.space = Space::Private;
                fx.store
                    .remember(&colleague, new)
                    .await
                    .expect("remember")
                    .evidence
            }
            _ => fx.remember_with(new).await,
        };
        items.push(item);
    }
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    fx.store
        .retract(&fx.actor, items[1].id, None)
        .await
        .expect("retract turn 2");
    fx.store
        .quarantine_evidence(&fx.actor, vec![items[6].id], "held".into())
        .await
        .expect("quarantine turn 7");
    fx.clock.advance_seconds(120); // turn 3 expires
    let hits = fx.recall(windowed("zeppelin", 2)).await;
    want_order(&hits, &[&items[4]], "the match is the one result");
    assert_eq!(
        window_ids(&hits[0]),
        ids_of(&[&items[0], &items[4], &items[7], &items[8]]),
        "retracted, expired, other-team, private and quarantined turns are skipped, \
         and the next eligible turns take their place"
    );
    let read = fx
        .store
        .neighbours(
            &fx.actor,
            &windowed("zeppelin", 2).validated().expect("valid"),
            fx.clock.peek(),
            vec![items[4].clone()],
            2,
        )
        .await
        .expect("neighbours");
    let read = &read[&items[4].id];
    assert_eq!(
        read.before.iter().map(|e| e.id).collect::<Vec<_>>(),
        ids_of(&[&items[0]]),
        "the backend itself reads only eligible neighbours, nearest first"
    );
    assert_eq!(
        read.after.iter().map(|e| e.id).collect::<Vec<_>>(),
        ids_of(&[&items[7], &items[8]]),
        "the backend itself reads only eligible neighbours, nearest first"
    );
    let theirs = fx.recall_as(&other_team, windowed("small", 5)).await;
    assert!(
        theirs
            .iter()
            .flat_map(
                |hit| std::iter::once(&hit.evidence).chain(hit.window_items().map(|i| &i.evidence))
            )
            .all(|e| e.team == other_team.team),
        "another team's windows hold only its own evidence"
    );
}

pub async fn evidence_windows_that_overlap_merge_and_every_id_appears_once<S: Backend>(
    fx: Fixture<S>,
) {
    let fx = fx.with_profile(CONVEX_1_PROFILE);
    let items = group(&fx, 9, &[4, 6], "zeppelin").await;
    let hits = fx.recall(windowed("zeppelin", 2)).await;
    assert_eq!(hits.len(), 1, "two overlapping windows are one result");
    assert_eq!(
        window_ids(&hits[0]),
        ids_of(&items[1..8].iter().collect::<Vec<_>>()),
        "the merged window spans both hits' neighbours in order"
    );
    let marked: Vec<EvidenceId> = hits[0]
        .window_items()
        .filter(|item| item.hit)
        .map(|item| item.evidence.id)
        .collect();
    assert_eq!(marked.len(), 1, "the other match is marked as a hit");
    assert!(
        [items[3].id, items[5].id].contains(&marked[0]),
        "the marked item is the other match"
    );
}

pub async fn evidence_window_bytes_count_against_the_budget_and_neighbours_go_first<S: Backend>(
    fx: Fixture<S>,
) {
    let fx = fx.with_profile(CONVEX_1_PROFILE);
    let items = group(&fx, 20, &[5, 15], "zeppelin").await;
    // Both hits and two short neighbours fit; not four.
    let budget = items[4].content.len() + items[14].content.len() + 2 * items[0].content.len() + 5;
    let hits = fx
        .recall(RecallQuery {
            context_bytes: budget,
            ..windowed("zeppelin", 2)
        })
        .await;
    let returned: usize = hits.iter().map(RecallHit::bytes).sum();
    assert!(returned <= budget, "{returned} bytes over {budget}");
    assert_eq!(hits.len(), 2, "both hits are kept before any neighbour");
    let kept: Vec<usize> = hits
        .iter()
        .flat_map(|hit| hit.window_items().map(|item| item.distance))
        .collect();
    assert_eq!(
        kept,
        vec![1, 1],
        "the two neighbours kept are hits' nearest"
    );
}

/// Follow-on credit (a profile with `follow_share`): the next eligible item after a match
/// in its group becomes a result, scored a share of the match, and nothing its reader
/// could not recall directly is ever lifted.
pub async fn follow_on_credit_lifts_only_the_next_eligible_item_of_the_group<S: Backend>(
    fx: Fixture<S>,
) {
    let colleague = fx.profile("colleague").await;
    let mut items = Vec::new();
    for n in 1..=6 {
        let words = match n {
            2 => "zeppelin question",
            3 => "retracted reply",
            4 => "private reply",
            5 => "eligible reply",
            _ => "small talk",
        };
        let new = turn(n, words);
        let item = if n == 4 {
            let mut private = new;
            private.space = Space::Private;
            fx.store
                .remember(&colleague, private)
                .await
                .expect("remember")
                .evidence
        } else {
            fx.remember_with(new).await
        };
        items.push(item);
    }
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    fx.store
        .retract(&fx.actor, items[2].id, None)
        .await
        .expect("retract turn 3");
    let hits = fx.recall(windowed("zeppelin", 0)).await;
    want_order(
        &hits,
        &[&items[1], &items[4]],
        "the match, then the next turn its reader may recall (retracted and private skipped)",
    );
    assert_eq!(
        hits[1].components.follows,
        Some(items[1].id),
        "the lifted turn names the match it follows"
    );
    let ratio = hits[1].score.value() / hits[0].score.value();
    assert!(
        (ratio - DEFAULT_PROFILE.follow_share).abs() < 1e-9,
        "the follower scores the profile's share of its match, got {ratio}"
    );
    let windowed_hits = fx.recall(windowed("zeppelin", 1)).await;
    want_order(
        &windowed_hits,
        &[&items[1]],
        "the follower merges into its match's window",
    );
    assert_eq!(
        window_ids(&windowed_hits[0]),
        ids_of(&[&items[0], &items[1], &items[4], &items[5]]),
        "one window around both, each id once"
    );
    assert!(
        windowed_hits[0]
            .after
            .first()
            .is_some_and(|item| item.hit && item.evidence.id == items[4].id),
        "the follower is marked as a match inside the window"
    );
    let off = fx.with_profile(CONVEX_1_PROFILE);
    let alone = off.recall(windowed("zeppelin", 0)).await;
    want_order(&alone, &[&items[1]], "without the credit, the match alone");
}

/// `text` written as `source_type` at `START + n` seconds, in source group `group`.
fn written(n: i64, group: &str, text: &str, source_type: SourceType) -> NewEvidence {
    let mut new = NewEvidence::new(text);
    new.source_type = source_type;
    new.source_key = Some(group.into());
    new.observed_at = Some(crate::helpers::START.plus_seconds(n));
    new
}

/// A conversation turn at `START + n` seconds in group `group`.
fn spoken(n: i64, group: &str, text: &str) -> NewEvidence {
    written(n, group, text, SourceType::Conversation)
}

/// Cy's small talk at the given stamps in a group of its own ("d"): common words, so the
/// words a case matches on are rarer than the rest.
async fn small_talk<S: Backend>(fx: &Fixture<S>, stamps: std::ops::RangeInclusive<i64>) {
    for n in stamps {
        let text = format!("Cy: small talk number {n}");
        fx.remember_with(spoken(n, "d", &text)).await;
    }
}

/// The named-speaker lift: a conversation turn whose speaker the query names outranks a
/// somewhat better match by someone else, and only under a profile that weighs it; a note
/// written like a turn is never read as one.
pub async fn a_turn_by_the_speaker_the_query_names_rises_above_a_closer_match<S: Backend>(
    fx: Fixture<S>,
) {
    // Each text in a group of its own, so no follow-on credit passes between them; small
    // talk beside them so the matched words are rarer than the rest.
    let conversation = SourceType::Conversation;
    let mut items = Vec::new();
    for (n, group, text, source_type) in [
        (
            1,
            "a",
            "Bo: Ann, the zeppelin! The zeppelin over the harbour",
            conversation,
        ),
        (
            2,
            "b",
            "Ann: a zeppelin over the harbour today",
            conversation,
        ),
        (3, "c", "Ann: harbour minutes", SourceType::Manual),
    ] {
        items.push(fx.remember_with(written(n, group, text, source_type)).await);
    }
    small_talk(&fx, 4..=9).await;
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    let query = || RecallQuery {
        window: 0,
        ..RecallQuery::text("what did Ann see of the zeppelin")
    };
    let hits = fx.recall(query()).await;
    assert_eq!(
        hits.first().map(|hit| hit.evidence.id),
        Some(items[1].id),
        "Ann's own turn leads under the default, which lifts it"
    );
    assert!(
        hits[0].components.speaker,
        "the leader is marked as spoken by Ann"
    );
    let note = hits.iter().find(|hit| hit.evidence.id == items[2].id);
    assert!(
        note.is_some_and(|hit| !hit.components.speaker),
        "a manual note that opens with `Ann:` is a candidate but not a turn"
    );
    assert!(
        hits.iter()
            .all(|hit| hit.score.value() > 0.0 && hit.score.value() <= 1.0),
        "lifted scores stay in (0, 1]"
    );
    let unlifted = fx.with_profile(CONVEX_3_PROFILE).recall(query()).await;
    assert_eq!(
        unlifted.first().map(|hit| hit.evidence.id),
        Some(items[0].id),
        "without the lift the closer match (the rarest word twice) leads"
    );
}

/// A conversation turn that only asks keeps 65% of its score under the default, after
/// its reply has been credited from its full score: the turn that says something passes
/// it, and the reply still ranks by the question. Under `convex-4` the question leads.
pub async fn a_turn_that_only_asks_sinks_below_a_turn_that_says_and_its_reply_keeps_credit<
    S: Backend,
>(
    fx: Fixture<S>,
) {
    let mut items = Vec::new();
    for (n, group, text) in [
        (1, "a", "Cy: Wow! The zeppelin over the harbour?"),
        (2, "a", "Ann: Loud, and slower than a ferry."),
        (
            3,
            "b",
            "Ann: the zeppelin over the harbour was out again, we watched it from the quay",
        ),
    ] {
        items.push(fx.remember_with(spoken(n, group, text)).await);
    }
    small_talk(&fx, 4..=9).await;
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    let (question, reply, statement) = (items[0].id, items[1].id, items[2].id);
    let query = || RecallQuery {
        window: 0,
        ..RecallQuery::text("zeppelin over the harbour")
    };
    let hits = fx.recall(query()).await;
    assert_eq!(
        hits.first().map(|hit| hit.evidence.id),
        Some(statement),
        "under the default the turn that says it leads"
    );
    let asked = hits.iter().find(|hit| hit.evidence.id == question);
    assert!(
        asked.is_some_and(|hit| hit.components.asks),
        "the question is still returned, marked as only asking"
    );
    assert!(!hits[0].components.asks, "a turn that states is not marked");
    let replied = hits.iter().find(|hit| hit.evidence.id == reply);
    assert_eq!(
        replied.and_then(|hit| hit.components.follows),
        Some(question),
        "the reply is credited from the question"
    );
    let score = |id: EvidenceId| {
        hits.iter()
            .find(|hit| hit.evidence.id == id)
            .map(|hit| hit.score.value())
    };
    let credit = DEFAULT_PROFILE.follow_share / (1.0 - DEFAULT_PROFILE.question_discount);
    let (reply_score, question_score) = (score(reply).unwrap(), score(question).unwrap());
    assert!(
        (reply_score - credit * question_score).abs() < 1e-9,
        "the reply's credit is a share of the question's score before the discount"
    );
    let undiscounted = fx.with_profile(CONVEX_4_PROFILE).recall(query()).await;
    assert_eq!(
        undiscounted.first().map(|hit| hit.evidence.id),
        Some(question),
        "without the discount the short question, holding every query word, leads"
    );
}

/// When the item after a match only asks about it ("Fun! What did you do?"), the item
/// after that question — its answer, which shares no word with the query — is credited
/// half the match's score under the default: it is returned, and above the question.
/// Under `convex-5` the credit stops at the question.
pub async fn an_answer_to_a_follow_up_question_is_credited_from_what_it_asks_about<S: Backend>(
    fx: Fixture<S>,
) {
    let mut items = Vec::new();
    for (n, group, text) in [
        (
            1,
            "a",
            "Ann: we took the kids camping in the mountains last week",
        ),
        (2, "a", "Cy: Fun! What did you do?"),
        (
            3,
            "a",
            "Ann: roasted marshmallows and hiked to the top at dawn",
        ),
        (4, "b", "Cy: the mountains look lovely on the postcard"),
    ] {
        items.push(fx.remember_with(spoken(n, group, text)).await);
    }
    small_talk(&fx, 5..=9).await;
    want_increasing_stamps(&items.iter().collect::<Vec<_>>());
    let (leader, question, answer) = (items[0].id, items[1].id, items[2].id);
    let query = || RecallQuery {
        window: 0,
        ..RecallQuery::text("camping in the mountains")
    };
    let hits = fx.recall(query()).await;
    let ids: Vec<EvidenceId> = hits.iter().map(|hit| hit.evidence.id).collect();
    assert_eq!(ids.first(), Some(&leader), "the match leads");
    let position = |id: EvidenceId| ids.iter().position(|found| *found == id);
    assert!(position(answer).is_some(), "the answer is returned");
    assert!(
        position(answer) < position(question),
        "the answer ranks above the question it answers"
    );
    let answered = &hits[position(answer).unwrap()];
    assert_eq!(
        answered.components.follows,
        Some(leader),
        "the answer is credited from the match, through the question"
    );
    let expected = DEFAULT_PROFILE.follow_through * hits[0].score.value();
    assert!(
        (answered.score.value() - expected).abs() < 1e-9,
        "the credit is a share of the match's score"
    );
    let before = fx.with_profile(CONVEX_5_PROFILE).recall(query()).await;
    let credited = before
        .iter()
        .find(|hit| hit.evidence.id == answer)
        .and_then(|hit| hit.components.follows);
    assert_eq!(
        credited, None,
        "under convex-5 the credit stops at the question"
    );
}
