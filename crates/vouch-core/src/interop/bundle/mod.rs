//! Bundles (protocol §8): move reviewed knowledge between knowledge bases as one
//! `.tar.gz` with a `manifest.json` carrying the sha256 and size of every
//! file.
//!
//! Export is deterministic: members sorted by path, `manifest.json` first,
//! fixed tar metadata (mode 0644, uid/gid 0, no user names, mtime =
//! `generated_at`), gzip header without name or mtime. `generated_at` is the
//! time of the KB's last change — the newest audit event other than
//! `bundle.export` and `index.rebuild` — so the same KB exports to the same
//! bytes; the time of the export itself is in its `bundle.export` event.
//!
//! Import streams the archive once, checking each member as it arrives:
//! only regular files with plain relative paths that a bundle may carry,
//! each listed in the manifest with matching size and sha256, never twice.
//! Declared sizes are checked against the `bundles:` limits before a byte of
//! a member is read, and a counting reader stops decompression at the total
//! limit, so a decompression bomb costs neither memory nor disk. Then the
//! content is checked as knowledge: source content must hash to its folder
//! name, claims must cite, references must resolve (in the bundle or in this
//! KB). Any problem refuses the whole bundle; nothing is written.

mod apply;
mod checks;
mod export;
mod read;

pub use apply::{export_check, import_apply, import_check};
use checks::*;
pub use export::export;
use read::*;

use crate::error::{Error, ErrorKind, Result};
use crate::ids::{is_source_id, sha256_hex};
use crate::kb::{Caller, Kb};
use crate::model::*;
use crate::params::*;
use crate::review::gate::{Draft, imported_proposal};
use crate::settings::{BundleSettings, Settings};
use crate::store::layout::{BUNDLE_DIRS, KbFile};
use crate::store::{Dir, atomic};
use crate::stored::Stored;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The manifest's name: the bundle's first member.
pub const MANIFEST: &str = "manifest.json";
/// The bundle format version written in `manifest.json`.
pub const BUNDLE_VERSION: u64 = 1;
/// Largest GNU long-name record accepted (paths are far shorter).
const LONG_NAME_LIMIT: u64 = 4096;
/// Bytes allowed after the tar end-of-archive marker (tar record padding).
const TRAILER_LIMIT: u64 = 1 << 20;
const CHUNK: usize = 64 * 1024;
/// Largest claim, page, entity, relation, evidence, session, decided record,
/// source meta or config a bundle may carry (source content is limited by
/// `bundles.max_file_bytes`).
const MAX_OBJECT_BYTES: u64 = 1 << 20;

/// The manifest key listing, by bundle path, the knowledge no review let
/// into the KB a bundle came from.
pub const UNREVIEWED_KEY: &str = "unreviewed";

/// `manifest.json`: the bundle's format version and every other member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Ours is 1; the spec's is "0.1". vouch 1.x writes none and says
    /// `spec: "vouch-bundle-0.1"` instead (kept in `extra`).
    #[serde(default)]
    pub version: Value,
    /// Absent from 1.x manifests.
    #[serde(default)]
    pub generated_at: String,
    /// Every member but the manifest, with its size and sha256.
    pub files: Vec<ManifestFile>,
    /// Fields this vouch does not read, kept as they are.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One member as the manifest lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestFile {
    /// Its path in the bundle, `/`-separated: the same as inside `.vouch/`.
    pub path: String,
    /// The sha256 of its bytes, in hex.
    pub sha256: String,
    /// 1.x calls it `size`.
    #[serde(alias = "size")]
    pub bytes: u64,
}

impl Manifest {
    /// A manifest this vouch reads: ours (version 1), the spec's ("0.1"),
    /// or vouch 1.x's (no version, `spec: "vouch-bundle-0.1"`).
    pub fn supported(&self) -> bool {
        let v = &self.version;
        v.as_u64() == Some(BUNDLE_VERSION)
            || matches!(v.as_str(), Some("1" | "0.1"))
            || v.as_f64() == Some(0.1)
            || (v.is_null()
                && self
                    .extra
                    .get("spec")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.starts_with("vouch-bundle-0.")))
    }
}

// ----- paths ------------------------------------------------------------------------

/// Resolve a bundle path from a caller. Relative paths are relative to the
/// project (the folder holding `.vouch/`). Agents are confined to the
/// project, outside git's own files; nobody may write a bundle inside
/// `.vouch/`.
fn resolve(kb: &Kb, caller: &Caller, given: &str, writing: bool) -> Result<PathBuf> {
    if given.trim().is_empty() {
        return Err(Error::invalid("path: must not be empty"));
    }
    if given.contains('\0') {
        return Err(Error::invalid("path: contains a NUL byte"));
    }
    let project = kb.layout().project_root();
    let project = project.canonicalize().map_err(|e| Error::io(project, e))?;
    let kb_root = kb
        .layout()
        .root()
        .canonicalize()
        .map_err(|e| Error::io(kb.layout().root(), e))?;
    let joined = {
        let p = Path::new(given);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            project.join(p)
        }
    };
    let real = if writing {
        let name = joined
            .file_name()
            .ok_or_else(|| Error::invalid(format!("out {given:?}: not a file name")))?;
        let parent = joined.parent().unwrap_or(Path::new("/"));
        let parent = parent.canonicalize().map_err(|e| {
            Error::invalid(format!(
                "out {given:?}: folder {} is not usable ({e})",
                parent.display()
            ))
        })?;
        let real = parent.join(name);
        if real.is_dir() {
            return Err(Error::invalid(format!(
                "out {given:?} is a directory; name the .tar.gz file to write"
            )));
        }
        if real.starts_with(&kb_root) {
            return Err(Error::invalid(format!(
                "out {given:?} is inside .vouch/; write the bundle outside the knowledge base"
            )));
        }
        // Replace an earlier bundle, never some other file (a typo, or an
        // agent aiming at .git/config or at any other gzip file).
        if std::fs::symlink_metadata(&real).is_ok() && !is_bundle(&real) {
            return Err(Error::conflict(format!(
                "out {given:?} exists and is not a vouch bundle (no readable manifest.json \
                 listing its files); refusing to replace it. Choose a new name or remove the \
                 file first"
            )));
        }
        real
    } else {
        let real = joined
            .canonicalize()
            .map_err(|e| Error::invalid(format!("bundle {given:?}: {e}")))?;
        let meta = std::fs::metadata(&real).map_err(|e| Error::io(&real, e))?;
        if !meta.is_file() {
            return Err(Error::invalid(format!(
                "bundle {given:?} is not a regular file"
            )));
        }
        real
    };
    if caller.is_agent() {
        let rule = "agents may only use bundle paths inside the project";
        let Ok(relative) = real.strip_prefix(&project) else {
            return Err(Error::invalid(format!(
                "path {given:?} resolves to {} outside the project {}; {rule}",
                real.display(),
                project.display()
            )));
        };
        crate::sources::refuse_git_dir(&project, relative, given, rule)?;
    }
    Ok(real)
}

/// Is the file at `path` a vouch bundle: a regular file, gzip, whose tar
/// holds a `manifest.json` (first, as we write it, or anywhere, as 1.x does)
/// that parses as an object with a `files` list? Reads at most 64 MiB of
/// decompressed data, so a hostile file costs little.
fn is_bundle(path: &Path) -> bool {
    const LOOK: u64 = 64 * 1024 * 1024;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    let Ok(file) = File::open(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let counted = CountingReader {
        inner: flate2::read::GzDecoder::new(BufReader::new(file)),
        count: 0,
        limit: LOOK,
    };
    let mut archive = tar::Archive::new(counted);
    let Ok(entries) = archive.entries() else {
        return false;
    };
    for entry in entries {
        let Ok(mut entry) = entry else { return false };
        if entry.path_bytes().as_ref() != MANIFEST.as_bytes() {
            continue;
        }
        if entry.size() > 64 * 1024 * 1024 {
            return false;
        }
        let mut bytes = Vec::new();
        if entry.read_to_end(&mut bytes).is_err() {
            return false;
        }
        return serde_json::from_slice::<Value>(&bytes)
            .is_ok_and(|v| v.get("files").is_some_and(Value::is_array));
    }
    false
}

// ----- hashing helpers ----------------------------------------------------------------

/// sha256 and length of a stream, copying it into `keep` if given.
fn hash_stream(r: &mut impl Read, mut keep: Option<&mut Vec<u8>>) -> io::Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut n = 0u64;
    loop {
        let k = r.read(&mut buf)?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        if let Some(v) = keep.as_mut() {
            v.extend_from_slice(&buf[..k]);
        }
        n += k as u64;
    }
    Ok((crate::ids::hex(&h.finalize()), n))
}

/// sha256 and length of a file, streamed.
fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    hash_stream(&mut f, None).map_err(|e| Error::io(path, e))
}

/// Counts bytes written and hashes them.
struct HashingWriter<W: Write> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
