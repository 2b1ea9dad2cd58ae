//! Memory packs at the service boundary: decoded and checked whole before the store
//! replays them, exported as the store reads them.

use mnem_core::pack::{Pack, PackSelection};
use mnem_core::Actor;
use mnem_store::{GraphStore, ImportMode, PackImport, SearchIndex, StoreError};

use crate::{Memory, Result};

impl<S: GraphStore + SearchIndex> Memory<S> {
    /// The actor's memory — team evidence and its own private evidence in every state but
    /// erased, with the relationships, entities and predicates they carry — sliced by
    /// `selection`, as a pack. Never vectors, never another profile's private text.
    ///
    /// With `max_bytes` the export stops, as [`StoreError::PackOverBound`], as soon as
    /// what it has read passes the bound.
    pub async fn export_pack(
        &self,
        actor: &Actor,
        selection: PackSelection,
        max_bytes: Option<usize>,
    ) -> Result<Pack> {
        Ok(self
            .store()
            .export_pack(actor, selection, max_bytes)
            .await?)
    }

    /// Reads a pack's text (every line checked, [`Pack::decode`]), screens its current
    /// items as every write is screened ([`Pack::hold_flagged`]: a flagged one lands
    /// held, counted in `evidence_held`) and replays it into the actor's team in one
    /// transaction: all of it or, with an error naming the line, nothing. Importing the same pack again changes nothing. Imported evidence waits for
    /// its vectors like any write (the embedding worker makes them).
    ///
    /// The caller vouches for the pack's authors: records keep their profiles (by name),
    /// so a transport offers this only to a principal that may act as any profile of the
    /// team — today the CLI's local user. A network import would need the admin scope.
    pub async fn import_pack(
        &self,
        actor: &Actor,
        text: &str,
        mode: ImportMode,
    ) -> Result<PackImport> {
        let mut pack = Pack::decode(text).map_err(StoreError::from)?;
        // Screened like every write: a pack's text is anyone's text (its manifest is a
        // checksum, not a signature).
        let held = pack.hold_flagged(self.store().clock().now());
        let mut import = self.store().import_pack(actor, pack, mode).await?;
        for id in &held {
            crate::log_held(*id, "screening at import");
        }
        import.evidence_held = held.len();
        Ok(import)
    }
}
