//! One token's postings, held small but read by index: a million claims
//! hold about thirty million postings, and at 8 bytes each (a `u32` slot
//! and two `u16` counts) they were most of a server's memory.
//!
//! - A slot is kept as an offset (`u16`) from its block's first slot while
//!   every block of the list spans fewer than 65,536 slots — true of the
//!   common words that hold most postings — and as the `u32` itself once a
//!   block does not (a rare word's few postings).
//! - The weighted frequency FTS5's bm25 sums (2 × title + body) is one
//!   byte; the rare larger ones sit in a side list, looked up by index.
//!
//! About 3 bytes a posting for common words, still read in O(1) by index,
//! so the search's galloping and block bounds are unchanged.

use super::BLOCK;

/// A frequency byte meaning "look in `big`".
const ESCAPE: u8 = u8::MAX;

/// One document's share of one token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Posting {
    pub(super) slot: u32,
    /// Occurrences weighted as bm25 weights its columns: 2 per title
    /// occurrence, 1 per body occurrence.
    pub(super) freq: u16,
}

impl Posting {
    /// The weighted frequency FTS5's bm25 sums (exact in `f64`).
    pub(super) fn freq(&self) -> f64 {
        self.freq as f64
    }
}

/// A token's postings, ascending by slot.
#[derive(Debug, Clone)]
pub(super) struct List {
    /// Slots are `bases[block] + offsets[i]` (true) or `wide[i]` (false).
    dense: bool,
    bases: Vec<u32>,
    offsets: Vec<u16>,
    wide: Vec<u32>,
    freqs: Vec<u8>,
    /// `(index, frequency)` of every frequency of [`ESCAPE`] or more, by
    /// index.
    big: Vec<(u32, u16)>,
}

impl Default for List {
    fn default() -> Self {
        List {
            dense: true,
            bases: Vec::new(),
            offsets: Vec::new(),
            wide: Vec::new(),
            freqs: Vec::new(),
            big: Vec::new(),
        }
    }
}

impl List {
    pub(super) fn len(&self) -> usize {
        self.freqs.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.freqs.is_empty()
    }

    /// The slot of posting `i` (which must exist).
    pub(super) fn slot(&self, i: usize) -> u32 {
        if self.dense {
            self.bases[i / BLOCK] + self.offsets[i] as u32
        } else {
            self.wide[i]
        }
    }

    /// The slot of posting `i`, if there is one.
    pub(super) fn slot_at(&self, i: usize) -> Option<u32> {
        (i < self.len()).then(|| self.slot(i))
    }

    /// The weighted frequency of posting `i` (which must exist).
    pub(super) fn freq(&self, i: usize) -> u16 {
        match self.freqs[i] {
            ESCAPE => {
                let at = self.big.partition_point(|(j, _)| (*j as usize) < i);
                self.big[at].1
            }
            f => f as u16,
        }
    }

    /// Posting `i`, if there is one.
    pub(super) fn get(&self, i: usize) -> Option<Posting> {
        (i < self.len()).then(|| Posting {
            slot: self.slot(i),
            freq: self.freq(i),
        })
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = Posting> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Count `add` more weighted occurrences in document `slot`, which is
    /// the last posting's or after it; false when the count no longer fits
    /// a `u16` (the postings are then not exact).
    pub(super) fn add(&mut self, slot: u32, add: u16) -> bool {
        let n = self.len();
        if n > 0 && self.slot(n - 1) == slot {
            let Some(freq) = self.freq(n - 1).checked_add(add) else {
                return false;
            };
            self.set_freq(n - 1, freq);
            return true;
        }
        self.push_slot(slot);
        self.freqs.push(0);
        self.set_freq(n, add);
        true
    }

    fn push_slot(&mut self, slot: u32) {
        let n = self.len();
        if !self.dense {
            self.wide.push(slot);
            return;
        }
        if n.is_multiple_of(BLOCK) {
            self.bases.push(slot);
            self.offsets.push(0);
            return;
        }
        match u16::try_from(slot - self.bases[n / BLOCK]) {
            Ok(offset) => self.offsets.push(offset),
            Err(_) => {
                // A block too wide for offsets: the whole list goes wide.
                self.wide = (0..n).map(|i| self.slot(i)).collect();
                self.wide.push(slot);
                self.dense = false;
                self.bases = Vec::new();
                self.offsets = Vec::new();
            }
        }
    }

    fn set_freq(&mut self, i: usize, freq: u16) {
        let at = self.big.partition_point(|(j, _)| (*j as usize) < i);
        let held = self.big.get(at).is_some_and(|(j, _)| *j as usize == i);
        match u8::try_from(freq) {
            Ok(f) if f < ESCAPE => {
                self.freqs[i] = f;
                if held {
                    self.big.remove(at);
                }
            }
            _ => {
                self.freqs[i] = ESCAPE;
                if held {
                    self.big[at].1 = freq;
                } else {
                    self.big.insert(at, (i as u32, freq));
                }
            }
        }
    }

    /// Index of the first posting at or after `from` whose slot is at
    /// least `slot`, searching `from..to` (postings before `to` ascend).
    pub(super) fn first_at_or_after(&self, from: usize, to: usize, slot: u32) -> usize {
        let (mut lo, mut hi) = (from, to);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.slot(mid) < slot {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub(super) fn shrink_to_fit(&mut self) {
        self.bases.shrink_to_fit();
        self.offsets.shrink_to_fit();
        self.wide.shrink_to_fit();
        self.freqs.shrink_to_fit();
        self.big.shrink_to_fit();
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bases.capacity() * 4
            + self.offsets.capacity() * 2
            + self.wide.capacity() * 4
            + self.freqs.capacity()
            + self.big.capacity() * 8
            + size_of::<List>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(slot, freq)` pairs read back as they were written, through a
    /// switch to wide slots and frequencies past a byte.
    #[test]
    fn postings_read_back_as_written_dense_wide_and_big() {
        let mut list = List::default();
        let mut want = Vec::new();
        let mut slot = 0u32;
        for i in 0..1000u32 {
            // Close slots first (offsets), then one gap past a u16 (wide).
            slot += if i == 700 { 70_000 } else { 1 + i % 5 };
            let freq = match i % 97 {
                0 => 300,
                1 => 254,
                2 => 255,
                _ => 1 + (i % 3) as u16,
            };
            assert!(list.add(slot, freq));
            want.push(Posting { slot, freq });
            if i == 699 {
                assert!(list.dense, "close slots stay offsets");
            }
        }
        assert!(!list.dense, "a block past a u16 goes wide");
        assert_eq!(list.iter().collect::<Vec<_>>(), want);
        // Counting more into the last posting, across the escape and back.
        let last = list.len() - 1;
        for _ in 0..200 {
            assert!(list.add(slot, 2));
        }
        assert_eq!(list.freq(last), want[last].freq + 400);
        assert!(!list.add(slot, u16::MAX), "past a u16 is refused");
        assert_eq!(list.first_at_or_after(0, list.len(), want[500].slot), 500);
        assert_eq!(
            list.first_at_or_after(0, list.len(), want[500].slot + 1),
            501
        );
    }

    #[test]
    fn a_dense_common_word_takes_about_three_bytes_a_posting() {
        let mut list = List::default();
        for slot in (0..100_000u32).step_by(3) {
            list.add(slot, 1);
        }
        list.shrink_to_fit();
        let per = list.bytes() as f64 / list.len() as f64;
        assert!(per < 3.1, "{per} bytes a posting");
    }
}
