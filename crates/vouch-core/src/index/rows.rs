//! The int8 rows semantic search scores: in memory while they are few,
//! in an unnamed file beside the index once they pass [`SPILL_BYTES`] —
//! a million documents' rows are 430 MB at 384 dimensions, which the
//! operating system's page cache can hold, or drop, without the process
//! keeping them.
//!
//! The file is read with positioned reads, not mapped: a mapping is
//! `unsafe` in Rust (another process changing the file under it breaks
//! the language's guarantees), and the scan reads either a few thousand
//! scattered rows (the sign-bit shortlist) or every row in order, both of
//! which positioned reads serve at memory speed from the page cache. The
//! file has no name (it is gone when the process is), so nothing is left
//! behind by a crash and no two processes share one.
//!
//! Rows may also start out in another file, read only: the copy of the
//! vectors kept beside the index ([`crate::index::memory`]'s `copy`),
//! which every process reads in place. Before the first row is written,
//! they are copied into a file of this process's own.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::path::PathBuf;

/// Rows past this many bytes move to a file: at 384 dimensions about
/// 175,000 rows — a knowledge base of 100,000 claims stays in memory.
pub(crate) const SPILL_BYTES: usize = 64 << 20;

/// Rows read from the file at once by an in-order scan (1.5 MB at 384
/// dimensions).
const CHUNK_ROWS: usize = 4096;

/// Rows held in memory before they are appended to the file.
const TAIL_ROWS: usize = 4096;

pub(crate) struct Int8Rows {
    dim: usize,
    len: usize,
    /// Every row while in memory; once spilled, the rows at and past
    /// `Spill::rows`, not written yet.
    memory: Vec<u8>,
    spill: Spill,
    /// A write to the file failed: the rows past it stay in memory.
    stuck: bool,
}

enum Spill {
    /// Never: no folder to spill into.
    Never,
    /// Not yet: into this folder once past `at` bytes.
    Into { dir: PathBuf, at: usize },
    /// The first `rows` rows are in `file`, from byte `at` on.
    File {
        file: File,
        at: u64,
        rows: usize,
        /// Some: the file is another's (read only); before any row is
        /// written, they are copied into an unnamed file in this folder.
        shared: Option<PathBuf>,
    },
}

impl Int8Rows {
    pub(crate) fn new(dim: usize) -> Int8Rows {
        Int8Rows {
            dim,
            len: 0,
            memory: Vec::new(),
            spill: Spill::Never,
            stuck: false,
        }
    }

    /// `rows` rows that are in `file` from byte `at` on, read in place:
    /// nothing is written to `file` (rows written are copied first into an
    /// unnamed file in `dir`).
    pub(crate) fn shared(dim: usize, file: File, at: u64, rows: usize, dir: PathBuf) -> Int8Rows {
        Int8Rows {
            dim,
            len: rows,
            memory: Vec::new(),
            spill: Spill::File {
                file,
                at,
                rows,
                shared: Some(dir),
            },
            stuck: false,
        }
    }

    /// Rows past `at` bytes move to an unnamed file in `dir`.
    pub(crate) fn spill_into(&mut self, dir: PathBuf, at: usize) {
        if cfg!(unix) && matches!(self.spill, Spill::Never) {
            self.spill = Spill::Into { dir, at };
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the rows are in a file.
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        matches!(self.spill, Spill::File { .. })
    }

    /// Bytes held in memory for rows (what was allocated, used or not).
    #[cfg(test)]
    pub(crate) fn memory_bytes(&self) -> usize {
        self.memory.capacity()
    }

    fn on_disk(&self) -> usize {
        match self.spill {
            Spill::File { rows, .. } => rows,
            _ => 0,
        }
    }

    /// Append one row of `dim` bytes. Rows the file does not take (a
    /// full disk) stay in memory: the answers are the same, only the
    /// memory is not saved.
    pub(crate) fn push(&mut self, row: &[u8]) {
        debug_assert_eq!(row.len(), self.dim);
        self.memory.extend_from_slice(row);
        self.len += 1;
        match &mut self.spill {
            Spill::Into { dir, at } if self.memory.len() > *at => {
                self.spill = match tempfile::tempfile_in(&*dir) {
                    Ok(file) => Spill::File {
                        file,
                        at: 0,
                        rows: 0,
                        shared: None,
                    },
                    Err(_) => Spill::Never,
                };
                self.flush();
            }
            Spill::File { .. } if !self.stuck && self.memory.len() >= TAIL_ROWS * self.dim => {
                self.flush()
            }
            _ => {}
        }
    }

    /// Write the rows held in memory to the end of the file; if it fails,
    /// they stay in memory and no more are written.
    fn flush(&mut self) {
        let dim = self.dim;
        if self.own().is_err() {
            self.stuck = true;
            return;
        }
        if let Spill::File { file, at, rows, .. } = &mut self.spill {
            if write_all_at(file, &self.memory, *at + (*rows * dim) as u64).is_ok() {
                *rows += self.memory.len() / dim;
                // The rows held before the spill (64 MiB) go back to the
                // allocator: only a tail's worth is held from now on.
                if self.memory.capacity() > 2 * TAIL_ROWS * dim {
                    self.memory = Vec::with_capacity(TAIL_ROWS * dim);
                } else {
                    self.memory.clear();
                }
            } else {
                self.stuck = true;
            }
        }
    }

    /// Drop row `row`, moving the last row into its place; on a failure
    /// nothing has changed.
    pub(crate) fn swap_remove(&mut self, row: usize) -> io::Result<()> {
        let last = self.len - 1;
        let dim = self.dim;
        if row != last {
            let mut moved = vec![0u8; dim];
            self.read_into(last, &mut moved)?;
            self.write_row(row, &moved)?;
        }
        let on_disk = self.on_disk();
        if last >= on_disk {
            self.memory.truncate((last - on_disk) * dim);
        } else if let Spill::File { rows, .. } = &mut self.spill {
            // (A shared file's too: nothing is written to it.)
            // Only the file's last row can go while nothing is held in
            // memory; its bytes are written over by the next push.
            *rows -= 1;
        }
        self.len = last;
        Ok(())
    }

    fn write_row(&mut self, row: usize, bytes: &[u8]) -> io::Result<()> {
        let dim = self.dim;
        let on_disk = self.on_disk();
        if row >= on_disk {
            let at = (row - on_disk) * dim;
            self.memory[at..at + dim].copy_from_slice(bytes);
            return Ok(());
        }
        self.own()?;
        match &self.spill {
            Spill::File { file, at, .. } => write_all_at(file, bytes, at + (row * dim) as u64),
            _ => unreachable!("rows below on_disk are in a file"),
        }
    }

    /// Rows in another's file are copied into an unnamed file of this
    /// process's own (the kernel copies, file to file), which they are
    /// written in from now on; on a failure nothing has changed.
    fn own(&mut self) -> io::Result<()> {
        let Spill::File {
            file,
            at,
            rows,
            shared: Some(dir),
        } = &self.spill
        else {
            return Ok(());
        };
        let mut own = tempfile::tempfile_in(dir)?;
        let mut from = file.try_clone()?;
        io::Seek::seek(&mut from, io::SeekFrom::Start(*at))?;
        let len = (*rows * self.dim) as u64;
        if io::copy(&mut io::Read::take(from, len), &mut own)? != len {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
        }
        let rows = *rows;
        self.spill = Spill::File {
            file: own,
            at: 0,
            rows,
            shared: None,
        };
        Ok(())
    }

    fn read_into(&self, row: usize, out: &mut [u8]) -> io::Result<()> {
        let dim = self.dim;
        let on_disk = self.on_disk();
        if row >= on_disk {
            let at = (row - on_disk) * dim;
            out.copy_from_slice(&self.memory[at..at + dim]);
            return Ok(());
        }
        match &self.spill {
            Spill::File { file, at, .. } => read_exact_at(file, out, at + (row * dim) as u64),
            _ => unreachable!("rows below on_disk are in a file"),
        }
    }

    /// `each(row, bytes)` for every row of `range`, in order.
    pub(crate) fn scan(
        &self,
        range: Range<usize>,
        each: impl FnMut(usize, &[u8]),
    ) -> io::Result<()> {
        self.scan_with(range, &mut Vec::new(), each)
    }

    /// [`Int8Rows::scan`], reading from the file into `buf` (kept for the
    /// next call: a gather of 5,000 scattered rows is 5,000 reads).
    fn scan_with(
        &self,
        range: Range<usize>,
        buf: &mut Vec<u8>,
        mut each: impl FnMut(usize, &[u8]),
    ) -> io::Result<()> {
        let dim = self.dim;
        let on_disk = self.on_disk();
        let mut start = range.start;
        if let Spill::File { file, at, .. } = &self.spill
            && start < on_disk
        {
            let need = CHUNK_ROWS.min(range.len()) * dim;
            if buf.len() < need {
                buf.resize(need, 0);
            }
            while start < range.end.min(on_disk) {
                let n = CHUNK_ROWS.min(range.end.min(on_disk) - start);
                let chunk = &mut buf[..n * dim];
                read_exact_at(file, chunk, at + (start * dim) as u64)?;
                for (i, row) in chunk.chunks_exact(dim).enumerate() {
                    each(start + i, row);
                }
                start += n;
            }
        }
        for row in start..range.end {
            let at = (row - on_disk) * dim;
            each(row, &self.memory[at..at + dim]);
        }
        Ok(())
    }

    /// `each(row, bytes)` for each of `rows` (any order; read in file
    /// order, neighbours in one read).
    pub(crate) fn gather(
        &self,
        rows: &[usize],
        mut each: impl FnMut(usize, &[u8]),
    ) -> io::Result<()> {
        let mut sorted = rows.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut buf = Vec::new();
        let mut i = 0;
        while i < sorted.len() {
            // A run of consecutive rows is one read.
            let mut j = i + 1;
            while j < sorted.len() && sorted[j] == sorted[j - 1] + 1 && j - i < CHUNK_ROWS {
                j += 1;
            }
            self.scan_with(sorted[i]..sorted[j - 1] + 1, &mut buf, &mut each)?;
            i = j;
        }
        Ok(())
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, at)
}

#[cfg(unix)]
fn read_exact_at(file: &File, out: &mut [u8], at: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, out, at)
}

// Elsewhere rows never spill (`spill_into` does nothing), so these are
// never called.
#[cfg(not(unix))]
fn write_all_at(_: &File, _: &[u8], _: u64) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(not(unix))]
fn read_exact_at(_: &File, _: &mut [u8], _: u64) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(dim: usize, n: usize) -> Vec<u8> {
        (0..dim).map(|i| (n * 31 + i * 7) as u8).collect()
    }

    fn every_row(rows: &Int8Rows, len: usize) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        rows.scan(0..len, |r, b| out.push((r, b.to_vec()))).unwrap();
        out
    }

    /// Rows in a file answer every scan, gather and removal exactly as
    /// rows in memory do — across the moment they spill, with rows both
    /// in the file and still held in memory, and removals of each.
    #[test]
    fn rows_in_a_file_answer_as_rows_in_memory() {
        let dim = 5;
        let dir = tempfile::tempdir().unwrap();
        let mut memory = Int8Rows::new(dim);
        let mut file = Int8Rows::new(dim);
        // Spills at the 10th row; TAIL_ROWS more are written at once.
        file.spill_into(dir.path().to_path_buf(), 9 * dim);
        let total = TAIL_ROWS * 2 + 37;
        for n in 0..total {
            memory.push(&row(dim, n));
            file.push(&row(dim, n));
        }
        assert!(file.spilled() && !memory.spilled());
        assert!(file.memory_bytes() <= 2 * TAIL_ROWS * dim);
        // Nothing is named in the folder: the file has no name.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Removals from the file's rows, from the memory tail, the last.
        for r in [3, total - 2, 10, TAIL_ROWS + 5, 0, total - 10] {
            memory.swap_remove(r).unwrap();
            file.swap_remove(r).unwrap();
        }
        let len = total - 6;
        assert_eq!(file.len(), len);
        assert_eq!(every_row(&file, len), every_row(&memory, len));
        let pick = [len - 1, 7, 8, 9, TAIL_ROWS, 2, 7];
        let (mut a, mut b) = (Vec::new(), Vec::new());
        memory
            .gather(&pick, |r, x| a.push((r, x.to_vec())))
            .unwrap();
        file.gather(&pick, |r, x| b.push((r, x.to_vec()))).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 6, "each row once, in row order");
        // Removing every row leaves none, and the file takes rows again.
        for r in (0..len).rev() {
            file.swap_remove(r).unwrap();
        }
        file.push(&row(dim, 1));
        assert_eq!(every_row(&file, 1), [(0, row(dim, 1))]);
    }

    /// A folder that takes no file leaves the rows in memory.
    #[test]
    fn a_folder_that_takes_no_file_keeps_the_rows_in_memory() {
        let mut rows = Int8Rows::new(2);
        rows.spill_into(PathBuf::from("/nonexistent/vouch-rows"), 2);
        for n in 0..5 {
            rows.push(&row(2, n));
        }
        assert!(!rows.spilled());
        assert_eq!(every_row(&rows, 5)[4], (4, row(2, 4)));
    }
}
