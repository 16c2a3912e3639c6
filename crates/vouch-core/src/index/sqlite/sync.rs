//! Bringing `state.db` in step with the files: the scanned kinds applied
//! row by row (only changed files re-read, in row-id order), the files a
//! watcher named, and the per-kind fingerprints that let a scan skip a
//! kind. The scan itself is engine-agnostic ([`super::scan`]).

use super::*;
use crate::index::admission::{self, AdmissionStore};

/// Files read at once by a large sync (a rebuild reads them a slice at a
/// time while it writes the last).
pub(super) const LOAD_AT_ONCE: usize = 4096;

/// FTS5's `hashsize` (bytes of words pending before it writes a segment):
/// its default, and a bulk load's.
const DEFAULT_HASHSIZE: i64 = 1 << 20;
const BULK_HASHSIZE: i64 = 16 << 20;

/// A file to index: its kind, id and signature.
type Item = (&'static str, String, Sig);

impl Index {
    /// Bring the index in step with the files. Each kind's directory is
    /// scanned (one `fstatat` per file) and summed into a fingerprint; only a
    /// kind whose fingerprint moved is compared row by row, and only changed
    /// files are re-read. With `retrieval.freshness: dirs` a kind whose
    /// directory mtime has not moved is not scanned at all.
    pub(crate) fn sync(&mut self, kb: &Ix) -> Result<SyncStats> {
        let dirs_only = kb.settings().retrieval.freshness == crate::settings::Freshness::Dirs;
        let scan = Scan::take(kb, &self.scan_meta()?, dirs_only);
        match scan {
            Ok(scan) => self.sync_scanned(kb, scan),
            Err(e) => self.synced(Err(e)),
        }
    }

    /// [`Index::sync`] with the files already scanned (a background round
    /// scans without holding the main connection): what changed, then
    /// what the audit log appended.
    pub(crate) fn sync_scanned(&mut self, kb: &Ix, scan: Scan) -> Result<SyncStats> {
        let r = (|| {
            let stats = self.apply(kb, scan)?;
            self.sync_admitted(kb)?;
            Ok(stats)
        })();
        self.synced(r)
    }

    /// [`Index::sync`] stat-ing every file whatever `retrieval.freshness`
    /// says (a watcher that lost events cannot trust directory mtimes).
    /// Only the watcher (Linux) calls it.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn sync_every_file(&mut self, kb: &Ix) -> Result<SyncStats> {
        let r = (|| {
            let scan = Scan::take(kb, &self.scan_meta()?, false)?;
            let stats = self.apply(kb, scan)?;
            self.sync_admitted(kb)?;
            Ok(stats)
        })();
        self.synced(r)
    }

    /// What the last sync recorded of each kind's directory.
    pub(super) fn scan_meta(&self) -> Result<HashMap<String, ScanMeta>> {
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
    pub(super) fn apply(&mut self, kb: &Ix, scan: Scan) -> Result<SyncStats> {
        let stored = self.scan_meta()?;
        let Scan {
            kinds: scans,
            racy_after,
        } = scan;
        let mut changed: Vec<Item> = Vec::new();
        let mut removed: Vec<(&'static str, String)> = Vec::new();
        let mut new_meta: Vec<(String, String)> = Vec::new();
        let mut unstated = Unstated::default();
        for scan in scans {
            let key = format!("scan:{}", scan.kind);
            let old = stored.get(&key);
            let Some(files) = scan.files else { continue };
            let now = ScanMeta::of(scan.dir_mtime, &files);
            let racy = files.iter().any(|(_, (mtime, _))| *mtime >= racy_after);
            let same_files =
                old.is_some_and(|o| o.fingerprint == now.fingerprint && o.count == now.count);
            if !same_files || racy || !scan.stated {
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
                        Some(was) if scan.stated && was == sig && sig.0 < racy_after => {}
                        _ => changed.push((scan.kind, id, sig)),
                    }
                }
                removed.extend(known.into_keys().map(|id| (scan.kind, id)));
            }
            if !scan.stated {
                // Summed from the signatures its files' readers take.
                unstated.begin(scan.kind, scan.dir_mtime);
            } else if old != Some(&now) {
                new_meta.push((key, now.render()));
            }
        }
        // In row-id order, FTS5 and the docs table append instead of
        // splitting pages: a rebuild is about twice as fast.
        changed.sort_by_cached_key(|(kind, id, _)| stable_rowid(kind, id));
        // A racy file re-read as the index holds it is no change, and a
        // catch-up that finds only such files writes nothing: a small
        // change is read before the write starts, to know that. A large
        // one (a rebuild, a big pull) is read a slice at a time inside the
        // write, the next slice parsed while this one is written: memory
        // holds two slices' documents, not every document.
        let (ahead, changed) = if changed.len() <= LOAD_AT_ONCE {
            let docs = load_docs(kb, &changed);
            unstated.add(&changed, &docs);
            let loaded = self.unheld(docs, changed, &[])?;
            if loaded.is_empty() && removed.is_empty() && new_meta.is_empty() && unstated.is_empty()
            {
                return Ok(SyncStats::default());
            }
            (Some(loaded), Vec::new())
        } else {
            (None, changed)
        };
        // A large change reads the audit log on a thread of its own while
        // the files load and FTS5 merges, outside the write transaction (no
        // writer waits on it), and stores the rows after. The read starts
        // where the rows stood before the load; if another process moved
        // them meanwhile, `record_admission` stores nothing and the sync
        // after this reads again.
        let reading = match ahead {
            None => admission::reading(self, kb.audit_log())?,
            Some(_) => None,
        };
        std::thread::scope(|outer| -> Result<SyncStats> {
            let log_read = reading.map(|r| outer.spawn(move || r.read(kb.audit_log())));
            let loaded = self.write_changes(kb, ahead, changed, &removed, new_meta, unstated);
            // Joined on every path: a reader's panic stays its own. A read
            // that failed does not undo the load: the sync after it reads
            // the log again and reports what fails.
            let admitted = log_read.and_then(|r| r.join().ok()?.ok());
            let stats = loaded?;
            if let Some(change) = admitted {
                self.record_admission(change)?;
            }
            Ok(stats)
        })
    }

    /// Write a scan's changes in one transaction (the documents loaded
    /// `ahead`, or `changed` loaded a slice at a time), tell the vectors
    /// what moved, and merge FTS5's segments after a bulk load.
    fn write_changes(
        &self,
        kb: &Ix,
        ahead: Option<Vec<(Option<Doc>, Item)>>,
        changed: Vec<Item>,
        removed: &[(&'static str, String)],
        mut new_meta: Vec<(String, String)>,
        mut unstated: Unstated,
    ) -> Result<SyncStats> {
        let mut stats = SyncStats::default();
        // Documents whose content really changed (or went), for the vectors.
        let mut moved: Vec<(String, String)> = removed
            .iter()
            .map(|(k, id)| (k.to_string(), id.clone()))
            .collect();
        self.write_docs(kb, || -> Result<()> {
            for (kind, id) in removed {
                self.delete(kind, id)?;
                stats.removed += 1;
            }
            // Kinds of which no row exists, read inside this transaction:
            // nothing else writes before it ends, and a scan names each
            // file once, so their documents are inserted without a lookup.
            let empty = self.empty_kinds()?;
            let mut write = |loaded: Vec<(Option<Doc>, Item)>| -> Result<()> {
                for (doc, (kind, id, sig)) in loaded {
                    match doc {
                        Some(doc) => {
                            // A racy file re-read unchanged is no change.
                            if self.put(&doc, sig, empty.contains(&kind))? != Some(sig) {
                                moved.push((kind.to_string(), id));
                            }
                            stats.updated += 1;
                        }
                        None => {
                            self.delete(kind, &id)?;
                            moved.push((kind.to_string(), id));
                        }
                    }
                }
                Ok(())
            };
            match ahead {
                Some(loaded) => write(loaded)?,
                None => std::thread::scope(|s| -> Result<()> {
                    // FTS5 writes a segment each time `hashsize` bytes of
                    // words are pending and merges segments as it goes; a
                    // bulk load with 16 MiB pending instead of 1 makes
                    // far fewer to merge: loading a million claims' 1.3
                    // million documents into FTS5 alone took 26% fewer
                    // instructions (126 → 93 billion) for 17 MiB more
                    // peak memory. 64 MiB: 79 billion, 85 MiB more
                    // (docs/benchmarks.md). Set inside the transaction:
                    // a failed load takes it back.
                    self.fts_hashsize(BULK_HASHSIZE)?;
                    let mut slices = changed.chunks(LOAD_AT_ONCE).peekable();
                    let mut next = slices
                        .next()
                        .map(|c| s.spawn(move || (load_docs(kb, c), c)));
                    // The slice after the one loading is read ahead into
                    // the page cache, many files at a time, where it is
                    // not there already (`warm`).
                    let mut warming = slices.peek().map(|&c| s.spawn(move || warm(kb, c)));
                    while let Some(loading) = next.take() {
                        let (docs, slice) = loading
                            .join()
                            .map_err(|_| Error::internal("index: a file reader panicked"))?;
                        if let Some(w) = warming.take() {
                            let _ = w.join();
                        }
                        next = slices
                            .next()
                            .map(|c| s.spawn(move || (load_docs(kb, c), c)));
                        warming = slices.peek().map(|&c| s.spawn(move || warm(kb, c)));
                        unstated.add(slice, &docs);
                        write(self.unheld(docs, slice.to_vec(), &empty)?)?;
                    }
                    self.fts_hashsize(DEFAULT_HASHSIZE)?;
                    Ok(())
                })?,
            }
            new_meta.extend(unstated.metas());
            for (k, v) in &new_meta {
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
                    params![k, v],
                )?;
            }
            Ok(())
        })?;
        if !moved.is_empty() {
            kb.index_state.changed(Some(moved));
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

    /// The loaded documents paired with their items, without those the
    /// index already holds exactly so (a racy file read back unchanged).
    /// The `empty` kinds are known to hold no row: nothing to look up.
    /// Each item's signature becomes the one its reader took from the file
    /// it read (what the index stores with the document).
    fn unheld(
        &self,
        docs: Vec<Option<(Doc, Sig)>>,
        items: Vec<Item>,
        empty: &[&str],
    ) -> Result<Vec<(Option<Doc>, Item)>> {
        let mut out = Vec::with_capacity(items.len());
        for (doc, (kind, id, sig)) in docs.into_iter().zip(items) {
            let (doc, sig) = match doc {
                Some((doc, read)) => (Some(doc), read),
                None => (None, sig),
            };
            if let Some(d) = &doc
                && !empty.contains(&d.kind)
                && self.holds(d, sig)?
            {
                continue;
            }
            out.push((doc, (kind, id, sig)));
        }
        Ok(out)
    }

    /// Set FTS5's `hashsize` (stored in its config, so set back after).
    fn fts_hashsize(&self, bytes: i64) -> Result<()> {
        self.conn
            .execute("INSERT INTO fts(fts, rank) VALUES('hashsize', ?1)", [bytes])?;
        Ok(())
    }

    /// The scanned kinds of which the index holds no row.
    fn empty_kinds(&self) -> Result<Vec<&'static str>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT 1 FROM docs WHERE kind=?1 LIMIT 1")?;
        let mut empty = Vec::new();
        for (kind, _) in KINDS {
            if !stmt.exists([kind])? {
                empty.push(*kind);
            }
        }
        Ok(empty)
    }

    /// Re-read just these documents' files — the ones a watcher was told
    /// changed — instead of scanning every file: each is indexed again if
    /// it parses and dropped if it is gone or does not, whatever its
    /// signature says (the kernel said it changed). Only the watcher
    /// (Linux) calls it.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn apply_changed(
        &self,
        kb: &Ix,
        mut items: Vec<(&'static str, String)>,
    ) -> Result<SyncStats> {
        let mut stats = SyncStats::default();
        if items.is_empty() {
            return Ok(stats);
        }
        items.sort_by_cached_key(|(kind, id)| stable_rowid(kind, id));
        let mut moved: Vec<(String, String)> = Vec::new();
        self.write_docs(kb, || -> Result<()> {
            for (kind, id) in &items {
                let sig = file_of(kb, kind, id).ok().and_then(|p| file_signature(&p));
                let doc = sig.and_then(|_| load_doc(kb, kind, id));
                let old = match (&doc, sig) {
                    (Some(doc), Some(sig)) => {
                        stats.updated += 1;
                        self.upsert(doc, sig)?
                    }
                    _ => {
                        stats.removed += 1;
                        self.delete(kind, id)?
                    }
                };
                // The scan's fingerprint counts every file, parseable or not.
                self.adjust_fingerprint(kind, id, old, sig)?;
                moved.push((kind.to_string(), id.clone()));
            }
            Ok(())
        })?;
        kb.index_state.changed(Some(moved));
        Ok(stats)
    }

    /// Keep a kind's stored fingerprint in step with a file vouch just wrote,
    /// so the next scan does not mistake our own write for an outside change.
    pub(super) fn refingerprint(
        &self,
        kind: &str,
        id: &str,
        old: Option<Sig>,
        new: Sig,
    ) -> Result<()> {
        self.adjust_fingerprint(kind, id, old, Some(new))
    }

    /// Move a kind's stored fingerprint from a file's old signature (`None`:
    /// it was not indexed) to its new one (`None`: it is gone). An old
    /// signature the index never held (a file that did not parse) cannot be
    /// taken out: the fingerprint then misses and the next scan compares
    /// that kind row by row, which is slower but exact.
    fn adjust_fingerprint(
        &self,
        kind: &str,
        id: &str,
        old: Option<Sig>,
        new: Option<Sig>,
    ) -> Result<()> {
        let key = format!("scan:{kind}");
        let value: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key=?1", [&key], |r| r.get(0))
            .optional()?;
        let Some(mut meta) = value.as_deref().and_then(ScanMeta::parse) else {
            return Ok(());
        };
        if let Some(old) = old {
            meta.take(id, old);
        }
        if let Some(new) = new {
            meta.add(id, new);
        }
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
            params![key, meta.render()],
        )?;
        Ok(())
    }
}

/// Whether a document's file parses (without warning when it does not).
pub(super) fn parses(kb: &Ix, kind: &str, id: &str) -> bool {
    match kind {
        "claim" => matches!(kb.load::<Claim>(id), Ok(Some(_))),
        "page" => matches!(kb.load::<Page>(id), Ok(Some(_))),
        "entity" => matches!(kb.load::<Entity>(id), Ok(Some(_))),
        "relation" => matches!(kb.load::<Relation>(id), Ok(Some(_))),
        _ => matches!(kb.load_source(id), Ok(Some(_))),
    }
}

/// Files read ahead at once by [`warm`]: a read that waits on the disk
/// costs a core nothing, and a disk answers many at once much sooner than
/// one after another.
const WARM_THREADS: usize = 16;
/// The files [`warm`] reads first, one after another, timing them.
const WARM_SAMPLE: usize = 32;
/// Read this fast on average, the sample says the page cache holds the
/// files (a cached read of a small file takes a few microseconds; one from
/// a disk, tens to hundreds).
const CACHED_READ: std::time::Duration = std::time::Duration::from_micros(20);

/// Read `items`' files ahead into the page cache, [`WARM_THREADS`] at a
/// time, unless a sample of them reads as cached. A rebuild's readers,
/// two threads parsing, would otherwise wait on the disk for each file in
/// turn: after a reboot, a million claims' files took a rebuild from
/// under a minute to over a hundred seconds. What is read is dropped (the
/// readers read it again, from the cache); a file that fails to read is
/// its reader's to report.
fn warm(kb: &Ix, items: &[Item]) {
    warm_unless_cached(kb, items, CACHED_READ)
}

/// [`warm`], taking the files as cached when the sample reads faster than
/// `cached` a file.
fn warm_unless_cached(kb: &Ix, items: &[Item], cached: std::time::Duration) {
    let read = |(kind, id, _): &Item| {
        if let Ok(path) = file_of(kb, kind, id) {
            let _ = kb.read_file(&path);
        }
    };
    let (sample, rest) = items.split_at(items.len().min(WARM_SAMPLE));
    let started = std::time::Instant::now();
    sample.iter().for_each(read);
    if rest.is_empty() || started.elapsed() < cached * sample.len() as u32 {
        return;
    }
    std::thread::scope(|s| {
        for first in 0..WARM_THREADS {
            s.spawn(move || rest.iter().skip(first).step_by(WARM_THREADS).for_each(read));
        }
    });
}

/// Parse changed files on two threads (YAML parsing dominates a rebuild),
/// each with the signature of the file read.
pub(super) fn load_docs(kb: &Ix, items: &[Item]) -> Vec<Option<(Doc, Sig)>> {
    let load = |(k, id, _): &Item| load_doc_signed(kb, k, id);
    if items.len() < 512 {
        return items.iter().map(load).collect();
    }
    let mid = items.len() / 2;
    let (a, b) = items.split_at(mid);
    std::thread::scope(|s| {
        let h = s.spawn(|| b.iter().map(load).collect::<Vec<_>>());
        let mut out: Vec<Option<(Doc, Sig)>> = a.iter().map(load).collect();
        out.extend(h.join().unwrap_or_default());
        out
    })
}

/// The fingerprints of the kinds a scan listed by name only
/// ([`KindScan::stated`]), summed from the signatures their files' readers
/// took. A file that did not load (it does not parse, or went) adds the
/// signature `(0, 0)`: a stat of its name now could describe a file
/// written after the read and hide it from every later sync, so the
/// kind's fingerprint is made to miss instead, and the next sync compares
/// its rows once and records what a stating scan finds.
#[derive(Default)]
pub(super) struct Unstated(Vec<(&'static str, ScanMeta)>);

impl Unstated {
    fn begin(&mut self, kind: &'static str, dir_mtime: i64) {
        self.0.push((kind, ScanMeta::of(dir_mtime, &[])));
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn add(&mut self, items: &[Item], docs: &[Option<(Doc, Sig)>]) {
        if self.0.is_empty() {
            return;
        }
        for ((kind, id, _), doc) in items.iter().zip(docs) {
            let Some((_, meta)) = self.0.iter_mut().find(|(k, _)| k == kind) else {
                continue;
            };
            meta.add(id, doc.as_ref().map_or((0, 0), |(_, sig)| *sig));
        }
    }

    fn metas(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.0
            .iter()
            .map(|(kind, meta)| (format!("scan:{kind}"), meta.render()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::write_claim_file;

    fn claims(kb: &crate::kb::Kb) -> i64 {
        with_index(&crate::testing::sqlite(kb), |idx| {
            Ok(idx
                .conn
                .query_row("SELECT count(*) FROM docs WHERE kind = 'claim'", [], |r| {
                    r.get(0)
                })?)
        })
        .unwrap()
    }

    /// A sync of more files than it reads at once (a rebuild, a large
    /// pull) reads them a slice at a time while it writes: every file is
    /// indexed once, and what changed after is caught up the same way.
    #[test]
    fn a_large_sync_indexes_every_file_a_slice_at_a_time() {
        let (_dir, kb) = crate::testing::test_kb();
        let n = 2 * LOAD_AT_ONCE + 7;
        for i in 0..n {
            write_claim_file(&kb, &format!("c-{i}"), &format!("drill number w{i} passed"));
        }
        kb.index().catch_up(&kb).unwrap();
        assert_eq!(claims(&kb), n as i64);
        // The bulk load's FTS5 setting does not outlive it.
        let hashsize: i64 = with_index(&crate::testing::sqlite(&kb), |idx| {
            Ok(idx
                .conn
                .query_row("SELECT v FROM fts_config WHERE k = 'hashsize'", [], |r| {
                    r.get(0)
                })?)
        })
        .unwrap();
        assert_eq!(hashsize, DEFAULT_HASHSIZE);
        let ids = |q: &str| -> Vec<String> {
            crate::testing::claim_hits(&kb, q)
                .into_iter()
                .map(|h| h.id)
                .collect()
        };
        assert_eq!(ids("w0"), ["c-0"]);
        assert_eq!(ids(&format!("w{}", n - 1)), [format!("c-{}", n - 1)]);

        // Out of the 2 s racy window, then one file edited, one gone.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        write_claim_file(&kb, "c-5", "drill number moved elsewhere");
        std::fs::remove_file(kb.layout().file(crate::store::Dir::Claims, "c-6").unwrap()).unwrap();
        kb.index().catch_up(&kb).unwrap();
        assert_eq!(claims(&kb), n as i64 - 1);
        assert_eq!(ids("elsewhere"), ["c-5"]);
        assert!(ids("w5").is_empty() && ids("w6").is_empty());
    }

    /// A kind no scan has recorded (after a rebuild) is listed by name
    /// only; its readers take each file's signature from the file they
    /// opened, and its recorded fingerprint is the one a scan stating
    /// every file finds, so the next sync compares no row. Where a file
    /// did not load, the fingerprint misses until a sync has compared the
    /// kind's rows and recorded a stating scan's.
    #[test]
    fn a_kind_listed_by_name_records_the_fingerprint_a_stating_scan_finds() {
        let (_dir, kb) = crate::testing::test_kb();
        let src = crate::testing::test_source(&kb, "notes");
        crate::testing::test_claim(&kb, &src, "drills run on mondays");
        for i in 0..5 {
            write_claim_file(&kb, &format!("c-{i}"), &format!("drill number w{i} passed"));
        }
        let claims_dir = Some(crate::store::Dir::Claims);
        let bad = kb
            .layout()
            .file(crate::store::Dir::Claims, "c-bad")
            .unwrap();
        std::fs::write(&bad, "id: [unclosed\n").unwrap();
        kb.index().catch_up(&kb).unwrap();
        // Written by another connection: the next rebuild is a real one.
        rusqlite::Connection::open(kb.layout().index_db())
            .unwrap()
            .execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('touched', '1')",
                [],
            )
            .unwrap();
        kb.index().rebuild(&kb).unwrap();
        let ix = crate::testing::sqlite(&kb);
        let stating = |dir: Option<crate::store::Dir>| -> (u64, usize) {
            let files = crate::index::keeper::scan::scan_kind(&kb, dir, true).unwrap();
            let m = ScanMeta::of(0, &files);
            (m.fingerprint, m.count)
        };
        let recorded = |kind: &str| -> (u64, usize) {
            let stored = with_index(&ix, |idx| idx.scan_meta()).unwrap();
            let m = stored[&format!("scan:{kind}")];
            (m.fingerprint, m.count)
        };
        assert_eq!(recorded("claim").1, 7, "six claims and the bad file");
        assert_ne!(
            recorded("claim"),
            stating(claims_dir),
            "missing, for the bad file"
        );
        for (kind, dir) in KINDS.iter().filter(|(k, _)| *k != "claim") {
            assert_eq!(recorded(kind), stating(*dir), "{kind}");
        }
        // Each row holds its file's signature.
        for (kind, dir) in KINDS {
            for (id, sig) in crate::index::keeper::scan::scan_kind(&kb, *dir, true).unwrap() {
                let row: Option<Sig> = with_index(&ix, |idx| {
                    Ok(idx
                        .conn
                        .query_row(
                            "SELECT mtime_ns, size FROM docs WHERE kind = ?1 AND id = ?2",
                            [kind, &id.as_str()],
                            |r| Ok((r.get(0)?, r.get(1)?)),
                        )
                        .optional()?)
                })
                .unwrap();
                assert!(row.is_none() || row == Some(sig), "{kind} {id}");
            }
        }
        assert_eq!(claims(&kb), 6);
        // The next sync compares the claims' rows and records what a
        // stating scan finds.
        kb.index().catch_up(&kb).unwrap();
        assert_eq!(recorded("claim"), stating(claims_dir));
        // What the rebuild's scan was: names only.
        let names = crate::index::keeper::scan::Scan::take(&kb, &HashMap::new(), false).unwrap();
        for scan in &names.kinds {
            let files = scan.files.as_ref().unwrap();
            assert!(!scan.stated && files.iter().all(|(_, sig)| *sig == (0, 0)));
        }
    }
}

#[cfg(all(test, unix))]
mod warm_tests {
    use super::*;
    use crate::store::Dir;
    use std::time::Duration;

    /// Reading ahead reads what the readers would, and no more: never
    /// through a link (one to an endless device), never waiting on a
    /// FIFO a clone planted under a claim's name.
    #[test]
    fn reading_ahead_never_follows_a_link_nor_waits_on_a_fifo() {
        let (dir, kb) = crate::testing::test_kb();
        let claims = kb.layout().dir(Dir::Claims);
        std::fs::create_dir_all(&claims).unwrap();
        let mut items: Vec<Item> = Vec::new();
        for i in 0..100 {
            std::fs::write(claims.join(format!("c{i}.yaml")), "id: c\n").unwrap();
            items.push(("claim", format!("c{i}"), (0, 0)));
        }
        let fifo = claims.join("c-fifo.yaml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        std::os::unix::fs::symlink("/dev/zero", claims.join("c-zero.yaml")).unwrap();
        for id in ["c-fifo", "c-zero", "c-missing"] {
            items.insert(50, ("claim", id.to_string(), (0, 0)));
        }
        let (done, returned) = std::sync::mpsc::channel();
        // On a thread of its own: a read that hangs fails the test instead
        // of hanging it.
        std::thread::spawn(move || {
            let state = IndexState::default();
            warm_unless_cached(&Ix::new(&kb, &state), &items, Duration::ZERO);
            let _ = done.send(());
            drop(dir);
        });
        returned
            .recv_timeout(Duration::from_secs(30))
            .expect("reading ahead returned");
    }
}
