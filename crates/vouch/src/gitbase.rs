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

/// The contents of `names` (`REV:path`), in order, through one `git
/// cat-file --batch`; `None` for one git does not have.
fn blobs<'a>(
    dir: &Path,
    names: impl Iterator<Item = &'a str>,
) -> Result<Vec<Option<Vec<u8>>>, Error> {
    use std::io::{BufRead, Read, Write};
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let failed = |e: std::io::Error| Error::invalid(format!("git cat-file --batch: {e}"));
    let mut child = Command::new("git")
        .current_dir(dir)
        .args(["cat-file", "--batch"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| Error::invalid(format!("--base needs git on PATH: {e}")))?;
    let mut input = child.stdin.take().expect("piped stdin");
    let requests: String = names.iter().map(|n| format!("{n}\n")).collect();
    // Written on a thread of its own: git answers while it reads, and a
    // full pipe each way would stall both.
    let writer = std::thread::spawn(move || input.write_all(requests.as_bytes()));
    let mut output = std::io::BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut out = Vec::with_capacity(names.len());
    for _ in &names {
        let mut header = String::new();
        output.read_line(&mut header).map_err(failed)?;
        // `<sha> blob <size>`, or `<name> missing`.
        let size = header
            .trim_end()
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|_| header.contains(" blob "));
        let Some(size) = size else {
            out.push(None);
            continue;
        };
        let mut blob = vec![0; size + 1];
        output.read_exact(&mut blob).map_err(failed)?;
        blob.truncate(size);
        out.push(Some(blob));
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(out)
}

/// Refuse a KB whose folder, or a folder above it in the work tree, git
/// records as a symbolic link (mode 120000) in the index or at HEAD: a
/// checkout without links (`core.symlinks=false`) or another machine would
/// read another folder than the one compared.
fn refuse_recorded_link(top: &Path, rel: &str) -> Result<(), Error> {
    let mut prefix = String::new();
    for part in rel.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        for listing in [
            git(top, &["ls-files", "-s", "-z", "--", &prefix])?,
            git(top, &["ls-tree", "-z", "HEAD", "--", &prefix]).unwrap_or_default(),
        ] {
            let linked = listing
                .split(|b| *b == 0)
                .map(String::from_utf8_lossy)
                .any(|entry| {
                    entry.starts_with("120000 ")
                        && entry.split_once('\t').map(|(_, p)| p) == Some(prefix.as_str())
                });
            if linked {
                return Err(Error::invalid(format!(
                    "git records {prefix} as a symbolic link: the knowledge base must be the \
                     folder itself at {rel}, where the base's history is (a branch that moves \
                     .vouch/ elsewhere and links it back is refused); commit the folder, not a link"
                )));
            }
        }
    }
    Ok(())
}

/// Compare this KB with REV, as a pull request's check does.
pub fn check(kb: &Kb, rev: &str) -> Result<BaseReport, Error> {
    if rev.starts_with('-') || rev.is_empty() {
        return Err(Error::invalid(format!(
            "--base {rev:?}: name a revision (a branch such as origin/main, a tag or a commit)"
        )));
    }
    // The KB root is compared by its literal place in the work tree: a
    // `.vouch` that is a link (on disk, or as git records it) would point
    // the check at another folder, whose history the base never had.
    let root = kb.layout().root();
    vouch_core::store::layout::refuse_linked_root(root)?;
    let name = root
        .file_name()
        .ok_or_else(|| Error::invalid("the knowledge base has no folder name"))?;
    let parent = root
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = parent.canonicalize().map_err(|e| Error::io(parent, e))?;
    let vouch = parent.join(name);
    let top = PathBuf::from(
        String::from_utf8_lossy(&git(&parent, &["rev-parse", "--show-toplevel"])?)
            .trim()
            .to_string(),
    );
    let top = top.canonicalize().unwrap_or(top);
    let rel = vouch
        .strip_prefix(&top)
        .map_err(|_| Error::invalid("the knowledge base is not inside the git work tree"))?
        .to_string_lossy()
        .replace('\\', "/");
    refuse_recorded_link(&top, &rel)?;
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
    let mut wanted: Vec<(usize, String)> = Vec::new();
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
        // What a lifecycle change may have touched, and what the settings
        // were, is read against REV's version of the file (all of them
        // below, with one git process).
        let config = inside == vouch_core::store::layout::CONFIG_FILE;
        if (change == Change::Modified && is_knowledge_path(&inside))
            || (config && change != Change::Added)
        {
            wanted.push((changed.len(), format!("{rev}:{path}")));
        }
        changed.push(ChangedFile {
            change,
            path: inside,
            before: None,
        });
    }
    let blobs = blobs(&top, wanted.iter().map(|(_, name)| name.as_str()))?;
    for ((at, _), blob) in wanted.iter().zip(blobs) {
        changed[*at].before = blob;
    }
    vouch_core::health::base::check(kb, rev, &base_log, &changed)
}
