//! No read or write beneath a knowledge base's root follows a symbolic link.
//!
//! A cloned repository is untrusted input: `sources/<sha>/content` linked to
//! `/proc/self/environ` or `~/.ssh/id_ed25519` would put secrets into search
//! snippets and bundles, and `claims/` linked elsewhere would make approve
//! write outside the project. So:
//!
//! - reads open each component beneath the root relative to the previous
//!   one's descriptor with `O_NOFOLLOW` (race-free: nothing is resolved by
//!   path twice), then check the opened file is a regular file;
//! - writes first check that every folder between the root and the target is
//!   a real folder ([`check_dirs`]), then create their temp file exclusively
//!   (`O_EXCL` never follows a link) and rename it over the target (a rename
//!   replaces a link, never writes through it). A concurrent process that
//!   swaps a folder for a link between the check and the write could still
//!   redirect it; such a process can write `.vouch/` anyway.
//!
//! The root itself may be a link (a user's choice); only what is beneath it
//! is held to this rule. Errors name the link and say what to do.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path};

/// The error for a link found beneath the root.
fn link_error(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is (or passes through) a symbolic link; vouch never follows links under its \
         knowledge base — replace it with the real file (`vouch doctor` lists every link)",
        path.display()
    ))
}

/// The components of `path` beneath `root`, each a plain name.
fn beneath<'a>(root: &Path, path: &'a Path) -> io::Result<Vec<&'a std::ffi::OsStr>> {
    let rel = path.strip_prefix(root).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not inside {}", path.display(), root.display()),
        )
    })?;
    rel.components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: only plain names may follow the root", path.display()),
            )),
        })
        .collect()
}

/// Open `path`, which lies beneath `root`, for reading without following a
/// link at any component beneath `root`. Anything but a regular file is
/// refused (a FIFO, a device, a folder).
pub fn open(root: &Path, path: &Path) -> io::Result<File> {
    open_sized(root, path).map(|(f, _)| f)
}

/// [`open`], with the file's metadata from the same `fstat` that checked
/// it is a regular file.
#[cfg(unix)]
fn open_sized(root: &Path, path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    use rustix::fs::{Mode, OFlags};
    let names = beneath(root, path)?;
    let Some((last, dirs)) = names.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: names the root, not a file in it", path.display()),
        ));
    };
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let nofollow = |e: rustix::io::Errno| -> io::Error {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            link_error(path)
        } else {
            e.into()
        }
    };
    // NONBLOCK: opening a FIFO must not hang; it is refused just below.
    let file_flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let mut fd = rustix::fs::open(root, dir_flags, Mode::empty())?;
    let file = match beneath_in_one_call(&fd, &names, file_flags) {
        Some(opened) => opened.map_err(nofollow)?,
        None => {
            for name in dirs {
                fd = rustix::fs::openat(&fd, *name, dir_flags | OFlags::NOFOLLOW, Mode::empty())
                    .map_err(nofollow)?;
            }
            rustix::fs::openat(&fd, *last, file_flags, Mode::empty()).map_err(nofollow)?
        }
    };
    regular_file(File::from(file), path)
}

/// Linux 5.6+: the whole walk in one `openat2` that refuses any link on
/// the way (`RESOLVE_NO_SYMLINKS`) and anything outside the root
/// (`RESOLVE_BENEATH`) — the same rule as the walk, in one system call
/// instead of one per folder (a rebuild opens every file). `None` where
/// the kernel (or a sandbox) does not offer it: walk instead.
#[cfg(target_os = "linux")]
fn beneath_in_one_call(
    root: &rustix::fd::OwnedFd,
    names: &[&std::ffi::OsStr],
    flags: rustix::fs::OFlags,
) -> Option<rustix::io::Result<rustix::fd::OwnedFd>> {
    use rustix::fs::{Mode, ResolveFlags};
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    let rel: std::path::PathBuf = names.iter().collect();
    match rustix::fs::openat2(
        root,
        &rel,
        flags,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Err(e)
            if e == rustix::io::Errno::NOSYS
                || e == rustix::io::Errno::PERM
                || e == rustix::io::Errno::INVAL
                || e == rustix::io::Errno::AGAIN =>
        {
            // EAGAIN only comes with RESOLVE_CACHED (not asked); EINVAL or
            // EPERM from a kernel or seccomp policy without openat2.
            UNSUPPORTED.store(true, Ordering::Relaxed);
            None
        }
        other => Some(other),
    }
}

#[cfg(all(unix, not(target_os = "linux")))]
fn beneath_in_one_call(
    _root: &rustix::fd::OwnedFd,
    _names: &[&std::ffi::OsStr],
    _flags: rustix::fs::OFlags,
) -> Option<rustix::io::Result<rustix::fd::OwnedFd>> {
    None
}

#[cfg(not(unix))]
fn open_sized(root: &Path, path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    check_dirs(root, path.parent().unwrap_or(root))?;
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(link_error(path));
    }
    regular_file(File::open(path)?, path)
}

/// `file` (opened at `path`) and its size, when it is a regular file:
/// not a folder, a FIFO or a device.
fn regular_file(file: File, path: &Path) -> io::Result<(File, std::fs::Metadata)> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok((file, meta))
}

/// Read a whole file beneath `root` without following links.
pub fn read(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    read_with_meta(root, path).map(|(bytes, _)| bytes)
}

/// [`read`], with the metadata of the file it read (from the open file,
/// so it describes the bytes read even if the name is replaced after).
pub fn read_with_meta(root: &Path, path: &Path) -> io::Result<(Vec<u8>, std::fs::Metadata)> {
    let (f, meta) = open_sized(root, path)?;
    // Read through `Take`: `File::read_to_end` would stat the file and
    // seek again to size its buffer (two more system calls per file, on
    // every file of a rebuild), and the length is known.
    let mut out = Vec::with_capacity(meta.len() as usize + 1);
    f.take(u64::MAX).read_to_end(&mut out)?;
    Ok((out, meta))
}

/// Every folder from `root` down to `dir` (inclusive) is a real folder, not
/// a link. A missing folder is `NotFound`.
pub fn check_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    walk_dirs(root, dir, false)
}

/// Like [`check_dirs`], but a missing folder is created (one component at
/// a time, each checked): a fresh `git clone` has none of the folders that
/// were empty when committed, and a write must not fail for that. A link
/// or a file where a folder belongs is still refused, never followed.
pub fn ensure_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    walk_dirs(root, dir, true)
}

fn walk_dirs(root: &Path, dir: &Path, create: bool) -> io::Result<()> {
    let mut at = root.to_path_buf();
    for name in beneath(root, dir)? {
        at.push(name);
        let m = match std::fs::symlink_metadata(&at) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
                match std::fs::create_dir(&at) {
                    Ok(()) => continue,
                    // Made by a concurrent writer: checked like any.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                std::fs::symlink_metadata(&at)?
            }
            other => other?,
        };
        if m.file_type().is_symlink() {
            return Err(link_error(&at));
        }
        if !m.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a folder", at.display()),
            ));
        }
    }
    Ok(())
}

/// Is there a regular file (not a link) at `path`? Does not check parents.
pub fn is_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Is there a real folder (not a link) at `path`?
pub fn is_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Is `path` a link? (`false` when it does not exist.)
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Every link beneath `root`, as paths relative to it (sorted). Does not
/// descend into links. For `vouch doctor`.
pub fn find_links(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if t.is_symlink() {
                if let Ok(rel) = p.strip_prefix(root) {
                    out.push(rel.to_string_lossy().into_owned());
                }
            } else if t.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_beneath_the_root_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("kb");
        std::fs::create_dir_all(root.join("claims")).unwrap();
        std::fs::write(dir.path().join("secret"), b"key").unwrap();
        std::fs::write(root.join("claims/a.yaml"), b"a").unwrap();
        assert_eq!(read(&root, &root.join("claims/a.yaml")).unwrap(), b"a");
        // A link as the file.
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("claims/b.yaml")).unwrap();
        let e = read(&root, &root.join("claims/b.yaml")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        // A link as a folder on the way.
        std::os::unix::fs::symlink(dir.path(), root.join("pages")).unwrap();
        let e = read(&root, &root.join("pages/secret")).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert!(check_dirs(&root, &root.join("pages")).is_err());
        assert!(check_dirs(&root, &root.join("claims")).is_ok());
        assert_eq!(find_links(&root), vec!["claims/b.yaml", "pages"]);
        // Not beneath the root, or climbing out of it.
        assert!(read(&root, &dir.path().join("secret")).is_err());
        assert!(read(&root, &root.join("claims/../../secret")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("f");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        if status.is_ok_and(|s| s.success()) {
            let e = read(dir.path(), &fifo).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }
}
