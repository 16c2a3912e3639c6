//! A copy of the in-memory vectors kept beside the index
//! (`state.db-vectors`), so a process that needs them reads them in place
//! instead of loading every stored vector from the engine and quantizing
//! it again: at a million documents that load takes about ten seconds,
//! which a one-shot `vouch search` would pay every time.
//!
//! The file holds what [`Vectors`] holds — each document's key and the
//! signature its vectors were made at, each row's owner, scale and sign
//! bits, and the int8 rows — but no statuses (the check after a load sets
//! them from the index). The rows stay in the file and are read in place
//! ([`Int8Rows::shared`]); everything before them is read into memory.
//!
//! What it may be trusted with: the engine's stamp ([`VectorRead::copy_stamp`])
//! names the store it was made from (for SQLite, the `state.db` file this
//! installation made, with a random part), so a copy that arrived with a
//! clone, or outlived its `state.db`, is never read. A document whose file
//! changed since is found by its signature, as with the engine's own
//! vectors: the copy only saves reading what did not change. It is
//! derived: written whole to a temporary name and renamed, its contents
//! checked by a sha256, and anything odd about it means it is not used.
//!
//! [`VectorRead::copy_stamp`]: crate::index::engine::VectorRead::copy_stamp

use super::Vectors;
use crate::index::SEARCH_KINDS;
use crate::index::rows::Int8Rows;
use crate::index::vector_docs::Docs;
use sha2::{Digest, Sha256};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"VOUCHVEC";
const VERSION: u32 = 1;
/// The rows start on a boundary of this many bytes.
const ALIGN: u64 = 4096;
/// The most a prefix (keys, owners, scales, sign bits) may hold: far
/// above ten million documents', far below what a mistaken length would
/// have this process allocate.
const MOST_PREFIX: u64 = 8 << 30;

impl Vectors {
    /// Write this copy of the vectors to `path` under `stamp`: to a
    /// temporary name beside it, then renamed over it (a reader sees the
    /// old copy or the new, never half of one). Documents are written in
    /// the `order` given first (the order the engine lists them in, which
    /// the check after a load walks: its lookups then go through memory in
    /// order instead of missing the cache at every document — a second,
    /// not a fifth of one, at a million), then any others.
    pub(crate) fn write_copy<'k>(
        &self,
        path: &Path,
        stamp: &str,
        order: impl Iterator<Item = (&'k str, &'k str)>,
    ) -> io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        remove_abandoned(dir);
        let mut tmp = tempfile::Builder::new()
            .prefix(TMP_PREFIX)
            .tempfile_in(dir)?;
        {
            let mut out = io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
            let prefix = self.copy_prefix(stamp, order);
            out.write_all(&prefix)?;
            out.write_all(&Sha256::digest(&prefix))?;
            let written = prefix.len() as u64 + 32;
            out.write_all(&vec![
                0u8;
                (written.next_multiple_of(ALIGN) - written) as usize
            ])?;
            let mut failed = None;
            self.rows.scan(0..self.owners.len(), |_, row| {
                if failed.is_none()
                    && let Err(e) = out.write_all(row)
                {
                    failed = Some(e);
                }
            })?;
            if let Some(e) = failed {
                return Err(e);
            }
            out.flush()?;
        }
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Everything but the rows: the header, the documents, and per row
    /// its owner, scale and sign bits.
    fn copy_prefix<'k>(
        &self,
        stamp: &str,
        order: impl Iterator<Item = (&'k str, &'k str)>,
    ) -> Vec<u8> {
        let rows = self.owners.len();
        // Documents in the copy are numbered in `order`, then slot order;
        // live ones only, each once.
        let mut number = vec![u32::MAX; self.docs.slots_len()];
        let mut live: Vec<u32> = Vec::with_capacity(self.docs.len());
        let ordered = order.filter_map(|(kind, id)| self.docs.find(kind, id));
        for slot in ordered.chain(self.docs.live_slots()) {
            if number[slot as usize] == u32::MAX {
                number[slot as usize] = live.len() as u32;
                live.push(slot);
            }
        }
        let mut p = Vec::with_capacity(64 + live.len() * 48 + rows * (8 + self.signs.words() * 8));
        p.extend_from_slice(MAGIC);
        p.extend_from_slice(&0u64.to_le_bytes()); // the prefix's length, set below
        p.extend_from_slice(&VERSION.to_le_bytes());
        p.extend_from_slice(&(self.dim as u32).to_le_bytes());
        p.extend_from_slice(&(rows as u64).to_le_bytes());
        p.extend_from_slice(&(live.len() as u64).to_le_bytes());
        put_str(&mut p, &self.model);
        put_str(&mut p, stamp);
        for &slot in &live {
            let (kind, id) = self.docs.key(slot);
            let sig = self.docs.sig(slot);
            p.push(
                SEARCH_KINDS
                    .iter()
                    .position(|k| k.as_str() == kind)
                    .unwrap_or(0) as u8,
            );
            p.extend_from_slice(&sig.0.to_le_bytes());
            p.extend_from_slice(&sig.1.to_le_bytes());
            put_str(&mut p, id);
        }
        for &owner in &self.owners {
            p.extend_from_slice(&number[owner as usize].to_le_bytes());
        }
        for scale in &self.scales {
            p.extend_from_slice(&scale.to_le_bytes());
        }
        // Row by row, each row's words in order (whatever blocks memory
        // holds them in).
        for row in 0..self.signs.len() {
            for word in self.signs.row(row) {
                p.extend_from_slice(&word.to_le_bytes());
            }
        }
        let len = p.len() as u64;
        p[8..16].copy_from_slice(&len.to_le_bytes());
        p
    }

    /// The copy at `path`, if it is one of `model`'s vectors of `dim`
    /// made under `stamp`, whole and consistent; its rows are read in
    /// place, and copied into an unnamed file in `dir` before any is
    /// written. `Ok(None)` for no copy or one not to be used.
    pub(crate) fn read_copy(
        path: &Path,
        dir: PathBuf,
        (model, dim, stamp): (&str, usize, &str),
    ) -> io::Result<Option<Vectors>> {
        let mut file = match crate::store::nofollow::open(&dir, path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let mut head = [0u8; 16];
        if len < 16 || file.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
            return Ok(None);
        }
        let prefix_len = u64::from_le_bytes(head[8..16].try_into().unwrap_or_default());
        if !(16..=MOST_PREFIX).contains(&prefix_len) || prefix_len + 32 > len {
            return Ok(None);
        }
        let mut prefix = vec![0u8; prefix_len as usize + 32];
        prefix[..16].copy_from_slice(&head);
        file.read_exact(&mut prefix[16..])?;
        let (prefix, sum) = prefix.split_at(prefix_len as usize);
        if Sha256::digest(prefix).as_slice() != sum {
            return Ok(None);
        }
        let Some(parsed) = Parsed::read(prefix, (model, dim, stamp)) else {
            return Ok(None);
        };
        let at = (prefix_len + 32).next_multiple_of(ALIGN);
        if at + (parsed.rows * dim) as u64 != len {
            return Ok(None);
        }
        let mut v = Vectors::empty(model, dim);
        v.docs = Docs::with_capacity(parsed.docs.len());
        let mut slots = Vec::with_capacity(parsed.docs.len());
        for (kind, sig, id) in parsed.docs {
            match v.docs.add_new(kind, id, sig) {
                Some(slot) => slots.push(slot),
                // The same document twice: not a copy vouch made.
                None => return Ok(None),
            }
        }
        for (row, &owner) in parsed.owners.iter().enumerate() {
            let slot = slots[owner as usize];
            v.docs.push_row(slot, row);
            v.kinds.push(v.docs.kind(slot));
        }
        v.owners = parsed.owners.iter().map(|&o| slots[o as usize]).collect();
        v.scales = parsed.scales;
        v.signs = parsed.signs;
        v.rows = Int8Rows::shared(dim, file, at, parsed.rows, dir);
        Ok(Some(v))
    }
}

/// A copy being written is named so first (git-ignored by `.*.tmp-*`).
const TMP_PREFIX: &str = ".state.db-vectors.tmp-";

/// Copies a process began and never renamed (it was killed while
/// writing): gone after an hour, far longer than any write takes. Each is
/// as large as the copy.
fn remove_abandoned(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let hour = std::time::Duration::from_secs(3600);
    for entry in entries.flatten() {
        let abandoned = entry.file_name().to_string_lossy().starts_with(TMP_PREFIX)
            && entry
                .metadata()
                .ok()
                .filter(std::fs::Metadata::is_file)
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > hour);
        if abandoned {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn put_str(p: &mut Vec<u8>, s: &str) {
    p.extend_from_slice(&(s.len() as u32).to_le_bytes());
    p.extend_from_slice(s.as_bytes());
}

/// A copy's prefix, read and checked.
struct Parsed<'a> {
    rows: usize,
    docs: Vec<(&'static str, (i64, i64), &'a str)>,
    owners: Vec<u32>,
    scales: Vec<f32>,
    signs: super::signs::Signs,
}

/// Reads a prefix from its start; every read checks its bounds.
struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }
}

impl<'a> Parsed<'a> {
    fn read(prefix: &'a [u8], (model, dim, stamp): (&str, usize, &str)) -> Option<Parsed<'a>> {
        let mut c = Cursor { bytes: prefix };
        c.take(16)?;
        if c.u32()? != VERSION || c.u32()? as usize != dim {
            return None;
        }
        let rows = usize::try_from(c.u64()?).ok()?;
        let docs = usize::try_from(c.u64()?).ok()?;
        if c.str()? != model || c.str()? != stamp {
            return None;
        }
        let words = dim.div_ceil(64);
        // Each count bounded by what is left before anything is allocated.
        if docs > c.bytes.len() / 21 || rows > c.bytes.len() / (8 + words * 8) {
            return None;
        }
        let mut parsed = Parsed {
            rows,
            docs: Vec::with_capacity(docs),
            owners: Vec::with_capacity(rows),
            scales: Vec::with_capacity(rows),
            signs: super::signs::Signs::with_capacity(words, rows),
        };
        for _ in 0..docs {
            let kind = SEARCH_KINDS.get(c.take(1)?[0] as usize)?.as_str();
            let sig = (c.i64()?, c.i64()?);
            let id = c.str()?;
            if id.is_empty() {
                return None;
            }
            parsed.docs.push((kind, sig, id));
        }
        for _ in 0..rows {
            let owner = c.u32()?;
            if owner as usize >= docs {
                return None;
            }
            parsed.owners.push(owner);
        }
        for _ in 0..rows {
            let scale = f32::from_le_bytes(c.take(4)?.try_into().ok()?);
            if !scale.is_finite() {
                return None;
            }
            parsed.scales.push(scale);
        }
        let mut row = vec![0u64; words];
        for _ in 0..rows {
            for word in &mut row {
                *word = c.u64()?;
            }
            parsed.signs.push_words(&row);
        }
        c.bytes.is_empty().then_some(parsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Currency;
    use crate::model::DocKind;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut next = crate::index::memory::noise(seed);
        let v: Vec<f32> = (0..dim).map(|_| next()).collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn some_vectors(dim: usize, docs: usize, dir: &Path) -> Vectors {
        let mut v = Vectors::empty("m", dim).spill_into(dir.to_path_buf(), 4 * dim);
        for i in 0..docs {
            let chunks: Vec<Vec<f32>> = (0..1 + i % 3)
                .map(|c| unit((i * 7 + c + 1) as u64, dim))
                .collect();
            let kind = if i % 5 == 0 { "page" } else { "claim" };
            v.insert(
                (kind, format!("d{i}")),
                (i as i64, 10 + i as i64),
                Some("working".into()),
                &chunks,
            )
            .unwrap();
        }
        // Some gone: rows move, slots are freed and taken again.
        for i in [3, 10, 11] {
            v.remove(&("claim", format!("d{i}"))).unwrap();
        }
        v.insert(("claim", "late".into()), (99, 99), None, &[unit(500, dim)])
            .unwrap();
        v
    }

    fn answers(v: &Vectors, dim: usize) -> Vec<Vec<(String, String, f32)>> {
        (0..8)
            .map(|q| {
                v.nearest_by(
                    &unit(1000 + q, dim),
                    (DocKind::ALL, Currency::Any, 10),
                    super::super::Scan::Exact,
                )
                .unwrap()
                .into_iter()
                .map(|(k, s)| (k.kind.to_string(), k.id.to_string(), s))
                .collect()
            })
            .collect()
    }

    /// A copy read back answers every search as the vectors it was made
    /// of, holds the same documents at the same signatures, and is
    /// written to only after its rows were copied away.
    #[test]
    fn a_copy_read_back_answers_as_the_vectors_it_was_made_of() {
        let dim = 70; // two sign words, the second partly used
        let dir = tempfile::tempdir().unwrap();
        let v = some_vectors(dim, 40, dir.path());
        let path = dir.path().join("state.db-vectors");
        // Some documents in an order given, the rest after them.
        let order = [
            ("claim", "d9"),
            ("page", "d0"),
            ("claim", "gone"),
            ("claim", "d9"),
        ];
        v.write_copy(&path, "stamp-1", order.into_iter()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let mut back = Vectors::read_copy(&path, dir.path().to_path_buf(), ("m", dim, "stamp-1"))
            .unwrap()
            .expect("the copy is read");
        assert_eq!(back.documents(), v.documents());
        assert_eq!(back.docs.key(0), ("claim", "d9"), "in the order given");
        assert_eq!(back.docs.key(1), ("page", "d0"));
        assert_eq!(answers(&back, dim), answers(&v, dim));
        let mut keys: Vec<_> = v.keys().collect();
        keys.sort();
        let mut back_keys: Vec<_> = back.keys().collect();
        back_keys.sort();
        assert_eq!(keys, back_keys);
        let mut met = back.met();
        assert_eq!(back.restate(("claim", "d7"), None, &mut met), Some((7, 17)));
        // Changes reach this process's rows, never the copy.
        back.remove(&("claim", "d1".into())).unwrap();
        back.insert(("claim", "new".into()), (1, 1), None, &[unit(77, dim)])
            .unwrap();
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "the copy is unchanged"
        );
        let mut after = v;
        after.remove(&("claim", "d1".into())).unwrap();
        after
            .insert(("claim", "new".into()), (1, 1), None, &[unit(77, dim)])
            .unwrap();
        assert_eq!(answers(&back, dim), answers(&after, dim));
    }

    /// Writing a copy removes one a killed process left half-written an
    /// hour or more ago, and leaves one that may still be being written.
    #[test]
    fn a_copy_left_half_written_long_ago_is_removed_when_the_next_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(format!("{TMP_PREFIX}old"));
        let new = dir.path().join(format!("{TMP_PREFIX}new"));
        for p in [&old, &new] {
            std::fs::write(p, b"half").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        some_vectors(8, 4, dir.path())
            .write_copy(
                &dir.path().join("state.db-vectors"),
                "s",
                std::iter::empty(),
            )
            .unwrap();
        assert!(!old.exists() && new.exists());
    }

    /// A copy under another stamp, model or size, or with any byte of its
    /// prefix changed or its end cut, is not read.
    #[test]
    fn a_copy_not_made_for_this_store_or_changed_is_not_read() {
        let dim = 8;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db-vectors");
        some_vectors(dim, 12, dir.path())
            .write_copy(&path, "stamp-1", std::iter::empty())
            .unwrap();
        let read = |want: (&str, usize, &str)| {
            Vectors::read_copy(&path, dir.path().to_path_buf(), want)
                .unwrap()
                .is_some()
        };
        assert!(read(("m", dim, "stamp-1")));
        assert!(!read(("m", dim, "stamp-2")), "another store's copy");
        assert!(!read(("other", dim, "stamp-1")), "another model's");
        assert!(!read(("m", dim + 1, "stamp-1")), "another size's");
        let good = std::fs::read(&path).unwrap();
        let prefix = u64::from_le_bytes(good[8..16].try_into().unwrap()) as usize;
        for at in [20, 60, prefix - 1, prefix + 5] {
            let mut bad = good.clone();
            bad[at] ^= 1;
            std::fs::write(&path, &bad).unwrap();
            assert!(!read(("m", dim, "stamp-1")), "a byte changed at {at}");
        }
        std::fs::write(&path, &good[..good.len() - 1]).unwrap();
        assert!(!read(("m", dim, "stamp-1")), "cut short");
        std::fs::write(&path, b"VOUCHVEC\xff\xff\xff\xff\xff\xff\xff\x7f").unwrap();
        assert!(!read(("m", dim, "stamp-1")), "a length past the file");
        std::fs::remove_file(&path).unwrap();
        assert!(!read(("m", dim, "stamp-1")), "no copy");
        #[cfg(unix)]
        {
            let elsewhere = tempfile::tempdir().unwrap();
            let target = elsewhere.path().join("v");
            std::fs::write(&target, &good).unwrap();
            std::os::unix::fs::symlink(&target, &path).unwrap();
            assert!(
                Vectors::read_copy(&path, dir.path().to_path_buf(), ("m", dim, "stamp-1")).is_err(),
                "a link is never followed"
            );
        }
    }
}
