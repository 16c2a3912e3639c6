//! The only module that knows where things live under `.vouch/` (protocol §1).

use crate::error::Result;
use crate::ids::{check_id, check_source_id};
use std::path::{Path, PathBuf};

/// The KB's settings ([`crate::settings::Settings`]).
pub const CONFIG_FILE: &str = "config.yaml";
/// Keeps what is derived or local (the index, pending proposals, locks,
/// temp files, models) out of git.
pub const GITIGNORE_FILE: &str = ".gitignore";
/// What `.gitignore` keeps out of git, one pattern a line: derived or
/// local files no branch carries. The pull-request check refuses a branch
/// that commits one anyway (`git add -f`): a planted `state.db` or
/// `.staging/` is a cache or a half-write another machine never made.
pub const GITIGNORE: &str = "proposed/\nstate.db\nstate.db-*\n.lock\n*.lock\n.*.tmp-*\n.staging/\n.watch/\nmodels/\ncaptures/\n";

/// Whether a path under `.vouch/` (`/`-separated) is one [`GITIGNORE`]
/// keeps out of git: a name of it matches a pattern (`*` for any run of
/// characters; a pattern ending in `/` only a folder's name).
pub fn never_committed(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    GITIGNORE.lines().any(|pattern| {
        let (pattern, folder) = match pattern.strip_suffix('/') {
            Some(p) => (p, true),
            None => (pattern, false),
        };
        let names = if folder {
            &parts[..parts.len().saturating_sub(1)]
        } else {
            &parts[..]
        };
        names.iter().any(|name| glob(pattern, name))
    })
}

/// The id a knowledge file's path inside `.vouch/` names
/// (`claims/x.yaml` → `x`, `pages/y.md` → `y`, `sources/<id>/meta.yaml`
/// → `<id>`).
pub fn id_of_inside(path: &str) -> &str {
    if let Some(rest) = path.strip_prefix("sources/")
        && let Some((id, _)) = rest.split_once('/')
    {
        return id;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".md"))
        .unwrap_or(name)
}

/// Refuse a KB root (the `.vouch/` folder itself) that is a symbolic link:
/// everything under `.vouch/` is opened without following links, and the
/// root is no exception. A `.vouch` link committed to a branch would serve
/// another folder's files and log as this project's, and hide from git's
/// history (and the pull-request check) what the base recorded at
/// `.vouch/`. Only the last component counts: a project under a linked
/// folder (`/tmp` → `/private/tmp`) is fine.
pub fn refuse_linked_root(root: &Path) -> Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(root) else {
        return Ok(()); // absent: the caller says so
    };
    if !meta.file_type().is_symlink() {
        return Ok(());
    }
    let target = std::fs::read_link(root)
        .map(|t| t.display().to_string())
        .unwrap_or_else(|_| "?".into());
    Err(crate::error::Error::new(
        crate::error::ErrorKind::NoKb,
        format!(
            "refusing the knowledge base at {}: it is a symbolic link (to {target}), and vouch \
             never reads or writes its knowledge through a link (a branch that moved the \
             folder and linked it back would serve another history as this one). Put the \
             folder itself there: `rm {0} && git mv {target} {0}` (or `mv`)",
            root.display()
        ),
    ))
}

/// `name` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| glob(rest, &tail[i..]))
        }
    }
}

/// The hash-chained audit log, one event per line.
pub const AUDIT_FILE: &str = "audit.log.jsonl";
/// The derived index, rebuilt from the files at any time; bundles never
/// carry it or its `state.db-*` siblings.
pub const INDEX_FILE: &str = "state.db";
/// Where the audit log's length and last hash were when vouch last
/// appended: a hint that spares the next append a scan for branches a git
/// merge left (derived; git-ignored by `state.db-*`).
pub const AUDIT_TIP_FILE: &str = "state.db-audit-tip";
/// A copy of the vectors semantic search scans, read in place by the
/// next process instead of loaded from `state.db` (derived; git-ignored
/// by `state.db-*`).
pub const VECTORS_COPY_FILE: &str = "state.db-vectors";
/// Tells git to merge the audit log by keeping both sides' lines.
pub const GITATTRIBUTES_FILE: &str = ".gitattributes";
/// What `.gitattributes` must say for branches to merge on their own.
pub const GITATTRIBUTES: &str = "# Written by vouch: branches that each appended events merge by keeping\n\
# both sides' lines; the next vouch write joins them (docs/teams.md).\n\
audit.log.jsonl merge=union\n";
/// The KB-wide write lock ([`crate::store::lock`]).
pub const LOCK_FILE: &str = ".lock";
/// Held by the process watching the files (index::sqlite::watch).
pub const WATCH_LOCK_FILE: &str = "watch.lock";
/// Where one-shot commands leave cookies for the watcher to answer.
pub const WATCH_COOKIE_DIR: &str = ".watch";

/// Kinds of object that live one file per id in their own folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// `claims/`: approved claims.
    Claims,
    /// `pages/`: approved pages, markdown with YAML frontmatter.
    Pages,
    /// `entities/`: approved entities.
    Entities,
    /// `relations/`: approved relations.
    Relations,
    /// `evidence/`: quoted spans of sources.
    Evidence,
    /// `sessions/`: agents' work sessions.
    Sessions,
    /// `proposed/`: proposals awaiting review.
    Proposed,
    /// `decided/`: proposals approved or rejected.
    Decided,
}

impl Dir {
    /// Every per-id folder.
    pub const ALL: [Dir; 8] = [
        Dir::Claims,
        Dir::Pages,
        Dir::Entities,
        Dir::Relations,
        Dir::Evidence,
        Dir::Sessions,
        Dir::Proposed,
        Dir::Decided,
    ];
    /// The folder's name under `.vouch/`.
    pub fn name(self) -> &'static str {
        match self {
            Dir::Claims => "claims",
            Dir::Pages => "pages",
            Dir::Entities => "entities",
            Dir::Relations => "relations",
            Dir::Evidence => "evidence",
            Dir::Sessions => "sessions",
            Dir::Proposed => "proposed",
            Dir::Decided => "decided",
        }
    }
    /// The file extension of its objects: `md` for pages, else `yaml`.
    pub fn extension(self) -> &'static str {
        match self {
            Dir::Pages => "md",
            _ => "yaml",
        }
    }
    /// What an id of this folder is called in error messages.
    pub fn id_label(self) -> &'static str {
        match self {
            Dir::Claims => "claim id",
            Dir::Pages => "page id",
            Dir::Entities => "entity id",
            Dir::Relations => "relation id",
            Dir::Evidence => "evidence id",
            Dir::Sessions => "session id",
            Dir::Proposed | Dir::Decided => "proposal id",
        }
    }
}

/// Paths of one knowledge base. Constructing a path validates the id, so a
/// path returned from here is always inside `.vouch/` — but for the
/// derived index, which a replica of a team server may keep on a disk of
/// its own ([`Layout::place_index`]).
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
    /// Where `state.db` and the watcher's lock are, when not in `root`.
    index_dir: std::sync::OnceLock<PathBuf>,
}

impl Layout {
    /// Paths under `root`, the `.vouch/` folder itself.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout {
            root: root.into(),
            index_dir: std::sync::OnceLock::new(),
        }
    }
    /// Keep the derived index (`state.db`, its journal, the watcher's
    /// lock) in `dir` from now on, not in `.vouch/`: a team server's
    /// replica on a host of its own (SQLite must not be shared over a
    /// network filesystem). False if a place was chosen already.
    pub(crate) fn place_index(&self, dir: PathBuf) -> bool {
        self.index_dir.set(dir).is_ok()
    }
    /// Where the derived index is kept: `.vouch/`, or the folder
    /// [`Layout::place_index`] chose.
    pub fn index_dir(&self) -> &Path {
        self.index_dir.get().map_or(&self.root, PathBuf::as_path)
    }
    /// `state.db`, the derived index.
    pub fn index_db(&self) -> PathBuf {
        self.index_dir().join(INDEX_FILE)
    }
    /// The copy of the vectors ([`VECTORS_COPY_FILE`]), beside the index
    /// it was made from.
    pub fn index_vectors(&self) -> PathBuf {
        self.index_dir().join(VECTORS_COPY_FILE)
    }
    /// The watcher's lock file ([`WATCH_LOCK_FILE`]), beside the index it
    /// keeps.
    pub fn watch_lock(&self) -> PathBuf {
        self.index_dir().join(WATCH_LOCK_FILE)
    }
    /// The `.vouch/` directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// A path beneath the root as the audit log and git name it: relative
    /// to `.vouch/`, `/`-separated (`claims/x.yaml`).
    pub fn inside(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    }
    /// The project the KB belongs to: the parent of `.vouch/`.
    pub fn project_root(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }
    /// The folder of one kind of object.
    pub fn dir(&self, dir: Dir) -> PathBuf {
        self.root.join(dir.name())
    }
    /// `<dir>/<id>.<ext>`, after checking the id cannot escape.
    pub fn file(&self, dir: Dir, id: &str) -> Result<PathBuf> {
        check_id(dir.id_label(), id)?;
        Ok(self
            .root
            .join(dir.name())
            .join(format!("{id}.{}", dir.extension())))
    }
    /// `sources/<id>/`, after checking the id is a sha256.
    pub fn source_dir(&self, id: &str) -> Result<PathBuf> {
        check_source_id(id)?;
        Ok(self.sources_dir().join(id))
    }
    /// `sources/<id>/meta.yaml`: the source's metadata.
    pub fn source_meta(&self, id: &str) -> Result<PathBuf> {
        Ok(self.source_dir(id)?.join("meta.yaml"))
    }
    /// `sources/<id>/content`: the source's bytes.
    pub fn source_content(&self, id: &str) -> Result<PathBuf> {
        Ok(self.source_dir(id)?.join("content"))
    }
    /// Every folder `init` creates.
    pub fn all_dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = Dir::ALL.iter().map(|d| self.dir(*d)).collect();
        dirs.insert(2, self.sources_dir());
        dirs
    }
}

/// The fixed files and folders beneath `.vouch/`, one getter each: its
/// name, what it is, and what it joins to the root.
macro_rules! fixed_paths {
    ($($(#[$doc:meta])* $name:ident => $path:expr;)*) => {
        impl Layout {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> PathBuf {
                    self.root.join($path)
                }
            )*
        }
    };
}

fixed_paths! {
    /// `config.yaml`.
    config => CONFIG_FILE;
    /// `.vouch/.gitignore`.
    gitignore => GITIGNORE_FILE;
    /// `captures/`: session capture's scratch buffers (git-ignored).
    captures => "captures";
    /// `audit.log.jsonl`.
    audit_log => AUDIT_FILE;
    /// The audit tip hint ([`AUDIT_TIP_FILE`]).
    audit_tip => AUDIT_TIP_FILE;
    /// `.vouch/.gitattributes` ([`GITATTRIBUTES`]).
    gitattributes => GITATTRIBUTES_FILE;
    /// The write lock's file ([`LOCK_FILE`]).
    lock_file => LOCK_FILE;
    /// The folder for the watcher's cookies ([`WATCH_COOKIE_DIR`]).
    watch_cookies => WATCH_COOKIE_DIR;
    /// `sources/`, one folder per source.
    sources_dir => "sources";
}

/// The id a file in a folder names, if its name has the folder's extension.
pub fn id_from_file_name(dir: Dir, name: &str) -> Option<String> {
    let stem = name.strip_suffix(dir.extension())?.strip_suffix('.')?;
    if stem.is_empty() || stem.starts_with('.') {
        None
    } else {
        Some(stem.to_string())
    }
}

/// A file that belongs to a bundle (protocol §8), named by its path relative to
/// `.vouch/`. Parsing a relative path is how a bundle member is classified.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KbFile {
    /// `config.yaml`.
    Config,
    /// `<dir>/<id>.<ext>` for every per-id folder except `proposed/`.
    Object(Dir, String),
    /// `sources/<sha256>/meta.yaml`.
    SourceMeta(String),
    /// `sources/<sha256>/content`.
    SourceContent(String),
}

/// Folders whose files a bundle carries: [`Dir::ALL`] but `proposed/`, in
/// the same order.
pub const BUNDLE_DIRS: [Dir; 7] = {
    let mut out = [Dir::Claims; 7];
    let (mut from, mut to) = (0, 0);
    while from < Dir::ALL.len() {
        if !matches!(Dir::ALL[from], Dir::Proposed) {
            out[to] = Dir::ALL[from];
            to += 1;
        }
        from += 1;
    }
    out
};

impl KbFile {
    /// The path inside `.vouch/` (and inside a bundle), `/`-separated.
    pub fn relative(&self) -> String {
        match self {
            KbFile::Config => CONFIG_FILE.to_string(),
            KbFile::Object(dir, id) => format!("{}/{id}.{}", dir.name(), dir.extension()),
            KbFile::SourceMeta(id) => format!("sources/{id}/meta.yaml"),
            KbFile::SourceContent(id) => format!("sources/{id}/content"),
        }
    }

    /// Classify a `/`-separated relative path; the error says why a bundle
    /// may not carry it.
    pub fn parse_relative(path: &str) -> std::result::Result<KbFile, String> {
        if path.is_empty() {
            return Err("empty member name".into());
        }
        if path.contains('\0') {
            return Err("member name contains a NUL byte".into());
        }
        if path.starts_with('/') || path.contains(":\\") || path.starts_with('\\') {
            return Err("absolute path; bundle members must be relative to .vouch/".into());
        }
        if path.contains('\\') {
            return Err("member name contains `\\`; bundles use `/` separators".into());
        }
        let parts: Vec<&str> = path.split('/').collect();
        if parts.contains(&"..") {
            return Err("`..` in the path would escape .vouch/".into());
        }
        if parts.iter().any(|p| p.is_empty() || *p == ".") {
            return Err("empty or `.` path component; bundle paths are plain `dir/file`".into());
        }
        match parts[0] {
            "proposed" => {
                return Err(
                    "proposed/ is excluded from bundles (protocol §8): proposals are drafts local to one KB"
                        .into(),
                );
            }
            AUDIT_FILE => {
                return Err(
                    "audit.log.jsonl is excluded from bundles (protocol §8): the audit log belongs to one KB"
                        .into(),
                );
            }
            p if p.starts_with(INDEX_FILE) => {
                return Err(
                    "state.db is excluded from bundles (protocol §8): the index is derived from the files"
                        .into(),
                );
            }
            _ => {}
        }
        let unknown = || {
            format!(
                "not a file a vouch bundle carries (expected {CONFIG_FILE}, sources/<sha256>/meta.yaml \
                 or content, or <id> files in {})",
                BUNDLE_DIRS.map(|d| format!("{}/", d.name())).join(", ")
            )
        };
        match parts.as_slice() {
            [CONFIG_FILE] => Ok(KbFile::Config),
            ["sources", sha, leaf] if crate::ids::is_source_id(sha) => match *leaf {
                "meta.yaml" => Ok(KbFile::SourceMeta(sha.to_string())),
                "content" => Ok(KbFile::SourceContent(sha.to_string())),
                _ => Err(unknown()),
            },
            ["sources", sha, _] => Err(format!(
                "sources/{sha}: a source folder must be named by the lowercase sha256 of its content"
            )),
            [dir, file] => {
                let dir = BUNDLE_DIRS
                    .iter()
                    .find(|d| d.name() == *dir)
                    .ok_or_else(unknown)?;
                let id = id_from_file_name(*dir, file).ok_or_else(unknown)?;
                check_id(dir.id_label(), &id).map_err(|e| e.message)?;
                Ok(KbFile::Object(*dir, id))
            }
            _ => Err(unknown()),
        }
    }
}

impl Layout {
    /// Where a bundle file lives in this KB.
    pub fn path_of(&self, f: &KbFile) -> Result<PathBuf> {
        match f {
            KbFile::Config => Ok(self.config()),
            KbFile::Object(dir, id) => self.file(*dir, id),
            KbFile::SourceMeta(id) => self.source_meta(id),
            KbFile::SourceContent(id) => self.source_content(id),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn never_committed_reads_the_gitignore_patterns() {
        use super::never_committed;
        for yes in [
            "state.db",
            "state.db-wal",
            "state.db-audit-tip",
            "state.db-vectors",
            ".state.db-vectors.tmp-x1",
            ".lock",
            "watch.lock",
            ".staging/journal.json",
            ".staging/0",
            "proposed/20260101-000000-aaaaaaaa.yaml",
            ".watch/x",
            "models/minilm/model.safetensors",
            ".claims.yaml.tmp-1",
            "claims/.x.yaml.tmp-2",
        ] {
            assert!(never_committed(yes), "{yes}");
        }
        for no in [
            "claims/x.yaml",
            "claims/proposed.yaml",
            "claims/lock",
            "decided/20260101-000000-aaaaaaaa.yaml",
            "audit.log.jsonl",
            "config.yaml",
            ".gitignore",
            "sources/ab/content",
        ] {
            assert!(!never_committed(no), "{no}");
        }
    }

    use super::*;

    #[test]
    fn bundle_paths_round_trip_and_hostile_ones_are_refused_with_a_reason() {
        let sha = "a".repeat(64);
        for f in [
            KbFile::Config,
            KbFile::Object(Dir::Claims, "x-1".into()),
            KbFile::Object(Dir::Pages, "p".into()),
            KbFile::Object(Dir::Decided, "20260101-000000-abcdef01".into()),
            KbFile::SourceMeta(sha.clone()),
            KbFile::SourceContent(sha.clone()),
        ] {
            assert_eq!(KbFile::parse_relative(&f.relative()), Ok(f));
        }
        for (bad, why) in [
            ("../x", ".."),
            ("claims/../../x.yaml", ".."),
            ("/etc/passwd", "absolute"),
            ("C:\\x", "absolute"),
            ("claims\\x.yaml", "\\"),
            ("claims//x.yaml", "empty"),
            ("./config.yaml", "`.`"),
            ("proposed/x.yaml", "excluded"),
            ("state.db", "excluded"),
            ("state.db-wal", "excluded"),
            ("audit.log.jsonl", "excluded"),
            ("claims/x.md", "not a file"),
            ("claims/.hidden.yaml", "not a file"),
            ("sources/abc/content", "sha256"),
            (".gitignore", "not a file"),
            ("", "empty"),
        ] {
            let err = KbFile::parse_relative(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }
}
