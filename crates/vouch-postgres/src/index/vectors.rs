//! Each document's vectors in the team database (`vouch_index_vectors`),
//! keyed by model, document and chunk, with the text's sha256 and the
//! signature of the file they were made for (`size` -1 once a rebuild
//! forgot it: the document is looked at again by its text). The keeper
//! loads them into each replica's memory and keeps them in step; what one
//! replica's model made, every other one reads.

use super::TeamIndex;
use crate::vectors::{decode_one as decode, encode_one as encode};
use vouch_core::Result;
use vouch_core::index::engine::{DocKey, Sig, StoredVector, VectorRead, VectorWrite};
use vouch_core::index::memory::kind_static;

impl VectorRead for TeamIndex {
    fn vectors_of(
        &self,
        model: &str,
        dim: usize,
        (after, at_least): (Option<&DocKey>, usize),
        each: &mut dyn FnMut(StoredVector),
    ) -> Result<Option<DocKey>> {
        let (kind, id) = after.map_or(("", ""), |(k, i)| (*k, i.as_str()));
        let rows = self.conns.with("reading stored vectors", |c| {
            c.query(
                "SELECT kind, id, chunk, mtime, size, vector FROM vouch_index_vectors
                 WHERE model = $1 AND (kind, id) > ($2, $3)
                 ORDER BY kind, id, chunk LIMIT $4",
                &[&model, &kind, &id, &(at_least.max(1) as i64)],
            )
        })?;
        let full = rows.len() >= at_least.max(1);
        let mut give = |kind: &'static str, id: String, sig: Sig, bytes: &[u8]| {
            if let Some(vector) = decode(bytes, dim) {
                each(((kind, id), sig, vector));
            }
        };
        let mut last: Option<(&'static str, String, i32)> = None;
        for r in &rows {
            let Some(kind) = kind_static(r.get(0)) else {
                continue;
            };
            let id: String = r.get(1);
            last = Some((kind, id.clone(), r.get(2)));
            give(kind, id, (r.get(3), r.get(4)), r.get(5));
        }
        let (true, Some((kind, id, chunk))) = (full, last) else {
            return Ok(None);
        };
        // The rest of the last document's chunks.
        let rest = self.conns.with("reading stored vectors", |c| {
            c.query(
                "SELECT mtime, size, vector FROM vouch_index_vectors
                 WHERE model = $1 AND kind = $2 AND id = $3 AND chunk > $4 ORDER BY chunk",
                &[&model, &kind, &id, &chunk],
            )
        })?;
        for r in &rest {
            give(kind, id.clone(), (r.get(0), r.get(1)), r.get(2));
        }
        Ok(Some((kind, id)))
    }

    fn reusable(
        &self,
        model: &str,
        dim: usize,
        sha: &str,
        key: &DocKey,
    ) -> Result<Option<Vec<Vec<f32>>>> {
        let rows = self.conns.with("reading stored vectors", |c| {
            c.query(
                "SELECT vector FROM vouch_index_vectors WHERE model = $1 AND (kind, id) =
                     (SELECT kind, id FROM vouch_index_vectors WHERE model = $1 AND sha = $2
                      ORDER BY (kind = $3 AND id = $4) DESC LIMIT 1)
                 ORDER BY chunk",
                &[&model, &sha, &key.0, &key.1],
            )
        })?;
        let chunks: Option<Vec<Vec<f32>>> = rows.iter().map(|r| decode(r.get(0), dim)).collect();
        Ok(chunks.filter(|c| !c.is_empty()))
    }

    fn copy_stamp(&self) -> Result<Option<String>> {
        // No copy beside a replica's index: each loads from here.
        Ok(None)
    }
}

impl VectorWrite for TeamIndex {
    fn keep_only(&self, model: &str) -> Result<()> {
        self.conns.with("dropping other models' vectors", |c| {
            c.execute(
                "DELETE FROM vouch_index_vectors WHERE model <> $1",
                &[&model],
            )
            .map(|_| ())
        })
    }

    fn prune(&self) -> Result<()> {
        self.conns.with("dropping vectors of documents gone", |c| {
            c.execute(
                "DELETE FROM vouch_index_vectors v WHERE NOT EXISTS
                 (SELECT 1 FROM vouch_index_docs d WHERE d.kind = v.kind AND d.id = v.id)",
                &[],
            )
            .map(|_| ())
        })
    }

    fn put(
        &self,
        model: &str,
        key: &DocKey,
        sig: Sig,
        sha: &str,
        chunks: &[Vec<f32>],
    ) -> Result<()> {
        let vectors: Vec<Vec<u8>> = chunks.iter().map(|c| encode(c)).collect();
        let numbers: Vec<i32> = (0..chunks.len() as i32).collect();
        self.conns.with("storing vectors", |c| {
            let mut tx = c.transaction()?;
            // Chunks past the new count go; two replicas embedding the same
            // document at once each write whole rows (the last one stays).
            tx.execute(
                "DELETE FROM vouch_index_vectors WHERE kind = $1 AND id = $2
                 AND (model <> $3 OR chunk >= $4)",
                &[&key.0, &key.1, &model, &(chunks.len() as i32)],
            )?;
            tx.execute(
                "INSERT INTO vouch_index_vectors (model, kind, id, chunk, mtime, size, sha, vector)
                 SELECT $1, $2, $3, n, $4, $5, $6, v
                 FROM unnest($7::int4[], $8::bytea[]) AS u(n, v)
                 ON CONFLICT (model, kind, id, chunk) DO UPDATE SET mtime = excluded.mtime,
                     size = excluded.size, sha = excluded.sha, vector = excluded.vector",
                &[
                    &model, &key.0, &key.1, &sig.0, &sig.1, &sha, &numbers, &vectors,
                ],
            )?;
            tx.commit()
        })
    }

    fn in_one_write(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        // Each put is a transaction of its own: a replica killed half way
        // leaves whole documents' vectors, and the rest pending.
        f()
    }
}
