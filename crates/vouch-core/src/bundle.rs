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

use crate::error::{Error, ErrorKind, Result};
use crate::gate::{Draft, imported_proposal};
use crate::ids::{is_source_id, sha256_hex};
use crate::kb::{Caller, Kb, Stored};
use crate::model::*;
use crate::params::*;
use crate::settings::{BundleSettings, Settings};
use crate::store::layout::{BUNDLE_DIRS, KbFile};
use crate::store::{Dir, atomic};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

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

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub version: Value,
    pub generated_at: String,
    pub files: Vec<ManifestFile>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ManifestFile {
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

// ----- paths ------------------------------------------------------------------------

/// Resolve a bundle path from a caller. Relative paths are relative to the
/// project (the folder holding `.vouch/`). Agents are confined to the
/// project; nobody may write a bundle inside `.vouch/`.
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
    if caller.is_agent() && !real.starts_with(&project) {
        return Err(Error::invalid(format!(
            "path {given:?} resolves to {} outside the project {}; agents may only use \
             bundle paths inside the project",
            real.display(),
            project.display()
        )));
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
    Ok((hex(&h.finalize()), n))
}

/// sha256 and length of a file, streamed.
fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    hash_stream(&mut f, None).map_err(|e| Error::io(path, e))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

// ----- export -------------------------------------------------------------------------

/// Every file a bundle of this KB carries, sorted by bundle path.
fn bundle_files(kb: &Kb) -> Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    let layout = kb.layout();
    if crate::store::nofollow::is_file(&layout.config()) {
        files.push(KbFile::Config);
    }
    for dir in BUNDLE_DIRS {
        for id in kb.ids(dir)? {
            files.push(KbFile::Object(dir, id));
        }
    }
    for id in kb.source_ids()? {
        files.push(KbFile::SourceMeta(id.clone()));
        files.push(KbFile::SourceContent(id));
    }
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let path = layout.path_of(&f)?;
        if !crate::store::nofollow::is_file(&path) {
            continue; // gone, or a link (never followed; doctor reports it)
        }
        // Content that does not hash to its source id is never served.
        if let KbFile::SourceContent(id) = &f
            && let Err(e) = kb.source_content(id)
        {
            kb.warn(format!("export: left out {}: {e}", f.relative()));
            continue;
        }
        out.push((f.relative(), path));
    }
    out.sort();
    Ok(out)
}

/// The time of the KB's last change: the newest audit event that is not an
/// export or an index rebuild (neither changes knowledge).
fn last_change(kb: &Kb) -> Result<Timestamp> {
    let mut found = None;
    kb.audit_log().scan_back(|ev| {
        match ev.get("event").and_then(Value::as_str) {
            Some("bundle.export" | "index.rebuild") | None => return false,
            _ => {}
        }
        found = ev
            .get("created_at")
            .and_then(Value::as_str)
            .and_then(Timestamp::parse);
        found.is_some()
    })?;
    Ok(found.unwrap_or(Timestamp(chrono::DateTime::UNIX_EPOCH)))
}

fn tar_header(size: u64, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_size(size);
    h.set_mode(0o644);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h
}

pub fn export(kb: &Kb, caller: &Caller, p: ExportParams) -> Result<ExportResult> {
    let out = resolve(kb, caller, &p.out, true)?;
    let _lock = kb.lock()?;
    let files = bundle_files(kb)?;
    let mut entries = Vec::with_capacity(files.len());
    for (rel, path) in &files {
        let bytes = kb.read_file(path)?.unwrap_or_default();
        let (sha256, bytes) = (sha256_hex(&bytes), bytes.len() as u64);
        entries.push(ManifestFile {
            path: rel.clone(),
            sha256,
            bytes,
        });
    }
    let generated_at = last_change(kb)?;
    let manifest = Manifest {
        version: json!(BUNDLE_VERSION),
        generated_at: generated_at.to_string(),
        files: entries,
        extra: BTreeMap::new(),
    };
    let mut manifest_bytes = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| Error::internal(format!("manifest encoding: {e}")))?;
    manifest_bytes.push(b'\n');
    let mtime = generated_at.0.timestamp().max(0) as u64;
    let mut archive_sha = String::new();
    let mut archive_bytes = 0u64;
    atomic::write_with(&out, |file| {
        let io_err = |e: io::Error| Error::io(&out, e);
        let hw = HashingWriter {
            inner: BufWriter::new(file),
            hash: Sha256::new(),
            bytes: 0,
        };
        let gz = flate2::GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(hw, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mut h = tar_header(manifest_bytes.len() as u64, mtime);
        tar.append_data(&mut h, MANIFEST, &manifest_bytes[..])
            .map_err(io_err)?;
        for ((rel, path), entry) in files.iter().zip(&manifest.files) {
            let bytes = kb.read_file(path)?.unwrap_or_default();
            if sha256_hex(&bytes) != entry.sha256 {
                return Err(Error::conflict(format!(
                    "{} changed while it was being exported (edited outside vouch?); export again",
                    path.display()
                )));
            }
            let mut h = tar_header(bytes.len() as u64, mtime);
            tar.append_data(&mut h, rel, &bytes[..]).map_err(io_err)?;
        }
        let gz = tar.into_inner().map_err(io_err)?;
        let mut hw = gz.finish().map_err(io_err)?;
        hw.flush().map_err(io_err)?;
        archive_sha = hex(&hw.hash.finalize());
        archive_bytes = hw.bytes;
        Ok(())
    })?;
    let path = out.display().to_string();
    let mut ev = kb.event(
        "bundle.export",
        &caller.actor,
        vec![archive_sha.clone()],
        json!({"path": path, "files": files.len(), "bytes": archive_bytes,
               "generated_at": manifest.generated_at}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(ExportResult {
        path,
        files: files.len(),
        bytes: archive_bytes,
        sha256: archive_sha,
        generated_at: manifest.generated_at,
    })
}

// ----- reading an archive ---------------------------------------------------------------

/// The error a [`CountingReader`] raises at its limit.
#[derive(Debug)]
struct LimitExceeded(String);
impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for LimitExceeded {}

/// Stops decompression once `limit` bytes have come out of it.
struct CountingReader<R> {
    inner: R,
    count: u64,
    limit: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.count >= self.limit {
            return Err(io::Error::other(LimitExceeded(format!(
                "the archive expands to more than {} bytes (bundles.max_total_bytes plus tar \
                 headers); refusing it as a decompression bomb",
                self.limit
            ))));
        }
        let room = (self.limit - self.count).min(buf.len() as u64) as usize;
        let n = self.inner.read(&mut buf[..room])?;
        self.count += n as u64;
        Ok(n)
    }
}

fn archive_error(e: &io::Error) -> String {
    if let Some(l) = e.get_ref().and_then(|i| i.downcast_ref::<LimitExceeded>()) {
        return l.to_string();
    }
    format!("the archive is truncated or corrupt ({e}); copy or export it again")
}

/// A parsed bundle file.
#[derive(Debug, Clone)]
enum Parsed {
    Config(Box<Settings>),
    Claim(Box<Claim>),
    Page(Box<Page>),
    Entity(Entity),
    Relation(Relation),
    Evidence(Evidence),
    Session,
    Decided(Box<Proposal>),
    Source(Box<Source>),
    Content,
}

struct Member {
    file: KbFile,
    sha256: String,
    /// Kept only when the caller asked (import_apply), or to parse it.
    content: Option<Vec<u8>>,
    parsed: Parsed,
}

/// What one pass over an archive found.
struct Scan {
    /// By bundle path, manifest.json excluded.
    members: BTreeMap<String, Member>,
    problems: Vec<BundleProblem>,
    manifest_files: usize,
    /// `review.require_citations` of the bundle's own config.yaml.
    bundle_requires_citations: Option<bool>,
    /// Evidence members whose quote was checked against source content
    /// that came later in the archive (an export puts evidence/ before
    /// sources/).
    quotes_checked: HashSet<String>,
}

impl Scan {
    fn problem(&mut self, path: &str, reason: impl Into<String>) {
        self.problems.push(BundleProblem {
            path: path.to_string(),
            reason: reason.into(),
        });
    }
}

fn parse_member(file: &KbFile, path: &Path, bytes: &[u8]) -> std::result::Result<Parsed, String> {
    if matches!(file, KbFile::SourceContent(_)) {
        return Ok(Parsed::Content);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "not valid UTF-8".to_string())?;
    let msg = |e: Error| format!("does not parse: {}", e.message);
    let check_id = |have: &str, want: &str| {
        if have == want {
            Ok(())
        } else {
            Err(format!(
                "the file says id {have:?} but is named {want:?}; ids and file names must agree"
            ))
        }
    };
    Ok(match file {
        KbFile::Config => Parsed::Config(Box::new(Settings::parse(path, text).map_err(msg)?)),
        KbFile::SourceMeta(sha) => {
            let s: Source = crate::store::yaml::from_yaml(path, text).map_err(msg)?;
            check_id(&s.id, sha)?;
            Parsed::Source(Box::new(s))
        }
        KbFile::SourceContent(_) => Parsed::Content,
        KbFile::Object(dir, id) => {
            fn dec<T: Stored>(path: &Path, text: &str, id: &str) -> std::result::Result<T, String> {
                let v =
                    T::decode(path, text).map_err(|e| format!("does not parse: {}", e.message))?;
                if v.id() != id {
                    return Err(format!(
                        "the file says id {:?} but is named {id:?}; ids and file names must agree",
                        v.id()
                    ));
                }
                Ok(v)
            }
            match dir {
                Dir::Claims => Parsed::Claim(Box::new(dec(path, text, id)?)),
                Dir::Pages => Parsed::Page(Box::new(dec(path, text, id)?)),
                Dir::Entities => Parsed::Entity(dec(path, text, id)?),
                Dir::Relations => Parsed::Relation(dec(path, text, id)?),
                Dir::Evidence => Parsed::Evidence(dec(path, text, id)?),
                Dir::Sessions => {
                    dec::<Session>(path, text, id)?;
                    Parsed::Session
                }
                Dir::Decided | Dir::Proposed => {
                    let p: Proposal = crate::store::yaml::from_yaml(path, text).map_err(msg)?;
                    check_id(&p.id, id)?;
                    Parsed::Decided(Box::new(p))
                }
            }
        }
    })
}

/// Parse and check `manifest.json`; `Err` is fatal.
fn read_manifest(
    scan: &mut Scan,
    bytes: &[u8],
    limits: &BundleSettings,
) -> std::result::Result<BTreeMap<String, ManifestFile>, String> {
    let m: Manifest = serde_json::from_slice(bytes).map_err(|e| {
        format!("manifest.json is not a valid manifest ({e}); expected {{version, generated_at, files: [{{path, sha256, bytes}}]}}")
    })?;
    let supported = m.version.as_u64() == Some(BUNDLE_VERSION)
        || m.version.as_str() == Some(&BUNDLE_VERSION.to_string());
    if !supported {
        return Err(format!(
            "manifest.json has bundle version {}; this vouch reads version {BUNDLE_VERSION}",
            m.version
        ));
    }
    if m.files.len() as u64 > limits.max_members {
        return Err(format!(
            "manifest.json lists {} files, over the limit of {} (bundles.max_members in config.yaml)",
            m.files.len(),
            limits.max_members
        ));
    }
    let declared: u64 = m.files.iter().map(|f| f.bytes).fold(0, u64::saturating_add);
    if declared > limits.max_total_bytes {
        return Err(format!(
            "manifest.json declares {declared} bytes in total, over the limit of {} \
             (bundles.max_total_bytes in config.yaml)",
            limits.max_total_bytes
        ));
    }
    scan.manifest_files = m.files.len();
    let mut out = BTreeMap::new();
    for f in m.files {
        if let Err(reason) = KbFile::parse_relative(&f.path) {
            scan.problem(&f.path, format!("listed in manifest.json: {reason}"));
            continue;
        }
        if !is_source_id(&f.sha256) {
            scan.problem(
                &f.path,
                format!(
                    "manifest.json gives sha256 {:?}, not 64 lowercase hex",
                    f.sha256
                ),
            );
        }
        if out.contains_key(&f.path) {
            scan.problem(&f.path, "listed twice in manifest.json");
            continue;
        }
        out.insert(f.path.clone(), f);
    }
    Ok(out)
}

/// Read a member (it has passed the size checks), hashing it; the bytes
/// are returned only when `keep`.
fn read_member(r: &mut impl Read, keep: bool) -> io::Result<(String, Option<Vec<u8>>)> {
    let mut out = keep.then(Vec::new);
    let (sha, _) = hash_stream(r, out.as_mut())?;
    Ok((sha, out))
}

fn member_kind(t: tar::EntryType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_hard_link() {
        "a hard link"
    } else if t.is_character_special() || t.is_block_special() {
        "a device file"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_pax_local_extensions() || t.is_pax_global_extensions() {
        "a PAX extended header (vouch bundles use GNU tar headers)"
    } else if t.is_gnu_longlink() {
        "a GNU long link name"
    } else if t.is_gnu_sparse() {
        "a sparse file"
    } else {
        "an unsupported member type"
    }
}

/// One streaming pass over a bundle. `keep` says whether a member's bytes
/// are kept (beyond what parsing needs). A problem that makes the rest of
/// the archive unreadable stops the pass; every other problem is collected.
/// One bundle scan at a time per process: each may hold up to
/// `bundles.max_objects_bytes` of parsed objects, and a server must not
/// multiply that by however many callers ask at once.
static SCANNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn scan(path: &Path, limits: &BundleSettings, keep: &dyn Fn(&KbFile) -> bool) -> Result<Scan> {
    let _one_at_a_time = SCANNING.lock().unwrap_or_else(|e| e.into_inner());
    let mut scan = Scan {
        members: BTreeMap::new(),
        problems: Vec::new(),
        manifest_files: 0,
        bundle_requires_citations: None,
        quotes_checked: HashSet::new(),
    };
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut magic = [0u8; 2];
    let got = file.read(&mut magic).map_err(|e| Error::io(path, e))?;
    if got < 2 || magic != [0x1f, 0x8b] {
        scan.problem(
            "",
            "not a gzip file (it does not start with the gzip magic bytes 1f 8b); a bundle is \
             the .tar.gz that `vouch export` writes",
        );
        return Ok(scan);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // Tar headers and padding come on top of the members' own bytes.
    let overhead = limits
        .max_members
        .saturating_add(16)
        .saturating_mul(3 * 512)
        .saturating_add(TRAILER_LIMIT);
    let counted = CountingReader {
        inner: flate2::read::GzDecoder::new(BufReader::new(file)),
        count: 0,
        limit: limits.max_total_bytes.saturating_add(overhead),
    };
    let mut archive = tar::Archive::new(counted);
    let fatal = scan_entries(&mut archive, &mut scan, limits, keep);
    match fatal {
        Err(reason) => scan.problem("", reason),
        Ok(()) => {
            // Read to the end of the gzip stream: this verifies its CRC and
            // length, so a truncated or altered archive is caught here too.
            let mut rest = archive.into_inner().take(TRAILER_LIMIT + 1);
            match io::copy(&mut rest, &mut io::sink()) {
                Ok(n) if n > TRAILER_LIMIT => {
                    scan.problem("", "unexpected data after the end of the tar archive")
                }
                Ok(_) => {}
                Err(e) => scan.problem("", archive_error(&e)),
            }
        }
    }
    Ok(scan)
}

fn scan_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    scan: &mut Scan,
    limits: &BundleSettings,
    keep: &dyn Fn(&KbFile) -> bool,
) -> std::result::Result<(), String> {
    let entries = archive.entries().map_err(|e| archive_error(&e))?.raw(true);
    let mut manifest: Option<BTreeMap<String, ManifestFile>> = None;
    let mut seen: HashSet<String> = HashSet::new();
    let mut long_name: Option<Vec<u8>> = None;
    let mut members = 0u64;
    let mut total = 0u64;
    let mut objects_total = 0u64;
    // Source id → evidence members quoting it, awaiting its content.
    let mut quoting: HashMap<String, Vec<String>> = HashMap::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| archive_error(&e))?;
        members += 1;
        if members > limits.max_members.saturating_mul(2).saturating_add(1) {
            return Err(format!(
                "the archive has more than {} members (bundles.max_members in config.yaml)",
                limits.max_members
            ));
        }
        let size = entry.size();
        if size > limits.max_file_bytes {
            return Err(format!(
                "member {:?} is {size} bytes uncompressed, over the {}-byte limit per file \
                 (bundles.max_file_bytes in config.yaml); refusing it as a decompression bomb",
                String::from_utf8_lossy(&entry.path_bytes()),
                limits.max_file_bytes
            ));
        }
        total = total.saturating_add(size);
        if total > limits.max_total_bytes {
            return Err(format!(
                "the archive's members add up to more than {} bytes uncompressed \
                 (bundles.max_total_bytes in config.yaml); refusing it as a decompression bomb",
                limits.max_total_bytes
            ));
        }
        let etype = entry.header().entry_type();
        if etype.is_gnu_longname() {
            if size > LONG_NAME_LIMIT {
                return Err(format!("a long-name record of {size} bytes is not a path"));
            }
            let mut name = Vec::new();
            entry
                .read_to_end(&mut name)
                .map_err(|e| archive_error(&e))?;
            while name.last() == Some(&0) {
                name.pop();
            }
            long_name = Some(name);
            continue;
        }
        let raw_name = long_name
            .take()
            .unwrap_or_else(|| entry.path_bytes().into_owned());
        let name = String::from_utf8_lossy(&raw_name).into_owned();
        if std::str::from_utf8(&raw_name).is_err() {
            scan.problem(&name, "member name is not UTF-8");
            continue;
        }
        if manifest.is_none() {
            if name != MANIFEST || !etype.is_file() {
                return Err(format!(
                    "the archive does not start with {MANIFEST} (it starts with {name:?}); \
                     a bundle is the .tar.gz that `vouch export` writes"
                ));
            }
            let (_, bytes) = read_member(&mut entry, true).map_err(|e| archive_error(&e))?;
            manifest = Some(read_manifest(scan, &bytes.unwrap_or_default(), limits)?);
            seen.insert(name);
            continue;
        }
        if etype.is_dir() {
            if let Err(reason) = KbFile::parse_relative(name.trim_end_matches('/'))
                && (reason.contains("escape") || reason.contains("absolute"))
            {
                scan.problem(&name, reason);
            }
            continue;
        }
        if !etype.is_file() {
            let what = member_kind(etype);
            let target = entry
                .link_name_bytes()
                .map(|l| format!(" to {:?}", String::from_utf8_lossy(&l)))
                .unwrap_or_default();
            scan.problem(
                &name,
                format!("is {what}{target}; bundles carry regular files only"),
            );
            continue;
        }
        if name == MANIFEST {
            scan.problem(&name, "appears more than once in the archive");
            continue;
        }
        let file = match KbFile::parse_relative(&name) {
            Ok(f) => f,
            Err(reason) => {
                scan.problem(&name, reason);
                continue;
            }
        };
        if !seen.insert(name.clone()) {
            scan.problem(&name, "appears more than once in the archive");
            scan.members.remove(&name);
            continue;
        }
        let Some(listed) = manifest.as_ref().and_then(|m| m.get(&name)).cloned() else {
            scan.problem(&name, "is in the archive but not listed in manifest.json");
            continue;
        };
        if listed.bytes != size {
            scan.problem(
                &name,
                format!("is {size} bytes but manifest.json says {}", listed.bytes),
            );
        }
        let structured = !matches!(file, KbFile::SourceContent(_));
        if structured {
            // Every parsed object is kept until the checks across members
            // are done, so their sum is what a scan holds in memory.
            objects_total = objects_total.saturating_add(size);
            if objects_total > limits.max_objects_bytes {
                return Err(format!(
                    "the archive's knowledge files (YAML, markdown) add up to more than {} bytes \
                     (bundles.max_objects_bytes in config.yaml); refusing it: parsing them \
                     would hold that much in memory",
                    limits.max_objects_bytes
                ));
            }
        }
        if structured && size > MAX_OBJECT_BYTES {
            // Parsing is what costs memory (YAML trees are many times their
            // text), so objects are capped far below source content.
            scan.problem(
                &name,
                format!(
                    "is {size} bytes; knowledge files (YAML, markdown) are limited to \
                     {MAX_OBJECT_BYTES} bytes in a bundle"
                ),
            );
            continue;
        }
        let quoted = match &file {
            KbFile::SourceContent(id) => quoting.remove(id).unwrap_or_default(),
            _ => Vec::new(),
        };
        let (sha, content) =
            read_member(&mut entry, structured || keep(&file) || !quoted.is_empty())
                .map_err(|e| archive_error(&e))?;
        if sha != listed.sha256 {
            scan.problem(
                &name,
                format!(
                    "sha256 is {sha} but manifest.json says {}; the file was altered",
                    listed.sha256
                ),
            );
            continue;
        }
        if let KbFile::SourceContent(id) = &file
            && &sha != id
        {
            scan.problem(
                &name,
                format!("source content hashes to {sha}, not to its folder name {id}"),
            );
            continue;
        }
        let parsed = match parse_member(&file, Path::new(&name), content.as_deref().unwrap_or(&[]))
        {
            Ok(p) => p,
            Err(reason) => {
                scan.problem(&name, reason);
                continue;
            }
        };
        if let Parsed::Config(s) = &parsed {
            scan.bundle_requires_citations = Some(s.review.require_citations);
        }
        if let Parsed::Evidence(ev) = &parsed
            && let Some(why) = crate::sources::evidence_id_mismatch(ev)
        {
            scan.problem(&name, why);
            continue;
        }
        if let Parsed::Evidence(ev) = &parsed
            && ev.quote.is_some()
        {
            quoting
                .entry(ev.source_id.clone())
                .or_default()
                .push(name.clone());
        }
        for quoter in quoted {
            if let Some(Member {
                parsed: Parsed::Evidence(ev),
                ..
            }) = scan.members.get(&quoter)
            {
                let mismatch =
                    crate::sources::evidence_mismatch(ev, content.as_deref().unwrap_or(&[]));
                match mismatch {
                    Some(why) => scan.problem(&quoter, why),
                    None => {
                        scan.quotes_checked.insert(quoter);
                    }
                }
            }
        }
        let content = if keep(&file) { content } else { None };
        scan.members.insert(
            name,
            Member {
                file,
                sha256: sha,
                content,
                parsed,
            },
        );
    }
    let Some(manifest) = manifest else {
        return Err(format!(
            "the archive is empty: no {MANIFEST}; a bundle is the .tar.gz that `vouch export` writes"
        ));
    };
    for path in manifest.keys() {
        if !seen.contains(path) {
            scan.problem(path, "listed in manifest.json but missing from the archive");
        }
    }
    Ok(())
}

// ----- checking content -------------------------------------------------------------------

/// Does an object exist in the bundle or (when importing) in this KB?
struct Refs<'a> {
    scan: &'a Scan,
    kb: Option<&'a Kb>,
}

impl Refs<'_> {
    fn has(&self, dir: Dir, id: &str) -> bool {
        crate::ids::check_id("id", id).is_ok()
            && (self
                .scan
                .members
                .contains_key(&KbFile::Object(dir, id.to_string()).relative())
                || self.kb.is_some_and(|kb| kb.exists(dir, id)))
    }
    fn has_source(&self, id: &str) -> bool {
        is_source_id(id)
            && (self
                .scan
                .members
                .contains_key(&KbFile::SourceMeta(id.to_string()).relative())
                || self.kb.is_some_and(|kb| kb.source_exists(id)))
    }
    /// A citation: a source id or an evidence id whose source exists.
    fn citation(&self, id: &str) -> Option<String> {
        if is_source_id(id) {
            return (!self.has_source(id))
                .then(|| format!("cites source {id}, which is neither in the bundle nor here"));
        }
        if !self.has(Dir::Evidence, id) {
            return Some(format!(
                "cites {id:?}, which is neither a source nor evidence in the bundle or here"
            ));
        }
        None
    }
}

fn where_(kb: Option<&Kb>) -> &'static str {
    if kb.is_some() {
        "in the bundle or in this KB"
    } else {
        "in the bundle"
    }
}

/// Problems of one bundle member as knowledge: citations, references.
fn member_problems(refs: &Refs, name: &str, m: &Member, require_citations: bool) -> Vec<String> {
    let w = where_(refs.kb);
    let mut out = Vec::new();
    let missing = |out: &mut Vec<String>, what: &str, dir: Dir, ids: &[String]| {
        for id in ids {
            if !refs.has(dir, id) {
                out.push(format!("{what} {id:?} does not exist {w}"));
            }
        }
    };
    match &m.parsed {
        Parsed::Claim(c) => {
            if c.evidence.is_empty() && c.status.needs_citation(require_citations) {
                out.push(
                    "claim cites no source or evidence; every claim needs a citation (protocol §3)"
                        .into(),
                );
            }
            out.extend(c.evidence.iter().filter_map(|e| refs.citation(e)));
            missing(&mut out, "entity", Dir::Entities, &c.entities);
            missing(&mut out, "superseded claim", Dir::Claims, &c.supersedes);
            missing(&mut out, "contradicting claim", Dir::Claims, &c.contradicts);
            if let Some(by) = &c.superseded_by {
                missing(
                    &mut out,
                    "superseding claim",
                    Dir::Claims,
                    std::slice::from_ref(by),
                );
            }
        }
        Parsed::Page(pg) => {
            missing(&mut out, "claim", Dir::Claims, &pg.claims);
            missing(&mut out, "entity", Dir::Entities, &pg.entities);
            for s in pg.sources.iter().filter(|s| !refs.has_source(s)) {
                out.push(format!("source {s} does not exist {w}"));
            }
        }
        Parsed::Relation(r) => {
            let ends = [r.source.clone(), r.target.clone()];
            missing(&mut out, "relation end entity", Dir::Entities, &ends);
            out.extend(r.evidence.iter().filter_map(|e| refs.citation(e)));
        }
        Parsed::Evidence(ev) if !refs.has_source(&ev.source_id) => out.push(format!(
            "evidence points into source {} which does not exist {w}",
            ev.source_id
        )),
        Parsed::Evidence(ev) if ev.quote.is_some() && !refs.scan.quotes_checked.contains(name) => {
            // Not checked in the archive's stream: check against this KB's
            // copy of the source, if it has one.
            let local = refs
                .kb
                .and_then(|kb| kb.source_content(&ev.source_id).ok().flatten());
            match local {
                Some(bytes) => {
                    if let Some(why) = crate::sources::evidence_mismatch(ev, &bytes) {
                        out.push(why);
                    }
                }
                None => out.push(format!(
                    "its quote cannot be checked: the content of source {} is neither after \
                     it in the archive nor {}",
                    ev.source_id,
                    if refs.kb.is_some() {
                        "in this KB"
                    } else {
                        "anywhere else"
                    }
                )),
            }
        }
        Parsed::Content => {
            if let KbFile::SourceContent(id) = &m.file
                && !refs.has_source(id)
            {
                out.push(format!("source content without sources/{id}/meta.yaml {w}"));
            }
        }
        Parsed::Decided(p) => {
            if let Some(kb) = refs.kb
                && kb.exists(Dir::Proposed, &p.id)
            {
                out.push(format!(
                    "proposal {} is pending review in this KB; importing its decision would \
                     decide it without review",
                    p.id
                ));
            }
        }
        _ => {}
    }
    out
}

/// Knowledge-level checks of every member.
fn check_content(scan: &mut Scan, kb: Option<&Kb>, require_citations: bool) {
    let found: Vec<(String, String)> = {
        let refs = Refs { scan, kb };
        scan.members
            .iter()
            .flat_map(|(path, m)| {
                member_problems(&refs, path, m, require_citations)
                    .into_iter()
                    .map(move |r| (path.clone(), r))
            })
            .collect()
    };
    for (path, reason) in found {
        scan.problem(&path, reason);
    }
    for (path, reason) in supersession_cycles(scan) {
        scan.problem(&path, reason);
    }
}

/// Supersession must not loop (protocol §3): a claim superseding itself, or a
/// chain of the bundle's claims that comes back to where it started.
fn supersession_cycles(scan: &Scan) -> Vec<(String, String)> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut path_of: HashMap<&str, &str> = HashMap::new();
    for (path, m) in &scan.members {
        if let Parsed::Claim(c) = &m.parsed {
            path_of.insert(&c.id, path);
            let edges = next.entry(&c.id).or_default();
            edges.extend(c.supersedes.iter().map(String::as_str));
            if let Some(by) = &c.superseded_by {
                // "by supersedes c", seen from c's side.
                next.entry(by.as_str()).or_default().push(&c.id);
            }
        }
    }
    // Depth-first with three colours: linear in claims and links, so a
    // hostile bundle's long chain costs no more than a short one.
    let mut out = Vec::new();
    let mut colour: HashMap<&str, u8> = HashMap::new(); // 1 on the path, 2 done
    for &root in next.keys() {
        if colour.contains_key(root) {
            continue;
        }
        let mut path: Vec<(&str, usize)> = vec![(root, 0)];
        colour.insert(root, 1);
        while let Some(&mut (at, ref mut i)) = path.last_mut() {
            let edges = next.get(at).map(Vec::as_slice).unwrap_or(&[]);
            let Some(&to) = edges.get(*i) else {
                colour.insert(at, 2);
                path.pop();
                continue;
            };
            *i += 1;
            match colour.get(to) {
                Some(1) => {
                    let from = path.iter().position(|(n, _)| *n == to).unwrap_or(0);
                    let mut ring: Vec<&str> = path[from..].iter().map(|(n, _)| *n).collect();
                    ring.push(to);
                    if let Some(file) = path_of.get(to) {
                        out.push((
                            file.to_string(),
                            format!(
                                "supersession loops ({}); a claim cannot be superseded by \
                                 itself or by a claim it supersedes",
                                ring.join(" → ")
                            ),
                        ));
                    }
                }
                Some(_) => {}
                None => {
                    colour.insert(to, 1);
                    path.push((to, 0));
                }
            }
        }
    }
    out
}

/// Scan a bundle and check it; for import, against this KB.
fn check_bundle(
    kb: &Kb,
    path: &Path,
    importing: bool,
    keep: &dyn Fn(&KbFile) -> bool,
) -> Result<Scan> {
    let mut s = scan(path, &kb.settings().bundles, keep)?;
    let fatal = s.problems.iter().any(|p| p.path.is_empty());
    if !fatal {
        let require = if importing {
            kb.settings().review.require_citations
        } else {
            s.bundle_requires_citations.unwrap_or(true)
        };
        check_content(&mut s, importing.then_some(kb), require);
    }
    Ok(s)
}

fn issue_lines(problems: &[BundleProblem]) -> Vec<String> {
    problems
        .iter()
        .map(|p| {
            if p.path.is_empty() {
                p.reason.clone()
            } else {
                format!("{}: {}", p.path, p.reason)
            }
        })
        .collect()
}

pub fn export_check(kb: &Kb, caller: &Caller, p: BundlePathParams) -> Result<ExportCheckResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let s = check_bundle(kb, &path, false, &|_| false)?;
    Ok(ExportCheckResult {
        ok: s.problems.is_empty(),
        issues: issue_lines(&s.problems),
        problems: s.problems,
        files: s.manifest_files,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    New,
    Conflict,
    Identical,
    Ignored,
}

/// Whether the caller is an agent whose imports the review gate holds:
/// gated kinds become proposals, nothing is overwritten, and review records
/// (decided/) are not taken (protocol §10, imports over agent transports).
fn gate_holds(kb: &Kb, caller: &Caller) -> bool {
    caller.is_agent() && !kb.settings().self_approval_allowed()
}

fn status_of(kb: &Kb, m: &Member, gated: bool) -> Result<Status> {
    let local = kb.layout().path_of(&m.file)?;
    let exists = std::fs::symlink_metadata(&local).is_ok();
    if exists
        && kb
            .read_file(&local)?
            .is_some_and(|b| sha256_hex(&b) == m.sha256)
    {
        return Ok(Status::Identical);
    }
    // A bundle never changes this KB's settings, present or not; an agent
    // cannot bring decisions it did not make through review here.
    let never_taken =
        m.file == KbFile::Config || (gated && matches!(m.file, KbFile::Object(Dir::Decided, _)));
    Ok(if never_taken {
        Status::Ignored
    } else if exists {
        Status::Conflict
    } else {
        Status::New
    })
}

pub fn import_check(kb: &Kb, caller: &Caller, p: BundlePathParams) -> Result<ImportCheckResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let s = check_bundle(kb, &path, true, &|_| false)?;
    let gated = gate_holds(kb, caller);
    let mut r = ImportCheckResult {
        ok: s.problems.is_empty(),
        new: Vec::new(),
        conflict: Vec::new(),
        identical: Vec::new(),
        ignored: Vec::new(),
        problems: Vec::new(),
    };
    for (name, m) in &s.members {
        match status_of(kb, m, gated)? {
            Status::New => r.new.push(name.clone()),
            Status::Conflict => r.conflict.push(name.clone()),
            Status::Identical => r.identical.push(name.clone()),
            Status::Ignored => r.ignored.push(name.clone()),
        }
    }
    r.problems = s.problems;
    Ok(r)
}

/// At most this many problems go into an error message.
const MESSAGE_PROBLEMS: usize = 50;

fn refused(path: &str, problems: &[BundleProblem]) -> Error {
    let lines = issue_lines(problems);
    let mut msg = format!(
        "bundle {path} refused; nothing was written ({} problem(s)):",
        lines.len()
    );
    for l in lines.iter().take(MESSAGE_PROBLEMS) {
        msg.push_str("\n  ");
        msg.push_str(l);
    }
    if lines.len() > MESSAGE_PROBLEMS {
        msg.push_str(&format!(
            "\n  ... and {} more; `vouch import-check` lists them all",
            lines.len() - MESSAGE_PROBLEMS
        ));
    }
    Error::invalid(msg)
}

fn is_gated(f: &KbFile) -> bool {
    matches!(
        f,
        KbFile::Object(Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations, _)
    )
}

pub fn import_apply(kb: &Kb, caller: &Caller, p: ImportApplyParams) -> Result<ImportApplyResult> {
    let path = resolve(kb, caller, &p.path, false)?;
    let on_conflict = p.on_conflict.unwrap_or_default();
    // On an agent transport without trusted-agent, gated kinds become
    // proposals (protocol §10, imports over agent transports).
    let gated = gate_holds(kb, caller);
    let _lock = kb.lock()?;
    let mut s = check_bundle(kb, &path, true, &|_| true)?;
    if !s.problems.is_empty() {
        return Err(refused(&p.path, &s.problems));
    }
    let mut plan: Vec<(String, Status)> = Vec::with_capacity(s.members.len());
    for (name, m) in &s.members {
        plan.push((name.clone(), status_of(kb, m, gated)?));
    }
    let conflicts: Vec<&str> = plan
        .iter()
        .filter(|(_, st)| *st == Status::Conflict)
        .map(|(n, _)| n.as_str())
        .collect();
    let listed = conflicts
        .iter()
        .take(MESSAGE_PROBLEMS)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if on_conflict == OnConflict::Fail && !conflicts.is_empty() {
        return Err(Error::conflict(format!(
            "{} file(s) in the bundle differ from this KB and on_conflict is fail; nothing was \
             written. Re-run with skip or overwrite. Conflicts: {listed}",
            conflicts.len(),
        )));
    }
    // Evidence, sources, sessions and review records back reviewed
    // knowledge as much as claims do: an agent overwrites none of them.
    if gated && on_conflict == OnConflict::Overwrite && !conflicts.is_empty() {
        return Err(Error::denied(format!(
            "overwriting files of this KB from an agent transport is not allowed ({listed}); \
             nothing was written. A person can run `vouch import-apply --on-conflict \
             overwrite`, or import with on_conflict skip"
        )));
    }

    let mut result = ImportApplyResult {
        imported: 0,
        skipped: 0,
        overwritten: 0,
        identical: 0,
        proposed: 0,
        proposal_ids: Vec::new(),
    };
    let mut batch = atomic::Batch::new(kb.layout().root());
    let mut events: Vec<AuditEvent> = Vec::new();
    let mut written: Vec<crate::retrieval::Written> = Vec::new();
    let mut admitted: Vec<String> = Vec::new();
    let mut taken = HashSet::new();
    let bundle_name = Path::new(&p.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.path.clone());
    // Content before meta (a meta.yaml always has its content beside it),
    // sources and evidence before what cites them.
    let rank = |f: &KbFile| match f {
        KbFile::SourceContent(_) => 0,
        KbFile::SourceMeta(_) => 1,
        KbFile::Object(Dir::Evidence, _) => 2,
        KbFile::Object(Dir::Entities, _) => 3,
        KbFile::Object(Dir::Claims, _) => 4,
        KbFile::Object(Dir::Relations, _) => 5,
        KbFile::Object(Dir::Pages, _) => 6,
        _ => 7,
    };
    plan.sort_by(|a, b| {
        rank(&s.members[&a.0].file)
            .cmp(&rank(&s.members[&b.0].file))
            .then(a.0.cmp(&b.0))
    });
    for (name, status) in plan {
        match status {
            Status::Identical => {
                result.identical += 1;
                continue;
            }
            Status::Ignored => continue,
            Status::Conflict if on_conflict == OnConflict::Skip => {
                result.skipped += 1;
                continue;
            }
            _ => {}
        }
        let m = s.members.get_mut(&name).expect("planned member");
        if gated && is_gated(&m.file) {
            let (draft, id) = match &m.parsed {
                Parsed::Claim(c) => (Draft::of_claim(c), &c.id),
                Parsed::Page(pg) => (Draft::of_page(pg), &pg.id),
                Parsed::Entity(e) => (Draft::of_entity(e), &e.id),
                Parsed::Relation(r) => (Draft::of_relation(r), &r.id),
                _ => unreachable!("gated files parse as gated kinds"),
            };
            let (proposal, ev) = imported_proposal(
                kb,
                caller,
                draft,
                id,
                format!("imported from bundle {bundle_name} ({name})"),
                &mut taken,
            )?;
            batch.write(
                kb.layout().file(Dir::Proposed, &proposal.id)?,
                crate::store::yaml::to_yaml(&proposal)?.into_bytes(),
            );
            events.push(ev);
            result.proposal_ids.push(proposal.id);
            result.proposed += 1;
            continue;
        }
        let target = kb.layout().path_of(&m.file)?;
        batch.write(target, m.content.take().unwrap_or_default());
        // Durable knowledge and review records the import lets in are named
        // in its event, so `doctor` can tell them from hand-written files.
        if let KbFile::Object(
            Dir::Claims | Dir::Pages | Dir::Entities | Dir::Relations | Dir::Decided,
            id,
        ) = &m.file
        {
            admitted.push(id.clone());
        }
        if status == Status::Conflict {
            result.overwritten += 1;
        } else {
            result.imported += 1;
        }
        match &m.parsed {
            Parsed::Claim(c) => written.push(crate::retrieval::Written::Claim((**c).clone())),
            Parsed::Page(pg) => written.push(crate::retrieval::Written::Page((**pg).clone())),
            Parsed::Entity(e) => written.push(crate::retrieval::Written::Entity(e.clone())),
            Parsed::Relation(r) => written.push(crate::retrieval::Written::Relation(r.clone())),
            Parsed::Source(src) => written.push(crate::retrieval::Written::Source((**src).clone())),
            _ => {}
        }
    }
    let archive_sha = hash_file(&path)?.0;
    let mut import_ev = kb.event(
        "bundle.import",
        &caller.actor,
        vec![archive_sha],
        json!({"path": path.display().to_string(), "on_conflict": on_conflict,
               "imported": result.imported, "overwritten": result.overwritten,
               "skipped": result.skipped, "identical": result.identical,
               "proposed": result.proposed, "objects": admitted}),
    );
    if batch.is_empty() {
        kb.append_audit(std::slice::from_mut(&mut import_ev))?;
        return Ok(result);
    }
    crate::store::nofollow::check_dirs(kb.layout().root(), &kb.layout().sources_dir())
        .map_err(|e| Error::io(&kb.layout().sources_dir(), e))?;
    // Every file is staged and the plan journaled before the event is
    // logged: a crash from here on is finished by the next command if the
    // event made it to the log, and discarded if not.
    let staged = batch.stage_journaled(&import_ev.id)?;
    events.insert(0, import_ev);
    if let Err(e) = kb.append_audit(&mut events) {
        staged.abandon();
        return Err(e);
    }
    if let Err(e) = staged.finish() {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "import failed while writing ({e}); it is logged, and the next command \
                 completes it"
            ),
        ));
    }
    // A process with the index open (a server) updates it here; a one-shot
    // command has none, so bring state.db in step now: the import is
    // searchable at once and `doctor` finds the index current.
    if crate::retrieval::is_open(kb) {
        kb.announce(&written);
    } else {
        if let Err(e) = crate::retrieval::refresh(kb) {
            kb.warn(format!(
                "index: not refreshed after the import ({e}); the next search will"
            ));
        }
        kb.retriever().on_write(kb, &written);
    }
    Ok(result)
}
