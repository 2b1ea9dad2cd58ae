//! Query-focused excerpts: a result whose text is longer than its share of the byte
//! budget is returned as the sentences that match the query best, in their order, with
//! `…` where text was left out — so a budget holds several distinct results rather than
//! the first long one cut short. The whole text stays one `show` away.

use crate::lexical::{query_terms, TermMatcher};
use crate::text::floor_char_boundary;

use super::RecallHit;

/// No result is cut below this share, however many share the budget: less is not a
/// sentence.
pub const MIN_SHARE_BYTES: usize = 200;

/// What marks left-out text.
pub const ELISION: &str = "…";

/// Replaces each match's context longer than its share of `budget` (split evenly over
/// at most `limit` results and the matches merged into their windows) with its
/// best-matching sentences for `query`. Plain neighbours are left whole: they are there
/// for what surrounds a match, not for the query's words.
pub fn focus(hits: &mut [RecallHit], query: &str, budget: usize, limit: usize) {
    let results = hits.len().min(limit);
    let merged: usize = hits[..results]
        .iter()
        .map(|hit| hit.window_items().filter(|item| item.hit).count())
        .sum();
    let share = (budget / (results + merged).max(1))
        .max(MIN_SHARE_BYTES)
        .min(budget);
    let terms = query_terms(query);
    let matcher = TermMatcher::new(&terms);
    let fit = |context: &mut String| {
        if context.len() > share {
            *context = excerpt_with(context, &matcher, share);
        }
    };
    // Only the results that can be returned: `limit` applies after the budget.
    for hit in hits.iter_mut().take(limit) {
        fit(&mut hit.context);
        for item in hit.before.iter_mut().chain(hit.after.iter_mut()) {
            if item.hit {
                fit(&mut item.context);
            }
        }
    }
}

/// Sentence spans of `text`: each ends after `.`, `!`, `?` or a line break (with the
/// white space that follows), or at the end.
pub(crate) fn sentences(text: &str) -> Vec<(usize, usize)> {
    Sentences::of(text).collect()
}

/// The spans of [`sentences`], found one at a time, so a reader that stops early (a
/// turn that turns out to say more than it asks) does not split the rest of a long text.
pub(crate) struct Sentences<'a> {
    text: &'a str,
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    start: usize,
}

impl<'a> Sentences<'a> {
    pub(crate) fn of(text: &'a str) -> Self {
        Self {
            text,
            chars: text.char_indices().peekable(),
            start: 0,
        }
    }
}

impl Iterator for Sentences<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        while let Some((at, c)) = self.chars.next() {
            if matches!(c, '.' | '!' | '?' | '\n') {
                let mut end = at + c.len_utf8();
                // A sentence ends at white space after its mark ("3.5" is one word).
                let next = self.chars.peek().map(|&(_, n)| n);
                if c != '\n' && next.is_some_and(|n| !n.is_whitespace()) {
                    continue;
                }
                while let Some(&(i, n)) = self.chars.peek() {
                    if !n.is_whitespace() {
                        break;
                    }
                    end = i + n.len_utf8();
                    self.chars.next();
                }
                let span = (self.start, end);
                self.start = end;
                return Some(span);
            }
        }
        if self.start < self.text.len() {
            let span = (self.start, self.text.len());
            self.start = self.text.len();
            return Some(span);
        }
        None
    }
}

/// At most `max_bytes` of `text`: the sentences holding the most query terms (earlier
/// first among equals) and, if it still fits, the one after the best of them, in text
/// order, joined with [`ELISION`] where text was skipped; the opening of the text when
/// no sentence matches.
pub fn excerpt(text: &str, terms: &[String], max_bytes: usize) -> String {
    excerpt_with(text, &TermMatcher::new(terms), max_bytes)
}

fn excerpt_with(text: &str, matcher: &TermMatcher<'_>, max_bytes: usize) -> String {
    let spans = sentences(text);
    let mut scored: Vec<(usize, usize)> = spans
        .iter()
        .enumerate()
        .map(|(i, &(start, end))| (i, matcher.count(&text[start..end])))
        .filter(|&(_, matched)| matched > 0)
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0;
    let best = scored.first().map(|&(i, _)| i);
    // The sentence, the marks and spaces around it: what it can add at most.
    let cost = |i: usize| {
        let (start, end) = spans[i];
        text[start..end].trim_end().len() + 2 * ELISION.len() + 2
    };
    for &(i, _) in &scored {
        if used + cost(i) <= max_bytes {
            chosen.push(i);
            used += cost(i);
        }
    }
    // What is left may go to the sentence after the best match: a sentence that names
    // the query's subject is often followed by the one that says what became of it
    // ("… my asylum application to get approved. Over a year of uncertainty …").
    if let Some(&first) = chosen.first() {
        let next = first + 1;
        if next < spans.len() && !chosen.contains(&next) && used + cost(next) <= max_bytes {
            chosen.push(next);
        }
    }
    if chosen.is_empty() {
        // No sentence fits whole: the opening of the best one (or of the text).
        return match best {
            Some(i) if i > 0 => {
                let rest = max_bytes.saturating_sub(ELISION.len() + 1);
                format!("{ELISION} {}", opening(&text[spans[i].0..], rest))
            }
            _ => opening(text, max_bytes),
        };
    }
    chosen.sort_unstable();
    let mut out = String::with_capacity(max_bytes);
    let mut next_expected = 0;
    for i in chosen {
        let (start, end) = spans[i];
        if i != next_expected {
            out.push_str(ELISION);
            out.push(' ');
        }
        out.push_str(text[start..end].trim_end());
        out.push(' ');
        next_expected = i + 1;
    }
    let mut out = out.trim_end().to_string();
    if next_expected < spans.len() {
        out.push(' ');
        out.push_str(ELISION);
    }
    out
}

/// The start of `text` within `max_bytes`, cut at a word and marked.
fn opening(text: &str, max_bytes: usize) -> String {
    let room = max_bytes.saturating_sub(ELISION.len() + 1);
    let cut = floor_char_boundary(text, room);
    let head = &text[..cut];
    let head = head
        .rfind(char::is_whitespace)
        .filter(|&at| at > room / 2)
        .map_or(head, |at| &head[..at]);
    format!("{} {ELISION}", head.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(query: &str) -> Vec<String> {
        query_terms(query)
    }

    #[test]
    fn the_matching_sentences_are_kept_in_order_with_elisions() {
        let text = "We met at the cafe. The weather was grey. Caroline adopted a puppy \
                    named Oscar. We talked for hours. Oscar is a beagle.";
        // Too tight for the sentence after the best match as well.
        let got = excerpt(text, &terms("what breed is the puppy Oscar"), 95);
        assert_eq!(
            got,
            "… Caroline adopted a puppy named Oscar. … Oscar is a beagle."
        );
        assert!(got.len() <= 95);
    }

    #[test]
    fn the_sentence_after_the_best_match_is_kept_when_it_fits() {
        let text = "I tried two sites. My asylum application took ages to approve. \
                    Over a year of waiting. Anyway, flats are pricey.";
        let terms = terms("how long did my asylum application take");
        let roomy = excerpt(text, &terms, 120);
        assert_eq!(
            roomy,
            "… My asylum application took ages to approve. Over a year of waiting. …"
        );
        let tight = excerpt(text, &terms, 60);
        assert_eq!(tight, "… My asylum application took ages to approve. …");
    }

    #[test]
    fn without_a_match_the_opening_is_kept() {
        let text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu";
        let got = excerpt(text, &terms("unrelated"), 30);
        assert!(got.starts_with("alpha beta"), "{got}");
        assert!(got.ends_with(ELISION));
        assert!(got.len() <= 30, "{}", got.len());
    }

    #[test]
    fn a_matching_sentence_too_long_to_fit_is_cut_at_its_start() {
        let text = format!(
            "Intro words here. Oscar {} end.",
            "runs far and wide ".repeat(20)
        );
        let got = excerpt(&text, &terms("Oscar"), 60);
        assert!(got.starts_with("… Oscar runs"), "{got}");
        assert!(got.len() <= 60, "{}", got.len());
    }

    #[test]
    fn numbers_and_lines_split_sentences_where_a_reader_would() {
        let spans = sentences("It costs 3.5 dollars.\nNext line! Done");
        let text = "It costs 3.5 dollars.\nNext line! Done";
        let parts: Vec<&str> = spans.iter().map(|&(s, e)| &text[s..e]).collect();
        assert_eq!(parts, ["It costs 3.5 dollars.\n", "Next line! ", "Done"]);
    }
}
