//! Bringing `state.db` in step with the files: the scanned kinds applied
//! row by row (only changed files re-read, in row-id order), the files a
//! watcher named, and the per-kind fingerprints that let a scan skip a
//! kind. The scan itself is engine-agnostic ([`super::scan`]).

use super::*;

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
        // In row-id order, FTS5 and the docs table append instead of
        // splitting pages: a rebuild is about twice as fast.
        changed.sort_by_cached_key(|(kind, id, _)| stable_rowid(kind, id));
        // A racy file re-read as the index holds it is no change, and a
        // catch-up that finds only such files writes nothing.
        let mut docs = Vec::with_capacity(changed.len());
        let mut kept = Vec::with_capacity(changed.len());
        for (doc, item) in load_docs(kb, &changed).into_iter().zip(changed) {
            if let Some(d) = &doc
                && self.holds(d, item.2)?
            {
                continue;
            }
            docs.push(doc);
            kept.push(item);
        }
        let changed = kept;
        if changed.is_empty() && removed.is_empty() && new_meta.is_empty() {
            return Ok(stats);
        }
        // Documents whose content really changed (or went), for the vectors.
        let mut moved: Vec<(String, String)> = removed
            .iter()
            .map(|(k, id)| (k.to_string(), id.clone()))
            .collect();
        self.write_docs(kb, || -> Result<()> {
            for (kind, id) in &removed {
                self.delete(kind, id)?;
                stats.removed += 1;
            }
            for (doc, (kind, id, sig)) in docs.into_iter().zip(&changed) {
                match doc {
                    Some(doc) => {
                        // A racy file re-read unchanged is no change.
                        if self.upsert(&doc, *sig)? != Some(*sig) {
                            moved.push((kind.to_string(), id.clone()));
                        }
                        stats.updated += 1;
                    }
                    None => {
                        self.delete(kind, id)?;
                        moved.push((kind.to_string(), id.clone()));
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
            meta.fingerprint = meta.fingerprint.wrapping_sub(entry_hash(id, old));
            meta.count = meta.count.saturating_sub(1);
        }
        if let Some(new) = new {
            meta.fingerprint = meta.fingerprint.wrapping_add(entry_hash(id, new));
            meta.count += 1;
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

/// Parse changed files on two threads (YAML parsing dominates a rebuild).
pub(super) fn load_docs(kb: &Ix, items: &[(&'static str, String, (i64, i64))]) -> Vec<Option<Doc>> {
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
