//! The regression smoke run of every fuzz target: each committed seed (and each input a
//! long AFL++ run found and was committed under `corpus/<target>/`) through its target
//! once. Fast and deterministic, so CI runs it on every change.

use mnem_fuzz::corpus;
use mnem_fuzz::targets::TARGETS;

#[test]
fn every_committed_seed_passes_its_target() {
    let mut broken = Vec::new();
    for target in TARGETS {
        let seeds = corpus(target.corpus);
        for (i, seed) in seeds.iter().enumerate() {
            if let Err(why) = (target.run)(seed.as_bytes()) {
                broken.push(format!("{} seed {i}: {why}", target.name));
            }
        }
        println!("{}: {} seeds", target.name, seeds.len());
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn every_target_has_a_corpus_and_a_unique_name() {
    let mut names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), TARGETS.len());
    for target in TARGETS {
        assert!(!corpus(target.corpus).is_empty(), "{}", target.name);
    }
}
