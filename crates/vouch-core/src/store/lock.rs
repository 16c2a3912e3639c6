//! One exclusive lock per knowledge base. Every mutation holds it, so two
//! processes never interleave a read-check-write; readers never need it
//! because every write is an atomic rename.
//!
//! Processes that do not share one machine's file locks (a team server's
//! replicas on several hosts, one working tree on a network volume) also
//! take a [`SharedLock`] first — always first, so no two orders meet.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// The audit chain's head a lock holder leaves behind: the id and hash of
/// the log's last event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The event's `id`.
    pub id: String,
    /// The event's `hash`.
    pub hash: String,
}

/// A lock that every process writing this knowledge base takes before the
/// file lock, where file locks do not reach them all: a team server's
/// database (`vouch-postgres`). It keeps the chain's head too, so a writer
/// whose view of the files is not the one the last holder left (a stale
/// network volume, another checkout) is refused before it writes.
pub trait SharedLock: Send + Sync {
    /// Where the lock lives, for messages; never a secret.
    fn describe(&self) -> String;
    /// Block until this process holds it.
    fn acquire(&self) -> Result<Box<dyn SharedHold>>;
    /// The head the last holder recorded, read without taking the lock
    /// (for `kb.doctor`): `Err` when the lock's home cannot be reached.
    fn peek_head(&self) -> Result<Option<ChainHead>>;
    /// Whether this process still holds the lock it took (a lock kept by
    /// a connection goes when the connection does): asked right before an
    /// audit append, so a writer that lost it logs nothing.
    fn still_held(&self) -> Result<bool>;
}

/// A held [`SharedLock`]. Dropped without [`SharedHold::release`], it is
/// released and the head it found stays.
pub trait SharedHold {
    /// The head the last holder recorded (`None`: nothing recorded yet).
    fn head(&self) -> Option<ChainHead>;
    /// Record `head` as the chain's head, then release.
    fn release(self: Box<Self>, head: ChainHead);
}

/// The KB's file lock, held for as long as this value lives.
pub struct KbLock {
    _file: File,
}

impl KbLock {
    /// Block until this process holds the KB's write lock.
    pub fn acquire(path: &Path) -> Result<KbLock> {
        let mut opts = OpenOptions::new();
        opts.create(true).truncate(false).read(true).write(true);
        // Never through a link (store::nofollow).
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(
            &mut opts,
            rustix::fs::OFlags::NOFOLLOW.bits() as i32,
        );
        let file = opts.open(path).map_err(|e| Error::io(path, e))?;
        file.lock().map_err(|e| Error::io(path, e))?;
        Ok(KbLock { _file: file })
    }
}
// Dropping the File releases the lock (the OS drops it with the descriptor).
