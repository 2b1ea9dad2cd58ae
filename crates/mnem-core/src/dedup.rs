//! Content-hash de-duplication (the write contract): a write that repeats a text the team
//! already holds does not become a second result. It is recorded as another *write* of
//! the stored item — its provenance (who, from which source and group, observed when) —
//! and answered with the stored item's id. Pure rules; the stores find the stored items
//! by [`crate::evidence::content_hash`] and record what these functions decide.
//!
//! What counts as "the same" is deliberately narrow, because merging two items that a
//! recall could tell apart would hide one of them:
//! - the same text once white space is collapsed ([`crate::text::collapse_whitespace`]);
//! - the same space, and for `private` the same owner (a private note never merges into
//!   another profile's);
//! - everything a recall selects on: kind, scope, labels, refs, expiry;
//! - the same place: neither item belongs to a source sequence (`source_key`), or both
//!   are the same fragment — same `source_key`, `source_revision` and `observed_at` (a
//!   transcript or document imported again). The same words elsewhere in a conversation
//!   ("thanks", "ok") or in another document are another fragment: evidence windows show
//!   a hit's neighbours, so each stays where it was said;
//! - the stored item is current and unexpired, and the new write is not held by
//!   screening (a held write is stored held, for review, as before).

use serde::{Deserialize, Serialize};

use crate::text::collapse_whitespace;
use crate::{Authority, Evidence, LifecycleState, ProfileId, SourceType, Space, Timestamp};

/// One write of an item: who wrote it, from where, observed when. An item written once
/// has only its own (kept on the evidence row); an item written again gets one per write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Provenance {
    pub owner: ProfileId,
    pub source_type: SourceType,
    pub source: String,
    pub authority: Authority,
    pub source_group: String,
    pub source_key: Option<String>,
    pub source_revision: Option<i64>,
    pub observed_at: Timestamp,
    pub recorded_at: Timestamp,
    /// Whether this write still stands: `current`, or `retracted` by its writer.
    pub state: LifecycleState,
}

impl Provenance {
    /// The write that made `evidence`, current.
    pub fn of(evidence: &Evidence) -> Self {
        Self {
            owner: evidence.owner,
            source_type: evidence.source_type,
            source: evidence.source.clone(),
            authority: evidence.authority,
            source_group: evidence.source_group.clone(),
            source_key: evidence.source_key.clone(),
            source_revision: evidence.source_revision,
            observed_at: evidence.observed_at,
            recorded_at: evidence.recorded_at,
            state: LifecycleState::Current,
        }
    }

    /// The same writer, source and observation (when it was recorded aside): writing it
    /// again records nothing new.
    pub fn same_write(&self, other: &Provenance) -> bool {
        self.owner == other.owner
            && self.source_type == other.source_type
            && self.source == other.source
            && self.authority == other.authority
            && self.source_group == other.source_group
            && self.source_key == other.source_key
            && self.source_revision == other.source_revision
            && self.observed_at == other.observed_at
    }
}

/// How a repeated write was settled, reported in the write's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Duplicate {
    /// Another write of a stored item: its provenance was recorded beside the item's.
    Alias,
    /// A write already recorded (same writer, source and observation): nothing changed.
    Replay,
}

/// Whether `new` (validated, not yet stored) repeats `stored` at `now` under the rules
/// above. `stored` must be a record of the same team.
pub fn repeats(stored: &Evidence, new: &Evidence, now: Timestamp) -> bool {
    stored.team == new.team
        && stored.state == LifecycleState::Current
        && new.state == LifecycleState::Current
        && !stored.is_expired_at(now)
        && stored.content_hash == new.content_hash
        && collapse_whitespace(&stored.content) == collapse_whitespace(&new.content)
        && stored.space == new.space
        && (stored.space == Space::Team || stored.owner == new.owner)
        && stored.kind == new.kind
        && stored.scope == new.scope
        && stored.labels == new.labels
        && stored.refs == new.refs
        && stored.expires_at == new.expires_at
        && same_place(stored, new)
}

/// Neither in a source sequence, or the same fragment of the same one.
fn same_place(stored: &Evidence, new: &Evidence) -> bool {
    match (&stored.source_key, &new.source_key) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a == b
                && stored.source_revision == new.source_revision
                && stored.observed_at == new.observed_at
        }
        _ => false,
    }
}

/// How a write that [`repeats`] `stored` is settled, given the writes already recorded
/// for it (`recorded`: empty when it was written once — its own write is implied).
pub fn settle(stored: &Evidence, recorded: &[Provenance], new: &Evidence) -> Duplicate {
    let write = Provenance::of(new);
    let own = Provenance::of(stored);
    let known = std::iter::once(&own)
        .chain(recorded)
        .any(|p| p.state == LifecycleState::Current && p.same_write(&write));
    if known {
        Duplicate::Replay
    } else {
        Duplicate::Alias
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EvidenceId, NewEvidence, Scope, TeamId};
    use uuid::Uuid;

    const TEAM: TeamId = TeamId(Uuid::from_u128(1));
    const OWNER: ProfileId = ProfileId(Uuid::from_u128(2));
    const OTHER: ProfileId = ProfileId(Uuid::from_u128(3));
    const NOW: Timestamp = Timestamp::from_seconds(1_000);

    fn record(id: u128, owner: ProfileId, edit: impl FnOnce(&mut NewEvidence)) -> Evidence {
        let mut new = NewEvidence::new("Ana prefers  tea\nin the morning ");
        new.source = "chat".into();
        edit(&mut new);
        new.into_evidence(
            EvidenceId(Uuid::from_u128(id)),
            TEAM,
            owner,
            Timestamp::from_seconds(id as i64),
        )
        .unwrap()
    }

    #[test]
    fn whitespace_differences_are_the_same_text() {
        assert_eq!(
            collapse_whitespace(" Ana prefers\ttea \n\n in the morning "),
            "Ana prefers tea in the morning"
        );
        let stored = record(1, OWNER, |_| {});
        let new = record(2, OTHER, |n| {
            n.content = "Ana prefers tea in the morning".into()
        });
        assert!(repeats(&stored, &new, NOW));
    }

    #[test]
    fn anything_a_recall_selects_on_keeps_items_apart() {
        let stored = record(1, OWNER, |_| {});
        type Edit = fn(&mut NewEvidence);
        let edits: [(&str, Edit); 7] = [
            ("text", |n| n.content = "Ana prefers coffee".into()),
            ("kind", |n| n.kind = Some("decision".into())),
            ("scope", |n| n.scope = Scope::new(["acme"]).unwrap()),
            ("labels", |n| n.labels = vec!["diet".into()]),
            ("expiry", |n| {
                n.expires_at = Some(Timestamp::from_seconds(5_000))
            }),
            ("space", |n| n.space = Space::Private),
            ("held", |n| n.quarantine = Some("screened".into())),
        ];
        for (what, edit) in edits {
            let new = record(2, OWNER, edit);
            assert!(!repeats(&stored, &new, NOW), "{what}");
        }
    }

    #[test]
    fn private_text_merges_only_with_the_same_owners() {
        let stored = record(1, OWNER, |n| n.space = Space::Private);
        let mine = record(2, OWNER, |n| n.space = Space::Private);
        let theirs = record(3, OTHER, |n| n.space = Space::Private);
        assert!(repeats(&stored, &mine, NOW));
        assert!(!repeats(&stored, &theirs, NOW));
    }

    #[test]
    fn the_same_words_elsewhere_in_a_sequence_are_another_fragment() {
        let turn = |id, session: &str, at: i64| {
            record(id, OWNER, |n| {
                n.source_key = Some(session.into());
                n.observed_at = Some(Timestamp::from_seconds(at));
            })
        };
        let stored = turn(1, "session-1", 10);
        assert!(repeats(&stored, &turn(2, "session-1", 10), NOW), "replayed");
        assert!(
            !repeats(&stored, &turn(3, "session-1", 20), NOW),
            "said again"
        );
        assert!(
            !repeats(&stored, &turn(4, "session-2", 10), NOW),
            "elsewhere"
        );
        assert!(
            !repeats(&stored, &record(5, OWNER, |_| {}), NOW),
            "free-standing"
        );
    }

    #[test]
    fn only_current_unexpired_items_absorb_a_write() {
        let mut retracted = record(1, OWNER, |_| {});
        retracted.state = LifecycleState::Retracted;
        let new = record(2, OWNER, |_| {});
        assert!(!repeats(&retracted, &new, NOW));
        let expiring = |id| {
            record(id, OWNER, |n| {
                n.expires_at = Some(Timestamp::from_seconds(500))
            })
        };
        assert!(repeats(
            &expiring(1),
            &expiring(2),
            Timestamp::from_seconds(400)
        ));
        assert!(!repeats(&expiring(1), &expiring(2), NOW));
    }

    #[test]
    fn a_recorded_write_is_a_replay_and_a_new_one_an_alias() {
        let stored = record(1, OWNER, |_| {});
        let again = record(2, OWNER, |n| {
            n.observed_at = Some(Timestamp::from_seconds(1))
        });
        assert_eq!(settle(&stored, &[], &again), Duplicate::Replay);
        let elsewhere = record(3, OTHER, |n| n.source = "email".into());
        assert_eq!(settle(&stored, &[], &elsewhere), Duplicate::Alias);
        let recorded = [Provenance::of(&elsewhere)];
        assert_eq!(settle(&stored, &recorded, &elsewhere), Duplicate::Replay);
        let mut withdrawn = Provenance::of(&elsewhere);
        withdrawn.state = LifecycleState::Retracted;
        assert_eq!(settle(&stored, &[withdrawn], &elsewhere), Duplicate::Alias);
    }
}
