//! `state.db`: the derived SQLite FTS5 index. Never the source of truth —
//! deleting it and rebuilding gives the same answers.
//!
//! Freshness: every open scans each kind's directory (`readdir` plus one
//! `fstatat` per file), sums (id, mtime, size) into a per-kind fingerprint
//! and compares it with the one recorded at the last sync; only a kind whose
//! fingerprint moved is compared row by row, and only changed files are
//! re-read. So edits made outside vouch (git pull, an editor) are seen by the
//! next search without a manual rebuild. `retrieval.freshness: dirs` trades
//! in-place edits for speed: it skips a kind whose directory mtime has not
//! moved. Writes through vouch update the index and the fingerprint
//! incrementally after the files land. Costs are in docs/format.md.

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb, Stored};
use crate::model::{Claim, Entity, Page, Relation, Source};
use crate::store::Dir;
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Bump when the schema or what is indexed changes; a mismatch rebuilds.
pub const SCHEMA_VERSION: &str = "5";
pub const BACKENDS: &[&str] = &["fts5", "substring"];
const SOURCE_TEXT_LIMIT: usize = 64 * 1024;
/// How long to wait for another process's lock on state.db before answering
/// from the files instead (search falls back to the substring backend).
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// An artifact just written through vouch, for incremental indexing.
pub enum Written {
    Claim(Claim),
    Page(Page),
    Entity(Entity),
    Relation(Relation),
    Source(Source),
}

pub struct Index {
    conn: Connection,
}

/// What one document contributes to the index.
struct Doc {
    kind: &'static str,
    id: String,
    title: String,
    body: String,
    status: Option<String>,
    confidence: Option<f64>,
}

fn claim_doc(c: &Claim) -> Doc {
    Doc {
        kind: "claim",
        id: c.id.clone(),
        title: String::new(),
        body: if c.tags.is_empty() {
            c.text.clone()
        } else {
            format!("{}\n{}", c.text, c.tags.join(" "))
        },
        status: Some(c.status.as_str().to_string()),
        confidence: Some(c.confidence),
    }
}
fn page_doc(p: &Page) -> Doc {
    Doc {
        kind: "page",
        id: p.id.clone(),
        title: p.title.clone(),
        body: p.body.clone(),
        status: Some(p.status.as_str().to_string()),
        confidence: None,
    }
}
fn entity_doc(e: &Entity) -> Doc {
    Doc {
        kind: "entity",
        id: e.id.clone(),
        title: e.name.clone(),
        body: format!(
            "{}\n{}",
            e.aliases.join(", "),
            e.description.clone().unwrap_or_default()
        ),
        status: None,
        confidence: None,
    }
}
fn source_doc(kb: &Kb, s: &Source) -> Doc {
    let mut body = s.locator.clone();
    // Only content that hashes to its id is indexed (never a planted file).
    if let Ok(Some(bytes)) = kb.source_content(&s.id) {
        let cut = &bytes[..bytes.len().min(SOURCE_TEXT_LIMIT)];
        let text = String::from_utf8_lossy(cut);
        body.push('\n');
        body.push_str(&text);
    }
    Doc {
        kind: "source",
        id: s.id.clone(),
        title: s.title.clone().unwrap_or_default(),
        body,
        status: None,
        confidence: None,
    }
}

/// The kinds that have documents, and where their files are.
const KINDS: &[(&str, Option<Dir>)] = &[
    ("claim", Some(Dir::Claims)),
    ("page", Some(Dir::Pages)),
    ("entity", Some(Dir::Entities)),
    ("relation", Some(Dir::Relations)),
    ("source", None),
];

fn file_of(kb: &Kb, kind: &str, id: &str) -> Result<PathBuf> {
    match kind {
        "claim" => kb.layout().file(Dir::Claims, id),
        "page" => kb.layout().file(Dir::Pages, id),
        "entity" => kb.layout().file(Dir::Entities, id),
        "relation" => kb.layout().file(Dir::Relations, id),
        _ => kb.layout().source_meta(id),
    }
}

fn signature(path: &Path) -> Option<Sig> {
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((mtime_ns(&m), m.len() as i64))
}

/// Read a document from its file; `None` if gone or unreadable (warned).
fn load_doc(kb: &Kb, kind: &str, id: &str) -> Option<Doc> {
    fn get<T: Stored>(kb: &Kb, id: &str) -> Option<T> {
        match kb.load::<T>(id) {
            Ok(v) => v,
            Err(e) => {
                kb.warn(format!("index: skipped unreadable file: {e}"));
                None
            }
        }
    }
    match kind {
        "claim" => get::<Claim>(kb, id).map(|c| claim_doc(&c)),
        "page" => get::<Page>(kb, id).map(|p| page_doc(&p)),
        "entity" => get::<Entity>(kb, id).map(|e| entity_doc(&e)),
        "relation" => get::<Relation>(kb, id).map(|r| relation_doc(&r)),
        _ => match kb.load_source(id) {
            Ok(Some(s)) => Some(source_doc(kb, &s)),
            Ok(None) => None,
            Err(e) => {
                kb.warn(format!("index: skipped unreadable file: {e}"));
                None
            }
        },
    }
}

fn relation_doc(r: &Relation) -> Doc {
    Doc {
        kind: "relation",
        id: r.id.clone(),
        title: String::new(),
        body: format!("{} {} {}", r.source, r.relation, r.target),
        status: None,
        confidence: Some(r.confidence),
    }
}

/// Open `state.db` without following a link. A link there (a cloned
/// repository's way to make vouch drop another program's tables) is removed
/// — the file is derived — with a warning, and never opened through.
fn open_db(kb: &Kb, path: &Path, flags: rusqlite::OpenFlags) -> rusqlite::Result<Connection> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        if crate::store::nofollow::is_link(&p) {
            kb.warn(format!(
                "index: {} was a symbolic link; removed the link (its target is untouched) \
                 and rebuilding the derived index",
                p.display()
            ));
            let _ = std::fs::remove_file(&p);
        }
    }
    Connection::open_with_flags(path, flags | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW)
}

impl Index {
    fn open_path(kb: &Kb) -> Result<Index> {
        let path = kb.layout().index_db();
        match Self::try_open(kb, &path) {
            Ok(idx) => Ok(idx),
            // Locked is not broken: leave another process's database alone.
            Err(e) if e.kind == crate::error::ErrorKind::Busy => Err(e),
            Err(e) => {
                // A corrupt or foreign state.db is derived data: replace it.
                kb.warn(format!(
                    "index: {} was unusable ({e}); rebuilding it",
                    path.display()
                ));
                retire_readers(kb);
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                Self::try_open(kb, &path)
            }
        }
    }

    fn try_open(kb: &Kb, path: &Path) -> Result<Index> {
        let conn = open_db(kb, path, rusqlite::OpenFlags::default())?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let tokenizer = tokenizer(kb);
        let want = schema_tag(kb);
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )?;
        let have: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
                r.get(0)
            })
            .optional()?;
        if have.as_deref() != Some(want.as_str()) {
            conn.execute_batch(&format!(
                "DROP TABLE IF EXISTS docs; DROP TABLE IF EXISTS fts;
                 DROP TABLE IF EXISTS admitted;
                 DELETE FROM meta;
                 CREATE TABLE admitted(id TEXT PRIMARY KEY) WITHOUT ROWID;
                 CREATE TABLE docs(rowid INTEGER PRIMARY KEY, kind TEXT NOT NULL, id TEXT NOT NULL,
                     status TEXT, confidence REAL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                     UNIQUE(kind, id));
                 CREATE VIRTUAL TABLE fts USING fts5(title, body, tokenize='{tokenizer}');"
            ))?;
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?1)",
                [&want],
            )?;
        }
        Ok(Index { conn })
    }

    /// Insert or replace a document; returns the signature it replaced.
    /// The row id is derived from (kind, id), so an index kept up to date
    /// one write at a time and one rebuilt from scratch number every
    /// document alike — and break score ties alike.
    fn upsert(&self, doc: &Doc, sig: Sig) -> Result<Option<Sig>> {
        let old: Option<(i64, Sig)> = self
            .conn
            .prepare_cached("SELECT rowid, mtime_ns, size FROM docs WHERE kind=?1 AND id=?2")?
            .query_row(params![doc.kind, doc.id], |r| {
                Ok((r.get(0)?, (r.get(1)?, r.get(2)?)))
            })
            .optional()?;
        if let Some((rowid, _)) = old {
            self.conn
                .prepare_cached("DELETE FROM fts WHERE rowid=?1")?
                .execute([rowid])?;
            self.conn
                .prepare_cached("DELETE FROM docs WHERE rowid=?1")?
                .execute([rowid])?;
        }
        let mut rowid = stable_rowid(doc.kind, &doc.id);
        // Two documents hashing alike (odds ~1e-9 at a million documents):
        // the later one takes the next free id.
        while self
            .conn
            .prepare_cached("SELECT 1 FROM docs WHERE rowid=?1")?
            .exists([rowid])?
        {
            rowid = rowid.wrapping_add(1).max(1);
        }
        self.conn
            .prepare_cached(
                "INSERT INTO docs(rowid, kind, id, status, confidence, mtime_ns, size) VALUES(?1,?2,?3,?4,?5,?6,?7)",
            )?
            .execute(params![rowid, doc.kind, doc.id, doc.status, doc.confidence, sig.0, sig.1])?;
        if doc.kind != "relation" {
            self.conn
                .prepare_cached("INSERT INTO fts(rowid, title, body) VALUES(?1, ?2, ?3)")?
                .execute(params![rowid, doc.title, doc.body])?;
        }
        Ok(old.map(|(_, sig)| sig))
    }

    fn delete(&self, kind: &str, id: &str) -> Result<()> {
        let old: Option<i64> = self
            .conn
            .query_row(
                "SELECT rowid FROM docs WHERE kind=?1 AND id=?2",
                params![kind, id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(rowid) = old {
            self.conn
                .execute("DELETE FROM fts WHERE rowid=?1", [rowid])?;
            self.conn
                .execute("DELETE FROM docs WHERE rowid=?1", [rowid])?;
        }
        Ok(())
    }

    fn meta_value(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT value FROM meta WHERE key=?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }

    /// Bring the `admitted` table (ids that an approval or an import let
    /// in, [`crate::audit::Admits`]) in step with the audit log, reading
    /// only what was appended since the last call. A log that shrank or
    /// whose event at the last offset changed (cut or rewritten) is read
    /// again from the start.
    fn sync_admitted(&self, kb: &Kb) -> Result<()> {
        let log = kb.audit_log();
        let len = log.len()?;
        let offset: u64 = self
            .meta_value("audit:offset")?
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        if offset == len && offset == 0 {
            return Ok(());
        }
        let anchor = self.meta_value("audit:anchor")?;
        let from = if offset > len || (offset > 0 && log.hash_before(offset)? != anchor) {
            0
        } else {
            offset
        };
        if from == len && from == offset {
            return Ok(());
        }
        let (bytes, end) = log.read_from(from)?;
        let mut legacy = from > 0 && self.meta_value("audit:legacy_import")?.is_some();
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let res = (|| -> Result<()> {
            if from == 0 {
                self.conn.execute("DELETE FROM admitted", [])?;
            }
            let mut insert = self
                .conn
                .prepare_cached("INSERT OR IGNORE INTO admitted(id) VALUES(?1)")?;
            for line in bytes.split(|b| *b == b'\n') {
                if !crate::audit::Admits::may_admit(line) {
                    continue;
                }
                let Ok(ev) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                match crate::audit::Admits::of(&ev) {
                    crate::audit::Admits::Nothing => {}
                    crate::audit::Admits::Objects(ids) => {
                        for id in ids {
                            insert.execute([id])?;
                        }
                    }
                    crate::audit::Admits::Unnamed => legacy = true,
                }
            }
            let anchor = log.hash_before(end)?.unwrap_or_default();
            for (k, v) in [("audit:offset", end.to_string()), ("audit:anchor", anchor)] {
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                    params![k, v],
                )?;
            }
            if legacy {
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES('audit:legacy_import', '1')",
                    [],
                )?;
            } else {
                self.conn
                    .execute("DELETE FROM meta WHERE key='audit:legacy_import'", [])?;
            }
            Ok(())
        })();
        match res {
            Ok(()) => self.conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
        Ok(())
    }

    /// Which of `ids` no approval or import in the audit log let in. Empty
    /// when an import of an older vouch left its objects unnamed.
    /// Only an `admitted` table in step with the log answers (the main
    /// connection brings it in step on each sync); until then nothing is
    /// marked, so a claim approved a moment ago is never flagged.
    fn unaudited(&self, kb: &Kb, ids: &[&str]) -> Result<HashSet<String>> {
        let offset: Option<u64> = self
            .meta_value("audit:offset")?
            .and_then(|v| v.parse().ok());
        if offset.unwrap_or(0) != kb.audit_log().len()?
            || self.meta_value("audit:legacy_import")?.is_some()
        {
            return Ok(HashSet::new());
        }
        let mut known = self
            .conn
            .prepare_cached("SELECT 1 FROM admitted WHERE id=?1")?;
        let mut out = HashSet::new();
        for id in ids {
            if !known.exists([id])? {
                out.insert(id.to_string());
            }
        }
        Ok(out)
    }

    /// Bring the index in step with the files. Each kind's directory is
    /// scanned (one `fstatat` per file) and summed into a fingerprint; only a
    /// kind whose fingerprint moved is compared row by row, and only changed
    /// files are re-read. With `retrieval.freshness: dirs` a kind whose
    /// directory mtime has not moved is not scanned at all.
    fn sync(&mut self, kb: &Kb) -> Result<SyncStats> {
        let scan = Scan::take(kb, &self.scan_meta()?)?;
        let stats = self.apply(kb, scan)?;
        self.sync_admitted(kb)?;
        Ok(stats)
    }

    /// What the last sync recorded of each kind's directory.
    fn scan_meta(&self) -> Result<HashMap<String, ScanMeta>> {
        let mut stored = HashMap::new();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT key, value FROM meta WHERE key LIKE 'scan:%'")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (k, v) = row?;
            if let Some(m) = ScanMeta::parse(&v) {
                stored.insert(k, m);
            }
        }
        Ok(stored)
    }

    /// Apply a scan: re-read what changed, drop what vanished.
    fn apply(&mut self, kb: &Kb, scan: Scan) -> Result<SyncStats> {
        let mut stats = SyncStats::default();
        let stored = self.scan_meta()?;
        let Scan {
            kinds: scans,
            racy_after,
        } = scan;
        let mut changed: Vec<(&'static str, String, Sig)> = Vec::new();
        let mut removed: Vec<(&'static str, String)> = Vec::new();
        let mut new_meta: Vec<(String, String)> = Vec::new();
        for scan in scans {
            let key = format!("scan:{}", scan.kind);
            let old = stored.get(&key);
            let Some(files) = scan.files else { continue };
            let now = ScanMeta {
                dir_mtime: scan.dir_mtime,
                fingerprint: files.iter().fold(0u64, |acc, (id, sig)| {
                    acc.wrapping_add(entry_hash(id, *sig))
                }),
                count: files.len(),
            };
            let racy = files.iter().any(|(_, (mtime, _))| *mtime >= racy_after);
            let same_files =
                old.is_some_and(|o| o.fingerprint == now.fingerprint && o.count == now.count);
            if !same_files || racy {
                let mut known: HashMap<String, Sig> = HashMap::new();
                let mut stmt = self
                    .conn
                    .prepare_cached("SELECT id, mtime_ns, size FROM docs WHERE kind=?1")?;
                let rows = stmt.query_map([scan.kind], |r| {
                    Ok((r.get::<_, String>(0)?, (r.get(1)?, r.get(2)?)))
                })?;
                for row in rows {
                    let (id, sig) = row?;
                    known.insert(id, sig);
                }
                for (id, sig) in files {
                    match known.remove(&id) {
                        Some(was) if was == sig && sig.0 < racy_after => {}
                        _ => changed.push((scan.kind, id, sig)),
                    }
                }
                removed.extend(known.into_keys().map(|id| (scan.kind, id)));
            }
            if old != Some(&now) {
                new_meta.push((key, now.render()));
            }
        }
        if changed.is_empty() && removed.is_empty() && new_meta.is_empty() {
            return Ok(stats);
        }
        // In row-id order, FTS5 and the docs table append instead of
        // splitting pages: a rebuild is about twice as fast.
        changed.sort_by_cached_key(|(kind, id, _)| stable_rowid(kind, id));
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let res = (|| -> Result<()> {
            for (kind, id) in &removed {
                self.delete(kind, id)?;
                stats.removed += 1;
            }
            for (doc, (kind, id, sig)) in load_docs(kb, &changed).into_iter().zip(&changed) {
                match doc {
                    Some(doc) => {
                        self.upsert(&doc, *sig)?;
                        stats.updated += 1;
                    }
                    None => {
                        self.delete(kind, id)?;
                    }
                }
            }
            for (k, v) in &new_meta {
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                    params![k, v],
                )?;
            }
            Ok(())
        })();
        match res {
            Ok(()) => self.conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
        if stats.updated + stats.removed >= OPTIMIZE_AFTER {
            // Merge FTS5's segments into one after a bulk load (a rebuild,
            // a first search after `git clone`, a large pull): every query
            // then walks one doclist per word instead of many. Halves
            // search latency at 100,000 claims; costs ~0.3 s there.
            self.conn
                .execute("INSERT INTO fts(fts) VALUES('optimize')", [])?;
        }
        Ok(stats)
    }

    /// Keep a kind's stored fingerprint in step with a file vouch just wrote,
    /// so the next scan does not mistake our own write for an outside change.
    fn refingerprint(&self, kind: &str, id: &str, old: Option<Sig>, new: Sig) -> Result<()> {
        let key = format!("scan:{kind}");
        let value: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key=?1", [&key], |r| r.get(0))
            .optional()?;
        let Some(mut meta) = value.as_deref().and_then(ScanMeta::parse) else {
            return Ok(());
        };
        if let Some(old) = old {
            meta.fingerprint = meta.fingerprint.wrapping_sub(entry_hash(id, old));
        } else {
            meta.count += 1;
        }
        meta.fingerprint = meta.fingerprint.wrapping_add(entry_hash(id, new));
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
            params![key, meta.render()],
        )?;
        Ok(())
    }
}

/// A positive row id from the first 8 bytes of sha256(kind, id).
fn stable_rowid(kind: &str, id: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{kind}\0{id}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) >> 2) as i64 + 1
}

/// A sync that changes at least this many documents merges the FTS segments.
const OPTIMIZE_AFTER: usize = 5000;

/// A file's change signature: (mtime in ns, size).
type Sig = (i64, i64);

/// File timestamps tick coarsely (often 1-4 ms), so a second write in the
/// same tick keeps the mtime. Anything modified this recently is re-read
/// rather than trusted by signature (git's "racy" rule).
const RACY_NS: i64 = 2_000_000_000;

/// What the last sync saw of one kind's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ScanMeta {
    dir_mtime: i64,
    /// Wrapping sum of [`entry_hash`] over the kind's files: order-free, and
    /// cheap to adjust for one file.
    fingerprint: u64,
    count: usize,
}

impl ScanMeta {
    fn parse(v: &str) -> Option<ScanMeta> {
        let mut it = v.split(';');
        Some(ScanMeta {
            dir_mtime: it.next()?.parse().ok()?,
            fingerprint: u64::from_str_radix(it.next()?, 16).ok()?,
            count: it.next()?.parse().ok()?,
        })
    }
    fn render(&self) -> String {
        format!(
            "{};{:016x};{}",
            self.dir_mtime, self.fingerprint, self.count
        )
    }
}

fn entry_hash(id: &str, sig: Sig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (id, sig).hash(&mut h);
    h.finish()
}

fn mtime_ns(m: &std::fs::Metadata) -> i64 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The file system's side of a sync; taken without holding the index.
struct Scan {
    kinds: Vec<KindScan>,
    /// Files modified after this (ns since the epoch) are re-read regardless.
    racy_after: i64,
}

impl Scan {
    fn take(kb: &Kb, stored: &HashMap<String, ScanMeta>) -> Result<Scan> {
        let dirs_only = kb.settings().retrieval.freshness == crate::settings::Freshness::Dirs;
        // A file or directory modified within RACY_NS of this scan may change
        // again within the same timestamp tick; it is never trusted unread.
        let racy_after = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0)
            - RACY_NS;
        Ok(Scan {
            kinds: scan_all(kb, stored, dirs_only, racy_after)?,
            racy_after,
        })
    }
}

/// One kind's files as a scan found them; `files` is `None` when the scan
/// was skipped (freshness `dirs` and an unmoved directory).
struct KindScan {
    kind: &'static str,
    dir_mtime: i64,
    files: Option<Vec<(String, Sig)>>,
}

fn kind_dir(kb: &Kb, dir: Option<Dir>) -> PathBuf {
    match dir {
        Some(d) => kb.layout().dir(d),
        None => kb.layout().sources_dir(),
    }
}

/// Every file of one kind with its signature, one `fstatat` each (relative
/// to the open directory, so no path is resolved); large directories are
/// stat-ed on two threads.
fn scan_kind(kb: &Kb, dir: Option<Dir>) -> Result<Vec<(String, Sig)>> {
    let path = kind_dir(kb, dir);
    let entries: Vec<std::fs::DirEntry> = match std::fs::read_dir(&path) {
        Ok(e) => e.filter_map(|e| e.ok()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let one = |entry: &std::fs::DirEntry| -> Option<(String, Sig)> {
        let name = entry.file_name();
        let name = name.to_str()?;
        let (id, meta) = match dir {
            Some(d) => {
                let id = crate::store::layout::id_from_file_name(d, name)?;
                crate::ids::check_id("id", &id).ok()?;
                // A link is never followed (store::nofollow): not a document.
                (id, entry.metadata().ok()?)
            }
            None => {
                if !crate::ids::is_source_id(name) {
                    return None;
                }
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    return None;
                }
                let meta = std::fs::symlink_metadata(kb.layout().source_meta(name).ok()?).ok()?;
                (name.to_string(), meta)
            }
        };
        meta.is_file()
            .then(|| (id, (mtime_ns(&meta), meta.len() as i64)))
    };
    if entries.len() < 4096 {
        return Ok(entries.iter().filter_map(one).collect());
    }
    let (a, b) = entries.split_at(entries.len() / 2);
    std::thread::scope(|s| {
        let other = s.spawn(|| b.iter().filter_map(one).collect::<Vec<_>>());
        let mut out: Vec<(String, Sig)> = a.iter().filter_map(one).collect();
        out.extend(
            other
                .join()
                .map_err(|_| Error::internal("index: a scanning thread panicked"))?,
        );
        Ok(out)
    })
}

/// Scan every kind.
fn scan_all(
    kb: &Kb,
    stored: &HashMap<String, ScanMeta>,
    dirs_only: bool,
    racy_after: i64,
) -> Result<Vec<KindScan>> {
    let one = |kind: &'static str, dir: Option<Dir>| -> Result<KindScan> {
        let dir_mtime = std::fs::metadata(kind_dir(kb, dir))
            .map(|m| mtime_ns(&m))
            .unwrap_or(0);
        let unmoved = stored
            .get(&format!("scan:{kind}"))
            .is_some_and(|m| m.dir_mtime == dir_mtime && dir_mtime < racy_after);
        let files = if dirs_only && unmoved {
            None
        } else {
            Some(scan_kind(kb, dir)?)
        };
        Ok(KindScan {
            kind,
            dir_mtime,
            files,
        })
    };
    KINDS.iter().map(|(kind, dir)| one(kind, *dir)).collect()
}

type Signatures = HashMap<(String, String), (i64, i64)>;
type Changed = Vec<(&'static str, String, (i64, i64))>;

/// What the index recorded for each document: (mtime, size) of its file.
fn indexed_signatures(conn: &Connection) -> Result<Signatures> {
    let mut known = HashMap::new();
    let mut stmt = conn.prepare_cached("SELECT kind, id, mtime_ns, size FROM docs")?;
    let rows = stmt.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))?;
    for row in rows {
        let (k, v) = row?;
        known.insert(k, v);
    }
    Ok(known)
}

/// Files that are new or changed since they were indexed; what is left in
/// `known` afterwards has vanished from disk.
fn changed_files(kb: &Kb, known: &mut Signatures) -> Result<Changed> {
    let mut changed = Vec::new();
    for (kind, dir) in KINDS {
        for (id, sig) in scan_kind(kb, *dir)? {
            match known.remove(&(kind.to_string(), id.clone())) {
                Some(old) if old == sig => {}
                _ => changed.push((*kind, id, sig)),
            }
        }
    }
    Ok(changed)
}

/// How far `state.db` is from the files, without changing it (for
/// `kb.doctor`). `None` when there is no index yet (it is built on the
/// first search).
#[derive(Debug, Clone, Default)]
pub struct Freshness {
    /// Files new or changed since they were indexed.
    pub changed: usize,
    /// Indexed documents whose file is gone.
    pub vanished: usize,
    /// Why the index cannot be used at all (unreadable, other schema).
    pub unusable: Option<String>,
}

impl Freshness {
    pub fn in_step(&self) -> bool {
        self.changed == 0 && self.vanished == 0 && self.unusable.is_none()
    }
}

pub fn freshness(kb: &Kb) -> Result<Option<Freshness>> {
    // Held until `conn` closes (declared first, dropped last): a rebuild
    // must not unlink the file under it.
    let _lease = Lease::own(kb);
    let path = kb.layout().index_db();
    if !path.exists() {
        return Ok(None);
    }
    let unusable = |why: String| {
        Ok(Some(Freshness {
            unusable: Some(why),
            ..Default::default()
        }))
    };
    let conn = match open_db(
        kb,
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .and_then(|c| {
        c.pragma_update(None, "query_only", true)?;
        Ok(c)
    }) {
        Ok(c) => c,
        Err(e) => return unusable(format!("cannot be opened ({e})")),
    };
    let have: std::result::Result<Option<String>, _> = conn
        .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
            r.get(0)
        })
        .optional();
    match have {
        Ok(Some(v)) if v == schema_tag(kb) => {}
        Ok(_) => {
            return unusable(
                "was built by another version or with other retrieval settings".into(),
            );
        }
        Err(e) => return unusable(format!("is not a vouch index ({e})")),
    }
    let mut known = match indexed_signatures(&conn) {
        Ok(k) => k,
        Err(e) => return unusable(e.message),
    };
    // A file that does not parse is never indexed; the doctor reports it
    // as unparseable, not as an index out of step.
    let changed = changed_files(kb, &mut known)?
        .into_iter()
        .filter(|(kind, id, _)| parses(kb, kind, id))
        .count();
    Ok(Some(Freshness {
        changed,
        vanished: known.len(),
        unusable: None,
    }))
}

/// Whether a document's file parses (without warning when it does not).
fn parses(kb: &Kb, kind: &str, id: &str) -> bool {
    match kind {
        "claim" => matches!(kb.load::<Claim>(id), Ok(Some(_))),
        "page" => matches!(kb.load::<Page>(id), Ok(Some(_))),
        "entity" => matches!(kb.load::<Entity>(id), Ok(Some(_))),
        "relation" => matches!(kb.load::<Relation>(id), Ok(Some(_))),
        _ => matches!(kb.load_source(id), Ok(Some(_))),
    }
}

fn tokenizer(kb: &Kb) -> &'static str {
    if kb.settings().retrieval.fts5_porter {
        "porter unicode61 remove_diacritics 2"
    } else {
        "unicode61 remove_diacritics 2"
    }
}

/// What `meta.schema` records: schema version and tokenizer.
fn schema_tag(kb: &Kb) -> String {
    format!("{SCHEMA_VERSION};{}", tokenizer(kb))
}

/// Parse changed files on two threads (YAML parsing dominates a rebuild).
fn load_docs(kb: &Kb, items: &[(&'static str, String, (i64, i64))]) -> Vec<Option<Doc>> {
    if items.len() < 512 {
        return items.iter().map(|(k, id, _)| load_doc(kb, k, id)).collect();
    }
    let mid = items.len() / 2;
    let (a, b) = items.split_at(mid);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            b.iter()
                .map(|(k, id, _)| load_doc(kb, k, id))
                .collect::<Vec<_>>()
        });
        let mut out: Vec<Option<Doc>> = a.iter().map(|(k, id, _)| load_doc(kb, k, id)).collect();
        out.extend(h.join().unwrap_or_default());
        out
    })
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SyncStats {
    pub updated: usize,
    pub removed: usize,
}

/// How long an open index in a long-running process trusts its last sync
/// before stat-ing the files again. One-shot commands always sync.
pub const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

pub(crate) struct OpenIndex {
    index: Index,
    synced_at: std::time::Instant,
}

/// Read connections beside the main one, so that concurrent requests in a
/// server search in parallel (SQLite in WAL mode: readers never wait for one
/// another, nor for the writer). Tagged with a generation so that none
/// outlives a rebuild, which replaces the database file.
///
/// No connection of this process may stay open while `state.db` is unlinked
/// and created again: SQLite opens `-wal` and `-shm` by name, lazily, so a
/// connection opened on the old file would attach the new file's WAL and
/// shared memory to its own (the old inode's) — it truncates `-shm` under
/// the new connections (it finds no other process's lock on it) and reads
/// the new WAL over the old pages: `disk I/O error`, wrong answers, or
/// SIGBUS. So every connection outside the main slot is counted while it is
/// open, and [`retire_readers`] waits for the count to reach zero.
#[derive(Default)]
pub(crate) struct Readers {
    generation: u64,
    /// The main connection has opened and synced this generation's file.
    ready: bool,
    idle: Vec<Connection>,
    /// Connections open outside the main slot and the idle pool (see
    /// [`Lease`]).
    leased: usize,
    /// Signalled whenever `leased` goes down.
    returned: std::sync::Arc<std::sync::Condvar>,
}

/// Idle read connections kept per process (2 cores; HTTP's worker pool).
const MAX_IDLE_READERS: usize = 4;

fn readers(kb: &Kb) -> std::sync::MutexGuard<'_, Readers> {
    kb.readers.lock().unwrap_or_else(|e| e.into_inner())
}

/// The database file is about to be replaced: retire every read connection
/// and wait until none is open any more. The caller holds `kb.index`, so no
/// lease starts until the new file is ready (see [`Lease`]); a reader still
/// answering finds the generation moved, closes its connection and waits for
/// the main one.
fn retire_readers(kb: &Kb) {
    let mut r = readers(kb);
    r.generation += 1;
    r.ready = false;
    r.idle.clear();
    let returned = r.returned.clone();
    while r.leased > 0 {
        r = returned.wait(r).unwrap_or_else(|e| e.into_inner());
    }
}

/// A connection open on `state.db` outside the main slot, counted in
/// [`Readers::leased`] from before it opens until after it closes (or went
/// back to the idle pool), so that [`retire_readers`] never lets a file be
/// unlinked under it. Released on drop, panics included.
struct Lease<'a> {
    kb: &'a Kb,
    generation: u64,
    index: Option<Index>,
}

impl<'a> Lease<'a> {
    /// A read lease on the current file, if the main connection has made it
    /// ready; with an idle connection if one is pooled.
    fn reader(kb: &'a Kb) -> Option<Lease<'a>> {
        let mut r = readers(kb);
        if !r.ready {
            return None;
        }
        r.leased += 1;
        Some(Lease {
            kb,
            generation: r.generation,
            index: r.idle.pop().map(|conn| Index { conn }),
        })
    }

    /// A lease for a connection of one's own (the doctor's freshness check),
    /// whether or not the main connection has the file open. Taken under
    /// `kb.index`, which every replacement of the file holds throughout.
    fn own(kb: &'a Kb) -> Lease<'a> {
        let _replacing = kb.index.lock().unwrap_or_else(|e| e.into_inner());
        let mut r = readers(kb);
        r.leased += 1;
        Lease {
            kb,
            generation: r.generation,
            index: None,
        }
    }

    /// Whether the file this lease was taken on is still the current one.
    fn current(&self) -> bool {
        readers(self.kb).generation == self.generation
    }

    /// Close the connection rather than pool it (it failed).
    fn discard(&mut self) {
        self.index = None;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut r = readers(self.kb);
        if let Some(index) = self.index.take() {
            if r.generation == self.generation && r.idle.len() < MAX_IDLE_READERS {
                r.idle.push(index.conn);
            } else {
                // Close it before the lease ends, outside the lock.
                drop(r);
                drop(index);
                r = readers(self.kb);
            }
        }
        r.leased -= 1;
        r.returned.notify_all();
    }
}

fn mark_ready(kb: &Kb) {
    readers(kb).ready = true;
}

/// Run `f` with an index that is in step with the files. The first caller
/// uses (and syncs) the main connection; a caller that finds it busy with
/// another request reads through a connection of its own rather than wait.
fn with_index<R>(kb: &Kb, f: impl Fn(&Index) -> Result<R>) -> Result<R> {
    let mut slot = match kb.index.try_lock() {
        Ok(slot) => slot,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            if let Some(lease) = Lease::reader(kb)
                && let Some(answer) = with_reader(lease, &f)
            {
                return answer;
            }
            // Not built yet, rebuilt while we read, or the reader failed:
            // wait for the main connection, which is in step with the file.
            kb.index.lock().unwrap_or_else(|e| e.into_inner())
        }
    };
    let stale = match &*slot {
        None => true,
        Some(o) => o.synced_at.elapsed() >= kb.index_sync_interval(),
    };
    let open = open_in(kb, &mut slot)?;
    if stale {
        open.index.sync(kb)?;
        open.synced_at = std::time::Instant::now();
        mark_ready(kb);
    }
    f(&open.index)
}

/// Answer through a read connection; `None` — the main connection answers
/// instead — if the index was replaced (rebuilt) while we read, since the
/// answer would come from the file being retired, or if the reader could not
/// open or failed: a reader only spares a request the wait, the main
/// connection is the one that opens, repairs and syncs the index.
fn with_reader<R>(mut lease: Lease, f: &impl Fn(&Index) -> Result<R>) -> Option<Result<R>> {
    if lease.index.is_none() {
        // Never create the file: only the main connection does, schema and
        // all. The lease keeps it from being unlinked while we read it.
        let flags =
            rusqlite::OpenFlags::default().difference(rusqlite::OpenFlags::SQLITE_OPEN_CREATE);
        let conn = open_db(lease.kb, &lease.kb.layout().index_db(), flags)
            .and_then(|conn| {
                conn.busy_timeout(BUSY_TIMEOUT)?;
                conn.pragma_update(None, "query_only", true)?;
                Ok(conn)
            })
            .ok()?;
        lease.index = Some(Index { conn });
    }
    let answer = f(lease.index.as_ref().expect("reader just opened"));
    if answer.is_err() {
        lease.discard();
        return None;
    }
    lease.current().then_some(answer)
}

/// The index open in `slot`, opening it if needed. A freshly opened index
/// counts as never synced, so a search that gets it first syncs it.
fn open_in<'a>(kb: &Kb, slot: &'a mut Option<OpenIndex>) -> Result<&'a mut OpenIndex> {
    if slot.is_none() {
        *slot = Some(OpenIndex {
            index: Index::open_path(kb)?,
            synced_at: std::time::Instant::now()
                .checked_sub(kb.index_sync_interval())
                .unwrap_or_else(std::time::Instant::now),
        });
    }
    Ok(slot.as_mut().expect("index just opened"))
}

/// Bring this process's index in step with the files without blocking
/// searches during the file scan: long-running servers call this on a timer
/// so no request pays for the scan. Opens the index if needed.
pub fn refresh(kb: &Kb) -> Result<SyncStats> {
    let stored = {
        let mut slot = kb.index.lock().unwrap_or_else(|e| e.into_inner());
        open_in(kb, &mut slot)?.index.scan_meta()?
    };
    let scan = Scan::take(kb, &stored)?;
    let mut slot = kb.index.lock().unwrap_or_else(|e| e.into_inner());
    let Some(open) = slot.as_mut() else {
        return Ok(SyncStats::default());
    };
    let stats = open.index.apply(kb, scan)?;
    open.synced_at = std::time::Instant::now();
    mark_ready(kb);
    Ok(stats)
}

/// Whether this process has the index open (and so keeps it in step itself).
pub fn is_open(kb: &Kb) -> bool {
    kb.index.lock().unwrap_or_else(|e| e.into_inner()).is_some()
}

/// After vouch wrote artifacts: update an index this process has open. An
/// index not open here catches up by stat on its next open.
pub fn after_write(kb: &Kb, written: &[Written]) {
    let mut slot = kb.index.lock().unwrap_or_else(|e| e.into_inner());
    let Some(open) = slot.as_mut() else { return };
    let res = (|| -> Result<()> {
        open.index.conn.execute_batch("BEGIN IMMEDIATE")?;
        for w in written {
            let doc = match w {
                Written::Claim(c) => claim_doc(c),
                Written::Page(p) => page_doc(p),
                Written::Entity(e) => entity_doc(e),
                Written::Relation(r) => relation_doc(r),
                Written::Source(s) => source_doc(kb, s),
            };
            let sig = file_of(kb, doc.kind, &doc.id)
                .ok()
                .and_then(|p| signature(&p))
                .unwrap_or((0, 0));
            let old = open.index.upsert(&doc, sig)?;
            open.index.refingerprint(doc.kind, &doc.id, old, sig)?;
        }
        open.index.conn.execute_batch("COMMIT")?;
        // The write's audit event admits what it wrote.
        open.index.sync_admitted(kb)
    })();
    if let Err(e) = res {
        let _ = open.index.conn.execute_batch("ROLLBACK");
        kb.warn(format!(
            "index: incremental update failed ({e}); it will resync"
        ));
        *slot = None;
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RebuildResult {
    pub ok: bool,
    pub indexed: usize,
}

/// Drop `state.db` and build it again from the files.
pub fn rebuild(kb: &Kb) -> Result<RebuildResult> {
    let mut slot = kb.index.lock().unwrap_or_else(|e| e.into_inner());
    *slot = None;
    retire_readers(kb);
    let path = kb.layout().index_db();
    for suffix in ["", "-wal", "-shm"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&p, e)),
        }
    }
    let mut index = Index::open_path(kb)?;
    let stats = index.sync(kb)?;
    *slot = Some(OpenIndex {
        index,
        synced_at: std::time::Instant::now(),
    });
    mark_ready(kb);
    Ok(RebuildResult {
        ok: true,
        indexed: stats.updated,
    })
}

pub fn rebuild_audited(kb: &Kb, caller: &Caller) -> Result<RebuildResult> {
    let r = rebuild(kb)?;
    let _lock = kb.lock()?;
    let mut ev = kb.event(
        "index.rebuild",
        &caller.actor,
        Vec::new(),
        serde_json::json!({"indexed": r.indexed}),
    );
    kb.append_audit(std::slice::from_mut(&mut ev))?;
    Ok(r)
}

// ----- search --------------------------------------------------------------------

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Plain words. Quotes, operators and punctuation are treated as text.
    pub query: String,
    /// Max hits (default 10, 1..=1000).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Any of claim, page, entity, source (default all).
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct SearchHit {
    pub kind: String,
    pub id: String,
    /// Matched words are wrapped in [brackets].
    pub snippet: String,
    pub score: f64,
    pub backend: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// For ranking context packs; not part of the search result.
    #[serde(skip)]
    #[schemars(skip)]
    pub confidence: Option<f64>,
    /// `{"unaudited": true}` on knowledge that no approval or import in the
    /// audit log let in (written by hand, or the log was cut).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

pub const SEARCH_KINDS: &[&str] = &["claim", "page", "entity", "source"];
pub const MAX_SEARCH_LIMIT: usize = 1000;

/// Words of a query: runs of letters and digits, lowercased, deduplicated.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        let w = w.to_lowercase();
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() >= 64 {
            break;
        }
    }
    out
}

fn checked_search(p: &SearchParams) -> Result<(usize, Vec<&'static str>)> {
    if p.query.trim().is_empty() {
        return Err(Error::invalid("query: must not be empty"));
    }
    let limit = match p.limit {
        None => 10,
        Some(n) if n < 1 => {
            return Err(Error::invalid(format!(
                "limit: {n} is not allowed; use 1..={MAX_SEARCH_LIMIT}"
            )));
        }
        Some(n) => (n as usize).min(MAX_SEARCH_LIMIT),
    };
    let kinds = match &p.kinds {
        None => SEARCH_KINDS.to_vec(),
        Some(list) if list.is_empty() => SEARCH_KINDS.to_vec(),
        Some(list) => {
            let mut out = Vec::new();
            for k in list {
                match SEARCH_KINDS.iter().find(|s| *s == k) {
                    Some(s) => out.push(*s),
                    None => {
                        return Err(Error::invalid(format!(
                            "kinds: unknown kind {:?}; expected any of: {}",
                            crate::ids::truncate_for_message(k),
                            SEARCH_KINDS.join(", ")
                        )));
                    }
                }
            }
            out
        }
    };
    Ok((limit, kinds))
}

pub fn search(kb: &Kb, p: SearchParams) -> Result<Vec<SearchHit>> {
    let (limit, kinds) = checked_search(&p)?;
    let terms = query_terms(&p.query);
    retrieve(
        kb,
        &Query {
            terms: &terms,
            limit,
            kinds: &kinds,
            currency: Currency::Any,
            snippets: Snippets::Yes,
        },
    )
}

/// What to retrieve: the same for every backend.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// Words, as [`query_terms`] makes them.
    pub terms: &'a [String],
    pub limit: usize,
    /// Any of claim, page, entity, source.
    pub kinds: &'a [&'a str],
    pub currency: Currency,
    pub snippets: Snippets,
}

/// Whether hits carry a marked-up snippet (search) or not (context packs,
/// which read the items themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snippets {
    Yes,
    No,
}

/// Which statuses retrieval may return. Redacted claims are never returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Currency {
    /// Everything approved except redacted claims (search).
    Any,
    /// Current knowledge only: no superseded, archived or redacted claims and
    /// no archived pages (context packs, answers).
    Current,
}

impl Currency {
    /// Whether an item with this status may be returned.
    pub fn admits(self, status: Option<&str>) -> bool {
        !matches!(
            (self, status),
            (_, Some("redacted")) | (Currency::Current, Some("superseded" | "archived"))
        )
    }
}

/// Ranked hits from the configured backend, each gated kind (claim, page,
/// entity) that never went through the gate marked `_meta.unaudited`.
pub fn retrieve(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let mut hits = backend_hits(kb, q)?;
    mark_unaudited(kb, &mut hits);
    Ok(hits)
}

/// Mark hits that no approval or import in the audit log admitted: a
/// `claims/x.yaml` written by hand (or a cut log). The index follows the
/// log incrementally; if it cannot be used, the log is read whole.
fn mark_unaudited(kb: &Kb, hits: &mut [SearchHit]) {
    let ids: Vec<&str> = hits
        .iter()
        .filter(|h| matches!(h.kind.as_str(), "claim" | "page" | "entity"))
        .map(|h| h.id.as_str())
        .collect();
    if ids.is_empty() {
        return;
    }
    let unaudited = match with_index(kb, |idx| idx.unaudited(kb, &ids)) {
        Ok(set) => set,
        Err(_) => match crate::audit::Trail::read(kb.audit_log()) {
            Ok(t) if !t.legacy_import => ids
                .iter()
                .filter(|id| !t.admits(id))
                .map(|id| id.to_string())
                .collect(),
            _ => HashSet::new(),
        },
    };
    for h in hits.iter_mut() {
        if unaudited.contains(&h.id) {
            h.meta = Some(serde_json::json!({"unaudited": true}));
        }
    }
}

fn backend_hits(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    if q.terms.is_empty() {
        return Ok(Vec::new());
    }
    match kb.settings().retrieval.backend {
        crate::settings::RetrievalBackend::Fts5 => match fts_search(kb, q) {
            Err(e) if e.kind == crate::error::ErrorKind::Busy => {
                kb.warn(format!("{e}; answered by the substring backend"));
                crate::retrieval::substring::search(kb, q)
            }
            other => other,
        },
        crate::settings::RetrievalBackend::Substring => crate::retrieval::substring::search(kb, q),
    }
}

/// The best `want` matches of the FTS query `q` that pass the kind and
/// status filters, ordered by score and then row id (stable per document,
/// see [`stable_rowid`]). FTS5 ranks on its own — a join would make SQLite
/// sort every match with its docs row — and docs rows are looked up for the
/// top of the list only; the page widens until `want` rows pass the filters
/// or the matches run out.
fn ranked(
    idx: &Index,
    q: &str,
    want: usize,
    kinds: &[&str],
    currency: Currency,
) -> Result<Vec<(i64, SearchHit)>> {
    let mut rank = idx.conn.prepare_cached(
        "SELECT rowid, bm25(fts, 2.0, 1.0) AS r FROM fts WHERE fts MATCH ?1
         ORDER BY r, rowid LIMIT ?2",
    )?;
    let mut doc = idx
        .conn
        .prepare_cached("SELECT kind, id, status, confidence FROM docs WHERE rowid = ?1")?;
    let mut page = want * 2 + 16;
    loop {
        let rows: Vec<(i64, f64)> = rank
            .query_map(params![q, page as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let exhausted = rows.len() < page;
        let mut hits: Vec<(i64, SearchHit)> = Vec::new();
        for (rowid, r) in &rows {
            let Some(hit) = doc
                .query_row([rowid], |d| {
                    Ok(SearchHit {
                        kind: d.get(0)?,
                        id: d.get(1)?,
                        snippet: String::new(),
                        score: -r,
                        backend: "fts5".into(),
                        status: d.get(2)?,
                        confidence: d.get(3)?,
                        meta: None,
                    })
                })
                .optional()?
            else {
                continue;
            };
            if kinds.contains(&hit.kind.as_str()) && currency.admits(hit.status.as_deref()) {
                hits.push((*rowid, hit));
                if hits.len() == want {
                    return Ok(hits);
                }
            }
        }
        if exhausted {
            return Ok(hits);
        }
        page *= 4;
    }
}

/// A word in at least this many documents is "common": it joins the any-word
/// fill only when no rarer word is there to narrow it.
const COMMON_DF: usize = 2000;

/// Words too common to narrow an any-word (OR) query: scoring them means
/// scoring most of the KB for almost no change in rank.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does",
    "for", "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "of", "on",
    "or", "so", "that", "the", "their", "then", "there", "this", "to", "was", "we", "what", "when",
    "where", "which", "who", "why", "will", "with", "you",
];

fn fts_search(kb: &Kb, query: &Query) -> Result<Vec<SearchHit>> {
    let Query {
        terms,
        limit,
        kinds,
        currency,
        snippets,
    } = *query;
    let quote = |ts: &[&String]| -> Vec<String> { ts.iter().map(|t| format!("\"{t}\"")).collect() };
    let all: Vec<&String> = terms.iter().collect();
    let narrowing: Vec<&String> = terms
        .iter()
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .collect();
    let highlight = quote(&all).join(" OR ");
    with_index(kb, |idx| {
        // All words first; if that finds too little, any word fills the
        // rest — without stop words, and without words so common that
        // scoring them means scoring a large part of the KB (they add little
        // to BM25 anyway), unless every word is that common: then the
        // rarest one alone.
        let mut queries = vec![quote(&all).join(" AND ")];
        if all.len() > 1 {
            let any = if narrowing.is_empty() {
                &all
            } else {
                &narrowing
            };
            let df = |t: &String, cap: usize| -> Result<usize> {
                Ok(idx
                    .conn
                    .prepare_cached(
                        "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT ?2)",
                    )?
                    .query_row(params![format!("\"{t}\""), cap as i64], |r| {
                        r.get::<_, i64>(0)
                    })? as usize)
            };
            let mut rare = Vec::new();
            let mut common = Vec::new();
            for t in any.iter() {
                match df(t, COMMON_DF)? {
                    0 => {}
                    n if n < COMMON_DF => rare.push(*t),
                    _ => common.push(*t),
                }
            }
            if rare.is_empty() && !common.is_empty() {
                let mut counts = Vec::new();
                for t in common {
                    counts.push((df(t, usize::MAX >> 1)?, t));
                }
                if let Some((_, t)) = counts.into_iter().min_by_key(|(n, _)| *n) {
                    rare.push(t);
                }
            }
            if rare.is_empty() {
                rare = any.clone();
            }
            queries.push(quote(&rare).join(" OR "));
        }
        let mut hits: Vec<(i64, SearchHit)> = Vec::new();
        for q in queries {
            if hits.len() >= limit {
                break;
            }
            for (rowid, hit) in ranked(idx, &q, limit, kinds, currency)? {
                if hits.len() < limit && !hits.iter().any(|(r, _)| *r == rowid) {
                    hits.push((rowid, hit));
                }
            }
        }
        if snippets == Snippets::No {
            return Ok(hits.into_iter().map(|(_, h)| h).collect());
        }
        let mut snip = idx.conn.prepare_cached(
            "SELECT snippet(fts, -1, '[', ']', '…', 24) FROM fts WHERE fts MATCH ?1 AND rowid = ?2",
        )?;
        hits.into_iter()
            .map(|(rowid, mut hit)| {
                hit.snippet = snip
                    .query_row(params![highlight, rowid], |r| r.get(0))
                    .optional()?
                    .unwrap_or_default();
                Ok(hit)
            })
            .collect()
    })
}

#[cfg(test)]
mod readers_tests {
    use super::*;
    use crate::methods::dispatch;
    use crate::{Caller, Transport};
    use serde_json::json;

    fn claim(kb: &Kb, src: &str, text: &str) {
        let agent = Caller::new("agent", Transport::Jsonl);
        let person = Caller::new("alice", Transport::Cli);
        let p = dispatch(
            kb,
            &agent,
            "kb.propose_claim",
            json!({"text": text, "evidence": [src]}),
        )
        .unwrap();
        dispatch(
            kb,
            &person,
            "kb.approve",
            json!({"proposal_id": p["proposal_id"]}),
        )
        .unwrap();
    }

    /// Search while another request holds the main connection.
    fn search_beside(kb: &Kb, q: &str) -> Vec<String> {
        let _busy = kb.index.lock().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                search(
                    kb,
                    SearchParams {
                        query: q.into(),
                        limit: None,
                        kinds: Some(vec!["claim".into()]),
                    },
                )
                .unwrap()
                .into_iter()
                .map(|h| h.id)
                .collect()
            })
            .join()
            .unwrap()
        })
    }

    #[test]
    fn a_busy_main_connection_reads_through_a_fresh_reader_after_rebuild() {
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let kb = Kb::open(
            &dir.path().join(".vouch"),
            std::sync::Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        let src = dispatch(
            &kb,
            &Caller::new("agent", Transport::Jsonl),
            "kb.register_source",
            json!({"content": "drills", "locator": "x"}),
        )
        .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        claim(&kb, &src, "Failover drills run monthly");
        let first = search(
            &kb,
            SearchParams {
                query: "failover".into(),
                limit: None,
                kinds: None,
            },
        )
        .unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        assert_eq!(
            readers(&kb).idle.len(),
            1,
            "the reader went back to the pool"
        );

        rebuild(&kb).unwrap();
        claim(&kb, &src, "Failover drills need two people");
        assert_eq!(
            search_beside(&kb, "failover").len(),
            2,
            "a reader on the replaced state.db answered"
        );
    }

    /// A reader that opened `state.db` but has not read yet attaches
    /// `-wal` and `-shm` by name when it does: were the files replaced
    /// under it, it would take the new file's (truncating the new `-shm`
    /// under the main connection — `disk I/O error` or SIGBUS in a server).
    /// A rebuild waits for it instead.
    #[test]
    fn a_rebuild_waits_for_a_reader_still_open_on_the_old_file() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        let dir = tempfile::tempdir().unwrap();
        Kb::init(dir.path(), "t", None).unwrap();
        let kb = Kb::open(
            &dir.path().join(".vouch"),
            std::sync::Arc::new(crate::clock::SystemClock::default()),
        )
        .unwrap();
        let src = dispatch(
            &kb,
            &Caller::new("agent", Transport::Jsonl),
            "kb.register_source",
            json!({"content": "drills", "locator": "x"}),
        )
        .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        claim(&kb, &src, "Failover drills run monthly");
        let count = |idx: &Index| -> Result<i64> {
            Ok(idx
                .conn
                .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))?)
        };
        // The main connection opens and syncs the file: readers may follow.
        let docs = with_index(&kb, count).unwrap();
        assert_eq!(search_beside(&kb, "failover").len(), 1);

        let (opened, reading) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let first = AtomicBool::new(true);
        std::thread::scope(|s| {
            let busy = kb.index.lock().unwrap();
            // A reader (the main connection is busy) holding a connection
            // it has not read through yet.
            let reader = s.spawn(|| {
                with_index(&kb, |idx| {
                    if first.swap(false, Ordering::SeqCst) {
                        opened.send(()).unwrap();
                        let wait = wait.lock().unwrap();
                        wait.recv_timeout(Duration::from_secs(10)).unwrap();
                    }
                    count(idx)
                })
            });
            reading.recv_timeout(Duration::from_secs(10)).unwrap();
            drop(busy);
            let rebuilt = s.spawn(|| rebuild(&kb));
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !rebuilt.is_finished(),
                "the rebuild replaced state.db under an open reader"
            );
            go.send(()).unwrap();
            assert_eq!(reader.join().unwrap().unwrap(), docs);
            rebuilt.join().unwrap().unwrap();
        });
        assert_eq!(readers(&kb).leased, 0);
        claim(&kb, &src, "Failover drills need two people");
        assert_eq!(search_beside(&kb, "failover").len(), 2);
        assert_eq!(search_beside(&kb, "failover").len(), 2);
    }
}
