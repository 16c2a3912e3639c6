//! The narrow traits an index engine implements, each a handful of
//! methods with its read side apart from its write side (jj's
//! `IndexStore`/`Backend` split): the keeper's code ([`super::keeper`],
//! the embedding schedule) is written once against them, and an engine —
//! SQLite's `state.db` today, a team server's PostgreSQL next — is one
//! folder implementing them plus a factory line.
//!
//! - [`DocRead`]: the documents the index holds, as the keeper and the
//!   vectors ask for them.
//! - [`VectorRead`] / [`VectorWrite`]: the stored vectors of a model,
//!   keyed by document and chunk, with each text's hash for reuse.
//! - [`MainConn`]: the one connection the schedule writes through.
//! - [`WatchTarget`]: what the keeper's watcher has the engine apply.
//! - [`DocWrite`]: the documents and their words, as an engine that keeps
//!   them itself (a team's PostgreSQL) is told of them.
//! - [`Tables`]: all an engine keeping the whole index in tables of its
//!   own implements; the keeper's [`super::kept::KeptIndex`] does the rest.
//!
//! A lexical engine answers [`super::DerivedIndex::lexical`]; what it is
//! told of changed documents comes through the same write hook
//! ([`super::DerivedIndex::written`]).

use crate::error::Result;
use crate::index::docs::Doc;

/// A file's signature as the index recorded it: modification time (ns)
/// and size.
pub type Sig = (i64, i64);

/// A document's key: kind (`claim`, `page`, `entity`, `source`) and id.
pub type DocKey = (&'static str, String);

/// One document that may have vectors (relations never do), as the index
/// holds it now (borrowed from the engine for one call).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Listed<'a> {
    /// Its kind and id.
    pub key: (&'static str, &'a str),
    /// Its status (claims and pages), which a search by meaning filters on.
    pub status: Option<&'a str>,
    /// The signature of the file it was read from.
    pub sig: Sig,
}

/// The documents the index holds (read side).
pub trait DocRead {
    /// How many documents that may have vectors it holds.
    fn vector_documents(&self) -> Result<usize>;
    /// Those documents, each handed to `each`: every one (`None`), or just
    /// these keys (kind, id), those the index no longer holds left out.
    /// Nothing is copied for a document `each` does not keep (a million
    /// of them are checked at a first load).
    fn each_listed(
        &self,
        keys: Option<&[(String, String)]>,
        each: &mut dyn FnMut(Listed<'_>),
    ) -> Result<()>;
    /// The text a model embeds for one document; `None` when not held.
    fn embedded_text(&self, kind: &str, id: &str) -> Result<Option<String>>;
}

/// One stored vector row: its document, the signature it was made at,
/// and the vector.
pub type StoredVector = (DocKey, Sig, Vec<f32>);

/// The stored vectors (read side).
pub trait VectorRead {
    /// The stored vectors of `model` (of `dim` dimensions) of the
    /// documents after `after` in key order, chunk by chunk, handed to
    /// `each` one at a time (a million documents' f32 vectors are
    /// gigabytes, never held at once): at least the number given of them, then
    /// the rest of the last document's. The last document's key, or
    /// `None` when there are no more.
    fn vectors_of(
        &self,
        model: &str,
        dim: usize,
        slice: (Option<&DocKey>, usize),
        each: &mut dyn FnMut(StoredVector),
    ) -> Result<Option<DocKey>>;
    /// Stored vectors of a text (by its sha256) under `model`: `key`'s own
    /// first, else any document's with the same text.
    fn reusable(
        &self,
        model: &str,
        dim: usize,
        sha: &str,
        key: &DocKey,
    ) -> Result<Option<Vec<Vec<f32>>>>;
    /// What a copy of these vectors kept outside the engine is stamped
    /// with ([`crate::index::memory`]'s copy beside the index): the same
    /// for as long as this store is the one the copy was made from
    /// (vectors stored or dropped since are told by signature), another
    /// once the store is replaced or its vectors rewritten wholesale.
    /// `None`: no copy may be used.
    fn copy_stamp(&self) -> Result<Option<String>>;
}

/// The stored vectors (write side), each call its own transaction or
/// inside [`VectorWrite::in_one_write`].
pub trait VectorWrite: VectorRead {
    /// Drop the vectors of every model but `model` (they are never
    /// compared with its own).
    fn keep_only(&self, model: &str) -> Result<()>;
    /// Drop the vectors of documents the index no longer holds.
    fn prune(&self) -> Result<()>;
    /// Store one document's vectors (one a chunk) in place of what it had.
    fn put(
        &self,
        model: &str,
        key: &DocKey,
        sig: Sig,
        sha: &str,
        chunks: &[Vec<f32>],
    ) -> Result<()>;
    /// Run `f` (several `put`s) in one transaction.
    fn in_one_write(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()>;
}

/// What the embedding schedule writes through: the documents and the
/// vectors on one connection.
pub trait EngineConn: DocRead + VectorWrite {}
impl<T: DocRead + VectorWrite> EngineConn for T {}

/// The engine's main connection, as the keeper's schedule borrows it: `f`
/// runs on the index as the keeper last made it current (never syncing).
pub trait MainConn {
    /// Run `f` on the main connection; an error when the index was never
    /// made current in this process.
    fn with_main(&self, f: &mut dyn FnMut(&dyn EngineConn) -> Result<()>) -> Result<()>;
}

/// What the keeper's watcher asks of the engine it keeps in step: the
/// watcher hears of changes; the engine applies them.
pub trait WatchTarget: Send + Sync {
    /// Whether the next batch must be a full pass: the index was (re)opened
    /// just now, or does not carry this watcher's `token`.
    fn needs_full(&self, store: &crate::stored::Store, token: &str) -> Result<bool>;
    /// Apply one batch: with `full`, every file stat-ed and the index
    /// stamped with `token`; the files the kernel named re-read; then what
    /// the audit log appended. The index is current when it returns.
    fn apply_watched(
        &self,
        store: &crate::stored::Store,
        full: bool,
        changed: Vec<(&'static str, String)>,
        token: &str,
    ) -> Result<()>;
}

/// The documents and their words (write side): each document as read
/// from its file, at that file's signature. All of a call or none of it.
pub trait DocWrite {
    /// Hold each of `docs` in place of what its key (kind, id) held.
    fn put_docs(&self, docs: &[(Doc, Sig)]) -> Result<()>;
    /// Drop the documents of these keys (kind, id); how many were held.
    fn remove_docs(&self, keys: &[(&str, &str)]) -> Result<usize>;
    /// Every document of `kind` held, with the signature of the file it
    /// was read from: what a freshness scan compares the files with.
    fn signatures(&self, kind: &str) -> Result<Vec<(String, Sig)>>;
}

/// An engine that keeps the whole index in tables of its own (a team's
/// PostgreSQL, shared by replicas): the documents, their words, the
/// vectors, the admission rows and a few values. Only storage: the
/// keeper's [`crate::index::kept::KeptIndex`] scans the files, reads the
/// audit log, schedules the embedding and watches, whatever the engine.
pub trait Tables:
    EngineConn + DocWrite + WordsFeed + crate::index::admission::AdmissionStore + Send + Sync
{
    /// The value stored under `key` (`scan:<kind>`, `audit:…`).
    fn value(&self, key: &str) -> Result<Option<String>>;
    /// Store each value (`None`: drop it), all in one transaction.
    fn set_values(&self, values: &[(String, Option<String>)]) -> Result<()>;
    /// The best hits for the query's words, best first, as the embedded
    /// index chooses them: every word (but stop words) first, then any
    /// of them to fill ([`crate::index::required_words`]); of the kinds
    /// and statuses asked, never a redacted claim.
    fn words(&self, q: &crate::index::Query) -> Result<Vec<crate::index::SearchHit>>;
    /// Each document's text (where its flag asks) and confidence; a
    /// document not held gets empty text.
    fn texts_and_confidence(
        &self,
        keys: &[(crate::model::DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>>;
    /// How many documents are held.
    fn held(&self) -> Result<usize>;
    /// Forget what was read (a rebuild): every document's signature, the
    /// scans, how far the audit log was read, the vectors' signatures —
    /// while what is held stays served, until the next catch-up has read
    /// every file again (and the log from its start), each document's
    /// vectors looked at again by its text.
    fn forget(&self) -> Result<()>;
    /// Run `f` while no other process sharing the tables runs it: the
    /// catch-ups of replicas take turns instead of each reading the same
    /// files. Without `wait`, `f` is not run while another process is at
    /// it (false): what it finds, it puts for every process.
    fn one_at_a_time(&self, wait: bool, f: &mut dyn FnMut() -> Result<()>) -> Result<bool>;
}

/// One document's words as the engine made them, for postings kept in a
/// server's memory ([`crate::index::kept::KeptIndex`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DocWords {
    /// A number the engine gives the document's words, new (and higher)
    /// whenever they or its status change.
    pub rowid: i64,
    /// Its kind and status (what a search filters on).
    pub kind: String,
    /// Its status (claims and pages).
    pub status: Option<String>,
    /// Each of its tokens, with how often its title and its body hold it.
    pub tokens: Vec<(String, u32, u32)>,
}

/// The engine's words, fed to postings a server keeps in memory (ranked
/// there by FTS5's bm25 formula, at a cost that grows with the hits asked
/// for): what it holds after a point, what went since, and the hits of
/// chosen rows. Rows are numbered in the order they were committed, so
/// "after the last one read" misses none.
pub trait WordsFeed {
    /// The words of the documents after `rowid`, in rowid order, at most
    /// `at_most` of them, handed to `each`.
    fn words_after(&self, rowid: i64, at_most: usize, each: &mut dyn FnMut(DocWords))
    -> Result<()>;
    /// The rowids that went (their document removed, or made anew under a
    /// new rowid) after the point `seq` of that feed; and the feed's last
    /// point. `None` when the feed no longer holds every point after
    /// `seq` (old ones are let go): the postings are read again.
    fn gone_after(&self, seq: i64) -> Result<Option<(Vec<i64>, i64)>>;
    /// What changes whenever every rowid is made anew (the words made
    /// another way): postings read before are read again from the start.
    fn words_epoch(&self) -> Result<String>;
    /// Each query word as the engine's token; `None` for a word that makes
    /// none.
    fn tokens_of(&self, words: &[&String]) -> Result<Vec<Option<String>>>;
    /// The hits of these rows (kind, id, status, confidence; with a
    /// snippet marking `q`'s words where it asks), by rowid; a row no
    /// longer held is left out. Scores are the caller's.
    fn hits_of(
        &self,
        rowids: &[i64],
        q: &crate::index::Query,
    ) -> Result<Vec<(i64, crate::index::SearchHit)>>;
}
