//! FTS5 ranking: BM25 over the `fts` table, narrowed by kind and status.

use super::*;
use crate::model::DocKind;

/// The best `want` matches of the FTS query `q` that pass the kind and
/// status filters, ordered by score and then row id (stable per document,
/// see [`stable_rowid`]). FTS5 ranks on its own — a join would make SQLite
/// sort every match with its docs row — and docs rows are looked up for the
/// top of the list only; the page widens until `want` rows pass the filters
/// or the matches run out.
///
/// The words are phrases joined by AND (`all`) or OR. A process holding the
/// postings in memory ([`postings`]) ranks them there — the same order and
/// scores, without FTS5 scoring each row, and only among the documents the
/// filters admit (each slot knows its kind and status class) — and SQL
/// does otherwise.
pub(crate) fn ranked(
    kb: &Ix,
    idx: &Index,
    words: &[&String],
    all: bool,
    want: usize,
    kinds: &[DocKind],
    currency: Currency,
) -> Result<Vec<(i64, SearchHit)>> {
    if want == 0 {
        return Ok(Vec::new());
    }
    let q = words
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(if all { " AND " } else { " OR " });
    let mut rank = idx.conn.prepare_cached(
        "SELECT rowid, bm25(fts, 2.0, 1.0) AS r FROM fts WHERE fts MATCH ?1
         ORDER BY r, rowid LIMIT ?2",
    )?;
    let mut doc = idx
        .conn
        .prepare_cached("SELECT kind, id, status, confidence FROM docs WHERE rowid = ?1")?;
    // The postings rank only what the filters admit, so `want` rows are
    // enough; SQL ranks every match, so it is asked for more.
    let admit = crate::index::bm25::Admit::new(kinds, currency);
    let mut page = want;
    loop {
        let (rows, asked): (Vec<(i64, f64)>, usize) =
            match postings::ranked_rows(kb, idx, words, all, (page, admit))? {
                Some(best) => (
                    best.into_iter().map(|(r, rowid)| (rowid, r)).collect(),
                    page,
                ),
                None => {
                    let asked = page.saturating_mul(2).saturating_add(16);
                    let rows = rank
                        .query_map(params![q, asked as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<rusqlite::Result<_>>()?;
                    (rows, asked)
                }
            };
        let exhausted = rows.len() < asked;
        let mut hits: Vec<(i64, SearchHit)> = Vec::new();
        for (rowid, r) in &rows {
            let Some((kind, hit)) = doc
                .query_row([rowid], |d| {
                    Ok((
                        d.get::<_, String>(0)?,
                        SearchHit {
                            kind: DocKind::Claim,
                            id: d.get(1)?,
                            snippet: String::new(),
                            highlights: Vec::new(),
                            score: -r,
                            backend: "fts5".into(),
                            status: d.get(2)?,
                            confidence: d.get(3)?,
                            cosine: None,
                            meta: Default::default(),
                        },
                    ))
                })
                .optional()?
            else {
                continue;
            };
            // The index writes only these kinds; a row of another is skipped.
            let Some(kind) = DocKind::parse(&kind) else {
                continue;
            };
            let hit = SearchHit { kind, ..hit };
            if kinds.contains(&hit.kind) && currency.admits(hit.status.as_deref()) {
                hits.push((*rowid, hit));
                if hits.len() == want {
                    return Ok(hits);
                }
            }
        }
        if exhausted {
            return Ok(hits);
        }
        page = page.saturating_mul(4);
    }
}

pub(crate) use crate::index::COMMON_DF;

pub(crate) fn fts_search(kb: &Ix, query: &Query) -> Result<Vec<SearchHit>> {
    let Query {
        terms,
        limit,
        kinds,
        currency,
        snippets,
        ..
    } = *query;
    let quote = |ts: &[&String]| -> Vec<String> { ts.iter().map(|t| format!("\"{t}\"")).collect() };
    let all: Vec<&String> = terms.iter().collect();
    let highlight = quote(&all).join(" OR ");
    with_index(kb, |idx| {
        // All words first (stop words only when there is nothing else: they
        // are in most documents, so requiring them narrows nothing and
        // reading their postings costs the most). If that finds too little,
        // any word fills the rest — without stop words, and without words
        // so common that scoring them means scoring a large part of the KB
        // (they add little to BM25 anyway), unless every word is that
        // common: then the rarest one alone.
        let required = &crate::index::required_words(terms);
        let mut hits = ranked(kb, idx, required, true, limit, kinds, currency)?;
        if hits.len() < limit && all.len() > 1 {
            // Any of the same words (stop words left out the same way).
            let any = required;
            // From the postings when this process holds them: counting a
            // common word's matches in SQL reads every one of them.
            let df = |t: &String, cap: usize| -> Result<usize> {
                if let Some(n) = postings::doc_freq(kb, idx, t)? {
                    return Ok(n.min(cap));
                }
                Ok(idx
                    .conn
                    .prepare_cached(
                        "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH ?1 LIMIT ?2)",
                    )?
                    .query_row(params![format!("\"{t}\""), cap as i64], |r| {
                        r.get::<_, i64>(0)
                    })? as usize)
            };
            let mut rare = Vec::new();
            let mut common = Vec::new();
            for t in any.iter() {
                match df(t, COMMON_DF)? {
                    0 => {}
                    n if n < COMMON_DF => rare.push(*t),
                    _ => common.push(*t),
                }
            }
            if rare.is_empty() && !common.is_empty() {
                let mut counts = Vec::new();
                for t in common {
                    counts.push((df(t, usize::MAX >> 1)?, t));
                }
                if let Some((_, t)) = counts.into_iter().min_by_key(|(n, _)| *n) {
                    rare.push(t);
                }
            }
            if rare.is_empty() {
                rare = any.clone();
            }
            for (rowid, hit) in ranked(kb, idx, &rare, false, limit, kinds, currency)? {
                if hits.len() < limit && !hits.iter().any(|(r, _)| *r == rowid) {
                    hits.push((rowid, hit));
                }
            }
        }
        if snippets == Snippets::No {
            return Ok(hits.into_iter().map(|(_, h)| h).collect());
        }
        // A claim's snippet is its text, never its tags (column 0).
        let mut snip = idx.conn.prepare_cached(
            "SELECT snippet(fts, ?3, char(2), char(3), '…', 24) FROM fts WHERE fts MATCH ?1 \
             AND rowid = ?2",
        )?;
        hits.into_iter()
            .map(|(rowid, mut hit)| {
                let marked: String = snip
                    .query_row(
                        params![
                            highlight,
                            rowid,
                            if hit.kind == DocKind::Claim { 1 } else { -1 }
                        ],
                        |r| r.get(0),
                    )
                    .optional()?
                    .unwrap_or_default();
                (hit.snippet, hit.highlights) = crate::index::unmark(&marked);
                Ok(hit)
            })
            .collect()
    })
}
