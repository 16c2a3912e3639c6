//! Files under `.vouch/`: where they live, how they are written, read and locked.

pub mod atomic;
pub mod layout;
pub mod lock;
pub mod nofollow;
pub mod yaml;

pub use layout::{Dir, Layout};

/// Which file this is on this machine (device and inode): a copy, or a
/// file that came with a clone, is another file.
pub(crate) fn file_identity(path: &std::path::Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(format!("{}:{}", m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let created = m
            .created()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some(format!("created:{}", created.as_nanos()))
    }
}

/// A file's modification time in nanoseconds since the epoch (0 when the
/// file system does not say): half of the signature by which the index
/// and the pending-queue cache tell a file changed.
pub(crate) fn mtime_ns(m: &std::fs::Metadata) -> i64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}
