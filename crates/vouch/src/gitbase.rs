//! `vouch audit verify --base REV`: asks the real `git` for REV's audit
//! log and for the files under `.vouch/` that changed since, and hands
//! them to the core's check (`vouch_core::health::base`).

use std::path::{Path, PathBuf};
use std::process::Command;
use vouch_core::health::base::{BaseReport, Change, ChangedFile, is_knowledge_path};
use vouch_core::{Error, Kb};

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, Error> {
    let out = Command::new("git")
        .current_dir(dir)
        // Paths are paths, never pathspec magic.
        .arg("--literal-pathspecs")
        .args(args)
        .output()
        .map_err(|e| Error::invalid(format!("--base needs git on PATH: {e}")))?;
    if !out.status.success() {
        return Err(Error::invalid(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// Compare this KB with REV, as a pull request's check does.
pub fn check(kb: &Kb, rev: &str) -> Result<BaseReport, Error> {
    if rev.starts_with('-') || rev.is_empty() {
        return Err(Error::invalid(format!(
            "--base {rev:?}: name a revision (a branch such as origin/main, a tag or a commit)"
        )));
    }
    let vouch = kb
        .layout()
        .root()
        .canonicalize()
        .map_err(|e| Error::io(kb.layout().root(), e))?;
    let top = PathBuf::from(
        String::from_utf8_lossy(&git(&vouch, &["rev-parse", "--show-toplevel"])?)
            .trim()
            .to_string(),
    );
    let top = top.canonicalize().unwrap_or(top);
    let rel = vouch
        .strip_prefix(&top)
        .map_err(|_| Error::invalid("the knowledge base is not inside the git work tree"))?
        .to_string_lossy()
        .replace('\\', "/");
    git(
        &top,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|_| Error::invalid(format!("--base {rev:?}: git knows no such revision")))?;
    // REV may predate the knowledge base: then its log is empty. Any other
    // failure to read it is an error, never an empty history.
    let log_at = format!("{rev}:{rel}/audit.log.jsonl");
    let base_log = match git(&top, &["cat-file", "-e", &log_at]) {
        Err(_) => Vec::new(),
        Ok(_) => git(&top, &["cat-file", "blob", &log_at])?,
    };
    let diff = git(
        &top,
        &[
            "diff",
            "--no-renames",
            "--name-status",
            "-z",
            rev,
            "--",
            &rel,
        ],
    )?;
    let mut changed = Vec::new();
    let mut fields = diff.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let change = match status.first() {
            Some(b'A') => Change::Added,
            Some(b'D') => Change::Deleted,
            _ => Change::Modified,
        };
        let path = String::from_utf8_lossy(path);
        let inside = path
            .strip_prefix(&format!("{rel}/"))
            .unwrap_or(&path)
            .to_string();
        // What a lifecycle change may have touched is read against REV's
        // version of the file.
        let before = if change == Change::Modified && is_knowledge_path(&inside) {
            Some(git(&top, &["cat-file", "blob", &format!("{rev}:{path}")])?)
        } else {
            None
        };
        changed.push(ChangedFile {
            change,
            path: inside,
            before,
        });
    }
    vouch_core::health::base::check(kb, rev, &base_log, &changed)
}
