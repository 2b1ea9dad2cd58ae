//! Communities: a pass clusters the team's eligible relationships (Leiden, in
//! `mnem_core::graph::community`) and keeps them as the team's next version; people list
//! them; a recall that asks shows the ones around its results, only in result slots the
//! direct ranking left unused and only within the byte budget it left, in their own
//! field. A community is never evidence and never moves a result.

use mnem_core::graph::{
    detect_communities, fill_unused_slots, fingerprint, Community, DiscoveryPath, GraphEdge,
};
use mnem_core::{Actor, EntityId, RecallHit, RecallQuery};
use mnem_store::{CommunityFilter, Degradation, GraphStore, SearchIndex, StoreError};
use serde::Serialize;

use crate::dream::DREAM_INPUT_LIMIT;
use crate::{Memory, Result};

/// How many community summaries a recall shows at most (fewer when fewer slots are free).
pub const MAX_COMMUNITY_SUMMARIES: usize = 3;

/// What one community pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CommunityReport {
    /// Eligible relationships read.
    pub relationships: usize,
    /// Communities found (and kept, unless unchanged).
    pub communities: usize,
    /// The team's community version after the pass.
    pub version: i64,
    /// False when the communities were the ones already held (the version stays).
    pub changed: bool,
}

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// Recomputes the team's communities from its eligible relationships (the same ones
    /// a dream pass reads: discoverable, between two entities, proven by a current team
    /// evidence item) and keeps them as a new version when they changed.
    pub async fn compute_communities(&self, actor: &Actor) -> Result<CommunityReport> {
        let relationships = self.store().dream_inputs(actor, DREAM_INPUT_LIMIT).await?;
        let found = detect_communities(&relationships).map_err(StoreError::backend)?;
        let communities = found.len();
        let print = fingerprint(&found);
        let pass = self
            .store()
            .record_communities(actor, found, print, relationships.len())
            .await?;
        Ok(CommunityReport {
            relationships: relationships.len(),
            communities,
            version: pass.version,
            changed: pass.changed,
        })
    }

    /// The team's current communities, largest first.
    pub async fn communities(&self, actor: &Actor, limit: usize) -> Result<Vec<Community>> {
        let filter = CommunityFilter {
            entities: None,
            limit,
        };
        Ok(self.store().communities(actor, filter).await?)
    }

    /// The communities holding the entities around a recall — the discovery paths'
    /// endpoints, those of the relationships the returned evidence proves (`near`), and
    /// the ones the caller expanded from — the most matched first, filling only the
    /// slots and bytes the results left ([`fill_unused_slots`]). A failed read (or a
    /// failed `near` read) is recorded as a degraded `communities` branch and answered
    /// with none: this field is optional.
    pub(crate) async fn community_summaries(
        &self,
        actor: &Actor,
        query: &RecallQuery,
        hits: &[RecallHit],
        near: &std::result::Result<Vec<GraphEdge>, String>,
        paths: &[DiscoveryPath],
        degraded: &mut Vec<Degradation>,
    ) -> Vec<Community> {
        let slots = query.limit.saturating_sub(hits.len());
        let bytes_left = query
            .context_bytes
            .saturating_sub(hits.iter().map(RecallHit::bytes).sum());
        if slots == 0 || bytes_left == 0 {
            return Vec::new();
        }
        let lookup = async {
            let near = near.as_ref().map_err(|reason| reason.clone())?;
            let mut entities: Vec<EntityId> = near
                .iter()
                .map(|e| &e.relationship)
                .flat_map(|r| [Some(r.subject.entity_id), r.object.entity_id()])
                .chain(paths.iter().flat_map(|p| {
                    p.relationships
                        .iter()
                        .flat_map(|e| [Some(e.subject.entity_id), e.object.entity_id()])
                }))
                .flatten()
                .chain(query.expand_from_entity_ids.iter().copied())
                .collect();
            entities.sort_unstable();
            entities.dedup();
            if entities.is_empty() {
                return Ok(Vec::new());
            }
            let filter = CommunityFilter {
                entities: Some(entities),
                // A few spare: one too long for the bytes left leaves room for the next.
                limit: 2 * MAX_COMMUNITY_SUMMARIES,
            };
            self.store()
                .communities(actor, filter)
                .await
                .map_err(|err| err.to_string())
        };
        match lookup.await {
            Ok(found) => {
                let mut shown = fill_unused_slots(query.limit, hits.len(), bytes_left, found);
                shown.truncate(MAX_COMMUNITY_SUMMARIES);
                shown
            }
            Err(reason) => {
                self.omit_optional("communities", reason, degraded).await;
                Vec::new()
            }
        }
    }
}
