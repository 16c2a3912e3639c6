//! What retrieval keeps for an opened knowledge base between calls: the
//! open index and its readers, the postings and the vectors in memory, and
//! which documents changed since the vectors last looked. [`crate::Kb`]
//! holds one [`IndexState`] and never looks inside; only `retrieval` does.

use super::embed::Vectors;
use super::fts5::postings::Memory;
use super::{OpenIndex, Readers};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock};
use std::time::Duration;

/// Beyond this many documents changed at once, the vectors look at all.
const MAX_TRACKED_CHANGES: usize = 5000;

pub(crate) struct IndexState {
    pub(crate) index: Mutex<Option<OpenIndex>>,
    pub(crate) readers: Mutex<Readers>,
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
    /// The index's postings in memory, when a long-running process reads
    /// them (`retrieval::postings::refresh`).
    pub(crate) memory: Memory,
    /// How long a long-running process trusts its last index sync before
    /// stat-ing the files again (zero: every search re-checks).
    pub(crate) sync_interval: Duration,
    /// The last questions embedded, by (model, text), newest last: a
    /// search that asks again for current knowledge only, or an answer
    /// that weighs a term, does not run the model a second time.
    pub(crate) query_vectors: Mutex<std::collections::VecDeque<(String, String, Vec<f32>)>>,
    /// A search found documents without vectors and asks the background
    /// step (a server's refresher) to embed them now.
    pub(crate) upkeep_asked: Mutex<bool>,
    pub(crate) upkeep_wake: Condvar,
}

/// Questions whose vectors are kept ([`IndexState::query_vectors`]).
pub(crate) const QUERY_VECTORS_KEPT: usize = 16;

impl Default for IndexState {
    fn default() -> Self {
        IndexState {
            index: Mutex::new(None),
            readers: Mutex::default(),
            generation: AtomicU64::new(1),
            doc_changes: Mutex::new(None),
            vectors: RwLock::new(None),
            embedding: Mutex::new(()),
            memory: Memory::default(),
            sync_interval: super::SYNC_INTERVAL,
            query_vectors: Mutex::default(),
            upkeep_asked: Mutex::new(false),
            upkeep_wake: Condvar::new(),
        }
    }
}

impl IndexState {
    /// The vectors in memory, for reading (`None` until a model's load).
    pub(crate) fn read_vectors(&self) -> std::sync::RwLockReadGuard<'_, Option<Vectors>> {
        self.vectors.read().unwrap_or_else(|e| e.into_inner())
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
