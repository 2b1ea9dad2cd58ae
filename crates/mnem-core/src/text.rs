//! Query text → search terms. The user's text is data, never a query language: it is cut
//! into plain terms here, and each backend quotes every term when it builds its own
//! full-text expression, so `NEAR`, `*`, `-`, quotes and parentheses are just text.

/// More terms than this add cost without changing which documents match meaningfully.
pub const MAX_QUERY_TERMS: usize = 64;

/// Lowercased, de-duplicated (first occurrence wins) runs of letters and digits.
pub fn query_terms(query: &str) -> Vec<String> {
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
            vec!["near", "foo", "bar", "and", "baz"]
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
    fn punctuation_only_has_no_terms() {
        assert!(query_terms("?!* -- ()").is_empty());
    }
}
