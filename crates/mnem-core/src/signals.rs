//! Signals beyond a candidate's own match. Over the whole fused pool: how relevant a
//! result's source group is, and where it sits in the pool's time span. Per candidate,
//! read from memory rather than the text: what the relationships it proves have earned,
//! and how many independent sources stand behind it ([`Support`]). Per query: which
//! conversation turns are spoken by someone it names ([`NamedSpeakers`]). Pure functions, so
//! every backend that returns the same pool and support gets the same signals.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::graph::Tier;
use crate::lexical::query_terms;
use crate::pipeline::Sentences;
use crate::text::floor_char_boundary;
use crate::{Evidence, RecallHit, SourceType, TeamId};

/// The people a query names, read against conversation turns: a turn is *by* someone the
/// query names when it opens with a speaker (`Name: …`, as the chat import writes turns)
/// whose every word is among the query's terms. A first-person turn is about its
/// speaker, yet the name is in every one of their turns and so weighs little in BM25:
/// "what do Melanie's kids like?" is answered by Melanie's "they love dinosaurs", which
/// never says her name. Other kinds of text are never read this way (a note's
/// `Summary: …` names no one).
pub struct NamedSpeakers {
    terms: HashSet<String>,
}

/// A speaker label longer than this is a sentence with a colon in it, not a name.
const MAX_SPEAKER_BYTES: usize = 40;

impl NamedSpeakers {
    pub fn of(query: &str) -> Self {
        Self {
            terms: query_terms(query).into_iter().collect(),
        }
    }

    /// Whether `evidence` is a conversation turn spoken by someone the query names.
    pub fn spoke(&self, evidence: &Evidence) -> bool {
        evidence.source_type == SourceType::Conversation && self.opens_with_named(&evidence.content)
    }

    fn opens_with_named(&self, text: &str) -> bool {
        let Some((speaker, _)) = speaker_label(text) else {
            return false;
        };
        let words = query_terms(speaker);
        !words.is_empty() && words.iter().all(|w| self.terms.contains(w))
    }
}

/// A turn's speaker label and what follows it (`Name: …`, as the chat import writes
/// turns), or none when the text does not open with one. Only the opening can hold a
/// label: a long turn is not scanned for a colon.
pub fn speaker_label(text: &str) -> Option<(&str, &str)> {
    let opening = &text[..floor_char_boundary(text, MAX_SPEAKER_BYTES + 2)];
    let (speaker, _) = opening.split_once(": ")?;
    if speaker.is_empty() || speaker.contains(['.', '!', '?', '\n']) {
        return None;
    }
    Some((speaker, &text[speaker.len() + 2..]))
}

/// Words a turn may say besides its questions and still only ask: room for an
/// interjection or an address ("Wow, Mel, that's awesome!") before the question.
pub const MAX_ASIDE_WORDS: usize = 6;

/// Longer questions tell as they ask ("I need new ideas for my meal prep, can you suggest
/// …?"): a turn with one is not read as only asking.
pub const MAX_QUESTION_WORDS: usize = 15;

/// Whether `evidence` is a conversation turn that only asks: it holds a question, each of
/// its questions is at most [`MAX_QUESTION_WORDS`] words, and besides them it says at most
/// [`MAX_ASIDE_WORDS`] words (its speaker label aside). Such a turn repeats the words of
/// what it asks about while stating nothing, and is seldom the evidence for anything: on
/// the development files none of the 178 LongMemEval turns and 3 of the 133 LoCoMo turns
/// that questions cite only ask, against 4.9% and 11.2% of all turns. Its answer is the
/// reply, which follow-on credit reaches from the question's own score. Other kinds of
/// text are never read this way (a note may record an open question on purpose).
pub fn only_asks(evidence: &Evidence) -> bool {
    if evidence.source_type != SourceType::Conversation {
        return false;
    }
    let text = evidence.content.as_str();
    // Most turns ask nothing: they are passed over without splitting sentences (this
    // runs for every pooled candidate of a recall).
    if !text.contains('?') {
        return false;
    }
    let body = speaker_label(text).map_or(text, |(_, body)| body);
    let mut asks = false;
    let mut aside_words = 0;
    // Sentence by sentence, and words counted only up to what decides: a long turn is
    // given up on at its first long sentence, not split whole first.
    let words = |sentence: &str, most: usize| sentence.split_whitespace().take(most + 1).count();
    for (start, end) in Sentences::of(body) {
        let sentence = body[start..end].trim_end();
        if sentence.ends_with('?') {
            if words(sentence, MAX_QUESTION_WORDS) > MAX_QUESTION_WORDS {
                return false;
            }
            asks = true;
        } else {
            aside_words += words(sentence, MAX_ASIDE_WORDS);
            if aside_words > MAX_ASIDE_WORDS {
                return false;
            }
        }
    }
    asks
}

/// What memory says for an evidence item besides its text, read by the backend for the
/// fused pool only (CONTRACT §2 step 5: a bounded tier weight and support signals, applied after
/// relevance fusion). The default — supports nothing discoverable, one source — earns
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Support {
    /// The best tier among the discoverable relationships (active, `validated_claim` or
    /// `fact`, valid and known in the recall's time view) that cite this item; `None`
    /// when it cites none — a `candidate` or held claim never counts.
    pub tier: Option<Tier>,
    /// Independent corroboration: the distinct source groups among the item's current
    /// recorded writes of its text (see [`crate::dedup`]), less the one it needs to
    /// exist; 0 for an item written once.
    pub other_source_groups: u32,
}

/// Other source groups that earn corroboration credit: two is full credit, so a text
/// repeated across many feeds is not lifted without bound.
pub const CORROBORATING_GROUPS: u32 = 2;

impl Support {
    /// The tier's grade in [0, 1]: `fact` 1, `validated_claim` ½, anything else 0.
    pub fn tier_grade(&self) -> f64 {
        match self.tier {
            Some(Tier::Fact) => 1.0,
            Some(Tier::ValidatedClaim) => 0.5,
            Some(Tier::Candidate) | None => 0.0,
        }
    }

    /// Corroboration's grade in [0, 1]: each other source group, up to
    /// [`CORROBORATING_GROUPS`], earns an equal share.
    pub fn corroboration_grade(&self) -> f64 {
        f64::from(self.other_source_groups.min(CORROBORATING_GROUPS))
            / f64::from(CORROBORATING_GROUPS)
    }
}

/// How many of a group's other candidates speak for it. Two, not one: a single strong
/// sibling is already a hit of its own, while a second says the conversation (session,
/// thread, document) is about the query rather than touching it once.
pub const GROUP_SUPPORT: usize = 2;

/// For each hit (same order), how relevant the rest of its source group is: the mean fused
/// score of the group's [`GROUP_SUPPORT`] best *other* candidates (a missing one counts
/// 0), in [0, 1]. Evidence without a `source_key` has no group and gets 0. A hit's own
/// score never counts towards its own signal, so a lone strong match is not lifted twice.
pub fn group_support(hits: &[RecallHit]) -> Vec<f64> {
    // Per group, its best GROUP_SUPPORT + 1 fused scores: enough to drop any one member.
    let mut best: HashMap<(TeamId, &str), Vec<f64>> = HashMap::new();
    for hit in hits {
        if let Some(key) = hit.evidence.source_key.as_deref() {
            let top = best.entry((hit.evidence.team, key)).or_default();
            top.push(hit.components.fused);
            top.sort_by(|a, b| b.total_cmp(a));
            top.truncate(GROUP_SUPPORT + 1);
        }
    }
    hits.iter()
        .map(|hit| {
            let Some(key) = hit.evidence.source_key.as_deref() else {
                return 0.0;
            };
            let top = &best[&(hit.evidence.team, key)];
            // Drop this hit's own score once (its value, whichever member holds it).
            let own = top.iter().position(|&s| s == hit.components.fused);
            let others: f64 = top
                .iter()
                .enumerate()
                .filter(|(i, _)| Some(*i) != own)
                .take(GROUP_SUPPORT)
                .map(|(_, s)| s)
                .sum();
            (others / GROUP_SUPPORT as f64).clamp(0.0, 1.0)
        })
        .collect()
}

/// For each hit (same order), where its `observed_at` lies between the pool's oldest (0)
/// and newest (1) candidate; 0 for every hit when they all share one instant. Relative to
/// the pool, not the clock, so it says "the later of the matches", which is what a question
/// about the current state of something wants, without favouring recent noise over
/// relevant history by more than the profile's bound.
pub fn recency(hits: &[RecallHit]) -> Vec<f64> {
    let stamps = hits.iter().map(|hit| hit.evidence.observed_at.as_micros());
    let (Some(oldest), Some(newest)) = (stamps.clone().min(), stamps.max()) else {
        return Vec::new();
    };
    let span = (newest - oldest) as f64;
    hits.iter()
        .map(|hit| {
            if span > 0.0 {
                (hit.evidence.observed_at.as_micros() - oldest) as f64 / span
            } else {
                0.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EvidenceId, NewEvidence, ProfileId, Score, ScoreComponents, Timestamp};
    use uuid::Uuid;

    #[test]
    fn a_speaker_is_named_only_when_all_their_words_are_in_the_query() {
        let named = NamedSpeakers::of("What do Ann Lee's kids like?");
        assert!(named.opens_with_named("Ann Lee: they like dinosaurs"));
        assert!(!named.opens_with_named("Bo: they like dinosaurs"));
        assert!(!named.opens_with_named("Ann Smith: they like dinosaurs"));
        assert!(!named.opens_with_named("no speaker here"));
        assert!(!named.opens_with_named("Ann. Then: more"));
        assert!(!named.opens_with_named(": Ann"));
        let long_label = format!("{}: Ann", "Ann ".repeat(12));
        assert!(
            !named.opens_with_named(&long_label),
            "a label past 40 bytes is a sentence"
        );
        assert!(
            !named.opens_with_named(&"é".repeat(30)),
            "cut at a char boundary"
        );
    }

    fn turn(content: &str, source_type: SourceType) -> Evidence {
        let mut new = NewEvidence::new(content);
        new.source_type = source_type;
        new.into_evidence(
            EvidenceId(Uuid::from_u128(1)),
            TeamId(Uuid::nil()),
            ProfileId(Uuid::nil()),
            Timestamp::from_seconds(0),
        )
        .unwrap()
    }

    fn asks(content: &str) -> bool {
        only_asks(&turn(content, SourceType::Conversation))
    }

    #[test]
    fn a_turn_only_asks_when_besides_its_questions_it_says_at_most_a_few_words() {
        assert!(asks("Caroline: Wow! What got you into running?"));
        assert!(asks(
            "Wow, Mel, that's so awesome! What's your best camping memory?"
        ));
        assert!(asks("Did you go? Was it fun?"));
        assert!(asks("Bo: For walking or running?  "));
        // A long question tells as it asks.
        assert!(!asks(
            "I need some new ideas for my meal prep, can you suggest some protein sources \
             that go well with quinoa and roasted vegetables?"
        ));
        let words = |n: usize| vec!["word"; n].join(" ");
        assert!(asks(&format!("{}?", words(MAX_QUESTION_WORDS))));
        assert!(!asks(&format!("{}?", words(MAX_QUESTION_WORDS + 1))));
        assert!(!asks(
            "Ann: I signed up for a pottery class yesterday. Have you tried it?"
        ));
        assert!(!asks("Ann: I got a new Fitbit last month."));
        assert!(!asks("Ann: no question here at all"));
        // Exactly the aside limit still asks; one word more states something.
        assert!(asks(&format!("{}. Why?", words(MAX_ASIDE_WORDS))));
        assert!(!asks(&format!("{}. Why?", words(MAX_ASIDE_WORDS + 1))));
        // The speaker label is not counted as words said.
        assert!(asks(&format!(
            "Ann Lee Smith: {}. Why?",
            words(MAX_ASIDE_WORDS)
        )));
    }

    #[test]
    fn only_a_conversation_turn_can_only_ask() {
        assert!(!only_asks(&turn(
            "Should we move to Postgres?",
            SourceType::Manual
        )));
        assert!(!only_asks(&turn(
            "Should we move to Postgres?",
            SourceType::Document
        )));
        assert!(only_asks(&turn(
            "Should we move to Postgres?",
            SourceType::Conversation
        )));
    }

    fn hit(id: u128, group: Option<&str>, fused: f64, observed: i64) -> RecallHit {
        let mut new = NewEvidence::new(format!("item {id}"));
        new.source_key = group.map(str::to_string);
        new.observed_at = Some(Timestamp::from_seconds(observed));
        let evidence = new
            .into_evidence(
                EvidenceId(Uuid::from_u128(id)),
                TeamId(Uuid::nil()),
                ProfileId(Uuid::nil()),
                Timestamp::from_seconds(observed),
            )
            .unwrap();
        RecallHit {
            context: evidence.content.clone(),
            evidence,
            score: Score::from_unit(fused),
            components: ScoreComponents {
                fused,
                ..ScoreComponents::default()
            },
            before: Vec::new(),
            after: Vec::new(),
        }
    }

    #[test]
    fn a_hit_is_supported_by_its_best_other_group_members_not_by_itself() {
        let hits = [
            hit(1, Some("a"), 0.9, 1),
            hit(2, Some("a"), 0.5, 2),
            hit(3, Some("a"), 0.3, 3),
            hit(4, Some("a"), 0.1, 4),
        ];
        let support = group_support(&hits);
        assert!((support[0] - (0.5 + 0.3) / 2.0).abs() < 1e-12);
        assert!((support[1] - (0.9 + 0.3) / 2.0).abs() < 1e-12);
        assert!((support[2] - (0.9 + 0.5) / 2.0).abs() < 1e-12);
        assert!((support[3] - (0.9 + 0.5) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_lone_member_and_evidence_without_a_group_get_no_support() {
        let hits = [
            hit(1, Some("a"), 0.9, 1),
            hit(2, None, 0.8, 2),
            hit(3, None, 0.7, 3),
        ];
        assert_eq!(group_support(&hits), [0.0, 0.0, 0.0]);
    }

    #[test]
    fn a_group_with_one_other_member_counts_the_missing_one_as_zero() {
        let hits = [hit(1, Some("a"), 0.8, 1), hit(2, Some("a"), 0.4, 2)];
        let support = group_support(&hits);
        assert!((support[0] - 0.2).abs() < 1e-12);
        assert!((support[1] - 0.4).abs() < 1e-12);
    }

    #[test]
    fn equal_scores_in_a_group_drop_only_one_of_them() {
        let hits = [hit(1, Some("a"), 0.6, 1), hit(2, Some("a"), 0.6, 2)];
        assert_eq!(group_support(&hits), [0.3, 0.3]);
    }

    #[test]
    fn groups_do_not_support_each_other() {
        let hits = [
            hit(1, Some("a"), 0.9, 1),
            hit(2, Some("b"), 0.9, 2),
            hit(3, Some("b"), 0.9, 3),
        ];
        let support = group_support(&hits);
        assert_eq!(support[0], 0.0);
        assert!(support[1] > 0.0);
    }

    #[test]
    fn only_discoverable_tiers_and_extra_groups_earn_a_grade() {
        let plain = Support::default();
        assert_eq!(plain.tier_grade(), 0.0);
        assert_eq!(plain.corroboration_grade(), 0.0);
        let candidate = Support {
            tier: Some(Tier::Candidate),
            other_source_groups: 0,
        };
        assert_eq!(candidate.tier_grade(), 0.0);
        assert_eq!(candidate.corroboration_grade(), 0.0);
        let claim = Support {
            tier: Some(Tier::ValidatedClaim),
            other_source_groups: 1,
        };
        assert_eq!(claim.tier_grade(), 0.5);
        assert_eq!(claim.corroboration_grade(), 0.5);
        let fact = Support {
            tier: Some(Tier::Fact),
            other_source_groups: 40,
        };
        assert_eq!(fact.tier_grade(), 1.0);
        assert_eq!(fact.corroboration_grade(), 1.0);
    }

    #[test]
    fn recency_spans_the_pool_from_oldest_to_newest() {
        let hits = [
            hit(1, None, 0.5, 10),
            hit(2, None, 0.5, 30),
            hit(3, None, 0.5, 20),
        ];
        assert_eq!(recency(&hits), [0.0, 1.0, 0.5]);
        assert_eq!(recency(&hits[..1]), [0.0]);
        assert!(recency(&[]).is_empty());
    }
}
