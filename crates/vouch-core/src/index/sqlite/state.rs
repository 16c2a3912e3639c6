//! What the SQLite index keeps for an opened knowledge base between calls:
//! the open index and its readers, the postings and the vectors in memory,
//! and which documents changed since the vectors last looked. Private to
//! this folder: everyone else asks the [`crate::index::DerivedIndex`].

use super::embed::Vectors;
use super::postings::Memory;
use super::{OpenIndex, Readers};
use crate::index::IndexOptions;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, RwLock};

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
    /// them (`postings::refresh`).
    pub(crate) memory: Memory,
    /// How this process keeps the index (set once, at start).
    options: RwLock<IndexOptions>,
    /// A search found documents without vectors and asks the background
    /// step (a server's refresher) to embed them now.
    pub(crate) upkeep_asked: Mutex<bool>,
    pub(crate) upkeep_wake: Condvar,
    /// What the audit log lines that rows of `admitted` and `written`
    /// were checked against say ([`crate::index::admission::proof`]), for
    /// every connection.
    pub(crate) proofs: crate::index::admission::Proofs,
    /// What each file a hit came from derives ([`super::backed`]), by
    /// (kind, id), with the signature and change time it had, for every
    /// connection: a reader's connection lives for one request, and its
    /// hits' files would be parsed again by the next.
    pub(crate) derived:
        Mutex<std::collections::HashMap<(String, String), super::backed::FileDerived>>,
}

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
            options: RwLock::default(),
            upkeep_asked: Mutex::new(false),
            upkeep_wake: Condvar::new(),
            proofs: Default::default(),
            derived: Mutex::default(),
        }
    }
}

impl IndexState {
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
