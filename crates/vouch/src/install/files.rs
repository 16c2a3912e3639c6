//! How `install-mcp` writes a config file: the diff a dry run shows, a
//! lock on its folder, a numbered backup, and an atomic replace.

use std::path::{Path, PathBuf};
use vouch_core::Error;

/// A line diff of two texts (for `--dry-run`): `-`, `+` and ` ` lines.
/// The lines both share at the start and the end are matched first (an
/// entry added to a 40,000-line file touches a few lines in its middle);
/// only a middle small enough is aligned line by line, a larger one is
/// shown as removed then added. Linear in the file's size either way.
pub(super) fn diff(path: &Path, before: &str, after: &str) -> String {
    /// Most cells of the alignment table (lines × lines) of the middle.
    const MAX_CELLS: usize = 1_000_000;
    let a_all: Vec<&str> = before.lines().collect();
    let b_all: Vec<&str> = after.lines().collect();
    let head = a_all.iter().zip(&b_all).take_while(|(x, y)| x == y).count();
    let tail = a_all[head..]
        .iter()
        .rev()
        .zip(b_all[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let a = &a_all[head..a_all.len() - tail];
    let b = &b_all[head..b_all.len() - tail];
    /// Unchanged lines shown around the change.
    const CONTEXT: usize = 3;
    let mut out = format!("--- {0}\n+++ {0} (with vouch)\n", path.display());
    if head > CONTEXT {
        out.push_str(&format!("  … {} unchanged line(s)\n", head - CONTEXT));
    }
    for line in &a_all[head.saturating_sub(CONTEXT)..head] {
        out.push_str(&format!(" {line}\n"));
    }
    if (a.len() + 1).saturating_mul(b.len() + 1) > MAX_CELLS {
        for line in a {
            out.push_str(&format!("-{line}\n"));
        }
        for line in b {
            out.push_str(&format!("+{line}\n"));
        }
    } else {
        out.push_str(&aligned(a, b));
    }
    let rest = &a_all[a_all.len() - tail..];
    for line in rest.iter().take(CONTEXT) {
        out.push_str(&format!(" {line}\n"));
    }
    if rest.len() > CONTEXT {
        out.push_str(&format!("  … {} unchanged line(s)\n", rest.len() - CONTEXT));
    }
    out
}

/// `-`, `+` and ` ` lines aligning `a` with `b` by their longest common
/// subsequence.
fn aligned(a: &[&str], b: &[&str]) -> String {
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!(" {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+{}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("-{}\n", a[i]));
            i += 1;
        }
    }
    out
}

/// Hold the config directory's lock while reading, editing and replacing,
/// so two runs at once do not lose each other's edit.
pub(super) struct DirLock {
    #[cfg(unix)]
    _dir: std::fs::File,
}

pub(super) fn lock_dir(dir: &Path) -> Result<DirLock, Error> {
    #[cfg(unix)]
    {
        let f = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
        f.lock().map_err(|e| Error::io(dir, e))?;
        Ok(DirLock { _dir: f })
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(DirLock {})
    }
}

/// Replace `path` with `bytes`: a sibling temp file with the old file's
/// permissions, synced, renamed over it.
pub(super) fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let tmp = path.with_file_name(format!(
        ".{}.vouch-{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("config"),
        std::process::id()
    ));
    let result = (|| {
        // Never through a link planted at the temp name.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(&tmp, e))?;
        if let Ok(meta) = std::fs::metadata(path) {
            let _ = f.set_permissions(meta.permissions());
        }
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Keep `bytes` (the file as it was) beside `path`: `FILE.bak`, or
/// `FILE.bak.2`, … when earlier backups are there, so none is overwritten;
/// created new, never through a link.
pub(super) fn backup(path: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    use std::io::Write;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("config");
    for n in 1..1000 {
        let candidate = path.with_file_name(if n == 1 {
            format!("{name}.bak")
        } else {
            format!("{name}.bak.{n}")
        });
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&candidate)
        {
            Ok(mut f) => {
                if let Ok(meta) = std::fs::metadata(path) {
                    let _ = f.set_permissions(meta.permissions());
                }
                f.write_all(bytes)
                    .and_then(|_| f.sync_all())
                    .map_err(|e| Error::io(&candidate, e))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(&candidate, e)),
        }
    }
    Err(Error::invalid(format!(
        "{}: 999 backups already; remove old ones",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_marks_added_lines() {
        let d = diff(Path::new("f"), "a\nb\n", "a\nx\nb\n");
        assert_eq!(d.lines().skip(2).collect::<Vec<_>>(), [" a", "+x", " b"]);
    }
}
