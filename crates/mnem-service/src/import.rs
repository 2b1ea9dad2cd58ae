//! Bringing existing memory in: items a reader (`mnem_core::import`) made, written in
//! batches — one transaction each, screened like any write — with a count of what
//! happened to each. A batch the store refuses is retried item by item, so one bad item
//! is reported where it came from and the rest are kept. A re-run after an interruption
//! writes what is missing: an item the team holds already (same text, source, place and
//! time) is answered as a replay and counted as already stored.

use mnem_core::dedup::Duplicate;
use mnem_core::import::{Document, ImportItem, ImportProblem};
use mnem_core::{Actor, LifecycleState, RecallQuery, Scope};
use mnem_store::{GraphStore, Remembered, SearchIndex, StoreError};
use serde::Serialize;

use crate::{Memory, Result, ServiceError};

/// Items per transaction, unless the caller says otherwise.
pub const IMPORT_BATCH: usize = 500;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ImportReport {
    /// Items the readers made (documents skipped as unchanged not counted).
    pub items: usize,
    /// Written as new evidence, current.
    pub stored: usize,
    /// Held by screening (stored `quarantined`, for review).
    pub quarantined: usize,
    /// Stored `superseded`: the team holds a newer revision of its source.
    pub superseded: usize,
    /// Held already, from this source at this place and time: nothing written.
    pub already_stored: usize,
    /// The same text the team held from elsewhere: recorded as another write of it.
    pub merged: usize,
    /// Documents whose exact text the team holds current under the same path.
    pub unchanged_documents: usize,
    /// What could not be read or written, where.
    pub failed: Vec<ImportProblem>,
}

impl ImportReport {
    fn count(&mut self, answer: &Remembered) {
        match (answer.duplicate, answer.evidence.state) {
            (Some(Duplicate::Replay), _) => self.already_stored += 1,
            (Some(Duplicate::Alias), _) => self.merged += 1,
            (None, LifecycleState::Quarantined) => self.quarantined += 1,
            (None, LifecycleState::Superseded) => self.superseded += 1,
            (None, _) => self.stored += 1,
        }
    }
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// Writes `items` in transactions of at most `batch`, counting into `report` and
    /// calling `progress` with the items done after each. A refused batch is retried
    /// item by item; an item refused alone is a failure at its location. Any other store
    /// error stops the import (what was written stays; a re-run resumes).
    pub async fn import_items(
        &self,
        actor: &Actor,
        items: Vec<ImportItem>,
        batch: usize,
        report: &mut ImportReport,
        progress: &(dyn Fn(usize) + Send + Sync),
    ) -> Result<()> {
        report.items += items.len();
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let chunk: Vec<ImportItem> = items.by_ref().take(batch.max(1)).collect();
            let evidence = chunk.iter().map(|i| i.evidence.clone()).collect();
            match self.remember_batch(actor, evidence).await {
                Ok(answers) => answers.iter().for_each(|a| report.count(a)),
                Err(err) if is_refusal(&err) => {
                    for item in &chunk {
                        match self.remember(actor, item.evidence.clone()).await {
                            Ok(answer) => report.count(&answer),
                            Err(err) if is_refusal(&err) => report.failed.push(ImportProblem {
                                at: item.at.clone(),
                                reason: err.to_string(),
                            }),
                            Err(err) => return Err(err),
                        }
                    }
                }
                Err(err) => return Err(err),
            }
            progress(chunk.len());
        }
        Ok(())
    }

    /// Whether the team holds `doc`'s exact text current under its path in `scope`:
    /// importing it there again would change nothing. (Held under another scope, it is
    /// written again — a newer revision of its path, which moves it to `scope` — so a
    /// recall in `scope` finds it.)
    pub async fn holds_document(
        &self,
        actor: &Actor,
        doc: &Document,
        scope: &Scope,
    ) -> Result<bool> {
        let query = RecallQuery {
            refs: vec![doc.content_ref()],
            scope: Some(scope.clone()),
            window: 0,
            limit: 50,
            ..RecallQuery::default()
        };
        let recall = self.recall(actor, query).await?;
        Ok(recall
            .hits
            .iter()
            .any(|hit| hit.evidence.source_key.as_deref() == Some(doc.path.as_str())))
    }
}

/// A store's refusal of the input (bad or conflicting data), as opposed to a failure of
/// the store itself.
fn is_refusal(err: &ServiceError) -> bool {
    matches!(
        err,
        ServiceError::Store(StoreError::Invalid(_) | StoreError::Conflict(_))
    )
}
