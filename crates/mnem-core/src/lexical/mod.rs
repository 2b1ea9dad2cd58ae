//! Lexical relevance, defined once for every backend: how text becomes terms, and Okapi
//! BM25 over those terms with each team's own statistics.
//!
//! Backends store what [`document_terms`] returns (each term's frequency and the text's
//! length) and count, per team, the documents and the documents holding each term; they
//! never tokenise or stem text themselves. So a term means the same thing everywhere, and
//! a relevance computed from the same counts is the same number on every backend (the
//! conformance suite checks it against [`Bm25::score`]).
//!
//! Stored terms were made by this analyzer: changing what it returns for a text (a
//! stemmer, the folding, the cut) needs a migration that re-indexes every stored text, as
//! SQLite's 0009 and 0016 and PostgreSQL's 0005 and 0015 did. SQLite also re-derives a text's terms to take
//! it out of the index when it is erased, so it must get the terms it indexed.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::{decompose_compatible, is_combining_mark};

use crate::text::{floor_char_boundary, is_stopword, MAX_QUERY_TERMS};

pub mod blocks;
mod irregular;
pub mod topk;

/// Longer runs (a pasted blob, a long hash) are cut to this many bytes, on both sides:
/// a term stays findable by itself without letting one token cost kilobytes per posting.
pub const MAX_TERM_BYTES: usize = 128;

/// The least weight a matching term has (FTS5's floor).
pub const MIN_IDF: f64 = 1e-6;

/// BM25's constants: FTS5's, Lucene's and Elasticsearch's defaults.
pub const K1: f64 = 1.2;
pub const B: f64 = 0.75;

/// A text's terms: how often each occurs, and how many terms it has in all (BM25's
/// document length).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentTerms {
    pub frequencies: BTreeMap<String, u32>,
    pub length: u32,
}

impl DocumentTerms {
    /// The frequencies as a JSON object (`{"term": tf, …}`), the form PostgreSQL keeps.
    pub fn frequencies_json(&self) -> String {
        // A map of strings to integers always serialises; the fallback is unreachable.
        serde_json::to_string(&self.frequencies).unwrap_or_else(|_| "{}".into())
    }
}

/// Every term of a stored text, with its frequency and the text's length.
pub fn document_terms(text: &str) -> DocumentTerms {
    let mut terms = DocumentTerms::default();
    for word in words(text) {
        *terms.frequencies.entry(term_of(&word)).or_insert(0) += 1;
        terms.length = terms.length.saturating_add(1);
    }
    terms
}

/// The terms a query searches for: English function words are dropped unless the query
/// is nothing else ("to be or not"), then each word becomes a term as a document's words
/// do. De-duplicated, first occurrence first, at most [`MAX_QUERY_TERMS`].
pub fn query_terms(query: &str) -> Vec<String> {
    let all = words(query);
    let content: Vec<&String> = all.iter().filter(|w| !is_stopword(w)).collect();
    let chosen: Vec<&String> = if content.is_empty() {
        all.iter().collect()
    } else {
        content
    };
    let mut terms: Vec<String> = Vec::new();
    for word in chosen {
        let term = term_of(word);
        if !terms.contains(&term) {
            terms.push(term);
            if terms.len() == MAX_QUERY_TERMS {
                break;
            }
        }
    }
    terms
}

/// Lowercased runs of letters, digits and their marks, with Latin diacritics and compatibility forms
/// folded ("Café" → "cafe", "ﬁle" → "file"), so a query typed without accents finds the
/// accented text. Other scripts keep their marks: dropping them would change the word.
fn words(text: &str) -> Vec<String> {
    let mut folded = String::with_capacity(text.len());
    for c in text.chars() {
        fold_into(c, &mut folded);
    }
    folded
        // A combining mark belongs to the word it marks (a virama, a vowel sign).
        .split(|c: char| !(c.is_alphanumeric() || is_combining_mark(c)))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn fold_into(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c);
        return;
    }
    let mut decomposed: Vec<char> = Vec::new();
    decompose_compatible(c, |d| decomposed.push(d));
    if decomposed.first().is_some_and(char::is_ascii) {
        out.extend(decomposed.into_iter().filter(|d| !is_combining_mark(*d)));
    } else {
        out.push(c);
    }
}

/// A word's term: English words (ASCII letters only) are stemmed with Snowball's English
/// (Porter2) stemmer, so "planning" finds "planned", after an irregular form is replaced by
/// its word ([`irregular`]: "made" finds "make"); numbers, codes and other scripts are
/// kept as written.
fn term_of(word: &str) -> String {
    let term = if word.bytes().all(|b| b.is_ascii_lowercase()) {
        let word = irregular::base_of(word).unwrap_or(word);
        stemmer().stem(word).into_owned()
    } else {
        word.to_string()
    };
    let end = floor_char_boundary(&term, MAX_TERM_BYTES);
    term[..end].to_string()
}

/// Every word of `text` as its term, in order, function words included: how a phrase is
/// keyed so that "Adoption Agencies" and "adoption agency" are one key.
pub fn phrase_terms(text: &str) -> Vec<String> {
    words(text).iter().map(|word| term_of(word)).collect()
}

/// How many of `terms` (as [`query_terms`] makes them) `text` holds. For many texts and
/// the same terms, build a [`TermMatcher`] once.
pub fn matched_terms(text: &str, terms: &[String]) -> usize {
    TermMatcher::new(terms).count(text)
}

/// Counts which of a query's terms a text holds, as [`document_terms`] would find them,
/// without stemming most words. Only words that begin with some term's first character
/// are stemmed — otherwise a term keeps its word's first character (Porter2 changes later
/// letters only: "dying" → "die") — and the irregular forms that can reach a term ("went"
/// → "go") are listed once, when the matcher is built. Excerpting long results scans
/// every sentence of each: this keeps that scan cheap.
pub struct TermMatcher<'t> {
    terms: &'t [String],
    heads: Vec<char>,
    /// Irregular forms whose word stems to one of the terms.
    irregular: Vec<&'static str>,
    /// Each word stemmed so far and the terms it is: the same words recur across a
    /// result's sentences and across results.
    stemmed: RefCell<HashMap<String, Vec<usize>>>,
}

impl<'t> TermMatcher<'t> {
    pub fn new(terms: &'t [String]) -> Self {
        let heads = terms.iter().filter_map(|t| t.chars().next()).collect();
        let irregular = irregular_terms()
            .iter()
            .filter(|(_, term)| terms.contains(term))
            .map(|(form, _)| *form)
            .collect();
        Self {
            terms,
            heads,
            irregular,
            stemmed: RefCell::new(HashMap::new()),
        }
    }

    /// How many of the terms `text` holds.
    pub fn count(&self, text: &str) -> usize {
        let mut found = vec![false; self.terms.len()];
        let mut note = |word: &str| {
            let head = word.chars().next();
            if !head.is_some_and(|c| self.heads.contains(&c)) && !self.irregular.contains(&word) {
                return;
            }
            let mut stemmed = self.stemmed.borrow_mut();
            let matches = match stemmed.get(word) {
                Some(matches) => matches,
                None => {
                    let term = term_of(word);
                    let matches = (0..self.terms.len())
                        .filter(|&i| self.terms[i] == term)
                        .collect();
                    stemmed.entry(word.to_string()).or_insert(matches)
                }
            };
            for &i in matches {
                found[i] = true;
            }
        };
        if text.is_ascii() {
            // ASCII folds to itself and lowercases byte by byte: the words `words` would
            // give, without a string for each.
            let mut word = String::new();
            for piece in text.split(|c: char| !c.is_ascii_alphanumeric()) {
                if !piece.is_empty() {
                    word.clear();
                    word.extend(piece.chars().map(|c| c.to_ascii_lowercase()));
                    note(&word);
                }
            }
        } else {
            for word in words(text) {
                note(&word);
            }
        }
        found.into_iter().filter(|f| *f).count()
    }
}

/// Each irregular form with its term, stemmed once per process.
fn irregular_terms() -> &'static [(&'static str, String)] {
    static TERMS: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    TERMS.get_or_init(|| {
        irregular::forms()
            .map(|(form, _)| (form, term_of(form)))
            .collect()
    })
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// A team's corpus statistics: the documents with at least one term, and their terms in
/// all. Stored texts count until they are erased (a retracted text still shapes idf, as it
/// does in every full-text engine until its index entry is removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CorpusStats {
    pub documents: u64,
    pub total_length: u64,
}

/// Okapi BM25 for one team: idf from the team's counts, never another team's.
#[derive(Debug, Clone, Copy)]
pub struct Bm25 {
    documents: f64,
    average_length: f64,
}

impl Bm25 {
    pub fn new(stats: CorpusStats) -> Self {
        let documents = stats.documents.max(1) as f64;
        Self {
            documents,
            average_length: (stats.total_length as f64 / documents).max(1.0),
        }
    }

    /// The average document length BM25 normalises by (at least 1).
    pub fn average_length(&self) -> f64 {
        self.average_length
    }

    /// The Robertson–Spärck Jones idf, ln((N − n + 0.5)/(n + 0.5)), floored at 1e-6 as
    /// FTS5 floors it: a term in half the documents or more weighs (almost) nothing but
    /// still matches. Measured against Lucene's smoothed ln(1 + …), which keeps weight on
    /// such terms: LoCoMo dev turn recall@5 0.617 vs 0.609, MRR 0.497 vs 0.484 (hybrid);
    /// LongMemEval dev equal (T-any@5 0.860 both).
    pub fn idf(&self, containing: u64) -> f64 {
        let n = containing as f64;
        ((self.documents - n + 0.5) / (n + 0.5)).ln().max(MIN_IDF)
    }

    /// One term's contribution to a document's relevance.
    pub fn term_score(&self, idf: f64, frequency: u32, length: u32) -> f64 {
        if frequency == 0 {
            return 0.0;
        }
        let tf = f64::from(frequency);
        let norm = K1 * (1.0 - B + B * f64::from(length) / self.average_length);
        idf * tf * (K1 + 1.0) / (tf + norm)
    }

    /// The most one term can add to any document: tf·(k1 + 1)/(tf + K) stays below
    /// k1 + 1. What MaxScore pruning bounds the terms it has not read with.
    pub fn term_bound(idf: f64) -> f64 {
        idf * (K1 + 1.0)
    }

    /// A document's relevance for the query terms `(idf, frequency in the document)`.
    pub fn score(&self, terms: impl IntoIterator<Item = (f64, u32)>, length: u32) -> f64 {
        terms
            .into_iter()
            .map(|(idf, frequency)| self.term_score(idf, frequency, length))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn matched_terms_counts_what_document_terms_would_find() {
        let terms = super::query_terms("dying skies generously planned Café 3.5 ugly go");
        for text in [
            "He was dying under grey skies.",
            "They went home",
            "We planned it generously at the cafe for 3.5 hours",
            "nothing relevant here",
            "Ugly UGLY ugliness",
        ] {
            let found = super::document_terms(text).frequencies;
            let expected = terms.iter().filter(|t| found.contains_key(*t)).count();
            assert_eq!(super::matched_terms(text, &terms), expected, "{text}");
        }
    }

    use super::*;

    proptest::proptest! {
        /// The matcher's shortcuts (first characters, the irregular forms listed once, the
        /// ASCII path) find exactly what indexing the text would: any mix of words,
        /// irregular forms, case, punctuation and accented or other-script text.
        #[test]
        fn the_matcher_finds_what_document_terms_find(
            query in proptest::collection::vec(0..WORDS.len(), 1..6),
            texts in proptest::collection::vec(
                proptest::collection::vec((0..WORDS.len(), 0..SEPARATORS.len()), 0..40),
                1..4,
            ),
        ) {
            let query: Vec<&str> = query.into_iter().map(|i| WORDS[i]).collect();
            let terms = query_terms(&query.join(" "));
            // One matcher for every text, as an excerpt uses it: what it remembers of
            // one text must not change what it finds in the next.
            let matcher = TermMatcher::new(&terms);
            for text in texts {
                let text: String = text
                    .into_iter()
                    .map(|(w, s)| format!("{}{}", WORDS[w], SEPARATORS[s]))
                    .collect();
                let found = document_terms(&text).frequencies;
                let expected = terms.iter().filter(|t| found.contains_key(*t)).count();
                proptest::prop_assert_eq!(matcher.count(&text), expected);
            }
        }
    }

    const WORDS: &[&str] = &[
        "went",
        "go",
        "goes",
        "Going",
        "made",
        "make",
        "children",
        "child",
        "dying",
        "die",
        "skies",
        "sky",
        "planned",
        "PLANS",
        "ugly",
        "ugliness",
        "Café",
        "cafe",
        "3.5",
        "x86",
        "naïve",
        "naive",
        "東京",
        "किताब",
        "bought",
        "buy",
        "were",
        "be",
        "Ran",
        "run",
    ];
    const SEPARATORS: &[&str] = &[" ", ", ", ". ", "'s ", "-", "!\n", "…", "/"];

    #[test]
    fn words_are_stemmed_lowercased_and_counted() {
        let terms = document_terms("Planning the plans: planned!");
        assert_eq!(terms.length, 4);
        assert_eq!(terms.frequencies.get("plan"), Some(&3));
        assert_eq!(terms.frequencies.get("the"), Some(&1));
    }

    #[test]
    fn a_query_and_a_document_meet_on_the_same_stem() {
        let query = query_terms("When did she go hiking?");
        assert_eq!(query, vec!["go", "hike"]);
        assert!(document_terms("She hiked up the hill")
            .frequencies
            .contains_key("hike"));
    }

    #[test]
    fn an_irregular_form_meets_its_word() {
        assert_eq!(
            query_terms("What did she make? Where did they go?"),
            ["make", "go"]
        );
        let told = document_terms("I made it, then we went and bought two");
        for term in ["make", "go", "buy"] {
            assert!(told.frequencies.contains_key(term), "{term}");
        }
        assert!(!told.frequencies.contains_key("made"));
    }

    #[test]
    fn latin_diacritics_and_compatibility_forms_fold() {
        assert_eq!(query_terms("Café ﬁle"), vec!["cafe", "file"]);
    }

    #[test]
    fn other_scripts_keep_their_marks_and_are_not_stemmed() {
        assert_eq!(query_terms("東京 नमस्ते"), vec!["東京", "नमस्ते"]);
    }

    #[test]
    fn numbers_and_codes_are_kept_as_written() {
        assert_eq!(
            query_terms("ticket A1234 costs 35"),
            vec!["ticket", "a1234", "cost", "35"]
        );
    }

    #[test]
    fn a_query_of_only_function_words_keeps_them() {
        assert_eq!(query_terms("to be or not"), vec!["to", "be", "or", "not"]);
    }

    #[test]
    fn query_syntax_is_plain_text() {
        assert_eq!(
            query_terms(r#""NEAR(foo* -bar)" AND (baz)"#),
            vec!["near", "foo", "bar", "baz"]
        );
    }

    #[test]
    fn long_terms_are_cut_on_a_character_boundary() {
        let long = "é".repeat(200);
        let terms = query_terms(&format!("x{long}"));
        assert!(terms[0].len() <= MAX_TERM_BYTES);
        assert_eq!(
            document_terms(&format!("x{long}"))
                .frequencies
                .keys()
                .next(),
            Some(&terms[0])
        );
    }

    #[test]
    fn idf_is_positive_even_for_a_term_in_every_document() {
        let bm25 = Bm25::new(CorpusStats {
            documents: 10,
            total_length: 100,
        });
        assert_eq!(bm25.idf(10), MIN_IDF);
        assert!(bm25.idf(1) > bm25.idf(4));
        assert!(bm25.idf(4) > MIN_IDF);
    }

    #[test]
    fn term_score_saturates_below_its_bound_and_favours_short_texts() {
        let bm25 = Bm25::new(CorpusStats {
            documents: 100,
            total_length: 1000,
        });
        let idf = bm25.idf(3);
        let bound = Bm25::term_bound(idf);
        assert!(bm25.term_score(idf, 1000, 10) < bound);
        assert!(bm25.term_score(idf, 2, 10) > bm25.term_score(idf, 1, 10));
        assert!(bm25.term_score(idf, 1, 5) > bm25.term_score(idf, 1, 50));
        assert_eq!(bm25.term_score(idf, 0, 5), 0.0);
    }

    #[test]
    fn an_empty_corpus_still_scores_finitely() {
        let bm25 = Bm25::new(CorpusStats::default());
        assert!(bm25.score([(bm25.idf(0), 1)], 0).is_finite());
    }
}
