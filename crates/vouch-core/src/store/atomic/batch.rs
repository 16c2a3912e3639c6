//! [`Batch`]: many writes staged in `.vouch/.staging/`, made durable
//! together, then moved in; journaled for an import or a lifecycle change,
//! so that [`super::recover`] can finish or discard one a crash interrupted.

use super::{parent, sync_dir, write};
use crate::error::{Error, Result};
use crate::store::nofollow;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Many writes made durable together: every file is first written and
/// fsynced in the staging folder `.vouch/.staging/`, then all are renamed
/// into place, then each touched folder is fsynced once. Used by bulk
/// approval (N artifacts cost far less than N single writes), lifecycle
/// changes and imports. A batch runs under the KB lock, so the staging
/// folder belongs to one batch at a time, and a crash leaves its debris in
/// one known place that the next holder of the lock clears ([`recover`]).
pub struct Batch {
    root: PathBuf,
    writes: Vec<(PathBuf, Vec<u8>)>,
    removes: Vec<PathBuf>,
}

/// The staging folder, beneath the KB root.
pub const STAGING_DIR: &str = ".staging";
/// The plan of a journaled batch, inside the staging folder.
pub(super) const JOURNAL_FILE: &str = "journal.json";

pub(super) fn staging(root: &Path) -> PathBuf {
    root.join(STAGING_DIR)
}

/// The staged copy of the batch's `i`-th write.
pub(super) fn staged_file(staging: &Path, i: usize) -> PathBuf {
    staging.join(format!("{i}"))
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
    /// Add a write of `bytes` to `target`; nothing touches the disk before
    /// the batch is staged.
    pub fn write(&mut self, target: PathBuf, bytes: Vec<u8>) {
        self.writes.push((target, bytes));
    }
    /// Add the removal of `target`, done after every write.
    pub fn remove(&mut self, target: PathBuf) {
        self.removes.push(target);
    }
    /// Whether the batch holds no writes and no removes.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.removes.is_empty()
    }

    /// How many writes and removes the batch holds.
    pub fn len(&self) -> usize {
        self.writes.len() + self.removes.len()
    }

    /// Apply writes (in order), then removes. If any file cannot be staged,
    /// nothing has changed. Caller holds the KB lock.
    pub fn commit(self) -> Result<()> {
        let staged = self.stage()?;
        crate::fail::point("batch.staged");
        staged.finish()
    }

    /// Stage every file durably, then record what [`Staged::finish`] will
    /// do in a journal tagged with the id of the audit event that
    /// authorizes the batch. Append that event, then finish. If the process
    /// dies in between, [`recover`] completes the batch when the event is
    /// in the log and discards it when it is not, so a crash never leaves
    /// half an import behind. Caller holds the KB lock.
    /// Returns the journal's sha256, which the caller records in the
    /// event's `data.batch_sha256`: recovery completes a batch only for the
    /// event that names this very journal.
    pub fn stage_journaled(self, event_id: &str) -> Result<(Staged, String)> {
        let staged = self.stage()?;
        let rel = |p: &Path| -> String {
            p.strip_prefix(&staged.root)
                .unwrap_or(p)
                .to_string_lossy()
                .into_owned()
        };
        let plan = Journal {
            event_id: event_id.to_string(),
            made_in: folder_identity(&staging(&staged.root)).unwrap_or_default(),
            writes: staged.targets.iter().map(|t| rel(t)).collect(),
            sha256: staged.hashes.clone(),
            removes: staged.removes.iter().map(|p| rel(p)).collect(),
        };
        let written = serde_json::to_vec(&plan)
            .map_err(|e| Error::internal(e.to_string()))
            .and_then(|bytes| {
                write(
                    &staged.root,
                    &staging(&staged.root).join(JOURNAL_FILE),
                    &bytes,
                )
                .map(|()| plan.plan_sha256())
            });
        match written {
            Ok(sha) => {
                crate::fail::point("journal.written");
                Ok((staged, sha))
            }
            Err(e) => {
                staged.abandon();
                Err(e)
            }
        }
    }

    /// Write and fsync every file into the staging folder; nothing in the
    /// KB has changed yet.
    fn stage(self) -> Result<Staged> {
        let mut checked: std::collections::HashSet<&Path> = Default::default();
        for target in self.writes.iter().map(|(t, _)| t).chain(&self.removes) {
            if checked.insert(parent(target)) {
                // A folder that does not exist yet (a new source's) is made
                // when the batch finishes.
                check_existing_part(&self.root, parent(target))?;
            }
        }
        let dir = staging(&self.root);
        // Under the lock a staging folder is always a crash's leftover
        // (taking the lock clears it): start clean.
        clear_staging(&self.root)?;
        fs::create_dir(&dir).map_err(|e| Error::io(&dir, e))?;
        let abandon = |e: Error| {
            let _ = fs::remove_dir_all(&dir);
            e
        };
        // Files are written and fsynced in groups so a batch of 100,000
        // files never holds more than OPEN_FILES descriptors.
        const OPEN_FILES: usize = 512;
        // A large batch (an import) flushes the filesystem once instead of
        // fsyncing each file; either way every staged file is durable
        // before the first rename.
        let one_flush = self.writes.len() >= ONE_FLUSH_FROM && can_flush_filesystem();
        let mut targets = Vec::with_capacity(self.writes.len());
        let mut hashes = Vec::with_capacity(self.writes.len());
        for (g, group) in self.writes.chunks(OPEN_FILES).enumerate() {
            let mut files = Vec::with_capacity(group.len());
            for (k, (target, bytes)) in group.iter().enumerate() {
                let tmp = staged_file(&dir, g * OPEN_FILES + k);
                let mut f = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| abandon(Error::io(&tmp, e)))?;
                f.write_all(&bytes[..])
                    .map_err(|e| abandon(Error::io(&tmp, e)))?;
                targets.push(target.clone());
                hashes.push(crate::ids::sha256_hex(bytes));
                files.push((tmp, f));
            }
            if !one_flush {
                sync_all_parallel(files).map_err(abandon)?;
            }
        }
        if one_flush && !targets.is_empty() {
            flush_filesystem(&staged_file(&dir, 0)).map_err(abandon)?;
        }
        sync_dir(&dir).map_err(abandon)?;
        Ok(Staged {
            root: self.root,
            targets,
            hashes,
            removes: self.removes,
        })
    }
}

/// The deepest part of `folder` that exists, after checking that every
/// folder from `root` down to it is a real folder, not a link.
fn check_existing_part<'a>(root: &Path, folder: &'a Path) -> Result<&'a Path> {
    let mut existing = folder;
    while !existing.exists() && existing.starts_with(root) && existing != root {
        existing = parent(existing);
    }
    nofollow::check_dirs(root, existing).map_err(|e| Error::io(existing, e))?;
    Ok(existing)
}

/// Remove the staging folder (a link there is removed, not followed).
pub(super) fn clear_staging(root: &Path) -> Result<()> {
    let dir = staging(root);
    match fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(&dir, e)),
        Ok(m) if m.is_dir() => fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e)),
        Ok(_) => fs::remove_file(&dir).map_err(|e| Error::io(&dir, e)),
    }
}

/// What a journaled batch will do, in paths relative to the KB root: the
/// `i`-th write is the staged file `.staging/<i>`.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Journal {
    pub(super) event_id: String,
    /// The staging folder it was written in ([`folder_identity`]): only a
    /// journal a crash left in this very folder is finished. Not part of
    /// the plan's sha256 (which the audit event records), so the log says
    /// the same bytes on every machine.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) made_in: String,
    pub(super) writes: Vec<String>,
    /// sha256 of each staged file, in `writes` order.
    #[serde(default)]
    pub(super) sha256: Vec<String>,
    pub(super) removes: Vec<String>,
}

/// A batch whose files are staged and durable, waiting to be moved in.
#[must_use = "a staged batch changes nothing until finish()"]
pub struct Staged {
    root: PathBuf,
    targets: Vec<PathBuf>,
    /// sha256 of each staged file, in `targets` order.
    hashes: Vec<String>,
    removes: Vec<PathBuf>,
}

impl Staged {
    /// Move every staged file over its target (in order), then remove,
    /// then fsync each touched folder once, then clear the staging folder.
    pub fn finish(self) -> Result<()> {
        apply(&self.root, &self.targets, &self.removes)?;
        clear_staging(&self.root)
    }

    /// Give the batch up: nothing in the KB has changed.
    pub fn abandon(self) {
        let _ = clear_staging(&self.root);
    }
}

pub(super) fn apply(root: &Path, targets: &[PathBuf], removes: &[PathBuf]) -> Result<()> {
    let dir = staging(root);
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut ready: std::collections::HashSet<&Path> = Default::default();
    for (i, target) in targets.iter().enumerate() {
        let tmp = staged_file(&dir, i);
        let folder = parent(target);
        if ready.insert(folder) {
            // A new source's folder is made only now, so a batch that
            // never finishes leaves no empty folder behind. What exists of
            // the path must be real folders.
            let existing = check_existing_part(root, folder)?;
            if existing != folder {
                fs::create_dir_all(folder).map_err(|e| Error::io(folder, e))?;
                dirs.push(existing.to_path_buf());
                dirs.push(parent(folder).to_path_buf());
            }
        }
        match fs::rename(&tmp, target) {
            Ok(()) => {}
            // Moved already by the run that was interrupted.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !tmp.exists() => {}
            Err(e) => return Err(Error::io(target, e)),
        }
        crate::fail::point("batch.renamed");
        dirs.push(folder.to_path_buf());
    }
    crate::fail::point("batch.moved");
    for target in removes {
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

impl Journal {
    /// The sha256 of the plan — what it writes and removes, for which
    /// event — without where it was made.
    pub(super) fn plan_sha256(&self) -> String {
        let plan = Journal {
            event_id: self.event_id.clone(),
            made_in: String::new(),
            writes: self.writes.clone(),
            sha256: self.sha256.clone(),
            removes: self.removes.clone(),
        };
        crate::ids::sha256_hex(&serde_json::to_vec(&plan).unwrap_or_default())
    }
}

/// Which staging folder this is: its inode and, where the file system
/// records it, when it was made — not its device, whose number some file
/// systems (btrfs, NFS, overlays) change across a reboot, which would
/// refuse a journal a real crash left. A folder that came with a clone or
/// a copy is another folder.
pub(super) fn folder_identity(dir: &Path) -> Option<String> {
    let m = fs::metadata(dir).ok()?;
    let born = crate::store::born_ns(&m);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(match born {
            Some(n) => format!("{}@{n}", m.ino()),
            None => crate::store::file_identity(dir)?,
        })
    }
    #[cfg(not(unix))]
    {
        born.map(|n| format!("created:{n}"))
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

    /// A batch of `files` writes and one more that cannot be staged (its
    /// folder is a file) fails, and the folder holds only the blocker: no
    /// file renamed in, no temp file left.
    fn cannot_stage_one_of(files: usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Batch::new(dir.path());
        for i in 0..files {
            b.write(dir.path().join(format!("{i}.yaml")), b"x".to_vec());
        }
        fs::write(dir.path().join("blocker"), b"a file, not a folder").unwrap();
        b.write(dir.path().join("blocker/b.yaml"), b"b".to_vec());
        assert!(b.commit().is_err());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the blocker"
        );
    }

    #[test]
    fn a_large_batch_that_cannot_stage_a_file_renames_nothing_either() {
        // Large enough for the one-flush path.
        cannot_stage_one_of(ONE_FLUSH_FROM + 10);
    }

    #[test]
    fn a_batch_that_cannot_stage_a_file_renames_nothing_and_leaves_no_temp() {
        cannot_stage_one_of(1);
    }
}
