//! The best k against scoring every match, on postings large enough to
//! skip blocks and windows: skewed word frequencies, ties, titles, dead
//! documents and an average length moved by writes.

use super::*;
use crate::clock::SeededRng as Rng;

/// Every live match of `phrases`, scored one document at a time with
/// FTS5's formula, in `ORDER BY bm25, rowid` order: what `top` must give
/// the first k of.
fn every_match(
    p: &Postings,
    phrases: &[Option<u32>],
    all: bool,
    (admit, model): (Admit, &Model),
) -> Vec<(f64, i64)> {
    let avgdl = p.total_tokens as f64 / p.rows as f64;
    let idfs: Vec<f64> = phrases
        .iter()
        .map(|t| idf(p.rows, t.map_or(0, |t| p.live_count(t))))
        .collect();
    // Each phrase's postings by slot, read once (a scan of the list per
    // document made this oracle most of the suite's time).
    let by_slot: Vec<HashMap<u32, f64>> = phrases
        .iter()
        .map(|t| {
            t.map(|t| {
                p.lists[t as usize]
                    .iter()
                    .map(|q| (q.slot, q.freq()))
                    .collect()
            })
            .unwrap_or_default()
        })
        .collect();
    let mut out = Vec::new();
    for slot in 0..p.slots.len() as u32 {
        let (tokens, rowid) = (p.slots.tokens[slot as usize], p.slots.rowid[slot as usize]);
        if !p.slots.live(slot) || !admit.admits(model.classes[&rowid]) {
            continue;
        }
        let mut score = 0.0;
        let mut matched = 0;
        for (i, postings) in by_slot.iter().enumerate() {
            let found = postings.get(&slot);
            let freq = found.copied().unwrap_or(0.0);
            matched += usize::from(found.is_some());
            score += idfs[i]
                * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * tokens as f64 / avgdl)));
        }
        if matched > 0 && (!all || matched == phrases.len()) {
            out.push((-score, rowid));
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    out
}

/// A document of `len` words: word `w` of a vocabulary of `vocab`, drawn
/// so that low numbers are common (half the draws from the first eight).
fn doc(rng: &mut Rng, len: usize, vocab: usize) -> Vec<(String, u8)> {
    (0..len)
        .map(|i| {
            let w = if rng.below(2) == 0 {
                rng.below(8)
            } else {
                rng.below(vocab)
            };
            (format!("w{w}"), u8::from(i >= 2))
        })
        .collect()
}

/// Rowids neither ascending with slots nor dense, as stable rowids are.
fn rowid(i: usize) -> i64 {
    ((i as i64).wrapping_mul(0x9E37_79B9) & 0x0FFF_FFFF) + 1
}

/// A class for each document: claims, pages and entities, some claims
/// superseded, a few of a kind no search returns.
fn class(rowid: i64) -> u8 {
    let status = if rowid % 7 == 0 {
        "superseded"
    } else {
        "working"
    };
    match rowid % 13 {
        0 => class_of("relation", None),
        n if n % 3 == 0 => class_of("page", Some("active")),
        n if n % 3 == 1 => class_of("entity", None),
        _ => class_of("claim", Some(status)),
    }
}

/// What a search of every kind and status returns.
fn every() -> Admit {
    Admit::new(DocKind::ALL, Currency::Any)
}

/// The filters a check tries, besides [`every`].
fn filters() -> [Admit; 3] {
    [
        Admit::new(&[DocKind::Claim, DocKind::Page], Currency::Current),
        Admit::new(&[DocKind::Claim], Currency::Current),
        Admit::new(&[DocKind::Entity, DocKind::Page], Currency::Any),
    ]
}

/// What the postings must hold, kept apart from them: each live
/// document's length and class, by rowid.
#[derive(Default)]
struct Model {
    lengths: HashMap<i64, usize>,
    classes: HashMap<i64, u8>,
}

impl Model {
    fn insert(&mut self, p: &mut Postings, rowid: i64, class: u8, toks: &[(String, u8)]) {
        p.insert(rowid, class, toks);
        self.lengths.insert(rowid, toks.len());
        self.classes.insert(rowid, class);
    }

    fn remove(&mut self, p: &mut Postings, rowid: i64) {
        p.remove(rowid);
        self.lengths.remove(&rowid);
    }
}

/// Postings of `n` random documents, and their model.
fn build(rng: &mut Rng, n: usize, vocab: usize) -> (Postings, Model) {
    let docs: Vec<(i64, Vec<(String, u8)>)> = (0..n)
        .map(|i| {
            // Many short documents of the same few words: ties.
            let len = if i % 5 == 0 { 2 } else { 2 + rng.below(30) };
            (rowid(i), doc(rng, len, vocab))
        })
        .collect();
    let mut rowids: Vec<i64> = docs.iter().map(|d| d.0).collect();
    rowids.sort_unstable();
    let mut by_token: Vec<(String, i64, bool)> = docs
        .iter()
        .flat_map(|(r, toks)| toks.iter().map(|(t, col)| (t.clone(), *r, *col == 0)))
        .collect();
    by_token.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let classes: Vec<u8> = rowids.iter().map(|&r| class(r)).collect();
    let mut b = Postings::builder(&rowids, &classes);
    for (t, r, title) in &by_token {
        b.push(t, *r, *title);
    }
    let model = Model {
        lengths: docs.iter().map(|(r, toks)| (*r, toks.len())).collect(),
        classes: rowids.iter().zip(classes).map(|(&r, c)| (r, c)).collect(),
    };
    (b.finish(), model)
}

/// The postings count what the model holds: one live slot a document,
/// found by its rowid, with its length; the rest dead.
fn assert_counts(p: &Postings, model: &Model) {
    let model = &model.lengths;
    assert_eq!(p.rows, model.len() as i64);
    assert_eq!(p.total_tokens, model.values().sum::<usize>() as i64);
    let live: Vec<u32> = (0..p.slots.len() as u32)
        .filter(|&s| p.slots.live(s))
        .collect();
    assert_eq!(live.len(), model.len(), "one live slot a document");
    assert_eq!(p.dead + live.len(), p.slots.len());
    for s in live {
        let rowid = p.slots.rowid(s);
        assert_eq!(p.live_slot(rowid), Some(s), "rowid {rowid}");
        assert_eq!(p.slots.tokens[s as usize] as usize, model[&rowid]);
    }
}

/// Random queries of one to four words, any and all, against the oracle
/// for several k; returns how many had a match.
fn check(p: &Postings, model: &Model, rng: &mut Rng, (vocab, rounds): (usize, usize)) -> usize {
    let mut matched = 0;
    for round in 0..rounds {
        let n = 1 + rng.below(4);
        let phrases: Vec<Option<u32>> = (0..n)
            .map(|_| {
                let w = if rng.below(3) == 0 {
                    rng.below(8)
                } else {
                    rng.below(vocab + 2)
                };
                p.token(&format!("w{w}"))
            })
            .collect();
        let all = round % 2 == 1;
        // Every document, and (in turn) one of the filters.
        let filter = filters()[round % 3];
        for admit in [every(), filter] {
            let want = every_match(p, &phrases, all, (admit, model));
            for k in [1, 2, 10, 37, 200] {
                let got = p.top(&phrases, all, k, admit);
                let want = &want[..want.len().min(k)];
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{phrases:?} all={all} k={k} {admit:?}"
                );
                for (g, w) in got.iter().zip(want) {
                    assert_eq!(
                        (g.0.to_bits(), g.1),
                        (w.0.to_bits(), w.1),
                        "{phrases:?} all={all} k={k} {admit:?}: {g:?} vs {w:?}"
                    );
                }
            }
            matched += usize::from(admit == every() && !want.is_empty());
        }
    }
    matched
}

#[test]
fn the_best_k_are_every_matchs_first_k_to_the_bit() {
    let mut rng = Rng::new(7);
    let vocab = 60;
    let (mut p, mut model) = build(&mut rng, 6000, vocab);
    assert_counts(&p, &model);
    assert!(p.bounds.iter().any(|b| b.len() > 8), "blocks to skip");
    assert!(check(&p, &model, &mut rng, (vocab, 80)) > 60);

    // Writes: documents removed, rewritten and added move the average
    // length (bounds fall back to counts) and leave dead slots behind.
    // A rewrite may change a document's status, so its class: half of
    // the rewritten claims are superseded.
    let superseded = class_of("claim", Some("superseded"));
    let rewritten = |i: usize| {
        if i.is_multiple_of(2) {
            superseded
        } else {
            class(rowid(i * 11 + 3))
        }
    };
    for i in 0..400 {
        model.remove(&mut p, rowid(i * 7));
    }
    for i in 0..300 {
        let len = 2 + rng.below(12);
        let toks = doc(&mut rng, len, vocab);
        model.insert(&mut p, rowid(i * 11 + 3), rewritten(i), &toks);
    }
    for i in 6000..6600 {
        let toks = doc(&mut rng, 3, vocab);
        model.insert(&mut p, rowid(i), class(rowid(i)), &toks);
    }
    assert_counts(&p, &model);
    // Documents written since the build, written again and removed.
    for i in 0..100 {
        let toks = doc(&mut rng, 4, vocab);
        model.insert(&mut p, rowid(i * 11 + 3), class(rowid(i * 11 + 3)), &toks);
    }
    for i in 6000..6050 {
        model.remove(&mut p, rowid(i));
    }
    // Removed twice, and never known: nothing changes.
    model.remove(&mut p, rowid(0));
    model.remove(&mut p, rowid(6000));
    model.remove(&mut p, -5);
    assert_counts(&p, &model);
    assert!(p.slots().1 > 0);
    assert!(!bound_is_best(p.bounds_at, p.avgdl()));
    assert!(check(&p, &model, &mut rng, (vocab, 80)) > 60);
}

#[test]
fn a_search_for_ten_skips_most_of_a_common_words_postings() {
    // Not a timing: the postings a search scores, counted by giving it
    // a k that fills at once and comparing with every match.
    let mut rng = Rng::new(11);
    let (p, model) = build(&mut rng, 20_000, 200);
    let common = p.token("w0");
    let matches = every_match(&p, &[common], false, (every(), &model)).len();
    let scored = scored_by_top(&p, &[common], 10);
    assert!(matches > 5_000, "{matches}");
    assert!(scored * 4 < matches, "scored {scored} of {matches}");
}

/// How many documents `top` scores for a query (offered to the heap).
fn scored_by_top(p: &Postings, phrases: &[Option<u32>], k: usize) -> usize {
    SCORED.with(|c| c.set(0));
    p.top(phrases, false, k, every());
    SCORED.with(|c| c.get())
}

/// Galloping finds what a binary search of the rest finds, from any start.
#[test]
fn gallop_is_partition_point_from_any_start() {
    for len in 0..40usize {
        let sorted: Vec<i64> = (0..len as i64).map(|i| 2 * i).collect();
        for from in 0..=len + 1 {
            for value in -1..=2 * len as i64 + 1 {
                let at = from.min(len);
                let want = at + sorted[at..].partition_point(|&r| r < value);
                assert_eq!(gallop(&sorted, from, value), want, "{len} {from} {value}");
            }
        }
    }
}
