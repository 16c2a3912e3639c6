//! The words fed to the postings each replica keeps in memory
//! ([`WordsFeed`]): each document's row carries a `rowid` from
//! `vouch_index_rowids`, new whenever its words or status change; a rowid
//! that went (its document removed, or written anew) is a row of
//! `vouch_index_gone`. Both are written under one advisory lock
//! ([`super::WORDS_LOCK_KEY`]), so numbers are taken in the order their
//! writes commit and "after the last one read" misses none.

use super::TeamIndex;
use super::words::{headline_options, hit, tsquery, words_of};
use postgres::fallible_iterator::FallibleIterator;
use vouch_core::Result;
use vouch_core::index::engine::{DocWords, WordsFeed};
use vouch_core::index::{Query, SearchHit, Snippets};

impl WordsFeed for TeamIndex {
    fn words_after(
        &self,
        rowid: i64,
        at_most: usize,
        each: &mut dyn FnMut(DocWords),
    ) -> Result<()> {
        self.conns.with("reading the indexed words", |c| {
            let mut rows = c.query_raw(
                "SELECT d.rowid, d.kind, d.status, u.lexeme,
                        coalesce(array_length(u.positions, 1), 1),
                        length(replace(array_to_string(u.weights, ''), 'B', ''))
                 FROM (SELECT rowid, kind, status, words FROM vouch_index_docs
                       WHERE rowid > $1 ORDER BY rowid LIMIT $2) AS d
                 LEFT JOIN LATERAL unnest(d.words) AS u ON true
                 ORDER BY d.rowid",
                [
                    &rowid as &dyn postgres::types::ToSql,
                    &(at_most as i64) as &dyn postgres::types::ToSql,
                ],
            )?;
            let mut doc: Option<DocWords> = None;
            while let Some(row) = rows.next()? {
                let at: i64 = row.get(0);
                if doc.as_ref().is_some_and(|d| d.rowid != at) {
                    each(doc.take().expect("a document"));
                }
                let doc = doc.get_or_insert_with(|| DocWords {
                    rowid: at,
                    kind: row.get(1),
                    status: row.get(2),
                    tokens: Vec::new(),
                });
                if let Some(lexeme) = row.get::<_, Option<String>>(3) {
                    let all = row.get::<_, i32>(4).max(0) as u32;
                    // The title's words are weighted `A`, the body's `B`.
                    let title = (row.get::<_, Option<i32>>(5).unwrap_or(0).max(0) as u32).min(all);
                    doc.tokens.push((lexeme, title, all - title));
                }
            }
            if let Some(doc) = doc {
                each(doc);
            }
            Ok(())
        })
    }

    fn gone_after(&self, seq: i64) -> Result<Option<(Vec<i64>, i64)>> {
        if seq == i64::MAX {
            let last: i64 = self.conns.with("reading the index's removals", |c| {
                c.query_one("SELECT coalesce(max(seq), 0) FROM vouch_index_gone", &[])
                    .map(|r| r.get(0))
            })?;
            return Ok(Some((Vec::new(), last)));
        }
        // The rows, then how far they were let go: a pruning in between
        // shows in the second.
        let (rows, pruned) = self.conns.with("reading the index's removals", |c| {
            let rows = c.query(
                "SELECT seq, rowid FROM vouch_index_gone WHERE seq > $1 ORDER BY seq",
                &[&seq],
            )?;
            let pruned: i64 = c
                .query_one(
                    "SELECT coalesce((SELECT value::bigint FROM vouch_index_meta
                                      WHERE key = 'gone_pruned_through'), 0)",
                    &[],
                )?
                .get(0);
            Ok((rows, pruned))
        })?;
        if seq < pruned {
            return Ok(None);
        }
        let last = rows.last().map_or(seq, |r| r.get(0));
        Ok(Some((rows.iter().map(|r| r.get(1)).collect(), last)))
    }

    fn words_epoch(&self) -> Result<String> {
        let row = self.conns.with("reading the index's state", |c| {
            c.query_opt(
                "SELECT value FROM vouch_index_meta WHERE key = 'words_epoch'",
                &[],
            )
        })?;
        Ok(row.map(|r| r.get(0)).unwrap_or_default())
    }

    fn tokens_of(&self, words: &[&String]) -> Result<Vec<Option<String>>> {
        let folded: Vec<String> = words.iter().map(|w| words_of(w)).collect();
        let sql = format!(
            "SELECT (SELECT lexeme FROM unnest(to_tsvector('{cfg}', w)) LIMIT 1)
             FROM unnest($1::text[]) WITH ORDINALITY AS q(w, n) ORDER BY n",
            cfg = self.config
        );
        let rows = self
            .conns
            .with("reading the words' tokens", |c| c.query(&sql, &[&folded]))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn hits_of(&self, rowids: &[i64], q: &Query) -> Result<Vec<(i64, SearchHit)>> {
        if rowids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT rowid, kind, id, status, confidence, {headline}
             FROM vouch_index_docs WHERE rowid = ANY($1)",
            headline = self.headline(2)
        );
        let snippets = q.snippets == Snippets::Yes;
        let marked = tsquery(&[&q.terms.join(" ")], " | ").unwrap_or_default();
        let options = headline_options();
        let rows = self.conns.with("reading the hits' documents", |c| {
            c.query(&sql, &[&rowids, &snippets, &marked, &options])
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let found = hit(r.get(1), r.get(2), r.get(3), r.get(4), r.get(5))?;
                Some((r.get(0), found))
            })
            .collect())
    }
}
