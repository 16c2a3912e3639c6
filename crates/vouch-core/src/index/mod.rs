//! The derived index: what serves reads from the files under `.vouch/`
//! without being knowledge itself (it can always be rebuilt from them).
//! [`DerivedIndex`] is the seam: the SQLite index ([`sqlite`]: FTS5,
//! postings and vectors in `state.db`) is its one implementation, chosen
//! in one line of `Kb::open`; another (a team server's PostgreSQL) is one
//! more folder beside it. Everything a caller of the index sees is defined
//! here, below `Kb`, so `Kb` holds the index without importing it.

pub mod admission;
pub(crate) mod bm25;
pub mod docs;
pub mod engine;
pub mod keeper;
pub mod kept;
pub mod memory;
pub(crate) mod rows;
pub mod sqlite;
pub(crate) mod vector_docs;

use crate::error::{Error, Result};
use crate::model::meta::ReadMeta;
use crate::model::{DocKind, Written};
use crate::services::Embedder;
use crate::stored::Store;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a derived index is asked: kept up to date by writers and by the
/// index keeper's explicit steps ([`keeper`]), and read by retrievers,
/// context packs and answers. Reads never write: no read method syncs,
/// embeds or changes `state.db`.
///
/// Narrow traits by job, each a handful of methods: [`Configured`],
/// [`WriteHook`], [`Upkeep`], [`LexicalIndex`], [`VectorIndex`],
/// [`IndexChecks`]. An engine implements each; `Kb` holds the whole.
pub trait DerivedIndex:
    Configured + WriteHook + Upkeep + LexicalIndex + VectorIndex + IndexChecks + Send + Sync
{
    /// The implementation itself, for benchmarks that measure its parts.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// How one process keeps its index, and whether it made it current.
pub trait Configured {
    /// How this process keeps the index (see [`IndexOptions`]).
    fn configure(&self, options: IndexOptions);
    /// How this process keeps the index now (what `configure` set).
    fn options(&self) -> IndexOptions;

    /// Whether this process has the index open already.
    fn is_open(&self) -> bool;
    /// When the keeper last made the index current in this process
    /// (`None`: never).
    fn caught_up_at(&self) -> Option<Instant>;
}

/// What a write through vouch tells the index (read-your-writes).
pub trait WriteHook {
    /// Objects just written through vouch, under the KB lock: the index
    /// takes them at once (read-your-writes).
    fn written(&self, store: &Store, written: &[Written]);
    /// After a write returned (its lock released): embed what it wrote,
    /// where vectors are held in memory, so the next search by meaning
    /// finds it without running the model on documents.
    fn embed_written(&self, store: &Store, embedder: &Arc<dyn Embedder>);
    /// After a write returned (its lock released), before its caller
    /// hears: what the index keeps in memory takes what was written
    /// (read-your-writes, without holding every other writer back).
    fn write_returned(&self, _store: &Store) {}
}

/// The keeper's calls into the engine: catching up, rebuilding, embedding, watching.
pub trait Upkeep {
    /// The keeper's explicit step: catch up with the files and the audit
    /// log (changes made outside this process), opening or building the
    /// index if needed. Reads never do it ([`keeper`]).
    fn catch_up(&self, store: &Store) -> Result<SyncStats>;
    /// A server's first step: open what an earlier run built here (schema
    /// current, documents in it), so a read that waited a second for the
    /// first catch-up answers from it — saying the index is still
    /// catching up.
    /// False when there is nothing such (the first catch-up builds it).
    fn open_built(&self, store: &Store) -> Result<bool>;
    /// Read again what the index keeps in memory (postings) when another
    /// process changed it; a background step's round, never a request's.
    fn refresh_postings(&self, store: &Store) -> Result<()>;
    /// Build it again from the files.
    fn rebuild(&self, store: &Store) -> Result<RebuildResult>;
    /// Bring the vectors in step within `budget` (`wait`: behind another
    /// thread doing it); `None` when another thread was and `wait` is false.
    fn embed(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Budget,
        wait: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<EmbedStats>>;
    /// For the background step between rounds: returns after `at_most`, or
    /// as soon as a search asks for documents to be embedded.
    fn wait_for_upkeep(&self, at_most: Duration);
    /// Keep the index in step with every change as it happens, on a thread
    /// of its own (see `sqlite::watch`).
    fn start_watching(&self, store: Arc<Store>) -> Result<Watching>;
    /// Who keeps the index in step for other processes, if anyone.
    fn watcher(&self, store: &Store) -> Option<Watcher>;
    /// Another process wrote where this one's watcher cannot see it (a
    /// team server's replica on another host, heard through the team
    /// database): the keeper's next round catches up with the files even
    /// while a watcher runs, and starts now.
    fn changed_elsewhere(&self);
    /// Whether [`Upkeep::changed_elsewhere`] was called since the keeper
    /// last asked (asking clears it).
    fn take_changed_elsewhere(&self) -> bool;
}

/// Reading by words: ranked hits, and the texts and confidence a ranking weighs.
pub trait LexicalIndex {
    /// Ranked hits for the query's words (BM25), best first.
    fn lexical(&self, store: &Store, q: &Query) -> Result<Vec<SearchHit>>;
    /// Each document's text (where its flag asks) and confidence, in one
    /// trip; a document the index does not have gets empty text.
    fn texts_and_confidence(
        &self,
        store: &Store,
        keys: &[(DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>>;
}

/// Reading by meaning: the vectors as the keeper made them.
pub trait VectorIndex {
    /// Before a read by meaning: the vectors loaded (never embedding:
    /// where a background step keeps them, it is asked for a round and
    /// waited for within `budget`). Answers how many documents still have
    /// no vector.
    fn vectors_for_read(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Duration,
    ) -> Result<usize>;
    /// Documents with vectors of `embedder`'s model, and documents still
    /// without (embedding nothing: for `kb.status`).
    fn vector_counts(&self, store: &Store, embedder: &Arc<dyn Embedder>) -> Result<(usize, usize)>;
    /// The `want` documents nearest `query` by cosine, best first (empty
    /// until vectors are loaded; an error only when the vectors' file
    /// cannot be read).
    fn nearest(
        &self,
        query: &[f32],
        kinds: &[DocKind],
        currency: Currency,
        want: usize,
    ) -> Result<Vec<Near>>;
    /// The cosine of one document's best chunk with `query`, if embedded.
    fn similarity(&self, kind: DocKind, id: &str, query: &[f32]) -> Result<Option<f32>>;
    /// The sha256 of every text the documents give a model to embed, as
    /// the index holds them (what a team's shared vectors must keep).
    fn text_shas(&self, store: &Store) -> Result<HashSet<String>>;
}

/// What the index can tell of its own trust: how far it is from the files, rows no file backs, objects no audit event admitted.
pub trait IndexChecks {
    /// How far the index is from the files, without changing it; `None`
    /// when there is none yet.
    fn freshness(&self, store: &Store) -> Result<Option<Freshness>>;
    /// Which of these hits their files do not back: no file holds the
    /// document, or its file derives other text, status or confidence than
    /// the index holds (a row planted in `state.db`). Such a hit is never
    /// served. An index that serves only what it reads from the files
    /// answers none.
    fn unbacked(
        &self,
        _store: &Store,
        _hits: &[(DocKind, &str)],
    ) -> Result<HashSet<(DocKind, String)>> {
        Ok(HashSet::new())
    }
    /// Every document the index holds that its file does not back, as
    /// (kind, id, why), for `doctor`.
    fn stray_rows(&self, _store: &Store) -> Result<Vec<(String, String, String)>> {
        Ok(Vec::new())
    }
    /// Which of these objects (folder and id) no approval or import in the
    /// audit log let in, or whose file is not what the last event that
    /// wrote it recorded. Where the index cannot tell (the log was cut, or
    /// much of it is not read yet), none is marked — or, when `strict`
    /// (a refusal rests on the answer), it says so with an error.
    fn unaudited(
        &self,
        store: &Store,
        objects: &[(crate::store::Dir, &str)],
        strict: bool,
    ) -> Result<HashSet<(crate::store::Dir, String)>>;
}
/// How long a search may spend embedding what is new before it answers
/// with what is embedded (the rest is named in a warning).
pub const SEARCH_BUDGET: Duration = Duration::from_secs(2);

/// Words too common to narrow an any-word (OR) query: scoring them means
/// scoring most of the KB for almost no change in rank.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does",
    "for", "from", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "of", "on",
    "or", "so", "that", "the", "their", "then", "there", "this", "to", "was", "we", "what", "when",
    "where", "which", "who", "why", "will", "with", "you",
];

/// The words every hit of a search by words must hold first: the query's
/// words but stop words (they are in most documents, so requiring them
/// narrows nothing and reading their postings costs the most), or all of
/// them when each is a stop word. When these find too few, any of the
/// same words fills the rest. Every engine searches this way.
pub fn required_words(terms: &[String]) -> Vec<&String> {
    let narrowing: Vec<&String> = terms
        .iter()
        .filter(|t| !STOP_WORDS.contains(&t.as_str()))
        .collect();
    if narrowing.is_empty() {
        terms.iter().collect()
    } else {
        narrowing
    }
}

/// A word in at least this many documents is "common": it joins the any-word
/// fill only when no rarer word is there to narrow it.
pub(crate) const COMMON_DF: usize = 2000;

/// A document found by meaning: kind, id, status, cosine.
pub type Near = (DocKind, String, Option<String>, f32);

/// How one process keeps its derived index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexOptions {
    /// How long a long-running process trusts its last sync before
    /// stat-ing the files again (zero: every search re-checks).
    pub sync_interval: Duration,
    /// A one-shot command: a live watcher's word may replace the scan.
    pub trust_watcher: bool,
    /// Who catches the index up with outside changes.
    pub upkeep: IndexUpkeep,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            sync_interval: SYNC_INTERVAL,
            trust_watcher: false,
            upkeep: IndexUpkeep::default(),
        }
    }
}

/// One document a search found.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct SearchHit {
    /// `claim`, `page`, `entity` or `source`.
    pub kind: DocKind,
    /// The document's id.
    pub id: String,
    /// Plain text around the match (no markup).
    pub snippet: String,
    /// The matched words in `snippet`: `[start, end)` offsets in
    /// characters, in order. Pages show them as `<mark>`, the terminal in
    /// colour; absent when nothing is marked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub highlights: Vec<[usize; 2]>,
    /// Relevance (higher is better) on the scale of the retriever that ran
    /// the search: BM25 (fts5), occurrences of the words (substring), cosine
    /// (embedding), cosine plus the lexical bonus (hybrid — whichever side
    /// found the hit, as `backend` names).
    pub score: f64,
    /// What found it: `fts5`, `substring`, `embedding`, or `hybrid` when words
    /// and meaning both did.
    pub backend: String,
    /// The claim's or page's status; absent for entities and sources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// For ranking context packs; not part of the search result.
    #[serde(skip)]
    #[schemars(skip)]
    pub confidence: Option<f64>,
    /// The document's cosine with the question, from a retriever that
    /// ranks by meaning: answers weigh it without embedding the question
    /// again. Not part of the search result.
    #[serde(skip)]
    #[schemars(skip)]
    pub cosine: Option<f32>,
    /// `unaudited` on knowledge that no approval or import in the audit
    /// log let in (written by hand, or the log was cut).
    #[serde(rename = "_meta", default, skip_serializing_if = "ReadMeta::is_empty")]
    pub meta: ReadMeta,
}

/// Marks around matched words while a snippet is built (control
/// characters no stored text holds: proposals refuse them). An engine
/// marks its snippets with them and [`unmark`]s them.
pub const MARK_OPEN: char = '\u{2}';
/// The mark after a matched word ([`MARK_OPEN`]).
pub const MARK_CLOSE: char = '\u{3}';

/// A snippet marked with [`MARK_OPEN`]/[`MARK_CLOSE`] as plain text and
/// the character ranges that were marked.
pub fn unmark(marked: &str) -> (String, Vec<[usize; 2]>) {
    let mut text = String::with_capacity(marked.len());
    let mut spans = Vec::new();
    let mut at = 0usize;
    let mut open: Option<usize> = None;
    for c in marked.chars() {
        match c {
            MARK_OPEN => open = Some(at),
            MARK_CLOSE => {
                if let Some(start) = open.take()
                    && start < at
                {
                    spans.push([start, at]);
                }
            }
            _ => {
                text.push(c);
                at += 1;
            }
        }
    }
    (text, spans)
}

/// Every kind a search looks at unless told otherwise.
pub const SEARCH_KINDS: &[DocKind] = DocKind::ALL;

/// What to retrieve: the same for every backend.
#[derive(Debug, Clone, Copy)]
pub struct Query<'a> {
    /// The query as given (what a model embeds).
    pub text: &'a str,
    /// Words, as `retrieval::query_terms` makes them.
    pub terms: &'a [String],
    /// At most this many hits.
    pub limit: usize,
    /// Any of claim, page, entity, source.
    pub kinds: &'a [DocKind],
    /// Which statuses may be returned.
    pub currency: Currency,
    /// Whether hits need a snippet.
    pub snippets: Snippets,
    /// The backend asked for; `None`: the KB's own (`retrieval::retriever`).
    pub backend: Option<crate::settings::RetrievalBackend>,
    /// The caller named the backend: a model failure is its error, not a
    /// quiet fallback to words.
    pub explicit: bool,
}

/// Whether hits carry a marked-up snippet (search) or not (context packs,
/// which read the items themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Snippets {
    /// Hits carry a snippet (search).
    Yes,
    /// Hits need none; a retriever may leave `snippet` empty.
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
    /// Whether an item with this status may be returned. What is current
    /// is the model's rule (`ClaimStatus::is_current`; an archived page
    /// shares the name); redacted claims are never returned.
    pub fn admits(self, status: Option<&str>) -> bool {
        use crate::model::ClaimStatus;
        let claim_status = status.and_then(ClaimStatus::parse);
        match (self, claim_status) {
            (_, Some(ClaimStatus::Redacted)) => false,
            (Currency::Current, Some(s)) => s.is_current(),
            // A status neither vocabulary knows (another writer's) is not
            // served as current knowledge.
            (Currency::Current, None) => {
                status.is_none_or(|s| crate::model::PageStatus::parse(s).is_some())
            }
            _ => true,
        }
    }
}

/// What one catch-up of the index with the files did.
#[derive(Debug, Default, Clone, Copy)]
pub struct SyncStats {
    /// Documents (re)indexed from their files: new or changed.
    pub updated: usize,
    /// Documents dropped from the index because their file is gone (and,
    /// when the watcher applies a change, because it no longer parses).
    pub removed: usize,
}

/// How long an open index in a long-running process trusts its last sync
/// before stat-ing the files again. One-shot commands always sync.
pub const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// What `kb.index_rebuild` returns.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RebuildResult {
    /// Always true: a rebuild that fails is an error.
    pub ok: bool,
    /// Documents indexed from the files.
    pub indexed: usize,
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
    /// Whether the index is usable and matches the files.
    pub fn in_step(&self) -> bool {
        self.changed == 0 && self.vanished == 0 && self.unusable.is_none()
    }
}

/// What bringing the vectors in step did.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
pub struct EmbedStats {
    /// Documents with vectors now.
    pub documents: usize,
    /// Documents embedded by the model in this call.
    pub embedded: usize,
    /// Documents whose vectors were reused (same text).
    pub reused: usize,
    /// Documents whose vectors another replica's model made, taken from
    /// the team database.
    pub shared: usize,
    /// Documents whose vectors were dropped (no longer in the index).
    pub removed: usize,
    /// Documents still without vectors.
    pub pending: usize,
}

/// When a check may stop embedding and leave the rest pending.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// Stop once this instant has passed.
    Until(Instant),
    /// Embed everything before returning.
    Unlimited,
}

impl Budget {
    pub(crate) fn spent(self) -> bool {
        matches!(self, Budget::Until(t) if Instant::now() >= t)
    }
}

/// A running watcher of one knowledge base.
pub struct Watching {
    /// Cleared when the watching thread stops (it stops only on an error).
    pub(crate) running: Arc<AtomicBool>,
    pub(crate) thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Watching {
    /// Whether the watching thread still runs.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }
    /// Wait for the watcher to stop; it stops only on an error, returned.
    pub fn join(mut self) -> Result<()> {
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::internal("watch: the watching thread panicked")),
            None => Ok(()),
        }
    }
}

/// Who watches a knowledge base, as its lock file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Watcher {
    /// The watching process's id.
    pub pid: u32,
}

/// Who brings the derived index (its vectors) up to date with what was
/// written outside this process — a `git pull`, a hand edit, another
/// command's approval. A write through this process brings in what it
/// wrote itself before it returns, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IndexUpkeep {
    /// Nothing runs in the background (a one-shot command, a library
    /// caller): the keeper's catch-up before a method dispatches brings the
    /// index in step and, for a read by meaning, embeds what is new within
    /// a time budget ([`keeper::catch_up`]).
    #[default]
    BeforeReads,
    /// The keeper's background thread does (a server, [`keeper::Upkeep`]):
    /// requests only read, and what is not embedded yet is found by words
    /// until it is.
    Background,
}

#[cfg(test)]
mod tests {
    use super::Currency;

    #[test]
    fn unmark_gives_plain_text_and_character_ranges() {
        let (text, spans) = super::unmark("\u{2}Déploys\u{3} on \u{2}\u{3}[Tue]\u{2}days\u{3}");
        assert_eq!(text, "Déploys on [Tue]days");
        assert_eq!(spans, vec![[0, 7], [16, 20]]);
    }

    #[test]
    fn currency_follows_the_models_rule_and_never_admits_redacted() {
        for s in [
            "working",
            "actionable",
            "stable",
            "contested",
            "draft",
            "active",
            "stale",
        ] {
            assert!(Currency::Current.admits(Some(s)), "{s}");
            assert!(Currency::Any.admits(Some(s)), "{s}");
        }
        for s in ["superseded", "archived"] {
            assert!(!Currency::Current.admits(Some(s)), "{s}");
            assert!(Currency::Any.admits(Some(s)), "{s}");
        }
        assert!(!Currency::Current.admits(Some("redacted")));
        assert!(!Currency::Any.admits(Some("redacted")));
        assert!(Currency::Current.admits(None));
    }
}
