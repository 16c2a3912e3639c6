//! Whether what the index serves is what the files say. `state.db` is
//! derived and anyone who can write the folder can write it: a row planted
//! in the live file (same file, so its identity holds) for a page no file
//! holds, or with words its file does not say, would be served as that
//! page. Before a hit is served its row is checked against its file: the
//! file must be there and derive the row's text, status and confidence.
//! What a file derives is remembered by its signature and inode change
//! time, so a file is read again only when it changed; a hit costs two
//! lookups by key, one `lstat` and hashing its indexed text.

use super::*;
use crate::model::DocKind;

/// What a document's row says: its text, status and confidence, hashed.
fn fingerprint(title: &str, body: &str, status: Option<&str>, confidence: Option<f64>) -> String {
    let mut h = Vec::with_capacity(title.len() + body.len() + 64);
    for part in [title, "\u{0}", body, "\u{0}", status.unwrap_or(""), "\u{0}"] {
        h.extend_from_slice(part.as_bytes());
    }
    h.extend_from_slice(
        &confidence
            .map(f64::to_bits)
            .unwrap_or(u64::MAX)
            .to_le_bytes(),
    );
    crate::ids::sha256_hex(&h)
}

/// The fingerprint of the document its file derives now, by the file's
/// signature and change time (`None`: no regular file, or unreadable).
pub(crate) type Derived = ((Sig, i64), String);

impl Index {
    /// Why the row of (`kind`, `id`) is not what its file says, if it is
    /// not: no file holds it, or the file derives other text. `None` for a
    /// row that is backed, and for a document the index has no row of
    /// (a vector without a row is judged by its file alone).
    pub(crate) fn unbacked_row(&self, kb: &Ix, kind: &str, id: &str) -> Result<Option<String>> {
        let Ok(path) = file_of(kb, kind, id) else {
            return Ok(Some("its id is not a file name".into()));
        };
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Ok(Some("no file holds it".into()));
        };
        if !meta.is_file() {
            return Ok(Some("no file holds it".into()));
        }
        let row: Option<(i64, Option<String>, Option<f64>)> = self
            .conn
            .prepare_cached("SELECT rowid, status, confidence FROM docs WHERE kind=?1 AND id=?2")?
            .query_row(params![kind, id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let Some((rowid, status, confidence)) = row else {
            return Ok(None);
        };
        let text: Option<(String, String)> = self
            .conn
            .prepare_cached("SELECT title, body FROM fts WHERE rowid = ?1")?
            .query_row([rowid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let Some((title, body)) = text else {
            return Ok(Some("its row has no text".into()));
        };
        let indexed = fingerprint(&title, &body, status.as_deref(), confidence);
        let sig = ((mtime_ns(&meta), meta.len() as i64), changed_ns(&path));
        let key = (kind.to_string(), id.to_string());
        let cached = self
            .backed
            .borrow()
            .get(&key)
            .filter(|(seen, _)| *seen == sig)
            .map(|(_, f)| f.clone());
        let derived = match cached {
            Some(f) => f,
            None => {
                // An unreadable file is reported by `doctor`; its row is
                // not served meanwhile.
                let Some(doc) = load_doc(kb, kind, id) else {
                    return Ok(Some("its file does not parse".into()));
                };
                let f = fingerprint(&doc.title, &doc.body, doc.status.as_deref(), doc.confidence);
                self.backed.borrow_mut().insert(key, (sig, f.clone()));
                f
            }
        };
        Ok((derived != indexed).then(|| "its indexed text is not what its file says".into()))
    }

    /// Every row of the index that its file does not back, with why (for
    /// `doctor`).
    pub(crate) fn stray_rows(&self, kb: &Ix) -> Result<Vec<(String, String, String)>> {
        let rows: Vec<(String, String)> = self
            .conn
            .prepare("SELECT kind, id FROM docs ORDER BY kind, id")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::new();
        for (kind, id) in rows {
            if let Some(why) = self.unbacked_row(kb, &kind, &id)? {
                out.push((kind, id, why));
            }
        }
        Ok(out)
    }
}

/// Which of these hits their files do not back ([`Index::unbacked_row`]).
pub(crate) fn unbacked(kb: &Ix, hits: &[(DocKind, &str)]) -> Result<HashSet<(DocKind, String)>> {
    with_index(kb, |idx| {
        let mut out = HashSet::new();
        for &(kind, id) in hits {
            if idx.unbacked_row(kb, kind.as_str(), id)?.is_some() {
                out.insert((kind, id.to_string()));
            }
        }
        Ok(out)
    })
}
