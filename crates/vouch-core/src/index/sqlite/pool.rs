//! The open index of a process: the main connection (which the keeper's
//! explicit step, [`catch_up`], brings in step with the files — never a
//! read), a pool of read connections for concurrent requests, the write
//! hook, and rebuilds that never pull a file from under a reader.

use super::*;

pub(crate) struct OpenIndex {
    pub(crate) index: Index,
    pub(crate) synced_at: std::time::Instant,
    /// The file opened (device and inode): another process's rebuild puts
    /// a new file at the path, which this connection would never see.
    pub(crate) identity: Option<String>,
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
    pub(crate) generation: u64,
    /// The main connection has opened and synced this generation's file.
    pub(crate) ready: bool,
    /// This generation's file is an index an earlier run built, opened
    /// before the first catch-up ([`open_built`]): a read that waited
    /// [`EARLY_ANSWER_AFTER`] for that catch-up answers from it.
    pub(crate) built_at_start: bool,
    /// That index holds so many documents that its first catch-up cannot
    /// end within [`EARLY_ANSWER_AFTER`]: reads answer from it at once.
    pub(crate) built_large: bool,
    /// Idle read connections, each with what it remembered of the files
    /// its hits came from ([`Index`]'s caches: a hit whose file and the
    /// database did not change since is not checked again) — pooled
    /// whole, or every request would read and hash its hits' files anew.
    pub(crate) idle: Vec<Index>,
    /// Connections open outside the main slot and the idle pool (see
    /// [`Lease`]).
    pub(crate) leased: usize,
    /// Signalled whenever `leased` goes down.
    pub(crate) returned: std::sync::Arc<std::sync::Condvar>,
    /// When the main connection last brought the index in step.
    pub(crate) synced_at: Option<std::time::Instant>,
}

/// Idle read connections kept per process (2 cores; HTTP's worker pool).
pub(crate) const MAX_IDLE_READERS: usize = 4;

pub(crate) fn readers<'a>(kb: &Ix<'a>) -> std::sync::MutexGuard<'a, Readers> {
    kb.index_state
        .readers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The database file is about to be replaced: retire every read connection
/// and wait until none is open any more. The caller holds `kb.index_state.index`, so no
/// lease starts until the new file is ready (see [`Lease`]); a reader still
/// answering finds the generation moved, closes its connection and waits for
/// the main one.
pub(crate) fn retire_readers(kb: &Ix) {
    let mut r = readers(kb);
    r.generation += 1;
    r.ready = false;
    r.built_at_start = false;
    r.built_large = false;
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
pub(crate) struct Lease<'a> {
    pub(crate) kb: Ix<'a>,
    pub(crate) generation: u64,
    pub(crate) index: Option<Index>,
}

impl<'a> Lease<'a> {
    /// A read lease on the current file, if the main connection has made it
    /// ready; with an idle connection if one is pooled.
    /// `early`: also on an index an earlier run built that the first
    /// catch-up has not reached yet ([`open_built`]).
    pub(crate) fn reader(kb: &Ix<'a>, early: bool) -> Option<Lease<'a>> {
        let mut r = readers(kb);
        if !(r.ready || (early && r.built_at_start)) {
            return None;
        }
        r.leased += 1;
        Some(Lease {
            kb: *kb,
            generation: r.generation,
            index: r.idle.pop(),
        })
    }

    /// A lease for a connection of one's own (the doctor's freshness check),
    /// whether or not the main connection has the file open. Taken under
    /// `kb.index_state.index`, which every replacement of the file holds throughout.
    pub(crate) fn own(kb: &Ix<'a>) -> Lease<'a> {
        let _replacing = kb
            .index_state
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut r = readers(kb);
        r.leased += 1;
        Lease {
            kb: *kb,
            generation: r.generation,
            index: None,
        }
    }

    /// Whether the file this lease was taken on is still the current one.
    pub(crate) fn current(&self) -> bool {
        readers(&self.kb).generation == self.generation
    }

    /// Close the connection rather than pool it (it failed).
    pub(crate) fn discard(&mut self) {
        self.index = None;
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut r = readers(&self.kb);
        if let Some(index) = self.index.take() {
            if r.generation == self.generation && r.idle.len() < MAX_IDLE_READERS {
                r.idle.push(index);
            } else {
                // Close it before the lease ends, outside the lock.
                drop(r);
                drop(index);
                r = readers(&self.kb);
            }
        }
        r.leased -= 1;
        r.returned.notify_all();
    }
}

pub(crate) fn mark_ready(kb: &Ix) {
    let mut r = readers(kb);
    r.ready = true;
    r.synced_at = Some(std::time::Instant::now());
}

/// How long a read in a server waits for the keeper's first round (a
/// first build of a large KB takes seconds) before it is told to retry.
const FIRST_ROUND_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a server's read waits for the first catch-up before it
/// answers from an index an earlier run built, saying so ([`open_built`]):
/// a small knowledge base catches up well within it and answers current,
/// a million claims' first scan takes longer.
const EARLY_ANSWER_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// An index an earlier run built that is larger than this (bytes) answers
/// a server's first reads at once: its first catch-up takes far longer
/// than [`EARLY_ANSWER_AFTER`] (a million claims' `state.db` is about
/// 1 GB and its first scan about a minute), so waiting would only delay an
/// answer that says it is partial anyway. At 100,000 claims (about 100 MB)
/// the catch-up ends within the wait. The file's size, not a count: a
/// count of a million rows reads them (seconds on a cold cache).
const ANSWER_AT_ONCE_PAST: u64 = 512 * 1024 * 1024;

/// Run `f` on the index as the keeper last made it current — never
/// syncing, embedding or writing: catching up is the keeper's explicit
/// step ([`catch_up`]), taken by a one-shot command before it dispatches
/// and by a server's background thread. A read connection answers, so
/// reads never queue behind the main connection (which writers and the
/// watcher hold); the main connection answers only when no reader can (the
/// file was replaced while we read). In a process whose index the keeper
/// never made current, a server's read waits for its first round and any
/// other read is told to catch up first.
pub(crate) fn with_index<R>(kb: &Ix, f: impl Fn(&Index) -> Result<R>) -> Result<R> {
    let started = std::time::Instant::now();
    let until = started + FIRST_ROUND_WITHIN;
    loop {
        let early = started.elapsed() >= EARLY_ANSWER_AFTER || readers(kb).built_large;
        if let Some(lease) = Lease::reader(kb, early) {
            if let Some(answer) = with_reader(lease, &f) {
                say_if_catching_up(kb);
                return answer;
            }
            let slot = kb
                .index_state
                .index
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(open) = slot.as_ref() {
                let answer = f(&open.index);
                say_if_catching_up(kb);
                return answer;
            }
        }
        if kb.index_upkeep() != crate::index::IndexUpkeep::Background
            || std::time::Instant::now() >= until
        {
            return Err(not_caught_up());
        }
        crate::index::keeper::vectors::ask_for_upkeep(&kb.keep());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Open the `state.db` an earlier run built here before the first
/// catch-up (a million claims' freshness scan takes seconds), so a read
/// that waited [`EARLY_ANSWER_AFTER`] for that catch-up answers from it:
/// only a file that is there already, made here, with this schema and
/// documents in it — `open_in` empties any other, and an empty index
/// waits for the catch-up to build it. Reads answering early say so
/// ([`with_index`]); every hit is still checked against its file
/// ([`super::backed`]), so what changed since answers from the files or
/// not at all.
pub(crate) fn open_built(kb: &Ix) -> Result<bool> {
    if !kb.layout().index_db().exists() {
        return Ok(false);
    }
    let mut slot = kb
        .index_state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let open = open_in(kb, &mut slot)?;
    let built: bool = open
        .index
        .conn
        .query_row("SELECT EXISTS(SELECT 1 FROM docs)", [], |r| r.get(0))?;
    if built {
        let size = std::fs::metadata(kb.layout().index_db()).map_or(0, |m| m.len());
        // `ready` and `synced_at` wait for the catch-up.
        let mut r = readers(kb);
        r.built_at_start = true;
        r.built_large = size > ANSWER_AT_ONCE_PAST;
    }
    Ok(built)
}

/// Tell the call its answer came from an index not yet caught up with
/// the files (see [`open_built`]).
fn say_if_catching_up(kb: &Ix) {
    if readers(kb).synced_at.is_none() {
        kb.note_index_catching_up();
    }
}

pub(crate) use crate::index::keeper::not_caught_up;

/// Sync the index open in `slot` (opening it if needed) with the files: a
/// file another process put in its place is opened instead, and a one-shot
/// command whose files a live watcher keeps in step skips the scan
/// ([`super::watch`]).
pub(crate) fn bring_in_step(kb: &Ix, slot: &mut Option<OpenIndex>) -> Result<SyncStats> {
    drop_if_replaced(kb, slot);
    let open = open_in(kb, slot)?;
    let stats = if kb.trusts_watcher() && super::watch::answered(kb, open) {
        open.index.sync_admitted(kb)?;
        SyncStats::default()
    } else {
        open.index.sync(kb)?
    };
    open.synced_at = std::time::Instant::now();
    mark_ready(kb);
    Ok(stats)
}

/// Close the index in `slot` if `state.db` is now another file (deleted and
/// made again by another process; vouch's own rebuilds keep the file); the
/// next use opens the file that is there now. Readers of the old file are
/// retired first.
pub(crate) fn drop_if_replaced(kb: &Ix, slot: &mut Option<OpenIndex>) {
    let Some(open) = slot.as_ref() else { return };
    // Only for a file that is there: while another program swaps files
    // the path may be empty for a moment, and a file made here then would
    // be unlinked by it.
    let now = file_identity(&kb.layout().index_db());
    if open.identity.is_some() && now.is_some() && open.identity != now {
        *slot = None;
        retire_readers(kb);
    }
}

/// Answer through a read connection; `None` — the main connection answers
/// instead — if the index was replaced (rebuilt) while we read, since the
/// answer would come from the file being retired, or if the reader could not
/// open or failed: a reader only spares a request the wait, the main
/// connection is the one that opens, repairs and syncs the index.
pub(crate) fn with_reader<R>(
    mut lease: Lease,
    f: &impl Fn(&Index) -> Result<R>,
) -> Option<Result<R>> {
    if lease.index.is_none() {
        // Never create the file: only the main connection does, schema and
        // all. The lease keeps it from being unlinked while we read it.
        let flags =
            rusqlite::OpenFlags::default().difference(rusqlite::OpenFlags::SQLITE_OPEN_CREATE);
        let conn = open_db(&lease.kb, &lease.kb.layout().index_db(), flags)
            .and_then(|conn| {
                conn.busy_timeout(BUSY_TIMEOUT)?;
                conn.pragma_update(None, "query_only", true)?;
                Ok(conn)
            })
            .ok()?;
        lease.index = Some(Index::new(conn));
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
pub(crate) fn open_in<'a>(kb: &Ix, slot: &'a mut Option<OpenIndex>) -> Result<&'a mut OpenIndex> {
    if slot.is_none() {
        let index = Index::open_path(kb)?;
        *slot = Some(OpenIndex {
            index,
            synced_at: std::time::Instant::now()
                .checked_sub(kb.index_sync_interval())
                .unwrap_or_else(std::time::Instant::now),
            identity: file_identity(&kb.layout().index_db()),
        });
    }
    Ok(slot.as_mut().expect("index just opened"))
}

/// The keeper's explicit step: bring this process's index in step with
/// the files and the audit log (opening, or building, it if needed). A
/// one-shot command takes it once before it dispatches, where a live
/// watcher's word may spare the scan; a server's background thread takes
/// it every round, scanning without holding the main connection so
/// writers never wait for the scan. Nothing else syncs the index.
pub(crate) fn catch_up(kb: &Ix) -> Result<SyncStats> {
    let stored = {
        let mut slot = kb
            .index_state
            .index
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if kb.trusts_watcher() || slot.is_none() || !readers(kb).ready {
            return bring_in_step(kb, &mut slot);
        }
        drop_if_replaced(kb, &mut slot);
        open_in(kb, &mut slot)?.index.scan_meta()?
    };
    let dirs_only = kb.settings().retrieval.freshness == crate::settings::Freshness::Dirs;
    let scan = Scan::take(kb, &stored, dirs_only)?;
    let mut slot = kb
        .index_state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(open) = slot.as_mut() else {
        return bring_in_step(kb, &mut slot);
    };
    let stats = open.index.sync_scanned(kb, scan)?;
    open.synced_at = std::time::Instant::now();
    mark_ready(kb);
    Ok(stats)
}

/// Whether this process has the index open (and so keeps it in step itself).
pub(crate) fn is_open(state: &IndexState) -> bool {
    state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
}

/// After vouch wrote artifacts: update an index this process has open. An
/// index not open here catches up by stat on its next open.
pub(crate) fn after_write(kb: &Ix, written: &[Written]) {
    let mut slot = kb
        .index_state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(open) = slot.as_mut() else { return };
    let index = &open.index;
    let res = index.write_docs(kb, || {
        for w in written {
            let Some(doc) = written_doc(kb, w) else {
                // An approved delete: its row goes now, its vectors with
                // it (read-your-writes, as for what is written).
                let (kind, id) = w.key();
                index.delete(kind, id)?;
                crate::index::engine::VectorWrite::prune(index)?;
                continue;
            };
            let sig = file_of(kb, doc.kind, &doc.id)
                .ok()
                .and_then(|p| file_signature(&p))
                .unwrap_or((0, 0));
            let old = index.upsert(&doc, sig)?;
            index.refingerprint(doc.kind, &doc.id, old, sig)?;
        }
        Ok(())
    });
    // The write's audit event admits what it wrote.
    let res = res.and_then(|()| index.sync_admitted(kb));
    if let Err(e) = res {
        kb.warn(format!(
            "index: incremental update failed ({e}); it will resync"
        ));
        *slot = None;
    }
}

/// Build the index again from the files, in place. The file itself stays:
/// another process's connections (a server, a search running now) stay on
/// the one file, where they see the new tables, rather than on a file
/// unlinked from under them — which SQLite cannot survive once they open
/// the new file's `-wal` and `-shm` by name. Vectors are kept (keyed by
/// content and model) without their file signatures, so the first check
/// compares texts again and re-embeds only what changed. A file that
/// cannot be opened at all is replaced ([`Index::open_path`]).
pub(crate) fn rebuild(kb: &Ix) -> Result<RebuildResult> {
    let mut slot = kb
        .index_state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let path = kb.layout().index_db();
    // Built from the files by this process (a server's first sync) and
    // written by nothing else since ([`Index::as_built_here`]): it is what a rebuild would make, so a
    // rebuild asked for now only catches up (no second build).
    if let Some(open) = slot.as_mut()
        && open.identity.is_some()
        && open.identity == file_identity(&path)
        && open.index.as_built_here()?
    {
        // Every file stat-ed, whatever `retrieval.freshness` says: a file
        // rewritten in place is what a rebuild is asked to repair.
        open.index.sync_every_file(kb)?;
        open.synced_at = std::time::Instant::now();
        mark_ready(kb);
        return Ok(RebuildResult {
            ok: true,
            indexed: open.index.documents()?,
        });
    }
    *slot = None;
    retire_readers(kb);
    *kb.index_state
        .vectors
        .write()
        .unwrap_or_else(|e| e.into_inner()) = None;
    kb.index_state.changed(None);
    let mut index = Index::open_path(kb)?;
    // Every vector's signature goes with the tables (`vector_sigs`): each
    // is looked at again by its text.
    index.write(|| index.reset_schema(kb))?;
    crate::fail::point("index.rebuild.cleared");
    // A rebuild writes every page of the index: with SQLite's default 2 MB
    // page cache, b-tree pages are evicted and written again many times
    // over. 128 MiB for the rebuild only (at a million claims 64 MiB
    // still spilled and read back pages mid-load: 67.1 s against 59.9 s
    // for 256 MiB and about the same for 128, docs/benchmarks.md); the
    // connection then goes back to the default (servers keep it open).
    index.conn.pragma_update(None, "cache_size", -131072)?;
    let synced = index.sync(kb);
    index.conn.pragma_update(None, "cache_size", -2000)?;
    let stats = synced?;
    *slot = Some(OpenIndex {
        index,
        synced_at: std::time::Instant::now(),
        identity: file_identity(&path),
    });
    mark_ready(kb);
    Ok(RebuildResult {
        ok: true,
        indexed: stats.updated,
    })
}

#[cfg(test)]
mod readers_tests {
    use super::*;
    use crate::kb::Kb;
    use crate::retrieval::{SearchParams, search};
    use crate::store::Dir;
    use serde_json::json;

    fn claim(kb: &Kb, src: &str, text: &str) {
        crate::testing::test_claim(kb, src, text);
    }

    /// A fresh KB with one source registered.
    fn kb_with_source() -> (tempfile::TempDir, Kb, String) {
        let (dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "drills");
        (dir, kb, src)
    }

    /// Search while another request holds the main connection.
    fn search_beside(kb: &Kb, q: &str) -> Vec<String> {
        let _busy = crate::testing::sqlite(kb).index_state.index.lock().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::testing::claim_hits(kb, q)
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
        let (_dir, kb, src) = kb_with_source();
        claim(&kb, &src, "Failover drills run monthly");
        let first = search(
            &kb,
            SearchParams {
                query: "failover".into(),
                limit: None,
                kinds: None,
                backend: None,
            },
        )
        .unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        assert_eq!(
            readers(&crate::testing::sqlite(&kb)).idle.len(),
            1,
            "the reader went back to the pool"
        );

        rebuild(&crate::testing::sqlite(&kb)).unwrap();
        claim(&kb, &src, "Failover drills need two people");
        assert_eq!(
            search_beside(&kb, "failover").len(),
            2,
            "a reader on the replaced state.db answered"
        );
    }

    /// A reader goes back to the pool with what it learnt of its hits'
    /// files, so a request it serves next does not read and hash them
    /// again (it was pooled as a bare connection, and every search checked
    /// every hit from scratch).
    #[test]
    fn a_pooled_reader_remembers_what_its_hits_files_said() {
        let (_dir, kb, src) = kb_with_source();
        claim(&kb, &src, "Failover drills run monthly");
        // Files written within the last second are read again every time
        // (`backed::racy`): let the claim's and the log's age.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        let ix = crate::testing::sqlite(&kb);
        let matched = {
            let r = readers(&ix);
            assert_eq!(r.idle.len(), 1, "one reader served both");
            assert!(!r.idle[0].hashed.borrow().is_empty(), "its file's hash");
            r.idle[0].matches()
        };
        assert_eq!(matched.len(), 1, "the hit matched its file");

        // Bytes written to state.db without SQLite (the same bytes here)
        // move no `data_version`, but the file's change time: the hit is
        // checked against its file again, not taken as matched.
        let db = kb.layout().index_db();
        let bytes = std::fs::read(&db).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&db, &bytes).unwrap();
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        let again = readers(&ix).idle[0].matches();
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].0, matched[0].0, "no commit moved data_version");
        assert_ne!(again[0].1, matched[0].1, "matched again, at the new bytes");
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
        let (_dir, kb, src) = kb_with_source();
        claim(&kb, &src, "Failover drills run monthly");
        let count = |idx: &Index| -> Result<i64> {
            Ok(idx
                .conn
                .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))?)
        };
        // The main connection opens and syncs the file: readers may follow.
        let docs = with_index(&crate::testing::sqlite(&kb), count).unwrap();
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        // Another connection writes it: the index is no longer only what
        // this process built, so the rebuild below builds.
        rusqlite::Connection::open(kb.layout().index_db())
            .unwrap()
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('touched', '1')",
                [],
            )
            .unwrap();

        let (opened, reading) = std::sync::mpsc::channel();
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let wait = std::sync::Mutex::new(wait);
        let first = AtomicBool::new(true);
        std::thread::scope(|s| {
            let busy = crate::testing::sqlite(&kb)
                .index_state
                .index
                .lock()
                .unwrap();
            // A reader (the main connection is busy) holding a connection
            // it has not read through yet.
            let reader = s.spawn(|| {
                with_index(&crate::testing::sqlite(&kb), |idx| {
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
            let rebuilt = s.spawn(|| rebuild(&crate::testing::sqlite(&kb)));
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !rebuilt.is_finished(),
                "the rebuild replaced state.db under an open reader"
            );
            go.send(()).unwrap();
            assert_eq!(reader.join().unwrap().unwrap(), docs);
            rebuilt.join().unwrap().unwrap();
        });
        assert_eq!(readers(&crate::testing::sqlite(&kb)).leased, 0);
        claim(&kb, &src, "Failover drills need two people");
        assert_eq!(search_beside(&kb, "failover").len(), 2);
        assert_eq!(search_beside(&kb, "failover").len(), 2);
    }

    /// Reads never wait for the main connection: a writer holding it
    /// (updating the index under the KB lock) does not hold up a search,
    /// which still sees the approval the writer committed before. Reads
    /// never catch up either: before the keeper's first step a read is
    /// told to catch up; however old that step, a reader answers.
    #[test]
    fn a_fresh_index_answers_reads_while_a_writer_holds_the_main_connection() {
        let (_dir, kb, src) = kb_with_source();
        claim(&kb, &src, "Failover drills run monthly");
        // The keeper opened and synced the file (the claim's dispatch
        // caught up first): readers may follow.
        with_index(&crate::testing::sqlite(&kb), |_| Ok(())).unwrap();
        assert_eq!(search_beside(&kb, "failover").len(), 1);
        claim(&kb, &src, "Failover drills need two people");
        assert_eq!(
            search_beside(&kb, "failover").len(),
            2,
            "the approval committed before the read is seen"
        );
        // However long ago the keeper's step, a reader answers.
        readers(&crate::testing::sqlite(&kb)).synced_at = None;
        assert_eq!(search_beside(&kb, "failover").len(), 2);
    }

    /// An approval appended to the log after the `admitted` table was
    /// brought in step (a write in flight) still admits its object for a
    /// reader, which reads the tail itself; an object nothing admitted is
    /// marked. Nothing is written by the read.
    #[test]
    fn unaudited_marks_hold_while_the_admitted_table_lags_the_log() {
        let (_dir, kb, src) = kb_with_source();
        claim(&kb, &src, "Failover drills run monthly");
        let offset_before = |kb: &Kb| {
            with_index(&crate::testing::sqlite(kb), |idx| {
                idx.meta_value("audit:offset")
            })
            .unwrap()
        };
        let synced = offset_before(&kb);
        assert!(synced.is_some());
        // A proposal made, then approved (an approval lets in only what an
        // open proposal names).
        let mut evs = [
            kb.event("proposal.create", "claude", vec!["p-1".into()], json!({})),
            kb.event(
                "proposal.approve",
                "alice",
                vec!["p-1".into(), "admitted-in-the-tail".into()],
                json!({}),
            ),
        ];
        kb.append_audit(&mut evs).unwrap();
        let marks = with_index(&crate::testing::sqlite(&kb), |idx| {
            idx.unaudited(
                &crate::testing::sqlite(&kb),
                &[
                    (Dir::Claims, "admitted-in-the-tail"),
                    (Dir::Claims, "written-by-hand"),
                ],
                false,
            )
        })
        .unwrap();
        assert_eq!(
            marks,
            HashSet::from([(Dir::Claims, "written-by-hand".to_string())]),
            "the tail admits one, the other is marked"
        );
        assert_eq!(offset_before(&kb), synced, "the read wrote nothing");
    }

    /// An import in the log's unread tail that does not name its objects:
    /// the index cannot tell what is admitted. Marks are left off; asked
    /// strictly (a refusal rests on it) it says so, and the caller reads
    /// the log itself — which still finds the claim edited by hand.
    #[test]
    fn a_strict_question_is_told_when_the_index_cannot_tell() {
        let (_dir, kb, src) = kb_with_source();
        let id = crate::testing::test_claim(&kb, &src, "Failover drills run monthly");
        let object = [(Dir::Claims, id.as_str())];
        let ix = crate::testing::sqlite(&kb);
        let file = kb.layout().file(Dir::Claims, &id).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, text.replace("run monthly", "never run")).unwrap();
        assert_eq!(
            with_index(&ix, |idx| idx.unaudited(&ix, &object, false)).unwrap(),
            HashSet::from([(Dir::Claims, id.clone())]),
            "in step with the log: the edit is marked"
        );
        let mut ev = kb.event("bundle.import", "alice", vec!["x".into()], json!({}));
        kb.append_audit(std::slice::from_mut(&mut ev)).unwrap();
        let lenient = with_index(&ix, |idx| idx.unaudited(&ix, &object, false)).unwrap();
        assert!(lenient.is_empty(), "{lenient:?}");
        assert!(with_index(&ix, |idx| idx.unaudited(&ix, &object, true)).is_err());
        assert_eq!(
            crate::retrieval::unaudited_strictly(&kb, &object),
            HashSet::from([(Dir::Claims, id.clone())])
        );
    }
}
