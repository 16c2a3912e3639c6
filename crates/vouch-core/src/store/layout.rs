//! The only module that knows where things live under `.vouch/` (SPEC §1).

use crate::error::Result;
use crate::ids::{check_id, check_source_id};
use std::path::{Path, PathBuf};

pub const CONFIG_FILE: &str = "config.yaml";
pub const GITIGNORE_FILE: &str = ".gitignore";
pub const AUDIT_FILE: &str = "audit.log.jsonl";
pub const INDEX_FILE: &str = "state.db";
pub const LOCK_FILE: &str = ".lock";

/// Kinds of object that live one file per id in their own folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    Claims,
    Pages,
    Entities,
    Relations,
    Evidence,
    Sessions,
    Proposed,
    Decided,
}

impl Dir {
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
/// path returned from here is always inside `.vouch/`.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Layout { root: root.into() }
    }
    /// The `.vouch/` directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The project the KB belongs to: the parent of `.vouch/`.
    pub fn project_root(&self) -> &Path {
        self.root.parent().unwrap_or(&self.root)
    }
    pub fn config(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }
    pub fn gitignore(&self) -> PathBuf {
        self.root.join(GITIGNORE_FILE)
    }
    pub fn audit_log(&self) -> PathBuf {
        self.root.join(AUDIT_FILE)
    }
    pub fn index_db(&self) -> PathBuf {
        self.root.join(INDEX_FILE)
    }
    pub fn lock_file(&self) -> PathBuf {
        self.root.join(LOCK_FILE)
    }
    pub fn dir(&self, dir: Dir) -> PathBuf {
        self.root.join(dir.name())
    }
    pub fn sources_dir(&self) -> PathBuf {
        self.root.join("sources")
    }
    /// `<dir>/<id>.<ext>`, after checking the id cannot escape.
    pub fn file(&self, dir: Dir, id: &str) -> Result<PathBuf> {
        check_id(dir.id_label(), id)?;
        Ok(self
            .root
            .join(dir.name())
            .join(format!("{id}.{}", dir.extension())))
    }
    pub fn source_dir(&self, id: &str) -> Result<PathBuf> {
        check_source_id(id)?;
        Ok(self.sources_dir().join(id))
    }
    pub fn source_meta(&self, id: &str) -> Result<PathBuf> {
        Ok(self.source_dir(id)?.join("meta.yaml"))
    }
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

/// The id a file in a folder names, if its name has the folder's extension.
pub fn id_from_file_name(dir: Dir, name: &str) -> Option<String> {
    let stem = name.strip_suffix(dir.extension())?.strip_suffix('.')?;
    if stem.is_empty() || stem.starts_with('.') {
        None
    } else {
        Some(stem.to_string())
    }
}
