//! The engine's words held in a server's memory as postings
//! ([`crate::index::bm25`]), so a search by words costs the best k found
//! (block-max MaxScore, FTS5's bm25 formula with the title counting twice
//! the body) instead of the engine scoring every document that holds its
//! words. Filled from the engine's feed ([`WordsFeed`]) by the keeper's
//! rounds and by this process's own writes; a process that holds none (a
//! one-shot command, a server before its first round) asks the engine.

use crate::error::Result;
use crate::index::bm25::{Admit, Postings, class_of};
use crate::index::engine::{DocWords, WordsFeed};
use crate::index::{COMMON_DF, Query, SearchHit, required_words};

/// Documents read from the feed a statement.
const FEED_PAGE: usize = 5_000;

/// The postings, and how far the feed was read into them.
pub(crate) struct HeldWords {
    postings: Postings,
    /// The last rowid read.
    last_rowid: i64,
    /// The last point of the feed of rowids gone.
    last_gone: i64,
    /// The engine's epoch they were read under.
    epoch: String,
}

impl HeldWords {
    /// Every document's words, read from the start.
    pub(crate) fn load(feed: &dyn WordsFeed) -> Result<HeldWords> {
        let epoch = feed.words_epoch()?;
        // The point of the gone feed before the words: a row that goes
        // while they are read is named after it.
        let (_, last_gone) = feed.gone_after(i64::MAX)?.unwrap_or_default();
        let mut held = HeldWords {
            postings: Postings::builder(&[], &[]).finish(),
            last_rowid: 0,
            last_gone,
            epoch,
        };
        held.read_words(feed)?;
        Ok(held)
    }

    /// Bring them in step with the feed: what was written and what went
    /// since. `false` when they must be loaded again: the engine's epoch
    /// moved (every rowid made anew), the feed let go of removals not
    /// read yet, or a quarter of the slots are dead (each change of a
    /// document leaves one).
    pub(crate) fn refresh(&mut self, feed: &dyn WordsFeed) -> Result<bool> {
        let (made, dead) = self.postings.slots();
        if feed.words_epoch()? != self.epoch || dead * 4 > made.max(64) {
            return Ok(false);
        }
        let Some((gone, last)) = feed.gone_after(self.last_gone)? else {
            return Ok(false);
        };
        for rowid in gone {
            self.postings.remove(rowid);
        }
        self.last_gone = last;
        self.read_words(feed)?;
        Ok(true)
    }

    fn read_words(&mut self, feed: &dyn WordsFeed) -> Result<()> {
        loop {
            let mut read = 0usize;
            let postings = &mut self.postings;
            let last = &mut self.last_rowid;
            feed.words_after(*last, FEED_PAGE, &mut |doc: DocWords| {
                read += 1;
                *last = (*last).max(doc.rowid);
                let mut tokens: Vec<(String, u8)> = Vec::new();
                for (token, title, body) in doc.tokens {
                    for _ in 0..title {
                        tokens.push((token.clone(), 0));
                    }
                    for _ in 0..body {
                        tokens.push((token.clone(), 1));
                    }
                }
                postings.insert(
                    doc.rowid,
                    class_of(&doc.kind, doc.status.as_deref()),
                    &tokens,
                );
            })?;
            if read < FEED_PAGE {
                return Ok(());
            }
        }
    }

    /// Whether every count fitted (else the engine ranks).
    pub(crate) fn exact(&self) -> bool {
        self.postings.exact()
    }

    /// The search by words, as the embedded index makes it: every word
    /// but stop words first, then any of them to fill (without words so
    /// common they would score much of the KB, unless all are: then the
    /// rarest one alone). The hits the engine holds now, scored here.
    pub(crate) fn search(&self, feed: &dyn WordsFeed, q: &Query) -> Result<Vec<SearchHit>> {
        if q.limit == 0 {
            return Ok(Vec::new());
        }
        let required = required_words(q.terms);
        let tokens = feed.tokens_of(&required)?;
        let ids: Vec<Option<u32>> = tokens
            .iter()
            .map(|t| t.as_deref().and_then(|t| self.postings.token(t)))
            .collect();
        let admit = Admit::new(q.kinds, q.currency);
        let mut best = self.postings.top(&ids, true, q.limit, admit);
        if best.len() < q.limit && q.terms.len() > 1 {
            let df = |t: u32| self.postings.live_count(t) as usize;
            let held: Vec<u32> = ids.iter().flatten().copied().collect();
            let mut rare: Vec<u32> = held
                .iter()
                .copied()
                .filter(|t| df(*t) < COMMON_DF)
                .collect();
            if rare.is_empty() {
                rare.extend(held.iter().copied().min_by_key(|t| df(*t)));
            }
            let any: Vec<Option<u32>> = rare.into_iter().map(Some).collect();
            for (score, rowid) in self.postings.top(&any, false, q.limit, admit) {
                if best.len() < q.limit && !best.iter().any(|(_, r)| *r == rowid) {
                    best.push((score, rowid));
                }
            }
        }
        let rowids: Vec<i64> = best.iter().map(|(_, r)| *r).collect();
        let mut found: std::collections::HashMap<i64, SearchHit> =
            feed.hits_of(&rowids, q)?.into_iter().collect();
        // A row the engine no longer holds (written anew since the last
        // round) is left out; the next round reads what replaced it.
        Ok(best
            .into_iter()
            .filter_map(|(score, rowid)| {
                let mut hit = found.remove(&rowid)?;
                hit.score = -score;
                (q.kinds.contains(&hit.kind) && q.currency.admits(hit.status.as_deref()))
                    .then_some(hit)
            })
            .collect())
    }
}
