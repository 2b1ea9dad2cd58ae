//! The lexical branch's top-k over block posting lists ([`super::blocks`]), exact and
//! without I/O: [`TopK`] asks its caller for blocks and for eligibility step by step
//! ([`Need`]), so one algorithm serves a synchronous SQLite and an asynchronous
//! PostgreSQL, and ranks identically on both.
//!
//! The method is block-max MaxScore (Lucene's `MaxScoreBulkScorer`; Ding & Suel 2011,
//! Mallia et al. 2019). Doc ids are walked in windows within which every term's current
//! block is fixed, so each term has one bound (its block's [`BlockSummary::bound`]) for the
//! whole window:
//!
//! - a window whose bounds sum below the pool's threshold is skipped without decoding a
//!   posting;
//! - otherwise the terms whose bounds sum below the threshold are *non-essential*: only the
//!   essential terms' postings are walked, and a non-essential term is looked up only
//!   for a doc whose score could still reach the threshold.
//!
//! Which scored documents the reader may recall is asked of the caller. A ranked search
//! first *presumes* every scored document eligible ([`Presumption`]): it keeps the best
//! `pool` plus a margin, prunes against the last of them, and confirms that set in one ask
//! at the end (and once early, before anything is pruned, to notice a reader who may see
//! little). That is exact when at least `pool` of the kept documents are eligible, as they
//! are in a team whose texts the reader may mostly see; otherwise, or when the early check
//! finds many ineligible, the search is walked (again) as it was before presumption: the
//! threshold is the pool's last relevance among documents confirmed eligible, asked about
//! in batches as they are scored, so a document the reader may not see never raises it.
//! Either way a document whose bound ties the threshold is still scored, since the
//! order's later keys may put it in. Once the whole eligible set is known (asked for after
//! many ineligible matches, or handed over first for a short period) the walk visits only
//! its docs: a window starts at the next eligible doc, and a doc outside the set is jumped
//! over unscored. Every document that could enter the pool is scored
//! on every query term, in the terms' given order, so its relevance is the number an
//! unpruned read gives to the last bit.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use uuid::Uuid;

use super::blocks::{Block, BlockError, BlockSummary, Posting, StoredBlock};
use super::Bm25;

/// Eligibility is asked for at most this many documents at a time.
const ELIGIBILITY_BATCH: usize = 128;

/// After this many documents found ineligible, and more of them than eligible ones, the
/// whole eligible set is asked for once instead (a narrow scope or kind filter): one read
/// of the eligible rows costs less than asking about every match.
const INELIGIBLE_BEFORE_SET: usize = 4 * ELIGIBILITY_BATCH;

/// A pruning test passes only below the threshold by this relative margin, so a bound and
/// a score that are equal in exact arithmetic but summed in different orders can never
/// prune a document that belongs.
const BOUND_MARGIN: f64 = 1e-9;

/// What orders the branch after relevance: the keys of `mnem_core::compare_hits` the
/// backend holds for an eligible document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderKeys {
    pub scope_depth: i64,
    pub observed_at: i64,
    pub evidence_id: Uuid,
}

/// A query term that occurs in the team: its idf, and the most it adds to any document.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchTerm {
    pub idf: f64,
    pub bound: f64,
}

impl SearchTerm {
    /// A term whose posting list's largest frequency and shortest length are known (they
    /// may be stale in the safe direction: larger and shorter than what is left).
    pub fn new(bm25: &Bm25, idf: f64, max_frequency: u32, min_length: u32) -> Self {
        Self {
            idf,
            bound: bm25.term_score(idf, max_frequency, min_length),
        }
    }

    /// A term bounded only by BM25's saturation.
    pub fn unbounded(idf: f64) -> Self {
        Self {
            idf,
            bound: Bm25::term_bound(idf),
        }
    }
}

/// How the branch is ordered and whether it may prune.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchOrder {
    /// By relevance first (a text query in relevance order); otherwise by the later keys
    /// only, and nothing can be pruned.
    pub ranked: bool,
    /// A widened scope puts deeper scopes first after relevance.
    pub widened: bool,
    /// Pruning on; off only for the oracle the pruned read is tested against.
    pub prune: bool,
}

impl BranchOrder {
    /// The order a recall query asks of its lexical branch.
    pub fn of(query: &crate::RecallQuery, prune: bool) -> Self {
        Self {
            ranked: query.order == crate::Order::Relevance,
            widened: query.scope_filter().is_widened(),
            prune,
        }
    }
}

/// What the search needs from its caller before it can go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// Blocks of these terms ([`BlockRead`]), answered by [`TopK::supply_blocks`].
    Blocks(Vec<BlockRead>),
    /// Which of these docs the reader may recall, with their order keys
    /// ([`TopK::supply_eligible`]).
    Eligibility(Vec<i64>),
    /// Every doc of the team the reader may recall under the query, with its order keys
    /// ([`TopK::supply_eligible_set`]): asked at most once, when most matches so far were
    /// ineligible.
    EligibleSet,
    /// The search is over: [`TopK::results`].
    Done,
}

/// A read of one term's blocks: in doc order, from the first whose last doc is at least
/// `from`, about `blocks` of them (a walk reads ahead, a lookup reads one). The caller may
/// read more or fewer, at least one if there is one, and says when none are left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRead {
    pub term: usize,
    pub from: i64,
    pub blocks: usize,
}

/// Blocks a walked (essential) term reads at once.
const SEQUENTIAL_READ: usize = 16;

/// Blocks a walked term reads at once once the eligible set is known: the walk jumps
/// between eligible docs, so blocks read far ahead are mostly passed over unread.
const SEQUENTIAL_READ_KNOWN: usize = 4;

/// Blocks a looked-up (non-essential) term reads at once: only the one holding the doc
/// (lookups are sparse; reading the next as well doubled what a lookup read).
const SEEK_READ: usize = 1;

/// A document in (or competing for) the pool.
#[derive(Debug, Clone)]
struct Entry {
    doc: i64,
    relevance: f64,
    keys: OrderKeys,
}

/// A term's read position: the blocks read from the store, the first one decoded.
struct Cursor {
    idf: f64,
    /// The most this term adds to any document of the team.
    list_bound: f64,
    blocks: VecDeque<StoredBlock>,
    /// The caller has supplied every block from the last asked position on.
    complete: bool,
    decoded: Option<Block>,
    /// Index of the next unread posting in the decoded front block.
    position: usize,
}

impl Cursor {
    fn front(&self) -> Option<&BlockSummary> {
        self.blocks.front().map(|(summary, _)| summary)
    }

    /// Drops the blocks that end before `doc`. A term read by lookups jumps past blocks
    /// it never needs: when its loaded ones are used up it is read again from the doc.
    fn drop_before(&mut self, doc: i64) {
        while self.front().is_some_and(|s| s.last_doc < doc) {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        self.blocks.pop_front();
        self.decoded = None;
        self.position = 0;
    }

    fn decode_front(&mut self) -> Result<&[Posting], BlockError> {
        if self.decoded.is_none() {
            let Some((_, bytes)) = self.blocks.front() else {
                return Ok(&[]);
            };
            self.decoded = Some(Block::decode(bytes)?);
            self.position = 0;
        }
        Ok(self.decoded.as_ref().map(Block::postings).unwrap_or(&[]))
    }

    /// The front block's frequency for `doc`, 0 when it has none (moves forward only).
    fn frequency_at(&mut self, doc: i64) -> Result<Option<Posting>, BlockError> {
        let start = self.position;
        let postings = self.decode_front()?;
        let at = seek(postings, start, doc);
        let found = postings.get(at).filter(|p| p.doc == doc).copied();
        self.position = at;
        Ok(found)
    }

    /// The next posting of the front block at or after `from` and at most `end`.
    fn peek(&mut self, from: i64, end: i64) -> Result<Option<Posting>, BlockError> {
        let start = self.position;
        let postings = self.decode_front()?;
        let at = seek(postings, start, from);
        let found = postings.get(at).filter(|p| p.doc <= end).copied();
        self.position = at;
        Ok(found)
    }
}

/// The first posting at or after `start` whose doc is at least `doc`. A walked term's next
/// doc is usually the one at `start` or just after it, so those are looked at before a
/// binary search of the rest.
fn seek(postings: &[Posting], start: usize, doc: i64) -> usize {
    let rest = postings.get(start..).unwrap_or(&[]);
    if let Some(near) = rest.iter().take(2).position(|p| p.doc >= doc) {
        return start + near;
    }
    let from = start + rest.len().min(2);
    from + postings[from..].partition_point(|p| p.doc < doc)
}

/// The window being walked: docs `next..=end`, and which terms are essential in it.
struct Window {
    end: i64,
    next: i64,
    essential: Vec<usize>,
    /// Non-essential terms, highest bound first, with their bounds.
    non_essential: Vec<(usize, f64)>,
    non_essential_bound: f64,
    /// A doc whose non-essential terms are being looked up.
    current: Option<Scoring>,
}

/// A doc part-way through its scoring, kept while a non-essential term's block is read.
struct Scoring {
    doc: i64,
    /// Each term's contribution so far (0 where it has none or is not yet looked up).
    contributions: Vec<f64>,
    /// The most the doc can still score: what is known plus the bounds of what is not.
    reachable: f64,
    /// The next non-essential term to look up.
    step: usize,
}

/// Which documents may be recalled, as far as the caller has said.
enum Eligibility {
    /// Scored documents are taken as eligible until the set kept is confirmed.
    Presumed(Presumption),
    /// Scored documents are asked about in batches before they enter the pool.
    Asked { eligible: usize, ineligible: usize },
    /// The caller named every eligible document: the walk visits only their docs.
    Known {
        keys: HashMap<i64, OrderKeys>,
        /// The same docs in order, for jumping from one to the next.
        docs: Vec<i64>,
    },
}

/// How many documents a branch keeps (or, for the vector index, proposes) before their
/// eligibility is confirmed: the pool and an eighth more, at least one, so a few the reader
/// may not recall need no second round.
pub fn presumed_pool(pool: usize) -> usize {
    pool + eligibility_margin(pool)
}

fn eligibility_margin(pool: usize) -> usize {
    (pool / 8).max(1)
}

/// The presumed pool: documents scored but not yet confirmed eligible, best first.
///
/// It keeps [`presumed_pool`] documents and every one tied with the last, so a document left
/// out scores strictly below every one kept. When at least `pool` of those kept are
/// eligible, the eligible ones hold the exact top `pool`; the margin lets a few be
/// ineligible (a quarantined or another profile's private text) without a second walk.
struct Presumption {
    /// Relevance descending; equal relevance in the order scored.
    kept: Vec<(i64, f64)>,
    capacity: usize,
    margin: usize,
    /// The first `capacity` documents were confirmed, before anything was pruned.
    checked: bool,
}

impl Presumption {
    fn new(pool: usize) -> Self {
        let capacity = presumed_pool(pool);
        Self {
            kept: Vec::with_capacity(capacity + 1),
            capacity,
            margin: eligibility_margin(pool),
            checked: false,
        }
    }

    /// The last kept relevance once the set is full; nothing is pruned before the first
    /// check, so that check may drop what it finds ineligible.
    fn threshold(&self) -> Option<f64> {
        (self.checked && self.kept.len() >= self.capacity).then(|| self.kept[self.capacity - 1].1)
    }

    fn keep(&mut self, doc: i64, relevance: f64) {
        let at = self.kept.partition_point(|&(_, r)| r >= relevance);
        self.kept.insert(at, (doc, relevance));
        if self.checked && self.kept.len() > self.capacity {
            let last = self.kept[self.capacity - 1].1;
            let tied = self.kept.partition_point(|&(_, r)| r >= last);
            self.kept.truncate(tied);
        }
    }

    /// The early check is due: the set filled for the first time.
    fn check_due(&self) -> bool {
        !self.checked && self.kept.len() >= self.capacity
    }
}

/// The exact top `pool` of a lexical query over block posting lists, driven by its caller
/// (see the module doc).
pub struct TopK {
    bm25: Bm25,
    cursors: Vec<Cursor>,
    /// The terms by whole-list bound, lowest first (ties by term): fixed for the search,
    /// so each window only moves the split between non-essential and essential.
    by_bound: Vec<usize>,
    pool: usize,
    order: BranchOrder,
    /// A scored document's per-term contributions, reused from one document to the next
    /// (one allocation per search rather than one per document scored).
    spare: Vec<f64>,
    /// Start of the next window.
    next_doc: i64,
    window: Option<Window>,
    /// Scored documents waiting for their eligibility.
    pending: Vec<(i64, f64)>,
    asked: Vec<(i64, f64)>,
    eligibility: Eligibility,
    /// What the caller said of documents while they were presumed eligible: kept when
    /// the search is walked again, so they are not asked about twice.
    learned: HashMap<i64, Option<OrderKeys>>,
    /// The pool so far: the worst entry on top.
    pool_heap: BinaryHeap<Ranked>,
    /// Every window is walked: only pending documents are left to settle.
    finished: bool,
}

/// An entry ordered so that the heap's top is the pool's worst.
struct Ranked {
    entry: Entry,
    order: BranchOrder,
}

impl Ranked {
    /// `Less` when `self` comes first in the branch's order.
    fn compare(&self, other: &Self) -> Ordering {
        compare_entries(&self.entry, &other.entry, self.order)
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Ranked {
    fn cmp(&self, other: &Self) -> Ordering {
        self.compare(other)
    }
}

/// The branch's order: relevance (when ranked), deeper scope (when widened), newer, then
/// the lower id — `mnem_core::compare_hits`'s keys in its precedence.
fn compare_entries(a: &Entry, b: &Entry, order: BranchOrder) -> Ordering {
    let by_relevance = if order.ranked {
        b.relevance.total_cmp(&a.relevance)
    } else {
        Ordering::Equal
    };
    let by_scope = if order.widened {
        b.keys.scope_depth.cmp(&a.keys.scope_depth)
    } else {
        Ordering::Equal
    };
    by_relevance
        .then(by_scope)
        .then(b.keys.observed_at.cmp(&a.keys.observed_at))
        .then(a.keys.evidence_id.cmp(&b.keys.evidence_id))
        .then(a.doc.cmp(&b.doc))
}

fn below(bound: f64, threshold: f64) -> bool {
    bound + BOUND_MARGIN * bound.abs().max(1.0) < threshold
}

impl TopK {
    /// A search for `terms` (their order is the order a score sums them in), keeping the
    /// best `pool` documents.
    pub fn new(bm25: Bm25, terms: &[SearchTerm], pool: usize, order: BranchOrder) -> Self {
        let mut by_bound: Vec<usize> = (0..terms.len()).collect();
        by_bound.sort_by(|&a, &b| terms[a].bound.total_cmp(&terms[b].bound).then(a.cmp(&b)));
        Self {
            bm25,
            by_bound,
            spare: Vec::with_capacity(terms.len()),
            cursors: terms
                .iter()
                .map(|term| Cursor {
                    idf: term.idf,
                    list_bound: term.bound,
                    blocks: Default::default(),
                    complete: false,
                    decoded: None,
                    position: 0,
                })
                .collect(),
            pool,
            order,
            next_doc: i64::MIN,
            window: None,
            pending: Vec::new(),
            asked: Vec::new(),
            eligibility: if order.ranked && order.prune {
                Eligibility::Presumed(Presumption::new(pool))
            } else {
                Eligibility::Asked {
                    eligible: 0,
                    ineligible: 0,
                }
            },
            learned: HashMap::new(),
            pool_heap: BinaryHeap::new(),
            finished: pool == 0 || terms.is_empty(),
        }
    }

    /// The pool's bar: a document scoring below it cannot enter. `None` while the pool
    /// is not full, or when nothing can be pruned.
    fn threshold(&self) -> Option<f64> {
        if !(self.order.prune && self.order.ranked) {
            return None;
        }
        match &self.eligibility {
            Eligibility::Presumed(presumed) => presumed.threshold(),
            _ => (self.pool_heap.len() >= self.pool)
                .then(|| self.pool_heap.peek().map(|r| r.entry.relevance))
                .flatten(),
        }
    }

    /// Blocks of `term` from the position last asked for, in doc order; `complete` when
    /// there are no more after them.
    pub fn supply_blocks(&mut self, term: usize, blocks: Vec<StoredBlock>, complete: bool) {
        if let Some(cursor) = self.cursors.get_mut(term) {
            cursor.complete = complete || blocks.is_empty();
            cursor.blocks.extend(blocks);
        }
    }

    /// The eligible ones among the docs last asked about, with their keys.
    pub fn supply_eligible(&mut self, eligible: Vec<(i64, OrderKeys)>) {
        let mut keys: HashMap<i64, OrderKeys> = eligible.into_iter().collect();
        let asked = std::mem::take(&mut self.asked);
        if matches!(self.eligibility, Eligibility::Presumed(_)) {
            for (doc, _) in asked {
                self.learned.insert(doc, keys.remove(&doc));
            }
            self.after_early_check();
            return;
        }
        let (mut yes, mut no) = (0, 0);
        for (doc, relevance) in asked {
            match keys.remove(&doc) {
                Some(keys) => {
                    yes += 1;
                    self.admit(Entry {
                        doc,
                        relevance,
                        keys,
                    });
                }
                None => no += 1,
            }
        }
        if let Eligibility::Asked {
            eligible,
            ineligible,
        } = &mut self.eligibility
        {
            *eligible += yes;
            *ineligible += no;
        }
    }

    /// After the first presumed set is confirmed: its ineligible documents are dropped
    /// (nothing was pruned against them yet). Past half the margin the reader is taken to
    /// see too little for presumption to pay, and the search goes on asking, from here.
    fn after_early_check(&mut self) {
        let Eligibility::Presumed(presumed) = &mut self.eligibility else {
            return;
        };
        if presumed.checked {
            return;
        }
        let learned = &self.learned;
        let before = presumed.kept.len();
        presumed
            .kept
            .retain(|(doc, _)| matches!(learned.get(doc), Some(Some(_))));
        let ineligible = before - presumed.kept.len();
        presumed.checked = true;
        if ineligible * 2 <= presumed.margin {
            return;
        }
        let kept = std::mem::take(&mut presumed.kept);
        self.eligibility = Eligibility::Asked {
            eligible: kept.len(),
            ineligible,
        };
        // The walk goes on past these docs and never scores them again: nothing learned
        // is left to settle.
        let mut learned = std::mem::take(&mut self.learned);
        for (doc, relevance) in kept {
            if let Some(Some(keys)) = learned.remove(&doc) {
                self.admit(Entry {
                    doc,
                    relevance,
                    keys,
                });
            }
        }
    }

    /// The walk is over with the set presumed: asks about what is not yet known, then
    /// admits the eligible ones if they are enough to be exact, or walks again asking.
    fn resolve_presumption(&mut self) -> Option<Need> {
        let Eligibility::Presumed(presumed) = &self.eligibility else {
            return None;
        };
        let unknown: Vec<(i64, f64)> = presumed
            .kept
            .iter()
            .filter(|(doc, _)| !self.learned.contains_key(doc))
            .copied()
            .collect();
        if !unknown.is_empty() {
            self.asked = unknown;
            return Some(Need::Eligibility(
                self.asked.iter().map(|&(d, _)| d).collect(),
            ));
        }
        // Fewer kept than the capacity: nothing was ever pruned, so every match is here.
        let complete = presumed.kept.len() < presumed.capacity;
        let eligible: Vec<Entry> = presumed
            .kept
            .iter()
            .filter_map(|&(doc, relevance)| match self.learned.get(&doc) {
                Some(Some(keys)) => Some(Entry {
                    doc,
                    relevance,
                    keys: keys.clone(),
                }),
                _ => None,
            })
            .collect();
        let enough = complete || eligible.len() >= self.pool;
        self.eligibility = Eligibility::Asked {
            eligible: 0,
            ineligible: 0,
        };
        if enough {
            for entry in eligible {
                self.admit(entry);
            }
        } else {
            self.walk_again();
        }
        None
    }

    /// Back to the first doc, asking as it goes: what was learned while presuming is
    /// settled without asking again.
    fn walk_again(&mut self) {
        for cursor in &mut self.cursors {
            cursor.blocks.clear();
            cursor.complete = false;
            cursor.decoded = None;
            cursor.position = 0;
        }
        self.next_doc = i64::MIN;
        self.window = None;
        self.pending.clear();
        self.finished = false;
    }

    /// A scored document that may enter the pool.
    fn found(&mut self, doc: i64, relevance: f64) {
        match &mut self.eligibility {
            Eligibility::Presumed(presumed) => presumed.keep(doc, relevance),
            _ => self.pending.push((doc, relevance)),
        }
    }

    /// The walk should stop for an answer: a full batch waits, or the presumed set filled
    /// for the first time.
    fn answer_due(&self) -> bool {
        match &self.eligibility {
            Eligibility::Presumed(presumed) => presumed.check_due(),
            _ => self.pending.len() >= ELIGIBILITY_BATCH,
        }
    }

    /// Pending documents the presumed walk already learned about, settled without asking.
    fn settle_learned(&mut self) {
        if self.learned.is_empty() || self.pending.is_empty() {
            return;
        }
        let learned = &self.learned;
        let mut settled = Vec::new();
        self.pending
            .retain(|&(doc, relevance)| match learned.get(&doc) {
                Some(Some(keys)) => {
                    settled.push(Entry {
                        doc,
                        relevance,
                        keys: keys.clone(),
                    });
                    false
                }
                Some(None) => false,
                None => true,
            });
        for entry in settled {
            self.admit(entry);
        }
    }

    /// Every doc the reader may recall under the query, with its keys. Asked for by
    /// [`Need::EligibleSet`], or supplied before the first [`TopK::need`] by a caller who
    /// knows the query's filter admits few documents (a short period): from then on the
    /// walk jumps from one eligible doc to the next, and reads only the blocks that hold
    /// one, whatever the length of the posting lists.
    pub fn supply_eligible_set(&mut self, eligible: Vec<(i64, OrderKeys)>) {
        let keys: HashMap<i64, OrderKeys> = eligible.into_iter().collect();
        let mut docs: Vec<i64> = keys.keys().copied().collect();
        docs.sort_unstable();
        self.eligibility = Eligibility::Known { keys, docs };
        let asked = std::mem::take(&mut self.asked);
        self.pending.extend(asked);
        self.settle_known();
    }

    fn admit(&mut self, entry: Entry) {
        self.pool_heap.push(Ranked {
            entry,
            order: self.order,
        });
        if self.pool_heap.len() > self.pool {
            self.pool_heap.pop();
        }
    }

    /// With the eligible set known, the first eligible doc at or after `doc` (`Some(None)`
    /// when none is left); `None` while the set is not known.
    fn next_known(&self, doc: i64) -> Option<Option<i64>> {
        let Eligibility::Known { docs, .. } = &self.eligibility else {
            return None;
        };
        Some(docs.get(docs.partition_point(|&d| d < doc)).copied())
    }

    /// With the eligible set known, pending documents are settled here, not asked about.
    fn settle_known(&mut self) {
        let Eligibility::Known { keys: known, .. } = &self.eligibility else {
            return;
        };
        let admitted: Vec<Entry> = self
            .pending
            .drain(..)
            .filter_map(|(doc, relevance)| {
                known.get(&doc).map(|keys| Entry {
                    doc,
                    relevance,
                    keys: keys.clone(),
                })
            })
            .collect();
        for entry in admitted {
            self.admit(entry);
        }
    }

    /// The pending documents worth asking about now, or `None` to go on scoring.
    fn ask(&mut self, flush: bool) -> Option<Need> {
        if let Eligibility::Presumed(presumed) = &self.eligibility {
            if presumed.check_due() {
                self.asked = presumed.kept.clone();
                return Some(Need::Eligibility(
                    self.asked.iter().map(|&(d, _)| d).collect(),
                ));
            }
            if !self.finished {
                return None;
            }
            // Resolving may admit the set, or start the walk again asking.
            return self.resolve_presumption();
        }
        if matches!(self.eligibility, Eligibility::Known { .. }) {
            self.settle_known();
            return None;
        }
        self.settle_learned();
        if let Eligibility::Asked {
            eligible,
            ineligible,
        } = self.eligibility
        {
            if ineligible >= INELIGIBLE_BEFORE_SET && ineligible > eligible {
                return Some(Need::EligibleSet);
            }
        }
        if let Some(threshold) = self.threshold() {
            self.pending.retain(|&(_, score)| !below(score, threshold));
        }
        let missing = self.pool.saturating_sub(self.pool_heap.len());
        let batch = if missing > 0 {
            missing.clamp(16, ELIGIBILITY_BATCH)
        } else {
            ELIGIBILITY_BATCH
        };
        if self.pending.is_empty() || (!flush && self.pending.len() < batch) {
            return None;
        }
        let take = self.pending.len().min(ELIGIBILITY_BATCH);
        self.asked = self.pending.drain(..take).collect();
        Some(Need::Eligibility(
            self.asked.iter().map(|&(d, _)| d).collect(),
        ))
    }

    /// Goes on until it needs something from the caller, or is done.
    pub fn need(&mut self) -> Result<Need, BlockError> {
        if !self.asked.is_empty() {
            // The caller has not answered: ask again rather than lose the documents.
            return Ok(Need::Eligibility(
                self.asked.iter().map(|&(d, _)| d).collect(),
            ));
        }
        loop {
            // Between windows every waiting document is asked about, so a rising threshold
            // prunes the next window; inside one, only a full batch is.
            if let Some(need) = self.ask(self.finished || self.window.is_none()) {
                return Ok(need);
            }
            if self.finished {
                return Ok(Need::Done);
            }
            if self.window.is_none() {
                if let Some(need) = self.open_window() {
                    return Ok(need);
                }
                continue;
            }
            if let Some(need) = self.walk_window()? {
                return Ok(need);
            }
        }
    }

    /// Opens the next window (or skips it, or ends the search): the terms are split by
    /// their whole-list bounds into essential and non-essential, and the window runs to
    /// the first end of an essential term's block. Returns the blocks it needs first.
    fn open_window(&mut self) -> Option<Need> {
        // With the eligible set known, the window starts at the next eligible doc: the
        // blocks before it are never read.
        match self.next_known(self.next_doc) {
            Some(Some(doc)) => self.next_doc = doc,
            Some(None) => {
                self.finished = true;
                return None;
            }
            None => {}
        }
        let from = self.next_doc;
        let threshold = self.threshold();
        // The lowest whole-list bounds, while their sum stays below the threshold, are
        // non-essential: a doc holding only those terms cannot reach the pool.
        let by_bound = &self.by_bound;
        let mut split = 0;
        let mut low_sum = 0.0;
        if let Some(th) = threshold {
            while split < by_bound.len()
                && below(low_sum + self.cursors[by_bound[split]].list_bound, th)
            {
                low_sum += self.cursors[by_bound[split]].list_bound;
                split += 1;
            }
        }
        let essential: Vec<usize> = by_bound[split..].to_vec();
        let read_ahead = if matches!(self.eligibility, Eligibility::Known { .. }) {
            SEQUENTIAL_READ_KNOWN
        } else {
            SEQUENTIAL_READ
        };
        let mut needs = Vec::new();
        for &t in &essential {
            let cursor = &mut self.cursors[t];
            cursor.drop_before(from);
            if cursor.blocks.is_empty() && !cursor.complete {
                needs.push(BlockRead {
                    term: t,
                    from,
                    blocks: read_ahead,
                });
            }
        }
        if !needs.is_empty() {
            return Some(Need::Blocks(needs));
        }
        let fronts: Vec<(usize, BlockSummary)> = essential
            .iter()
            .filter_map(|&t| Some((t, *self.cursors[t].front()?)))
            .collect();
        if fronts.is_empty() {
            // What is left holds only non-essential terms.
            self.finished = true;
            return None;
        }
        let start = fronts.iter().map(|(_, s)| s.first_doc).min()?.max(from);
        let end = fronts.iter().map(|(_, s)| s.last_doc).min()?;
        let block_bounds: f64 = fronts
            .iter()
            .filter(|(_, s)| s.first_doc <= end)
            .map(|(t, s)| s.bound(&self.bm25, self.cursors[*t].idf))
            .sum();
        if threshold.is_some_and(|th| below(block_bounds + low_sum, th)) {
            self.skip_past(end);
            return None;
        }
        // Highest bound first, as `Window::non_essential` keeps them.
        let non_essential: Vec<(usize, f64)> = self.by_bound[..split]
            .iter()
            .rev()
            .map(|&t| (t, self.cursors[t].list_bound))
            .collect();
        self.window = Some(Window {
            end,
            next: start,
            essential,
            non_essential,
            non_essential_bound: low_sum,
            current: None,
        });
        None
    }

    /// Moves past a window: the next one starts after `end` (the search ends if that
    /// overflows).
    fn skip_past(&mut self, end: i64) {
        match end.checked_add(1) {
            Some(next) => self.next_doc = next,
            None => self.finished = true,
        }
    }

    /// Scores the open window's documents until it ends, a non-essential term needs a
    /// block, or enough documents wait for eligibility.
    fn walk_window(&mut self) -> Result<Option<Need>, BlockError> {
        let Some(mut window) = self.window.take() else {
            return Ok(None);
        };
        let terms = self.cursors.len();
        loop {
            if window.current.is_none() {
                if self.answer_due() {
                    self.window = Some(window);
                    return Ok(None);
                }
                // The next doc any essential term holds in the window.
                let mut next = None;
                for &t in &window.essential {
                    if let Some(p) = self.cursors[t].peek(window.next, window.end)? {
                        next = Some(next.map_or(p.doc, |d: i64| d.min(p.doc)));
                    }
                }
                let Some(doc) = next else {
                    break;
                };
                // A doc the reader may not recall is not scored: the walk jumps to the
                // next eligible one, or past the window when none is left inside it.
                match self.next_known(doc) {
                    Some(Some(eligible)) if eligible > window.end => break,
                    Some(Some(eligible)) if eligible > doc => {
                        window.next = eligible;
                        continue;
                    }
                    Some(None) => break,
                    _ => {}
                }
                window.next = doc.saturating_add(1);
                let mut contributions = std::mem::take(&mut self.spare);
                contributions.clear();
                contributions.resize(terms, 0.0);
                let mut essential_score = 0.0;
                for &t in &window.essential {
                    let cursor = &mut self.cursors[t];
                    if let Some(p) = cursor.frequency_at(doc)? {
                        let c = self.bm25.term_score(cursor.idf, p.frequency, p.length);
                        contributions[t] = c;
                        essential_score += c;
                    }
                }
                let reachable = essential_score + window.non_essential_bound;
                if self.threshold().is_some_and(|th| below(reachable, th)) {
                    self.spare = contributions;
                    continue;
                }
                window.current = Some(Scoring {
                    doc,
                    contributions,
                    reachable,
                    step: 0,
                });
            }
            let Some(mut scoring) = window.current.take() else {
                continue;
            };
            let doc = scoring.doc;
            let threshold = self.threshold();
            let mut pruned = false;
            while let Some(&(t, list_bound)) = window.non_essential.get(scoring.step) {
                let cursor = &mut self.cursors[t];
                cursor.drop_before(doc);
                if cursor.blocks.is_empty() && !cursor.complete {
                    window.current = Some(scoring);
                    self.window = Some(window);
                    return Ok(Some(Need::Blocks(vec![BlockRead {
                        term: t,
                        from: doc,
                        blocks: SEEK_READ,
                    }])));
                }
                let c = match cursor.front().copied() {
                    Some(block) if block.first_doc <= doc => {
                        // The block's own bound first: most lookups end here, undecoded.
                        let block_bound = block.bound(&self.bm25, cursor.idf);
                        if threshold.is_some_and(|th| {
                            below(scoring.reachable - list_bound + block_bound, th)
                        }) {
                            pruned = true;
                            break;
                        }
                        cursor.frequency_at(doc)?.map_or(0.0, |p| {
                            self.bm25.term_score(cursor.idf, p.frequency, p.length)
                        })
                    }
                    _ => 0.0,
                };
                scoring.contributions[t] = c;
                scoring.reachable += c - list_bound;
                scoring.step += 1;
                if threshold.is_some_and(|th| below(scoring.reachable, th)) {
                    pruned = true;
                    break;
                }
            }
            // Summed in the terms' order, as an unpruned read sums them.
            let relevance: f64 = scoring.contributions.iter().sum();
            self.spare = scoring.contributions;
            if pruned || threshold.is_some_and(|th| below(relevance, th)) {
                continue;
            }
            self.found(doc, relevance);
        }
        self.skip_past(window.end);
        Ok(None)
    }

    /// The pool in the branch's order: `(doc, relevance, keys)`.
    pub fn results(self) -> Vec<(i64, f64, OrderKeys)> {
        let order = self.order;
        let mut entries: Vec<Entry> = self.pool_heap.into_iter().map(|r| r.entry).collect();
        entries.sort_by(|a, b| compare_entries(a, b, order));
        entries
            .into_iter()
            .map(|e| (e.doc, e.relevance, e.keys))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::CorpusStats;
    use super::*;
    use proptest::prelude::*;

    /// A team's postings and what each doc's eligibility and keys are.
    struct Corpus {
        /// Per term, its blocks in doc order.
        terms: Vec<Vec<Block>>,
        eligible: HashMap<i64, OrderKeys>,
        bm25: Bm25,
        idfs: Vec<f64>,
        search_terms: Vec<SearchTerm>,
    }

    /// `docs` docs; each term in about `basis_points` of them (in 10,000); `ineligible_share` percent of
    /// the docs the reader may not recall.
    fn corpus(docs: usize, basis_points: &[u16], seed: u64, ineligible_share: u8) -> Corpus {
        // A small deterministic generator, so a failing case replays from its inputs.
        let mut state = seed | 1;
        let mut next = move |modulo: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % modulo
        };
        let lengths: Vec<u32> = (0..docs).map(|_| 1 + next(40) as u32).collect();
        let mut terms = Vec::new();
        let mut holding = Vec::new();
        for &density in basis_points {
            let mut blocks = vec![Block::default()];
            let mut count = 0;
            for (doc, &length) in lengths.iter().enumerate() {
                if next(10_000) < u64::from(density) {
                    let posting = Posting {
                        doc: doc as i64 * 3,
                        frequency: 1 + next(3) as u32,
                        length,
                    };
                    let last = blocks.len() - 1;
                    if let Some(spilled) = blocks[last].insert(posting) {
                        blocks.push(spilled);
                    }
                    count += 1;
                }
            }
            blocks.retain(|b| !b.is_empty());
            terms.push(blocks);
            holding.push(count);
        }
        let mut eligible = HashMap::new();
        for doc in 0..docs {
            if next(100) >= u64::from(ineligible_share) {
                eligible.insert(
                    doc as i64 * 3,
                    OrderKeys {
                        scope_depth: next(2) as i64,
                        observed_at: next(5) as i64,
                        evidence_id: Uuid::from_u128(next(1 << 40) as u128),
                    },
                );
            }
        }
        let bm25 = Bm25::new(CorpusStats {
            documents: docs as u64,
            total_length: lengths.iter().map(|&l| u64::from(l)).sum(),
        });
        let idfs: Vec<f64> = holding.iter().map(|&n| bm25.idf(n)).collect();
        let search_terms = terms
            .iter()
            .zip(&idfs)
            .map(|(blocks, &idf)| {
                let postings = || blocks.iter().flat_map(|b| b.postings());
                let max_frequency = postings().map(|p| p.frequency).max().unwrap_or(0);
                let min_length = postings().map(|p| p.length).min().unwrap_or(0);
                SearchTerm::new(&bm25, idf, max_frequency, min_length)
            })
            .collect();
        Corpus {
            terms,
            eligible,
            bm25,
            idfs,
            search_terms,
        }
    }

    /// Every eligible match scored on every term, in the branch's order, cut to the pool.
    fn oracle(corpus: &Corpus, pool: usize, order: BranchOrder) -> Vec<(i64, f64, OrderKeys)> {
        let mut found: HashMap<i64, Vec<f64>> = HashMap::new();
        for (t, blocks) in corpus.terms.iter().enumerate() {
            for posting in blocks.iter().flat_map(|b| b.postings()) {
                let parts = found
                    .entry(posting.doc)
                    .or_insert_with(|| vec![0.0; corpus.terms.len()]);
                parts[t] =
                    corpus
                        .bm25
                        .term_score(corpus.idfs[t], posting.frequency, posting.length);
            }
        }
        let mut entries: Vec<Entry> = found
            .into_iter()
            .filter_map(|(doc, parts)| {
                Some(Entry {
                    doc,
                    relevance: parts.iter().sum(),
                    keys: corpus.eligible.get(&doc)?.clone(),
                })
            })
            .collect();
        entries.sort_by(|a, b| compare_entries(a, b, order));
        entries.truncate(pool);
        entries
            .into_iter()
            .map(|e| (e.doc, e.relevance, e.keys))
            .collect()
    }

    /// What one search asked of its caller.
    #[derive(Debug, Default)]
    struct Asked {
        /// Postings handed over, to show pruning reads less.
        served: usize,
        /// Eligibility asks, and the docs they named.
        eligibility_asks: usize,
        eligibility_docs: usize,
        /// Times the search read its terms from the first doc.
        walks: usize,
    }

    /// What a caller does: serves blocks `page` at a time and answers eligibility.
    fn drive(
        corpus: &Corpus,
        pool: usize,
        order: BranchOrder,
        page: usize,
    ) -> (Vec<(i64, f64, OrderKeys)>, Asked) {
        drive_with(corpus, pool, order, page, false)
    }

    /// The whole eligible set, as a caller supplies it.
    fn eligible_set(corpus: &Corpus) -> Vec<(i64, OrderKeys)> {
        corpus
            .eligible
            .iter()
            .map(|(d, k)| (*d, k.clone()))
            .collect()
    }

    /// [`drive`], the eligible set supplied before the first need when `upfront`.
    fn drive_with(
        corpus: &Corpus,
        pool: usize,
        order: BranchOrder,
        page: usize,
        upfront: bool,
    ) -> (Vec<(i64, f64, OrderKeys)>, Asked) {
        let mut search = TopK::new(corpus.bm25, &corpus.search_terms, pool, order);
        if upfront {
            search.supply_eligible_set(eligible_set(corpus));
        }
        let mut asked = Asked::default();
        loop {
            match search.need().expect("blocks decode") {
                Need::Blocks(needs) => {
                    if needs.iter().any(|read| read.from == i64::MIN) {
                        asked.walks += 1;
                    }
                    for read in needs {
                        let blocks = &corpus.terms[read.term];
                        let first = blocks
                            .iter()
                            .position(|b| b.summary().is_some_and(|s| s.last_doc >= read.from))
                            .unwrap_or(blocks.len());
                        // `page` 0 reads what the search asks for; others read that many.
                        let wanted = if page == 0 { read.blocks } else { page };
                        let last = (first + wanted).min(blocks.len());
                        let supplied: Vec<StoredBlock> = blocks[first..last]
                            .iter()
                            .filter_map(|b| Some((b.summary()?, b.encode())))
                            .collect();
                        asked.served += supplied
                            .iter()
                            .map(|(s, _)| s.postings as usize)
                            .sum::<usize>();
                        search.supply_blocks(read.term, supplied, last == blocks.len());
                    }
                }
                Need::Eligibility(docs) => {
                    asked.eligibility_asks += 1;
                    asked.eligibility_docs += docs.len();
                    let answer = docs
                        .iter()
                        .filter_map(|d| Some((*d, corpus.eligible.get(d)?.clone())))
                        .collect();
                    search.supply_eligible(answer);
                }
                Need::EligibleSet => search.supply_eligible_set(eligible_set(corpus)),
                Need::Done => return (search.results(), asked),
            }
        }
    }

    fn bits(results: &[(i64, f64, OrderKeys)]) -> Vec<(i64, u64)> {
        results.iter().map(|(d, r, _)| (*d, r.to_bits())).collect()
    }

    const RANKED: BranchOrder = BranchOrder {
        ranked: true,
        widened: false,
        prune: true,
    };

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn the_pruned_top_k_is_the_unpruned_one_to_the_last_bit(
            docs in 1usize..2_500,
            basis_points in proptest::collection::vec(1u16..9_000, 1..6),
            seed in any::<u64>(),
            pool in prop_oneof![Just(1usize), Just(10), Just(100), 1usize..400],
            page in 0usize..4,
            ineligible in prop_oneof![Just(0u8), Just(2), Just(8), Just(20), Just(95)],
            late in any::<bool>(),
            widened in any::<bool>(),
            ranked in prop_oneof![4 => Just(true), 1 => Just(false)],
            upfront in any::<bool>(),
        ) {
            let mut corpus = corpus(docs, &basis_points, seed, ineligible);
            if late {
                hide_later_half(&mut corpus, docs);
            }
            let order = BranchOrder { ranked, widened, prune: true };
            let want = oracle(&corpus, pool, order);
            let (pruned, _) = drive_with(&corpus, pool, order, page, upfront);
            prop_assert_eq!(bits(&pruned), bits(&want));
            let unpruned = BranchOrder { prune: false, ..order };
            let (full, _) = drive_with(&corpus, pool, unpruned, page, upfront);
            prop_assert_eq!(bits(&full), bits(&want));
        }
    }

    proptest! {
        #[test]
        fn seeking_finds_what_a_binary_search_finds(
            docs in proptest::collection::btree_set(0i64..500, 0..60),
            start_share in 0.0f64..=1.0,
            target in 0i64..520,
        ) {
            let postings: Vec<Posting> = docs
                .iter()
                .map(|&doc| Posting { doc, frequency: 1, length: 1 })
                .collect();
            let start = (postings.len() as f64 * start_share) as usize;
            let want = start + postings[start..].partition_point(|p| p.doc < target);
            prop_assert_eq!(seek(&postings, start, target), want);
        }
    }

    /// Every posting of every term: what an unpruned read hands over.
    fn postings_in(corpus: &Corpus) -> usize {
        corpus
            .terms
            .iter()
            .flatten()
            .map(|b| b.postings().len())
            .sum()
    }

    #[test]
    fn common_terms_and_a_rare_one_read_a_fraction_of_the_postings() {
        // Three terms in many docs and one in a few: once the pool fills with the rare
        // term's docs, the common terms' blocks are only looked up, never walked.
        let corpus = corpus(100_000, &[1_000, 2_000, 3_000, 2], 7, 0);
        let total = postings_in(&corpus);
        let (results, asked) = drive(&corpus, 10, RANKED, 0);
        let served = asked.served;
        assert_eq!(bits(&results), bits(&oracle(&corpus, 10, RANKED)));
        let (_, unpruned) = drive(
            &corpus,
            10,
            BranchOrder {
                prune: false,
                ..RANKED
            },
            0,
        );
        assert_eq!(
            unpruned.served, total,
            "without pruning every block is read"
        );
        assert!(served * 2 < total, "served {served} of {total}");
    }

    /// Every other doc of the later half becomes one the reader may not recall: the first
    /// docs scored are all eligible, the best ones often not.
    fn hide_later_half(corpus: &mut Corpus, docs: usize) {
        let half = (docs / 2) as i64 * 3;
        corpus
            .eligible
            .retain(|&doc, _| doc < half || (doc / 3) % 2 == 1);
    }

    /// Three common terms only (before presumption every window's scored docs were asked
    /// about, hundreds of docs in dozens of asks), `ineligible_share` percent hidden.
    const COMMON_DOCS: usize = 20_000;
    fn common_terms(ineligible_share: u8) -> Corpus {
        corpus(COMMON_DOCS, &[3_000, 2_000, 4_000], 5, ineligible_share)
    }

    /// The search over a pool of 100, checked against the oracle; what it asked.
    fn exact_top_100(corpus: &Corpus) -> Asked {
        let (results, asked) = drive(corpus, 100, RANKED, 0);
        assert_eq!(bits(&results), bits(&oracle(corpus, 100, RANKED)));
        asked
    }

    #[test]
    fn a_team_the_reader_may_read_whole_is_confirmed_in_two_asks() {
        let asked = exact_top_100(&common_terms(0));
        assert_eq!(asked.eligibility_asks, 2, "{asked:?}");
        assert_eq!(asked.walks, 1, "{asked:?}");
        // The kept set twice, and a few ties with its last doc.
        let kept = presumed_pool(100);
        assert!(asked.eligibility_docs <= 2 * kept + 16, "{asked:?}");
    }

    #[test]
    fn ineligible_best_docs_walk_the_search_again_asking() {
        let mut corpus = common_terms(0);
        hide_later_half(&mut corpus, COMMON_DOCS);
        let asked = exact_top_100(&corpus);
        assert_eq!(asked.walks, 2, "{asked:?}");
    }

    #[test]
    fn a_reader_who_sees_little_stops_presuming_before_anything_is_pruned() {
        let asked = exact_top_100(&common_terms(20));
        assert_eq!(asked.walks, 1, "{asked:?}");
        assert!(asked.eligibility_asks > 2, "{asked:?}");
    }

    #[test]
    fn a_mostly_ineligible_team_is_answered_from_its_eligible_set() {
        let corpus = corpus(5_000, &[5_000, 4_000], 11, 97);
        let mut search = TopK::new(corpus.bm25, &corpus.search_terms, 10, RANKED);
        let mut asked_set = false;
        let mut asked_docs = 0;
        loop {
            match search.need().unwrap() {
                Need::Blocks(needs) => {
                    for read in needs {
                        let t = read.term;
                        let blocks = corpus.terms[t]
                            .iter()
                            .filter_map(|b| Some((b.summary()?, b.encode())))
                            .collect();
                        search.supply_blocks(t, blocks, true);
                    }
                }
                Need::Eligibility(docs) => {
                    asked_docs += docs.len();
                    let answer = docs
                        .iter()
                        .filter_map(|d| Some((*d, corpus.eligible.get(d)?.clone())))
                        .collect();
                    search.supply_eligible(answer);
                }
                Need::EligibleSet => {
                    assert!(!asked_set, "the eligible set is asked for once");
                    asked_set = true;
                    search.supply_eligible_set(eligible_set(&corpus));
                }
                Need::Done => break,
            }
        }
        assert!(asked_set);
        assert!(
            asked_docs <= INELIGIBLE_BEFORE_SET * 2,
            "asked about {asked_docs} docs"
        );
        assert_eq!(bits(&search.results()), bits(&oracle(&corpus, 10, RANKED)));
    }

    /// A short period of a long history: the eligible docs are one run of doc ids, as a
    /// team's texts of one day are.
    fn one_period_of(mut corpus: Corpus, docs: std::ops::Range<i64>) -> Corpus {
        corpus.eligible.retain(|doc, _| docs.contains(doc));
        corpus
    }

    #[test]
    fn an_eligible_set_supplied_first_reads_only_the_blocks_that_hold_its_docs() {
        // Common terms over 100,000 docs (ids step by 3); 1,500 docs in the middle eligible.
        let corpus = one_period_of(
            corpus(100_000, &[3_000, 2_000, 4_000, 500], 13, 0),
            150_000..154_500,
        );
        let total = postings_in(&corpus);
        let want = oracle(&corpus, 10, RANKED);
        assert_eq!(want.len(), 10, "the period holds enough matches");
        let (first, upfront) = drive_with(&corpus, 10, RANKED, 0, true);
        assert_eq!(bits(&first), bits(&want));
        let (_, asked_later) = drive(&corpus, 10, RANKED, 0);
        // The period's postings are ~1.5% of the lists; a few blocks either side of it.
        assert!(
            upfront.served * 10 < total,
            "served {} of {total}",
            upfront.served
        );
        assert!(
            upfront.served * 4 < asked_later.served,
            "supplied first {} against asked for {}",
            upfront.served,
            asked_later.served
        );
        assert_eq!(upfront.eligibility_asks, 0, "{upfront:?}");
    }

    #[test]
    fn a_block_the_caller_damaged_is_an_error() {
        let corpus = corpus(500, &[5_000], 3, 0);
        let mut search = TopK::new(corpus.bm25, &corpus.search_terms, 10, RANKED);
        assert!(matches!(search.need(), Ok(Need::Blocks(_))));
        let summary = corpus.terms[0][0].summary().unwrap();
        search.supply_blocks(0, vec![(summary, vec![0x80])], true);
        assert!(search.need().is_err());
    }

    #[test]
    fn nothing_to_search_is_done_at_once() {
        let bm25 = Bm25::new(CorpusStats::default());
        assert_eq!(TopK::new(bm25, &[], 10, RANKED).need(), Ok(Need::Done));
        assert_eq!(
            TopK::new(bm25, &[SearchTerm::unbounded(1.0)], 0, RANKED).need(),
            Ok(Need::Done)
        );
    }
}
