//! Files under `.vouch/`: where they live, how they are written, read and locked.

pub mod atomic;
pub mod layout;
pub mod lock;
pub mod nofollow;
mod plain_yaml;
pub mod queue;
pub mod yaml;

pub use layout::{Dir, Layout};

/// Which file (or folder) this is on this machine: its device and inode
/// and, where the file system records it, when it was made. A copy, or a
/// file that came with a clone, is another file — even one that lands on
/// the inode a removed file had (`rm state.db; cp other state.db`).
pub(crate) fn file_identity(path: &std::path::Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let born = born_ns(&m).map(|n| format!("@{n}")).unwrap_or_default();
        Some(format!("{}:{}{born}", m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        Some(format!("created:{}", born_ns(&m)?))
    }
}

/// When the file was made, in nanoseconds since the epoch, where the file
/// system records it.
pub(crate) fn born_ns(m: &std::fs::Metadata) -> Option<u128> {
    let t = m.created().ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos())
}

/// File timestamps tick coarsely (often 1-4 ms), so a second write in the
/// same tick keeps the mtime. Anything modified this recently is read
/// again rather than trusted by its signature (git's "racy" rule).
pub(crate) const RACY_NS: i64 = 2_000_000_000;

/// A time (ns since the epoch) after which a change is within [`RACY_NS`]
/// of now: the file system's clock, not the injected one.
pub(crate) fn racy_after() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
        - RACY_NS
}

/// When the inode last changed, in nanoseconds (0 where the platform does
/// not say): unlike the mtime, no one can set it back.
pub(crate) fn changed_ns(m: &std::fs::Metadata) -> i64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        m.ctime() * 1_000_000_000 + m.ctime_nsec()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        0
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

#[cfg(test)]
mod tests {
    /// A file removed and made again at the same path is another file,
    /// even when it lands on the inode the first one had: where the file
    /// system records birth times, the identity holds it.
    #[test]
    fn a_file_made_again_in_place_is_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        std::fs::write(&path, b"first").unwrap();
        let first = super::file_identity(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(&path, b"second").unwrap();
        let second = super::file_identity(&path).unwrap();
        let born = std::fs::metadata(&path).unwrap().created().is_ok();
        if born {
            assert_ne!(first, second);
        } else {
            // Device and inode only: a reused inode goes unnoticed here.
            assert!(!second.contains('@'), "{second}");
        }
        // The same file keeps its identity.
        assert_eq!(super::file_identity(&path).unwrap(), second);
    }
}
