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
/// and the model's identity.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS embeddings(
    kind TEXT NOT NULL, id TEXT NOT NULL, chunk INTEGER NOT NULL,
    model TEXT NOT NULL, content_sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(kind, id, chunk)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embeddings_content ON embeddings(content_sha256);";

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

type ListedRow = (String, String, Option<String>, Sig);

fn listed_row(r: &rusqlite::Row) -> rusqlite::Result<ListedRow> {
    Ok((
        r.get::<_, String>(0)?,
        r.get::<_, String>(1)?,
        r.get::<_, Option<String>>(2)?,
        (r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
    ))
}

fn to_listed((kind, id, status, sig): ListedRow) -> Option<Listed> {
    Some(Listed {
        key: (kind_static(&kind)?, id),
        status,
        sig,
    })
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

    fn listed(&self, keys: Option<&[(String, String)]>) -> Result<Vec<Listed>> {
        let mut listed = Vec::new();
        match keys {
            None => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind != 'relation'",
                )?;
                for r in stmt.query_map([], listed_row)? {
                    listed.extend(to_listed(r?));
                }
            }
            Some(keys) => {
                let mut stmt = self.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind = ?1 AND id = ?2",
                )?;
                for (kind, id) in keys {
                    if let Some(found) = stmt.query_row(params![kind, id], listed_row).optional()? {
                        listed.extend(to_listed(found));
                    }
                }
            }
        }
        Ok(listed)
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
    fn vectors_of(&self, model: &str, dim: usize) -> Result<Vec<StoredVector>> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, id, mtime_ns, size, vector FROM embeddings WHERE model = ?1
             ORDER BY kind, id, chunk",
        )?;
        let rows = stmt.query_map([model], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                (r.get::<_, i64>(2)?, r.get::<_, i64>(3)?),
                r.get::<_, Vec<u8>>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, id, sig, blob) = row?;
            if let (Some(kind), Some(vector)) = (kind_static(&kind), from_blob(&blob, dim)) {
                out.push(((kind, id), sig, vector));
            }
        }
        Ok(out)
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
}

impl VectorWrite for Index {
    fn keep_only(&self, model: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM embeddings WHERE model != ?1", [model])?;
        Ok(())
    }

    fn prune(&self) -> Result<()> {
        self.conn.execute(
            "DELETE FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM docs d
             WHERE d.kind = embeddings.kind AND d.id = embeddings.id)",
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
            .prepare_cached("DELETE FROM embeddings WHERE kind = ?1 AND id = ?2")?
            .execute(params![key.0, key.1])?;
        let mut insert = self.conn.prepare_cached(
            "INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns, size, vector)
             VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (n, v) in chunks.iter().enumerate() {
            insert.execute(params![
                key.0,
                key.1,
                n as i64,
                model,
                sha,
                sig.0,
                sig.1,
                to_blob(v)
            ])?;
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
