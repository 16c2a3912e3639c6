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
    match nofollow::check_dirs(root, parent(target)) {
        // No folder, no file: already gone.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(parent(target), e)),
        Ok(()) => {}
    }
    match fs::remove_file(target) {
        Ok(()) => sync_dir(parent(target)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(target, e)),
    }
}

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
const JOURNAL_FILE: &str = "journal.json";

fn staging(root: &Path) -> PathBuf {
    root.join(STAGING_DIR)
}

/// The staged copy of the batch's `i`-th write.
fn staged_file(staging: &Path, i: usize) -> PathBuf {
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
fn clear_staging(root: &Path) -> Result<()> {
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
struct Journal {
    event_id: String,
    /// The staging folder it was written in ([`folder_identity`]): only a
    /// journal a crash left in this very folder is finished. Not part of
    /// the plan's sha256 (which the audit event records), so the log says
    /// the same bytes on every machine.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    made_in: String,
    writes: Vec<String>,
    /// sha256 of each staged file, in `writes` order.
    #[serde(default)]
    sha256: Vec<String>,
    removes: Vec<String>,
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

fn apply(root: &Path, targets: &[PathBuf], removes: &[PathBuf]) -> Result<()> {
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

/// What [`recover`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// No staging folder: nothing was interrupted.
    Clean,
    /// The authorizing event is in the log: the batch was completed.
    Completed {
        /// The id of the audit event that authorized it.
        event_id: String,
        /// How many files it wrote or removed.
        files: usize,
    },
    /// The batch never reached the point of no return (no journal, or its
    /// event is not in the log): its staged files were removed and nothing
    /// in the KB had changed.
    Discarded {
        /// The event its journal names, when it got as far as a journal.
        event_id: Option<String>,
        /// How many files it held: as staged, or as its journal planned them.
        files: usize,
    },
    /// The journal could not be read or names paths a batch never writes
    /// (edited, or planted by a repository): the staging folder was
    /// removed, and nothing the journal names was touched.
    Refused {
        /// Why the journal was refused.
        why: String,
    },
}

/// Finish or discard a batch that a crash interrupted. `logged` says
/// whether the audit event with that id is in the log. Caller holds the KB
/// lock; costs one `lstat` when nothing was interrupted.
pub fn recover(root: &Path, logged: impl FnOnce(&str, &str) -> Result<bool>) -> Result<Recovery> {
    let dir = staging(root);
    if matches!(fs::symlink_metadata(&dir), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(Recovery::Clean);
    }
    let staged_files = || {
        fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()).count())
            .unwrap_or(0)
    };
    let bytes = match nofollow::read(root, &dir.join(JOURNAL_FILE)) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let files = staged_files();
            clear_staging(root)?;
            return Ok(Recovery::Discarded {
                event_id: None,
                files,
            });
        }
        Err(e) => {
            clear_staging(root)?;
            return Ok(Recovery::Refused {
                why: format!("its journal is unreadable ({e})"),
            });
        }
    };
    let mut journal_sha = String::new();
    let plan = match serde_json::from_slice::<Journal>(&bytes)
        .map_err(|e| format!("its journal is not a batch plan ({e})"))
        .and_then(|j| made_here(&dir, j))
        .inspect(|j| journal_sha = j.plan_sha256())
        .and_then(|j| resolve_journal(root, j))
        .and_then(|p| check_staged(&dir, p))
    {
        Ok(p) => p,
        Err(why) => {
            clear_staging(root)?;
            return Ok(Recovery::Refused { why });
        }
    };
    let files = plan.targets.len() + plan.removes.len();
    if logged(&plan.event_id, &journal_sha)? {
        apply(root, &plan.targets, &plan.removes)?;
        clear_staging(root)?;
        Ok(Recovery::Completed {
            event_id: plan.event_id,
            files,
        })
    } else {
        clear_staging(root)?;
        Ok(Recovery::Discarded {
            event_id: Some(plan.event_id),
            files,
        })
    }
}

impl Journal {
    /// The sha256 of the plan — what it writes and removes, for which
    /// event — without where it was made.
    fn plan_sha256(&self) -> String {
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
fn folder_identity(dir: &Path) -> Option<String> {
    let m = fs::metadata(dir).ok()?;
    let born = super::born_ns(&m);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(match born {
            Some(n) => format!("{}@{n}", m.ino()),
            None => super::file_identity(dir)?,
        })
    }
    #[cfg(not(unix))]
    {
        born.map(|n| format!("created:{n}"))
    }
}

/// Only a journal written in this very staging folder is finished: one
/// that came with a clone (a branch can commit `.staging/` past
/// `.gitignore`) or a copy names writes this installation never staged,
/// and the audit log that "authorizes" it is as easy to write by hand.
fn made_here(dir: &Path, j: Journal) -> std::result::Result<Journal, String> {
    match folder_identity(dir) {
        Some(here) if !j.made_in.is_empty() && j.made_in == here => Ok(j),
        _ => Err(
            "its journal was not written in this folder (it came with a clone, a copy or a \
             commit, or from an older vouch); a crash here never leaves one like it"
                .into(),
        ),
    }
}

struct Resolved {
    event_id: String,
    targets: Vec<PathBuf>,
    sha256: Vec<String>,
    removes: Vec<PathBuf>,
}

/// Every staged file is a regular file (never a link) holding what the
/// journal says it holds.
fn check_staged(dir: &Path, plan: Resolved) -> std::result::Result<Resolved, String> {
    if plan.sha256.len() != plan.targets.len() {
        return Err("its journal does not give every staged file's sha256".into());
    }
    for (i, want) in plan.sha256.iter().enumerate() {
        let staged = staged_file(dir, i);
        match fs::symlink_metadata(&staged) {
            // Moved already by the run that was interrupted.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Ok(m) if m.is_file() => {}
            _ => return Err(format!("staged file {i} is not a regular file")),
        }
        let bytes = fs::read(&staged).map_err(|e| format!("staged file {i}: {e}"))?;
        if crate::ids::sha256_hex(&bytes) != *want {
            return Err(format!(
                "staged file {i} does not hold what the journal says"
            ));
        }
    }
    Ok(plan)
}

/// Where a batch may write: the knowledge folders, review records and
/// sources — never the audit log, config.yaml, state.db or the lock.
const BATCH_FOLDERS: &[&str] = &[
    "claims",
    "pages",
    "entities",
    "relations",
    "evidence",
    "sessions",
    "decided",
    "proposed",
    "sources",
];

/// The journal's paths beneath `root`, refusing what no batch writes: an
/// absolute path, `..`, the staging folder itself.
fn resolve_journal(root: &Path, j: Journal) -> std::result::Result<Resolved, String> {
    let under = |rel: &String| -> std::result::Result<PathBuf, String> {
        let p = Path::new(rel);
        let plain = !rel.is_empty()
            && p.components().count() >= 2
            && p.components()
                .next()
                .is_some_and(|c| BATCH_FOLDERS.iter().any(|f| c.as_os_str() == *f))
            && p.components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if plain {
            Ok(root.join(p))
        } else {
            Err(format!("its journal names {rel:?}, which no batch writes"))
        }
    };
    Ok(Resolved {
        event_id: j.event_id,
        sha256: j.sha256,
        targets: j
            .writes
            .iter()
            .map(under)
            .collect::<std::result::Result<_, _>>()?,
        removes: j
            .removes
            .iter()
            .map(under)
            .collect::<std::result::Result<_, _>>()?,
    })
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
    fn a_batch_that_cannot_stage_a_file_renames_nothing_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = Batch::new(dir.path());
        b.write(dir.path().join("a.yaml"), b"a".to_vec());
        fs::write(dir.path().join("blocker"), b"a file, not a folder").unwrap();
        b.write(dir.path().join("blocker/b.yaml"), b"b".to_vec());
        assert!(b.commit().is_err());
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "only the blocker"
        );
    }

    /// A journaled batch of two files, staged but not finished, as a crash
    /// after `stage_journaled` leaves it.
    fn interrupted(root: &Path, event_id: &str) -> Vec<PathBuf> {
        fs::create_dir(root.join("claims")).unwrap();
        fs::write(root.join("claims/old.yaml"), b"old").unwrap();
        let targets = vec![root.join("claims/a.yaml"), root.join("sources/s1/content")];
        let mut b = Batch::new(root);
        b.write(targets[0].clone(), b"a".to_vec());
        b.write(targets[1].clone(), b"content".to_vec());
        b.remove(root.join("claims/old.yaml"));
        std::mem::forget(b.stage_journaled(event_id).unwrap());
        targets
    }

    #[test]
    fn recovery_completes_a_logged_batch_and_discards_an_unlogged_one() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(recover(root, |_, _| Ok(true)).unwrap(), Recovery::Clean);
        let targets = interrupted(root, "ev1");
        assert!(!targets[0].exists());
        let r = recover(root, |id, _| Ok(id == "ev1")).unwrap();
        assert_eq!(
            r,
            Recovery::Completed {
                event_id: "ev1".into(),
                files: 3
            }
        );
        assert_eq!(fs::read(&targets[0]).unwrap(), b"a");
        assert_eq!(fs::read(&targets[1]).unwrap(), b"content");
        assert!(!root.join("claims/old.yaml").exists());
        assert!(!root.join(STAGING_DIR).exists());

        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let targets = interrupted(root, "ev2");
        let r = recover(root, |_, _| Ok(false)).unwrap();
        assert_eq!(
            r,
            Recovery::Discarded {
                event_id: Some("ev2".into()),
                files: 3
            }
        );
        assert!(!targets[0].exists() && !root.join("sources").exists());
        assert!(root.join("claims/old.yaml").exists());
        assert!(!root.join(STAGING_DIR).exists());
    }

    #[test]
    fn recovery_refuses_a_journal_that_names_paths_outside_the_kb() {
        for bad in [
            r#""../../etc/x""#,
            r#""/etc/x""#,
            r#"".staging/0""#,
            r#""audit.log.jsonl""#,
            r#""config.yaml""#,
            r#""state.db""#,
        ] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            fs::create_dir(root.join(STAGING_DIR)).unwrap();
            fs::write(root.join(STAGING_DIR).join("0"), b"planted").unwrap();
            // Made here, so what is refused is the path it names.
            let here = folder_identity(&root.join(STAGING_DIR)).unwrap();
            fs::write(
                root.join(STAGING_DIR).join(JOURNAL_FILE),
                format!(
                    r#"{{"event_id": "e", "made_in": "{here}", "writes": [{bad}], "removes": []}}"#
                ),
            )
            .unwrap();
            let r = recover(root, |_, _| Ok(true)).unwrap();
            assert!(matches!(r, Recovery::Refused { .. }), "{bad}: {r:?}");
            assert!(!root.join(STAGING_DIR).exists());
            assert_eq!(fs::read_dir(root).unwrap().count(), 0, "{bad}");
        }
    }

    /// A staging folder that came with a clone or a copy (a branch can
    /// commit `.staging/` past `.gitignore`, and the audit event that
    /// "authorizes" it is one line anyone can write) is never finished:
    /// only a journal a crash left in this very folder is.
    #[test]
    fn recovery_refuses_a_journal_that_was_not_written_here() {
        let made = tempfile::tempdir().unwrap();
        interrupted(made.path(), "ev4");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join(STAGING_DIR)).unwrap();
        for e in fs::read_dir(made.path().join(STAGING_DIR)).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), root.join(STAGING_DIR).join(e.file_name())).unwrap();
        }
        let r = recover(root, |_, _| Ok(true)).unwrap();
        assert!(
            matches!(&r, Recovery::Refused { why } if why.contains("not written in this folder")),
            "{r:?}"
        );
        assert!(!root.join(STAGING_DIR).exists());
        assert_eq!(
            fs::read_dir(root).unwrap().count(),
            0,
            "a planted file landed"
        );
        // The folder it was made in still finishes it.
        let r = recover(made.path(), |_, _| Ok(true)).unwrap();
        assert!(matches!(r, Recovery::Completed { .. }), "{r:?}");
    }

    #[test]
    fn recovery_refuses_a_staged_file_swapped_or_linked() {
        for swap in ["bytes", "link"] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let targets = interrupted(root, "ev3");
            let staged = root.join(STAGING_DIR).join("0");
            fs::remove_file(&staged).unwrap();
            if swap == "bytes" {
                fs::write(&staged, b"planted").unwrap();
            } else {
                std::os::unix::fs::symlink("/etc/hostname", &staged).unwrap();
            }
            let r = recover(root, |_, _| Ok(true)).unwrap();
            assert!(matches!(r, Recovery::Refused { .. }), "{swap}: {r:?}");
            assert!(!targets[0].exists(), "{swap}: the planted file landed");
        }
    }

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
