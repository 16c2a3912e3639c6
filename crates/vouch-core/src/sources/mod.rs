//! Sources (content-addressed by sha256) and evidence (quoted spans inside a
//! source). Neither is gated: both are content-addressed facts about what was
//! captured, not assertions — but both are audited.

use crate::error::{Error, Result};
use crate::ids::{check_source_id, sha256_hex};
use crate::kb::{Caller, Kb};
use crate::model::{Evidence, Source, SourceType};
use crate::params::*;
use crate::secrets::{self, Admitted, Door};
use crate::store::{Dir, atomic};
use serde_json::json;
use std::path::{Path, PathBuf};

mod verify;

pub use verify::source_verify;

/// What `vouch source add` says a secret in a source's content is.
const SOURCE_DOOR: Door = Door {
    command: "vouch source add",
    maskable: true,
};

/// `bytes` as the secret scan admits them (crate::secrets): unchanged, or
/// masked (before they are hashed, so the id is the hash of what is
/// stored), or refused; and what the `source.register` event records of a
/// person's decision. `field` names the content in a refusal.
fn admitted_content(
    caller: &Caller,
    policy: SecretsPolicy,
    field: String,
    bytes: Vec<u8>,
) -> Result<(Vec<u8>, Option<serde_json::Value>)> {
    let found = [secrets::FieldFindings {
        field,
        maskable: true,
        findings: secrets::scan(&bytes),
    }];
    let admitted = secrets::admit(caller, policy, SOURCE_DOOR, &found)?;
    let recorded = secrets::recorded(admitted, &found);
    let bytes = match admitted {
        Admitted::Masked => secrets::mask(&bytes, &found[0].findings),
        Admitted::Clean | Admitted::AsIs => bytes,
    };
    Ok((bytes, recorded))
}

/// `kb.register_source`: capture content the caller supplies as a source
/// named by its sha256; the same content again answers the same id
/// (`deduplicated`). Content holding a secret is refused unless a person
/// asked for it masked or as is.
pub fn register_source(
    kb: &Kb,
    caller: &Caller,
    p: RegisterSourceParams,
) -> Result<RegisterSourceResult> {
    if p.locator.trim().is_empty() {
        return Err(Error::invalid("locator: must not be empty"));
    }
    // A locator and a title are shown beside every quote: no text there
    // may steer or hide what the reviewer reads.
    for (field, text) in [("locator", Some(&p.locator)), ("title", p.title.as_ref())] {
        if let Some(why) = text.and_then(|t| crate::ids::hidden_char_problem(field, t)) {
            return Err(Error::invalid(why));
        }
    }
    let (content, secrets) =
        admitted_content(caller, p.secrets, "content".into(), p.content.into_bytes())?;
    register_bytes(
        kb,
        caller,
        &content,
        Meta {
            source_type: p.source_type.unwrap_or(SourceType::File),
            locator: p.locator,
            title: p.title,
            media_type: p.media_type,
            tags: p.tags,
            read_from_file: false,
            secrets,
        },
    )
}

struct Meta {
    source_type: SourceType,
    locator: String,
    title: Option<String>,
    media_type: Option<String>,
    tags: Vec<String>,
    /// Read by vouch from the project file the locator names (not given
    /// by the caller).
    read_from_file: bool,
    /// The secrets a person let through, masked or as is
    /// ([`secrets::recorded`]), for the `source.register` event.
    secrets: Option<serde_json::Value>,
}

/// The `content` of a source said to be read from a file its locator
/// names, when no such file is in the project now.
pub const READ_FROM_MISSING_FILE: &str = "read_from_missing_file";

/// Where a source's bytes came from: who registered it, and whether vouch
/// read them from the file its locator names (`read_from_file`) or the
/// caller supplied them and only named a locator (`supplied`). Review
/// surfaces show both, so an agent's own words are never mistaken for a
/// quote from README.md. Both are the log's (its `source.register` event:
/// the actor, and `data.content`), never `meta.yaml`'s, which anyone can
/// edit; only a source registered before the event recorded `content`
/// shows what its `meta.yaml` says. A source said to be read from a file
/// the project no longer holds answers [`READ_FROM_MISSING_FILE`].
pub fn provenance(kb: &Kb, s: &Source) -> (Option<String>, Option<String>) {
    let m = s.metadata.as_ref();
    let said = |k: &str| {
        m.and_then(|m| m.get(k))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let logged = registration(kb, &s.id);
    let by = logged
        .as_ref()
        .map(|r| r.actor.clone())
        .or_else(|| said("registered_by"));
    let content = match logged.and_then(|r| r.content) {
        Some(c) => Some(c),
        None => said("content"),
    };
    let content = content.map(|c| {
        if c == "read_from_file" && locator_differs(kb, s).is_none() {
            READ_FROM_MISSING_FILE.to_string()
        } else {
            c
        }
    });
    (by, content)
}

/// [`provenance`] and [`locator_differs`] in words, for review surfaces.
pub fn provenance_note(kb: &Kb, s: &Source) -> Option<String> {
    let (by, content) = provenance(kb, s);
    crate::params::provenance_text(
        by.as_deref(),
        content.as_deref(),
        locator_differs(kb, s) == Some(true),
    )
}

/// What a source's `source.register` event recorded.
struct Registration {
    actor: String,
    /// `supplied` or `read_from_file`; `None` before vouch recorded it.
    content: Option<String>,
}

/// The first `source.register` event of source `id` (a source is
/// registered once; a later one naming it was not written by vouch).
/// `None` when the log has none or cannot be read.
fn registration(kb: &Kb, id: &str) -> Option<Registration> {
    let (bytes, _) = kb.audit_log().read_from(0).ok()?;
    let needle = format!("\"{id}\"");
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| {
            finder.find(l).is_some() && memchr::memmem::find(l, b"\"source.register\"").is_some()
        })
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .find(|ev| {
            ev.get("event").and_then(serde_json::Value::as_str) == Some("source.register")
                && ev
                    .get("object_ids")
                    .and_then(|ids| ids.get(0))
                    .and_then(serde_json::Value::as_str)
                    == Some(id)
        })
        .map(|ev| Registration {
            actor: ev
                .get("actor")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string(),
            content: ev
                .get("data")
                .and_then(|d| d.get("content"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string),
        })
}

/// Sources whose `meta.yaml` is not what their `source.register` event
/// recorded writing (`data.written`): edited by hand since. `(id, path
/// inside .vouch/)`; a source registered before vouch recorded it is
/// never named.
pub fn edited_metas(kb: &Kb, trail: &crate::audit::trail::Trail) -> Vec<(String, String)> {
    let Ok(ids) = kb.source_ids() else {
        return Vec::new();
    };
    ids.into_iter()
        .filter_map(|id| {
            let path = kb.layout().source_meta(&id).ok()?;
            let inside = kb.layout().inside(&path);
            let recorded = trail.written.get(&inside)?;
            let bytes = kb.read_file(&path).ok()??;
            (crate::ids::content_sha256(&bytes) != *recorded).then_some((id, inside))
        })
        .collect()
}

/// Whether a source's locator names a file in the project whose bytes are
/// now other than the source's: the agent's text passed off as that file,
/// or the file changed since. `None` when the locator names no such file.
pub fn locator_differs(kb: &Kb, s: &Source) -> Option<bool> {
    let (project, relative) = resolve_in_project(kb, &s.locator).ok()?;
    let path = project.join(relative);
    // Listing pending proposals does this per citation: a file of another
    // size differs without being read (a locator may name a huge file).
    let size = std::fs::symlink_metadata(&path).ok()?.len();
    if s.byte_size.is_some_and(|b| b != size) {
        return Some(true);
    }
    let bytes = crate::store::nofollow::read(&project, &path).ok()?;
    Some(sha256_hex(&bytes) != s.id)
}

fn parent_of(path: &std::path::Path) -> &std::path::Path {
    path.parent().unwrap_or(path)
}

fn register_bytes(
    kb: &Kb,
    caller: &Caller,
    bytes: &[u8],
    meta: Meta,
) -> Result<RegisterSourceResult> {
    let id = sha256_hex(bytes);
    if kb.source_exists(&id) {
        return Ok(RegisterSourceResult {
            id,
            deduplicated: true,
        });
    }
    let _lock = kb.lock()?;
    if kb.source_exists(&id) {
        return Ok(RegisterSourceResult {
            id,
            deduplicated: true,
        });
    }
    let source = Source {
        id: id.clone(),
        source_type: meta.source_type,
        locator: meta.locator,
        title: meta.title,
        hash: Some(id.clone()),
        immutable: true,
        scope: None,
        byte_size: Some(bytes.len() as u64),
        media_type: meta.media_type.unwrap_or_else(|| "text/plain".into()),
        created_at: kb.now(),
        metadata: Some(json!({
            "registered_by": caller.actor,
            "content": if meta.read_from_file { "read_from_file" } else { "supplied" },
        })),
        tags: meta.tags,
        extra: Default::default(),
    };
    let meta_yaml = crate::store::yaml::to_yaml(&source)?;
    let root = kb.layout().root();
    let content = kb.layout().source_content(&id)?;
    // Provenance is the log's: who (the actor), how (`content`), and the
    // meta.yaml written, so an edit of it is seen (`data.written`).
    let meta_path = kb.layout().inside(&kb.layout().source_meta(&id)?);
    let mut data = json!({"locator": source.locator, "bytes": bytes.len(),
           "content": if meta.read_from_file { "read_from_file" } else { "supplied" },
           (crate::audit::WRITTEN_KEY):
               {meta_path: crate::ids::content_sha256(meta_yaml.as_bytes())}});
    if let Some(secrets) = meta.secrets {
        data["secrets"] = secrets;
    }
    let mut ev = kb.event("source.register", &caller.actor, vec![id.clone()], data);
    kb.audited(std::slice::from_mut(&mut ev), || {
        // Content first: a meta.yaml always has its content beside it. The
        // folders are made as needed (none without a link check).
        let written = atomic::write(root, &content, bytes)
            .and_then(|_| atomic::write(root, &kb.layout().source_meta(&id)?, meta_yaml.as_bytes()))
            .and_then(|_| atomic::sync_dir(&kb.layout().sources_dir()));
        if written.is_err() {
            // No meta.yaml, so not a source: leave no half of one behind.
            let _ = atomic::remove(root, &content);
            let _ = std::fs::remove_dir(parent_of(&content));
        }
        written
    })?;
    kb.announce(&[crate::model::Written::Source(source)]);
    Ok(RegisterSourceResult {
        id,
        deduplicated: false,
    })
}

/// `kb.register_source_from_path`: capture a regular file inside the
/// project as a source, read without following a link and refused over
/// `sources.max_bytes`.
pub fn register_source_from_path(
    kb: &Kb,
    caller: &Caller,
    p: RegisterSourceFromPathParams,
) -> Result<RegisterSourceResult> {
    let (root, relative) = resolve_in_project(kb, &p.path)?;
    let path = root.join(&relative);
    let max = kb.settings().sources.max_bytes;
    // Opened once, without following a link at any step below the project
    // root; the size check and the read use that same descriptor, so
    // nothing can be swapped in between (a folder replaced by a link).
    let file = crate::store::nofollow::open(&root, &path).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => Error::invalid(format!(
            "{}: not a regular file (directories, devices and sockets cannot be sources)",
            p.path
        )),
        _ => Error::invalid(format!("path {:?}: {e}", p.path)),
    })?;
    let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
    if len > max {
        return Err(Error::invalid(format!(
            "{}: {len} bytes is over the {max}-byte limit for sources \
             (raise sources.max_bytes in config.yaml to allow it)",
            p.path
        )));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(&file, max + 1), &mut bytes)
        .map_err(|e| Error::io(&path, e))?;
    if bytes.len() as u64 > max {
        return Err(Error::invalid(format!(
            "{}: grew past the {max}-byte limit for sources while it was read",
            p.path
        )));
    }
    let (bytes, secrets) =
        admitted_content(caller, p.secrets, relative.display().to_string(), bytes)?;
    let title = p
        .title
        .or_else(|| path.file_name().map(|n| n.to_string_lossy().into_owned()));
    register_bytes(
        kb,
        caller,
        &bytes,
        Meta {
            source_type: p.source_type.unwrap_or(SourceType::File),
            locator: relative.to_string_lossy().into_owned(),
            title,
            media_type: Some(media_type_for(&path).to_string()),
            tags: Vec::new(),
            read_from_file: true,
            secrets,
        },
    )
}

/// The project root (the folder holding `.vouch/`) and the user's path
/// relative to it, as plain names: `..`, a path outside the project,
/// anything inside `.vouch/` and anything inside git's own folders
/// ([`refuse_git_dir`]) are refused. Links are refused when the file is
/// opened ([`crate::store::nofollow`]), not resolved here.
pub(crate) fn resolve_in_project(kb: &Kb, user_path: &str) -> Result<(PathBuf, PathBuf)> {
    resolve_for(
        kb,
        user_path,
        "only project files can be registered by path",
    )
}

/// [`resolve_in_project`], with `rule` saying which operation refuses a
/// path outside the project and why (every refusal names its operation).
pub(crate) fn resolve_for(kb: &Kb, user_path: &str, rule: &str) -> Result<(PathBuf, PathBuf)> {
    if user_path.contains('\0') {
        return Err(Error::invalid("path: contains a NUL byte"));
    }
    let given_root = kb.layout().project_root();
    let root = given_root
        .canonicalize()
        .map_err(|e| Error::io(given_root, e))?;
    let given = Path::new(user_path);
    let outside = || {
        Error::invalid(format!(
            "path {user_path:?} is outside the project root {}; {rule}",
            root.display()
        ))
    };
    let relative = if given.is_absolute() {
        given
            .strip_prefix(&root)
            .or_else(|_| given.strip_prefix(given_root))
            .map_err(|_| outside())?
    } else {
        given
    };
    let mut clean = PathBuf::new();
    for c in relative.components() {
        match c {
            std::path::Component::Normal(n) => clean.push(n),
            std::path::Component::CurDir => {}
            _ => return Err(outside()),
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(Error::invalid(format!(
            "{user_path}: the project folder itself; {rule}"
        )));
    }
    if clean.starts_with(".vouch") {
        return Err(Error::invalid(format!(
            "path {user_path:?} is inside .vouch/, which holds the knowledge base itself; {rule}"
        )));
    }
    refuse_git_dir(&root, &clean, user_path, rule)?;
    Ok((root, clean))
}

/// Refuse a path (`relative` to the canonical project root `root`, plain
/// names) inside git's own files: a `.git` component anywhere — a
/// repository's folder, or the `.git` file of a worktree or submodule —
/// in any case and as Windows also reads it (`.git.`, `.git `,
/// `.git::$INDEX_ALLOCATION`, the short name `GIT~1`, with the code points
/// HFS+ ignores), or a folder git keeps a repository in: one holding
/// `HEAD` and either `objects/` or a `commondir` file (a bare repository,
/// the git folder a `.git` file points to, a linked worktree's folder),
/// links followed (and `HEAD` a link even when it leads nowhere), as git
/// itself accepts them. Git's config
/// may hold credentials (a source is committed with `.vouch/`) and its
/// hooks run as code; they are never the project's knowledge.
pub(crate) fn refuse_git_dir(root: &Path, relative: &Path, given: &str, rule: &str) -> Result<()> {
    let refuse = |what: &str| {
        Err(Error::invalid(format!(
            "path {given:?} is inside {what}, git's own files (its config may hold credentials, \
             its hooks run as code), not the project's; {rule}"
        )))
    };
    let mut walked = root.to_path_buf();
    for c in relative.components() {
        let std::path::Component::Normal(name) = c else {
            continue;
        };
        if is_git_name(&name.to_string_lossy()) {
            return refuse(".git");
        }
        walked.push(name);
        // Followed: git reads a linked `objects` as its own.
        let holds =
            |n: &str, dir: bool| std::fs::metadata(walked.join(n)).is_ok_and(|m| m.is_dir() == dir);
        // A `HEAD` link is git's older form of a symbolic ref, read for
        // what it says (`refs/heads/main`): it counts though it leads
        // nowhere (round six, A5b).
        let head = std::fs::symlink_metadata(walked.join("HEAD"))
            .is_ok_and(|m| m.is_symlink() || m.is_file());
        if head && (holds("objects", true) || holds("commondir", false)) {
            return refuse(&format!("{}, a git repository's folder", walked.display()));
        }
    }
    Ok(())
}

/// Whether a file name names git's folder on some file system: `.git` in
/// any case, with the trailing dots and spaces and the stream suffix
/// Windows ignores, or its 8.3 short name; and with the code points HFS+
/// ignores in a name dropped first (`.g\u{200c}it` is `.git` on a Mac, and
/// git's own `is_hfs_dotgit` reads it so).
pub(crate) fn is_git_name(name: &str) -> bool {
    names_folder(name, ".git")
}

/// Whether a file name names the folder `folder` (`.git`, `.vouch`) on
/// some file system: in any case, with the trailing dots and spaces and the
/// stream suffix Windows ignores, as its 8.3 short name (`GIT~1`,
/// `VOUCH~1`), and with the code points HFS+ ignores in a name dropped
/// first.
pub fn names_folder(name: &str, folder: &str) -> bool {
    let name: String = name.chars().filter(|c| !hfs_ignores(*c)).collect();
    let base = name.split(':').next().unwrap_or(&name);
    let base = base.trim_end_matches(['.', ' ']);
    // Windows' short name: the leading dots dropped, six characters, ~1.
    let short: String = folder.trim_start_matches('.').chars().take(6).collect();
    base.eq_ignore_ascii_case(folder) || base.eq_ignore_ascii_case(&format!("{short}~1"))
}

/// The code points HFS+ leaves out when it compares names (git's
/// `next_hfs_char`): zero-width joiners and marks, the bidi embeddings and
/// overrides, the deprecated format controls, and the byte order mark.
fn hfs_ignores(c: char) -> bool {
    matches!(
        c,
        '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}'
    )
}

fn media_type_for(path: &Path) -> &'static str {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("html" | "htm") => "text/html",
        Some("pdf") => "application/pdf",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("rs" | "py" | "js" | "ts" | "go" | "c" | "h" | "toml" | "txt" | "csv") => "text/plain",
        _ => "application/octet-stream",
    }
}

/// Where a quote sits in a source: byte range and 1-based line range.
pub struct Located {
    /// Byte offset where the quote starts.
    pub start: usize,
    /// Byte offset just past its end.
    pub end: usize,
    /// Line it starts on.
    pub first_line: usize,
    /// Line it ends on.
    pub last_line: usize,
}

/// Find the first exact occurrence of `quote` in the source's stored bytes.
pub fn locate_quote(kb: &Kb, source_id: &str, quote: &str) -> Result<Located> {
    check_source_id(source_id)?;
    if quote.trim().is_empty() {
        return Err(Error::invalid("quote: must not be empty"));
    }
    if !kb.source_exists(source_id) {
        return Err(Error::not_found(format!(
            "source {source_id} is not registered"
        )));
    }
    let bytes = match kb.source_content(source_id) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(Error::invalid(format!(
                "source {source_id} has no stored content to quote from"
            )));
        }
        Err(e) => {
            return Err(Error::invalid(format!(
                "source {source_id} cannot be quoted from: {e}"
            )));
        }
    };
    locate_in(&bytes, quote).ok_or_else(|| {
        Error::invalid(format!(
            "quote {:?} does not occur in source {source_id}; quote the text exactly",
            crate::ids::truncate_for_message(quote)
        ))
    })
}

/// The first exact occurrence of `quote` in `bytes`.
pub fn locate_in(bytes: &[u8], quote: &str) -> Option<Located> {
    let q = quote.as_bytes();
    if q.is_empty() {
        return None;
    }
    let start = find(bytes, q)?;
    let first_line = 1 + bytes[..start].iter().filter(|b| **b == b'\n').count();
    Some(Located {
        start,
        end: start + q.len(),
        first_line,
        last_line: first_line + q.iter().filter(|b| **b == b'\n').count(),
    })
}

/// The id of a quoted span: derived from the source and the quote, so the
/// same span always gets the same id, and an id names one span only.
pub fn evidence_id(source_id: &str, quote: &str) -> String {
    format!(
        "ev-{}",
        &sha256_hex(format!("{source_id}\n{quote}").as_bytes())[..16]
    )
}

/// vouch 1.x's id for a span (its `receipts.py`): `ev-` and the first 16
/// hex digits of sha256(`{source_id}:{byte_start}:{byte_end}`). It binds
/// the id to the span; [`evidence_mismatch`] binds the span to the quote
/// (the quote must be the source's bytes there).
pub fn evidence_id_1x(source_id: &str, start: u64, end: u64) -> String {
    format!(
        "ev-{}",
        &sha256_hex(format!("{source_id}:{start}:{end}").as_bytes())[..16]
    )
}

/// The byte span a record written by vouch 1.x carries.
pub fn span_1x(ev: &Evidence) -> Option<(u64, u64)> {
    let at = |k: &str| ev.extra.get(k).and_then(serde_json::Value::as_u64);
    Some((at("byte_start")?, at("byte_end")?))
}

/// Whether the id is vouch 1.x's derivation from the record's own span.
pub fn is_1x_span_id(ev: &Evidence) -> bool {
    span_1x(ev).is_some_and(|(s, e)| evidence_id_1x(&ev.source_id, s, e) == ev.id)
}

/// Why an evidence record's id is not the one its content derives: a
/// record that took the id of another span (squatting) would be handed out
/// for that span. Two derivations are accepted: ours (from the source and
/// the quote) and vouch 1.x's (from the source and the byte span, whose
/// bytes must be the quote: [`evidence_mismatch`]). Ids not of the derived
/// form (`ev-` and 16 hex digits), which other tools may write, are not
/// judged.
pub fn evidence_id_mismatch(ev: &Evidence) -> Option<String> {
    if is_1x_span_id(ev) {
        return None;
    }
    let derived_form = ev.id.strip_prefix("ev-").is_some_and(|h| {
        h.len() == 16 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if !derived_form {
        return None;
    }
    let Some(quote) = ev.quote.as_deref() else {
        return Some(format!(
            "its id {} has the form of an id derived from a quote, but it holds no quote",
            ev.id
        ));
    };
    let expected = evidence_id(&ev.source_id, quote);
    (expected != ev.id).then(|| {
        format!(
            "its id {} is not derived from its source and quote (that would be {expected}): \
             it claims the id of another span",
            ev.id
        )
    })
}

/// Why evidence `ev` does not say what its source's `content` says, if it
/// does not: its quote absent (or not at the span a 1.x record names), its
/// hash or its line locator wrong. `None` when it holds or has no quote.
pub fn evidence_mismatch(ev: &Evidence, content: &[u8]) -> Option<String> {
    let quote = ev.quote.as_deref()?;
    // A 1.x record names its span: the quote must be exactly those bytes.
    if let Some((s, e)) = span_1x(ev)
        && content.get(s as usize..e as usize) != Some(quote.as_bytes())
    {
        return Some(format!(
            "its quote is not the bytes {s}..{e} of source {} that its span names",
            ev.source_id
        ));
    }
    let Some(at) = locate_in(content, quote) else {
        return Some(format!(
            "its quote {:?} does not occur in source {}",
            crate::ids::truncate_for_message(quote),
            ev.source_id
        ));
    };
    if let Some(h) = &ev.hash
        && *h != sha256_hex(quote.as_bytes())
    {
        return Some(format!("its hash {h} is not the sha256 of its quote"));
    }
    let ours = format!("L{}-L{}", at.first_line, at.last_line);
    let line_form = ev
        .locator
        .strip_prefix('L')
        .and_then(|r| r.split_once("-L"))
        .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok());
    if line_form && ev.locator != ours {
        return Some(format!(
            "its locator {} does not match where the quote is ({ours})",
            ev.locator
        ));
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    let first = needle[0];
    (0..=hay.len() - needle.len()).find(|&i| hay[i] == first && &hay[i..i + needle.len()] == needle)
}

/// `kb.register_evidence`: mint citable evidence for an exact quote of a
/// registered source; the same quote always gets the same id. A quote
/// holding a secret is refused unless a person asked for it as is.
pub fn register_evidence(
    kb: &Kb,
    caller: &Caller,
    p: RegisterEvidenceParams,
) -> Result<RegisterEvidenceResult> {
    let door = Door {
        command: "vouch quote",
        maskable: false,
    };
    let found = [secrets::scan_field("quote", false, &p.quote)];
    secrets::admit(caller, p.secrets, door, &found)?;
    locate_quote(kb, &p.source_id, &p.quote)?;
    let _lock = kb.lock()?;
    mint_evidence_locked(kb, caller, &p.source_id, &p.quote)
}

/// The Evidence for a quote: one already held (its id is content-derived,
/// so the same quote of the same source always yields the same evidence),
/// or a new record to write with its `evidence.register` event.
pub(crate) enum EvidenceFor {
    Held(RegisterEvidenceResult),
    New(Box<Evidence>, RegisterEvidenceResult),
}

/// What [`mint_evidence_locked`] would write, written by no one yet (a
/// batch of proposals writes many together). Caller holds the lock.
pub(crate) fn evidence_for(kb: &Kb, source_id: &str, quote: &str) -> Result<EvidenceFor> {
    let at = locate_quote(kb, source_id, quote)?;
    let hash = sha256_hex(quote.as_bytes());
    let id = evidence_id(source_id, quote);
    let locator = format!("L{}-L{}", at.first_line, at.last_line);
    if kb.exists(Dir::Evidence, &id) {
        // The id names this quote of this source only if the record says
        // so: a planted `evidence/<id>.yaml` holding other words must not
        // be handed back as this quote.
        let held = kb.load::<Evidence>(&id)?;
        let same = held
            .as_ref()
            .is_some_and(|e| e.source_id == source_id && e.quote.as_deref() == Some(quote));
        if !same {
            return Err(Error::conflict(format!(
                "evidence {id} already exists but does not hold this quote of source \
                 {source_id}: the file was planted or edited (its id is derived from the \
                 source and the quote). Restore evidence/{id}.yaml from git or remove it; \
                 `vouch doctor` reports it"
            )));
        }
        return Ok(EvidenceFor::Held(RegisterEvidenceResult {
            evidence_id: id,
            locator,
            hash,
            deduplicated: true,
        }));
    }
    let source_type = kb.load_source(source_id)?.map(|s| s.source_type);
    let ev = Evidence {
        id: id.clone(),
        source_id: source_id.to_string(),
        source_type,
        locator: locator.clone(),
        quote: Some(quote.to_string()),
        hash: Some(hash.clone()),
        created_at: kb.now(),
        extra: [(
            "span".to_string(),
            json!({"start": at.start, "end": at.end}),
        )]
        .into_iter()
        .collect(),
    };
    Ok(EvidenceFor::New(
        Box::new(ev),
        RegisterEvidenceResult {
            evidence_id: id,
            locator,
            hash,
            deduplicated: false,
        },
    ))
}

/// The `evidence.register` event of a new evidence record.
pub(crate) fn evidence_event(kb: &Kb, caller: &Caller, ev: &Evidence) -> crate::model::AuditEvent {
    kb.event(
        "evidence.register",
        &caller.actor,
        vec![ev.id.clone(), ev.source_id.clone()],
        json!({"locator": ev.locator}),
    )
}

/// Mint (or find) the Evidence for a quote ([`evidence_for`]), writing a
/// new record with its event. Caller holds the lock.
pub(crate) fn mint_evidence_locked(
    kb: &Kb,
    caller: &Caller,
    source_id: &str,
    quote: &str,
) -> Result<RegisterEvidenceResult> {
    let (ev, result) = match evidence_for(kb, source_id, quote)? {
        EvidenceFor::Held(r) => return Ok(r),
        EvidenceFor::New(ev, r) => (ev, r),
    };
    let mut event = evidence_event(kb, caller, &ev);
    kb.audited(std::slice::from_mut(&mut event), || kb.store(&*ev))?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::is_git_name;

    #[test]
    fn git_names_in_every_spelling_a_file_system_reads() {
        for name in [
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git::$INDEX_ALLOCATION",
            "GIT~1",
            ".g\u{200c}it",
            "\u{feff}.GIT",
            ".git\u{206a}",
            ".g\u{202e}i\u{200f}t.",
        ] {
            assert!(is_git_name(name), "{name}");
        }
        for name in [".github", ".gitignore", "git", "x.git", ".vouch"] {
            assert!(!is_git_name(name), "{name}");
        }
    }

    #[test]
    fn a_folders_name_in_every_spelling_a_file_system_reads() {
        use super::names_folder;
        for name in [
            ".vouch",
            ".VOUCH",
            ".vouch.",
            ".vouch ",
            "VOUCH~1",
            ".vou\u{200c}ch",
        ] {
            assert!(names_folder(name, ".vouch"), "{name}");
        }
        for name in [".vouchx", "vouch", ".git", "VOUCH~2x"] {
            assert!(!names_folder(name, ".vouch"), "{name}");
        }
        assert!(names_folder("KNOWLE~1", ".knowledge"));
    }
}
