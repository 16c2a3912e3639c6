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

pub(crate) use crate::index::keeper::scan::*;

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
        for (id, sig) in scan_kind(kb, *dir, true)? {
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
