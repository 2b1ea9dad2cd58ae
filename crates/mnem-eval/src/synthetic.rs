//! A synthetic multi-team corpus for `mnem bench`: seeded and reproducible, with the
//! statistics that decide search cost rather than meaning — Zipf-distributed word
//! frequencies over a large vocabulary, log-normal text lengths like chat turns and notes,
//! topical clustering (so queries match many documents, some strongly), and teams of very
//! different sizes (one tenant dominates, as in real deployments).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal, Zipf};

use mnem_core::Timestamp;

const VOCABULARY: usize = 40_000;
const TOPICS: usize = 2_000;
const TOPIC_WORDS: usize = 24;
/// Share of a document's words drawn from its topic rather than the whole language.
const TOPICAL_SHARE: f64 = 0.25;
/// Two letters each (so spellings are unique) and none an English function word (which
/// full-text queries drop).
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ne", "ru", "sa", "te", "vi", "dy", "pa", "re", "nu", "ti", "ma", "le", "su",
    "ko", "ri", "na", "bu", "ga", "fo", "hu", "ze", "ly", "ar", "en", "ix", "om", "ut",
];

/// The word of a frequency rank: its digits in base 30, one syllable each, so every word
/// is distinct and frequent words are short, as in natural language.
pub(crate) fn spell(rank: usize) -> String {
    let mut word = String::new();
    let mut n = rank;
    loop {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
        if n == 0 {
            return word;
        }
    }
}

pub struct Document {
    pub team: usize,
    pub text: String,
    pub observed_at: Timestamp,
}

#[derive(Debug, PartialEq)]
pub struct Query {
    pub team: usize,
    pub text: String,
}

pub struct Corpus {
    rng: StdRng,
    words: Vec<String>,
    zipf: Zipf<f64>,
    length: LogNormal<f64>,
    topics: Vec<[usize; TOPIC_WORDS]>,
    team_weights: Vec<f64>,
    start: Timestamp,
}

impl Corpus {
    pub fn new(seed: u64, teams: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let words = (0..VOCABULARY).map(spell).collect();
        // Topic words come from the middle of the frequency range: rare enough to select.
        let topics = (0..TOPICS)
            .map(|_| std::array::from_fn(|_| rng.random_range(200..VOCABULARY)))
            .collect();
        let team_weights = (0..teams.max(1)).map(|t| 1.0 / (t as f64 + 1.0)).collect();
        Self {
            rng,
            words,
            zipf: Zipf::new(VOCABULARY as f64, 1.07).expect("valid Zipf parameters"),
            // Median 24 words, long tail (p99 ≈ 190 words): short chat turns and notes.
            length: LogNormal::new(24f64.ln(), 0.9).expect("valid log-normal parameters"),
            topics,
            team_weights,
            start: Timestamp::from_seconds(1_640_995_200), // 2022-01-01
        }
    }

    pub fn teams(&self) -> usize {
        self.team_weights.len()
    }

    fn team(&mut self) -> usize {
        let total: f64 = self.team_weights.iter().sum();
        let mut pick = self.rng.random_range(0.0..total);
        for (team, weight) in self.team_weights.iter().enumerate() {
            if pick < *weight {
                return team;
            }
            pick -= weight;
        }
        self.team_weights.len() - 1
    }

    fn word(&mut self) -> &str {
        let rank = self.zipf.sample(&mut self.rng) as usize - 1;
        &self.words[rank.min(VOCABULARY - 1)]
    }

    fn topic_word(&mut self, topic: usize) -> &str {
        let pick = self.topics[topic][self.rng.random_range(0..TOPIC_WORDS)];
        &self.words[pick]
    }

    /// The `n`-th document (call in order: observation times increase).
    pub fn document(&mut self, n: usize) -> Document {
        let team = self.team();
        let topic = self.rng.random_range(0..TOPICS);
        let length = (self.length.sample(&mut self.rng) as usize).clamp(3, 800);
        let mut text = String::with_capacity(length * 7);
        for i in 0..length {
            if i > 0 {
                text.push(' ');
            }
            let topical = self.rng.random_bool(TOPICAL_SHARE);
            let word = if topical {
                self.topic_word(topic).to_string()
            } else {
                self.word().to_string()
            };
            text.push_str(&word);
        }
        Document {
            team,
            text,
            // One document a minute, so a million span about two years.
            observed_at: self.start.plus_seconds(n as i64 * 60),
        }
    }

    /// A query like an agent's: two topic words and one to three common words.
    pub fn query(&mut self) -> Query {
        let team = self.team();
        let topic = self.rng.random_range(0..TOPICS);
        let mut words = vec![
            self.topic_word(topic).to_string(),
            self.topic_word(topic).to_string(),
        ];
        for _ in 0..self.rng.random_range(1..=3) {
            words.push(self.word().to_string());
        }
        Query {
            team,
            text: words.join(" "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_and_frequent_ones_short() {
        let words: std::collections::HashSet<String> = (0..VOCABULARY).map(spell).collect();
        assert_eq!(words.len(), VOCABULARY);
        assert_eq!(spell(3).len(), 2);
        assert!(spell(30_000).len() > spell(40).len());
    }

    #[test]
    fn the_same_seed_gives_the_same_corpus() {
        let mut a = Corpus::new(7, 4);
        let mut b = Corpus::new(7, 4);
        for n in 0..50 {
            let (x, y) = (a.document(n), b.document(n));
            assert_eq!(
                (x.team, &x.text, x.observed_at),
                (y.team, &y.text, y.observed_at)
            );
        }
        assert_eq!(a.query().text, b.query().text);
    }

    #[test]
    fn frequent_words_dominate_and_lengths_vary() {
        let mut corpus = Corpus::new(1, 4);
        let docs: Vec<Document> = (0..2_000).map(|n| corpus.document(n)).collect();
        let mut counts = std::collections::HashMap::new();
        for doc in &docs {
            for word in doc.text.split(' ') {
                *counts.entry(word.to_string()).or_insert(0usize) += 1;
            }
        }
        let mut frequencies: Vec<usize> = counts.values().copied().collect();
        frequencies.sort_unstable_by(|a, b| b.cmp(a));
        let total: usize = frequencies.iter().sum();
        // Zipf: the ten most frequent words are a large share, and the vocabulary is wide.
        let top_ten: usize = frequencies.iter().take(10).sum();
        assert!(top_ten * 5 > total, "top ten {top_ten} of {total}");
        assert!(counts.len() > 5_000, "vocabulary {}", counts.len());
        let lengths: Vec<usize> = docs.iter().map(|d| d.text.split(' ').count()).collect();
        assert!(lengths.iter().any(|&l| l < 10) && lengths.iter().any(|&l| l > 100));
    }

    #[test]
    fn teams_differ_in_size_and_every_team_gets_documents() {
        let mut corpus = Corpus::new(3, 4);
        let mut sizes = [0usize; 4];
        for n in 0..4_000 {
            sizes[corpus.document(n).team] += 1;
        }
        assert!(sizes.iter().all(|&s| s > 0));
        assert!(sizes[0] > 3 * sizes[3], "{sizes:?}");
    }
}
