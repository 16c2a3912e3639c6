//! The vectors: an `embeddings` table in `state.db`, keyed by (kind, id,
//! chunk) and holding each text's sha256 and the model's identity, and an
//! in-memory copy that semantic search scans.
//!
//! Keeping them in step ([`ensure`]) compares every document of the FTS
//! index with what memory holds, by file signature. A changed document is
//! re-embedded only if its text changed: its own stored vectors, or any
//! document's with the same text under the same model, are reused. Vectors
//! of another model are deleted, never compared. The check runs only when
//! the index changed since the last one (a counter the FTS sync and the
//! write hook move), so a search in a quiet server pays nothing for it.
//!
//! Approve never waits for the model: the write hook only moves the
//! counter. The next semantic search embeds what is new (within a time
//! budget; ~10 ms a claim), and servers do it in their background refresh.

use super::Embedder;
use crate::error::Result;
use crate::kb::Kb;
use crate::retrieval::fts5::{Index, Sig};
use crate::retrieval::{Currency, SEARCH_KINDS};
use rusqlite::{OptionalExtension, params};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS embeddings(
    kind TEXT NOT NULL, id TEXT NOT NULL, chunk INTEGER NOT NULL,
    model TEXT NOT NULL, content_sha256 TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY(kind, id, chunk)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embeddings_content ON embeddings(content_sha256);";

/// How long a search may spend embedding what is new before it answers
/// with what is embedded (the rest is named in a warning).
pub const SEARCH_BUDGET: Duration = Duration::from_secs(2);

/// Documents embedded per model call (the model sorts them by length into
/// passes; a larger call pads less).
const BATCH: usize = 128;

type DocKey = (&'static str, String);

struct DocEntry {
    sig: Sig,
    status: Option<String>,
    /// Row numbers in [`Vectors::data`], one per chunk.
    rows: Vec<usize>,
}

/// Every embedded document of one model, in one flat array (rows of
/// `dim` bytes) so a scan streams through memory. Rows are quantized to
/// int8 with a scale per row: a quarter of the memory of f32 (49 MB, not
/// 197 MB, at 128,000 documents) and a faster scan, for a cosine within
/// about 0.005 of the exact one. `state.db` keeps the exact f32 vectors.
pub struct Vectors {
    model: String,
    dim: usize,
    data: Vec<i8>,
    /// Per row: the factor that turns an int8 dot product back into a
    /// cosine.
    scales: Vec<f32>,
    /// The document each row belongs to.
    owners: Vec<DocKey>,
    docs: HashMap<DocKey, DocEntry>,
    /// The index change counter this copy was last checked against.
    synced: u64,
    /// Documents the last check left without vectors (the budget ran out).
    pending: usize,
    /// Documents the model could not embed, by the signature it failed on:
    /// not tried again until their file changes.
    failed: HashMap<DocKey, Sig>,
}

#[derive(Debug, Default, Clone, Copy, serde::Serialize, schemars::JsonSchema)]
pub struct EmbedStats {
    /// Documents with vectors now.
    pub documents: usize,
    /// Documents embedded by the model in this call.
    pub embedded: usize,
    /// Documents whose vectors were reused (same text).
    pub reused: usize,
    pub removed: usize,
    /// Documents still without vectors.
    pub pending: usize,
}

fn kind_static(kind: &str) -> Option<&'static str> {
    SEARCH_KINDS.iter().map(|k| k.as_str()).find(|k| *k == kind)
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

impl Vectors {
    fn empty(model: &str, dim: usize) -> Vectors {
        Vectors {
            model: model.to_string(),
            dim,
            data: Vec::new(),
            scales: Vec::new(),
            owners: Vec::new(),
            docs: HashMap::new(),
            synced: 0,
            pending: 0,
            failed: HashMap::new(),
        }
    }

    pub fn documents(&self) -> usize {
        self.docs.len()
    }
    pub fn pending(&self) -> usize {
        self.pending
    }

    fn remove(&mut self, key: &DocKey) {
        let Some(entry) = self.docs.remove(key) else {
            return;
        };
        let mut rows = entry.rows;
        rows.sort_unstable_by(|a, b| b.cmp(a));
        for row in rows {
            let last = self.owners.len() - 1;
            if row != last {
                // Move the last row into the hole and repoint its owner.
                let (head, tail) = self.data.split_at_mut(last * self.dim);
                head[row * self.dim..(row + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
                self.scales[row] = self.scales[last];
                let moved = self.owners[last].clone();
                if let Some(e) = self.docs.get_mut(&moved) {
                    for r in e.rows.iter_mut() {
                        if *r == last {
                            *r = row;
                        }
                    }
                }
                self.owners.swap(row, last);
            }
            self.owners.pop();
            self.scales.pop();
            self.data.truncate(last * self.dim);
        }
    }

    fn push_row(&mut self, v: &[f32]) {
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        self.data.extend(
            v.iter()
                .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
        );
        self.scales.push(scale);
    }

    fn dot(&self, row: usize, query: &[f32]) -> f32 {
        let v = &self.data[row * self.dim..(row + 1) * self.dim];
        dot_i8(v, query) * self.scales[row]
    }

    fn insert(&mut self, key: DocKey, sig: Sig, status: Option<String>, chunks: &[Vec<f32>]) {
        self.remove(&key);
        let mut rows = Vec::with_capacity(chunks.len());
        for v in chunks {
            rows.push(self.owners.len());
            self.owners.push(key.clone());
            self.push_row(v);
        }
        self.docs.insert(key, DocEntry { sig, status, rows });
    }

    /// The `want` documents nearest `query` (cosine; vectors are unit
    /// length), best chunk per document, filtered by kind and currency.
    pub fn nearest(
        &self,
        query: &[f32],
        kinds: &[crate::model::DocKind],
        currency: Currency,
        want: usize,
    ) -> Vec<(DocKeyRef<'_>, f32)> {
        if query.len() != self.dim || want == 0 {
            return Vec::new();
        }
        // Score every row of the kinds asked for, then sort only the top:
        // a document's best chunk comes first, later chunks are skipped.
        let mut scored = self.score_rows(query, kinds);
        let by_score = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.owners[a.1].cmp(&self.owners[b.1]))
        };
        let mut top = want * 4 + 64;
        loop {
            let cut = top.min(scored.len());
            if cut < scored.len() {
                scored.select_nth_unstable_by(cut, by_score);
            }
            let mut head: Vec<(f32, usize)> = scored[..cut].to_vec();
            head.sort_by(by_score);
            let mut seen: HashSet<&DocKey> = HashSet::new();
            let mut out = Vec::new();
            for (score, row) in head {
                let key = &self.owners[row];
                if !seen.insert(key) {
                    continue;
                }
                let status = self.docs.get(key).and_then(|e| e.status.as_deref());
                if !currency.admits(status) {
                    continue;
                }
                out.push((
                    DocKeyRef {
                        kind: key.0,
                        id: &key.1,
                        status,
                    },
                    score,
                ));
                if out.len() == want {
                    break;
                }
            }
            if out.len() == want || cut == scored.len() {
                return out;
            }
            top *= 4;
        }
    }

    /// Every row of `kinds` with its score, in row order. A large set is
    /// cut into one range per core (at most [`SCAN_THREADS`]), scanned at
    /// once: the same scores, in the same order, in a fraction of the time.
    fn score_rows(&self, query: &[f32], kinds: &[crate::model::DocKind]) -> Vec<(f32, usize)> {
        let rows = self.owners.len();
        let kinds: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
        let scan = |range: std::ops::Range<usize>| -> Vec<(f32, usize)> {
            range
                .filter(|row| kinds.contains(&self.owners[*row].0))
                .map(|row| (self.dot(row, query), row))
                .collect()
        };
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(SCAN_THREADS)
            .min(rows / SCAN_ROWS_PER_THREAD);
        if threads <= 1 {
            return scan(0..rows);
        }
        let per = rows.div_ceil(threads);
        std::thread::scope(|s| {
            let parts: Vec<_> = (1..threads)
                .map(|t| {
                    let range = t * per..((t + 1) * per).min(rows);
                    s.spawn(move || scan(range))
                })
                .collect();
            let mut out = scan(0..per.min(rows));
            for part in parts {
                // A scan of plain arithmetic cannot panic but by a bug.
                out.extend(part.join().expect("vector scan thread"));
            }
            out
        })
    }

    /// The cosine of one document's best chunk with `query`, if embedded.
    pub fn similarity(&self, kind: &str, id: &str, query: &[f32]) -> Option<f32> {
        let key = (kind_static(kind)?, id.to_string());
        let e = self.docs.get(&key)?;
        e.rows
            .iter()
            .map(|r| self.dot(*r, query))
            .max_by(f32::total_cmp)
    }
}

/// Most threads one vector scan uses, and the fewest rows worth a thread
/// of their own (below that, starting it costs more than it saves).
const SCAN_THREADS: usize = 4;
const SCAN_ROWS_PER_THREAD: usize = 16_384;

/// Σ a·b in eight independent lanes: a single running sum is one long
/// dependency chain the compiler may not reorder (float addition is not
/// associative); eight lanes let it use SIMD: 116,120 rows scan in 5.5 ms
/// instead of 27.4 ms (`vouch-bench scan`).
fn dot_i8(a: &[i8], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] as f32 * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| *x as f32 * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// Numbers in -0.5..0.5 from `seed` (xorshift): vectors for a benchmark
/// or a test, the same every run.
fn noise(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// The cost of one semantic scan: `rows` random int8 vectors of `dim`,
/// the best `want` of them for a random query (for `vouch-bench`).
pub fn time_scan(rows: usize, dim: usize, want: usize, runs: usize) -> Vec<Duration> {
    let mut next = noise(0x9e3779b97f4a7c15u64);
    let mut v = Vectors::empty("bench", dim);
    for i in 0..rows {
        let row: Vec<f32> = (0..dim).map(|_| next()).collect();
        v.insert(
            ("claim", format!("c{i}")),
            (0, 0),
            Some("working".into()),
            &[row],
        );
    }
    (0..runs)
        .map(|_| {
            let q: Vec<f32> = (0..dim).map(|_| next()).collect();
            let t = Instant::now();
            let hits = v.nearest(&q, &[crate::model::DocKind::Claim], Currency::Current, want);
            let took = t.elapsed();
            assert_eq!(hits.len(), want.min(rows));
            took
        })
        .collect()
}

pub struct DocKeyRef<'a> {
    pub kind: &'static str,
    pub id: &'a str,
    pub status: Option<&'a str>,
}

/// Run `f` on the main index connection, synced with the files first when
/// `sync` (once per check: later steps of the same check use what it saw).
fn with_main<R>(kb: &Kb, sync: bool, f: impl FnOnce(&Index) -> Result<R>) -> Result<R> {
    let mut slot = kb
        .index_state
        .index
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let stale = match &*slot {
        None => true,
        Some(o) => sync && o.synced_at.elapsed() >= kb.index_sync_interval(),
    };
    if stale {
        crate::retrieval::fts5::bring_in_step(kb, &mut slot)?;
    }
    f(&crate::retrieval::fts5::open_in(kb, &mut slot)?.index)
}

/// A document that needs vectors, with what is known of it.
struct Stale {
    key: DocKey,
    sig: Sig,
    status: Option<String>,
}

/// When a check may stop embedding and leave the rest pending.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    Until(Instant),
    Unlimited,
}

impl Budget {
    fn spent(self) -> bool {
        matches!(self, Budget::Until(t) if Instant::now() >= t)
    }
}

/// Bring the vectors in step with the index: load them on first use,
/// drop what was deleted, reuse vectors of unchanged text, embed the rest
/// until `budget` runs out. `progress(done, total)` hears of every batch.
/// Returns `None` when another thread is already doing it and `wait` is
/// false (a search then answers from the vectors as they are).
pub fn ensure(
    kb: &Kb,
    embedder: &Arc<dyn Embedder>,
    budget: Budget,
    wait: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<EmbedStats>> {
    let res = ensure_inner(kb, embedder, budget, wait, progress);
    if res.is_err() {
        // What changed may not all have been handled: look at everything
        // next time.
        *kb.index_state
            .doc_changes
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
    }
    res
}

fn ensure_inner(
    kb: &Kb,
    embedder: &Arc<dyn Embedder>,
    budget: Budget,
    wait: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<EmbedStats>> {
    let model = embedder.model_id().to_string();
    // A search's fast path: the index synced recently (a read would not
    // sync again) and the vectors are in step with it — nothing to embed,
    // and no lock a writer or the watcher holds is taken. The same
    // freshness every read has: a write finished before this call bumped
    // the generation, which sends the search the slow way.
    if !wait && crate::retrieval::fts5::synced_recently(kb) {
        let generation = kb.index_state.generation();
        let v = kb.index_state.read_vectors();
        if let Some(v) = v.as_ref()
            && v.model == model
            && v.synced == generation
            && v.pending == 0
        {
            return Ok(Some(EmbedStats {
                documents: v.documents(),
                ..EmbedStats::default()
            }));
        }
    }
    let _one_at_a_time = if wait {
        kb.index_state
            .embedding
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    } else {
        // Another thread (a server's background refresh) is embedding:
        // a search waits for it within its budget rather than answer from
        // vectors that lack what was approved a moment ago — under load
        // that refresh is exactly the one embedding it. A search must see
        // every approval finished before it started, by meaning as by
        // words.
        loop {
            match kb.index_state.embedding.try_lock() {
                Ok(g) => break g,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if !budget.spent() => {
                    if matches!(budget, Budget::Unlimited) {
                        return Ok(None);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
            }
        }
    };
    let dim = embedder.dimensions();
    // Sync the FTS index first: it says which documents exist now.
    let (generation, listed, loaded) = with_main(kb, true, |idx| {
        let generation = kb.index_state.generation();
        let have = kb.index_state.read_vectors();
        let fresh = have
            .as_ref()
            .is_some_and(|v| v.model == model && v.synced == generation && v.pending == 0);
        let first = have.as_ref().is_none_or(|v| v.model != model);
        drop(have);
        if fresh {
            return Ok((generation, None, None));
        }
        let loaded = if first {
            // Vectors of any other model are never compared with these.
            idx.conn
                .execute("DELETE FROM embeddings WHERE model != ?1", [&model])?;
            Some(load_all(idx, &model, dim)?)
        } else {
            None
        };
        // The documents that changed since the last look, when known and
        // nothing is left over from then; else every document.
        let changes = {
            let mut c = kb
                .index_state
                .doc_changes
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let pending = kb
                .index_state
                .read_vectors()
                .as_ref()
                .is_some_and(|v| v.pending > 0);
            let known = if first || pending { None } else { c.take() };
            *c = Some(Vec::new());
            known
        };
        let row = |r: &rusqlite::Row| -> rusqlite::Result<(String, String, Option<String>, Sig)> {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                (r.get::<_, i64>(3)?, r.get::<_, i64>(4)?),
            ))
        };
        let mut listed = Vec::new();
        match &changes {
            None => {
                let mut stmt = idx.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind != 'relation'",
                )?;
                for r in stmt.query_map([], row)? {
                    let (kind, id, status, sig) = r?;
                    if let Some(kind) = kind_static(&kind) {
                        listed.push(((kind, id), status, sig));
                    }
                }
            }
            Some(keys) => {
                let mut stmt = idx.conn.prepare_cached(
                    "SELECT kind, id, status, mtime_ns, size FROM docs WHERE kind = ?1 AND id = ?2",
                )?;
                for (kind, id) in keys {
                    if let Some(found) = stmt.query_row(params![kind, id], row).optional()?
                        && let Some(kind) = kind_static(&found.0)
                    {
                        listed.push(((kind, found.1), found.2, found.3));
                    }
                }
            }
        }
        let scope = changes.map(|keys| {
            keys.into_iter()
                .filter_map(|(k, id)| Some((kind_static(&k)?, id)))
                .collect::<HashSet<DocKey>>()
        });
        Ok((generation, Some((listed, scope)), loaded))
    })?;
    let Some((listed, scope)) = listed else {
        let v = kb.index_state.read_vectors();
        let documents = v.as_ref().map_or(0, Vectors::documents);
        return Ok(Some(EmbedStats {
            documents,
            ..EmbedStats::default()
        }));
    };
    let mut stats = EmbedStats::default();
    let mut stale = Vec::new();
    {
        let mut guard = kb
            .index_state
            .vectors
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(v) = loaded {
            *guard = Some(v);
        }
        let vectors = guard.get_or_insert_with(|| Vectors::empty(&model, dim));
        let present: HashSet<&DocKey> = listed.iter().map(|(k, _, _)| k).collect();
        // Gone: not listed — among the changed documents, or among all.
        let gone: Vec<DocKey> = match &scope {
            Some(changed) => changed
                .iter()
                .filter(|k| !present.contains(k) && vectors.docs.contains_key(*k))
                .cloned()
                .collect(),
            None => vectors
                .docs
                .keys()
                .filter(|k| !present.contains(k))
                .cloned()
                .collect(),
        };
        stats.removed = gone.len();
        for k in &gone {
            vectors.remove(k);
        }
        for (key, status, sig) in listed {
            match vectors.docs.get_mut(&key) {
                Some(e) if e.sig == sig => e.status = status,
                // Old vectors answer until new ones are made, but under the
                // status the index has now: a claim just redacted or
                // superseded is never returned as it was.
                Some(e) => {
                    e.status = status.clone();
                    if vectors.failed.get(&key) != Some(&sig) {
                        stale.push(Stale { key, sig, status });
                    }
                }
                None if vectors.failed.get(&key) == Some(&sig) => {}
                None => stale.push(Stale { key, sig, status }),
            }
        }
    }
    if stats.removed > 0 {
        // Rows of documents that no longer exist.
        with_main(kb, false, |idx| {
            idx.conn.execute(
                "DELETE FROM embeddings WHERE NOT EXISTS (SELECT 1 FROM docs d
                 WHERE d.kind = embeddings.kind AND d.id = embeddings.id)",
                [],
            )?;
            Ok(())
        })?;
    }
    let total = stale.len();
    let mut done = 0;
    let mut failed = 0;
    let mut model_failed = false;
    for batch in stale.chunks(BATCH) {
        if budget.spent() || model_failed {
            break;
        }
        // Texts and reusable vectors, under the index lock.
        let mut need: Vec<(usize, String, String)> = Vec::new();
        let mut ready: Vec<(usize, String, Vec<Vec<f32>>, bool)> = Vec::new();
        with_main(kb, false, |idx| {
            for (i, s) in batch.iter().enumerate() {
                let Some(text) = idx.text_of(s.key.0, &s.key.1)? else {
                    continue;
                };
                let sha = crate::ids::sha256_hex(text.as_bytes());
                match reusable(idx, &model, dim, &sha, &s.key)? {
                    Some(chunks) => ready.push((i, sha, chunks, false)),
                    None => need.push((i, sha, text)),
                }
            }
            Ok(())
        })?;
        // The model runs outside every lock: writers never wait for it.
        let mut failures: Vec<usize> = Vec::new();
        if !need.is_empty() {
            let texts: Vec<&str> = need.iter().map(|(_, _, t)| t.as_str()).collect();
            match embedder.embed_documents(&texts) {
                Ok(vectors) => {
                    for ((i, sha, _), chunks) in need.into_iter().zip(vectors) {
                        if chunks.iter().all(|c| c.len() == dim) && !chunks.is_empty() {
                            ready.push((i, sha, chunks, true));
                        } else {
                            failures.push(i);
                        }
                    }
                }
                Err(e) => {
                    // Searches go on (by words); these wait for a change.
                    kb.warn(format!("embeddings: {e}"));
                    failures.extend(need.iter().map(|(i, _, _)| *i));
                    model_failed = true;
                }
            }
        }
        if !failures.is_empty() {
            failed += failures.len();
            let mut guard = kb
                .index_state
                .vectors
                .write()
                .unwrap_or_else(|e| e.into_inner());
            let vectors = guard.get_or_insert_with(|| Vectors::empty(&model, dim));
            for i in failures {
                vectors.failed.insert(batch[i].key.clone(), batch[i].sig);
            }
        }
        with_main(kb, false, |idx| {
            idx.write(|| {
                for (i, sha, chunks, _) in &ready {
                    store(idx, &model, &batch[*i], sha, chunks)?;
                }
                Ok(())
            })
        })?;
        let mut guard = kb
            .index_state
            .vectors
            .write()
            .unwrap_or_else(|e| e.into_inner());
        let vectors = guard.get_or_insert_with(|| Vectors::empty(&model, dim));
        for (i, _, chunks, fresh) in ready {
            let s = &batch[i];
            vectors.insert(s.key.clone(), s.sig, s.status.clone(), &chunks);
            if fresh {
                stats.embedded += 1;
            } else {
                stats.reused += 1;
            }
        }
        drop(guard);
        done += batch.len();
        progress(done, total);
    }
    let mut guard = kb
        .index_state
        .vectors
        .write()
        .unwrap_or_else(|e| e.into_inner());
    let vectors = guard.get_or_insert_with(|| Vectors::empty(&model, dim));
    vectors.pending = total - done;
    vectors.synced = generation;
    stats.pending = vectors.pending + failed;
    stats.documents = vectors.documents();
    Ok(Some(stats))
}

/// Stored vectors of this text under this model: the document's own
/// first, else any document's with the same text.
fn reusable(
    idx: &Index,
    model: &str,
    dim: usize,
    sha: &str,
    key: &DocKey,
) -> Result<Option<Vec<Vec<f32>>>> {
    let owner: Option<(String, String)> = idx
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
    let mut stmt = idx.conn.prepare_cached(
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

fn store(idx: &Index, model: &str, s: &Stale, sha: &str, chunks: &[Vec<f32>]) -> Result<()> {
    idx.conn
        .prepare_cached("DELETE FROM embeddings WHERE kind = ?1 AND id = ?2")?
        .execute(params![s.key.0, s.key.1])?;
    let mut insert = idx.conn.prepare_cached(
        "INSERT INTO embeddings(kind, id, chunk, model, content_sha256, mtime_ns, size, vector)
         VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (n, v) in chunks.iter().enumerate() {
        insert.execute(params![
            s.key.0,
            s.key.1,
            n as i64,
            model,
            sha,
            s.sig.0,
            s.sig.1,
            to_blob(v)
        ])?;
    }
    Ok(())
}

/// Every stored vector of `model`, as the in-memory copy (statuses come
/// from the check that follows).
fn load_all(idx: &Index, model: &str, dim: usize) -> Result<Vectors> {
    let mut v = Vectors::empty(model, dim);
    let mut stmt = idx.conn.prepare(
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
    for row in rows {
        let (kind, id, sig, blob) = row?;
        let (Some(kind), Some(vector)) = (kind_static(&kind), from_blob(&blob, dim)) else {
            continue;
        };
        let key = (kind, id);
        let row_no = v.owners.len();
        v.owners.push(key.clone());
        v.push_row(&vector);
        v.docs
            .entry(key)
            .or_insert_with(|| DocEntry {
                sig,
                status: None,
                rows: Vec::new(),
            })
            .rows
            .push(row_no);
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn rows_move_correctly_when_documents_go_and_the_best_chunk_answers() {
        let mut v = Vectors::empty("m", 3);
        let doc = |id: &str| ("claim", id.to_string());
        v.insert(
            doc("a"),
            (1, 1),
            Some("working".into()),
            &[unit(&[1.0, 0.0, 0.0])],
        );
        v.insert(
            doc("b"),
            (1, 1),
            Some("superseded".into()),
            &[unit(&[0.0, 1.0, 0.0]), unit(&[0.9, 0.1, 0.0])],
        );
        v.insert(doc("c"), (1, 1), None, &[unit(&[0.0, 0.0, 1.0])]);
        let q = unit(&[1.0, 0.05, 0.0]);
        let ids = |v: &Vectors, c: Currency| -> Vec<String> {
            v.nearest(&q, &[crate::model::DocKind::Claim], c, 10)
                .into_iter()
                .map(|(k, _)| k.id.to_string())
                .collect()
        };
        // b's second chunk is close to the query; it answers for b, once.
        assert_eq!(ids(&v, Currency::Any), ["a", "b", "c"]);
        assert_eq!(ids(&v, Currency::Current), ["a", "c"]);
        assert!(
            v.nearest(&q, &[crate::model::DocKind::Page], Currency::Any, 10)
                .is_empty()
        );
        // Removing a moves the last row (c) into its place.
        v.remove(&doc("a"));
        assert_eq!(ids(&v, Currency::Any), ["b", "c"]);
        let c = v.similarity("claim", "c", &unit(&[0.0, 0.0, 1.0])).unwrap();
        assert!((c - 1.0).abs() < 0.01, "{c}");
        v.remove(&doc("b"));
        assert_eq!(ids(&v, Currency::Any), ["c"]);
        assert_eq!(v.data.len(), 3);
        assert_eq!(v.scales.len(), 1);
    }

    /// A scan cut into ranges, one per core, scores every row once and
    /// keeps row order: the same rows, scores and order as one thread.
    #[test]
    fn a_scan_in_ranges_scores_every_row_once_in_order() {
        let dim = 8;
        let rows = SCAN_ROWS_PER_THREAD * 3 + 17;
        let mut next = noise(11u64);
        let mut v = Vectors::empty("m", dim);
        for i in 0..rows {
            let kind = if i % 5 == 0 { "page" } else { "claim" };
            let row: Vec<f32> = (0..dim).map(|_| next()).collect();
            v.insert((kind, format!("d{i}")), (0, 0), None, &[unit(&row)]);
        }
        let q = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        let kinds = [crate::model::DocKind::Claim];
        let got = v.score_rows(&q, &kinds);
        let want: Vec<(f32, usize)> = (0..rows)
            .filter(|r| v.owners[*r].0 == "claim")
            .map(|r| (v.dot(r, &q), r))
            .collect();
        assert_eq!(got.len(), rows - rows.div_ceil(5));
        assert_eq!(got, want);
    }

    /// Sorting only the head answers what sorting every row answers,
    /// documents and scores, even when the vectors crowd together as real
    /// embeddings of one topic do.
    #[test]
    fn sorting_only_the_head_answers_what_sorting_every_row_answers() {
        let dim = 384;
        let mut next = noise(5u64);
        let topic: Vec<f32> = (0..dim).map(|_| next()).collect();
        let mut v = Vectors::empty("m", dim);
        for i in 0..5000 {
            // Close to one topic: cosines with the query bunch within a
            // few hundredths, where rounding could reorder them.
            let row: Vec<f32> = topic.iter().map(|t| t + 0.15 * next()).collect();
            v.insert(("claim", format!("d{i:04}")), (0, 0), None, &[unit(&row)]);
        }
        let q = unit(&topic.iter().map(|t| t + 0.1 * next()).collect::<Vec<_>>());
        let kinds = [crate::model::DocKind::Claim];
        let got: Vec<(String, f32)> = v
            .nearest(&q, &kinds, Currency::Any, 50)
            .into_iter()
            .map(|(k, s)| (k.id.to_string(), s))
            .collect();
        let mut exact: Vec<(f32, usize)> = (0..5000).map(|r| (v.dot(r, &q), r)).collect();
        exact.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| v.owners[a.1].cmp(&v.owners[b.1]))
        });
        let want: Vec<(String, f32)> = exact[..50]
            .iter()
            .map(|&(s, r)| (v.owners[r].1.clone(), s))
            .collect();
        assert_eq!(got, want);
        // The scores did bunch: the 50 best lie within a narrow band.
        assert!(
            want[0].1 - want[49].1 < 0.1,
            "{} .. {}",
            want[0].1,
            want[49].1
        );
    }

    #[test]
    fn int8_rows_keep_the_cosine_within_a_few_thousandths() {
        let dim = 384;
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let a = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        let b = unit(&(0..dim).map(|_| next() + a[0]).collect::<Vec<_>>());
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let mut v = Vectors::empty("m", dim);
        v.insert(
            ("claim", "a".into()),
            (1, 1),
            None,
            std::slice::from_ref(&a),
        );
        let approx = v.similarity("claim", "a", &b).unwrap();
        assert!((approx - exact).abs() < 0.005, "{approx} vs {exact}");
    }
}

#[cfg(test)]
mod kept_in_step {
    use super::*;
    use crate::methods::dispatch;
    use crate::{Caller, Transport};
    use serde_json::json;

    /// Words hashed into 32 dimensions: texts sharing words are close.
    struct Words;

    impl Embedder for Words {
        fn model_id(&self) -> &str {
            "words@test/32/0"
        }
        fn dimensions(&self) -> usize {
            32
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
            let mut v = vec![0f32; 32];
            for w in crate::retrieval::query_terms_unbounded(text) {
                let h = crate::ids::sha256_hex(w.as_bytes());
                v[usize::from_str_radix(&h[..2], 16).unwrap() % 32] += 1.0;
            }
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            Ok(v.into_iter().map(|x| x / n).collect())
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<Vec<f32>>>> {
            texts
                .iter()
                .map(|t| Ok(vec![self.embed_query(t)?]))
                .collect()
        }
    }

    fn semantic(kb: &Kb, q: &str) -> Vec<String> {
        let caller = Caller::new("agent", Transport::Jsonl);
        dispatch(
            kb,
            &caller,
            "kb.search",
            json!({"query": q, "backend": "embedding", "kinds": ["claim"]}),
        )
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_string())
        .collect()
    }

    /// A claim proposed by an agent citing the one source "notes", approved by a
    /// person; its id.
    fn approved_claim(kb: &Kb, text: &str) -> String {
        let src = crate::testing::test_source(kb, "notes");
        crate::testing::test_claim(kb, &src, text)
    }

    /// A long-running process: the vectors follow its own writes (by the
    /// keys the write hook names) and edits made outside it (by the keys
    /// the index sync names), without looking at every document again.
    #[test]
    fn vectors_follow_writes_and_outside_edits_by_key() {
        let (_dir, mut kb) = crate::testing::test_kb();
        kb.set_embedder(Arc::new(Words));
        kb.set_index_sync_interval(Duration::ZERO);
        let claim = |text: &str| approved_claim(&kb, text);
        let a = claim("alpha bravo charlie");
        assert_eq!(semantic(&kb, "alpha bravo charlie")[0], a);
        // Looked once at everything; from now on only at what changed.
        assert_eq!(
            *kb.index_state.doc_changes.lock().unwrap(),
            Some(Vec::new())
        );
        let b = claim("delta echo foxtrot");
        assert_eq!(
            kb.index_state
                .doc_changes
                .lock()
                .unwrap()
                .as_ref()
                .map(Vec::len),
            Some(1),
            "the write hook named the new claim"
        );
        assert_eq!(semantic(&kb, "delta echo foxtrot")[0], b);
        // Edited by hand: the sync names it, and its vector follows.
        let path = kb.layout().file(crate::store::Dir::Claims, &a).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(
            &path,
            text.replace("alpha bravo charlie", "golf hotel india"),
        )
        .unwrap();
        assert_eq!(semantic(&kb, "golf hotel india")[0], a);
        // Removed by hand: gone from the vectors.
        std::fs::remove_file(&path).unwrap();
        assert!(!semantic(&kb, "golf hotel india").contains(&a));
        let v = kb.index_state.vectors.read().unwrap();
        assert_eq!(v.as_ref().unwrap().documents(), 2, "b and the source");
    }

    /// A search while another thread (a server's background refresh) is
    /// embedding waits for it within its budget, and finds the claim that
    /// was approved before it started — by meaning, as words would.
    #[test]
    fn a_search_waits_for_a_refresh_in_progress_and_sees_the_new_claim() {
        let (_dir, mut kb) = crate::testing::test_kb();
        kb.set_embedder(Arc::new(Words));
        kb.set_index_sync_interval(Duration::ZERO);
        let claim = approved_claim(&kb, "kilo lima mike");
        let kb = Arc::new(kb);
        // The "refresh" holds the embedding lock for a while, as a slow
        // refresh on a busy machine does, then lets go without embedding.
        let (locked, is_locked) = std::sync::mpsc::channel();
        let holder = kb.clone();
        let releaser = std::thread::spawn(move || {
            let held = holder.index_state.embedding.lock().unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        is_locked.recv().unwrap();
        let found = semantic(&kb, "kilo lima mike");
        releaser.join().unwrap();
        assert_eq!(found.first(), Some(&claim), "{found:?}");
    }

    /// A search whose vectors are in step with a recently synced index
    /// takes no lock a writer holds: it answers while another thread holds
    /// the main index connection (as a writer or the watcher does).
    #[test]
    fn a_search_in_step_does_not_wait_for_the_main_connection() {
        let (_dir, mut kb) = crate::testing::test_kb();
        kb.set_embedder(Arc::new(Words));
        kb.set_index_sync_interval(Duration::from_secs(600));
        let claim = approved_claim(&kb, "november oscar papa");
        assert_eq!(semantic(&kb, "november oscar papa")[0], claim);
        let kb = Arc::new(kb);
        let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (locked, is_locked) = std::sync::mpsc::channel();
        let (holder, flag) = (kb.clone(), released.clone());
        let writer = std::thread::spawn(move || {
            let held = holder.index_state.index.lock().unwrap();
            locked.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(1500));
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            drop(held);
        });
        is_locked.recv().unwrap();
        let found = semantic(&kb, "november oscar papa");
        let waited = released.load(std::sync::atomic::Ordering::SeqCst);
        writer.join().unwrap();
        assert_eq!(found.first(), Some(&claim), "{found:?}");
        assert!(!waited, "the search waited for the main connection");
    }

    /// The fast path never trades freshness: with a sync interval of ten
    /// minutes, a claim approved after the vectors were in step is found
    /// by meaning by the very next search.
    #[test]
    fn the_fast_path_still_sees_an_approval_made_a_moment_ago() {
        let (_dir, mut kb) = crate::testing::test_kb();
        kb.set_embedder(Arc::new(Words));
        kb.set_index_sync_interval(Duration::from_secs(600));
        let first = approved_claim(&kb, "quebec romeo sierra");
        assert_eq!(semantic(&kb, "quebec romeo sierra")[0], first);
        // In step now: the next search takes the fast path unless the
        // approval below sends it the slow way.
        assert_eq!(semantic(&kb, "quebec romeo sierra")[0], first);
        let second = approved_claim(&kb, "tango uniform victor");
        let found = semantic(&kb, "tango uniform victor");
        assert_eq!(found.first(), Some(&second), "{found:?}");
    }
}
