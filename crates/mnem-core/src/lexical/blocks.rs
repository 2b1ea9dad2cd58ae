//! Posting lists as blocks: how a team's postings for one term are stored, on every
//! backend, so the top-k search ([`super::topk`]) can skip a block by its summary
//! without reading its postings.
//!
//! A block holds up to [`BLOCK_POSTINGS`] postings in doc order, encoded as varints (the
//! first doc zigzag-encoded, then gaps, each with its term frequency and its text's
//! length). Beside the bytes a backend stores the block's [`BlockSummary`]: its first and
//! last doc (the last is the key a search seeks on), and the largest frequency and the
//! shortest length in it, which bound any of its postings' BM25 contribution under any
//! corpus statistics (a contribution rises with frequency and falls with length), so a
//! summary stays a valid bound as the team's average length moves.

use thiserror::Error;

use super::Bm25;

/// Postings per block: Lucene's and tantivy's block size. A write rewrites one block per
/// distinct term of its text, so a block is a few hundred bytes.
pub const BLOCK_POSTINGS: usize = 128;

/// One document holding a term: its doc, how often it holds the term, and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Posting {
    pub doc: i64,
    pub frequency: u32,
    pub length: u32,
}

/// What a stored block row holds beside its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSummary {
    pub first_doc: i64,
    pub last_doc: i64,
    pub postings: u32,
    pub max_frequency: u32,
    pub min_length: u32,
}

impl BlockSummary {
    /// The most any posting of this block can add to a document's relevance.
    pub fn bound(&self, bm25: &Bm25, idf: f64) -> f64 {
        bm25.term_score(idf, self.max_frequency, self.min_length)
    }
}

/// A block as a backend stores and returns it: its summary columns and its encoded
/// postings ([`Block::encode`]).
pub type StoredBlock = (BlockSummary, Vec<u8>);

/// A stored block's bytes could not be read back.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum BlockError {
    #[error("posting block ends inside a varint at byte {at}")]
    Truncated { at: usize },
    #[error("posting block holds {found} postings where its header says {declared}")]
    Count { declared: u64, found: u64 },
    #[error("posting block's docs are not increasing at posting {index}")]
    Order { index: usize },
}

/// A block's postings, in doc order, no doc twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    postings: Vec<Posting>,
}

impl Block {
    /// A block of postings already in increasing doc order.
    pub fn from_sorted(postings: Vec<Posting>) -> Self {
        debug_assert!(postings.windows(2).all(|w| w[0].doc < w[1].doc));
        Self { postings }
    }

    pub fn postings(&self) -> &[Posting] {
        &self.postings
    }

    pub fn is_empty(&self) -> bool {
        self.postings.is_empty()
    }

    /// The summary a backend stores beside the bytes; `None` for an empty block (which is
    /// never stored).
    pub fn summary(&self) -> Option<BlockSummary> {
        let first = self.postings.first()?;
        let last = self.postings.last()?;
        Some(BlockSummary {
            first_doc: first.doc,
            last_doc: last.doc,
            postings: self.postings.len() as u32,
            max_frequency: self.postings.iter().map(|p| p.frequency).max()?,
            min_length: self.postings.iter().map(|p| p.length).min()?,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(2 + self.postings.len() * 4);
        put_varint(&mut out, self.postings.len() as u64);
        let mut previous = None;
        for posting in &self.postings {
            match previous {
                None => put_varint(&mut out, zigzag(posting.doc)),
                Some(prev) => put_varint(&mut out, posting.doc.abs_diff(prev)),
            }
            put_varint(&mut out, u64::from(posting.frequency));
            put_varint(&mut out, u64::from(posting.length));
            previous = Some(posting.doc);
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, BlockError> {
        let mut at = 0;
        let declared = get_varint(bytes, &mut at)?;
        // A posting takes at least three bytes: never reserve more than the bytes allow.
        let mut postings = Vec::with_capacity((declared as usize).min(bytes.len() / 3));
        let mut previous: Option<i64> = None;
        while at < bytes.len() {
            let coded = get_varint(bytes, &mut at)?;
            let doc = match previous {
                None => unzigzag(coded),
                Some(prev) => {
                    let gap = i64::try_from(coded).ok().filter(|&g| g > 0);
                    gap.and_then(|g| prev.checked_add(g))
                        .ok_or(BlockError::Order {
                            index: postings.len(),
                        })?
                }
            };
            let frequency = saturating_u32(get_varint(bytes, &mut at)?);
            let length = saturating_u32(get_varint(bytes, &mut at)?);
            postings.push(Posting {
                doc,
                frequency,
                length,
            });
            previous = Some(doc);
        }
        if postings.len() as u64 != declared {
            return Err(BlockError::Count {
                declared,
                found: postings.len() as u64,
            });
        }
        Ok(Self { postings })
    }

    /// Adds (or replaces) `posting`. When the block grows past [`BLOCK_POSTINGS`] it is
    /// split and the second part returned: an append past the last doc (how docs are
    /// usually written) starts a new block of its own, so blocks written in doc order stay
    /// full; an insert inside splits the block in halves.
    pub fn insert(&mut self, posting: Posting) -> Option<Block> {
        match self.postings.binary_search_by_key(&posting.doc, |p| p.doc) {
            Ok(i) => {
                self.postings[i] = posting;
                None
            }
            Err(i) => {
                let appended = i == self.postings.len();
                if appended && self.postings.len() >= BLOCK_POSTINGS {
                    return Some(Block {
                        postings: vec![posting],
                    });
                }
                self.postings.insert(i, posting);
                (self.postings.len() > BLOCK_POSTINGS).then(|| {
                    let half = self.postings.len() / 2;
                    Block {
                        postings: self.postings.split_off(half),
                    }
                })
            }
        }
    }

    /// Removes `doc`'s posting; whether it was there.
    pub fn remove(&mut self, doc: i64) -> bool {
        match self.postings.binary_search_by_key(&doc, |p| p.doc) {
            Ok(i) => {
                self.postings.remove(i);
                true
            }
            Err(_) => false,
        }
    }
}

/// Some of a term's stored blocks, edited in memory and written back: what a write that
/// adds or removes postings does, on every backend.
///
/// It must be given every stored block a change can touch: for postings from doc `d` on,
/// each block whose last doc is at least `d`, and the term's last block. A posting goes
/// into the first block whose last doc is at least its doc, else the last one.
#[derive(Debug, Default)]
pub struct BlockEdit {
    /// In doc order: the last doc a block was stored under (`None` for a new one), the
    /// block, and whether the edit changed it.
    blocks: Vec<(Option<i64>, Block, bool)>,
}

/// What a [`BlockEdit`] changed: the stored blocks to delete (by the last doc they were
/// stored under), then the blocks to store.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BlockChanges {
    pub deleted: Vec<i64>,
    pub stored: Vec<Block>,
}

impl BlockEdit {
    /// An edit of these stored blocks, given in any order with the last doc each was
    /// stored under.
    pub fn new(mut stored: Vec<(i64, Block)>) -> Self {
        stored.sort_by_key(|(last_doc, _)| *last_doc);
        Self {
            blocks: stored
                .into_iter()
                .map(|(last_doc, block)| (Some(last_doc), block, false))
                .collect(),
        }
    }

    /// Adds (or replaces) a posting.
    pub fn insert(&mut self, posting: Posting) {
        if self.blocks.is_empty() {
            self.blocks.push((None, Block::default(), false));
        }
        let i = self
            .blocks
            .iter()
            .position(|(_, block, _)| block.postings.last().is_some_and(|p| p.doc >= posting.doc))
            .unwrap_or(self.blocks.len() - 1);
        self.blocks[i].2 = true;
        if let Some(spilled) = self.blocks[i].1.insert(posting) {
            self.blocks.insert(i + 1, (None, spilled, true));
        }
    }

    /// Removes `doc`'s posting; whether it was there.
    pub fn remove(&mut self, doc: i64) -> bool {
        let Some(entry) = self
            .blocks
            .iter_mut()
            .find(|(_, block, _)| block.postings.last().is_some_and(|p| p.doc >= doc))
        else {
            return false;
        };
        let removed = entry.1.remove(doc);
        entry.2 |= removed;
        removed
    }

    /// The changed blocks: each one stored before is deleted, each non-empty one stored.
    pub fn changes(self) -> BlockChanges {
        let mut changes = BlockChanges::default();
        for (stored_as, block, changed) in self.blocks {
            if !changed {
                continue;
            }
            changes.deleted.extend(stored_as);
            if !block.is_empty() {
                changes.stored.push(block);
            }
        }
        changes
    }
}

fn saturating_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Result<u64, BlockError> {
    let start = *at;
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or(BlockError::Truncated { at: start })?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(BlockError::Truncated { at: start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn posting(doc: i64, frequency: u32, length: u32) -> Posting {
        Posting {
            doc,
            frequency,
            length,
        }
    }

    proptest! {
        #[test]
        fn a_block_reads_back_what_was_written(
            docs in proptest::collection::btree_set(-5i64..1_000_000_000_000, 0..200),
            seed in any::<u32>(),
        ) {
            let postings: Vec<Posting> = docs
                .iter()
                .enumerate()
                .map(|(i, &doc)| posting(doc, 1 + (seed as usize + i) as u32 % 9, (seed % 997) + i as u32))
                .collect();
            let block = Block::from_sorted(postings);
            prop_assert_eq!(Block::decode(&block.encode()).unwrap(), block);
        }

        #[test]
        fn inserting_in_any_order_keeps_the_postings_sorted_and_blocks_bounded(
            docs in proptest::collection::vec(0i64..5_000, 1..600),
        ) {
            let mut blocks = vec![Block::default()];
            for &doc in &docs {
                // The block that holds `doc`: the first whose last doc is at least it.
                let i = blocks
                    .iter()
                    .position(|b| b.summary().is_some_and(|s| s.last_doc >= doc))
                    .unwrap_or(blocks.len() - 1);
                if let Some(spilled) = blocks[i].insert(posting(doc, 1, 3)) {
                    blocks.insert(i + 1, spilled);
                }
            }
            let all: Vec<i64> = blocks.iter().flat_map(|b| b.postings().iter().map(|p| p.doc)).collect();
            let mut want: Vec<i64> = docs.clone();
            want.sort_unstable();
            want.dedup();
            prop_assert_eq!(all, want);
            prop_assert!(blocks.iter().all(|b| b.postings().len() <= BLOCK_POSTINGS));
        }
        #[test]
        fn an_edit_of_the_blocks_a_change_touches_equals_an_edit_of_all_of_them(
            first in proptest::collection::vec(0i64..3_000, 0..500),
            second in proptest::collection::vec(0i64..3_000, 1..200),
            removed in proptest::collection::vec(0i64..3_000, 0..100),
        ) {
            // The whole list, built by one edit.
            let mut whole = BlockEdit::default();
            for &doc in &first {
                whole.insert(posting(doc, 1, 3));
            }
            let stored: Vec<(i64, Block)> = whole
                .changes()
                .stored
                .into_iter()
                .map(|b| (b.summary().unwrap().last_doc, b))
                .collect();
            // A second write, given only the blocks it may touch.
            let from = second.iter().chain(&removed).copied().min().unwrap();
            let last = stored.last().map(|(key, _)| *key);
            let (touched, kept): (Vec<_>, Vec<_>) = stored
                .into_iter()
                .partition(|(key, _)| *key >= from || Some(*key) == last);
            let mut edit = BlockEdit::new(touched.clone());
            for &doc in &second {
                edit.insert(posting(doc, 2, 5));
            }
            for &doc in &removed {
                edit.remove(doc);
            }
            let changes = edit.changes();
            let mut after: Vec<(i64, Block)> = kept;
            after.extend(touched.into_iter().filter(|(key, _)| !changes.deleted.contains(key)));
            after.extend(changes.stored.into_iter().map(|b| (b.summary().unwrap().last_doc, b)));
            after.sort_by_key(|(key, _)| *key);
            let docs: Vec<(i64, u32)> = after
                .iter()
                .flat_map(|(_, b)| b.postings().iter().map(|p| (p.doc, p.frequency)))
                .collect();
            let mut want: std::collections::BTreeMap<i64, u32> =
                first.iter().map(|&doc| (doc, 1)).collect();
            want.extend(second.iter().map(|&doc| (doc, 2)));
            for doc in &removed {
                want.remove(doc);
            }
            prop_assert_eq!(docs, want.into_iter().collect::<Vec<_>>());
            prop_assert!(after.iter().all(|(_, b)| !b.is_empty() && b.postings().len() <= BLOCK_POSTINGS));
            prop_assert!(after.iter().all(|(key, b)| b.summary().unwrap().last_doc == *key));
        }
    }

    #[test]
    fn appending_in_doc_order_fills_each_block() {
        let mut blocks = vec![Block::default()];
        for doc in 0..(BLOCK_POSTINGS as i64 * 3) {
            let last = blocks.len() - 1;
            if let Some(spilled) = blocks[last].insert(posting(doc, 1, 1)) {
                blocks.push(spilled);
            }
        }
        let sizes: Vec<usize> = blocks.iter().map(|b| b.postings().len()).collect();
        assert_eq!(sizes, vec![BLOCK_POSTINGS; 3]);
    }

    #[test]
    fn the_summary_bounds_every_posting_in_the_block() {
        let block =
            Block::from_sorted(vec![posting(3, 1, 4), posting(9, 5, 40), posting(12, 2, 9)]);
        let summary = block.summary().unwrap();
        assert_eq!((summary.first_doc, summary.last_doc), (3, 12));
        assert_eq!((summary.max_frequency, summary.min_length), (5, 4));
        let bm25 = Bm25::new(super::super::CorpusStats {
            documents: 100,
            total_length: 1_000,
        });
        let idf = bm25.idf(7);
        for p in block.postings() {
            assert!(bm25.term_score(idf, p.frequency, p.length) <= summary.bound(&bm25, idf));
        }
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        let bytes = Block::from_sorted(vec![posting(1, 1, 1), posting(300, 2, 2)]).encode();
        assert_eq!(
            Block::decode(&bytes[..bytes.len() - 1]),
            Err(BlockError::Truncated {
                at: bytes.len() - 1
            })
        );
        let mut wrong_count = bytes.clone();
        wrong_count[0] = 3;
        assert_eq!(
            Block::decode(&wrong_count),
            Err(BlockError::Count {
                declared: 3,
                found: 2
            })
        );
        assert!(Block::decode(&[0xff; 12]).is_err());
    }

    #[test]
    fn removing_takes_out_only_that_doc() {
        let mut block = Block::from_sorted(vec![posting(1, 1, 1), posting(2, 1, 1)]);
        assert!(block.remove(1));
        assert!(!block.remove(7));
        assert_eq!(block.postings(), &[posting(2, 1, 1)]);
    }
}
