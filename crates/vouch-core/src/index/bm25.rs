//! Postings held in memory and the best k documents for a query, scored
//! exactly as FTS5's `bm25(fts, 2.0, 1.0)` scores them — without scoring
//! every match.
//!
//! Scoring every document that holds a common word costs in proportion to
//! the matches (10 ms at a million claims for a word in half of them), and
//! a search wants ten. So each list keeps, per block of [`BLOCK`]
//! postings, what bounds any of its documents' scores (block-max), and
//! the search walks the slots in windows: a window whose bounds cannot
//! beat the k-th best found so far is skipped without reading a posting;
//! inside one, a word whose bound alone cannot lift a document into the
//! best k is only looked up for documents the other words brought
//! (MaxScore). Lucene's and tantivy's block-max MaxScore/WAND, on FTS5's
//! own tokens and formula.
//!
//! Exact, not approximate: a bound is computed with the score's own
//! floating-point operations in the score's order, on counts at least a
//! document's and a length at most its (IEEE rounding is monotone), so a
//! skipped document could not have scored above the k-th best, nor tied it
//! with a smaller rowid. The result is the first k rows of `ORDER BY
//! bm25, rowid`, to the bit (tests compare it with SQL and with scoring
//! every match).
//!
//! Engine-free: the SQLite engine fills it from `fts5vocab` and patches it
//! with its writes (`sqlite::postings`); another engine could do the same.

use crate::index::Currency;
use crate::model::DocKind;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

/// Postings a block holds; the last, partial block of a list has its bound
/// worked out when asked (at most this many postings read).
const BLOCK: usize = 128;
/// Slots a window spans, at most.
const WINDOW: u32 = 1024;

/// FTS5's bm25 parameters.
const K1: f64 = 1.2;
const B: f64 = 0.75;

#[path = "bm25_list.rs"]
mod list;
use list::{List, Posting};

/// What one occurrence adds to a document's weighted frequency: bm25's
/// column weights, 2 for the title, 1 for the body.
fn weight(title: bool) -> u16 {
    if title { 2 } else { 1 }
}

/// The documents by slot, field by field: a search reads the length of
/// every document it scores, and dense lengths and a bitset of the dead
/// are what a cache holds (a row of all three per slot, 16 bytes, made the
/// reads of a million-claim search wait on memory).
#[derive(Default)]
struct Slots {
    rowid: Vec<i64>,
    tokens: Vec<u32>,
    /// One bit per slot, set when its document went.
    dead: Vec<u64>,
    /// What a search may return of each document ([`class_of`]).
    class: Vec<u8>,
}

impl Slots {
    fn len(&self) -> usize {
        self.rowid.len()
    }

    fn push(&mut self, rowid: i64, tokens: u32, class: u8) {
        self.rowid.push(rowid);
        self.tokens.push(tokens);
        self.class.push(class);
        if self.dead.len() * 64 < self.rowid.len() {
            self.dead.push(0);
        }
    }

    fn live(&self, slot: u32) -> bool {
        self.dead[slot as usize / 64] & (1 << (slot % 64)) == 0
    }

    fn kill(&mut self, slot: u32) {
        self.dead[slot as usize / 64] |= 1 << (slot % 64);
    }

    fn tokens(&self, slot: u32) -> f64 {
        self.tokens[slot as usize] as f64
    }

    fn rowid(&self, slot: u32) -> i64 {
        self.rowid[slot as usize]
    }

    /// Whether the document in `slot` is there and `admit` lets it in.
    fn admitted(&self, slot: u32, admit: Admit) -> bool {
        self.live(slot) && admit.admits(self.class[slot as usize])
    }

    fn bytes(&self) -> usize {
        self.rowid.capacity() * 8
            + self.tokens.capacity() * 4
            + self.dead.capacity() * 8
            + self.class.capacity()
    }
}

/// A document's class, a byte: one bit for its kind (of
/// [`DocKind::ALL`]; none for a kind it does not know, which no search
/// returns), and whether [`Currency::Any`] and [`Currency::Current`]
/// admit its status. A document's kind never changes (its rowid is made
/// from it) and a new status is a new row, so the byte is set once a slot.
pub(crate) fn class_of(kind: &str, status: Option<&str>) -> u8 {
    let kind = kind_bit(kind);
    let any = u8::from(Currency::Any.admits(status)) << ANY_BIT;
    let current = u8::from(Currency::Current.admits(status)) << CURRENT_BIT;
    kind | any | current
}

/// A kind's bit of a class; none for a kind search does not know.
fn kind_bit(kind: &str) -> u8 {
    DocKind::ALL
        .iter()
        .position(|k| k.as_str() == kind)
        .map_or(0, |i| 1u8 << i)
}

const ANY_BIT: u32 = 6;
const CURRENT_BIT: u32 = 7;
// A kind a bit below the currency bits.
const _: () = assert!(DocKind::ALL.len() <= ANY_BIT as usize);

/// Which classes a search returns: its kinds and its currency. Ranking
/// filters as it goes, so the best k are the best k it may return, as
/// SQL's rows filtered one by one give them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admit {
    kinds: u8,
    currency: u8,
}

impl Admit {
    pub(crate) fn new(kinds: &[DocKind], currency: Currency) -> Admit {
        Admit {
            kinds: kinds.iter().fold(0, |a, k| a | kind_bit(k.as_str())),
            currency: match currency {
                Currency::Any => 1 << ANY_BIT,
                Currency::Current => 1 << CURRENT_BIT,
            },
        }
    }

    fn admits(self, class: u8) -> bool {
        class & self.kinds != 0 && class & self.currency != 0
    }
}

/// What bounds the scores of a full block's documents.
#[derive(Debug, Clone, Copy)]
struct Bound {
    /// The highest weighted frequency and the fewest tokens of any of its
    /// documents: together a bound at any average length.
    max_freq: u32,
    min_tokens: u32,
    /// The frequency and length of its best document at the average
    /// length the bounds were made under ([`Postings::bounds_at`]): the
    /// exact best while that average holds.
    best_freq: u32,
    best_tokens: u32,
    /// Its smallest rowid, for ties.
    min_rowid: i64,
}

/// The first index at or after `from` of ascending `sorted` whose value is
/// at least `value`, galloping from `from` (a token's next document is
/// usually a few slots on).
fn gallop(sorted: &[i64], from: usize, value: i64) -> usize {
    let from = from.min(sorted.len());
    let rest = &sorted[from..];
    let mut bound = 1;
    while bound < rest.len() && rest[bound] < value {
        bound *= 2;
    }
    let (lo, hi) = (bound / 2, rest.len().min(bound + 1));
    from + lo + rest[lo..hi].partition_point(|&r| r < value)
}

/// `bm25`'s frequency part for one phrase, in FTS5's order of operations.
fn tf(freq: f64, tokens: f64, avgdl: f64) -> f64 {
    (freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * tokens / avgdl))
}

/// FTS5's idf for a phrase `hits` of `rows` documents hold.
fn idf(rows: i64, hits: i64) -> f64 {
    let idf = ((rows - hits) as f64 + 0.5) / (hits as f64 + 0.5);
    let idf = idf.ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// Every document's postings by token, for one FTS table.
pub(crate) struct Postings {
    /// False once a count outgrew its `u16`: then SQL ranks, exactly.
    exact: bool,
    tokens: HashMap<Box<str>, u32>,
    /// Per token, ascending by slot (slots are only ever appended).
    lists: Vec<List>,
    /// Per token, one per full block of its list.
    bounds: Vec<Vec<Bound>>,
    slots: Slots,
    /// Slots `..built` are the builder's, ascending by rowid: found by a
    /// binary search, with no map of a million rowids (29 MiB).
    built: usize,
    /// The slot of each document written since, by rowid.
    later: HashMap<i64, u32>,
    /// Live rows and their tokens (FTS5's row count and total size).
    rows: i64,
    total_tokens: i64,
    dead: usize,
    /// The average length the blocks' best documents were chosen under.
    bounds_at: f64,
    /// Live postings per token, once counted since the last removal
    /// (FTS5's idf counts the documents holding a phrase now).
    live_counts: Mutex<HashMap<u32, i64>>,
}

/// A `Postings` being read, token by token.
pub(crate) struct Builder {
    postings: Postings,
    /// The token the last posting was of, by name, to skip the lookup.
    current: Option<(Box<str>, u32)>,
    /// The slot of the last posting: a token's next one is at or after it.
    last_slot: usize,
}

impl Builder {
    /// One occurrence of `token` in document `rowid` (one of those the
    /// builder was made with), in the title or the body. Occurrences come
    /// by token, and within a token by ascending rowid.
    pub(crate) fn push(&mut self, token: &str, rowid: i64, title: bool) {
        let p = &mut self.postings;
        let rowids = &p.slots.rowid;
        let from = if rowids.get(self.last_slot).is_some_and(|&r| r <= rowid) {
            self.last_slot
        } else {
            0
        };
        let at = gallop(rowids, from, rowid);
        if rowids.get(at) != Some(&rowid) {
            return;
        }
        self.last_slot = at;
        let slot = at as u32;
        let t = match &self.current {
            Some((name, t)) if &**name == token => *t,
            _ => {
                let t = p.token_or_new(token);
                self.current = Some((token.into(), t));
                t
            }
        };
        p.slots.tokens[slot as usize] += 1;
        p.exact &= p.lists[t as usize].add(slot, weight(title));
    }

    /// The postings, their blocks bounded.
    pub(crate) fn finish(self) -> Postings {
        let mut p = self.postings;
        for list in &mut p.lists {
            list.shrink_to_fit();
        }
        p.total_tokens = p.slots.tokens.iter().map(|&t| t as i64).sum();
        p.bounds_at = p.avgdl();
        p.bounds = vec![Vec::new(); p.lists.len()];
        for t in 0..p.lists.len() {
            p.bound_full_blocks(t);
        }
        p
    }
}

impl Postings {
    /// A builder for the documents `rowids` (ascending), which become
    /// slots in that order, each of its class in `classes` ([`class_of`]).
    pub(crate) fn builder(rowids: &[i64], classes: &[u8]) -> Builder {
        let mut slots = Slots::default();
        for (&rowid, &class) in rowids.iter().zip(classes) {
            slots.push(rowid, 0, class);
        }
        debug_assert!(rowids.is_sorted(), "rowids ascend");
        debug_assert_eq!(rowids.len(), classes.len(), "a class a document");
        Builder {
            postings: Postings {
                exact: true,
                tokens: HashMap::new(),
                lists: Vec::new(),
                bounds: Vec::new(),
                rows: slots.len() as i64,
                built: slots.len(),
                slots,
                later: HashMap::new(),
                total_tokens: 0,
                dead: 0,
                bounds_at: f64::NAN,
                live_counts: Mutex::new(HashMap::new()),
            },
            current: None,
            last_slot: 0,
        }
    }

    /// Whether every count fitted (else the postings must not rank).
    pub(crate) fn exact(&self) -> bool {
        self.exact
    }

    /// The token's number, if any document ever held it.
    pub(crate) fn token(&self, token: &str) -> Option<u32> {
        self.tokens.get(token).copied()
    }

    /// Slots ever made, and how many of them are dead.
    pub(crate) fn slots(&self) -> (usize, usize) {
        (self.slots.len(), self.dead)
    }

    /// Bytes held (approximately), for benchmarks.
    pub(crate) fn bytes(&self) -> usize {
        self.lists.iter().map(List::bytes).sum::<usize>()
            + self
                .bounds
                .iter()
                .map(|b| b.capacity() * size_of::<Bound>() + size_of::<Vec<Bound>>())
                .sum::<usize>()
            + (self.lists.capacity() - self.lists.len()) * size_of::<List>()
            + self.slots.bytes()
            + self.later.capacity() * 16
            + self.tokens.keys().map(|k| k.len() + 24).sum::<usize>()
    }

    /// The live slot of document `rowid`, if it has one.
    fn live_slot(&self, rowid: i64) -> Option<u32> {
        if let Some(&slot) = self.later.get(&rowid) {
            return Some(slot);
        }
        let built = &self.slots.rowid[..self.built];
        let at = built.partition_point(|&r| r < rowid);
        (built.get(at) == Some(&rowid) && self.slots.live(at as u32)).then_some(at as u32)
    }

    fn token_or_new(&mut self, token: &str) -> u32 {
        if let Some(&t) = self.tokens.get(token) {
            return t;
        }
        self.lists.push(List::default());
        self.bounds.push(Vec::new());
        let t = (self.lists.len() - 1) as u32;
        self.tokens.insert(token.into(), t);
        t
    }

    fn avgdl(&self) -> f64 {
        self.total_tokens as f64 / self.rows as f64
    }

    fn changed(&mut self) {
        self.live_counts
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The document `rowid` went (or is about to be written again).
    pub(crate) fn remove(&mut self, rowid: i64) {
        if let Some(slot) = self.live_slot(rowid) {
            self.later.remove(&rowid);
            self.slots.kill(slot);
            self.rows -= 1;
            self.total_tokens -= self.slots.tokens[slot as usize] as i64;
            self.dead += 1;
            self.changed();
        }
    }

    /// The document `rowid`, of `class`, now holds `tokens` (each with
    /// its column: 0 the title), in a new slot.
    pub(crate) fn insert(&mut self, rowid: i64, class: u8, tokens: &[(String, u8)]) {
        self.remove(rowid);
        self.changed();
        let slot = self.slots.len() as u32;
        self.slots.push(rowid, tokens.len() as u32, class);
        self.later.insert(rowid, slot);
        self.rows += 1;
        self.total_tokens += tokens.len() as i64;
        let mut touched = Vec::new();
        for (term, col) in tokens {
            let t = self.token_or_new(term);
            self.exact &= self.lists[t as usize].add(slot, weight(*col == 0));
            touched.push(t);
        }
        // A block is bounded once full; the new slot's postings are the
        // last of their lists, all counted by now.
        touched.sort_unstable();
        touched.dedup();
        for t in touched {
            self.bound_full_blocks(t as usize);
        }
    }

    /// Bound the full blocks of list `t` that have no bound yet.
    fn bound_full_blocks(&mut self, t: usize) {
        let list = &self.lists[t];
        let have = self.bounds[t].len();
        let full = list.len() / BLOCK;
        let made: Vec<Bound> = (have..full)
            .map(|b| self.bound_of((b * BLOCK..(b + 1) * BLOCK).filter_map(|i| list.get(i))))
            .collect();
        self.bounds[t].extend(made);
    }

    fn bound_of(&self, block: impl Iterator<Item = Posting>) -> Bound {
        let mut bound = Bound {
            max_freq: 0,
            min_tokens: u32::MAX,
            best_freq: 0,
            best_tokens: 0,
            min_rowid: i64::MAX,
        };
        let mut best = f64::NEG_INFINITY;
        for p in block {
            let tokens = self.slots.tokens[p.slot as usize];
            let freq = p.freq as u32;
            bound.max_freq = bound.max_freq.max(freq);
            bound.min_tokens = bound.min_tokens.min(tokens);
            bound.min_rowid = bound.min_rowid.min(self.slots.rowid(p.slot));
            let score = tf(p.freq(), tokens as f64, self.bounds_at);
            if score > best {
                best = score;
                (bound.best_freq, bound.best_tokens) = (freq, tokens);
            }
        }
        bound
    }

    /// Documents holding token `t` now.
    pub(crate) fn live_count(&self, t: u32) -> i64 {
        let list = &self.lists[t as usize];
        if self.dead == 0 {
            return list.len() as i64;
        }
        let mut counted = self.live_counts.lock().unwrap_or_else(|e| e.into_inner());
        *counted
            .entry(t)
            .or_insert_with(|| list.iter().filter(|p| self.slots.live(p.slot)).count() as i64)
    }

    /// The best `k` live documents `admit` lets in matching all (`all`) or any of the
    /// phrases (a token each, `None` for one no document holds, in query
    /// order), as `(bm25, rowid)` in `ORDER BY bm25(fts, 2.0, 1.0), rowid`
    /// order: FTS5's negated score, to the bit.
    pub(crate) fn top(
        &self,
        phrases: &[Option<u32>],
        all: bool,
        k: usize,
        admit: Admit,
    ) -> Vec<(f64, i64)> {
        let none = List::default();
        let empty: (&List, &[Bound]) = (&none, &[]);
        let mut cursors: Vec<Cursor> = phrases
            .iter()
            .map(|t| {
                let (list, bounds) = t.map_or(empty, |t| {
                    (&self.lists[t as usize], &self.bounds[t as usize][..])
                });
                Cursor {
                    list,
                    bounds,
                    idf: idf(self.rows, t.map_or(0, |t| self.live_count(t))),
                    pos: 0,
                }
            })
            .collect();
        if k == 0 || cursors.is_empty() || (all && cursors.iter().any(|c| c.list.is_empty())) {
            return Vec::new();
        }
        let mut search = Search {
            postings: self,
            admit,
            avgdl: self.avgdl(),
            best: Best {
                k,
                heap: BinaryHeap::with_capacity(k.min(4096) + 1),
            },
            window: vec![WindowBound::default(); cursors.len()],
        };
        while let Some(lo) = search.next_window(&cursors, all) {
            for c in &mut cursors {
                c.seek(lo);
            }
            let hi = lo.saturating_add(WINDOW);
            search.bound_window(&cursors, lo, hi);
            let w = &search.window;
            let reachable = if all {
                w.iter().all(|b| b.present) && search.best.admits(sum(w, |_| true), || min_rowid(w))
            } else {
                search.best.admits(sum(w, |_| true), || min_rowid(w))
            };
            if reachable {
                if all {
                    search.every_word(&mut cursors, hi);
                } else {
                    search.any_word(&mut cursors, hi);
                }
            }
            for c in &mut cursors {
                c.seek(hi);
            }
        }
        let mut best = search.best.heap.into_sorted_vec();
        best.truncate(k);
        // FTS5 returns `-1.0 * score`: the same bits as negation.
        best.into_iter().map(|e| (-e.score, e.rowid)).collect()
    }
}

/// One phrase's place in its list.
struct Cursor<'a> {
    list: &'a List,
    bounds: &'a [Bound],
    idf: f64,
    pos: usize,
}

impl Cursor<'_> {
    fn slot(&self) -> Option<u32> {
        self.list.slot_at(self.pos)
    }

    /// Move to the first posting at or past `slot`, galloping: the next
    /// document a search asks for is usually a few postings on, and a
    /// binary search over the whole rest of a long list costs its cache
    /// misses every time.
    fn seek(&mut self, slot: u32) {
        self.pos += self.before(slot);
    }

    /// How many postings from here are before `slot`, galloping.
    fn before(&self, slot: u32) -> usize {
        let (list, at) = (self.list, self.pos);
        let rest = list.len().saturating_sub(at);
        if self.slot().is_none_or(|s| s >= slot) {
            return 0;
        }
        let mut bound = 1;
        while bound < rest && list.slot(at + bound) < slot {
            bound *= 2;
        }
        let from = bound / 2;
        let to = rest.min(bound + 1);
        list.first_at_or_after(at + from, at + to, slot) - at
    }

    /// The posting at `slot`, moving to it (or past it when there is none).
    fn at(&mut self, slot: u32) -> Option<Posting> {
        self.seek(slot);
        self.list.get(self.pos).filter(|p| p.slot == slot)
    }
}

/// What one phrase can add in the current window.
#[derive(Debug, Clone, Copy, Default)]
struct WindowBound {
    /// Whether it has postings in the window.
    present: bool,
    /// The most it adds to any score there.
    score: f64,
    /// The smallest rowid among the blocks read for that.
    min_rowid: i64,
    /// Whether only documents other phrases bring are looked up in it.
    non_essential: bool,
}

/// The sum, in query order, of the window's bounds that `take` keeps (the
/// score's own order: a document's score is at most this).
fn sum(window: &[WindowBound], take: impl Fn(usize) -> bool) -> f64 {
    bound(window, &[], take)
}

fn min_rowid(window: &[WindowBound]) -> i64 {
    window
        .iter()
        .filter(|b| b.present)
        .map(|b| b.min_rowid)
        .min()
        .unwrap_or(i64::MAX)
}

/// A scored document; ordered best first (higher score, then lower rowid).
#[derive(Debug, Clone, Copy)]
struct Scored {
    score: f64,
    rowid: i64,
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.rowid.cmp(&other.rowid))
    }
}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored {}

/// The best `k` so far; the heap's top is the worst of them.
struct Best {
    k: usize,
    heap: BinaryHeap<Scored>,
}

impl Best {
    /// Whether a document scoring at most `bound`, with a rowid at least
    /// `rowid` (asked only on a tie), could still enter.
    fn admits(&self, bound: f64, rowid: impl FnOnce() -> i64) -> bool {
        match self.heap.peek() {
            Some(worst) if self.heap.len() >= self.k => {
                bound > worst.score || (bound == worst.score && rowid() < worst.rowid)
            }
            _ => true,
        }
    }

    fn offer(&mut self, s: Scored) {
        if self.heap.len() < self.k {
            self.heap.push(s);
        } else if self.heap.peek().is_some_and(|worst| s < *worst) {
            self.heap.pop();
            self.heap.push(s);
        }
    }
}

struct Search<'a> {
    postings: &'a Postings,
    admit: Admit,
    avgdl: f64,
    best: Best,
    window: Vec<WindowBound>,
}

impl Search<'_> {
    /// Where the next window starts: the first slot any phrase holds (all
    /// of them: the last of their next slots), `None` when done.
    fn next_window(&self, cursors: &[Cursor], all: bool) -> Option<u32> {
        let mut next = cursors.iter().map(|c| c.slot());
        if all {
            next.try_fold(0, |lo, s| Some(lo.max(s?)))
        } else {
            next.flatten().min()
        }
    }

    /// The block's bound for a phrase, times its idf.
    fn block_bound(&self, c: &Cursor, b: usize) -> (f64, i64) {
        let p = self.postings;
        let (freq, tokens, rowid) = match c.bounds.get(b) {
            Some(bound) if bound_is_best(p.bounds_at, self.avgdl) => {
                (bound.best_freq, bound.best_tokens, bound.min_rowid)
            }
            Some(bound) => (bound.max_freq, bound.min_tokens, bound.min_rowid),
            None => {
                // The partial last block: its exact best now.
                let mut most = 0.0f64;
                let mut min_rowid = i64::MAX;
                for posting in (b * BLOCK..c.list.len()).filter_map(|i| c.list.get(i)) {
                    let at = posting.slot;
                    most = most.max(tf(posting.freq(), p.slots.tokens(at), self.avgdl));
                    min_rowid = min_rowid.min(p.slots.rowid(at));
                }
                return (c.idf * most, min_rowid);
            }
        };
        (c.idf * tf(freq as f64, tokens as f64, self.avgdl), rowid)
    }

    /// Each phrase's bound over the blocks that meet `lo..hi`.
    fn bound_window(&mut self, cursors: &[Cursor], lo: u32, hi: u32) {
        for (i, c) in cursors.iter().enumerate() {
            let mut wb = WindowBound {
                min_rowid: i64::MAX,
                ..WindowBound::default()
            };
            if c.slot().is_some_and(|s| (lo..hi).contains(&s)) {
                wb.present = true;
                let mut b = c.pos / BLOCK;
                while c.list.slot_at(b * BLOCK).is_some_and(|s| s < hi) {
                    let (score, rowid) = self.block_bound(c, b);
                    wb.score = wb.score.max(score);
                    wb.min_rowid = wb.min_rowid.min(rowid);
                    b += 1;
                }
            }
            self.window[i] = wb;
        }
    }

    /// Score what the window's postings of `cursors` bring, any phrase
    /// matching.
    fn any_word(&mut self, cursors: &mut [Cursor], hi: u32) {
        // Phrases whose bounds, summed from the smallest, cannot lift a
        // document into the best k: looked up only for what others bring.
        let mut order: Vec<usize> = (0..cursors.len())
            .filter(|&i| self.window[i].present)
            .collect();
        order.sort_by(|&a, &b| self.window[a].score.total_cmp(&self.window[b].score));
        let floor = min_rowid(&self.window);
        let mut taken = vec![false; cursors.len()];
        for &i in &order {
            taken[i] = true;
            if self.best.admits(sum(&self.window, |j| taken[j]), || floor) {
                break;
            }
            self.window[i].non_essential = true;
        }
        let mut exact = vec![None; cursors.len()];
        loop {
            let Some(slot) = cursors
                .iter()
                .zip(&self.window)
                .filter(|(_, w)| w.present && !w.non_essential)
                .filter_map(|(c, _)| c.slot())
                .filter(|&s| s < hi)
                .min()
            else {
                return;
            };
            let slots = &self.postings.slots;
            let live = slots.admitted(slot, self.admit);
            let tokens = slots.tokens(slot);
            for (i, c) in cursors.iter_mut().enumerate() {
                let w = &self.window[i];
                exact[i] = None;
                if w.present && !w.non_essential && c.slot() == Some(slot) {
                    let freq = c.list.freq(c.pos) as f64;
                    exact[i] = Some(c.idf * tf(freq, tokens, self.avgdl));
                    c.pos += 1;
                }
            }
            if !live {
                continue;
            }
            let w = &self.window;
            let rowid = || slots.rowid(slot);
            if !self
                .best
                .admits(bound(w, &exact, |i| w[i].non_essential), rowid)
            {
                continue;
            }
            for (i, c) in cursors.iter_mut().enumerate() {
                if self.window[i].present && self.window[i].non_essential {
                    exact[i] = c.at(slot).map(|p| c.idf * tf(p.freq(), tokens, self.avgdl));
                }
            }
            self.offer(&exact, slot);
        }
    }

    /// Score the window's documents every phrase holds, read from the
    /// phrase with the fewest postings there.
    fn every_word(&mut self, cursors: &mut [Cursor], hi: u32) {
        let in_window = |c: &Cursor| c.before(hi);
        let Some(lead) = (0..cursors.len()).min_by_key(|&i| in_window(&cursors[i])) else {
            return;
        };
        let mut exact = vec![None; cursors.len()];
        let end = cursors[lead].pos + in_window(&cursors[lead]);
        'docs: for at in cursors[lead].pos..end {
            let Some(posting) = cursors[lead].list.get(at) else {
                break;
            };
            let slots = &self.postings.slots;
            if !slots.admitted(posting.slot, self.admit) {
                continue;
            }
            let tokens = slots.tokens(posting.slot);
            exact.fill(None);
            exact[lead] = Some(cursors[lead].idf * tf(posting.freq(), tokens, self.avgdl));
            let rowid = || slots.rowid(posting.slot);
            if !self
                .best
                .admits(bound(&self.window, &exact, |i| i != lead), rowid)
            {
                continue;
            }
            for (i, c) in cursors.iter_mut().enumerate() {
                if i == lead {
                    continue;
                }
                let Some(p) = c.at(posting.slot) else {
                    continue 'docs;
                };
                exact[i] = Some(c.idf * tf(p.freq(), tokens, self.avgdl));
            }
            self.offer(&exact, posting.slot);
        }
    }

    /// Offer the document in `s` with the phrases' exact shares.
    fn offer(&mut self, exact: &[Option<f64>], slot: u32) {
        #[cfg(test)]
        SCORED.with(|c| c.set(c.get() + 1));
        let mut score = 0.0;
        for share in exact.iter().flatten() {
            score += share;
        }
        self.best.offer(Scored {
            score,
            rowid: self.postings.slots.rowid(slot),
        });
    }
}

/// A bound on a document's score, in query order: the shares known
/// exactly, and for the phrases `unknown` names that are in the window,
/// their window bound (a phrase neither known nor unknown is absent: 0).
/// `exact` may be shorter than the window: none known past its end.
fn bound(window: &[WindowBound], exact: &[Option<f64>], unknown: impl Fn(usize) -> bool) -> f64 {
    let mut s = 0.0;
    for (i, w) in window.iter().enumerate() {
        match exact.get(i).copied().flatten() {
            Some(share) => s += share,
            None if w.present && unknown(i) => s += w.score,
            None => {}
        }
    }
    s
}

/// Whether the blocks' best documents are the best at `avgdl`.
fn bound_is_best(bounds_at: f64, avgdl: f64) -> bool {
    bounds_at.to_bits() == avgdl.to_bits()
}

#[cfg(test)]
thread_local! {
    /// Documents scored on this thread, for tests of what is skipped.
    static SCORED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
#[path = "bm25_tests.rs"]
mod tests;
