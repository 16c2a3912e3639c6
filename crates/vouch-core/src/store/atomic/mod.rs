//! The only writer of files under `.vouch/`: every write goes to a temp file
//! in the same folder, is fsynced, renamed over its target, and the folder is
//! fsynced. A crash leaves either the old file or the new one, never half.
//! Every folder between the KB root and a target must be a real folder, not
//! a link ([`nofollow::check_dirs`]), and the temp file is created
//! exclusively, so no write follows a link planted in a cloned repository.

use super::nofollow;
use crate::error::{Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

mod batch;
mod recover;

pub use batch::{Batch, STAGING_DIR, Staged};
pub use recover::{Recovery, recover};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_path(target: &Path) -> PathBuf {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Leading dot: listings skip temp files a crash may leave behind.
    target.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

pub(super) fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The folders from `root` to `target`'s folder are real folders, made
/// where missing (a fresh clone lacks every folder that was empty).
fn check_parent(root: &Path, target: &Path) -> Result<()> {
    nofollow::ensure_dirs(root, parent(target)).map_err(|e| Error::io(parent(target), e))
}

/// A new, exclusive temp file beside `target`.
fn open_temp(target: &Path) -> Result<(PathBuf, File)> {
    let tmp = temp_path(target);
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| Error::io(&tmp, e))?;
    Ok((tmp, f))
}

/// A new temp file beside `target`, filled by `fill` and fsynced; removed
/// again if anything fails.
fn temp_with(target: &Path, fill: impl FnOnce(&mut File) -> Result<()>) -> Result<PathBuf> {
    let (tmp, mut f) = open_temp(target)?;
    let res = fill(&mut f).and_then(|_| f.sync_all().map_err(|e| Error::io(&tmp, e)));
    if let Err(e) = res {
        drop(f);
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

fn write_temp(target: &Path, bytes: &[u8]) -> Result<PathBuf> {
    temp_with(target, |f| {
        f.write_all(bytes).map_err(|e| Error::io(target, e))
    })
}

/// fsync a directory so a rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// Replace (or create) `target`, beneath the KB `root`, with `bytes`, durably.
pub fn write(root: &Path, target: &Path, bytes: &[u8]) -> Result<()> {
    check_parent(root, target)?;
    write_with(target, |f| {
        f.write_all(bytes).map_err(|e| Error::io(target, e))
    })
}

/// Replace (or create) `target` with whatever `fill` streams into it,
/// durably. A failure removes the temp file and leaves `target` untouched.
/// Used directly for bundles, which are written outside `.vouch/` but with
/// the same care.
pub fn write_with(target: &Path, fill: impl FnOnce(&mut File) -> Result<()>) -> Result<()> {
    crate::fail::io_point("store.write").map_err(|e| Error::io(target, e))?;
    let tmp = temp_with(target, fill)?;
    if let Err(e) = fs::rename(&tmp, target) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(target, e));
    }
    sync_dir(parent(target))
}

/// Overwrite a derived hint file (e.g. the audit tip) with `bytes`, in
/// place: written at offset 0 of the one file, never fsynced — losing it
/// in a crash, or a reader catching it half written, costs only a rescan.
/// Not a temp file and a rename, as knowledge files are: that made two
/// directory entries per audit append, each waking every watcher of
/// `.vouch/`. Callers write records of one fixed length, so no stale tail
/// is left. A link in its place is removed, never written through (a
/// clone can plant one).
#[cfg(unix)]
pub fn write_hint(target: &Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let open = || {
        OpenOptions::new()
            .write(true)
            .create(true)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
            .open(target)
    };
    let f = match open() {
        Ok(f) => f,
        Err(_) if nofollow::is_link(target) => {
            fs::remove_file(target).map_err(|e| Error::io(target, e))?;
            open().map_err(|e| Error::io(target, e))?
        }
        Err(e) => return Err(Error::io(target, e)),
    };
    if !f.metadata().map_err(|e| Error::io(target, e))?.is_file() {
        return Err(Error::io(
            target,
            std::io::Error::other("a hint file must be a regular file"),
        ));
    }
    f.write_all_at(bytes, 0).map_err(|e| Error::io(target, e))
}

/// Elsewhere: a temp file renamed into place (a link there is replaced).
#[cfg(not(unix))]
pub fn write_hint(target: &Path, bytes: &[u8]) -> Result<()> {
    let (tmp, mut f) = open_temp(target)?;
    let res = f.write_all(bytes).map_err(|e| Error::io(&tmp, e));
    drop(f);
    if let Err(e) = res.and_then(|_| fs::rename(&tmp, target).map_err(|e| Error::io(target, e))) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

/// Create `target` with `bytes`, durably, failing with `Ok(false)` if it
/// already exists (the hard link is the atomic "create if absent").
pub fn create_new(root: &Path, target: &Path, bytes: &[u8]) -> Result<bool> {
    check_parent(root, target)?;
    crate::fail::io_point("store.write").map_err(|e| Error::io(target, e))?;
    let tmp = write_temp(target, bytes)?;
    let linked = fs::hard_link(&tmp, target);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(parent(target))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(target, e)),
    }
}

/// Remove a file durably; a file already gone is not an error.
pub fn remove(root: &Path, target: &Path) -> Result<()> {
    if remove_unsynced(root, target)? {
        sync_dir(parent(target))?;
    }
    Ok(())
}

/// Remove a file, never through a linked folder, without waiting for the
/// removal to be durable (for a file whose return after a crash is
/// harmless); a file already gone is not an error. Whether it removed one.
pub fn remove_unsynced(root: &Path, target: &Path) -> Result<bool> {
    match nofollow::check_dirs(root, parent(target)) {
        // No folder, no file: already gone.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(parent(target), e)),
        Ok(()) => {}
    }
    match fs::remove_file(target) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(target, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The audit tip hint is overwritten in place, one fixed-length record
    /// over another; a link planted in its place is replaced, and what it
    /// pointed at is untouched.
    #[cfg(unix)]
    #[test]
    fn a_hint_is_overwritten_in_place_and_never_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let hint = dir.path().join("state.db-audit-tip");
        write_hint(&hint, b"00000000000000000100 aaaa\n").unwrap();
        write_hint(&hint, b"00000000000000000200 bbbb\n").unwrap();
        assert_eq!(
            std::fs::read(&hint).unwrap(),
            b"00000000000000000200 bbbb\n"
        );
        std::fs::remove_file(&hint).unwrap();
        let outside = dir.path().join("bashrc");
        std::fs::write(&outside, "mine\n").unwrap();
        std::os::unix::fs::symlink(&outside, &hint).unwrap();
        write_hint(&hint, b"00000000000000000300 cccc\n").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "mine\n");
        assert!(!nofollow::is_link(&hint));
        assert_eq!(
            std::fs::read(&hint).unwrap(),
            b"00000000000000000300 cccc\n"
        );
    }
}
