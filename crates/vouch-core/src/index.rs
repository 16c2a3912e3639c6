//! `state.db`: the derived SQLite FTS5 index. Never the source of truth —
//! deleting it and rebuilding gives the same answers.
//!
//! Freshness: every open compares each indexed file's (mtime, size) with
//! what the index recorded and re-reads only what changed, so edits made
//! outside vouch (git pull, an editor) are seen by the next search without a
//! manual rebuild. The cost is one `stat` per durable file per open.
//! Writes through vouch update the index incrementally after the files land.

use crate::error::{Error, Result};
use crate::kb::{Caller, Kb, Stored};
use crate::model::{Claim, Entity, Page, Relation, Source};
use crate::store::Dir;
use rusqlite::{Connection, OptionalExtension, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Bump when the schema or what is indexed changes; a mismatch rebuilds.
pub const SCHEMA_VERSION: &str = "3";
pub const BACKENDS: &[&str] = &["fts5", "substring"];
const SOURCE_TEXT_LIMIT: usize = 64 * 1024;

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
    if let Ok(path) = kb.layout().source_content(&s.id)
        && let Ok(bytes) = std::fs::read(path)
    {
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

fn signature(path: &Path) -> Option<(i64, i64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    Some((mtime, m.len() as i64))
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

impl Index {
    fn open_path(kb: &Kb) -> Result<Index> {
        let path = kb.layout().index_db();
        match Self::try_open(kb, &path) {
            Ok(idx) => Ok(idx),
            Err(e) => {
                // A corrupt or foreign state.db is derived data: replace it.
                kb.warn(format!(
                    "index: {} was unusable ({e}); rebuilding it",
                    path.display()
                ));
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
                Self::try_open(kb, &path)
            }
        }
    }

    fn try_open(kb: &Kb, path: &Path) -> Result<Index> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
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

    fn upsert(&self, doc: &Doc, sig: (i64, i64)) -> Result<()> {
        let old: Option<i64> = self
            .conn
            .query_row(
                "SELECT rowid FROM docs WHERE kind=?1 AND id=?2",
                params![doc.kind, doc.id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(rowid) = old {
            self.conn
                .execute("DELETE FROM fts WHERE rowid=?1", [rowid])?;
            self.conn
                .execute("DELETE FROM docs WHERE rowid=?1", [rowid])?;
        }
        self.conn.execute(
            "INSERT INTO docs(kind, id, status, confidence, mtime_ns, size) VALUES(?1,?2,?3,?4,?5,?6)",
            params![doc.kind, doc.id, doc.status, doc.confidence, sig.0, sig.1],
        )?;
        let rowid = self.conn.last_insert_rowid();
        if doc.kind != "relation" {
            self.conn.execute(
                "INSERT INTO fts(rowid, title, body) VALUES(?1, ?2, ?3)",
                params![rowid, doc.title, doc.body],
            )?;
        }
        Ok(())
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

    /// Bring the index in step with the files: stat every durable file,
    /// re-read changed and new ones, drop vanished ones.
    fn sync(&mut self, kb: &Kb) -> Result<SyncStats> {
        let mut stats = SyncStats::default();
        let mut known = indexed_signatures(&self.conn)?;
        let changed = changed_files(kb, &mut known)?;
        if changed.is_empty() && known.is_empty() {
            return Ok(stats);
        }
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let res = (|| -> Result<()> {
            for ((kind, id), _) in known.drain() {
                self.delete(&kind, &id)?;
                stats.removed += 1;
            }
            for (doc, (kind, id, sig)) in load_docs(kb, &changed).into_iter().zip(&changed) {
                match doc {
                    Some(doc) => {
                        self.upsert(&doc, *sig)?;
                        stats.updated += 1;
                    }
                    None => self.delete(kind, id)?,
                }
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
        Ok(stats)
    }
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
        let ids = match dir {
            Some(d) => kb.ids(*d)?,
            None => kb.source_ids()?,
        };
        for id in ids {
            let Some(sig) = file_of(kb, kind, &id).ok().and_then(|p| signature(&p)) else {
                continue;
            };
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
    let conn = match Connection::open_with_flags(
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

/// Run `f` with an index that is in step with the files.
fn with_index<R>(kb: &Kb, f: impl FnOnce(&Index) -> Result<R>) -> Result<R> {
    let mut slot = kb.index.lock().unwrap_or_else(|e| e.into_inner());
    let stale = match &*slot {
        None => true,
        Some(o) => o.synced_at.elapsed() >= kb.index_sync_interval(),
    };
    if slot.is_none() {
        *slot = Some(OpenIndex {
            index: Index::open_path(kb)?,
            synced_at: std::time::Instant::now(),
        });
    }
    let open = slot.as_mut().expect("index just opened");
    if stale {
        open.index.sync(kb)?;
        open.synced_at = std::time::Instant::now();
    }
    f(&open.index)
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
            open.index.upsert(&doc, sig)?;
        }
        open.index.conn.execute_batch("COMMIT")?;
        Ok(())
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
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    match kb.settings().retrieval.backend {
        crate::settings::RetrievalBackend::Fts5 => fts_search(kb, &terms, limit, &kinds),
        crate::settings::RetrievalBackend::Substring => {
            crate::substring::search(kb, &terms, limit, &kinds)
        }
    }
}

fn fts_search(kb: &Kb, terms: &[String], limit: usize, kinds: &[&str]) -> Result<Vec<SearchHit>> {
    let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
    let kind_list = kinds
        .iter()
        .map(|k| format!("'{k}'"))
        .collect::<Vec<_>>()
        .join(",");
    let sql = format!(
        "SELECT d.kind, d.id, snippet(fts, -1, '[', ']', '…', 24), bm25(fts, 2.0, 1.0) AS r, d.status
         FROM fts JOIN docs d ON d.rowid = fts.rowid
         WHERE fts MATCH ?1 AND d.kind IN ({kind_list})
           AND (d.status IS NULL OR d.status != 'redacted')
         ORDER BY r, d.kind, d.id LIMIT ?2"
    );
    with_index(kb, |idx| {
        let mut stmt = idx.conn.prepare_cached(&sql)?;
        let mut hits: Vec<SearchHit> = Vec::new();
        // All words first; if that finds too little, any word fills the rest.
        let mut queries = vec![quoted.join(" AND ")];
        if quoted.len() > 1 {
            queries.push(quoted.join(" OR "));
        }
        for q in queries {
            if hits.len() >= limit {
                break;
            }
            let rows = stmt.query_map(params![q, limit as i64], |r| {
                Ok(SearchHit {
                    kind: r.get(0)?,
                    id: r.get(1)?,
                    snippet: r.get(2)?,
                    score: -r.get::<_, f64>(3)?,
                    backend: "fts5".into(),
                    status: r.get(4)?,
                })
            })?;
            for row in rows {
                let hit = row?;
                if hits.len() < limit && !hits.iter().any(|h| h.kind == hit.kind && h.id == hit.id)
                {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    })
}
