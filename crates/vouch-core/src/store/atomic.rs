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

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// The folders from `root` to `target`'s folder are real folders.
fn check_parent(root: &Path, target: &Path) -> Result<()> {
    nofollow::check_dirs(root, parent(target)).map_err(|e| Error::io(parent(target), e))
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
    let tmp = temp_with(target, fill)?;
    if let Err(e) = fs::rename(&tmp, target) {
        let _ = fs::remove_file(&tmp);
        return Err(Error::io(target, e));
    }
    sync_dir(parent(target))
}

/// Create `target` with `bytes`, durably, failing with `Ok(false)` if it
/// already exists (the hard link is the atomic "create if absent").
pub fn create_new(root: &Path, target: &Path, bytes: &[u8]) -> Result<bool> {
    check_parent(root, target)?;
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
    check_parent(root, target)?;
    match fs::remove_file(target) {
        Ok(()) => sync_dir(parent(target)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(target, e)),
    }
}

/// Many writes made durable together: every temp file is written and
/// fsynced, then all are renamed, then each touched folder is fsynced once.
/// Used by bulk approval so N artifacts cost far less than N single writes.
pub struct Batch {
    root: PathBuf,
    writes: Vec<(PathBuf, Vec<u8>)>,
    removes: Vec<PathBuf>,
}

impl Batch {
    /// A batch of writes beneath the KB `root`.
    pub fn new(root: &Path) -> Batch {
        Batch {
            root: root.to_path_buf(),
            writes: Vec::new(),
            removes: Vec::new(),
        }
    }
    pub fn write(&mut self, target: PathBuf, bytes: Vec<u8>) {
        self.writes.push((target, bytes));
    }
    pub fn remove(&mut self, target: PathBuf) {
        self.removes.push(target);
    }
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removes.is_empty()
    }

    pub fn len(&self) -> usize {
        self.writes.len() + self.removes.len()
    }

    /// Apply writes (in order), then removes. Temp files are fsynced from a
    /// few threads at once so the filesystem can commit them together. If
    /// any temp file cannot be written, every temp file is removed and no
    /// target has changed.
    pub fn commit(self) -> Result<()> {
        let mut checked: std::collections::HashSet<&Path> = Default::default();
        for target in self.writes.iter().map(|(t, _)| t).chain(&self.removes) {
            if checked.insert(parent(target)) {
                check_parent(&self.root, target)?;
            }
        }
        let mut temps: Vec<(PathBuf, PathBuf)> = Vec::with_capacity(self.writes.len());
        // Temp files are written and fsynced in groups so a batch of
        // 100,000 files never holds more than OPEN_FILES descriptors.
        const OPEN_FILES: usize = 512;
        // A large batch (an import) flushes the filesystem once instead of
        // fsyncing each temp file; either way every temp file is durable
        // before the first rename.
        let one_flush = self.writes.len() >= ONE_FLUSH_FROM && can_flush_filesystem();
        let staged = (|| -> Result<()> {
            for group in self.writes.chunks(OPEN_FILES) {
                let mut files = Vec::with_capacity(group.len());
                for (target, bytes) in group {
                    let (tmp, mut f) = open_temp(target)?;
                    temps.push((tmp.clone(), target.clone()));
                    f.write_all(&bytes[..]).map_err(|e| Error::io(&tmp, e))?;
                    files.push((tmp, f));
                }
                if !one_flush {
                    sync_all_parallel(files)?;
                }
            }
            if one_flush && let Some((tmp, _)) = temps.first() {
                flush_filesystem(tmp)?;
            }
            Ok(())
        })();
        if let Err(e) = staged {
            for (tmp, _) in &temps {
                let _ = fs::remove_file(tmp);
            }
            return Err(e);
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for (tmp, target) in temps {
            fs::rename(&tmp, &target).map_err(|e| Error::io(&target, e))?;
            dirs.push(parent(&target).to_path_buf());
        }
        for target in &self.removes {
            match fs::remove_file(target) {
                Ok(()) => dirs.push(parent(target).to_path_buf()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(target, e)),
            }
        }
        dirs.sort();
        dirs.dedup();
        for d in dirs {
            sync_dir(&d)?;
        }
        Ok(())
    }
}

/// Batches of at least this many files use one filesystem flush.
const ONE_FLUSH_FROM: usize = 256;

#[cfg(target_os = "linux")]
fn can_flush_filesystem() -> bool {
    true
}
#[cfg(not(target_os = "linux"))]
fn can_flush_filesystem() -> bool {
    false
}

/// `syncfs` on the filesystem holding `path`: every dirty page there is
/// written and the call reports any write-back error since it was opened.
#[cfg(target_os = "linux")]
fn flush_filesystem(path: &Path) -> Result<()> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    rustix::fs::syncfs(&f).map_err(|e| Error::io(path, e.into()))
}
#[cfg(not(target_os = "linux"))]
fn flush_filesystem(_: &Path) -> Result<()> {
    Ok(())
}

fn sync_all_parallel(files: Vec<(PathBuf, File)>) -> Result<()> {
    const THREADS: usize = 8;
    if files.len() <= 1 {
        for (p, f) in &files {
            f.sync_all().map_err(|e| Error::io(p, e))?;
        }
        return Ok(());
    }
    let chunk = files.len().div_ceil(THREADS);
    std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    for (p, f) in part {
                        f.sync_all().map_err(|e| Error::io(p, e))?;
                    }
                    Ok::<(), Error>(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .map_err(|_| Error::internal("fsync thread panicked"))??;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_larger_than_the_open_file_group_commits_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Batch::new(dir.path());
        for i in 0..1300 {
            b.write(
                dir.path().join(format!("{i}.yaml")),
                format!("{i}\n").into_bytes(),
            );
        }
        b.commit().unwrap();
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1300, "temp files left behind or files missing");
        assert_eq!(
            fs::read_to_string(dir.path().join("1299.yaml")).unwrap(),
            "1299\n"
        );
    }

    #[test]
    fn a_large_batch_that_cannot_stage_a_file_renames_nothing_either() {
        // Large enough for the one-flush path.
        let dir = tempfile::tempdir().unwrap();
        let mut b = Batch::new(dir.path());
        for i in 0..ONE_FLUSH_FROM + 10 {
            b.write(dir.path().join(format!("{i}.yaml")), b"x".to_vec());
        }
        b.write(dir.path().join("missing/b.yaml"), b"b".to_vec());
        assert!(b.commit().is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_batch_that_cannot_stage_a_file_renames_nothing_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Batch::new(dir.path());
        b.write(dir.path().join("a.yaml"), b"a".to_vec());
        b.write(dir.path().join("missing/b.yaml"), b"b".to_vec());
        assert!(b.commit().is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
