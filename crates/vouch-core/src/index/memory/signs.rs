//! The sign-bit scan: each row's signs (one bit a component, six words
//! for MiniLM's 384) compared with the query's by counting the bits that
//! differ. A million rows are scanned on every search by meaning.
//!
//! The rows are held in blocks of [`LANES`], word by word — the first
//! word of each of the block's eight rows, then the second, … — so one
//! 64-byte load holds a word of eight rows, and the count for eight rows
//! is a handful of vector instructions a word. The scan is compiled for
//! what the processor has, chosen once at run time: AVX-512's `vpopcntq`
//! (eight counts an instruction), AVX2 (counted by table lookups, four at
//! a time), the scalar `popcnt` instruction, or the x86-64 baseline (which
//! counts bits with a dozen shifts and masks a word). Row by row with a
//! scalar `popcnt`, best 50 of 1.3 million rows took 12.4 ms; by blocks
//! with AVX-512, 7.0 ms (`vouch-bench scan`, docs/benchmarks.md).

/// Rows a block holds: a word of each is one 512-bit register.
const LANES: usize = 8;

/// One bit per component, set where it is positive.
pub(super) fn sign_bits(v: &[f32]) -> Vec<u64> {
    v.chunks(64).map(sign_word).collect()
}

/// The signs of up to 64 components as one word, built without a branch
/// so the compiler vectorizes it (a load of 116,000 rows spends
/// milliseconds here, not a tenth of a second).
fn sign_word(chunk: &[f32]) -> u64 {
    chunk
        .iter()
        .enumerate()
        .fold(0u64, |w, (i, x)| w | (u64::from(*x > 0.0) << i))
}

/// The `len` nearest of (distance, row) pairs, unordered (a tie goes to
/// the lower row).
pub(super) fn cut(mut far: Vec<(u32, u32)>, len: usize) -> Vec<(u32, u32)> {
    if far.len() > len {
        far.select_nth_unstable(len);
        far.truncate(len);
    }
    far
}

/// Every row's sign bits, `words` a row, in blocks of [`LANES`] rows
/// stored word by word; the rows past the last in its block are zero.
#[derive(Debug, Clone, Default)]
pub(super) struct Signs {
    words: usize,
    rows: usize,
    data: Vec<u64>,
}

impl Signs {
    /// No rows yet, of `words` words each (at least one, so a block is
    /// never empty, even for a model that claims no dimension).
    pub(super) fn new(words: usize) -> Signs {
        Signs {
            words: words.max(1),
            rows: 0,
            data: Vec::new(),
        }
    }

    /// No rows yet, with room for `rows` of them.
    pub(super) fn with_capacity(words: usize, rows: usize) -> Signs {
        Signs {
            data: Vec::with_capacity(rows.div_ceil(LANES) * LANES * words),
            ..Signs::new(words)
        }
    }

    /// Rows held.
    pub(super) fn len(&self) -> usize {
        self.rows
    }

    /// Words a row.
    pub(super) fn words(&self) -> usize {
        self.words
    }

    /// Where word `word` of row `row` is.
    fn at(&self, row: usize, word: usize) -> usize {
        (row / LANES) * LANES * self.words + word * LANES + row % LANES
    }

    /// Word `word` of row `row` (which must exist).
    pub(super) fn word(&self, row: usize, word: usize) -> u64 {
        self.data[self.at(row, word)]
    }

    /// One more row, after the last: `word(w)` gives its words.
    fn push_with(&mut self, word: impl Fn(usize) -> u64) {
        if self.rows.is_multiple_of(LANES) {
            self.data.resize(self.data.len() + LANES * self.words, 0);
        }
        let row = self.rows;
        self.rows += 1;
        for w in 0..self.words {
            let at = self.at(row, w);
            self.data[at] = word(w);
        }
    }

    /// One more row: the signs of `v` (`words` × 64 components at most).
    pub(super) fn push(&mut self, v: &[f32]) {
        self.push_with(|w| {
            v.get(w * 64..)
                .map_or(0, |rest| sign_word(&rest[..rest.len().min(64)]))
        });
    }

    /// One more row, of these words (as [`Signs::row`] gave them).
    pub(super) fn push_words(&mut self, words: &[u64]) {
        self.push_with(|w| words.get(w).copied().unwrap_or(0));
    }

    /// Row `row`'s words, in order.
    pub(super) fn row(&self, row: usize) -> impl Iterator<Item = u64> + '_ {
        (0..self.words).map(move |w| self.word(row, w))
    }

    /// Row `from`'s words into row `to`.
    pub(super) fn copy_row(&mut self, from: usize, to: usize) {
        for w in 0..self.words {
            let (src, dst) = (self.at(from, w), self.at(to, w));
            self.data[dst] = self.data[src];
        }
    }

    /// Keep the first `rows` rows.
    pub(super) fn truncate(&mut self, rows: usize) {
        if rows >= self.rows {
            return;
        }
        self.data
            .truncate(rows.div_ceil(LANES) * LANES * self.words);
        // The rest of the last block is zero again, as a push expects.
        for row in rows..rows.div_ceil(LANES) * LANES {
            for w in 0..self.words {
                let at = self.at(row, w);
                self.data[at] = 0;
            }
        }
        self.rows = rows;
    }
}

/// The copies of the scan, each compiled for what a processor may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Compiled {
    /// AVX-512's vector count.
    Avx512,
    /// AVX2 (counted by table lookups).
    Avx2,
    /// The scalar `popcnt`.
    Popcnt,
    /// The baseline.
    Plain,
}

impl Compiled {
    /// The copies this processor can run, best first (`Plain` always).
    fn here() -> Vec<Compiled> {
        let mut here = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx512f") && has!("avx512vpopcntdq") && has!("popcnt") {
                here.push(Compiled::Avx512);
            }
            if has!("avx2") && has!("popcnt") {
                here.push(Compiled::Avx2);
            }
            if has!("popcnt") {
                here.push(Compiled::Popcnt);
            }
        }
        here.push(Compiled::Plain);
        here
    }
}

/// Every row's sign bits and its kind.
pub(super) struct Table<'a> {
    pub(super) signs: &'a Signs,
    pub(super) kinds: &'a [u8],
}

/// The `len` nearest rows met so far, kept as a scan goes: at most twice
/// `len`; once full, cut to its `len` nearest, and only rows nearer than
/// the farthest kept come in (a later row at the same distance ranks
/// after every kept one, its number being higher).
struct Nearest {
    kept: Vec<(u32, u32)>,
    within: u32,
    len: usize,
}

impl Nearest {
    #[inline(always)]
    fn offer(&mut self, d: u32, row: usize) {
        self.kept.push((d, row as u32));
        if self.kept.len() >= 2 * self.len {
            self.kept = cut(std::mem::take(&mut self.kept), self.len);
            self.within = self.kept.iter().map(|k| k.0).max().unwrap_or(u32::MAX);
        }
    }
}

/// The distances of a block's eight rows from `q`, into `out`, and a
/// bit a lane set where it is below `within` (`out` may be left as it
/// was when none is): one word of all eight at a time.
type Distances = fn(&[u64], &[u64], u32, &mut [u64; LANES]) -> u8;

#[inline(always)]
fn block_distances(block: &[u64], q: &[u64], within: u32, out: &mut [u64; LANES]) -> u8 {
    let mut d = [0u64; LANES];
    for (lanes, qw) in block.chunks_exact(LANES).zip(q) {
        let lanes: &[u64; LANES] = lanes.try_into().unwrap_or(&[0; LANES]);
        for l in 0..LANES {
            d[l] += u64::from((lanes[l] ^ qw).count_ones());
        }
    }
    let mut below = 0u8;
    for (l, d) in d.iter().enumerate() {
        below |= u8::from(*d < u64::from(within)) << l;
    }
    *out = d;
    below
}

/// [`block_distances`] with AVX-512: a word of eight rows in one
/// register, counted by one `vpopcntq`, compared with `within` by one
/// instruction.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
#[allow(unsafe_code)]
fn block_distances_avx512(block: &[u64], q: &[u64], within: u32, out: &mut [u64; LANES]) -> u8 {
    use std::arch::x86_64::*;
    let mut d = _mm512_setzero_si512();
    for (lanes, &qw) in block.chunks_exact(LANES).zip(q) {
        // SAFETY: `lanes` is eight `u64`s, the 64 bytes an unaligned load reads.
        let x = unsafe { _mm512_loadu_epi64(lanes.as_ptr().cast()) };
        let differ = _mm512_xor_si512(x, _mm512_set1_epi64(qw as i64));
        d = _mm512_add_epi64(d, _mm512_popcnt_epi64(differ));
    }
    let below = _mm512_cmplt_epu64_mask(d, _mm512_set1_epi64(i64::from(within)));
    if below != 0 {
        // SAFETY: `out` is eight `u64`s, the 64 bytes an unaligned store writes.
        unsafe { _mm512_storeu_epi64(out.as_mut_ptr().cast(), d) };
    }
    below
}

impl Table<'_> {
    /// The `len` rows of `range` that `admits` lets in whose sign bits
    /// differ least from `q`, as (distance, row).
    pub(super) fn nearest(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        static BEST: std::sync::OnceLock<Compiled> = std::sync::OnceLock::new();
        let best = *BEST.get_or_init(|| Compiled::here()[0]);
        self.nearest_by(best, q, range, len, admits)
    }

    /// [`Table::nearest`] by one copy of the scan, one of
    /// [`Compiled::here`].
    fn nearest_by(
        &self,
        copy: Compiled,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        #[allow(unsafe_code)]
        // SAFETY: a copy other than `Plain` comes from `Compiled::here`,
        // which names it only where the processor has its instructions.
        unsafe {
            match copy {
                #[cfg(target_arch = "x86_64")]
                Compiled::Avx512 => self.nearest_avx512(q, range, len, admits),
                #[cfg(target_arch = "x86_64")]
                Compiled::Avx2 => self.nearest_avx2(q, range, len, admits),
                #[cfg(target_arch = "x86_64")]
                Compiled::Popcnt => self.nearest_popcnt(q, range, len, admits),
                _ => self.nearest_here(q, range, len, admits, block_distances),
            }
        }
    }

    /// [`Table::nearest`] compiled with AVX-512's vector count.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512vpopcntdq,popcnt")]
    fn nearest_avx512(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        // The closure has this function's instructions too.
        let count: Distances = |b, q, within, out| block_distances_avx512(b, q, within, out);
        self.nearest_here(q, range, len, admits, count)
    }

    /// [`Table::nearest`] compiled with AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    fn nearest_avx2(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        self.nearest_here(q, range, len, admits, block_distances)
    }

    /// [`Table::nearest`] compiled with `popcnt`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn nearest_popcnt(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        self.nearest_here(q, range, len, admits, block_distances)
    }

    /// One pass over the range: whole blocks eight rows at a time, the
    /// rows before the first and after the last one by one. Inlined into
    /// its caller, so it is compiled with the caller's instructions.
    #[inline(always)]
    fn nearest_here(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
        count: Distances,
    ) -> Vec<(u32, u32)> {
        let signs = self.signs;
        let words = signs.words;
        let mut near = Nearest {
            kept: Vec::with_capacity(2 * len),
            within: u32::MAX,
            len,
        };
        let one = |near: &mut Nearest, row: usize| {
            let d: u32 = (0..words)
                .zip(q)
                .map(|(w, qw)| (signs.word(row, w) ^ qw).count_ones())
                .sum();
            if d < near.within && admits(self.kinds[row]) {
                near.offer(d, row);
            }
        };
        let first_block = range.start.next_multiple_of(LANES).min(range.end);
        let last_block = (range.end / LANES * LANES).max(first_block);
        for row in range.start..first_block {
            one(&mut near, row);
        }
        let blocks =
            signs.data[first_block * words..last_block * words].chunks_exact(LANES * words);
        let mut d = [0u64; LANES];
        for (b, block) in blocks.enumerate() {
            let mut below = count(block, q, near.within, &mut d);
            let base = first_block + b * LANES;
            while below != 0 {
                let lane = below.trailing_zeros() as usize;
                below &= below - 1;
                // Nearer than the farthest kept when the block began; the
                // bound may have tightened since.
                let d = d[lane] as u32;
                if d < near.within && admits(self.kinds[base + lane]) {
                    near.offer(d, base + lane);
                }
            }
        }
        for row in last_block..range.end {
            one(&mut near, row);
        }
        cut(near.kept, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_signs(words: usize, rows: usize, seed: u64) -> Signs {
        let mut next = crate::index::memory::noise(seed);
        let mut signs = Signs::new(words);
        for _ in 0..rows {
            let v: Vec<f32> = (0..words * 64).map(|_| next()).collect();
            signs.push(&v);
        }
        signs
    }

    /// Every copy of the scan the processor can run keeps exactly the
    /// rows sorting every row by distance keeps (ties to the lower row),
    /// on ranges that start and end inside blocks.
    #[test]
    fn every_copy_of_the_scan_keeps_what_sorting_every_row_keeps() {
        let words = 6;
        let rows = 5_003;
        let signs = random_signs(words, rows, 7);
        let kinds: Vec<u8> = (0..rows).map(|r| (r % 3) as u8).collect();
        let table = Table {
            signs: &signs,
            kinds: &kinds,
        };
        let q: Vec<u64> = signs.row(0).collect();
        let admits = |k: u8| k != 2;
        for range in [0..rows, 3..rows - 2, 5..6, 9..21, 16..24] {
            let mut every: Vec<(u32, u32)> = range
                .clone()
                .filter(|r| kinds[*r] != 2)
                .map(|r| {
                    let d = signs
                        .row(r)
                        .zip(&q)
                        .map(|(a, b)| (a ^ b).count_ones())
                        .sum();
                    (d, r as u32)
                })
                .collect();
            every.sort();
            for len in [1, 7, 50] {
                let want: Vec<(u32, u32)> = every.iter().take(len).copied().collect();
                let mut got: Vec<Vec<(u32, u32)>> = Compiled::here()
                    .into_iter()
                    .map(|copy| table.nearest_by(copy, &q, range.clone(), len, &admits))
                    .collect();
                got.push(table.nearest(&q, range.clone(), len, &admits));
                for mut g in got {
                    g.sort();
                    assert_eq!(g, want, "range {range:?}, len {len}");
                }
            }
        }
    }

    /// Rows are read back as pushed, from floats or from words; a copied
    /// row is the row it copies; a cut keeps the first rows and leaves the
    /// rest of its block zero, so rows pushed after it read back whole.
    #[test]
    fn rows_read_back_as_pushed_copied_and_cut() {
        let words = 2;
        let signs = random_signs(words, 21, 3);
        let rows: Vec<Vec<u64>> = (0..21).map(|r| signs.row(r).collect()).collect();
        let mut again = Signs::with_capacity(words, 21);
        for row in &rows {
            again.push_words(row);
        }
        assert_eq!(again.len(), 21);
        assert_eq!(
            (0..21)
                .map(|r| again.row(r).collect())
                .collect::<Vec<Vec<u64>>>(),
            rows
        );
        let v: Vec<f32> = (0..128)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert_eq!(
            sign_bits(&v),
            [0x9249_2492_4924_9249, 0x4924_9249_2492_4924]
        );
        again.copy_row(20, 2);
        assert_eq!(again.row(2).collect::<Vec<_>>(), rows[20]);
        again.truncate(10);
        assert_eq!(again.len(), 10);
        again.push_words(&[1, 2]);
        again.push(&v);
        assert_eq!(again.row(10).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(again.row(11).collect::<Vec<_>>(), sign_bits(&v));
        assert_eq!(again.row(9).collect::<Vec<_>>(), rows[9]);
        assert_eq!(again.words(), words);
    }
}
