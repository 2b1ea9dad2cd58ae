//! Builds the FTS5 MATCH expression. Each term is a double-quoted FTS5 string, so nothing
//! the user typed is read as syntax (`NEAR`, `AND`, `*`, `-`, `^`, `:` and parentheses
//! are text), and the terms are OR-ed: a document sharing any term matches, and BM25 ranks
//! documents that share more, rarer terms higher.

/// `None` when the text has no terms (it can match nothing).
pub fn match_expression(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| format!("\"{}\"", term.replace('"', "\"\"")))
        .collect();
    Some(quoted.join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_quoted_and_or_ed() {
        let terms = vec!["near".to_string(), "foo".to_string()];
        assert_eq!(match_expression(&terms).unwrap(), r#""near" OR "foo""#);
    }

    #[test]
    fn embedded_quotes_are_doubled() {
        let terms = vec![r#"a"b"#.to_string()];
        assert_eq!(match_expression(&terms).unwrap(), r#""a""b""#);
    }

    #[test]
    fn no_terms_no_expression() {
        assert_eq!(match_expression(&[]), None);
    }
}
