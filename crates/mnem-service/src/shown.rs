//! What `show` and `trace` present: the records with the names of the profiles they
//! name (owners, actors), so a reader sees who rather than an id. Names come from the
//! caller's team only.

use std::collections::BTreeMap;

use mnem_core::dedup::Provenance;
use mnem_core::feedback::Usage;
use mnem_core::graph::Trace;
use mnem_core::{Actor, Evidence, EvidenceId, LifecycleEvent, ProfileId, RelationshipId};
use mnem_store::{GraphStore, GraphView, SearchIndex};
use serde::Serialize;

use crate::{Memory, Result};

/// One evidence item with its lifecycle history, its writes and its recall usage. Its
/// content is as every read returns it ([`Evidence::content_for_readers`]).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Shown {
    pub evidence: Evidence,
    /// Why the content shown differs from the stored text, when it does: the chat-template
    /// tokens escaped for readers (the store and an export keep them verbatim).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neutralised: Option<String>,
    pub history: Vec<LifecycleEvent>,
    pub writes: Vec<Provenance>,
    pub usage: Usage,
    /// The name of each profile these records name, by id.
    pub profiles: BTreeMap<ProfileId, String>,
}

/// Puts `evidence`'s content as readers get it, and says why when that changed it.
pub(crate) fn neutralised_for_readers(evidence: &mut Evidence) -> Option<String> {
    let tokens = mnem_core::screen::template_tokens(&evidence.content);
    if tokens.is_empty() {
        return None;
    }
    evidence.content = evidence.content_for_readers();
    Some(format!(
        "chat-template tokens escaped for readers: {}; stored verbatim",
        tokens.join(", ")
    ))
}

/// A relationship's trace with the names of the profiles it names.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamedTrace {
    #[serde(flatten)]
    pub trace: Trace,
    /// The name of each profile the trace names (owners, actors), by id.
    pub profiles: BTreeMap<ProfileId, String>,
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// One evidence item the actor can see, with everything `show` presents.
    pub async fn show(&self, actor: &Actor, id: EvidenceId) -> Result<Shown> {
        let store = self.store();
        let mut evidence = store.get(actor, id).await?;
        let neutralised = neutralised_for_readers(&mut evidence);
        let history = store.history(actor, id).await?;
        let writes = store.writes(actor, id).await?;
        let usage = store.usage(actor, id).await?;
        let named = std::iter::once(evidence.owner)
            .chain(history.iter().map(|e| e.actor))
            .chain(writes.iter().map(|w| w.owner));
        let profiles = self.profile_names(actor, named).await?;
        Ok(Shown {
            evidence,
            neutralised,
            history,
            writes,
            usage,
            profiles,
        })
    }

    /// A relationship's trace with the names of the profiles it names.
    pub async fn trace_named(
        &self,
        actor: &Actor,
        id: RelationshipId,
        view: GraphView,
    ) -> Result<NamedTrace> {
        let trace = self.trace(actor, id, view).await?;
        let named = std::iter::once(trace.relationship.owner_profile_id)
            .chain(trace.transitions.iter().map(|t| t.actor))
            .chain(
                trace
                    .conflicts
                    .iter()
                    .chain(&trace.supersedes)
                    .chain(&trace.superseded_by)
                    .map(|r| r.owner_profile_id),
            );
        let profiles = self.profile_names(actor, named).await?;
        Ok(NamedTrace { trace, profiles })
    }

    /// The names of the actor's team's profiles among `ids`.
    async fn profile_names(
        &self,
        actor: &Actor,
        ids: impl Iterator<Item = ProfileId>,
    ) -> Result<BTreeMap<ProfileId, String>> {
        let mut ids: Vec<ProfileId> = ids.collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(self
            .store()
            .profile_names(actor, ids)
            .await?
            .into_iter()
            .collect())
    }
}
