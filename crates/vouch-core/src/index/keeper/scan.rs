//! The freshness scan, written once for every engine: which files under
//! `.vouch/` changed since the index last looked, from fingerprinted
//! directory scans (one `fstatat` a file; a kind whose fingerprint did not
//! move is not compared row by row). An engine stores what a scan saw of
//! each kind ([`ScanMeta`]) and applies the changes.

use crate::error::{Error, Result};
use crate::store::Dir;
use crate::stored::Store;
use std::collections::HashMap;
use std::path::PathBuf;

/// The kinds that have documents, and where their files are.
pub(crate) const KINDS: &[(&str, Option<Dir>)] = &[
    ("claim", Some(Dir::Claims)),
    ("page", Some(Dir::Pages)),
    ("entity", Some(Dir::Entities)),
    ("relation", Some(Dir::Relations)),
    ("source", None),
];

pub(crate) use crate::index::engine::Sig;

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
    /// A directory's files summed: what a scan that stated each one records.
    pub(crate) fn of(dir_mtime: i64, files: &[(String, Sig)]) -> ScanMeta {
        let mut meta = ScanMeta {
            dir_mtime,
            fingerprint: 0,
            count: 0,
        };
        for (id, sig) in files {
            meta.add(id, *sig);
        }
        meta
    }
    /// One more file in the sum.
    pub(crate) fn add(&mut self, id: &str, sig: Sig) {
        self.fingerprint = self.fingerprint.wrapping_add(entry_hash(id, sig));
        self.count += 1;
    }
    /// One file fewer in the sum.
    pub(crate) fn take(&mut self, id: &str, sig: Sig) {
        self.fingerprint = self.fingerprint.wrapping_sub(entry_hash(id, sig));
        self.count = self.count.saturating_sub(1);
    }
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

fn entry_hash(id: &str, sig: Sig) -> u64 {
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
        kb: &Store,
        stored: &HashMap<String, ScanMeta>,
        dirs_only: bool,
    ) -> Result<Scan> {
        // A file or directory modified within `RACY_NS` of this scan may change
        // again within the same timestamp tick; it is never trusted unread.
        let racy_after = crate::store::racy_after();
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
    /// Whether `files` hold each file's signature. Not for a kind no scan
    /// has recorded (a rebuild, a first sync): every one of its files is
    /// read anyway, and the reader takes the signature from the file it
    /// opened — an `fstatat` of each name first was most of the
    /// scan's 6 s before a million-claim rebuild. Each is then `(0, 0)`.
    pub(crate) stated: bool,
}

pub(crate) fn kind_dir(kb: &Store, dir: Option<Dir>) -> PathBuf {
    match dir {
        Some(d) => kb.layout().dir(d),
        None => kb.layout().sources_dir(),
    }
}

/// Directory entries read, and stat-ed, at a time: a million claims' entries
/// held at once were about 100 MiB of a first catch-up's peak.
/// (Small in tests, so one folder spans several parts.)
const ENTRIES_AT_A_TIME: usize = if cfg!(test) { 4_500 } else { 65_536 };

/// Every file of one kind with its signature, one `fstatat` each (relative
/// to the open directory, so no path is resolved); large directories are
/// read a part at a time, each part stat-ed on two threads. Not `stated`:
/// the names only, each with signature `(0, 0)` (a claim's entry is a file
/// by the directory's own record of its type; a source's folder is
/// listed without a look at its `meta.yaml`, which its reader makes).
pub(crate) fn scan_kind(kb: &Store, dir: Option<Dir>, stated: bool) -> Result<Vec<(String, Sig)>> {
    let path = kind_dir(kb, dir);
    let mut listing = match std::fs::read_dir(&path) {
        Ok(listing) => listing,
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
                if !stated {
                    // A link is never followed (store::nofollow): not a document.
                    return entry
                        .file_type()
                        .is_ok_and(|t| t.is_file())
                        .then_some((id, (0, 0)));
                }
                (id, entry.metadata().ok()?)
            }
            None => {
                if !crate::ids::is_source_id(name) {
                    return None;
                }
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    return None;
                }
                if !stated {
                    return Some((name.to_string(), (0, 0)));
                }
                let meta = std::fs::symlink_metadata(kb.layout().source_meta(name).ok()?).ok()?;
                (name.to_string(), meta)
            }
        };
        meta.is_file()
            .then(|| (id, (mtime_ns(&meta), meta.len() as i64)))
    };
    let mut out: Vec<(String, Sig)> = Vec::new();
    loop {
        // A listing that fails part way is an error, not a shorter folder:
        // the files not listed would read as deleted.
        let entries: Vec<std::fs::DirEntry> = listing
            .by_ref()
            .take(ENTRIES_AT_A_TIME)
            .collect::<std::io::Result<_>>()
            .map_err(|e| Error::io(&path, e))?;
        if entries.len() < 4096 {
            out.extend(entries.iter().filter_map(one));
        } else {
            let (a, b) = entries.split_at(entries.len() / 2);
            std::thread::scope(|s| {
                let other = s.spawn(|| b.iter().filter_map(one).collect::<Vec<_>>());
                out.extend(a.iter().filter_map(one));
                out.extend(
                    other
                        .join()
                        .map_err(|_| Error::internal("index: a scanning thread panicked"))?,
                );
                Ok::<(), Error>(())
            })?;
        }
        if entries.len() < ENTRIES_AT_A_TIME {
            return Ok(out);
        }
    }
}

/// Scan every kind.
pub(crate) fn scan_all(
    kb: &Store,
    stored: &HashMap<String, ScanMeta>,
    dirs_only: bool,
    racy_after: i64,
) -> Result<Vec<KindScan>> {
    let one = |kind: &'static str, dir: Option<Dir>| -> Result<KindScan> {
        let dir_mtime = std::fs::metadata(kind_dir(kb, dir))
            .map(|m| mtime_ns(&m))
            .unwrap_or(0);
        let recorded = stored.get(&format!("scan:{kind}"));
        let unmoved = recorded.is_some_and(|m| m.dir_mtime == dir_mtime && dir_mtime < racy_after);
        let stated = recorded.is_some();
        let files = if dirs_only && unmoved {
            None
        } else {
            Some(scan_kind(kb, dir, stated)?)
        };
        Ok(KindScan {
            kind,
            dir_mtime,
            files,
            stated,
        })
    };
    KINDS.iter().map(|(kind, dir)| one(kind, *dir)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of several parts, each large enough for two threads: every
    /// document is found once, with its length; what is not one is not.
    #[test]
    fn a_folder_read_in_parts_finds_every_file_once() {
        let (_dir, kb) = crate::testing::test_kb();
        let claims = kb.layout().dir(Dir::Claims);
        std::fs::create_dir_all(&claims).unwrap();
        let n = ENTRIES_AT_A_TIME * 2 + 123;
        for i in 0..n {
            std::fs::write(claims.join(format!("c{i}.yaml")), "x".repeat(i % 7)).unwrap();
        }
        std::fs::write(claims.join("notes.txt"), "").unwrap();
        std::fs::create_dir(claims.join("c-dir.yaml")).unwrap();
        std::os::unix::fs::symlink(claims.join("c0.yaml"), claims.join("c-link.yaml")).unwrap();
        for stated in [true, false] {
            let found = scan_kind(&kb, Some(Dir::Claims), stated).unwrap();
            assert_eq!(found.len(), n);
            let by_id: HashMap<String, Sig> = found.into_iter().collect();
            assert_eq!(by_id.len(), n, "each file once");
            for i in 0..n {
                let want = if stated { (i % 7) as i64 } else { 0 };
                assert_eq!(by_id[&format!("c{i}")].1, want, "c{i}");
            }
        }
    }
}
