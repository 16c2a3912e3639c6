//! `Store`: an opened knowledge base's files — its layout, settings,
//! clock and audit log — and the plumbing every operation shares (locking,
//! reading objects, minting audit events, collecting warnings). It knows
//! nothing of the derived index or the services `Kb` adds on top, so the
//! index (below `Kb`) can take it.

use crate::audit::AuditLog;
use crate::clock::{Clock, random_hex};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    AuditEvent, Claim, Entity, Evidence, Page, Relation, Session, Source, Timestamp,
};
use crate::settings::Settings;
use crate::store::layout::id_from_file_name;
use crate::store::lock::{KbLock, SharedHold, SharedLock};
use crate::store::queue::SharedQueue;
use crate::store::yaml::{from_yaml, page_from_markdown, page_to_markdown, to_yaml};
use crate::store::{Dir, Layout, atomic};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// An object stored one file per id in its own folder.
pub trait Stored: Sized {
    /// The folder its files live in.
    const DIR: Dir;
    /// Parse a file's text (`path` names it in errors).
    fn decode(path: &Path, text: &str) -> Result<Self>;
    /// The file's text.
    fn encode(&self) -> Result<String>;
    /// Its id, which names its file.
    fn id(&self) -> &str;
}

/// `Stored` for a type in folder `$dir`, written as YAML unless a decode
/// and an encode function are given (a page's markdown).
macro_rules! stored {
    ($t:ty, $dir:expr) => {
        stored!($t, $dir, from_yaml, to_yaml);
    };
    ($t:ty, $dir:expr, $decode:ident, $encode:ident) => {
        impl Stored for $t {
            const DIR: Dir = $dir;
            fn decode(path: &Path, text: &str) -> Result<Self> {
                $decode(path, text)
            }
            fn encode(&self) -> Result<String> {
                $encode(self)
            }
            fn id(&self) -> &str {
                &self.id
            }
        }
    };
}

stored!(Claim, Dir::Claims);
stored!(Entity, Dir::Entities);
stored!(Relation, Dir::Relations);
stored!(Evidence, Dir::Evidence);
stored!(Session, Dir::Sessions);
stored!(Page, Dir::Pages, page_from_markdown, page_to_markdown);

/// Per proposal id: the file's (mtime ns, size) and its (kind, object id)
/// (`None`: unreadable).
pub(crate) type ProposalObjects =
    std::collections::HashMap<String, ((i64, i64), Option<(crate::model::ProposalKind, String)>)>;

/// The knowledge base's write lock as a writer holds it: the file lock,
/// and the shared lock taken before it where writers share more than one
/// machine (a team server's database).
pub(crate) struct WriteLock<'a> {
    store: &'a Store,
    /// Whether the inbox (`proposed/`) is moved into a team's queue before
    /// the lock goes back.
    moves_inbox: bool,
    // Dropped before `_file` (fields drop in order): the shared lock is
    // given back first, as it was taken first.
    shared: Option<(Box<dyn SharedHold>, PathBuf)>,
    _file: KbLock,
}

impl Drop for WriteLock<'_> {
    fn drop(&mut self) {
        let Some((hold, log)) = self.shared.take() else {
            return;
        };
        // What this write proposed goes to the queue before the lock goes
        // back; should that fail, the inbox keeps it (reads see it there)
        // and the next writer moves it.
        if self.moves_inbox
            && let Err(e) = self.store.move_inbox()
        {
            self.store.warn(format!(
                "the new proposals stay in proposed/ for now: {}",
                e.message
            ));
        }
        // The head this holder leaves: the log's last event as written.
        match AuditLog::new(log).last_head() {
            Some(head) => hold.release(head),
            None => drop(hold),
        }
    }
}

/// An opened knowledge base's files and what reading them shares.
pub struct Store {
    layout: Layout,
    settings: Settings,
    clock: Arc<dyn Clock>,
    audit: AuditLog,
    warnings: Mutex<Vec<String>>,
    /// Each pending proposal file's (kind, object id), by proposal id, with
    /// the file signature it was read at: proposing checks object ids
    /// against the queue without re-reading it every time.
    pub(crate) proposal_objects: Mutex<ProposalObjects>,
    /// Files that did not parse when listing, with their (mtime ns, size)
    /// then: skipped without re-reading while unchanged, and warned about
    /// once per process (a server lists them on every call otherwise).
    unreadable: Mutex<std::collections::HashMap<PathBuf, (i64, i64)>>,
    /// Each folder's count of ids, with the folder's stamp when it was
    /// listed ([`Store::count`]).
    counts: Mutex<std::collections::HashMap<PathBuf, (FolderStamp, usize)>>,
    /// Folders listed by [`Store::count`], for its tests.
    #[cfg(test)]
    pub(crate) listings: std::sync::atomic::AtomicUsize,
    /// Set when opened tolerantly and `config.yaml` did not parse.
    config_error: Option<String>,
    /// The lock taken before the file lock, when writers do not all share
    /// this machine's file locks (a team server's database).
    shared_lock: std::sync::OnceLock<Arc<dyn SharedLock>>,
    /// Where the replicas writing with that lock share their vectors.
    shared_vectors: std::sync::OnceLock<crate::services::VectorSharing>,
    /// Where the pending proposals are kept when not in `proposed/`
    /// ([`crate::store::queue`]).
    shared_queue: std::sync::OnceLock<Arc<dyn SharedQueue>>,
    /// The bytes of each queued proposal read so far, by id (a pending
    /// proposal never changes), for those the queue listed last.
    queued_bytes: Mutex<std::collections::HashMap<String, Arc<[u8]>>>,
    /// What was said about files left in the inbox and unreadable queued
    /// proposals, with the state each was said in: said again only once
    /// changed.
    said_once: Mutex<std::collections::HashMap<PathBuf, (i64, i64)>>,
}

thread_local! {
    /// What the call running on this thread raised, if one is collecting.
    static CALL_NOTES: std::cell::RefCell<Option<CallNotes>> =
        const { std::cell::RefCell::new(None) };
}

/// What one call raised besides its result: its warnings, and how partial
/// its answer is. Transports hand it to the caller (`_meta` of the JSONL
/// and HTTP envelope, of an MCP tool result): a warning on the server's
/// stderr reaches no agent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallNotes {
    /// Non-fatal problems, in the order raised.
    pub warnings: Vec<String>,
    /// Documents a search's semantic side could not see: not embedded yet
    /// (found by words only, if at all).
    pub vectors_pending: Option<usize>,
    /// The index answered before its first catch-up with the files (a
    /// server just started): what changed while no vouch ran may be
    /// missing.
    pub index_catching_up: bool,
}

/// Change the running call's notes, if a call is collecting them.
fn note(change: impl FnOnce(&mut CallNotes)) {
    CALL_NOTES.with(|call| {
        if let Some(notes) = call.borrow_mut().as_mut() {
            change(notes);
        }
    });
}

impl CallNotes {
    /// Whether the call raised nothing.
    pub fn is_empty(&self) -> bool {
        self.warnings.is_empty() && self.vectors_pending.is_none() && !self.index_catching_up
    }

    /// The notes as the `_meta` object an agent receives: `partial` when
    /// the answer is known to be incomplete, the count of documents not
    /// embedded yet, and every warning — with the server's own paths
    /// written relative to the project that holds `root` (the `.vouch/`
    /// folder): a remote caller learns nothing of the server's disk.
    /// `None` when there is nothing to say.
    pub fn meta(&self, root: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
        if self.is_empty() {
            return None;
        }
        let mut meta = serde_json::Map::new();
        if let Some(n) = self.vectors_pending {
            meta.insert("partial".into(), true.into());
            meta.insert("vectors_pending".into(), n.into());
        }
        if self.index_catching_up {
            meta.insert("partial".into(), true.into());
            meta.insert("index_catching_up".into(), true.into());
        }
        if !self.warnings.is_empty() {
            let project = root.parent().unwrap_or(root);
            let prefix = format!("{}/", project.display());
            let relative: Vec<String> = self
                .warnings
                .iter()
                .map(|w| {
                    if project.as_os_str().len() > 1 {
                        w.replace(&prefix, "")
                    } else {
                        w.clone()
                    }
                })
                .collect();
            meta.insert("warnings".into(), relative.into());
        }
        Some(meta)
    }
}

impl Store {
    /// Open the files at `root` (the `.vouch/` folder itself); `tolerant`
    /// opens even when `config.yaml` does not parse, with defaults, keeping
    /// the problem for `kb.doctor` ([`Store::config_error`]).
    pub(crate) fn open(root: &Path, clock: Arc<dyn Clock>, tolerant: bool) -> Result<Store> {
        crate::store::layout::refuse_linked_root(root)?;
        if !root.is_dir() {
            return Err(Error::new(
                ErrorKind::NoKb,
                format!(
                    "{} is not a vouch knowledge base (no such directory); run `vouch init`",
                    root.display()
                ),
            ));
        }
        let layout = Layout::new(root);
        let mut config_error = None;
        let settings = if std::fs::symlink_metadata(layout.config()).is_ok() {
            match Settings::load(layout.root(), &layout.config()) {
                Ok(s) => s,
                Err(e) if tolerant => {
                    config_error = Some(e.message);
                    Settings::new("", None)
                }
                Err(e) => return Err(e),
            }
        } else {
            Settings::new("", None)
        };
        let store = Store {
            audit: AuditLog::new(layout.audit_log()).with_tip(layout.audit_tip()),
            layout,
            settings,
            clock,
            warnings: Mutex::new(Vec::new()),
            proposal_objects: Mutex::default(),
            unreadable: Mutex::default(),
            counts: Mutex::default(),
            #[cfg(test)]
            listings: Default::default(),
            config_error,
            shared_lock: std::sync::OnceLock::new(),
            shared_vectors: std::sync::OnceLock::new(),
            shared_queue: std::sync::OnceLock::new(),
            queued_bytes: Mutex::default(),
            said_once: Mutex::default(),
        };
        // A config this vouch cannot fully use still opens: say what was
        // used instead.
        for problem in store.settings.problems() {
            store.warn(problem.describe());
        }
        // Readers too must not see half of an interrupted write.
        if std::fs::symlink_metadata(store.layout.root().join(atomic::STAGING_DIR)).is_ok()
            && let Err(e) = store.lock()
        {
            store.warn(format!(
                "a write interrupted by a crash is not finished yet ({e}); the next command \
                 that can write here finishes it"
            ));
        }
        Ok(store)
    }

    /// Why `config.yaml` could not be used (only when opened tolerantly).
    pub fn config_error(&self) -> Option<&str> {
        self.config_error.as_deref()
    }

    /// Where its files are.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// Its `config.yaml`, as parsed.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
    /// Its audit log.
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit
    }
    /// The clock's time now.
    pub fn now(&self) -> Timestamp {
        Timestamp(self.clock.now())
    }
    /// Its clock: time and id randomness.
    pub fn clock(&self) -> &dyn Clock {
        self.clock.as_ref()
    }

    /// Record a non-fatal problem (a file skipped while listing). Inside
    /// [`Store::collecting_warnings`] it belongs to that call; otherwise (while
    /// opening, in a background refresh) to the KB, for [`Store::take_warnings`].
    /// The core never prints. The same message twice is said once (a
    /// catch-up before a command and again before its method).
    pub fn warn(&self, message: String) {
        let unclaimed = CALL_NOTES.with(|call| match call.borrow_mut().as_mut() {
            Some(notes) => {
                if !notes.warnings.contains(&message) {
                    notes.warnings.push(message);
                }
                None
            }
            None => Some(message),
        });
        if let Some(message) = unclaimed {
            let mut pending = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
            if !pending.contains(&message) {
                pending.push(message);
            }
        }
    }

    /// Warnings raised outside any call.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Record that the call's search could not see `n` documents by
    /// meaning (not embedded yet): its answer is partial, and the caller
    /// is told so with the count. Outside a call it is only the warning
    /// that goes with it.
    pub fn note_vectors_pending(&self, n: usize) {
        note(|notes| notes.vectors_pending = Some(notes.vectors_pending.unwrap_or(0).max(n)));
    }

    /// Record that the call read an index not yet caught up with the files
    /// ([`CallNotes::index_catching_up`]).
    pub fn note_index_catching_up(&self) {
        note(|notes| notes.index_catching_up = true);
    }

    /// Run one call, returning the warnings it raised with its result —
    /// never another concurrent call's. A call runs on one thread (the core
    /// is synchronous), so the collector is per thread.
    pub fn collecting_warnings<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
        let (result, notes) = Self::collecting_notes(f);
        (result, notes.warnings)
    }

    /// [`Store::collecting_warnings`] with everything else the call noted
    /// ([`CallNotes`]).
    pub fn collecting_notes<R>(f: impl FnOnce() -> R) -> (R, CallNotes) {
        let outer = CALL_NOTES.with(|call| call.borrow_mut().replace(CallNotes::default()));
        // Restored even if `f` panics (a transport catches the panic).
        struct Restore(Option<CallNotes>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let outer = self.0.take();
                CALL_NOTES.with(|call| *call.borrow_mut() = outer);
            }
        }
        let restore = Restore(outer);
        let result = f();
        let mine = CALL_NOTES
            .with(|call| call.borrow_mut().take())
            .unwrap_or_default();
        drop(restore);
        (result, mine)
    }

    /// The KB-wide write lock. Whoever takes it first after a crash finishes (or
    /// undoes) the multi-file write the crash interrupted.
    pub(crate) fn lock(&self) -> Result<WriteLock<'_>> {
        self.lock_with(true)
    }

    /// [`Store::lock`]; with `moves_inbox` false, what `proposed/` holds
    /// stays there (it is being filled from a team's queue).
    pub(crate) fn lock_with(&self, moves_inbox: bool) -> Result<WriteLock<'_>> {
        let Some(shared) = self.shared_lock.get() else {
            let file = KbLock::acquire(&self.layout.lock_file())?;
            self.recover_interrupted()?;
            return Ok(WriteLock {
                store: self,
                moves_inbox,
                shared: None,
                _file: file,
            });
        };
        // The shared lock first, then the file lock: one order everywhere.
        let hold = shared.acquire()?;
        let file = KbLock::acquire(&self.layout.lock_file())?;
        if let Some(head) = hold.head()
            && !self.audit.holds(&head)?
        {
            // `hold` drops unreleased: the head stays what it was.
            return Err(Error::conflict(format!(
                "nothing was written: the audit log here ({}) lacks event {} (hash {}…), the \
                 last one written under the lock in {}. This folder is not the working tree \
                 the other writers share (another copy, or a network volume whose view is \
                 stale), or its history was rewound. Point every replica at the same tree \
                 (docs/team-server.md); if this history is meant to replace the other, run \
                 `vouch team adopt` here",
                self.audit.path().display(),
                head.id,
                &head.hash[..head.hash.len().min(12)],
                shared.describe()
            )));
        }
        self.recover_interrupted()?;
        // What a crash, or a writer without the queue, left in the inbox;
        // should that fail, it stays there (reads see it) for the next.
        if moves_inbox && let Err(e) = self.move_inbox() {
            self.warn(format!(
                "the proposals in proposed/ stay there for now: {}",
                e.message
            ));
        }
        Ok(WriteLock {
            store: self,
            moves_inbox,
            shared: Some((hold, self.audit.path().to_path_buf())),
            _file: file,
        })
    }

    /// Run `outside` — a writer that is not vouch, such as `git pull` of a
    /// teammate's merge into a team server's tree — holding the knowledge
    /// base's write lock (the shared one too), so no vouch write
    /// interleaves with it; the head recorded afterwards is the log it
    /// left.
    pub fn while_locked<T>(&self, outside: impl FnOnce() -> T) -> Result<T> {
        let _lock = self.lock()?;
        Ok(outside())
    }

    /// Before an audit append: the shared lock, if any, is still this
    /// process's (its connection may have dropped mid-write, and another
    /// replica taken it); else nothing is logged.
    fn confirm_shared_lock(&self) -> Result<()> {
        let Some(shared) = self.shared_lock.get() else {
            return Ok(());
        };
        if shared.still_held()? {
            return Ok(());
        }
        Err(Error::new(
            crate::error::ErrorKind::Busy,
            format!(
                "nothing was logged: the write lock in {} was lost during this write (its \
                 connection dropped); try again",
                shared.describe()
            ),
        ))
    }

    /// Take `lock` before the file lock from now on (once per process; a
    /// second call is ignored): a team server's database.
    pub fn share_lock(&self, lock: Arc<dyn SharedLock>) {
        let _ = self.shared_lock.set(lock);
    }

    /// The shared lock this process takes, if any.
    pub fn shared_lock(&self) -> Option<&dyn SharedLock> {
        self.shared_lock.get().map(|l| l.as_ref())
    }

    /// Take vectors other replicas' models made from `shared`, and keep
    /// there what this process's model makes (once per process; a second
    /// call is ignored): a team server's database.
    pub fn share_vectors(&self, shared: Arc<dyn crate::services::SharedVectors>) {
        let _ = self
            .shared_vectors
            .set(crate::services::VectorSharing::new(shared));
    }

    /// Where this process shares vectors, if anywhere.
    pub fn shared_vectors(&self) -> Option<&crate::services::VectorSharing> {
        self.shared_vectors.get()
    }

    /// Complete or discard a batch a crash interrupted ([`atomic::recover`]).
    /// Caller holds the lock.
    fn recover_interrupted(&self) -> Result<()> {
        // A batch is completed only for the event that names its journal.
        let outcome = atomic::recover(self.layout.root(), |id, journal_sha| {
            Ok(self.audit_log().find_id(id)?.is_some_and(|ev| {
                ev.get("data")
                    .and_then(|d| d.get("batch_sha256"))
                    .and_then(Value::as_str)
                    == Some(journal_sha)
            }))
        })?;
        match outcome {
            atomic::Recovery::Clean => {}
            atomic::Recovery::Completed { event_id, files } => self.warn(format!(
                "completed a write that a crash interrupted ({files} file(s), audit event \
                 {event_id})"
            )),
            atomic::Recovery::Discarded { event_id, files } => self.warn(format!(
                "discarded a write that a crash interrupted before it was logged{} ({files} \
                 staged file(s); nothing in the knowledge base had changed)",
                event_id
                    .map(|id| format!(" (audit event {id})"))
                    .unwrap_or_default()
            )),
            atomic::Recovery::Refused { why } => self.warn(format!(
                "removed .vouch/{}/: {why}; nothing it names was touched",
                atomic::STAGING_DIR
            )),
        }
        Ok(())
    }

    /// A new audit event (hashes are filled in on append).
    pub(crate) fn event(
        &self,
        event: &str,
        actor: &str,
        object_ids: Vec<String>,
        data: Value,
    ) -> AuditEvent {
        AuditEvent {
            id: random_hex(self.clock(), 32),
            event: event.to_string(),
            actor: actor.to_string(),
            created_at: self.now(),
            object_ids,
            dry_run: false,
            reversible: false,
            data,
            prev_hash: String::new(),
            hash: String::new(),
            extra: Default::default(),
        }
    }

    pub(crate) fn append_audit(&self, events: &mut [AuditEvent]) -> Result<()> {
        self.append_joined(events).map(|_| ())
    }

    /// Append `events`, first joining any branches a git merge left with an
    /// `audit.merge` event by the same actor (see `audit::graph`): every
    /// write seals a merge. Answers the log's length before the append.
    fn append_joined(&self, events: &mut [AuditEvent]) -> Result<u64> {
        self.confirm_shared_lock()?;
        let heads = self.audit.heads_to_join()?;
        if heads.is_empty() || events.is_empty() {
            return self.audit.append_at(events);
        }
        let actor = events[0].actor.clone();
        let mut all = Vec::with_capacity(events.len() + 1);
        all.push(self.event(
            crate::audit::graph::MERGE_EVENT,
            &actor,
            Vec::new(),
            serde_json::json!({ "parents": heads }),
        ));
        all.extend(events.iter().cloned());
        let start = self.audit.append_at(&mut all)?;
        for (ev, written) in events.iter_mut().zip(all.into_iter().skip(1)) {
            *ev = written;
        }
        Ok(start)
    }

    /// Join the branches a git merge left, now (`doctor --fix`); `None`
    /// when there were none.
    pub fn join_branches(&self, actor: &str) -> Result<Option<usize>> {
        let _lock = self.lock()?;
        let heads = self.audit.heads_scanned()?;
        if heads.is_empty() {
            return Ok(None);
        }
        let n = heads.len();
        let mut ev = self.event(
            crate::audit::graph::MERGE_EVENT,
            actor,
            Vec::new(),
            serde_json::json!({ "parents": heads }),
        );
        self.confirm_shared_lock()?;
        self.audit.append_at(std::slice::from_mut(&mut ev))?;
        Ok(Some(n))
    }

    /// Append `events`, then make the change they record with `write`. If
    /// the write fails (a folder that is a file, a full disk), the events
    /// are taken back out of the log: no event for a change that did not
    /// happen, and a retry logs once. The caller holds the KB lock, so the
    /// events are still the log's last lines. (A crash between the two
    /// leaves the event; `doctor` reports one naming no object.)
    pub(crate) fn audited<T>(
        &self,
        events: &mut [AuditEvent],
        write: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let start = self.append_joined(events)?;
        match write() {
            Ok(v) => Ok(v),
            Err(e) => {
                let last = events.last().map(|ev| ev.hash.clone()).unwrap_or_default();
                if let Err(undo) = self.audit.take_back(start, &last) {
                    self.warn(format!(
                        "the audit log keeps an event for a write that failed ({}), and \
                         could not be cut back ({}); `vouch doctor` reports it",
                        e.message, undo.message
                    ));
                }
                Err(e)
            }
        }
    }

    // ----- reading objects -------------------------------------------------

    /// Read one object; `Ok(None)` when its file does not exist.
    pub fn load<T: Stored>(&self, id: &str) -> Result<Option<T>> {
        Ok(self.load_with_meta(id)?.map(|(object, _)| object))
    }

    /// [`Store::load`], with the metadata of the file it read (the index
    /// takes a file's signature from it: no second look at the name).
    pub fn load_with_meta<T: Stored>(&self, id: &str) -> Result<Option<(T, std::fs::Metadata)>> {
        let path = self.layout.file(T::DIR, id)?;
        let Some((text, meta)) = self.read_text_with_meta(&path)? else {
            return Ok(None);
        };
        let object = T::decode(&path, &text)?;
        // A file is the object its name says: one that says it is another
        // (hand-edited, or planted by a clone) would show another's text
        // under that id — and pass for audited if that id was approved.
        if object.id() != id {
            return Err(Error::corrupt(
                &path,
                format!(
                    "holds `id: {}`, but its name says {id}; a file's id must match its \
                     name: rename the file or correct its `id`",
                    crate::ids::truncate_for_message(object.id())
                ),
            ));
        }
        Ok(Some((object, meta)))
    }

    /// Is there a regular file (not a link) for this id — or, for a
    /// pending proposal, one in the queue?
    pub fn exists(&self, dir: Dir, id: &str) -> bool {
        if dir == Dir::Proposed && self.shared_queue.get().is_some() {
            // The queue's error counts as yes: a check that refuses what
            // is pending refuses then.
            return self.pending_exists(id).unwrap_or(true);
        }
        self.layout
            .file(dir, id)
            .is_ok_and(|p| crate::store::nofollow::is_file(&p))
    }

    /// Read a file beneath `.vouch/` without following any link
    /// (`store::nofollow`); `None` when it does not exist.
    pub fn read_file(&self, path: &Path) -> Result<Option<Vec<u8>>> {
        Ok(self.read_file_with_meta(path)?.map(|(bytes, _)| bytes))
    }

    /// [`Store::read_file`], with the metadata of the file it read.
    fn read_file_with_meta(&self, path: &Path) -> Result<Option<(Vec<u8>, std::fs::Metadata)>> {
        match crate::store::nofollow::read_with_meta(self.layout.root(), path) {
            Ok(read) => Ok(Some(read)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// As [`Store::read_file`], as UTF-8.
    pub fn read_text(&self, path: &Path) -> Result<Option<String>> {
        utf8(path, self.read_file(path)?)
    }

    /// [`Store::read_text`], with the metadata of the file it read.
    fn read_text_with_meta(&self, path: &Path) -> Result<Option<(String, std::fs::Metadata)>> {
        let Some((bytes, meta)) = self.read_file_with_meta(path)? else {
            return Ok(None);
        };
        Ok(utf8(path, Some(bytes))?.map(|text| (text, meta)))
    }

    /// A source's stored bytes, only if they still hash to its id: content
    /// that does not is never served (a drifted or planted file).
    pub fn source_content(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let path = self.layout.source_content(id)?;
        let Some(bytes) = self.read_file(&path)? else {
            return Ok(None);
        };
        if crate::ids::sha256_hex(&bytes) != id {
            return Err(Error::corrupt(
                &path,
                "does not hash to its source id, so it is not served; restore the original \
                 bytes from git (`vouch source verify` reports drift)",
            ));
        }
        Ok(Some(bytes))
    }

    /// Ids in a folder (and, for the pending proposals, in the queue),
    /// sorted.
    pub fn ids(&self, dir: Dir) -> Result<Vec<String>> {
        if dir == Dir::Proposed && self.shared_queue.get().is_some() {
            return self.pending_ids();
        }
        self.folder_ids(dir)
    }

    /// The ids of the files in a folder, sorted.
    fn folder_ids(&self, dir: Dir) -> Result<Vec<String>> {
        names_in(&self.layout.dir(dir), |name| {
            id_from_file_name(dir, name).filter(|id| crate::ids::check_id("id", id).is_ok())
        })
    }

    /// Every readable object of a kind, sorted by id. A file that does not
    /// parse is skipped with a warning naming it.
    pub fn load_all<T: Stored>(&self) -> Result<Vec<T>> {
        let ids = self.ids(T::DIR)?;
        Ok(self.load_many(&ids))
    }

    /// The objects with these ids, in order: a missing file is left out, one
    /// that does not parse is skipped with a warning.
    pub fn load_many<T: Stored>(&self, ids: &[String]) -> Vec<T> {
        ids.iter()
            .filter_map(|id| {
                let path = self.layout.file(T::DIR, id).ok()?;
                self.skip_known_unreadable(&path, || self.load::<T>(id))
            })
            .collect()
    }

    /// Read a file with `read`, unless it failed to parse before and has
    /// not changed since: then skip it quietly (it was reported when it
    /// first failed; `doctor` lists it).
    fn skip_known_unreadable<T>(
        &self,
        path: &Path,
        read: impl Fn() -> Result<Option<T>>,
    ) -> Option<T> {
        // Only a file that fails costs a stat; the rest are just read.
        let sig = || {
            std::fs::symlink_metadata(path)
                .map(|m| (crate::store::mtime_ns(&m), m.len() as i64))
                .ok()
        };
        // The lock is held only to look up and note: never while reading,
        // so concurrent requests read files in parallel.
        let unreadable = || self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
        let before = unreadable().get(path).copied();
        if let Some(before) = before {
            if sig() == Some(before) {
                return None;
            }
            unreadable().remove(path);
        }
        if let Ok(v) = read() {
            return v;
        }
        // Failed: note the file's signature, then read it once more, so a
        // file fixed in between is never remembered as broken.
        let at = sig();
        match read() {
            Ok(v) => v,
            Err(e) => {
                if let Some(sig) = at {
                    unreadable().insert(path.to_path_buf(), sig);
                }
                self.warn(format!("skipped unreadable file: {e}"));
                None
            }
        }
    }

    /// Write an object durably (temp + fsync + rename).
    pub(crate) fn store<T: Stored>(&self, value: &T) -> Result<()> {
        let path = self.layout.file(T::DIR, value.id())?;
        atomic::write(self.layout.root(), &path, value.encode()?.as_bytes())
    }

    /// Add an object's file to `batch`; returns its path inside `.vouch/`
    /// and the sha256 of its bytes, which the event that writes it records
    /// (`data.written`), so a later edit by hand is told from what the
    /// gate wrote.
    pub(crate) fn stage<T: Stored>(
        &self,
        batch: &mut atomic::Batch,
        value: &T,
    ) -> Result<(String, String)> {
        let path = self.layout.file(T::DIR, value.id())?;
        let bytes = value.encode()?.into_bytes();
        let sha = crate::ids::content_sha256(&bytes);
        let inside = self.layout.inside(&path);
        batch.write(path, bytes);
        Ok((inside, sha))
    }

    /// A source's metadata (`sources/<id>/meta.yaml`); `Ok(None)` when it has
    /// none.
    pub fn load_source(&self, id: &str) -> Result<Option<Source>> {
        Ok(self.load_source_with_meta(id)?.map(|(source, _)| source))
    }

    /// [`Store::load_source`], with the metadata of the `meta.yaml` it read.
    pub fn load_source_with_meta(&self, id: &str) -> Result<Option<(Source, std::fs::Metadata)>> {
        let path = self.layout.source_meta(id)?;
        self.read_text_with_meta(&path)?
            .map(|(text, meta)| Ok((from_yaml(&path, &text)?, meta)))
            .transpose()
    }

    /// Whether the source is registered: its `meta.yaml` is a regular file,
    /// not a link.
    pub fn source_exists(&self, id: &str) -> bool {
        self.layout
            .source_meta(id)
            .is_ok_and(|p| crate::store::nofollow::is_file(&p))
    }

    /// Ids of the folders under `sources/` named by a sha256, sorted.
    pub fn source_ids(&self) -> Result<Vec<String>> {
        names_in(&self.layout.sources_dir(), |name| {
            crate::ids::is_source_id(name).then(|| name.to_string())
        })
    }
}

/// Read a file as UTF-8; `None` when it does not exist.
fn utf8(path: &Path, bytes: Option<Vec<u8>>) -> Result<Option<String>> {
    bytes
        .map(|b| String::from_utf8(b).map_err(|_| Error::corrupt(path, "not valid UTF-8")))
        .transpose()
}

fn names_in(path: &Path, keep: impl Fn(&str) -> Option<String>) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| keep(&e.file_name().to_string_lossy()))
        .collect();
    names.sort();
    Ok(names)
}

mod counts;
use counts::FolderStamp;
mod pending;

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "stored/pending_tests.rs"]
mod pending_tests;
