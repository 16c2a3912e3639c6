//! One exclusive lock per knowledge base. Every mutation holds it, so two
//! processes never interleave a read-check-write; readers never need it
//! because every write is an atomic rename.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::path::Path;

/// The KB's write lock, held for as long as this value lives.
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
