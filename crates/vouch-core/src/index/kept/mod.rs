//! [`KeptIndex`]: the derived index kept in an engine's own tables
//! ([`Tables`]: a team's PostgreSQL, shared by its replicas) by the
//! keeper, written once for every such engine. The engine stores; this
//! file does the rest with the keeper's parts: the freshness scan
//! ([`super::keeper::scan`]), audit admission ([`super::admission`]), the
//! embedding schedule and the vectors in memory
//! ([`super::keeper::vectors`]) and the watcher ([`super::keeper::watch`]).
//!
//! Reads never write: a read answers from the tables as the last catch-up
//! left them — in a process that never caught up, from what an earlier
//! one built there, saying the index is catching up.

mod words;

use super::admission::{self, Proofs};
use super::docs::read_doc;
use super::engine::{EngineConn, MainConn, Sig, Tables, WatchTarget};
use super::keeper::scan::{KINDS, Scan, ScanMeta};
use super::keeper::vectors as embed;
use super::keeper::{Keep, KeeperState};
use super::{
    Budget, Currency, EmbedStats, Freshness, IndexOptions, Near, Query, RebuildResult, SearchHit,
    SyncStats, Watcher, Watching,
};
use crate::error::Result;
use crate::model::{DocKind, Written};
use crate::services::Embedder;
use crate::store::Dir;
use crate::stored::Store;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use words::HeldWords;

/// Documents read from their files and put at once.
const PUT_AT_ONCE: usize = 1000;

/// How long a read in a server whose index never caught up (and found
/// nothing built) waits for the keeper's first round.
const FIRST_ROUND_WITHIN: Duration = Duration::from_secs(60);

/// The index an engine's tables hold, kept by the keeper.
pub struct KeptIndex {
    /// Shared with the watcher's thread.
    inner: Arc<Inner>,
}

struct Inner {
    tables: Arc<dyn Tables>,
    keeper: KeeperState,
    /// When this process last made the tables current.
    caught_up: Mutex<Option<Instant>>,
    /// Reads may answer from the tables: caught up here, or built by an
    /// earlier run ([`super::Upkeep::open_built`]).
    open: AtomicBool,
    /// This process's catch-ups, one at a time.
    catching_up: Mutex<()>,
    /// The log lines admission rows were checked against.
    proofs: Proofs,
    /// The words as postings in memory, once a server's round read them.
    words: RwLock<Option<HeldWords>>,
}

impl KeptIndex {
    /// The index `tables` hold.
    pub fn new(tables: Arc<dyn Tables>) -> KeptIndex {
        KeptIndex {
            inner: Arc::new(Inner {
                tables,
                keeper: KeeperState::default(),
                caught_up: Mutex::new(None),
                open: AtomicBool::new(false),
                catching_up: Mutex::new(()),
                proofs: Proofs::default(),
                words: RwLock::new(None),
            }),
        }
    }

    fn keep<'a>(&'a self, store: &'a Store) -> Keep<'a> {
        Keep::new(store, &self.inner.keeper, self.inner.as_ref())
    }
}

impl MainConn for Inner {
    fn with_main(&self, f: &mut dyn FnMut(&dyn EngineConn) -> Result<()>) -> Result<()> {
        f(self.tables.as_ref())
    }
}

impl Inner {
    fn caught_up_at(&self) -> Option<Instant> {
        *self.caught_up.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Before a read: the tables may answer (saying so when this process
    /// has not caught up yet); a server's read waits for the keeper's
    /// first round when nothing was built before.
    fn ready(&self, store: &Store) -> Result<()> {
        let until = Instant::now() + FIRST_ROUND_WITHIN;
        loop {
            if self.caught_up_at().is_some() {
                return Ok(());
            }
            if self.open.load(Ordering::SeqCst) {
                store.note_index_catching_up();
                return Ok(());
            }
            if self.keeper.options().upkeep != super::IndexUpkeep::Background
                || Instant::now() >= until
            {
                return Err(super::keeper::not_caught_up());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Bring the tables in step with the files (every file stat-ed when
    /// `full`), then with the audit log; one catch-up at a time, here and
    /// among the processes sharing the tables. Without `wait`, while
    /// another process is catching up, this one does not: it answers
    /// from the tables (saying so until it caught up once itself).
    fn catch_up(&self, store: &Store, full: bool, wait: bool) -> Result<SyncStats> {
        let _one = self.catching_up.lock().unwrap_or_else(|e| e.into_inner());
        let mut stats = SyncStats::default();
        let mut changed: Vec<(String, String)> = Vec::new();
        let ran = self.tables.one_at_a_time(wait, &mut || {
            stats = self.sync(store, full, &mut changed)?;
            admission::sync(self.tables.as_ref(), store.audit_log())
        });
        // What was put before a failure is told to the vectors either way.
        if !changed.is_empty() {
            self.keeper.changed(Some(changed));
        }
        if !ran? {
            if self.tables.held()? > 0 {
                self.open.store(true, Ordering::SeqCst);
            }
            return Ok(stats);
        }
        self.refresh_words(false)?;
        self.open.store(true, Ordering::SeqCst);
        *self.caught_up.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(stats)
    }

    /// The files compared with the documents held: a kind whose scan sums
    /// to what the last catch-up recorded is skipped; in another, each
    /// file whose signature moved (or that may still be changing) is read
    /// again and each document whose file is gone dropped.
    fn sync(
        &self,
        store: &Store,
        full: bool,
        changed: &mut Vec<(String, String)>,
    ) -> Result<SyncStats> {
        let tables = self.tables.as_ref();
        let mut recorded: HashMap<String, ScanMeta> = HashMap::new();
        for (kind, _) in KINDS {
            let key = format!("scan:{kind}");
            if let Some(meta) = tables.value(&key)?.as_deref().and_then(ScanMeta::parse) {
                recorded.insert(key, meta);
            }
        }
        let dirs_only =
            !full && store.settings().retrieval.freshness == crate::settings::Freshness::Dirs;
        let scan = Scan::take(store, &recorded, dirs_only)?;
        let mut stats = SyncStats::default();
        let mut values = Vec::new();
        for kind_scan in scan.kinds {
            let Some(files) = kind_scan.files else {
                continue;
            };
            let kind = kind_scan.kind;
            let key = format!("scan:{kind}");
            let racy = |sig: Sig| sig.0 >= scan.racy_after;
            if kind_scan.stated
                && kind_scan.dir_mtime < scan.racy_after
                && !files.iter().any(|(_, sig)| racy(*sig))
                && recorded.get(&key) == Some(&ScanMeta::of(kind_scan.dir_mtime, &files))
            {
                continue;
            }
            let held: HashMap<String, Sig> = tables.signatures(kind)?.into_iter().collect();
            let mut unread: Vec<&str> = Vec::new();
            for (id, sig) in &files {
                if !kind_scan.stated || racy(*sig) || held.get(id) != Some(sig) {
                    unread.push(id);
                }
            }
            // The signature each file read now is held at.
            let mut read_sigs: HashMap<&str, Sig> = HashMap::new();
            for part in unread.chunks(PUT_AT_ONCE) {
                let mut docs = Vec::with_capacity(part.len());
                let mut unreadable = Vec::new();
                for id in part {
                    match read_doc(store, kind, id) {
                        Ok(Some((doc, sig))) => {
                            // A file that may still change within its
                            // timestamp's tick is held as unread (and so
                            // summed): the next catch-up reads it again.
                            let kept = if racy(sig) { (0, 0) } else { sig };
                            read_sigs.insert(id, kept);
                            docs.push((doc, kept));
                        }
                        Ok(None) => unreadable.push((kind, *id)),
                        Err(e) => {
                            store.warn(format!("index: skipped unreadable file: {e}"));
                            unreadable.push((kind, *id));
                        }
                    }
                }
                put_each(store, tables, &docs)?;
                stats.updated += docs.len();
                changed.extend(docs.iter().map(|(d, _)| (kind.to_string(), d.id.clone())));
                let dropped: Vec<(&str, &str)> = unreadable
                    .into_iter()
                    .filter(|(_, id)| held.contains_key(*id))
                    .collect();
                stats.removed += tables.remove_docs(&dropped)?;
                changed.extend(
                    dropped
                        .iter()
                        .map(|(k, id)| (k.to_string(), id.to_string())),
                );
            }
            // Held but not found by the scan, and still not there: a file
            // written since the scan (a write, here or on another replica,
            // put its document meanwhile) is not gone.
            let on_disk: HashSet<&str> = files.iter().map(|(id, _)| id.as_str()).collect();
            let gone: Vec<(&str, &str)> = held
                .keys()
                .filter(|id| !on_disk.contains(id.as_str()))
                .filter(|id| {
                    !super::docs::doc_file(store, kind, id)
                        .is_ok_and(|p| std::fs::symlink_metadata(p).is_ok())
                })
                .map(|id| (kind, id.as_str()))
                .collect();
            stats.removed += tables.remove_docs(&gone)?;
            changed.extend(gone.iter().map(|(k, id)| (k.to_string(), id.to_string())));
            // What this scan saw, the signatures of files read for the
            // first time taken from the files read.
            let seen: Vec<(String, Sig)> = files
                .iter()
                .map(|(id, sig)| {
                    let sig = read_sigs.get(id.as_str()).copied().unwrap_or(*sig);
                    (id.clone(), sig)
                })
                .collect();
            values.push((key, Some(ScanMeta::of(kind_scan.dir_mtime, &seen).render())));
        }
        tables.set_values(&values)?;
        Ok(stats)
    }

    /// The documents just written, put at once (read-your-writes); a
    /// failure is said, and the next catch-up finds the files.
    fn written(&self, store: &Store, written: &[Written]) {
        let tables = self.tables.as_ref();
        let mut docs = Vec::new();
        let mut removed = Vec::new();
        for w in written {
            match super::docs::written_doc(store, w) {
                Some(doc) => {
                    let sig = super::docs::doc_file(store, doc.kind, &doc.id)
                        .ok()
                        .and_then(|p| super::docs::file_signature(&p))
                        .unwrap_or((0, 0));
                    docs.push((doc, sig));
                }
                None => removed.push(w.key()),
            }
        }
        // The write's audit event is not read into the admission rows
        // here, under the write lock: a read's check reads the log past
        // the rows itself, and the next catch-up (or the watcher's next
        // batch) records it.
        let done = (|| {
            put_each(store, tables, &docs)?;
            if !removed.is_empty() {
                tables.remove_docs(&removed)?;
                tables.prune()?;
            }
            Ok::<(), crate::error::Error>(())
        })();
        if let Err(e) = done {
            store.warn(format!(
                "index: what was just written is not in the index yet ({e}); the next \
                 catch-up reads the files again"
            ));
        }
        self.keeper.changed(Some(
            written
                .iter()
                .map(|w| {
                    let (kind, id) = w.key();
                    (kind.to_string(), id.to_string())
                })
                .collect(),
        ));
    }

    /// Bring the postings in memory in step with the engine's words:
    /// read them all the first time (outside the lock: searches ask the
    /// engine meanwhile), then what changed.
    fn refresh_words(&self, load: bool) -> Result<()> {
        let feed = self.tables.as_ref();
        let load = load && self.keeper.options().upkeep == super::IndexUpkeep::Background;
        {
            let mut held = self.words.write().unwrap_or_else(|e| e.into_inner());
            match held.as_mut() {
                Some(words) => {
                    if words.refresh(feed)? {
                        return Ok(());
                    }
                    *held = None;
                }
                None if !load => return Ok(()),
                None => {}
            }
        }
        let loaded = HeldWords::load(feed)?;
        *self.words.write().unwrap_or_else(|e| e.into_inner()) = Some(loaded);
        Ok(())
    }

    /// The sha256 of the file at `inside` (a path inside `.vouch/`) as an
    /// event records it; `None` when gone or unreadable.
    fn file_sha(store: &Store, inside: &str) -> Option<String> {
        let bytes = store
            .read_file(&store.layout().root().join(inside))
            .ok()??;
        Some(crate::ids::content_sha256(&bytes))
    }
}

/// Put `docs`; when the engine refuses the batch for what a document holds
/// (`Internal`, not an engine away: `Busy`), each alone, and a refused one is said
/// and left out, so one document cannot stop the index following every
/// other.
fn put_each(store: &Store, tables: &dyn Tables, docs: &[(super::docs::Doc, Sig)]) -> Result<()> {
    let refused = |e: &crate::error::Error| e.kind == crate::error::ErrorKind::Internal;
    let Err(e) = tables.put_docs(docs) else {
        return Ok(());
    };
    if !refused(&e) {
        return Err(e);
    }
    for doc in docs {
        if let Err(e) = tables.put_docs(std::slice::from_ref(doc)) {
            if !refused(&e) {
                return Err(e);
            }
            store.warn(format!(
                "index: {} {} is not indexed ({e}); searches by words do not find it",
                doc.0.kind, doc.0.id
            ));
        }
    }
    Ok(())
}

impl WatchTarget for Inner {
    fn needs_full(&self, _store: &Store, token: &str) -> Result<bool> {
        Ok(self.caught_up_at().is_none() || self.tables.value("watch")?.as_deref() != Some(token))
    }

    fn apply_watched(
        &self,
        store: &Store,
        full: bool,
        changed: Vec<(&'static str, String)>,
        token: &str,
    ) -> Result<()> {
        if full {
            self.catch_up(store, true, true)?;
            return self
                .tables
                .set_values(&[("watch".to_string(), Some(token.to_string()))]);
        }
        let _one = self.catching_up.lock().unwrap_or_else(|e| e.into_inner());
        let mut docs = Vec::new();
        let mut gone = Vec::new();
        for (kind, id) in &changed {
            match read_doc(store, kind, id) {
                Ok(Some(found)) => docs.push(found),
                Ok(None) => gone.push((*kind, id.as_str())),
                Err(e) => {
                    store.warn(format!("index: skipped unreadable file: {e}"));
                    gone.push((*kind, id.as_str()));
                }
            }
        }
        put_each(store, self.tables.as_ref(), &docs)?;
        self.tables.remove_docs(&gone)?;
        self.refresh_words(false)?;
        admission::sync(self.tables.as_ref(), store.audit_log())?;
        self.keeper.changed(Some(
            changed
                .into_iter()
                .map(|(k, id)| (k.to_string(), id))
                .collect(),
        ));
        *self.caught_up.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    }
}

impl super::DerivedIndex for KeptIndex {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl super::Configured for KeptIndex {
    fn configure(&self, options: IndexOptions) {
        self.inner.keeper.configure(options);
    }
    fn options(&self) -> IndexOptions {
        self.inner.keeper.options()
    }
    fn is_open(&self) -> bool {
        self.inner.open.load(Ordering::SeqCst)
    }
    fn caught_up_at(&self) -> Option<Instant> {
        self.inner.caught_up_at()
    }
}

impl super::WriteHook for KeptIndex {
    fn written(&self, store: &Store, written: &[Written]) {
        self.inner.written(store, written);
    }
    fn embed_written(&self, store: &Store, embedder: &Arc<dyn Embedder>) {
        embed::after_write(&self.keep(store), embedder);
    }
    fn write_returned(&self, store: &Store) {
        // This process's postings take the write before its caller hears
        // (the other replicas' rounds read it).
        if let Err(e) = self.inner.refresh_words(false) {
            store.warn(format!(
                "index: the words in memory did not take what was just written ({e}); the \
                 next round reads it"
            ));
        }
    }
}

impl super::Upkeep for KeptIndex {
    fn catch_up(&self, store: &Store) -> Result<SyncStats> {
        self.inner.catch_up(store, false, false)
    }
    fn open_built(&self, _store: &Store) -> Result<bool> {
        let built = self.inner.tables.held()? > 0;
        if built {
            self.inner.open.store(true, Ordering::SeqCst);
        }
        Ok(built)
    }
    fn refresh_postings(&self, store: &Store) -> Result<()> {
        // `retrieval.postings_in_memory: false`: the engine ranks.
        self.inner
            .refresh_words(store.settings().retrieval.postings_in_memory)
    }
    fn rebuild(&self, store: &Store) -> Result<RebuildResult> {
        let inner = &self.inner;
        {
            let _one = inner.catching_up.lock().unwrap_or_else(|e| e.into_inner());
            inner.tables.forget()?;
        }
        inner.keeper.changed(None);
        inner.catch_up(store, true, true)?;
        Ok(RebuildResult {
            ok: true,
            indexed: inner.tables.held()?,
        })
    }
    fn embed(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Budget,
        wait: bool,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Option<EmbedStats>> {
        embed::ensure(&self.keep(store), embedder, budget, wait, progress)
    }
    fn wait_for_upkeep(&self, at_most: Duration) {
        embed::wait_for_upkeep(&self.inner.keeper, at_most);
    }
    fn start_watching(&self, store: Arc<Store>) -> Result<Watching> {
        super::keeper::watch::start(store, self.inner.clone() as Arc<dyn WatchTarget>)
    }
    fn watcher(&self, store: &Store) -> Option<Watcher> {
        super::keeper::watch::watcher(store)
    }
    fn changed_elsewhere(&self) {
        // Another replica put what it wrote in the shared tables already:
        // the catch-up finds nothing to read, so the vectors in memory are
        // told to look at every document again.
        self.inner.keeper.changed(None);
        self.inner.keeper.note_changed_elsewhere();
    }
    fn take_changed_elsewhere(&self) -> bool {
        self.inner.keeper.take_changed_elsewhere()
    }
}

impl super::LexicalIndex for KeptIndex {
    fn lexical(&self, store: &Store, q: &Query) -> Result<Vec<SearchHit>> {
        self.inner.ready(store)?;
        let held = self.inner.words.read().unwrap_or_else(|e| e.into_inner());
        match held.as_ref() {
            Some(words) if words.exact() => words.search(self.inner.tables.as_ref(), q),
            _ => self.inner.tables.words(q),
        }
    }
    fn texts_and_confidence(
        &self,
        store: &Store,
        keys: &[(DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.inner.ready(store)?;
        self.inner.tables.texts_and_confidence(keys)
    }
}

impl super::VectorIndex for KeptIndex {
    fn vectors_for_read(
        &self,
        store: &Store,
        embedder: &Arc<dyn Embedder>,
        budget: Duration,
    ) -> Result<usize> {
        self.inner.ready(store)?;
        embed::before_read(&self.keep(store), embedder, budget)?;
        Ok(self.inner.keeper.pending())
    }
    fn vector_counts(&self, store: &Store, embedder: &Arc<dyn Embedder>) -> Result<(usize, usize)> {
        embed::for_read(&self.keep(store), embedder)?;
        Ok(self.inner.keeper.counts())
    }
    fn nearest(
        &self,
        query: &[f32],
        kinds: &[DocKind],
        currency: Currency,
        want: usize,
    ) -> Result<Vec<Near>> {
        self.inner.keeper.nearest(query, kinds, currency, want)
    }
    fn similarity(&self, kind: DocKind, id: &str, query: &[f32]) -> Result<Option<f32>> {
        self.inner.keeper.similarity(kind, id, query)
    }
    fn text_shas(&self, store: &Store) -> Result<HashSet<String>> {
        embed::text_shas(&self.keep(store))
    }
}

impl super::IndexChecks for KeptIndex {
    fn freshness(&self, store: &Store) -> Result<Option<Freshness>> {
        let tables = self.inner.tables.as_ref();
        if tables.held()? == 0 && tables.value("scan:claim")?.is_none() {
            return Ok(None);
        }
        let mut fresh = Freshness::default();
        let scan = Scan::take(store, &HashMap::new(), false)?;
        for kind_scan in scan.kinds {
            let held: HashMap<String, Sig> =
                tables.signatures(kind_scan.kind)?.into_iter().collect();
            let files = kind_scan.files.unwrap_or_default();
            let on_disk: HashSet<&str> = files.iter().map(|(id, _)| id.as_str()).collect();
            fresh.vanished += held
                .keys()
                .filter(|id| !on_disk.contains(id.as_str()))
                .count();
            fresh.changed += files
                .iter()
                .filter(|(id, sig)| held.get(id) != Some(sig))
                .count();
        }
        Ok(Some(fresh))
    }
    fn unaudited(
        &self,
        store: &Store,
        objects: &[(Dir, &str)],
        strict: bool,
    ) -> Result<HashSet<(Dir, String)>> {
        admission::unaudited(
            self.inner.tables.as_ref(),
            store,
            &self.inner.proofs,
            &|inside| Inner::file_sha(store, inside),
            objects,
            strict,
        )
    }
}
