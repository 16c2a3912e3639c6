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

use super::{Currency, Freshness, Query, RebuildResult, SearchHit, Snippets, SyncStats, Written};
use crate::error::{Error, Result};
use crate::model::{Claim, Entity, Page, Relation};
use crate::stored::Store;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

mod admission;
mod backed;
#[cfg(test)]
mod boundary_tests;
mod engine;
mod errors;
mod handle;
mod pool;
pub(crate) mod postings;
mod rank;
mod scan;
mod sync;
use sync::parses;
mod schema;
mod state;
pub(crate) mod watch;
use crate::index::docs::*;
pub(crate) use backed::unbacked;
pub use handle::SqliteIndex;
pub(crate) use pool::*;
pub(crate) use rank::*;
pub(crate) use scan::*;
use state::IndexState;

/// The SQLite index at work for one call: the files it indexes (it derefs
/// to their [`Store`]) and its own state, which nothing outside this
/// folder sees.
#[derive(Clone, Copy)]
pub(crate) struct Ix<'a> {
    store: &'a Store,
    pub(crate) index_state: &'a IndexState,
}

impl<'a> Ix<'a> {
    pub(crate) fn new(store: &'a Store, index_state: &'a IndexState) -> Ix<'a> {
        Ix { store, index_state }
    }
    /// How long a long-running process trusts its last sync.
    pub(crate) fn index_sync_interval(&self) -> std::time::Duration {
        self.index_state.options().sync_interval
    }
    /// Whether a live watcher's word may replace the file scan.
    pub(crate) fn trusts_watcher(&self) -> bool {
        self.index_state.options().trust_watcher
    }
    /// Who catches the vectors up with outside changes.
    pub(crate) fn index_upkeep(&self) -> crate::index::IndexUpkeep {
        self.index_state.options().upkeep
    }
    /// The keeper's view of this call (the embedding schedule's).
    pub(crate) fn keep(&self) -> crate::index::keeper::Keep<'a> {
        crate::index::keeper::Keep::new(self.store, &self.index_state.keeper, self.index_state)
    }
}

impl std::ops::Deref for Ix<'_> {
    type Target = Store;
    fn deref(&self) -> &Store {
        self.store
    }
}

/// Bump when the schema or what is indexed changes; a mismatch rebuilds.
pub const SCHEMA_VERSION: &str = "10";

/// How long to wait for another process's lock on state.db before answering
/// from the files instead (search falls back to the substring backend).
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// A file's signature and inode change time, and its content sha256.
type Hashed = ((Sig, i64), String);

/// `state.db`'s and its `-wal`'s size, modification and inode change time
/// (`None`: no such file).
type FilesSig = (Option<(i64, i64, i64)>, Option<(i64, i64, i64)>);

/// Files a connection remembers it hashed, and hits it remembers
/// matched their files, at most (then it starts again): a connection lives
/// as long as the server, and a search touches a hundred hits at most.
pub(crate) const KEPT_PER_CONNECTION: usize = 10_000;

/// One open connection to `state.db`.
pub struct Index {
    pub(crate) conn: Connection,
    /// FTS rows the running [`Index::write_docs`] changed.
    touched: std::cell::RefCell<postings::TouchedRows>,
    /// The sha256 of files [`Index::unaudited`] hashed, by path, with the
    /// signature they had (with the inode change time, which no one can set
    /// back as `touch -r` sets a modification time): a file is read again
    /// only when it changed.
    hashed: std::cell::RefCell<HashMap<PathBuf, Hashed>>,
    /// What each file a hit came from derives, by (kind, id), with the
    /// signature it had ([`backed`]): a hit's row is checked against it.
    backed: std::cell::RefCell<HashMap<(String, String), backed::Derived>>,
    /// Its tables were made empty ([`Index::reset_schema`]), at this
    /// `data_version`, and not yet filled by a whole sync.
    from_empty: std::cell::Cell<Option<i64>>,
    /// When a sync filled it from empty on this connection: the database's
    /// `data_version` and its files' signatures then. While neither moved,
    /// the index is what a rebuild from the files would make
    /// ([`Index::as_built_here`]).
    built_here: std::cell::Cell<Option<(i64, FilesSig)>>,
}

impl Index {
    pub(crate) fn new(conn: Connection) -> Index {
        Index {
            conn,
            touched: Default::default(),
            hashed: Default::default(),
            backed: Default::default(),
            from_empty: Default::default(),
            built_here: Default::default(),
        }
    }

    /// `PRAGMA data_version`: moves when another connection commits.
    fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// After a whole sync: one that filled the index from empty makes it
    /// as built here.
    fn note_synced(&self) -> Result<()> {
        // Only when no other connection committed since the tables were
        // made empty: a foreign row written between would not be the
        // files'.
        if let Some(at_reset) = self.from_empty.take()
            && at_reset == self.data_version()?
        {
            self.built_here.set(Some((at_reset, self.files_sig())));
        }
        Ok(())
    }

    /// A whole sync's result, noted: a sync that failed leaves the index
    /// neither empty nor built here (a later catch-up never makes it so).
    fn synced(&self, r: Result<SyncStats>) -> Result<SyncStats> {
        match r {
            Ok(stats) => {
                self.note_synced()?;
                Ok(stats)
            }
            Err(e) => {
                self.from_empty.set(None);
                Err(e)
            }
        }
    }

    /// The signatures of `state.db` and its `-wal`: size, modification and
    /// inode change time. A write by anything — this connection, another,
    /// or bytes patched without SQLite, which `data_version` never sees —
    /// changes them, and no one can set an inode change time back.
    fn files_sig(&self) -> FilesSig {
        let sig = |path: &Path| {
            std::fs::symlink_metadata(path)
                .ok()
                .map(|m| (mtime_ns(&m), m.len() as i64, changed_ns(path)))
        };
        let db = self.conn.path().map(PathBuf::from);
        match db {
            Some(db) => {
                let wal = PathBuf::from(format!("{}-wal", db.display()));
                (sig(&db), sig(&wal))
            }
            None => (None, None),
        }
    }

    /// Whether this connection filled the index from the files and
    /// nothing has written it since — no commit of another connection, no
    /// byte of its files changed (not even by this connection): then it is
    /// what a rebuild would make, and a rebuild only catches up. (What it
    /// cannot see: bytes patched without SQLite within the same tick of
    /// the file system's clock as this connection's last write, which keep
    /// the file's times. Such rows are still never served — every hit is
    /// checked against its file and its log line — and `doctor` names
    /// them; a rebuild by any other process rebuilds.)
    pub(crate) fn as_built_here(&self) -> Result<bool> {
        let Some((version, files)) = self.built_here.get() else {
            return Ok(false);
        };
        Ok(files.0.is_some() && version == self.data_version()? && files == self.files_sig())
    }

    /// How many documents the index holds.
    pub(crate) fn documents(&self) -> Result<usize> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM docs", [], |r| r.get::<_, i64>(0))?
            as usize)
    }

    /// What the file at `inside` (a path inside `.vouch/`) hashes to as
    /// an event records it; `None` for a file that is gone or unreadable
    /// (not "edited").
    fn file_sha(&self, kb: &Ix, inside: &str) -> Option<String> {
        let path = kb.layout().root().join(inside);
        let sig = (file_signature(&path)?, changed_ns(&path));
        let mut hashed = self.hashed.borrow_mut();
        if let Some((seen, have)) = hashed.get(&path)
            && *seen == sig
        {
            return Some(have.clone());
        }
        let bytes = kb.read_file(&path).ok()??;
        let have = crate::ids::content_sha256(&bytes);
        if !backed::racy(sig) {
            if hashed.len() >= KEPT_PER_CONNECTION {
                hashed.clear();
            }
            hashed.insert(path, (sig, have.clone()));
        }
        Some(have)
    }
}

/// When the file's inode last changed, in nanoseconds (0 where the
/// platform does not say).
fn changed_ns(path: &Path) -> i64 {
    std::fs::symlink_metadata(path)
        .map(|m| crate::store::changed_ns(&m))
        .unwrap_or(0)
}

fn file_of(kb: &Ix, kind: &str, id: &str) -> Result<PathBuf> {
    doc_file(kb, kind, id)
}

pub(crate) use crate::store::file_identity;

/// Read a document from its file; `None` if gone or unreadable (warned).
fn load_doc(kb: &Ix, kind: &str, id: &str) -> Option<Doc> {
    load_doc_signed(kb, kind, id).map(|(doc, _)| doc)
}

/// [`load_doc`], with the signature of the file it read, taken from the
/// open file (no second look at the name).
fn load_doc_signed(kb: &Ix, kind: &str, id: &str) -> Option<(Doc, Sig)> {
    read_doc(kb, kind, id).unwrap_or_else(|e| {
        kb.warn(format!("index: skipped unreadable file: {e}"));
        None
    })
}

/// Open `state.db` without following a link. A link there (a cloned
/// repository's way to make vouch drop another program's tables) is removed
/// — the file is derived — with a warning, and never opened through.
fn open_db(kb: &Ix, path: &Path, flags: rusqlite::OpenFlags) -> rusqlite::Result<Connection> {
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
    fn open_path(kb: &Ix) -> Result<Index> {
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

    fn try_open(kb: &Ix, path: &Path) -> Result<Index> {
        let conn = open_db(kb, path, rusqlite::OpenFlags::default())?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let want = schema_tag(kb);
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);",
        )?;
        // Vectors outlive a schema change of the FTS tables: they are
        // keyed by content and model, not by how the text is indexed.
        engine::move_vectors_out_of_without_rowid(&conn)?;
        conn.execute_batch(engine::SCHEMA)?;
        // ...but only an index this installation built is trusted: a
        // state.db that arrived with a clone (force-added past .gitignore)
        // or a copy could hold documents no file has, vectors for any text
        // and an `admitted` table that hides the unaudited mark. Its file
        // identity says where it was made; another file's whole index is
        // dropped and rebuilt from the files before anything is served.
        let here = file_identity(path);
        // Under the write lock: two processes opening the same foreign file
        // must not both reset it (the second would wipe what the first
        // rebuilt).
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let made: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='vectors_file'", [], |r| {
                r.get(0)
            })
            .optional()?;
        let mut have: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
                r.get(0)
            })
            .optional()?;
        // A file this installation built before identities held the birth
        // time: the same device and inode, so the same file; its identity
        // is brought up to date, nothing dropped.
        let same_before = match (&made, &here) {
            (Some(m), Some(h)) => {
                !m.contains('@') && h.contains('@') && h.split('@').next() == Some(m.as_str())
            }
            _ => false,
        };
        if same_before && let Some(here) = &here {
            conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('vectors_file', ?1)",
                [here],
            )?;
        } else if made != here {
            if have.is_some() {
                kb.warn(format!(
                    "index: {} was not built here (it came with a clone or a copy); \
                     rebuilding it from the files before serving anything",
                    path.display()
                ));
            }
            conn.execute("DELETE FROM embeddings", [])?;
            // Forget the schema too: the tables are made afresh below.
            conn.execute("DELETE FROM meta", [])?;
            have = None;
            if let Some(here) = &here {
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES('vectors_file', ?1)",
                    [here],
                )?;
            }
        }
        let stamped: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='vectors_copy'", [], |r| {
                r.get(0)
            })
            .optional()?;
        if stamped.is_none() {
            engine::new_copy_stamp(&conn)?;
        }
        conn.execute_batch("COMMIT")?;
        let index = Index::new(conn);
        // The tables themselves, as a hand may have made them again (a
        // `docs` without `UNIQUE(kind, id)` holds a second row for an
        // approved claim's id): other tables than this version makes are
        // made afresh.
        if have.as_deref() == Some(want.as_str())
            && let Some(odd) = schema::tampered(&index.conn, tokenizer(kb))?
        {
            kb.warn(format!(
                "index: {}'s tables are not the ones vouch made ({odd}); rebuilding the \
                 derived index from the files",
                path.display()
            ));
            have = None;
        }
        if have.as_deref() != Some(want.as_str()) {
            // Checked again under the write lock: two processes opening a
            // new file at once must not both make the tables.
            index.write(|| {
                let had = index.meta_value("schema")?;
                let odd = had.as_deref() == Some(want.as_str())
                    && schema::tampered(&index.conn, tokenizer(kb))?.is_some();
                if had.as_deref() != Some(want.as_str()) || odd {
                    // Every vector's signature goes with the tables: each
                    // is looked at again by its text (reused where the
                    // text embedded is the same — before version 8 a
                    // claim's tags were embedded with it).
                    index.reset_schema(kb)?;
                }
                Ok(())
            })?;
        }
        Ok(index)
    }

    /// Empty the index: its tables made afresh for this version and these
    /// settings, every recorded scan and the audit offset forgotten (the
    /// vectors and the file's identity stay).
    pub(crate) fn reset_schema(&self, kb: &Ix) -> Result<()> {
        self.from_empty.set(Some(self.data_version()?));
        self.built_here.set(None);
        // Whatever a hand added (a trigger, a view) goes too: vouch makes
        // none ([`schema`]).
        let extra: Vec<(String, String)> = self
            .conn
            .prepare(schema::EXTRA)?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (kind, name) in extra {
            let name = name.replace('"', "\"\"");
            let kind = if kind == "view" { "VIEW" } else { "TRIGGER" };
            self.conn
                .execute_batch(&format!("DROP {kind} IF EXISTS \"{name}\";"))?;
        }
        for table in schema::OWN {
            self.conn
                .execute_batch(&format!("DROP TABLE IF EXISTS {table};"))?;
        }
        self.conn.execute_batch(&format!(
            "DELETE FROM meta WHERE key NOT IN ('vectors_file', 'vectors_copy'); {}",
            schema::tables(tokenizer(kb))
        ))?;
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES('schema', ?1)",
            [&schema_tag(kb)],
        )?;
        // The vectors' signatures went with `vector_sigs`: a copy of the
        // vectors made before must not say they are current.
        engine::new_copy_stamp(&self.conn)?;
        postings::fresh_generation(&self.conn)
    }

    /// Run `f` in one write transaction: committed if it succeeds, rolled
    /// back if it fails.
    pub(crate) fn write<R>(&self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        // An index built here stays so through this connection's own
        // writes (its files' signatures followed), never through one that
        // finds them changed by something else first.
        // (Inside the transaction: no other commit lands between. A check
        // that fails counts as someone else's write, never as an error
        // that would leave the transaction open.)
        let ours = self
            .built_here
            .get()
            .map(|_| self.as_built_here().unwrap_or(false));
        let done = f().and_then(|r| {
            self.conn.execute_batch("COMMIT")?;
            Ok(r)
        });
        if done.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        match (ours, self.data_version()) {
            (Some(true), Ok(version)) => self.built_here.set(Some((version, self.files_sig()))),
            (Some(_), _) => self.built_here.set(None),
            (None, _) => {}
        }
        done
    }

    /// [`Index::write`] for a change to the documents: counts a generation
    /// in the same transaction and, once committed, patches this process's
    /// postings ([`postings`]) with the rows it touched.
    pub(crate) fn write_docs<R>(&self, kb: &Ix, f: impl FnOnce() -> Result<R>) -> Result<R> {
        *self.touched.borrow_mut() = Default::default();
        let mut generations = (0, 0);
        let r = self.write(|| {
            let r = f()?;
            if !self.touched.borrow().is_empty() {
                generations = self.bump_generation()?;
            }
            Ok(r)
        });
        let touched = std::mem::take(&mut *self.touched.borrow_mut());
        let r = r?;
        if !touched.is_empty() {
            postings::after_commit(kb, generations, &touched);
        }
        Ok(r)
    }

    /// Remove a document's row and text, if indexed: its rowid and the
    /// signature it was indexed at.
    fn remove_row(&self, kind: &str, id: &str) -> Result<Option<(i64, Sig)>> {
        let old: Option<(i64, Sig)> = self
            .conn
            .prepare_cached("SELECT rowid, mtime_ns, size FROM docs WHERE kind=?1 AND id=?2")?
            .query_row(params![kind, id], |r| {
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
        Ok(old)
    }

    /// Insert or replace a document; returns the signature it replaced.
    /// The row id is derived from (kind, id), so an index kept up to date
    /// one write at a time and one rebuilt from scratch number every
    /// document alike — and break score ties alike.
    fn upsert(&self, doc: &Doc, sig: Sig) -> Result<Option<Sig>> {
        self.put(doc, sig, false)
    }

    /// [`Index::upsert`]; `absent` when the caller knows, inside this
    /// write's transaction, that no row of the document's kind exists yet
    /// (a rebuild, a first sync): the lookup that would find none is
    /// skipped. `UNIQUE(kind, id)` still refuses a second row.
    fn put(&self, doc: &Doc, sig: Sig, absent: bool) -> Result<Option<Sig>> {
        let old = match absent {
            true => None,
            false => self.remove_row(doc.kind, &doc.id)?,
        };
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
        if let Some((old_rowid, _)) = old
            && old_rowid != rowid
        {
            self.touched.borrow_mut().push(old_rowid, || None);
        }
        if doc.kind != "relation" {
            self.conn
                .prepare_cached("INSERT INTO fts(rowid, title, body) VALUES(?1, ?2, ?3)")?
                .execute(params![rowid, doc.title, doc.body])?;
            self.touched.borrow_mut().push(rowid, || {
                let class = crate::index::bm25::class_of(doc.kind, doc.status.as_deref());
                Some((class, doc.title.clone(), doc.body.clone()))
            });
        }
        Ok(old.map(|(_, sig)| sig))
    }

    /// Whether the index holds `doc` exactly so, at `sig`: the same
    /// signature, status, confidence, title and text.
    fn holds(&self, doc: &Doc, sig: Sig) -> Result<bool> {
        /// A row as `holds` compares it: rowid, status, confidence, signature.
        type Held = (i64, Option<String>, Option<f64>, i64, i64);
        let row: Option<Held> = self
            .conn
            .prepare_cached(
                "SELECT rowid, status, confidence, mtime_ns, size FROM docs WHERE kind=?1 AND id=?2",
            )?
            .query_row(params![doc.kind, doc.id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((rowid, status, confidence, mtime, size)) = row else {
            return Ok(false);
        };
        if (mtime, size) != sig || status != doc.status || confidence != doc.confidence {
            return Ok(false);
        }
        if doc.kind == "relation" {
            return Ok(true);
        }
        Ok(self
            .title_and_body(rowid)?
            .is_some_and(|(title, body)| title == doc.title && body == doc.body))
    }

    /// Drop a document; returns the signature it had.
    fn delete(&self, kind: &str, id: &str) -> Result<Option<Sig>> {
        let old = self.remove_row(kind, id)?;
        if let Some((rowid, _)) = old {
            self.touched.borrow_mut().push(rowid, || None);
        }
        Ok(old.map(|(_, sig)| sig))
    }

    /// The indexed text of a document (title, then body).
    /// A document's text (when `with_text`; else empty) and confidence, in
    /// two lookups by key (joined, SQLite would scan the FTS table); `None`
    /// when the index has no such document.
    pub(crate) fn text_and_confidence(
        &self,
        kind: &str,
        id: &str,
        with_text: bool,
    ) -> Result<Option<(String, Option<f64>)>> {
        let Some((rowid, confidence)) = self.rowid_and_confidence(kind, id)? else {
            return Ok(None);
        };
        if !with_text {
            return Ok(Some((String::new(), confidence)));
        }
        Ok(self
            .title_and_body(rowid)?
            .map(|(title, body)| (full_text(title, body), confidence)))
    }

    fn rowid_and_confidence(&self, kind: &str, id: &str) -> Result<Option<(i64, Option<f64>)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT rowid, confidence FROM docs WHERE kind = ?1 AND id = ?2")?
            .query_row(params![kind, id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, Option<f64>>(1)?))
            })
            .optional()?)
    }

    fn title_and_body(&self, rowid: i64) -> Result<Option<(String, String)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT title, body FROM fts WHERE rowid = ?1")?
            .query_row([rowid], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .optional()?)
    }

    fn meta_value(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT value FROM meta WHERE key=?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    }
}

fn tokenizer(kb: &Ix) -> &'static str {
    if kb.settings().retrieval.fts5_porter {
        "porter unicode61 remove_diacritics 2"
    } else {
        "unicode61 remove_diacritics 2"
    }
}

/// What `meta.schema` records: schema version and tokenizer.
fn schema_tag(kb: &Ix) -> String {
    format!("{SCHEMA_VERSION};{}", tokenizer(kb))
}
