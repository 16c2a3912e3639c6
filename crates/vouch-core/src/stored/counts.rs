//! `kb.status`'s counts of each folder's ids, kept while the folder's
//! stamp stays as it was ([`Store::count`]).

use super::Store;
use crate::error::{Error, Result};
use crate::store::Dir;
use std::path::Path;

impl Store {
    /// How many ids of a kind there are (the length of [`Store::ids`]).
    /// Adding or taking a name moves a folder's mtime and change time, so
    /// a count is kept with the folder's stamp (those two and its inode:
    /// a folder put in another's place is another) and listed again only
    /// once the stamp moved: a server asked for `kb.status` every few
    /// seconds lists a million claims' names once, not on every call
    /// (4.5–6.2 s each).
    pub fn count(&self, dir: Dir) -> Result<usize> {
        if dir == Dir::Proposed && self.shared_queue().is_some() {
            // Kept in a team's queue: no folder's stamp tells of it.
            return Ok(self.ids(dir)?.len());
        }
        self.counted(&self.layout.dir(dir), || Ok(self.ids(dir)?.len()))
    }

    /// [`Store::count`] of the sources ([`Store::source_ids`]).
    pub fn count_sources(&self) -> Result<usize> {
        self.counted(&self.layout.sources_dir(), || Ok(self.source_ids()?.len()))
    }

    fn counted(&self, folder: &Path, list: impl FnOnce() -> Result<usize>) -> Result<usize> {
        let stamp = match std::fs::metadata(folder) {
            Ok(m) => FolderStamp::of(&m),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(folder, e)),
        };
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, n)) = counts.get(folder)
            && *at == stamp
        {
            return Ok(*n);
        }
        #[cfg(test)]
        self.listings
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n = list()?;
        // A folder changed in the last two seconds may change again within
        // the same timestamp tick, its stamp unmoved: not kept (git's
        // "racy" rule), nor where the file system gives no time. The file
        // system's time, not the injected clock's.
        let latest = stamp.modified.max(stamp.changed);
        if stamp.modified > 0 && latest < crate::store::racy_after() {
            counts.insert(folder.to_path_buf(), (stamp, n));
        } else {
            counts.remove(folder);
        }
        Ok(n)
    }
}

/// What moves when a name is added to a folder or taken from it, or the
/// folder is replaced ([`Store::count`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct FolderStamp {
    modified: i64,
    /// The inode's change time (0 where the platform does not say).
    changed: i64,
    inode: u64,
}

impl FolderStamp {
    fn of(m: &std::fs::Metadata) -> FolderStamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(m);
        #[cfg(not(unix))]
        let inode = 0;
        FolderStamp {
            modified: crate::store::mtime_ns(m),
            changed: crate::store::changed_ns(m),
            inode,
        }
    }
}
