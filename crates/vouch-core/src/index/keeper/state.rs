//! What the index keeper holds for an opened knowledge base between
//! calls, whatever the engine: the vectors in memory and the schedule that
//! keeps them in step (which documents changed since they last looked, who
//! is embedding), how this process keeps the index, and the background
//! step's wake-up.

use crate::error::Result;
use crate::index::memory::Vectors;
use crate::index::{Currency, IndexOptions, Near};
use crate::model::DocKind;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

/// Beyond this many documents changed at once, the vectors look at all.
const MAX_TRACKED_CHANGES: usize = 5000;

pub(crate) struct KeeperState {
    /// Moves whenever the index's documents change (sync, write, rebuild),
    /// so the vectors know when to look again.
    generation: AtomicU64,
    /// Which documents changed since the vectors last looked (`None`: too
    /// many, or unknown — look at all of them).
    pub(crate) doc_changes: Mutex<Option<Vec<(String, String)>>>,
    /// The in-memory vectors of the embedding model, when loaded.
    pub(crate) vectors: RwLock<Option<Vectors>>,
    /// Held while the vectors are brought in step (one thread at a time).
    pub(crate) embedding: Mutex<()>,
    /// How this process keeps the index (set once, at start).
    options: RwLock<IndexOptions>,
    /// A read found documents without vectors and asks the background
    /// step (a server's keeper thread) for a round now.
    pub(crate) upkeep_asked: Mutex<bool>,
    pub(crate) upkeep_wake: Condvar,
    /// Another process wrote where the watcher cannot see it: the next
    /// round catches up with the files even while watching.
    pub(crate) changed_elsewhere: std::sync::atomic::AtomicBool,
}

impl Default for KeeperState {
    fn default() -> Self {
        KeeperState {
            generation: AtomicU64::new(1),
            doc_changes: Mutex::new(None),
            vectors: RwLock::new(None),
            embedding: Mutex::new(()),
            options: RwLock::default(),
            upkeep_asked: Mutex::new(false),
            upkeep_wake: Condvar::new(),
            changed_elsewhere: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl KeeperState {
    /// Mark a change another process made where the watcher cannot see it,
    /// and wake the keeper for a round.
    pub(crate) fn note_changed_elsewhere(&self) {
        use std::sync::atomic::Ordering;
        self.changed_elsewhere.store(true, Ordering::SeqCst);
        let mut asked = self.upkeep_asked.lock().unwrap_or_else(|e| e.into_inner());
        *asked = true;
        self.upkeep_wake.notify_all();
    }
    /// Whether a change elsewhere was noted since last asked (clears it).
    pub(crate) fn take_changed_elsewhere(&self) -> bool {
        self.changed_elsewhere
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }
    pub(crate) fn options(&self) -> IndexOptions {
        *self.options.read().unwrap_or_else(|e| e.into_inner())
    }
    pub(crate) fn configure(&self, options: IndexOptions) {
        *self.options.write().unwrap_or_else(|e| e.into_inner()) = options;
    }
    /// The vectors in memory, for reading (`None` until a model's load).
    pub(crate) fn read_vectors(&self) -> std::sync::RwLockReadGuard<'_, Option<Vectors>> {
        self.vectors.read().unwrap_or_else(|e| e.into_inner())
    }
    /// The vectors in memory, for changing them.
    pub(crate) fn write_vectors(&self) -> std::sync::RwLockWriteGuard<'_, Option<Vectors>> {
        self.vectors.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Documents still without vectors, as the vectors in memory say (none
    /// before a model's load).
    pub(crate) fn pending(&self) -> usize {
        self.read_vectors().as_ref().map_or(0, |v| v.pending())
    }

    /// Documents with vectors and documents still without, in memory.
    pub(crate) fn counts(&self) -> (usize, usize) {
        self.read_vectors()
            .as_ref()
            .map_or((0, 0), |v| (v.documents(), v.pending()))
    }

    /// The `want` documents nearest `query` in memory, best first (none
    /// before a model's load).
    pub(crate) fn nearest(
        &self,
        query: &[f32],
        kinds: &[DocKind],
        currency: Currency,
        want: usize,
    ) -> Result<Vec<Near>> {
        let guard = self.read_vectors();
        let Some(vectors) = guard.as_ref() else {
            return Ok(Vec::new());
        };
        Ok(vectors
            .nearest(query, kinds, currency, want)?
            .into_iter()
            .filter_map(|(k, s)| {
                Some((
                    DocKind::parse(k.kind)?,
                    k.id.to_string(),
                    k.status.map(str::to_string),
                    s,
                ))
            })
            .collect())
    }

    /// The cosine of one document's best chunk with `query`, if embedded.
    pub(crate) fn similarity(&self, kind: DocKind, id: &str, query: &[f32]) -> Result<Option<f32>> {
        match self.read_vectors().as_ref() {
            Some(v) => v.similarity(kind.as_str(), id, query),
            None => Ok(None),
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// The index's documents changed — these ones, or (`None`) any: the
    /// vectors look again next time, at just these when they are known.
    pub(crate) fn changed(&self, docs: Option<Vec<(String, String)>>) {
        {
            let mut changes = self.doc_changes.lock().unwrap_or_else(|e| e.into_inner());
            match (changes.as_mut(), docs) {
                (Some(list), Some(more)) if list.len() + more.len() <= MAX_TRACKED_CHANGES => {
                    list.extend(more)
                }
                _ => *changes = None,
            }
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

/// The keeper's view of one call: the files, what the keeper holds, and
/// the engine's main connection (through [`crate::index::engine::MainConn`]).
#[derive(Clone, Copy)]
pub(crate) struct Keep<'a> {
    store: &'a crate::stored::Store,
    /// Named as the engine's state is, so the schedule reads the same.
    pub(crate) index_state: &'a KeeperState,
    pub(crate) main: &'a dyn crate::index::engine::MainConn,
}

impl<'a> Keep<'a> {
    pub(crate) fn new(
        store: &'a crate::stored::Store,
        index_state: &'a KeeperState,
        main: &'a dyn crate::index::engine::MainConn,
    ) -> Keep<'a> {
        Keep {
            store,
            index_state,
            main,
        }
    }
    pub(crate) fn index_upkeep(&self) -> crate::index::IndexUpkeep {
        self.index_state.options().upkeep
    }
}

impl std::ops::Deref for Keep<'_> {
    type Target = crate::stored::Store;
    fn deref(&self) -> &crate::stored::Store {
        self.store
    }
}
