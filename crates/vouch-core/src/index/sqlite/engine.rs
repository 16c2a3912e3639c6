//! `state.db` as the narrow engine traits see it ([`crate::index::engine`]):
//! the documents the vectors follow (`docs`, `fts`) and the `embeddings`
//! table. Every line of SQL the embedding schedule needs is here; the
//! schedule itself (`index/keeper/vectors.rs`) names none.

use super::Index;
use crate::error::Result;
use crate::index::docs::embedded_text;
use crate::index::engine::{DocKey, DocRead, Listed, Sig, StoredVector, VectorRead, VectorWrite};
use crate::index::memory::kind_static;
use rusqlite::{OptionalExtension, params};

/// The stored vectors: keyed by (kind, id, chunk), with the text's sha256
/// and the model's identity. A table with rowids: a row holds a 1.5 KB
/// vector, which a `WITHOUT ROWID` table keeps only partly in its b-tree
/// page (about 1 KB fits) and the rest on an overflow page of its own.
/// The file signature the vectors were made for is in the index's
/// `vector_sigs` ([`super::schema`]), which a rebuild empties; this
/// table's `mtime_ns` and `size` are written 0 (files made before version
/// 10 have them).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS embeddings(
    kind TEXT NOT NULL, id TEXT NOT NULL, chunk INTEGER NOT NULL,
    model TEXT NOT NULL, content_sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(kind, id, chunk));
CREATE INDEX IF NOT EXISTS embeddings_content ON embeddings(content_sha256);";

/// Vectors stored by an earlier version in a `WITHOUT ROWID` table (5.5
/// KB a 384-dimension vector on disk instead of 1.6: 7 GB at a million
/// documents) move, once, to [`SCHEMA`]'s table, in key order. Kept: they
/// are hours of a model's work.
pub(crate) fn move_vectors_out_of_without_rowid(conn: &rusqlite::Connection) -> Result<()> {
    let old = |conn: &rusqlite::Connection| -> rusqlite::Result<bool> {
        let sql: Option<String> = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'embeddings'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        Ok(sql.is_some_and(|s| s.to_ascii_uppercase().contains("WITHOUT ROWID")))
    };
    if !old(conn)? {
        return Ok(());
    }
    // Checked again under the write lock: two processes opening it at
    // once move it once. (Rolled back if anything fails.)
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    if old(&tx)? {
        tx.execute_batch(&format!(
            "ALTER TABLE embeddings RENAME TO embeddings_without_rowid;
                 DROP INDEX IF EXISTS embeddings_content;
                 {SCHEMA}
                 INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns,
                     size, vector)
                 SELECT kind, id, chunk, model, content_sha256, mtime_ns, size, vector
                 FROM embeddings_without_rowid ORDER BY kind, id, chunk;
                 DROP TABLE embeddings_without_rowid;"
        ))?;
    }
    tx.commit()?;
    Ok(())
}

impl Index {
    /// For benchmarks only (`vouch-bench fill-vectors`): a random unit
    /// vector for every document a search by meaning finds that has none,
    /// under the model of the vectors already stored — to time the scan
    /// at a million documents without hours of embedding. Their text hash
    /// is `bench-fill`, which no text has, so no document ever reuses
    /// them by their text. A rebuild forgets every vector's file signature,
    /// after which the keeper would embed each of these documents for
    /// real (hours at a million): the filled ones whose document is still
    /// indexed take its signature again first — even where the document
    /// changed since, which random vectors do not care about. The
    /// documents filled, the vectors' dimensions and the model; `None`
    /// when no vector is stored yet.
    pub(crate) fn fill_random_vectors(&self) -> Result<Option<(usize, usize, String)>> {
        self.write(|| {
            let revived = self.conn.execute(
                "INSERT OR REPLACE INTO vector_sigs(kind, id, mtime_ns, size)
                 SELECT d.kind, d.id, d.mtime_ns, d.size FROM docs d
                 WHERE EXISTS (SELECT 1 FROM embeddings e WHERE e.kind = d.kind
                     AND e.id = d.id AND e.content_sha256 = 'bench-fill')
                 AND NOT EXISTS (SELECT 1 FROM vector_sigs s WHERE s.kind = d.kind
                     AND s.id = d.id AND s.mtime_ns = d.mtime_ns AND s.size = d.size)",
                [],
            )?;
            if revived > 0 {
                // A copy made before must not say the old signatures.
                new_copy_stamp(&self.conn)?;
            }
            Ok(())
        })?;
        let Some((model, bytes)) = self
            .conn
            .query_row(
                "SELECT model, length(vector) FROM embeddings LIMIT 1",
                [],
                |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)),
            )
            .optional()?
        else {
            return Ok(None);
        };
        let dim = bytes as usize / 4;
        // In key order, a slice a transaction: inserts all over the table
        // in one transaction write the same pages to the WAL again and
        // again (gigabytes at a million documents).
        let docs: Vec<(String, String, i64, i64)> = self
            .conn
            .prepare(
                "SELECT kind, id, mtime_ns, size FROM docs d WHERE kind != 'relation'
                 AND NOT EXISTS
                 (SELECT 1 FROM embeddings e WHERE e.kind = d.kind AND e.id = d.id)
                 ORDER BY kind, id",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut next = crate::index::memory::noise(0x9e37_79b9_7f4a_7c15);
        for slice in docs.chunks(20_000) {
            self.write(|| {
                let mut put = self.conn.prepare_cached(
                    "INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns,
                     size, vector) VALUES (?1, ?2, 0, ?3, 'bench-fill', 0, 0, ?4)",
                )?;
                let mut sig = self.conn.prepare_cached(
                    "INSERT OR REPLACE INTO vector_sigs(kind, id, mtime_ns, size)
                     VALUES (?1, ?2, ?3, ?4)",
                )?;
                for (kind, id, mtime, size) in slice {
                    let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    let unit: Vec<f32> = v.iter().map(|x| x / norm).collect();
                    put.execute(params![kind, id, model, to_blob(&unit)])?;
                    sig.execute(params![kind, id, mtime, size])?;
                }
                Ok(())
            })?;
        }
        Ok(Some((docs.len(), dim, model)))
    }
}

fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8], dim: usize) -> Option<Vec<f32>> {
    (b.len() == dim * 4).then(|| {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    })
}

/// A `docs` row as [`Listed`], borrowed from the row; `None` for a kind
/// search does not know.
fn listed_row<'r>(r: &'r rusqlite::Row) -> rusqlite::Result<Option<Listed<'r>>> {
    let Some(kind) = kind_static(r.get_ref(0)?.as_str()?) else {
        return Ok(None);
    };
    Ok(Some(Listed {
        key: (kind, r.get_ref(1)?.as_str()?),
        status: r.get_ref(2)?.as_str_or_null()?,
        sig: (r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
    }))
}

impl DocRead for Index {
    fn vector_documents(&self) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM docs WHERE kind != 'relation'",
            [],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    fn each_listed(
        &self,
        keys: Option<&[(String, String)]>,
        each: &mut dyn FnMut(Listed<'_>),
    ) -> Result<()> {
        match keys {
            None => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind != 'relation'",
                )?;
                let mut rows = stmt.query([])?;
                while let Some(r) = rows.next()? {
                    listed_row(r)?.map(&mut *each);
                }
            }
            Some(keys) => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind = ?1 AND id = ?2",
                )?;
                for (kind, id) in keys {
                    let mut rows = stmt.query(params![kind, id])?;
                    if let Some(r) = rows.next()? {
                        listed_row(r)?.map(&mut *each);
                    }
                }
            }
        }
        Ok(())
    }

    fn embedded_text(&self, kind: &str, id: &str) -> Result<Option<String>> {
        let Some((rowid, _)) = self.rowid_and_confidence(kind, id)? else {
            return Ok(None);
        };
        Ok(self
            .title_and_body(rowid)?
            .map(|(title, body)| embedded_text(kind, title, body)))
    }
}

impl VectorRead for Index {
    fn vectors_of(
        &self,
        model: &str,
        dim: usize,
        (after, at_least): (Option<&DocKey>, usize),
        each: &mut dyn FnMut(StoredVector),
    ) -> Result<Option<DocKey>> {
        let (kind, id) = after.map_or(("", ""), |(k, i)| (*k, i.as_str()));
        // A document without a row in `vector_sigs` (a rebuild emptied it)
        // has size -1, which no file has (not even the (0, 0) a document
        // written by a stat that failed holds): it is looked at again by
        // its text.
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.kind, e.id, coalesce(s.mtime_ns, 0), coalesce(s.size, -1), e.vector
             FROM embeddings e LEFT JOIN vector_sigs s ON s.kind = e.kind AND s.id = e.id
             WHERE e.model = ?1 AND (e.kind, e.id) > (?2, ?3) ORDER BY e.kind, e.id, e.chunk",
        )?;
        let mut rows = stmt.query(params![model, kind, id])?;
        let mut seen = 0usize;
        let mut last: Option<DocKey> = None;
        while let Some(r) = rows.next()? {
            let (kind, id): (String, String) = (r.get(0)?, r.get(1)?);
            let Some(kind) = kind_static(&kind) else {
                continue;
            };
            let same = last.as_ref().is_some_and(|(k, i)| *k == kind && *i == id);
            if seen >= at_least && !same {
                return Ok(last);
            }
            let sig = (r.get::<_, i64>(2)?, r.get::<_, i64>(3)?);
            let blob = r.get_ref(4)?.as_blob().unwrap_or_default();
            if !same {
                last = Some((kind, id.clone()));
            }
            seen += 1;
            if let Some(vector) = from_blob(blob, dim) {
                each(((kind, id), sig, vector));
            }
        }
        Ok(None)
    }

    fn reusable(
        &self,
        model: &str,
        dim: usize,
        sha: &str,
        key: &DocKey,
    ) -> Result<Option<Vec<Vec<f32>>>> {
        let owner: Option<(String, String)> = self
            .conn
            .prepare_cached(
                "SELECT kind, id FROM embeddings WHERE content_sha256 = ?1 AND model = ?2
                 ORDER BY (kind = ?3 AND id = ?4) DESC LIMIT 1",
            )?
            .query_row(params![sha, model, key.0, key.1], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let Some((kind, id)) = owner else {
            return Ok(None);
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT vector FROM embeddings WHERE kind = ?1 AND id = ?2 AND model = ?3 ORDER BY chunk",
        )?;
        let blobs = stmt.query_map(params![kind, id, model], |r| r.get::<_, Vec<u8>>(0))?;
        let mut chunks = Vec::new();
        for b in blobs {
            match from_blob(&b?, dim) {
                Some(v) => chunks.push(v),
                None => return Ok(None),
            }
        }
        Ok((!chunks.is_empty()).then_some(chunks))
    }

    fn copy_stamp(&self) -> Result<Option<String>> {
        // The file this installation made (its identity, checked when it
        // was opened) and a random part no clone or copy carries.
        let (file, copy) = (
            self.meta_value("vectors_file")?,
            self.meta_value("vectors_copy")?,
        );
        Ok(file.zip(copy).map(|(file, copy)| format!("{file}/{copy}")))
    }
}

/// Give the stored vectors a new random stamp: a copy made before is
/// never read again (`VectorRead::copy_stamp`). When the vectors are
/// rewritten other than document by document, and for a file without one.
///
/// The random part is the operating system's (through the standard
/// library's hash keys), not the injected clock's: drawing from that would
/// move every id and hash a test pins byte for byte, and this value is
/// never shown — it only has to be unguessable by whoever plants a copy.
pub(crate) fn new_copy_stamp(conn: &rusqlite::Connection) -> Result<()> {
    use std::hash::BuildHasher;
    let random: String = (0..2u8)
        .map(|n| {
            format!(
                "{:016x}",
                std::collections::hash_map::RandomState::new().hash_one(n)
            )
        })
        .collect();
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES('vectors_copy', ?1)",
        [random],
    )?;
    Ok(())
}

impl VectorWrite for Index {
    fn keep_only(&self, model: &str) -> Result<()> {
        // `meta.vectors_model` names the model of every stored vector
        // once this has run ([`VectorWrite::put`] keeps it so): then
        // there is nothing to delete, and no scan of a table of a million
        // vectors (0.7 s) to find that out.
        if self.meta_value("vectors_model")?.as_deref() == Some(model) {
            return Ok(());
        }
        self.write(|| {
            self.conn
                .execute("DELETE FROM embeddings WHERE model != ?1", [model])?;
            self.conn.execute(
                "DELETE FROM vector_sigs WHERE NOT EXISTS (SELECT 1 FROM embeddings e
                 WHERE e.kind = vector_sigs.kind AND e.id = vector_sigs.id)",
                [],
            )?;
            self.conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('vectors_model', ?1)",
                [model],
            )?;
            Ok(())
        })
    }

    fn prune(&self) -> Result<()> {
        self.conn.execute(
            "DELETE FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM docs d
             WHERE d.kind = embeddings.kind AND d.id = embeddings.id)",
            [],
        )?;
        self.conn.execute(
            "DELETE FROM vector_sigs WHERE NOT EXISTS (SELECT 1 FROM docs d
             WHERE d.kind = vector_sigs.kind AND d.id = vector_sigs.id)",
            [],
        )?;
        Ok(())
    }

    fn put(
        &self,
        model: &str,
        key: &DocKey,
        sig: Sig,
        sha: &str,
        chunks: &[Vec<f32>],
    ) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO vector_sigs(kind, id, mtime_ns, size)
                 VALUES(?1, ?2, ?3, ?4)",
            )?
            .execute(params![key.0, key.1, sig.0, sig.1])?;
        // The same model's vectors of the same text, stored for this
        // document already (what a rebuild leaves, its signatures gone):
        // the same vectors, so only the signature is written — not 1.5 KB
        // a chunk again.
        let stored: Vec<(String, String, i64)> = self
            .conn
            .prepare_cached(
                "SELECT model, content_sha256, length(vector) FROM embeddings
                 WHERE kind = ?1 AND id = ?2 ORDER BY chunk",
            )?
            .query_map(params![key.0, key.1], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        if stored.len() == chunks.len()
            && stored
                .iter()
                .zip(chunks)
                .all(|((m, s, bytes), c)| m == model && s == sha && *bytes == 4 * c.len() as i64)
        {
            return Ok(());
        }
        self.conn
            .prepare_cached("DELETE FROM embeddings WHERE kind = ?1 AND id = ?2")?
            .execute(params![key.0, key.1])?;
        // Another model's vector stored: the next `keep_only` looks.
        self.conn
            .prepare_cached("DELETE FROM meta WHERE key = 'vectors_model' AND value != ?1")?
            .execute([model])?;
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns, size, vector)
             VALUES(?1, ?2, ?3, ?4, ?5, 0, 0, ?6)",
        )?;
        for (n, v) in chunks.iter().enumerate() {
            insert.execute(params![key.0, key.1, n as i64, model, sha, to_blob(v)])?;
        }
        Ok(())
    }

    fn in_one_write(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        self.write(f)
    }
}

impl crate::index::engine::MainConn for super::IndexState {
    fn with_main(
        &self,
        f: &mut dyn FnMut(&dyn crate::index::engine::EngineConn) -> Result<()>,
    ) -> Result<()> {
        let slot = self.index.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some(open) => f(&open.index),
            None => Err(super::not_caught_up()),
        }
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// Vectors an earlier version stored in a `WITHOUT ROWID` table move
    /// to the table with rowids, every row kept; opening again moves
    /// nothing.
    #[test]
    fn vectors_in_a_without_rowid_table_move_and_are_kept() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE embeddings(
                kind TEXT NOT NULL, id TEXT NOT NULL, chunk INTEGER NOT NULL,
                model TEXT NOT NULL, content_sha256 TEXT NOT NULL,
                mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
                vector BLOB NOT NULL,
                PRIMARY KEY(kind, id, chunk)) WITHOUT ROWID;
             CREATE INDEX embeddings_content ON embeddings(content_sha256);
             INSERT INTO embeddings VALUES ('claim', 'b', 0, 'm', 's1', 1, 2, x'01020304');
             INSERT INTO embeddings VALUES ('claim', 'a', 1, 'm', 's2', 3, 4, x'05060708');",
        )
        .unwrap();
        let rows = |conn: &Connection| -> Vec<(String, i64, String, Vec<u8>)> {
            conn.prepare("SELECT id, chunk, content_sha256, vector FROM embeddings ORDER BY id")
                .unwrap()
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let before = rows(&conn);
        super::move_vectors_out_of_without_rowid(&conn).unwrap();
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = 'embeddings'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(!sql.contains("WITHOUT ROWID"), "{sql}");
        assert_eq!(rows(&conn), before);
        // The content index is there again, and the old table is gone.
        let objects: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            objects,
            [
                "embeddings",
                "embeddings_content",
                "sqlite_autoindex_embeddings_1"
            ]
        );
        super::move_vectors_out_of_without_rowid(&conn).unwrap();
        assert_eq!(rows(&conn), before);
    }
}
