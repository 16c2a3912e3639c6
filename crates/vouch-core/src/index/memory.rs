//! The in-memory copy of the vectors that semantic search scans: every
//! embedded document of one model in one flat int8 array, with the
//! document each row belongs to. Written once for every engine: the
//! embedding schedule keeps it in step with an engine's stored vectors
//! ([`crate::index::engine::VectorRead`]).

use crate::error::{Error, Result};
use crate::index::engine::Sig;
use crate::index::rows::Int8Rows;
use crate::index::vector_docs::Docs;
use crate::index::{Currency, SEARCH_KINDS};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

mod copy;
mod signs;
use signs::{Signs, sign_bits};

pub(crate) type DocKey = (&'static str, String);

/// Every embedded document of one model, in one flat array (rows of
/// `dim` bytes) so a scan streams through it. Rows are quantized to
/// int8 with a scale per row: a quarter of the memory of f32 (49 MB, not
/// 197 MB, at 128,000 documents) and a faster scan, for a cosine within
/// about 0.005 of the exact one. `state.db` keeps the exact f32 vectors.
/// Past 64 MiB the rows live in a file ([`Int8Rows`]); the sign bits,
/// scales and owners stay in memory, each document's key once
/// ([`Docs`]).
pub struct Vectors {
    pub(crate) model: String,
    pub(crate) dim: usize,
    rows: Int8Rows,
    /// Per row: the factor that turns an int8 dot product back into a
    /// cosine.
    scales: Vec<f32>,
    /// Per row: the sign of each component, one bit each, in
    /// `dim.div_ceil(64)` words, eight rows a block: what a large scan
    /// reads first ([`Vectors::nearest`]).
    signs: Signs,
    /// Per row: the document it belongs to (its slot in `docs`).
    owners: Vec<u32>,
    /// Per row: its owner's kind, as its place in [`SEARCH_KINDS`] — what
    /// a scan that leaves kinds out reads, a byte a row (`u8::MAX`: a row
    /// no scan finds).
    kinds: Vec<u8>,
    docs: Docs,
    /// The index change counter this copy was last checked against.
    pub(crate) synced: u64,
    /// Documents the last check left without vectors (the budget ran out).
    /// Set when a step starts embedding and after each of its batches, so
    /// a read while it works says how partial it is.
    pub(crate) pending: usize,
    /// Documents the model could not embed, by the signature it failed on:
    /// not tried again until their file changes.
    pub(crate) failed: HashMap<DocKey, Sig>,
    /// Rows added or removed since these vectors were read from the copy
    /// beside the index (`copy`), or since it was last written or tried;
    /// `None`: never.
    pub(crate) since_copy: Option<usize>,
}

/// Which held documents a check met, by slot; and the slot after the
/// last one met.
pub(crate) struct Met(Vec<bool>, u32);

/// The index's name for a kind, as a `'static` string; `None` for one it
/// does not know.
pub fn kind_static(kind: &str) -> Option<&'static str> {
    SEARCH_KINDS.iter().map(|k| k.as_str()).find(|k| *k == kind)
}

impl Vectors {
    pub(crate) fn empty(model: &str, dim: usize) -> Vectors {
        Vectors {
            model: model.to_string(),
            dim,
            rows: Int8Rows::new(dim),
            scales: Vec::new(),
            signs: Signs::new(dim.div_ceil(64)),
            owners: Vec::new(),
            kinds: Vec::new(),
            docs: Docs::default(),
            synced: 0,
            pending: 0,
            failed: HashMap::new(),
            since_copy: None,
        }
    }

    /// Rows past `at` bytes move to an unnamed file in `dir` (the index's
    /// folder).
    pub(crate) fn spill_into(mut self, dir: std::path::PathBuf, at: usize) -> Vectors {
        self.rows.spill_into(dir, at);
        self
    }

    /// Documents with vectors in memory.
    pub fn documents(&self) -> usize {
        self.docs.len()
    }
    /// Documents without vectors: what the last check left (the budget ran
    /// out) or a step embedding now has not reached yet, and what the model
    /// failed on ([`Vectors::failed`]).
    pub fn pending(&self) -> usize {
        self.pending + self.failed.len()
    }

    /// Documents the model failed on: no step embeds them again until
    /// their files change.
    pub fn failed(&self) -> usize {
        self.failed.len()
    }

    /// Every document with vectors here.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = DocKey> + '_ {
        self.docs.keys().map(|(k, id)| (k, id.to_string()))
    }

    /// A check's marks of which held documents it met ([`Vectors::restate`]).
    pub(crate) fn met(&self) -> Met {
        Met(vec![false; self.docs.slots_len()], 0)
    }

    /// `key`'s signature when its vectors were made, with `status` (as the
    /// index has it now) recorded for it and the document marked met;
    /// `None` if it has none.
    ///
    /// A check walks the documents in the order the engine lists them,
    /// which is the order a copy read back holds them in: the slot after
    /// the last one met is tried first, and the table only when it is not
    /// the document (a million lookups that each missed the cache took a
    /// second).
    pub(crate) fn restate(
        &mut self,
        (kind, id): (&str, &str),
        status: Option<&str>,
        met: &mut Met,
    ) -> Option<Sig> {
        let next = met.1;
        let slot = match self.docs.is(next, kind, id) {
            true => next,
            false => self.docs.find(kind, id)?,
        };
        self.docs.set_status(slot, status);
        if let Some(m) = met.0.get_mut(slot as usize) {
            *m = true;
        }
        met.1 = slot.wrapping_add(1);
        Some(self.docs.sig(slot))
    }

    /// The held documents a check did not meet: every one, or those of
    /// `among`.
    pub(crate) fn unmet(&self, met: &Met, among: Option<&HashSet<DocKey>>) -> Vec<DocKey> {
        let unmet = |slot: u32| !met.0.get(slot as usize).copied().unwrap_or(false);
        let owned = |(kind, id): (&'static str, &str)| (kind, id.to_string());
        match among {
            Some(keys) => keys
                .iter()
                .filter(|k| self.docs.find(k.0, &k.1).is_some_and(unmet))
                .cloned()
                .collect(),
            None => self
                .docs
                .live_slots()
                .filter(|&s| unmet(s))
                .map(|s| owned(self.docs.key(s)))
                .collect(),
        }
    }

    pub(crate) fn remove(&mut self, key: &DocKey) -> Result<()> {
        let Some(slot) = self.docs.find(key.0, &key.1) else {
            return Ok(());
        };
        let mut rows = self.docs.take(slot);
        self.copy_drift(rows.len());
        rows.sort_unstable_by(|a, b| b.cmp(a));
        for (n, &row) in rows.iter().enumerate() {
            let row = row as usize;
            let last = self.owners.len() - 1;
            if let Err(e) = self.rows.swap_remove(row) {
                // The rows not removed stay, of no kind: no scan finds
                // them again.
                for r in &rows[n..] {
                    self.kinds[*r as usize] = u8::MAX;
                }
                return Err(rows_failed(e));
            }
            if row != last {
                // The last row moved into the hole: repoint its owner.
                self.scales[row] = self.scales[last];
                self.signs.copy_row(last, row);
                let moved = self.owners[last];
                if moved != slot {
                    self.docs.move_row(moved, last, row);
                }
                self.owners.swap(row, last);
                self.kinds.swap(row, last);
            }
            self.owners.pop();
            self.kinds.pop();
            self.scales.pop();
            self.signs.truncate(last);
        }
        Ok(())
    }

    /// One more chunk of `key`'s, as stored: a document's chunks come one
    /// after another, the first holding it (with `sig`; its status comes
    /// from the check that follows a load).
    pub(crate) fn push_chunk(&mut self, key: &DocKey, sig: Sig, v: &[f32]) {
        let slot = match self.docs.find(key.0, &key.1) {
            Some(slot) => slot,
            None => match self.docs.add(key.0, &key.1, sig, None) {
                Some(slot) => slot,
                None => return,
            },
        };
        self.push_row(slot, v);
    }

    fn push_row(&mut self, slot: u32, v: &[f32]) {
        let row = self.owners.len();
        self.kinds.push(self.docs.kind(slot));
        self.owners.push(slot);
        self.docs.push_row(slot, row);
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
        let bytes: Vec<u8> = v
            .iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8 as u8)
            .collect();
        self.rows.push(&bytes);
        self.scales.push(scale);
        self.signs.push(v);
    }

    fn copy_drift(&mut self, rows: usize) {
        if let Some(n) = &mut self.since_copy {
            *n += rows;
        }
    }

    /// Rows held (each document has one a chunk).
    pub(crate) fn rows_len(&self) -> usize {
        self.owners.len()
    }

    /// The cosines of `rows` with `query`, in row order.
    /// A shortlist's rows are each a read of their own from a file (a
    /// system call), so a long one is read by a thread a core.
    fn dots(&self, rows: &[usize], query: &[f32]) -> Result<Vec<(f32, usize)>> {
        let mut sorted = rows.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        on_threads(sorted.len(), GATHER_ROWS_PER_THREAD, |part| {
            let mut out = Vec::with_capacity(part.len());
            self.rows.gather(&sorted[part], |row, bytes| {
                out.push((dot_i8(bytes, query) * self.scales[row], row))
            })?;
            Ok(out)
        })
        .map_err(rows_failed)
    }

    pub(crate) fn insert(
        &mut self,
        key: DocKey,
        sig: Sig,
        status: Option<String>,
        chunks: &[Vec<f32>],
    ) -> Result<()> {
        self.remove(&key)?;
        self.failed.remove(&key);
        let Some(slot) = self.docs.add(key.0, &key.1, sig, status.as_deref()) else {
            return Ok(());
        };
        self.copy_drift(chunks.len());
        for v in chunks {
            self.push_row(slot, v);
        }
        Ok(())
    }

    /// The `want` documents nearest `query` (cosine; vectors are unit
    /// length), best chunk per document, filtered by kind and currency.
    ///
    /// A large set is scanned in two steps: every row's sign bits first (a
    /// popcount over 48 bytes a row, an eighth of the int8 rows), then the
    /// [`SHORTLIST_PER_HIT`] × `want` rows whose signs agree most with the
    /// query's, scored exactly. The shortlist keeps what an exact scan
    /// ranks first (`vouch-bench scan-recall` measures how much of it on a
    /// real knowledge base); when filtering leaves it short of `want`, the
    /// exact scan answers.
    pub fn nearest(
        &self,
        query: &[f32],
        kinds: &[crate::model::DocKind],
        currency: Currency,
        want: usize,
    ) -> Result<Vec<(DocKeyRef<'_>, f32)>> {
        self.nearest_by(query, (kinds, currency, want), Scan::TwoStep)
    }

    /// [`Vectors::nearest`], by the scan given (`Scan::Exact` to compare).
    pub fn nearest_by(
        &self,
        query: &[f32],
        (kinds, currency, want): (&[crate::model::DocKind], Currency, usize),
        scan: Scan,
    ) -> Result<Vec<(DocKeyRef<'_>, f32)>> {
        if query.len() != self.dim || want == 0 {
            return Ok(Vec::new());
        }
        if scan == Scan::TwoStep && self.owners.len() >= SHORTLIST_FROM_ROWS {
            let shortlist = self.shortlist(query, kinds, want * SHORTLIST_PER_HIT);
            let out = self.best(self.dots(&shortlist, query)?, currency, want);
            if out.len() == want {
                return Ok(out);
            }
        }
        Ok(self.best(self.score_rows(query, kinds)?, currency, want))
    }

    /// The `len` rows of `kinds` whose sign bits differ least from the
    /// query's (at a tie, the lower rows), found per range of rows at once
    /// ([`Vectors::in_ranges`]): each range's `len` nearest hold the
    /// whole set's.
    fn shortlist(&self, query: &[f32], kinds: &[crate::model::DocKind], len: usize) -> Vec<usize> {
        let admits = admits(kinds);
        let q = sign_bits(query);
        let table = signs::Table {
            signs: &self.signs,
            kinds: &self.kinds,
        };
        let scan = |range: std::ops::Range<usize>| Ok(table.nearest(&q, range, len, &admits));
        // Sign bits are in memory: the scan reads no file, so cannot fail.
        signs::cut(self.in_ranges(scan).unwrap_or_default(), len)
            .into_iter()
            .map(|(_, row)| row as usize)
            .collect()
    }

    /// The best `want` documents among scored rows: sort only the top; a
    /// document's best chunk comes first, later chunks are skipped.
    fn best(
        &self,
        mut scored: Vec<(f32, usize)>,
        currency: Currency,
        want: usize,
    ) -> Vec<(DocKeyRef<'_>, f32)> {
        let key = |row: usize| self.docs.key(self.owners[row]);
        let by_score = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0).then_with(|| key(a.1).cmp(&key(b.1)))
        };
        let mut top = want * 4 + 64;
        loop {
            let cut = top.min(scored.len());
            if cut < scored.len() {
                scored.select_nth_unstable_by(cut, by_score);
            }
            let mut head: Vec<(f32, usize)> = scored[..cut].to_vec();
            head.sort_by(by_score);
            let mut seen: HashSet<u32> = HashSet::new();
            let mut out = Vec::new();
            for (score, row) in head {
                let slot = self.owners[row];
                if !seen.insert(slot) {
                    continue;
                }
                let status = self.docs.status(slot);
                if !currency.admits(status) {
                    continue;
                }
                let (kind, id) = self.docs.key(slot);
                out.push((DocKeyRef { kind, id, status }, score));
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

    /// Every row of `kinds` with its score, in row order.
    pub(crate) fn score_rows(
        &self,
        query: &[f32],
        kinds: &[crate::model::DocKind],
    ) -> Result<Vec<(f32, usize)>> {
        let admits = admits(kinds);
        self.in_ranges(|range| {
            let mut out = Vec::new();
            self.rows.scan(range, |row, bytes| {
                if admits(self.kinds[row]) {
                    out.push((dot_i8(bytes, query) * self.scales[row], row));
                }
            })?;
            Ok(out)
        })
        .map_err(rows_failed)
    }

    /// `scan` over every row, a large set cut into one range per core (at
    /// most [`SCAN_THREADS`]) scanned at once; the ranges' answers joined
    /// in row order.
    fn in_ranges<T: Send>(
        &self,
        scan: impl Fn(std::ops::Range<usize>) -> std::io::Result<Vec<T>> + Sync,
    ) -> std::io::Result<Vec<T>> {
        on_threads(self.owners.len(), SCAN_ROWS_PER_THREAD, scan)
    }

    /// The cosine of one document's best chunk with `query`, if embedded.
    pub fn similarity(&self, kind: &str, id: &str, query: &[f32]) -> Result<Option<f32>> {
        let Some(slot) = self.docs.find(kind, id) else {
            return Ok(None);
        };
        let rows: Vec<usize> = self.docs.rows(slot).collect();
        Ok(self
            .dots(&rows, query)?
            .into_iter()
            .map(|(score, _)| score)
            .max_by(f32::total_cmp))
    }
}

/// How [`Vectors::nearest_by`] scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Every row scored exactly.
    Exact,
    /// Sign bits first on a large set, then a shortlist scored exactly.
    TwoStep,
}

/// Sets of at least this many rows are scanned by sign bits first: below
/// it, scoring every row exactly takes under a millisecond.
pub const SHORTLIST_FROM_ROWS: usize = 32_768;
/// Rows scored exactly per document asked for, after the sign-bit scan.
pub const SHORTLIST_PER_HIT: usize = 100;

/// Whether a row of a kind (its place in [`SEARCH_KINDS`]) is scanned: a
/// bit a kind, tested without a branch per kind asked.
fn admits(kinds: &[crate::model::DocKind]) -> impl Fn(u8) -> bool + Sync {
    let mask: u32 = SEARCH_KINDS
        .iter()
        .enumerate()
        .filter(|(_, k)| kinds.contains(k))
        .fold(0, |m, (i, _)| m | 1 << i);
    move |kind| kind < 32 && mask & (1 << kind) != 0
}

/// Most threads one vector scan uses, and the fewest rows worth a thread
/// of their own (below that, starting it costs more than it saves).
const SCAN_THREADS: usize = 4;
const SCAN_ROWS_PER_THREAD: usize = 16_384;
/// Shortlisted rows worth a thread of their own (each a positioned read
/// when the rows are in a file).
const GATHER_ROWS_PER_THREAD: usize = 1_024;

/// `scan` over `0..len`, cut into one range per core (at most
/// [`SCAN_THREADS`], each at least `per_thread` long) scanned at once;
/// the ranges' answers joined in order.
fn on_threads<T: Send>(
    len: usize,
    per_thread: usize,
    scan: impl Fn(std::ops::Range<usize>) -> std::io::Result<Vec<T>> + Sync,
) -> std::io::Result<Vec<T>> {
    // Asked once: the answer reads the process's cgroup files.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let threads = cores.min(SCAN_THREADS).min(len / per_thread);
    if threads <= 1 {
        return scan(0..len);
    }
    let per = len.div_ceil(threads);
    let scan = &scan;
    std::thread::scope(|s| {
        let parts: Vec<_> = (1..threads)
            .map(|t| {
                let range = t * per..((t + 1) * per).min(len);
                s.spawn(move || scan(range))
            })
            .collect();
        let mut out = scan(0..per.min(len))?;
        for part in parts {
            // A scan of plain arithmetic cannot panic but by a bug.
            out.extend(part.join().expect("vector scan thread")?);
        }
        Ok(out)
    })
}

/// Σ a·b in eight independent lanes: a single running sum is one long
/// dependency chain the compiler may not reorder (float addition is not
/// associative); eight lanes let it use SIMD: 116,120 rows scan in 5.5 ms
/// instead of 27.4 ms (`vouch-bench scan`).
fn dot_i8(a: &[u8], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] as i8 as f32 * y[i];
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| *x as i8 as f32 * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// Numbers in -0.5..0.5 from `seed` (xorshift): vectors for a benchmark
/// or a test, the same every run.
pub(crate) fn noise(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// The cost of one semantic scan: `rows` random int8 vectors of `dim`,
/// the best `want` of them for a random query (for `vouch-bench`); with
/// `spill`, the rows past 64 MiB are in a file in that folder, as a
/// server's are.
pub fn time_scan(
    rows: usize,
    dim: usize,
    (want, runs): (usize, usize),
    spill: Option<&std::path::Path>,
) -> Result<Vec<Duration>> {
    let mut next = noise(0x9e3779b97f4a7c15u64);
    let mut v = Vectors::empty("bench", dim);
    if let Some(dir) = spill {
        v = v.spill_into(dir.to_path_buf(), crate::index::rows::SPILL_BYTES);
    }
    for i in 0..rows {
        let row: Vec<f32> = (0..dim).map(|_| next()).collect();
        v.insert(
            ("claim", format!("c{i}")),
            (0, 0),
            Some("working".into()),
            &[row],
        )?;
    }
    (0..runs)
        .map(|_| {
            let q: Vec<f32> = (0..dim).map(|_| next()).collect();
            let t = Instant::now();
            let hits = v.nearest(&q, &[crate::model::DocKind::Claim], Currency::Current, want)?;
            let took = t.elapsed();
            assert_eq!(hits.len(), want.min(rows));
            Ok(took)
        })
        .collect()
}

/// A failure reading or writing the rows' file.
fn rows_failed(e: std::io::Error) -> Error {
    Error::io(
        std::path::Path::new("the vectors' file (unnamed, in the index folder)"),
        e,
    )
}

/// A document a scan found, borrowed from the vectors.
pub struct DocKeyRef<'a> {
    /// `claim`, `page`, `entity` or `source`.
    pub kind: &'static str,
    /// The document's id.
    pub id: &'a str,
    /// Its status as the index has it; `None` for entities and sources.
    pub status: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(v: &Vectors, row: usize, q: &[f32]) -> f32 {
        v.dots(&[row], q).unwrap()[0].0
    }

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
        )
        .unwrap();
        v.insert(
            doc("b"),
            (1, 1),
            Some("superseded".into()),
            &[unit(&[0.0, 1.0, 0.0]), unit(&[0.9, 0.1, 0.0])],
        )
        .unwrap();
        v.insert(doc("c"), (1, 1), None, &[unit(&[0.0, 0.0, 1.0])])
            .unwrap();
        let q = unit(&[1.0, 0.05, 0.0]);
        let ids = |v: &Vectors, c: Currency| -> Vec<String> {
            v.nearest(&q, &[crate::model::DocKind::Claim], c, 10)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k.id.to_string())
                .collect()
        };
        // b's second chunk is close to the query; it answers for b, once.
        assert_eq!(ids(&v, Currency::Any), ["a", "b", "c"]);
        assert_eq!(ids(&v, Currency::Current), ["a", "c"]);
        assert!(
            v.nearest(&q, &[crate::model::DocKind::Page], Currency::Any, 10)
                .unwrap()
                .is_empty()
        );
        // Removing a moves the last row (c) into its place.
        v.remove(&doc("a")).unwrap();
        assert_eq!(ids(&v, Currency::Any), ["b", "c"]);
        let c = v
            .similarity("claim", "c", &unit(&[0.0, 0.0, 1.0]))
            .unwrap()
            .unwrap();
        assert!((c - 1.0).abs() < 0.01, "{c}");
        v.remove(&doc("b")).unwrap();
        assert_eq!(ids(&v, Currency::Any), ["c"]);
        assert_eq!(v.rows.len(), 1);
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
            v.insert((kind, format!("d{i}")), (0, 0), None, &[unit(&row)])
                .unwrap();
        }
        let q = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        let kinds = [crate::model::DocKind::Claim];
        let got = v.score_rows(&q, &kinds).unwrap();
        let want: Vec<(f32, usize)> = (0..rows)
            .filter(|r| v.docs.key(v.owners[*r]).0 == "claim")
            .map(|r| (dot(&v, r, &q), r))
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
            v.insert(("claim", format!("d{i:04}")), (0, 0), None, &[unit(&row)])
                .unwrap();
        }
        let q = unit(&topic.iter().map(|t| t + 0.1 * next()).collect::<Vec<_>>());
        let kinds = [crate::model::DocKind::Claim];
        let got: Vec<(String, f32)> = v
            .nearest(&q, &kinds, Currency::Any, 50)
            .unwrap()
            .into_iter()
            .map(|(k, s)| (k.id.to_string(), s))
            .collect();
        let mut exact: Vec<(f32, usize)> = (0..5000).map(|r| (dot(&v, r, &q), r)).collect();
        exact.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| v.docs.key(v.owners[a.1]).cmp(&v.docs.key(v.owners[b.1])))
        });
        let want: Vec<(String, f32)> = exact[..50]
            .iter()
            .map(|&(s, r)| (v.docs.key(v.owners[r]).1.to_string(), s))
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

    /// The sign-bit shortlist is the `len` rows nearest by sign bits, at a
    /// tie the lower rows — exactly what sorting every row would keep —
    /// though each range keeps at most twice `len` rows as it goes. With
    /// 16 dimensions distances tie by the thousand.
    #[test]
    fn the_shortlist_keeps_what_sorting_every_row_keeps() {
        let dim = 16;
        let mut next = noise(21u64);
        let mut v = Vectors::empty("m", dim);
        let rows = SCAN_ROWS_PER_THREAD * 2 + 999;
        for i in 0..rows {
            let kind = if i % 7 == 0 { "page" } else { "claim" };
            let row: Vec<f32> = (0..dim).map(|_| next()).collect();
            v.insert((kind, format!("d{i}")), (0, 0), None, &[unit(&row)])
                .unwrap();
        }
        let q = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        let qbits = sign_bits(&q);
        let kinds = [crate::model::DocKind::Claim];
        let mut every: Vec<(u32, usize)> = (0..rows)
            .filter(|r| v.docs.key(v.owners[*r]).0 == "claim")
            .map(|r| ((v.signs.word(r, 0) ^ qbits[0]).count_ones(), r))
            .collect();
        every.sort();
        for len in [1, 10, 500, 5000] {
            let mut got = v.shortlist(&q, &kinds, len);
            got.sort_by_key(|r| ((v.signs.word(*r, 0) ^ qbits[0]).count_ones(), *r));
            let want: Vec<usize> = every[..len].iter().map(|e| e.1).collect();
            assert_eq!(got, want, "len {len}");
        }
    }

    /// A large set is scanned by sign bits first: the document nearest
    /// the query still comes first after rows moved (removals), and when
    /// filtering empties the shortlist the exact scan answers.
    #[test]
    fn the_two_step_scan_finds_the_nearest_and_falls_back_to_every_row() {
        two_step_scan(None);
    }

    /// The same with the rows in a file from the 65th on: the scans read
    /// them there, in order and scattered, and removals move them there.
    #[test]
    fn the_two_step_scan_reads_rows_spilled_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        two_step_scan(Some(dir.path()));
    }

    fn two_step_scan(spill: Option<&std::path::Path>) {
        let dim = 16;
        let mut next = noise(3u64);
        let mut v = Vectors::empty("m", dim);
        if let Some(dir) = spill {
            v = v.spill_into(dir.to_path_buf(), 64 * dim);
        }
        let rows = SHORTLIST_FROM_ROWS + 500;
        for i in 0..rows {
            let row: Vec<f32> = (0..dim).map(|_| next()).collect();
            v.insert(
                ("claim", format!("d{i:05}")),
                (0, 0),
                Some("superseded".into()),
                &[unit(&row)],
            )
            .unwrap();
        }
        let q = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        // One current document, far from the query; one close to it,
        // inserted last and moved to another row by the removals below.
        let far: Vec<f32> = q.iter().map(|x| -x).collect();
        v.insert(
            ("claim", "far".into()),
            (0, 0),
            Some("working".into()),
            &[far],
        )
        .unwrap();
        let near: Vec<f32> = q.iter().map(|x| x + 0.01).collect();
        v.insert(("claim", "near".into()), (0, 0), None, &[unit(&near)])
            .unwrap();
        for i in 0..300 {
            v.remove(&("claim", format!("d{i:05}"))).unwrap();
        }
        let kinds = [crate::model::DocKind::Claim];
        let ids = |hits: Vec<(DocKeyRef, f32)>| -> Vec<String> {
            hits.into_iter().map(|(k, _)| k.id.to_string()).collect()
        };
        // (How much of an exact top 10 the shortlist keeps on real
        // embeddings is measured, not asserted: `vouch-bench scan-recall`.)
        let got = ids(v.nearest(&q, &kinds, Currency::Any, 10).unwrap());
        assert_eq!(got.len(), 10);
        assert_eq!(got[0], "near");
        assert_eq!(
            ids(v
                .nearest_by(&q, (&kinds, Currency::Any, 1), Scan::Exact)
                .unwrap()),
            ["near"]
        );
        // Current knowledge only: the shortlist holds two current
        // documents at most, so the exact scan finds the far one too.
        let current = ids(v.nearest(&q, &kinds, Currency::Current, 2).unwrap());
        assert_eq!(current, ["near", "far"]);
        assert_eq!(v.rows.spilled(), spill.is_some());
    }

    #[test]
    fn int8_rows_keep_the_cosine_within_a_few_thousandths() {
        let dim = 384;
        let mut next = noise(7u64);
        let a = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
        let b = unit(&(0..dim).map(|_| next() + a[0]).collect::<Vec<_>>());
        let exact: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let mut v = Vectors::empty("m", dim);
        v.insert(
            ("claim", "a".into()),
            (1, 1),
            None,
            std::slice::from_ref(&a),
        )
        .unwrap();
        let approx = v.similarity("claim", "a", &b).unwrap().unwrap();
        assert!((approx - exact).abs() < 0.005, "{approx} vs {exact}");
    }
}
