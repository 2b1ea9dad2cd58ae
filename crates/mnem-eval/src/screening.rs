//! `mnem eval … --screening-only`: runs write-time screening over every turn of a
//! benchmark file without ingesting it, to count false positives on real conversations
//! in seconds (the dev files' turns are ordinary talk: every held turn is an error).

use std::fmt::Write;

use serde::Serialize;

use mnem_core::SourceType;

use crate::dataset::Item;
use crate::Dataset;

/// A turn screening would hold, with the rules that fired.
#[derive(Debug, Clone, Serialize)]
pub struct HeldTurn {
    pub id: String,
    pub reason: String,
    pub excerpt: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScreeningReport {
    pub dataset: &'static str,
    pub turns: usize,
    /// Turns held as the eval writes them (`conversation`): each one a false positive.
    pub held: Vec<HeldTurn>,
    /// Turns the same text would be held for as a `document` (every rule runs).
    pub held_as_documents: Vec<HeldTurn>,
}

/// Characters of a held turn shown in the report.
const EXCERPT_CHARS: usize = 120;

/// Screens every turn of every haystack (a turn shared by haystacks counts once each).
pub fn screen_dataset(dataset: &Dataset) -> ScreeningReport {
    let items: Vec<&Item> = dataset.haystacks.iter().flat_map(|h| &h.items).collect();
    let held_as = |source: SourceType| -> Vec<HeldTurn> {
        items
            .iter()
            .filter_map(|item| {
                let findings = mnem_core::screen::screen(&item.text, source);
                let reason = mnem_core::screen::quarantine_reason(&findings)?;
                Some(HeldTurn {
                    id: item.id.clone(),
                    reason,
                    excerpt: item.text.chars().take(EXCERPT_CHARS).collect(),
                })
            })
            .collect()
    };
    ScreeningReport {
        dataset: dataset.name,
        turns: items.len(),
        held: held_as(SourceType::Conversation),
        held_as_documents: held_as(SourceType::Document),
    }
}

impl ScreeningReport {
    pub fn table(&self) -> String {
        let mut out = String::new();
        for (label, held) in [
            (
                "as conversation turns (how the eval writes them)",
                &self.held,
            ),
            ("as documents (every rule)", &self.held_as_documents),
        ] {
            let _ = writeln!(
                out,
                "{}: screening holds {} of {} turns {label}",
                self.dataset,
                held.len(),
                self.turns
            );
            for turn in held {
                let _ = writeln!(
                    out,
                    "  {}  {}\n    {:?}",
                    turn.id, turn.reason, turn.excerpt
                );
            }
        }
        out
    }
}
