//! The vectors every replica's model made, by text: a replica about to
//! embed a document asks here first for its text's vectors under the same
//! model, and keeps here what its own model made. A new replica with an
//! index of its own (another host) fills its vectors from the database in
//! minutes instead of running its model for hours.
//!
//! Rows are keyed by the model's identity (which names its weights' hashes)
//! and the text's sha256; a row whose length is not whole chunks of the
//! model's dimension, or whose values are not finite, is left out and the
//! model makes that text's vectors. Whoever can write this table can move
//! what a search by meaning ranks first (never what it returns: every hit
//! is a document the files hold): the database is as trusted as the
//! servers (docs/team-server.md, "Secrets").

use crate::{Conns, Database};
use std::sync::Arc;
use vouch_core::Result;
use vouch_core::services::{SharedPruned, SharedVectors};

/// Texts sent to the database a statement when pruning (a million shas
/// are 65 MB as text: sent in parts, into a table of the transaction's).
const PRUNE_PART: usize = 50_000;

/// The team's vectors in its database.
pub struct TeamVectors {
    conns: Conns,
}

impl TeamVectors {
    /// The vectors kept in `db` (connections of their own, so a long
    /// fetch never waits behind the write lock's).
    pub fn new(db: Arc<Database>) -> TeamVectors {
        TeamVectors {
            conns: Conns::new(db),
        }
    }
}

/// Little-endian `f32`s, chunk after chunk.
fn encode(chunks: &[Vec<f32>]) -> Vec<u8> {
    chunks.iter().flat_map(|c| encode_one(c)).collect()
}

/// One vector as little-endian `f32`s.
pub(crate) fn encode_one(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The chunks `bytes` holds, when they are whole chunks of `dim` finite
/// values (at least one).
fn decode(bytes: &[u8], dim: usize) -> Option<Vec<Vec<f32>>> {
    let chunk_bytes = dim.checked_mul(4).filter(|&n| n > 0)?;
    if bytes.is_empty() || !bytes.len().is_multiple_of(chunk_bytes) {
        return None;
    }
    bytes
        .chunks_exact(chunk_bytes)
        .map(|chunk| decode_one(chunk, dim))
        .collect()
}

/// The one vector `bytes` holds, when it is `dim` finite values.
pub(crate) fn decode_one(bytes: &[u8], dim: usize) -> Option<Vec<f32>> {
    if bytes.len() != dim.checked_mul(4)? {
        return None;
    }
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .map(|x| x.is_finite().then_some(x))
        .collect()
}

impl SharedVectors for TeamVectors {
    fn describe(&self) -> String {
        format!("the team database {}", self.conns.shown())
    }

    fn fetch(
        &self,
        model: &str,
        dim: usize,
        shas: &[&str],
    ) -> Result<Vec<(String, Vec<Vec<f32>>)>> {
        if shas.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.conns.with("reading shared vectors", |c| {
            c.query(
                "SELECT sha, chunks FROM vouch_vectors WHERE model = $1 AND dim = $2 AND sha = ANY($3)",
                &[&model, &(dim as i32), &shas],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let sha: String = r.get(0);
                let bytes: &[u8] = r.get(1);
                Some((sha, decode(bytes, dim)?))
            })
            .collect())
    }

    fn keep(&self, model: &str, dim: usize, made: &[(&str, &[Vec<f32>])]) -> Result<()> {
        let shas: Vec<&str> = made.iter().map(|(sha, _)| *sha).collect();
        let chunks: Vec<Vec<u8>> = made.iter().map(|(_, c)| encode(c)).collect();
        self.conns.with("keeping shared vectors", |c| {
            c.execute(
                "INSERT INTO vouch_vectors (model, sha, dim, chunks) \
                 SELECT $1, sha, $2, chunks FROM unnest($3::text[], $4::bytea[]) AS m(sha, chunks) \
                 ON CONFLICT (model, sha) DO NOTHING",
                &[&model, &(dim as i32), &shas, &chunks],
            )
            .map(|_| ())
        })
    }

    fn prune(
        &self,
        model: &str,
        current: &[&str],
        grace: std::time::Duration,
        other_models: bool,
    ) -> Result<SharedPruned> {
        self.conns.with("pruning shared vectors", |c| {
            TeamVectors::prune_rows(c, model, current, grace, other_models)
        })
    }
}

impl TeamVectors {
    fn prune_rows(
        c: &mut postgres::Client,
        model: &str,
        current: &[&str],
        grace: std::time::Duration,
        other_models: bool,
    ) -> Result<SharedPruned, postgres::Error> {
        let mut tx = c.transaction()?;
        tx.batch_execute(
            "CREATE TEMP TABLE vouch_current_texts (sha text PRIMARY KEY) ON COMMIT DROP",
        )?;
        for part in current.chunks(PRUNE_PART) {
            tx.execute(
                "INSERT INTO vouch_current_texts SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                &[&part],
            )?;
        }
        let grace = grace.as_secs_f64();
        let removed = tx.execute(
            "DELETE FROM vouch_vectors v WHERE v.model = $1 \
             AND v.made_at < now() - make_interval(secs => $2) \
             AND NOT EXISTS (SELECT 1 FROM vouch_current_texts c WHERE c.sha = v.sha)",
            &[&model, &grace],
        )?;
        let left: i64 = tx
            .query_one(
                "SELECT count(*) FROM vouch_vectors WHERE model = $1",
                &[&model],
            )?
            .get(0);
        let (other_models_removed, other_models_left) = if other_models {
            let n = tx.execute("DELETE FROM vouch_vectors WHERE model <> $1", &[&model])?;
            (n as usize, 0)
        } else {
            let n: i64 = tx
                .query_one(
                    "SELECT count(*) FROM vouch_vectors WHERE model <> $1",
                    &[&model],
                )?
                .get(0);
            (0, n as usize)
        };
        tx.commit()?;
        Ok(SharedPruned {
            removed: removed as usize,
            left: left as usize,
            other_models_removed,
            other_models_left,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn only_whole_finite_chunks_of_the_dimension_decode() {
        let chunks = vec![vec![0.5, -1.0, 0.25], vec![1.0, 0.0, -0.5]];
        assert_eq!(decode(&encode(&chunks), 3), Some(chunks.clone()));
        let bytes = encode(&chunks);
        assert_eq!(decode(&bytes, 4), None, "not whole chunks");
        assert_eq!(decode(&bytes[..bytes.len() - 1], 3), None, "cut short");
        assert_eq!(decode(&[], 3), None, "no chunk");
        assert_eq!(decode(&bytes, 0), None, "no dimension");
        let nan = encode(&[vec![0.5, f32::NAN, 0.25]]);
        assert_eq!(decode(&nan, 3), None, "not finite");
    }
}
