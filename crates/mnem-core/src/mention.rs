//! Mentions: the names and key phrases a text mentions, found by rules, without a model.
//!
//! Stored per team beside the evidence (item → key rows), they let recall take a second
//! hop: from the first round's results to other items that mention the same rare thing
//! ([`crate::hop`]). A mention is never evidence and never a relationship claim: it only
//! says "this text contains these words in this shape".
//!
//! The rules, in the order their keys are kept (at most [`MAX_MENTIONS`] per text):
//! 1. **Speaker**: a turn's `Name: …` label ([`crate::signals::speaker_label`]).
//! 2. **Names**: runs of capitalised words that are not function words, inside a
//!    sentence; a sentence's first word is capitalised anyway, so it never starts a run.
//!    Each word is a key, and a run of several words is one more ("Grand Canyon").
//! 3. **Quoted titles**: one to [`MAX_QUOTED_WORDS`] words between double quotes.
//! 4. **Numbers with units**: a number and the content word after it ("3 years",
//!    "10 km"); a year alone (1900–2099).
//! 5. **Key phrases**: two adjacent content words with no punctuation between them
//!    ("adoption agencies", "charity race"), in text order.
//!
//! A key is its words as the full-text index keys them ([`crate::lexical::phrase_terms`]:
//! lowercased, folded, stemmed) joined by one space, so "Adoption Agencies" and
//! "adoption agency" are one key and a query's mention finds a text's.

use crate::lexical::phrase_terms;
use crate::signals::speaker_label;
use crate::text::{floor_char_boundary, is_stopword};

/// Keys kept per text. A long document mentions hundreds of word pairs; its names,
/// titles and numbers come first, so the cap drops only its later phrases. Each key is
/// a row written with the text: at 24, LongMemEval's one-by-one writes were 19% slower;
/// at 12, 10%, with the same recall on both development files (a LoCoMo turn mentions 4
/// keys at the median, a LongMemEval turn 15).
pub const MAX_MENTIONS: usize = 12;

/// A quoted span longer than this is a quotation, not a title.
pub const MAX_QUOTED_WORDS: usize = 8;

/// Keys longer than this are cut (at a character boundary).
pub const MAX_KEY_BYTES: usize = 96;

/// A word of the text with what surrounds it.
#[derive(Debug)]
struct Token<'a> {
    /// Letters and digits with inner apostrophes and hyphens; the rest trimmed.
    word: &'a str,
    /// The first word of a sentence (or of the text).
    opens_sentence: bool,
    /// Punctuation or a line break separates it from the next word.
    breaks_after: bool,
    opens_quote: bool,
    closes_quote: bool,
}

impl Token<'_> {
    fn lower(&self) -> String {
        self.word.to_lowercase()
    }

    /// Not a function word ("I'm" is read as "i").
    fn is_content(&self) -> bool {
        let lower = self.lower();
        let head = lower.split(['\'', '’']).next().unwrap_or("");
        head.chars().count() >= 2 && !is_stopword(head)
    }

    fn is_capitalised(&self) -> bool {
        self.word.chars().next().is_some_and(char::is_uppercase) && self.is_content()
    }

    fn is_number(&self) -> bool {
        self.word.chars().next().is_some_and(|c| c.is_ascii_digit())
            && self
                .word
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '.')
    }

    fn is_year(&self) -> bool {
        self.word.len() == 4
            && self.word.chars().all(|c| c.is_ascii_digit())
            && (self.word.starts_with("19") || self.word.starts_with("20"))
    }

    fn is_alphabetic(&self) -> bool {
        self.word.chars().all(char::is_alphabetic)
    }
}

fn is_quote(c: char) -> bool {
    matches!(c, '"' | '“' | '”')
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out: Vec<Token<'_>> = Vec::new();
    let mut next_opens_sentence = true;
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        for chunk in line.split_whitespace() {
            let word = chunk.trim_matches(|c: char| !c.is_alphanumeric());
            if word.is_empty() {
                // A lone dash or bullet: a break, nothing to key.
                if let Some(last) = out.last_mut() {
                    last.breaks_after = true;
                }
                continue;
            }
            let start = word.as_ptr() as usize - chunk.as_ptr() as usize;
            let (before, after) = (&chunk[..start], &chunk[start + word.len()..]);
            let ends_sentence = after.contains(['.', '!', '?']);
            out.push(Token {
                word,
                opens_sentence: next_opens_sentence,
                breaks_after: !after.chars().all(|c| c == '\'' || c == '’'),
                opens_quote: before.contains(is_quote),
                closes_quote: after.contains(is_quote),
            });
            next_opens_sentence = ends_sentence;
        }
        if lines.peek().is_some() {
            if let Some(last) = out.last_mut() {
                last.breaks_after = true;
            }
            next_opens_sentence = true;
        }
    }
    out
}

/// The keys of what `text` mentions, de-duplicated, in rule order, at most
/// [`MAX_MENTIONS`].
pub fn mentions(text: &str) -> Vec<String> {
    keys_up_to(text, MAX_MENTIONS)
}

/// The first `limit` keys of `text`, in rule order.
fn keys_up_to(text: &str, limit: usize) -> Vec<String> {
    let mut keys = Keys {
        keys: Vec::new(),
        limit,
    };
    let body = match speaker_label(text) {
        Some((speaker, rest)) => {
            keys.add(speaker);
            rest
        }
        None => text,
    };
    let tokens = tokens(body);
    // Each rule stops at its next token once the keys are full.
    names(&tokens, &mut keys);
    quoted(&tokens, &mut keys);
    numbers(&tokens, &mut keys);
    phrases(&tokens, &mut keys);
    keys.keys
}

/// Keys in the order found, each once, at most `limit`: they are only ever appended, so
/// once `limit` are held nothing more is kept and nothing more need be stemmed (a long
/// text has far more candidates than keys).
struct Keys {
    keys: Vec<String>,
    limit: usize,
}

impl Keys {
    fn full(&self) -> bool {
        self.keys.len() >= self.limit
    }

    fn add(&mut self, surface: &str) {
        if self.full() {
            return;
        }
        let mut key = phrase_terms(surface).join(" ");
        key.truncate(floor_char_boundary(&key, MAX_KEY_BYTES));
        if !key.is_empty() && !self.keys.contains(&key) {
            self.keys.push(key);
        }
    }

    fn add_words(&mut self, words: &[&Token<'_>]) {
        if self.full() {
            return;
        }
        let surface: Vec<&str> = words.iter().map(|t| t.word).collect();
        self.add(&surface.join(" "));
    }
}

fn names(tokens: &[Token<'_>], keys: &mut Keys) {
    let mut run: Vec<&Token<'_>> = Vec::new();
    let flush = |run: &mut Vec<&Token<'_>>, keys: &mut Keys| {
        for token in run.iter() {
            keys.add(token.word);
        }
        if run.len() > 1 {
            keys.add_words(run);
        }
        run.clear();
    };
    for token in tokens {
        if keys.full() {
            return;
        }
        if token.is_capitalised() && !token.opens_sentence {
            run.push(token);
        } else {
            flush(&mut run, keys);
        }
        if token.breaks_after {
            flush(&mut run, keys);
        }
    }
    flush(&mut run, keys);
}

fn quoted(tokens: &[Token<'_>], keys: &mut Keys) {
    for (start, token) in tokens.iter().enumerate() {
        if keys.full() {
            return;
        }
        if !token.opens_quote {
            continue;
        }
        let span = tokens[start..]
            .iter()
            .take(MAX_QUOTED_WORDS)
            .position(|t| t.closes_quote);
        if let Some(last) = span {
            let words: Vec<&Token<'_>> = tokens[start..=start + last].iter().collect();
            keys.add_words(&words);
        }
    }
}

fn numbers(tokens: &[Token<'_>], keys: &mut Keys) {
    for (i, token) in tokens.iter().enumerate() {
        if keys.full() {
            return;
        }
        if !token.is_number() {
            continue;
        }
        let unit = tokens
            .get(i + 1)
            .filter(|next| !token.breaks_after && next.is_alphabetic() && next.is_content());
        match unit {
            Some(unit) => keys.add_words(&[token, unit]),
            None if token.is_year() => keys.add(token.word),
            None => {}
        }
    }
}

fn phrases(tokens: &[Token<'_>], keys: &mut Keys) {
    for pair in tokens.windows(2) {
        if keys.full() {
            return;
        }
        let [first, second] = pair else { continue };
        if !first.breaks_after
            && first.is_alphabetic()
            && second.is_alphabetic()
            && first.word.len() >= 3
            && second.word.len() >= 3
            && first.is_content()
            && second.is_content()
        {
            keys.add_words(&[first, second]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(keys: &[String], key: &str) -> bool {
        keys.iter().any(|k| k == key)
    }

    #[test]
    fn a_turns_speaker_is_its_first_key() {
        let keys = mentions("Caroline: I went to a support group yesterday.");
        assert_eq!(keys.first().map(String::as_str), Some("carolin"));
    }

    #[test]
    fn a_name_inside_a_sentence_is_a_key() {
        let keys = mentions("Yesterday I met Melanie at the park.");
        assert!(has(&keys, "melani"));
    }

    #[test]
    fn a_sentences_first_word_is_not_a_name() {
        let keys = mentions("Pottery relaxes me. Swimming too.");
        assert!(!has(&keys, "potteri"));
        assert!(!has(&keys, "swim"));
    }

    #[test]
    fn a_multi_word_name_is_a_key_and_so_is_each_word() {
        let keys = mentions("We camped near the Grand Canyon last summer.");
        assert!(has(&keys, "grand canyon"));
        assert!(has(&keys, "grand"));
        assert!(has(&keys, "canyon"));
    }

    #[test]
    fn punctuation_ends_a_name_run() {
        let keys = mentions("I saw Anna, Bruno and Carla there.");
        assert!(has(&keys, "anna"));
        assert!(has(&keys, "bruno"));
        assert!(!has(&keys, "anna bruno"));
    }

    #[test]
    fn a_capitalised_function_word_is_not_a_name() {
        let keys = mentions("Well, I'm sure The plan works.");
        assert!(!has(&keys, "i"));
        assert!(!has(&keys, "the"));
    }

    #[test]
    fn a_quoted_title_is_one_key() {
        let keys = mentions("My favourite book is \"Charlotte's Web\" by far.");
        assert!(has(&keys, "charlott s web"));
    }

    #[test]
    fn a_long_quotation_is_not_a_title() {
        let keys = mentions("She said \"one two three four five six seven eight nine ten\".");
        assert!(!keys.iter().any(|k| k.starts_with("one two three")));
    }

    #[test]
    fn a_number_keeps_its_unit() {
        let keys = mentions("We have been married for 5 years and ran 10 km.");
        assert!(has(&keys, "5 year"));
        assert!(has(&keys, "10 km"));
    }

    #[test]
    fn a_year_alone_is_a_key_and_a_bare_number_is_not() {
        let keys = mentions("That was in 2019, room 12.");
        assert!(has(&keys, "2019"));
        assert!(!has(&keys, "12"));
    }

    #[test]
    fn adjacent_content_words_are_a_phrase_and_inflections_share_it() {
        let plural = mentions("I was researching adoption agencies all week.");
        let singular = mentions("Which adoption agency did you pick?");
        assert!(has(&plural, "adopt agenc"));
        assert!(has(&singular, "adopt agenc"));
    }

    #[test]
    fn a_phrase_never_spans_punctuation_or_a_function_word() {
        let keys = mentions("I love painting, pottery is next. Painting of flowers.");
        assert!(!has(&keys, "paint potteri"));
        assert!(!has(&keys, "paint flower"));
    }

    #[test]
    fn a_line_break_ends_a_sentence() {
        let keys = mentions("notes\nBerlin trip planned");
        assert!(!has(&keys, "berlin"));
        assert!(has(&keys, "berlin trip"));
    }

    #[test]
    fn keys_are_capped_with_names_before_phrases() {
        let text = format!(
            "{} and then Zanzibar.",
            (0..60u8)
                .map(|i| {
                    let letter = char::from(b'a' + i % 26);
                    let second = char::from(b'a' + i / 26);
                    format!("blue{letter}{second} widget{letter}{second}")
                })
                .collect::<Vec<_>>()
                .join(" ")
        );
        let keys = mentions(&text);
        assert_eq!(keys.len(), MAX_MENTIONS);
        assert_eq!(keys.first().map(String::as_str), Some("zanzibar"));
    }

    /// Stopping at the cap keeps exactly the first keys an uncapped pass finds.
    #[test]
    fn the_cap_keeps_the_first_keys_of_the_whole_text() {
        let texts = [
            "Caroline: I went to the LGBTQ support group with Melanie and \"Becoming Nicole\" \
             on 7 May 2023, then 3 km to the Blue Ridge park for the pottery class.",
            "Sure! Here are ideas: 1. Visit the Metropolitan Museum of Art. 2. Walk the \
             High Line. 3. Try Joe's Pizza on Carmine Street. 4. See \"Hamilton\" at the \
             Richard Rodgers Theatre. 5. Take the Staten Island Ferry for 30 minutes.",
            "no names here, just words about cooking dinner and cleaning dishes later",
        ];
        assert!(
            keys_up_to(texts[1], usize::MAX).len() > MAX_MENTIONS,
            "the cap is reached"
        );
        for text in texts {
            for limit in [0, 1, 3, 5, MAX_MENTIONS] {
                let mut all = keys_up_to(text, usize::MAX);
                all.truncate(limit);
                assert_eq!(keys_up_to(text, limit), all, "{limit} of {text}");
            }
        }
    }

    #[test]
    fn text_without_words_mentions_nothing() {
        assert!(mentions("").is_empty());
        assert!(mentions("… — !!").is_empty());
    }
}
