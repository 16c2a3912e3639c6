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

/// The mode git records for `path` in `listing` (`ls-files -s -z` or
/// `ls-tree -z`), when it lists that very path.
fn mode_in(listing: &[u8], path: &str) -> Option<String> {
    listing
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .find_map(|entry| {
            let (meta, p) = entry.split_once('\t')?;
            (p == path).then(|| meta.split(' ').next().unwrap_or("").to_string())
        })
}

/// A link (120000) or a gitlink — another repository, a submodule —
/// (160000): git would check out something other than the folder's files.
fn is_link_mode(mode: &str) -> bool {
    mode == "120000" || mode == "160000"
}

/// Refuse a KB whose folder, or a folder above it in the work tree, git
/// records as a symbolic link (mode 120000) or as another repository (a
/// submodule's gitlink, 160000) in the index, at HEAD or at REV: a
/// checkout without links (`core.symlinks=false`), a fresh clone or
/// another machine would read another folder than the one compared — or,
/// for a gitlink, one whose history the base cannot show.
fn refuse_recorded_link(top: &Path, rel: &str, rev: &str) -> Result<(), Error> {
    let mut prefix = String::new();
    for part in rel.split('/') {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        for (at, listing) in [
            (
                "the index",
                git(top, &["ls-files", "-s", "-z", "--", &prefix])?,
            ),
            (
                "HEAD",
                git(top, &["ls-tree", "-z", "HEAD", "--", &prefix]).unwrap_or_default(),
            ),
            (rev, git(top, &["ls-tree", "-z", rev, "--", &prefix])?),
        ] {
            match mode_in(&listing, &prefix) {
                Some(mode) if mode == "120000" => {
                    return Err(Error::invalid(format!(
                        "git records {prefix} as a symbolic link (at {at}): the knowledge base \
                         must be the folder itself at {rel}, where the base's history is (a \
                         branch that moves .vouch/ elsewhere and links it back is refused); \
                         commit the folder, not a link"
                    )));
                }
                Some(mode) if mode == "160000" => {
                    return Err(Error::invalid(format!(
                        "git records {prefix} as another repository (a submodule, at {at}): the \
                         check cannot see the knowledge base's files or history there; check \
                         the knowledge base in its own repository (`vouch audit verify --base` \
                         run there), or commit the folder itself"
                    )));
                }
                _ => {}
            }
        }
    }
    // At REV the KB is a folder, or absent (REV predates it): anything
    // else is not an empty history.
    let listing = git(top, &["ls-tree", "-z", rev, "--", rel])?;
    if let Some(mode) = mode_in(&listing, rel)
        && mode != "040000"
    {
        return Err(Error::invalid(format!(
            "{rel} is not a folder at {rev} (git records mode {mode}): the base's history cannot \
             be read there, and is never taken to be empty"
        )));
    }
    Ok(())
}

/// Where a changed path under the KB folder stands in its layout: `None`
/// for a path vouch writes there (`claims/<id>.yaml`, `sources/<id>/meta.yaml`,
/// `audit.log.jsonl`, …, and what `.gitignore` keeps out, which the core's
/// check names), else why it is refused. Compared without case too: on a
/// case-insensitive checkout (macOS, Windows) `Claims/x.yaml` is
/// `claims/x.yaml`, so a case variant is refused rather than ignored.
fn layout_problem(inside: &str) -> Option<String> {
    use vouch_core::store::layout as l;
    let known = |p: &str| {
        let parts: Vec<&str> = p.split('/').collect();
        match parts.as_slice() {
            [f] => [
                l::CONFIG_FILE,
                l::GITIGNORE_FILE,
                l::GITATTRIBUTES_FILE,
                l::AUDIT_FILE,
            ]
            .contains(f),
            [dir, name] => {
                !name.is_empty() && vouch_core::store::Dir::ALL.iter().any(|d| d.name() == *dir)
            }
            ["sources", id, "meta.yaml" | "content"] => !id.is_empty(),
            _ => false,
        }
    };
    if known(inside) || l::never_committed(inside) {
        return None;
    }
    let lower = inside.to_lowercase();
    Some(if known(&lower) || l::never_committed(&lower) {
        format!(
            "{inside}: this path differs only in case from one in the knowledge base's layout; \
             on a case-insensitive checkout (macOS, Windows) it is that file, unchecked here: \
             written by hand, not through the gate"
        )
    } else {
        format!(
            "{inside}: not part of a knowledge base's layout (vouch never writes it): remove it \
             from .vouch/"
        )
    })
}

/// The part of `path` inside the KB folder `rel` (`/`-separated, from the
/// work tree's top) when some file system reads `path` as inside it: each
/// folder of `rel` in any case, with trailing dots or spaces, as a Windows
/// short name or with the code points HFS+ ignores
/// ([`vouch_core::sources::names_folder`]) — the rules `.git` is refused
/// by.
fn under(path: &str, rel: &str) -> Option<String> {
    let mut parts = path.split('/');
    for folder in rel.split('/') {
        if !vouch_core::sources::names_folder(parts.next()?, folder) {
            return None;
        }
    }
    let inside: Vec<&str> = parts.collect();
    (!inside.is_empty()).then(|| inside.join("/"))
}

/// Compare this KB with REV, as a pull request's check does.
pub(crate) fn check(kb: &Kb, rev: &str) -> Result<BaseReport, Error> {
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
    refuse_recorded_link(&top, &rel, rev)?;
    // REV may predate the knowledge base: then its log is empty. Any other
    // failure to read it is an error, never an empty history.
    let log_at = format!("{rev}:{rel}/audit.log.jsonl");
    let base_log = match git(&top, &["cat-file", "-e", &log_at]) {
        Err(_) => Vec::new(),
        Ok(_) => git(&top, &["cat-file", "blob", &log_at])?,
    };
    let config_at = format!("{rev}:{rel}/{}", vouch_core::store::layout::CONFIG_FILE);
    let base_config = match git(&top, &["cat-file", "-e", &config_at]) {
        Err(_) => None,
        Ok(_) => Some(git(&top, &["cat-file", "blob", &config_at])?),
    };
    // The whole tree's changes, with modes: a path under the KB folder in
    // another case is found too (compared below), and a link or gitlink
    // inside it is refused.
    // The work tree's (what the core's check reads) and HEAD's (what is
    // merged: a gitlink with nothing checked out shows only there).
    let mut diff = git(&top, &["diff", "--no-renames", "--raw", "-z", rev])?;
    diff.extend(
        git(&top, &["diff", "--no-renames", "--raw", "-z", rev, "HEAD"]).unwrap_or_default(),
    );
    let mut seen = std::collections::HashSet::new();
    let mut changed = Vec::new();
    let mut refused = Vec::new();
    let mut wanted: Vec<(usize, String)> = Vec::new();
    let mut fields = diff.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        // `:<old mode> <new mode> <old sha> <new sha> <status>`
        let meta = String::from_utf8_lossy(meta);
        let meta: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (Some(new_mode), Some(status)) = (meta.get(1), meta.get(4)) else {
            continue;
        };
        let path = String::from_utf8_lossy(path);
        // Under the KB folder, as some file system reads the path.
        let Some(inside) = under(&path, &rel) else {
            continue;
        };
        let change = match status.as_bytes().first() {
            Some(b'A') => Change::Added,
            Some(b'D') => Change::Deleted,
            _ => Change::Modified,
        };
        if !path.starts_with(&format!("{rel}/")) {
            refused.push(format!(
                "{}: this path is {rel}/{inside} spelled another way (in another case, with \
                 a trailing dot or space, as a Windows short name, or with a character HFS+ \
                 ignores); on a checkout that reads it so (macOS, Windows) it is that file, \
                 unchecked here: written by hand, not through the gate",
                path.escape_debug()
            ));
            continue;
        }
        if is_link_mode(new_mode) {
            refused.push(format!(
                "{path}: git records it as {} (mode {}): a knowledge base holds files only; \
                 what a link or another repository holds is not what this check reads",
                if *new_mode == "160000" {
                    "another repository (a gitlink)"
                } else {
                    "a symbolic link"
                },
                new_mode
            ));
            continue;
        }
        if !seen.insert(path.to_string()) {
            continue;
        }
        if let Some(why) = layout_problem(&inside) {
            refused.push(format!("{rel}/{why}"));
            continue;
        }
        // What a lifecycle change may have touched, what a delete removed,
        // and what the settings were, is read against REV's version of the
        // file (all of them below, with one git process).
        let config = inside == vouch_core::store::layout::CONFIG_FILE;
        if change != Change::Added && (is_knowledge_path(&inside) || config) {
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
    let mut report =
        vouch_core::health::base::check(kb, rev, &base_log, base_config.as_deref(), &changed)?;
    let mut once = std::collections::HashSet::new();
    refused.retain(|p| once.insert(p.clone()));
    if !refused.is_empty() {
        report.changed_files += refused.len();
        report.problems.extend(refused);
        report.ok = false;
    }
    Ok(report)
}
