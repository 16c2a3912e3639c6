//! `vouch-bench fill-vectors`: a vector for every document of a large
//! knowledge base that has none, so the search by meaning can be timed
//! at a million documents without the six hours MiniLM takes to embed
//! them on two cores. The vectors are random unit vectors stored under
//! the model the knowledge base already has vectors of: the scan's time
//! and memory do not depend on what the vectors say (how much of the
//! exact top 10 the sign-bit shortlist keeps on real vectors is
//! `scan-recall`'s measure). Their text hash is `bench-fill`, which no
//! text has, so no real document ever reuses them, and the next real
//! embedding of a changed document replaces them. For benchmarks only:
//! searches by meaning on such a knowledge base find nonsense.

use rusqlite::{Connection, params};
use std::path::Path;

/// Fill `kb`'s `state.db` (every document a search by meaning finds:
/// relations are never embedded); prints how many documents got vectors.
pub fn fill_vectors(kb: &Path) {
    let db = kb.join(".vouch").join("state.db");
    let mut conn = Connection::open(&db).unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    let (model, bytes): (String, i64) = conn
        .query_row(
            "SELECT model, length(vector) FROM embeddings LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("no vectors yet: embed at least one document with the model first");
    let dim = bytes as usize / 4;
    // In key order, a slice at a time: inserts all over the table in one
    // transaction write the same pages to the WAL again and again
    // (gigabytes at a million documents).
    let docs: Vec<(String, String, i64, i64)> = {
        let mut stmt = conn
            .prepare(
                "SELECT kind, id, mtime_ns, size FROM docs d WHERE kind != 'relation'
                 AND NOT EXISTS
                 (SELECT 1 FROM embeddings e WHERE e.kind = d.kind AND e.id = d.id)
                 ORDER BY kind, id",
            )
            .expect("docs");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("list docs")
            .collect::<Result<_, _>>()
            .expect("a doc")
    };
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let mut filled = 0usize;
    for slice in docs.chunks(20_000) {
        let tx = conn.transaction().expect("begin");
        {
            let mut put = tx
                .prepare_cached(
                    "INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns,
                     size, vector) VALUES (?1, ?2, 0, ?3, 'bench-fill', ?4, ?5, ?6)",
                )
                .expect("insert");
            for (kind, id, mtime, size) in slice {
                let v: Vec<f32> = (0..dim).map(|_| next()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                let blob: Vec<u8> = v.iter().flat_map(|x| (x / norm).to_le_bytes()).collect();
                put.execute(params![kind, id, model, mtime, size, blob])
                    .expect("store a vector");
            }
        }
        tx.commit().expect("commit");
        filled += slice.len();
    }
    println!("{filled} documents got random vectors of {dim} dimensions under {model}");
}
