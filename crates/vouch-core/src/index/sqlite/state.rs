//! What the SQLite index keeps for an opened knowledge base between calls:
//! the open index and its readers, the postings in memory, and the checks'
//! caches — beside what the keeper holds whatever the engine
//! ([`KeeperState`], which `IndexState` derefs to). Private to this
//! folder: everyone else asks the [`crate::index::DerivedIndex`].

use super::postings::Memory;
use super::{OpenIndex, Readers};
use crate::index::keeper::KeeperState;
use std::sync::Mutex;

#[derive(Default)]
pub(crate) struct IndexState {
    pub(crate) index: Mutex<Option<OpenIndex>>,
    pub(crate) readers: Mutex<Readers>,
    /// The index's postings in memory, when a long-running process reads
    /// them (`postings::refresh`).
    pub(crate) memory: Memory,
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
    /// The vectors and their schedule, the options, the upkeep's wake-up.
    pub(crate) keeper: KeeperState,
}

impl std::ops::Deref for IndexState {
    type Target = KeeperState;
    fn deref(&self) -> &KeeperState {
        &self.keeper
    }
}
