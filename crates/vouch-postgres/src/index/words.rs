//! The documents and their words in the team database
//! (`vouch_index_docs`): what a search by words reads, the same for every
//! replica, so a replica answers by words without reading the files
//! first. The documents are derived from the files, as `state.db`'s are:
//! whoever keeps them in step puts each one as read from its file, with
//! the file's signature ([`DocWrite`]), and a freshness scan compares the
//! files with those signatures.
//!
//! The words are PostgreSQL's own: a `tsvector` a document (its title
//! weighted `A`, its body `B`) under a GIN index, ranked by `ts_rank`
//! with the title counting twice the body and the length normalised, and
//! snippets by `ts_headline`. What PostgreSQL is given is the text's
//! words as a query's words are made (runs of letters and digits, accents
//! folded away), so an address or a path is found by its parts, as the
//! embedded index finds it. Stemming follows `retrieval.fts5_porter`:
//! Snowball's English stemmer without stop words, or none. Which hits
//! come back is the embedded index's rule (all the words, then any of
//! them to fill); their order among themselves is PostgreSQL's ranking,
//! not FTS5's BM25, so it can differ.

use super::TeamIndex;
use postgres::fallible_iterator::FallibleIterator;
use std::collections::HashMap;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use vouch_core::Result;
use vouch_core::index::docs::{Doc, embedded_text, full_text};
use vouch_core::index::engine::{DocRead, DocWrite, Listed, Sig};
use vouch_core::index::memory::kind_static;
use vouch_core::index::{
    Currency, MARK_CLOSE, MARK_OPEN, Query, SearchHit, Snippets, required_words, unmark,
};
use vouch_core::model::{ClaimStatus, DocKind, PageStatus};

impl TeamIndex {
    /// The best `want` documents holding all (`all`) or any of `words`,
    /// of the kinds and statuses asked, best first; with their snippets
    /// when asked, the query's `marked` words marked.
    fn ranked(
        &self,
        words: &[&String],
        all: bool,
        want: usize,
        q: &Query,
        marked: &str,
    ) -> Result<Vec<SearchHit>> {
        let Some(query) = tsquery(words, if all { " & " } else { " | " }) else {
            return Ok(Vec::new());
        };
        if want == 0 {
            return Ok(Vec::new());
        }
        let kinds: Vec<&str> = q.kinds.iter().map(|k| k.as_str()).collect();
        // What the currency admits, as a list of the statuses the model
        // knows: `Any` turns away the few it does not admit (and lets a
        // status another writer made up through, as the embedded index
        // does), `Current` lets in only those it admits.
        let (test, statuses) = match q.currency {
            Currency::Any => ("<> ALL($3)", statuses(|s| !Currency::Any.admits(Some(s)))),
            Currency::Current => ("= ANY($3)", statuses(|s| Currency::Current.admits(Some(s)))),
        };
        let sql = format!(
            "SELECT kind, id, status, confidence, r, {headline}
             FROM (SELECT kind, id, title, body, status, confidence,
                          ts_rank('{{0, 0, 0.5, 1}}', words, q, 1) AS r
                   FROM vouch_index_docs, to_tsquery('{cfg}', $1) AS q
                   WHERE words @@ q AND kind = ANY($2) AND (status IS NULL OR status {test})
                   ORDER BY r DESC, kind, id LIMIT $4) AS best
             ORDER BY r DESC, kind, id",
            cfg = self.config,
            headline = self.headline(5)
        );
        let snippets = q.snippets == Snippets::Yes;
        let options = headline_options();
        let marked = tsquery(&[&marked.to_string()], " | ").unwrap_or_default();
        let rows = self.conns.with("searching the words index", |c| {
            c.query(
                &sql,
                &[
                    &query,
                    &kinds,
                    &statuses,
                    &(want as i64),
                    &snippets,
                    &marked,
                    &options,
                ],
            )
        })?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let hit = hit(row.get(0), row.get(1), row.get(2), row.get(3), row.get(5))?;
                let score = f64::from(row.get::<_, f32>(4));
                (q.kinds.contains(&hit.kind) && q.currency.admits(hit.status.as_deref()))
                    .then_some(SearchHit { score, ..hit })
            })
            .collect())
    }

    /// A document's snippet in SQL: with `$first` true, its text (a
    /// claim's, else its title and body) with the words of the tsquery
    /// text `$first+1` marked, under the options `$first+2`; else empty.
    pub(super) fn headline(&self, first: usize) -> String {
        format!(
            "CASE WHEN ${first} THEN ts_headline('{cfg}',
                 CASE WHEN kind = 'claim' OR title = '' THEN body
                      ELSE title || E'\\n' || body END,
                 to_tsquery('{cfg}', ${q}), ${o})
             ELSE '' END",
            cfg = self.config,
            q = first + 1,
            o = first + 2
        )
    }
}

/// `ts_headline`'s options: the matched words between vouch's marks, about
/// as much text around them as FTS5's snippets give.
pub(super) fn headline_options() -> String {
    format!(
        "StartSel=\"{MARK_OPEN}\", StopSel=\"{MARK_CLOSE}\", MaxWords=24, MinWords=12, \
         ShortWord=0, MaxFragments=1, FragmentDelimiter=\" … \""
    )
}

/// A hit of a document's row (its score 0: the caller's), its snippet
/// unmarked; `None` for a kind search does not know.
pub(super) fn hit(
    kind: &str,
    id: String,
    status: Option<String>,
    confidence: Option<f64>,
    marked: &str,
) -> Option<SearchHit> {
    let (snippet, highlights) = unmark(marked);
    Some(SearchHit {
        kind: DocKind::parse(kind)?,
        id,
        snippet,
        highlights,
        score: 0.0,
        // The words retriever's name in the protocol, whichever engine
        // holds the words.
        backend: "fts5".into(),
        status,
        confidence,
        cosine: None,
        meta: Default::default(),
    })
}

/// The statuses of claims and pages that `keep` keeps.
fn statuses(keep: impl Fn(&str) -> bool) -> Vec<&'static str> {
    ClaimStatus::NAMES
        .iter()
        .chain(PageStatus::NAMES)
        .copied()
        .filter(|s| keep(s))
        .collect()
}

/// `text` as PostgreSQL is given it: its runs of letters and digits (as a
/// query's words are made), accents folded away, a space between.
pub(super) fn words_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        let start = out.len();
        if start > 0 {
            out.push(' ');
        }
        out.extend(word.nfd().filter(|c| !is_combining_mark(*c)));
        if out.len() == start + usize::from(start > 0) {
            out.truncate(start);
        }
    }
    out
}

/// The words PostgreSQL makes a `tsvector` of, at most: one holds at most
/// 1 MB (about 14 bytes a distinct word of six letters, so 256 KiB of
/// words fit even when none repeats), and a long page's words (positions
/// past 16,383 are not kept anyway) are found by those of its first
/// 256 KiB.
const WORDS_AT_MOST: usize = 256 * 1024;

/// `words` cut to [`WORDS_AT_MOST`] bytes, at a word's end.
fn capped(mut words: String) -> String {
    if words.len() > WORDS_AT_MOST {
        let cut = words[..WORDS_AT_MOST].rfind(' ').unwrap_or(0);
        words.truncate(cut);
    }
    words
}

/// A `to_tsquery` text of `words` joined by `op`, each word quoted (only
/// letters and digits are left in it, so nothing in a word is read as the
/// query language); `None` when no word is left.
pub(super) fn tsquery(words: &[&String], op: &str) -> Option<String> {
    let quoted: Vec<String> = words
        .iter()
        .flat_map(|w| {
            words_of(w)
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(|w| format!("'{w}'"))
                .collect::<Vec<_>>()
        })
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(op))
}

impl TeamIndex {
    /// [`vouch_core::index::engine::Tables::words`].
    pub(super) fn search_words(&self, q: &Query) -> Result<Vec<SearchHit>> {
        let required = required_words(q.terms);
        let marked = q.terms.join(" ");
        let mut hits = self.ranked(&required, true, q.limit, q, &marked)?;
        if hits.len() < q.limit && q.terms.len() > 1 {
            for hit in self.ranked(&required, false, q.limit, q, &marked)? {
                if hits.len() < q.limit
                    && !hits.iter().any(|h| h.kind == hit.kind && h.id == hit.id)
                {
                    hits.push(hit);
                }
            }
        }
        Ok(hits)
    }

    /// [`vouch_core::index::engine::Tables::texts_and_confidence`].
    pub(super) fn texts_of(
        &self,
        keys: &[(DocKind, &str, bool)],
    ) -> Result<Vec<(String, Option<f64>)>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let kinds: Vec<&str> = keys.iter().map(|(k, _, _)| k.as_str()).collect();
        let ids: Vec<&str> = keys.iter().map(|(_, id, _)| *id).collect();
        let rows = self.conns.with("reading indexed documents", |c| {
            c.query(
                "SELECT kind, id, title, body, confidence FROM vouch_index_docs
                 WHERE (kind, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
                &[&kinds, &ids],
            )
        })?;
        let mut held: HashMap<(String, String), (String, String, Option<f64>)> = rows
            .iter()
            .map(|r| ((r.get(0), r.get(1)), (r.get(2), r.get(3), r.get(4))))
            .collect();
        Ok(keys
            .iter()
            .map(|(kind, id, with_text)| {
                match held.remove(&(kind.as_str().to_string(), id.to_string())) {
                    Some((title, body, confidence)) if *with_text => {
                        (full_text(title, body), confidence)
                    }
                    Some((_, _, confidence)) => (String::new(), confidence),
                    None => (String::new(), None),
                }
            })
            .collect())
    }
}

impl DocWrite for TeamIndex {
    fn put_docs(&self, docs: &[(Doc, Sig)]) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        // The last of a key's documents is the one held (one statement
        // may not touch a row twice).
        let mut last: HashMap<(&str, &str), usize> = HashMap::new();
        for (i, (doc, _)) in docs.iter().enumerate() {
            last.insert((doc.kind, doc.id.as_str()), i);
        }
        let mut chosen: Vec<usize> = last.into_values().collect();
        chosen.sort_unstable();
        let pick = |f: &dyn Fn(&(Doc, Sig)) -> String| -> Vec<String> {
            chosen.iter().map(|&i| f(&docs[i])).collect()
        };
        let kinds = pick(&|(d, _)| d.kind.to_string());
        let ids = pick(&|(d, _)| d.id.clone());
        // PostgreSQL's text holds no NUL (a hand-written file may).
        let titles = pick(&|(d, _)| d.title.replace('\0', "\u{FFFD}"));
        let bodies = pick(&|(d, _)| d.body.replace('\0', "\u{FFFD}"));
        let title_words = pick(&|(d, _)| capped(words_of(&d.title)));
        let body_words = pick(&|(d, _)| capped(words_of(&d.body)));
        let status: Vec<Option<&str>> = chosen
            .iter()
            .map(|&i| docs[i].0.status.as_deref())
            .collect();
        let confidence: Vec<Option<f64>> = chosen.iter().map(|&i| docs[i].0.confidence).collect();
        let mtime: Vec<i64> = chosen.iter().map(|&i| docs[i].1.0).collect();
        let size: Vec<i64> = chosen.iter().map(|&i| docs[i].1.1).collect();
        // A document whose words or status change takes a new rowid, and
        // its old one is named gone (the replicas' postings follow both):
        // `vouch_index_put_v1` (schema.rs), one round trip.
        let config = self.config;
        self.conns.with("indexing documents", |c| {
            c.execute(
                "SELECT vouch_index_put_v1($1, $2::text::regconfig, $3, $4, $5, $6, $7, $8, $9, $10, \
                 $11, $12)",
                &[
                    &super::WORDS_LOCK_KEY,
                    &config,
                    &kinds,
                    &ids,
                    &titles,
                    &bodies,
                    &status,
                    &confidence,
                    &mtime,
                    &size,
                    &title_words,
                    &body_words,
                ],
            )
            .map(|_| ())
        })
    }

    fn remove_docs(&self, keys: &[(&str, &str)]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let kinds: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
        let ids: Vec<&str> = keys.iter().map(|(_, id)| *id).collect();
        let n: i64 = self.conns.with("dropping indexed documents", |c| {
            c.query_one(
                "SELECT vouch_index_remove_v1($1, $2, $3)",
                &[&super::WORDS_LOCK_KEY, &kinds, &ids],
            )
            .map(|r| r.get(0))
        })?;
        Ok(n as usize)
    }

    fn signatures(&self, kind: &str) -> Result<Vec<(String, Sig)>> {
        let rows = self.conns.with("reading indexed signatures", |c| {
            c.query(
                "SELECT id, mtime, size FROM vouch_index_docs WHERE kind = $1 ORDER BY id",
                &[&kind],
            )
        })?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2))))
            .collect())
    }
}

impl DocRead for TeamIndex {
    fn vector_documents(&self) -> Result<usize> {
        let n: i64 = self.conns.with("counting the indexed documents", |c| {
            c.query_one(
                "SELECT count(*) FROM vouch_index_docs WHERE kind <> 'relation'",
                &[],
            )
            .map(|r| r.get(0))
        })?;
        Ok(n as usize)
    }

    fn each_listed(
        &self,
        keys: Option<&[(String, String)]>,
        each: &mut dyn FnMut(Listed<'_>),
    ) -> Result<()> {
        let kinds: Vec<&str> = keys
            .unwrap_or_default()
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        let ids: Vec<&str> = keys
            .unwrap_or_default()
            .iter()
            .map(|(_, id)| id.as_str())
            .collect();
        let every = keys.is_none();
        self.conns.with("listing the indexed documents", |c| {
            // Streamed: a million documents are never held at once.
            let mut rows = c.query_raw(
                "SELECT kind, id, status, mtime, size FROM vouch_index_docs
                 WHERE kind <> 'relation' AND ($1 OR (kind, id) IN
                     (SELECT * FROM unnest($2::text[], $3::text[])))
                 ORDER BY kind, id",
                [
                    &every as &dyn postgres::types::ToSql,
                    &kinds as &dyn postgres::types::ToSql,
                    &ids as &dyn postgres::types::ToSql,
                ],
            )?;
            while let Some(row) = rows.next()? {
                let Some(kind) = kind_static(row.get(0)) else {
                    continue;
                };
                each(Listed {
                    key: (kind, row.get(1)),
                    status: row.get(2),
                    sig: (row.get(3), row.get(4)),
                });
            }
            Ok(())
        })
    }

    fn embedded_text(&self, kind: &str, id: &str) -> Result<Option<String>> {
        let row = self.conns.with("reading an indexed document", |c| {
            c.query_opt(
                "SELECT title, body FROM vouch_index_docs WHERE kind = $1 AND id = $2",
                &[&kind, &id],
            )
        })?;
        Ok(row.map(|r| embedded_text(kind, r.get(0), r.get(1))))
    }
}

#[cfg(test)]
mod tests {
    use super::{tsquery, words_of};

    #[test]
    fn words_are_runs_of_letters_and_digits_with_accents_folded() {
        assert_eq!(
            words_of("Déploys at https://example.com/a_b — café, naïve 3.14"),
            "Deploys at https example com a b cafe naive 3 14"
        );
        assert_eq!(words_of("  ,; "), "");
        assert_eq!(words_of("one"), "one");
    }

    #[test]
    fn a_long_texts_words_are_cut_at_a_words_end() {
        let long: String = (0..60_000).map(|i| format!("w{i} ")).collect();
        let cut = super::capped(super::words_of(&long));
        assert!(cut.len() <= super::WORDS_AT_MOST && cut.len() > super::WORDS_AT_MOST - 10);
        assert!(cut.starts_with("w0 w1 ") && !cut.ends_with(' '));
        let last = cut.rsplit(' ').next().expect("a word");
        assert!(long.contains(&format!(" {last} ")), "{last} is whole");
        assert_eq!(super::capped("short words".into()), "short words");
    }

    #[test]
    fn a_query_word_is_never_read_as_query_syntax() {
        let hostile = ["a'b", "x&!y", "c:*", "(", "\\'"].map(String::from);
        let words: Vec<&String> = hostile.iter().collect();
        assert_eq!(
            tsquery(&words, " & ").as_deref(),
            Some("'a' & 'b' & 'x' & 'y' & 'c'")
        );
        assert_eq!(tsquery(&[&"()".to_string()], " | "), None);
    }
}
