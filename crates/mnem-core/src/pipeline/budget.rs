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
/// Windows count too, and neighbours are trimmed before hits: a result's merged hits
/// (matches inside its window) are paid for right after its own context, before the next
/// result; plain neighbours only from what every kept result left, nearest a hit first
/// (distance 1 of every result in rank order, then distance 2, …). A window item that
/// does not fit whole is left out (never cut; a later, shorter one may still fit).
pub fn fit_budget(hits: &mut Vec<RecallHit>, budget: usize) {
    let mut used = 0;
    let mut keep = 0;
    // Per result, per window item (before, then after): kept or not.
    let mut kept: Vec<Vec<bool>> = Vec::new();
    for hit in hits.iter_mut() {
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
        let merged_hits: Vec<bool> = hit
            .window_items()
            .map(|item| {
                let fits = item.hit && item.context.len() <= budget - used;
                if fits {
                    used += item.context.len();
                }
                fits
            })
            .collect();
        kept.push(merged_hits);
        if used >= budget {
            break;
        }
    }
    hits.truncate(keep);
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
