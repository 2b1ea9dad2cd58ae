//! Content-hash de-duplication inside a write's transaction, once for every backend and
//! every write path (plain, batch, structured): which new records repeat a stored (or an
//! earlier new) one, and which writes to record beside it. The rules are
//! `mnem_core::dedup`'s; a backend implements [`ProvenanceRows`] (reads and appends of
//! its open transaction, no decisions), calls [`settle`], inserts what is fresh and then
//! [`Settled::record`]s the writes.
//!
//! Writes are kept per item in `evidence_provenance`, numbered from 0: number 0 is the
//! item's own first write (copied from its row when a second write arrives), so an item
//! written once has no rows there at all.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use mnem_core::dedup::{repeats, settle as settle_write, Duplicate, Provenance};
use mnem_core::{Actor, Evidence, EvidenceId, LifecycleState, Timestamp};
use serde::Serialize;

use crate::Result;

/// The row reads and appends de-duplication needs, inside the write's transaction.
#[allow(async_fn_in_trait)]
pub trait ProvenanceRows {
    /// Makes other writers of these texts (by hash) wait until this transaction ends, so
    /// two concurrent writes of one text cannot both find it missing; a no-op where one
    /// writer runs at a time. Taken for all of a request's texts at once (in one order,
    /// so two writers cannot deadlock): by [`settle`], or by a caller that then settles
    /// its items one at a time with [`settle_held`].
    async fn hold_texts(&self, actor: &Actor, hashes: &[String]) -> Result<()>;

    /// Current records the actor can see (the team's, and its own private ones) whose
    /// `content_hash` is one of `hashes`, oldest first.
    async fn current_with_hashes(&self, actor: &Actor, hashes: &[String]) -> Result<Vec<Evidence>>;

    /// The writes recorded for `id`, by number (empty for an item written once).
    async fn writes(&self, actor: &Actor, id: EvidenceId) -> Result<Vec<Provenance>>;

    /// Appends writes of `id`, numbered from `first`.
    async fn append_writes(
        &self,
        actor: &Actor,
        id: EvidenceId,
        first: usize,
        writes: &[Provenance],
    ) -> Result<()>;

    /// Marks the writes numbered `numbers` of `id` retracted.
    async fn retract_writes(&self, actor: &Actor, id: EvidenceId, numbers: &[usize]) -> Result<()>;
}

/// What a write stored, or found already stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Remembered {
    /// The record that stands for the write: the new one, or the stored one it repeats.
    pub evidence: Evidence,
    /// `Some` when the write repeated a stored text: no second item was made.
    pub duplicate: Option<Duplicate>,
}

/// One validated record to write: its hold (screening's reason, if any), and whether only
/// an item with exactly its text may absorb it (a structured write whose claims cite
/// spans of this text: spans count code points of the exact text).
#[derive(Debug, Clone)]
pub struct NewRecord {
    pub evidence: Evidence,
    pub hold: Option<String>,
    pub exact_text: bool,
}

/// A batch settled against the store: the records to insert, the answer to every write
/// (in order), and the writes to record once the inserts are done.
#[derive(Debug)]
pub struct Settled {
    pub fresh: Vec<(Evidence, Option<String>)>,
    pub answers: Vec<Remembered>,
    appends: Vec<(EvidenceId, usize, Vec<Provenance>)>,
}

impl Settled {
    /// The answer to a batch of one.
    pub fn only_answer(self) -> Result<Remembered> {
        self.answers
            .into_iter()
            .next()
            .ok_or_else(|| crate::StoreError::Backend("a write was answered with nothing".into()))
    }

    /// Appends the writes the batch added to repeated items (after the fresh records are
    /// inserted: an item repeated inside one batch is one of them).
    pub async fn record<R: ProvenanceRows>(&self, rows: &R, actor: &Actor) -> Result<()> {
        for (id, first, writes) in &self.appends {
            rows.append_writes(actor, *id, *first, writes).await?;
        }
        Ok(())
    }
}

/// The distinct hashes of the records that can repeat a stored item (held ones cannot),
/// sorted: the order texts are held in.
fn texts(records: &[NewRecord]) -> Vec<String> {
    let mut hashes: Vec<String> = records
        .iter()
        .filter(|r| r.hold.is_none())
        .map(|r| r.evidence.content_hash.clone())
        .collect();
    hashes.sort_unstable();
    hashes.dedup();
    hashes
}

/// Holds the batch's texts ([`ProvenanceRows::hold_texts`]), then [`settle_held`].
pub async fn settle<R: ProvenanceRows>(
    rows: &R,
    actor: &Actor,
    records: Vec<NewRecord>,
    now: Timestamp,
) -> Result<Settled> {
    let hashes = texts(&records);
    if !hashes.is_empty() {
        rows.hold_texts(actor, &hashes).await?;
    }
    settle_held(rows, actor, records, now).await
}

/// Settles `records` in order, the caller holding their texts: each repeats a stored
/// current item, or an earlier fresh record of the batch, or is fresh. One read for the
/// stored candidates, one per repeated stored item for its recorded writes.
pub async fn settle_held<R: ProvenanceRows>(
    rows: &R,
    actor: &Actor,
    records: Vec<NewRecord>,
    now: Timestamp,
) -> Result<Settled> {
    let hashes = texts(&records);
    let stored = if hashes.is_empty() {
        Vec::new()
    } else {
        rows.current_with_hashes(actor, &hashes).await?
    };
    // Per absorbing item: its writes as recorded, and the count already in the store.
    let mut known: HashMap<EvidenceId, (Vec<Provenance>, usize)> = HashMap::new();
    let mut appends: HashMap<EvidenceId, (usize, Vec<Provenance>)> = HashMap::new();
    let mut fresh: Vec<(Evidence, Option<String>)> = Vec::new();
    let mut answers = Vec::with_capacity(records.len());
    for record in records {
        let NewRecord {
            evidence: new,
            hold,
            exact_text,
        } = record;
        let absorbs =
            |old: &Evidence| repeats(old, &new, now) && (!exact_text || old.content == new.content);
        let target = stored
            .iter()
            .chain(fresh.iter().map(|(e, _)| e))
            .find(|old| absorbs(old))
            .cloned();
        let Some(target) = target else {
            answers.push(Remembered {
                evidence: new.clone(),
                duplicate: None,
            });
            fresh.push((new, hold));
            continue;
        };
        let in_store = stored.iter().any(|s| s.id == target.id);
        let (recorded, stored_count) = match known.entry(target.id) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let recorded = if in_store {
                    rows.writes(actor, target.id).await?
                } else {
                    Vec::new()
                };
                let count = recorded.len();
                entry.insert((recorded, count))
            }
        };
        let duplicate = settle_write(&target, recorded, &new);
        if duplicate == Duplicate::Alias {
            let mut added = Vec::new();
            if recorded.is_empty() {
                added.push(Provenance::of(&target));
            }
            added.push(Provenance::of(&new));
            recorded.extend(added.iter().cloned());
            let first = *stored_count;
            appends
                .entry(target.id)
                .or_insert_with(|| (first, Vec::new()))
                .1
                .extend(added);
        }
        answers.push(Remembered {
            evidence: target,
            duplicate: Some(duplicate),
        });
    }
    let mut appends: Vec<(EvidenceId, usize, Vec<Provenance>)> = appends
        .into_iter()
        .map(|(id, (first, writes))| (id, first, writes))
        .collect();
    appends.sort_by_key(|(id, _, _)| *id);
    Ok(Settled {
        fresh,
        answers,
        appends,
    })
}

/// What retracting an item does to its writes: `Whole` when no other write stands (the
/// item itself is retracted), `Kept` when others still do (only the actor's are marked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawal {
    Whole,
    Kept { standing: usize },
}

/// Withdraws the actor's writes of `id` — every write when the actor made none (an admin
/// acting on another's item; the service checks the right). The item leaves recall only
/// when no write stands. An actor whose writes are all withdrawn already gets `NotFound`,
/// as a second retraction of an item does: it never reaches the others' writes.
pub async fn withdraw<R: ProvenanceRows>(
    rows: &R,
    actor: &Actor,
    id: EvidenceId,
) -> Result<Withdrawal> {
    let writes = rows.writes(actor, id).await?;
    let standing: Vec<usize> = (0..writes.len())
        .filter(|&n| writes[n].state == LifecycleState::Current)
        .collect();
    if standing.is_empty() {
        return Ok(Withdrawal::Whole);
    }
    let wrote = writes.iter().any(|w| w.owner == actor.profile);
    let mine: Vec<usize> = standing
        .iter()
        .copied()
        .filter(|&n| writes[n].owner == actor.profile)
        .collect();
    if wrote && mine.is_empty() {
        return Err(crate::StoreError::NotFound { id });
    }
    let withdrawn = if wrote { mine } else { standing.clone() };
    rows.retract_writes(actor, id, &withdrawn).await?;
    Ok(match standing.len() - withdrawn.len() {
        0 => Withdrawal::Whole,
        left => Withdrawal::Kept { standing: left },
    })
}
