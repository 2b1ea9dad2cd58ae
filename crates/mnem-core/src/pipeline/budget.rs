//! The byte budget: results, then their merged hits, then plain neighbours, nearest first,
//! until the budget is spent.

use super::RecallHit;
use crate::text::floor_char_boundary;

/// Smallest piece of a context worth returning when the budget runs low.
pub const MIN_CONTEXT_BYTES: usize = 64;

/// Keeps results in order while their contexts fit `budget` bytes together; a context
/// longer than what is left is cut at a char boundary, unless less than
/// [`MIN_CONTEXT_BYTES`] is left, where the list ends. The first result always gets a
/// context, cut if need be.
///
/// Windows count too, and neighbours are trimmed before hits. Matches are paid in rank
/// order: a result's merged hits (matches inside its window) right before the first
/// result they rank below ([`crate::window::WindowItem::results_above`]), never before
/// their own result, and those ranked below every kept result after the results; plain
/// neighbours only from what the matches left, nearest a hit first (distance 1 of every
/// result in rank order, then distance 2, …). A window item that does not fit whole is
/// left out (never cut; a later, shorter one may still fit).
pub fn fit_budget(hits: &mut Vec<RecallHit>, budget: usize) {
    // Per result, per window item (before, then after): kept or not.
    let mut kept: Vec<Vec<bool>> = hits
        .iter()
        .map(|hit| vec![false; hit.window_items().count()])
        .collect();
    // Every merged hit as (the result it is paid before, its result, its item, its
    // bytes), in the order they are paid.
    let mut merged: Vec<(usize, usize, usize, usize)> = hits
        .iter()
        .enumerate()
        .flat_map(|(result, hit)| {
            hit.window_items()
                .enumerate()
                .filter(|(_, item)| item.hit)
                .map(move |(index, item)| {
                    let slot = item.results_above.max(result + 1);
                    (slot, result, index, item.context.len())
                })
        })
        .collect();
    merged.sort_unstable();
    let mut merged = merged.into_iter().peekable();
    let mut used = 0;
    let mut keep = 0;
    // Pays the merged hits due before result `upto` (all when `upto` is past the end) of
    // the first `kept_results`.
    let mut pay = |upto: usize, kept_results: usize, used: &mut usize, kept: &mut [Vec<bool>]| {
        while let Some((_, result, index, bytes)) = merged.next_if(|m| m.0 <= upto) {
            if result < kept_results && bytes <= budget - *used {
                *used += bytes;
                kept[result][index] = true;
            }
        }
    };
    for (index, hit) in hits.iter_mut().enumerate() {
        pay(index, index, &mut used, &mut kept);
        let left = budget - used;
        if hit.context.len() > left {
            if left < MIN_CONTEXT_BYTES.min(budget) && keep > 0 {
                break;
            }
            let cut = floor_char_boundary(&hit.context, left);
            hit.context.truncate(cut);
        }
        used += hit.context.len();
        keep += 1;
        if used >= budget {
            break;
        }
    }
    // Merged hits of kept results that rank below every kept result.
    pay(usize::MAX, keep, &mut used, &mut kept);
    hits.truncate(keep);
    kept.truncate(keep);
    fit_neighbours(hits, &mut kept, budget - used);
    for (hit, kept) in hits.iter_mut().zip(kept) {
        let (before, after) = kept.split_at(hit.before.len());
        let mut keep = before.iter();
        hit.before.retain(|_| *keep.next().unwrap_or(&false));
        let mut keep = after.iter();
        hit.after.retain(|_| *keep.next().unwrap_or(&false));
    }
}

/// Spends what the results and their merged hits left on plain neighbours, nearest first.
fn fit_neighbours(hits: &[RecallHit], kept: &mut [Vec<bool>], mut left: usize) {
    let widest = hits
        .iter()
        .flat_map(RecallHit::window_items)
        .map(|item| item.distance)
        .max()
        .unwrap_or(0);
    for distance in 1..=widest {
        for (hit, kept) in hits.iter().zip(kept.iter_mut()) {
            for (item, keep) in hit.window_items().zip(kept.iter_mut()) {
                if !item.hit && item.distance == distance && item.context.len() <= left {
                    left -= item.context.len();
                    *keep = true;
                }
            }
        }
    }
}
