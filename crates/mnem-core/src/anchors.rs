//! Hard anchors: identifiers in a query that a result must itself contain. Each kind has
//! its own tested grammar; there is deliberately no "looks hex-ish" rule, which would
//! turn words like `cafe`, `added` or `deadbeef` into identifiers.

use serde::Serialize;

use crate::Evidence;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKind {
    Uuid,
    IssueKey,
    Version,
    Path,
    Hash,
    Url,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Anchor {
    pub kind: AnchorKind,
    /// As written in the query (trailing punctuation removed).
    pub text: String,
}

impl Anchor {
    /// Satisfied when the evidence's own content contains the anchor (case-insensitive),
    /// or one of its refs has it as its id.
    pub fn satisfied_by(&self, evidence: &Evidence) -> bool {
        let needle = self.text.to_lowercase();
        evidence.content.to_lowercase().contains(&needle)
            || evidence.refs.iter().any(|r| r.id.to_lowercase() == needle)
    }
}

/// Every hard anchor in `query`, in order of appearance, without duplicates.
pub fn parse_anchors(query: &str) -> Vec<Anchor> {
    let mut anchors: Vec<Anchor> = Vec::new();
    for raw in query.split_whitespace() {
        let token = raw
            .trim_start_matches(['(', '[', '{', '"', '\'', '<', '`'])
            .trim_end_matches([
                ',', ';', ':', '!', '?', ')', ']', '}', '"', '\'', '>', '`', '.',
            ]);
        if let Some(kind) = classify(token) {
            if !anchors.iter().any(|a| a.text.eq_ignore_ascii_case(token)) {
                anchors.push(Anchor {
                    kind,
                    text: token.to_string(),
                });
            }
        }
    }
    anchors
}

fn classify(token: &str) -> Option<AnchorKind> {
    if token.is_empty() {
        return None;
    }
    if is_url(token) {
        Some(AnchorKind::Url)
    } else if is_uuid(token) {
        Some(AnchorKind::Uuid)
    } else if is_issue_key(token) {
        Some(AnchorKind::IssueKey)
    } else if is_version(token) {
        Some(AnchorKind::Version)
    } else if is_path(token) {
        Some(AnchorKind::Path)
    } else if is_hash(token) {
        Some(AnchorKind::Hash)
    } else {
        None
    }
}

fn is_url(token: &str) -> bool {
    ["http://", "https://"].iter().any(|scheme| {
        token
            .strip_prefix(scheme)
            .is_some_and(|rest| rest.len() > 2 && rest.contains('.'))
    })
}

/// 8-4-4-4-12 hex digits.
fn is_uuid(token: &str) -> bool {
    let groups: Vec<&str> = token.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// `ABC-123`: an uppercase project key (letter first, 2–10 chars) and a number.
fn is_issue_key(token: &str) -> bool {
    let Some((key, number)) = token.split_once('-') else {
        return false;
    };
    (2..=10).contains(&key.len())
        && key.starts_with(|c: char| c.is_ascii_uppercase())
        && key
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && !number.is_empty()
        && number.len() <= 9
        && number.chars().all(|c| c.is_ascii_digit())
}

/// `v1.2`, `1.2.3`, `2.0.0-rc.1`: either a `v` and two numeric parts, or three numeric
/// parts (so a decimal like `2.5` is not a version).
fn is_version(token: &str) -> bool {
    let (prefixed, body) = match token.strip_prefix(['v', 'V']) {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let core = body.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit()));
    numeric && (parts.len() >= 3 || (prefixed && parts.len() == 2))
}

/// `/etc/hosts`, `~/notes.md`, `./run.sh`, `src/main.rs`: rooted, or relative with a file
/// extension on the last segment. `and/or` and `24/7` are not paths.
fn is_path(token: &str) -> bool {
    if !token.contains('/') || token.contains("://") {
        return false;
    }
    let rooted = ["/", "~/", "./", "../"]
        .iter()
        .any(|p| token.starts_with(p) && token.len() > p.len());
    let last = token.rsplit('/').next().unwrap_or("");
    let has_extension = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    let segments_ok = token
        .split('/')
        .filter(|s| !s.is_empty())
        .all(|s| s.chars().all(|c| c.is_alphanumeric() || "._-~".contains(c)));
    segments_ok && (rooted || has_extension)
}

/// 7 to 64 hex digits containing at least one digit and one letter: commit and content
/// hashes. Pure words (`deadbeef`, `facade`) and pure numbers are not hashes.
fn is_hash(token: &str) -> bool {
    (7..=64).contains(&token.len())
        && token.chars().all(|c| c.is_ascii_hexdigit())
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(query: &str) -> Vec<(AnchorKind, String)> {
        parse_anchors(query)
            .into_iter()
            .map(|a| (a.kind, a.text))
            .collect()
    }

    #[test]
    fn each_grammar_recognises_its_identifiers() {
        assert_eq!(
            kinds("see 0190b8a4-7c1e-7aa0-9f00-1234567890ab"),
            [(
                AnchorKind::Uuid,
                "0190b8a4-7c1e-7aa0-9f00-1234567890ab".into()
            )]
        );
        assert_eq!(
            kinds("is ABC-123 done?"),
            [(AnchorKind::IssueKey, "ABC-123".into())]
        );
        assert_eq!(
            kinds("upgrade to v2.1"),
            [(AnchorKind::Version, "v2.1".into())]
        );
        assert_eq!(
            kinds("since 1.14.0-rc.2"),
            [(AnchorKind::Version, "1.14.0-rc.2".into())]
        );
        assert_eq!(
            kinds("edit src/main.rs"),
            [(AnchorKind::Path, "src/main.rs".into())]
        );
        assert_eq!(
            kinds("cat /etc/hosts"),
            [(AnchorKind::Path, "/etc/hosts".into())]
        );
        assert_eq!(
            kinds("commit 9fceb02d0ae5"),
            [(AnchorKind::Hash, "9fceb02d0ae5".into())]
        );
        assert_eq!(
            kinds("read (https://example.com/a?b=1)."),
            [(AnchorKind::Url, "https://example.com/a?b=1".into())]
        );
    }

    #[test]
    fn ordinary_words_and_numbers_are_not_anchors() {
        for query in [
            "what did we decide about the cafe added to the facade",
            "deadbeef decade accede",
            "and/or 24/7 either/or",
            "it costs 2.5 dollars or 3.14",
            "call 5551234567 tomorrow",
            "covid-19 and e-mail and x-ray",
            "Mid-2023 plans",
            "version two of the plan",
        ] {
            assert!(
                parse_anchors(query).is_empty(),
                "{query:?}: {:?}",
                parse_anchors(query)
            );
        }
    }

    #[test]
    fn duplicates_are_collapsed() {
        assert_eq!(parse_anchors("ABC-1 and ABC-1 again").len(), 1);
    }
}
