//! Credit from one result to other items: the rule follow-on credit and the entity hop
//! share. A giver's credit is a share of its score *before* any credit is given, so credit
//! never chains; an item keeps the best credit it earns and names its giver; an item that
//! was not a candidate joins the results at score 0 and must pass the reader's eligibility
//! and the query's anchors like any other; the floor and the order contract come last.

use std::collections::{HashMap, HashSet};

use super::{floor_and_order, hit, RecallHit, RecallPlan, ScoreComponents};
use crate::{Actor, Evidence, EvidenceId, Score};

/// Credit earned so far in one stage, not yet given.
pub(crate) struct Credit {
    present: HashSet<EvidenceId>,
    best: HashMap<EvidenceId, (f64, EvidenceId)>,
    newcomers: Vec<Evidence>,
}

impl Credit {
    /// Credit over `hits`, the stage's candidates.
    pub(crate) fn new(hits: &[RecallHit]) -> Self {
        Self {
            present: hits.iter().map(|hit| hit.evidence.id).collect(),
            best: HashMap::new(),
            newcomers: Vec::new(),
        }
    }

    /// `item` earns `earned` from `giver`, kept if it is its best so far. `record` is asked
    /// only when `item` is not a candidate yet, to add it; an item without one earns
    /// nothing (the store did not return it, so it cannot be shown).
    pub(crate) fn give<'a>(
        &mut self,
        item: EvidenceId,
        record: impl FnOnce() -> Option<&'a Evidence>,
        earned: f64,
        giver: EvidenceId,
    ) {
        if !self.present.contains(&item) {
            let Some(record) = record() else {
                return;
            };
            self.present.insert(item);
            self.newcomers.push(record.clone());
        }
        let best = self.best.entry(item).or_insert((0.0, giver));
        if earned > best.0 {
            *best = (earned, giver);
        }
    }

    /// Gives the credit: newcomers that `actor` may recall and that satisfy the query's
    /// anchors join `hits`, each credited hit rises to its credit (recorded by `mark` as
    /// who gave it), and the hits come back floored and in the order contract's order.
    /// `what` names the newcomers in the debug check that the store returned only
    /// eligible items.
    pub(crate) fn settle(
        self,
        mut hits: Vec<RecallHit>,
        plan: &RecallPlan,
        actor: &Actor,
        what: &str,
        mark: impl Fn(&mut ScoreComponents, EvidenceId),
    ) -> Vec<RecallHit> {
        let newcomers = self.newcomers.into_iter().filter(|item| {
            let eligible = plan.query.admits(item, actor, plan.now);
            debug_assert!(eligible, "backend returned an ineligible {what}");
            eligible && plan.anchors.iter().all(|a| a.satisfied_by(item))
        });
        hits.extend(
            newcomers.map(|item| hit(item, Score::from_unit(0.0), ScoreComponents::default())),
        );
        for hit in &mut hits {
            if let Some(&(earned, giver)) = self.best.get(&hit.evidence.id) {
                if earned > hit.score.value() {
                    hit.score = Score::from_unit(earned);
                    mark(&mut hit.components, giver);
                }
            }
        }
        floor_and_order(&mut hits, plan);
        hits
    }
}
