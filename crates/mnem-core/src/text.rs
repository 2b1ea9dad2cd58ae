//! Query text → search terms. The user's text is data, never a query language: it is cut
//! into plain terms here, and each backend quotes every term when it builds its own
//! full-text expression, so `NEAR`, `*`, `-`, quotes and parentheses are just text.

/// More terms than this add cost without changing which documents match meaningfully.
pub const MAX_QUERY_TERMS: usize = 64;

/// English function words. In an OR query each one matches most documents, and BM25's
/// term-frequency saturation still lets a document dense in "what did I …" outrank one
/// holding the rare content word; dropping them raised full-text turn recall@5 on the
/// LoCoMo dev conversation from 0.473 to 0.528, MRR 0.398 to 0.451, and LongMemEval dev
/// session recall_any@5 from 0.968 to 0.978 (`mnem eval … --embedder none`).
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from",
    "further", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "myself", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out",
    "over", "own", "same", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under",
    "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "your",
];

/// Whether `word` (lowercase) is an English function word.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// Lowercased, de-duplicated (first occurrence wins) runs of letters and digits, without
/// English function words — unless the query is nothing but function words, which are
/// then all kept (a search for "to be or not to be" still means something).
pub fn query_terms(query: &str) -> Vec<String> {
    let all = all_terms(query);
    let content: Vec<String> = all
        .iter()
        .filter(|term| STOPWORDS.binary_search(&term.as_str()).is_err())
        .cloned()
        .collect();
    if content.is_empty() {
        all
    } else {
        content
    }
}

/// Runs of white space (any Unicode white space, line breaks included) as one space, the
/// ends trimmed: how names, surfaces and de-duplicated texts are compared.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The largest index ≤ `max` that is a char boundary of `s`: where to cut text to a byte
/// budget without splitting a character.
pub fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

fn all_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !terms.contains(&word) {
            terms.push(word);
            if terms.len() == MAX_QUERY_TERMS {
                break;
            }
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_and_punctuation_become_plain_terms() {
        assert_eq!(
            query_terms(r#""NEAR(foo* -bar)" AND (baz)"#),
            vec!["near", "foo", "bar", "baz"]
        );
    }

    #[test]
    fn terms_are_lowercased_and_deduplicated_in_order() {
        assert_eq!(query_terms("Cat cat CAT dog"), vec!["cat", "dog"]);
    }

    #[test]
    fn unicode_letters_are_kept() {
        assert_eq!(
            query_terms("café Straße 東京"),
            vec!["café", "straße", "東京"]
        );
    }

    #[test]
    fn function_words_are_dropped_when_the_query_has_content_words() {
        assert_eq!(
            query_terms("What did I buy at the Farmers market?"),
            vec!["buy", "farmers", "market"]
        );
    }

    #[test]
    fn a_query_of_only_function_words_keeps_them_all() {
        assert_eq!(query_terms("to be or not"), vec!["to", "be", "or", "not"]);
    }

    #[test]
    fn the_stopword_list_is_sorted_for_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn punctuation_only_has_no_terms() {
        assert!(query_terms("?!* -- ()").is_empty());
    }
}
