//! Freshness: which files changed since the index last looked, from
//! fingerprinted directory scans (see the module docs of `fts5`).

use super::*;

/// A positive row id from the first 8 bytes of sha256(kind, id).
pub(crate) fn stable_rowid(kind: &str, id: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{kind}\0{id}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) >> 2) as i64 + 1
}

/// A sync that changes at least this many documents merges the FTS segments.
pub(crate) const OPTIMIZE_AFTER: usize = 5000;

/// A file's change signature: (mtime in ns, size).
pub(crate) type Sig = (i64, i64);

/// File timestamps tick coarsely (often 1-4 ms), so a second write in the
/// same tick keeps the mtime. Anything modified this recently is re-read
/// rather than trusted by signature (git's "racy" rule).
pub(crate) const RACY_NS: i64 = 2_000_000_000;

/// What the last sync saw of one kind's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ScanMeta {
    pub(crate) dir_mtime: i64,
    /// Wrapping sum of [`entry_hash`] over the kind's files: order-free, and
    /// cheap to adjust for one file.
    pub(crate) fingerprint: u64,
    pub(crate) count: usize,
}

impl ScanMeta {
    pub(crate) fn parse(v: &str) -> Option<ScanMeta> {
        let mut it = v.split(';');
        Some(ScanMeta {
            dir_mtime: it.next()?.parse().ok()?,
            fingerprint: u64::from_str_radix(it.next()?, 16).ok()?,
            count: it.next()?.parse().ok()?,
        })
    }
    pub(crate) fn render(&self) -> String {
        format!(
            "{};{:016x};{}",
            self.dir_mtime, self.fingerprint, self.count
        )
    }
}

pub(crate) fn entry_hash(id: &str, sig: Sig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (id, sig).hash(&mut h);
    h.finish()
}

pub(crate) use crate::store::mtime_ns;

/// The file system's side of a sync; taken without holding the index.
pub(crate) struct Scan {
    pub(crate) kinds: Vec<KindScan>,
    /// Files modified after this (ns since the epoch) are re-read regardless.
    pub(crate) racy_after: i64,
}

impl Scan {
    pub(crate) fn take(
        kb: &Ix,
        stored: &HashMap<String, ScanMeta>,
        dirs_only: bool,
    ) -> Result<Scan> {
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
pub(crate) struct KindScan {
    pub(crate) kind: &'static str,
    pub(crate) dir_mtime: i64,
    pub(crate) files: Option<Vec<(String, Sig)>>,
}

pub(crate) fn kind_dir(kb: &Store, dir: Option<Dir>) -> PathBuf {
    match dir {
        Some(d) => kb.layout().dir(d),
        None => kb.layout().sources_dir(),
    }
}

/// Every file of one kind with its signature, one `fstatat` each (relative
/// to the open directory, so no path is resolved); large directories are
/// stat-ed on two threads.
pub(crate) fn scan_kind(kb: &Ix, dir: Option<Dir>) -> Result<Vec<(String, Sig)>> {
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
pub(crate) fn scan_all(
    kb: &Ix,
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

pub(crate) type Signatures = HashMap<(String, String), (i64, i64)>;

pub(crate) type Changed = Vec<(&'static str, String, (i64, i64))>;

/// What the index recorded for each document: (mtime, size) of its file.
pub(crate) fn indexed_signatures(conn: &Connection) -> Result<Signatures> {
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
pub(crate) fn changed_files(kb: &Ix, known: &mut Signatures) -> Result<Changed> {
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

pub(crate) fn freshness(kb: &Ix) -> Result<Option<Freshness>> {
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
