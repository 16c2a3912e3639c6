//! [`SqliteIndex`]: the [`DerivedIndex`] kept in `state.db` — what `Kb`
//! holds unless told otherwise. Each method opens an [`Ix`] on the state
//! it keeps and calls the folder's functions.

use super::{IndexState, Ix};
use crate::error::Result;
use crate::index::keeper::vectors as embed;
use crate::index::memory::Vectors;
use crate::index::{
    Budget, Currency, EmbedStats, Freshness, IndexOptions, Near, Query, RebuildResult, SearchHit,
    SyncStats, Watcher, Watching,
};
use crate::model::{DocKind, Written};
use crate::services::Embedder;
use crate::stored::Store;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// The SQLite index of one opened knowledge base.
#[derive(Default)]
pub struct SqliteIndex {
    /// Shared with the watcher's thread, which keeps the same index.
    state: Arc<IndexState>,
}

impl SqliteIndex {
    fn at<'a>(&'a self, store: &'a Store) -> Ix<'a> {
        Ix::new(store, &self.state)
    }

    /// Bytes the postings in memory hold (approximately), for benchmarks.
    pub fn postings_bytes(&self) -> usize {
        super::postings::postings_bytes(&self.state)
    }

    /// `f` on the vectors as a search reads them (loaded on first use): for
    /// benchmarks that look at the scan itself. `None` with nothing embedded.
    pub fn read_vectors_with<R>(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        f: impl FnOnce(&Vectors) -> R,
    ) -> Result<Option<R>> {
        embed::read_with(&self.at(store).keep(), embedder, f)
    }

    /// For benchmarks only: random vectors for every document without
    /// one, under the stored vectors' model (`vouch-bench fill-vectors`;
    /// see the engine's `fill_random_vectors`). The documents filled, the
    /// dimensions and the model; `None` with no vector stored yet.
    pub fn fill_random_vectors(&self, store: &Store) -> Result<Option<(usize, usize, String)>> {
        crate::index::Upkeep::catch_up(self, store)?;
        let slot = self.state.index.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(open) => open.index.fill_random_vectors(),
            None => Err(super::not_caught_up()),
        }
    }

    /// This process's state, for tests that look inside.
    #[cfg(test)]
    pub(crate) fn state(&self) -> &IndexState {
        &self.state
    }
}

impl crate::index::DerivedIndex for SqliteIndex {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
impl crate::index::Configured for SqliteIndex {
    fn configure(&self, options: IndexOptions) {
        self.state.configure(options);
    }
    fn options(&self) -> IndexOptions {
        self.state.options()
    }

    fn is_open(&self) -> bool {
        super::is_open(&self.state)
    }
    fn caught_up_at(&self) -> Option<std::time::Instant> {
        self.state
            .readers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .synced_at
    }
}

impl crate::index::WriteHook for SqliteIndex {
    fn written(&self, store: &Store, written: &[Written]) {
        super::after_write(&self.at(store), written);
        self.state.changed(Some(
            written
                .iter()
                .map(|w| {
                    let (kind, id) = w.key();
                    (kind.to_string(), id.to_string())
                })
                .collect(),
        ));
    }
    fn embed_written(&self, store: &Store, embedder: &Arc<dyn Embedder>) {
        embed::after_write(&self.at(store).keep(), embedder);
    }
}

impl crate::index::Upkeep for SqliteIndex {
    fn catch_up(&self, store: &Store) -> Result<SyncStats> {
        super::catch_up(&self.at(store))
    }
    fn open_built(&self, store: &Store) -> Result<bool> {
        super::open_built(&self.at(store))
    }
    fn refresh_postings(&self, store: &Store) -> Result<()> {
        super::postings::refresh(&self.at(store))
    }
    fn rebuild(&self, store: &Store) -> Result<RebuildResult> {
        super::rebuild(&self.at(store))
    }
    fn embed(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Budget,
        wait: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<EmbedStats>> {
        embed::ensure(&self.at(store).keep(), embedder, budget, wait, progress)
    }
    fn wait_for_upkeep(&self, at_most: Duration) {
        embed::wait_for_upkeep(&self.state.keeper, at_most);
    }
    fn changed_elsewhere(&self) {
        self.state.keeper.note_changed_elsewhere();
    }
    fn take_changed_elsewhere(&self) -> bool {
        self.state.keeper.take_changed_elsewhere()
    }
    fn start_watching(&self, store: Arc<Store>) -> Result<Watching> {
        super::watch::start(
            store,
            self.state.clone() as std::sync::Arc<dyn crate::index::engine::WatchTarget>,
        )
    }
    fn watcher(&self, store: &Store) -> Option<Watcher> {
        super::watch::watcher(store)
    }
}

impl crate::index::LexicalIndex for SqliteIndex {
    fn lexical(&self, store: &Store, q: &Query) -> Result<Vec<SearchHit>> {
        super::fts_search(&self.at(store), q)
    }
    fn texts_and_confidence(
        &self,
        store: &Store,
        keys: &[(DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        super::with_index(&self.at(store), |idx| {
            keys.iter()
                .map(|(kind, id, with_text)| {
                    Ok(idx
                        .text_and_confidence(kind.as_str(), id, *with_text)?
                        .unwrap_or_default())
                })
                .collect()
        })
    }
}

impl crate::index::VectorIndex for SqliteIndex {
    fn vectors_for_read(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Duration,
    ) -> Result<usize> {
        embed::before_read(&self.at(store).keep(), embedder, budget)?;
        Ok(self.state.keeper.pending())
    }
    fn vector_counts(&self, store: &Store, embedder: &Arc<dyn Embedder>) -> Result<(usize, usize)> {
        embed::for_read(&self.at(store).keep(), embedder)?;
        Ok(self.state.keeper.counts())
    }
    fn nearest(
        &self,
        query: &[f32],
        kinds: &[DocKind],
        currency: Currency,
        want: usize,
    ) -> Result<Vec<Near>> {
        self.state.keeper.nearest(query, kinds, currency, want)
    }
    fn similarity(&self, kind: DocKind, id: &str, query: &[f32]) -> Result<Option<f32>> {
        self.state.keeper.similarity(kind, id, query)
    }
    fn text_shas(&self, store: &Store) -> Result<HashSet<String>> {
        embed::text_shas(&self.at(store).keep())
    }
}

impl crate::index::IndexChecks for SqliteIndex {
    fn freshness(&self, store: &Store) -> Result<Option<Freshness>> {
        super::freshness(&self.at(store))
    }
    fn unbacked(
        &self,
        store: &Store,
        hits: &[(DocKind, &str)],
    ) -> Result<HashSet<(DocKind, String)>> {
        if hits.is_empty() {
            return Ok(HashSet::new());
        }
        super::unbacked(&self.at(store), hits)
    }
    fn stray_rows(&self, store: &Store) -> Result<Vec<(String, String, String)>> {
        let ix = self.at(store);
        super::with_index(&ix, |idx| idx.stray_rows(&ix))
    }
    fn unaudited(
        &self,
        store: &Store,
        objects: &[(crate::store::Dir, &str)],
        strict: bool,
    ) -> Result<HashSet<(crate::store::Dir, String)>> {
        let ix = self.at(store);
        super::with_index(&ix, |idx| idx.unaudited(&ix, objects, strict))
    }
}
