//! The sign-bit scan: each row's signs (one bit a component, six words
//! for MiniLM's 384) compared with the query's by counting the bits that
//! differ. A million rows are scanned on every search by meaning, so the
//! count is the machine's `popcnt` instruction where the processor has it
//! (every x86-64 processor since 2008, but not the baseline the compiler
//! targets by default, which counts bits with a dozen shifts and masks a
//! word), chosen once at run time.

/// One bit per component, set where it is positive.
pub(super) fn sign_bits(v: &[f32]) -> Vec<u64> {
    let mut words = Vec::with_capacity(v.len().div_ceil(64));
    push_sign_bits(&mut words, v);
    words
}

/// [`sign_bits`] appended to `out` (64 components a word, built without
/// a branch so the compiler vectorizes it: a load of 116,000 rows spends
/// milliseconds here, not a tenth of a second).
pub(super) fn push_sign_bits(out: &mut Vec<u64>, v: &[f32]) {
    out.extend(v.chunks(64).map(|chunk| {
        chunk
            .iter()
            .enumerate()
            .fold(0u64, |w, (i, x)| w | (u64::from(*x > 0.0) << i))
    }));
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

/// Every row's sign bits, `words` a row, and its kind.
pub(super) struct Table<'a> {
    pub(super) signs: &'a [u64],
    pub(super) kinds: &'a [u8],
    pub(super) words: usize,
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
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            #[allow(unsafe_code)]
            // SAFETY: the processor has `popcnt`, checked just above.
            return unsafe { self.nearest_popcnt(q, range, len, admits) };
        }
        self.nearest_here(q, range, len, admits)
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
        self.nearest_here(q, range, len, admits)
    }

    /// One pass over the range, keeping at most twice `len` rows: once
    /// the buffer fills, it is cut to its `len` nearest and only rows
    /// nearer than the farthest kept come in (a later row at the same
    /// distance ranks after every kept one, its number being higher).
    /// Inlined into its caller, so it is compiled with the caller's
    /// instructions.
    #[inline(always)]
    fn nearest_here(
        &self,
        q: &[u64],
        range: std::ops::Range<usize>,
        len: usize,
        admits: &(impl Fn(u8) -> bool + Sync),
    ) -> Vec<(u32, u32)> {
        let words = self.words;
        let mut kept: Vec<(u32, u32)> = Vec::with_capacity(2 * len);
        let mut within = u32::MAX;
        for row in range {
            if !admits(self.kinds[row]) {
                continue;
            }
            let bits = &self.signs[row * words..(row + 1) * words];
            let d: u32 = bits.iter().zip(q).map(|(a, b)| (a ^ b).count_ones()).sum();
            if d < within {
                kept.push((d, row as u32));
                if kept.len() >= 2 * len {
                    kept = cut(kept, len);
                    within = kept.iter().map(|k| k.0).max().unwrap_or(u32::MAX);
                }
            }
        }
        cut(kept, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the processor has `popcnt`, the scan compiled with it keeps
    /// exactly the rows the plain one keeps.
    #[test]
    fn the_popcnt_scan_keeps_what_the_plain_scan_keeps() {
        let words = 6;
        let mut next = crate::index::memory::noise(7);
        let rows = 5_000;
        let signs: Vec<u64> = (0..rows * words)
            .map(|_| (0..64).fold(0u64, |w, i| w | (u64::from(next() > 0.0) << i)))
            .collect();
        let kinds: Vec<u8> = (0..rows).map(|r| (r % 3) as u8).collect();
        let table = Table {
            signs: &signs,
            kinds: &kinds,
            words,
        };
        let q = &signs[..words];
        let admits = |k: u8| k != 2;
        let mut plain = table.nearest_here(q, 0..rows, 50, &admits);
        let mut fast = table.nearest(q, 0..rows, 50, &admits);
        plain.sort();
        fast.sort();
        assert_eq!(plain.len(), 50);
        assert_eq!(plain[0], (0, 0), "row 0 is the query itself");
        assert_eq!(fast, plain);
        assert!(plain.iter().all(|(_, r)| kinds[*r as usize] != 2));
    }
}
