//! Irregular English word forms and the word they are a form of: past tenses and
//! participles ("made" → "make", "went" → "go", "bought" → "buy") and irregular plurals
//! ("children" → "child"). A suffix stemmer cannot join them — Porter2 leaves "made" and
//! "make" apart — and a question is usually asked in the present ("what did she make?")
//! about something told in the past ("I made this stained glass window").
//!
//! Left out: forms that are more often another word ("ground", "wound", "bit", "shot",
//! "lit", "stuck", "dove", "spat") and "lay"/"lie", whose forms cross.

/// Sorted by form, so a lookup is a binary search.
const FORMS: &[(&str, &str)] = &[
    ("arisen", "arise"),
    ("arose", "arise"),
    ("ate", "eat"),
    ("awoke", "awake"),
    ("awoken", "awake"),
    ("became", "become"),
    ("began", "begin"),
    ("begun", "begin"),
    ("bent", "bend"),
    ("bitten", "bite"),
    ("bled", "bleed"),
    ("blew", "blow"),
    ("blown", "blow"),
    ("bought", "buy"),
    ("bred", "breed"),
    ("broke", "break"),
    ("broken", "break"),
    ("brought", "bring"),
    ("built", "build"),
    ("burnt", "burn"),
    ("came", "come"),
    ("caught", "catch"),
    ("children", "child"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("clung", "cling"),
    ("crept", "creep"),
    ("dealt", "deal"),
    ("drank", "drink"),
    ("drawn", "draw"),
    ("dreamt", "dream"),
    ("drew", "draw"),
    ("driven", "drive"),
    ("drove", "drive"),
    ("drunk", "drink"),
    ("dug", "dig"),
    ("dwelt", "dwell"),
    ("eaten", "eat"),
    ("fallen", "fall"),
    ("fed", "feed"),
    ("feet", "foot"),
    ("fell", "fall"),
    ("felt", "feel"),
    ("fled", "flee"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("forbade", "forbid"),
    ("forbidden", "forbid"),
    ("foresaw", "foresee"),
    ("foreseen", "foresee"),
    ("forgave", "forgive"),
    ("forgiven", "forgive"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
    ("fought", "fight"),
    ("found", "find"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("gave", "give"),
    ("geese", "goose"),
    ("given", "give"),
    ("gone", "go"),
    ("got", "get"),
    ("gotten", "get"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("heard", "hear"),
    ("held", "hold"),
    ("hid", "hide"),
    ("hidden", "hide"),
    ("hung", "hang"),
    ("kept", "keep"),
    ("knelt", "kneel"),
    ("knew", "know"),
    ("known", "know"),
    ("leapt", "leap"),
    ("learnt", "learn"),
    ("led", "lead"),
    ("left", "leave"),
    ("lent", "lend"),
    ("lost", "lose"),
    ("made", "make"),
    ("meant", "mean"),
    ("men", "man"),
    ("met", "meet"),
    ("mice", "mouse"),
    ("mistaken", "mistake"),
    ("mistook", "mistake"),
    ("misunderstood", "misunderstand"),
    ("outgrew", "outgrow"),
    ("outgrown", "outgrow"),
    ("overcame", "overcome"),
    ("overheard", "overhear"),
    ("paid", "pay"),
    ("ran", "run"),
    ("rang", "ring"),
    ("rebuilt", "rebuild"),
    ("ridden", "ride"),
    ("risen", "rise"),
    ("rode", "ride"),
    ("rung", "ring"),
    ("said", "say"),
    ("sang", "sing"),
    ("sank", "sink"),
    ("sat", "sit"),
    ("saw", "see"),
    ("seen", "see"),
    ("sent", "send"),
    ("shaken", "shake"),
    ("shone", "shine"),
    ("shook", "shake"),
    ("shrank", "shrink"),
    ("slept", "sleep"),
    ("slid", "slide"),
    ("sold", "sell"),
    ("sought", "seek"),
    ("sped", "speed"),
    ("spent", "spend"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("sprang", "spring"),
    ("spun", "spin"),
    ("stole", "steal"),
    ("stolen", "steal"),
    ("stood", "stand"),
    ("strove", "strive"),
    ("struck", "strike"),
    ("stung", "sting"),
    ("sung", "sing"),
    ("sunk", "sink"),
    ("swam", "swim"),
    ("swept", "sweep"),
    ("swore", "swear"),
    ("sworn", "swear"),
    ("swum", "swim"),
    ("swung", "swing"),
    ("taken", "take"),
    ("taught", "teach"),
    ("teeth", "tooth"),
    ("thought", "think"),
    ("threw", "throw"),
    ("thrown", "throw"),
    ("told", "tell"),
    ("took", "take"),
    ("tore", "tear"),
    ("torn", "tear"),
    ("understood", "understand"),
    ("undertook", "undertake"),
    ("upheld", "uphold"),
    ("went", "go"),
    ("wept", "weep"),
    ("withdrew", "withdraw"),
    ("withheld", "withhold"),
    ("woke", "wake"),
    ("woken", "wake"),
    ("women", "woman"),
    ("won", "win"),
    ("wore", "wear"),
    ("worn", "wear"),
    ("wove", "weave"),
    ("woven", "weave"),
    ("written", "write"),
    ("wrote", "write"),
];

/// Every irregular form and its word.
pub fn forms() -> impl Iterator<Item = (&'static str, &'static str)> {
    FORMS.iter().copied()
}

/// The word `word` (lowercase ASCII) is an irregular form of, if it is one.
pub fn base_of(word: &str) -> Option<&'static str> {
    FORMS
        .binary_search_by(|(form, _)| (*form).cmp(word))
        .ok()
        .map(|i| FORMS[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_sorted_and_unique_so_every_one_is_found() {
        for pair in FORMS.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{:?} before {:?}", pair[0], pair[1]);
        }
        for (form, base) in FORMS {
            assert_eq!(base_of(form), Some(*base));
        }
    }

    #[test]
    fn regular_words_and_bases_are_not_forms() {
        assert_eq!(base_of("make"), None);
        assert_eq!(base_of("planned"), None);
        assert_eq!(base_of("bit"), None);
    }
}
