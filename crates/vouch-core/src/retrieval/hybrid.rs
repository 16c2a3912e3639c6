//! The `hybrid` backend: FTS5's lexical ranking and the embedding
//! ranking, fused.
//!
//! Plain reciprocal rank fusion failed here (issue 10): weak lexical
//! matches — one common word of the question — that appear in both lists
//! outrank a strong semantic match that appears in one, and paraphrased
//! questions fell from 0.52 to 0.10 recall@5. So ranks are not fused;
//! scores are. Every candidate of either list gets its cosine with the
//! query (the vectors of every document are in memory, so a lexical hit
//! the semantic top 50 missed is still measured by meaning), and a
//! lexical hit adds a bonus that grows with the share of the question's
//! words it contains:
//!
//! ```text
//! score = cosine + LEXICAL_WEIGHT × coverage²
//! ```
//!
//! A hit that matches every word gets the full bonus; one that matches one
//! word of four gets a sixteenth of it, so it cannot outrank a document
//! that says the same thing in other words. Neither side is lost: both
//! lists' candidates are ranked, and the best hit of each side — the top
//! semantic match, and the top lexical match when it contains every word —
//! is always among the results.

use super::semantic::{self, CANDIDATES};
use super::{Query, SearchHit, Snippets};
use crate::error::Result;
use crate::kb::Kb;
use crate::model::DocKind;
use std::collections::HashMap;

/// The bonus for a lexical hit that contains every word of the question,
/// on the cosine scale (MiniLM: related texts ~0.4–0.8). Chosen on the
/// project's eval set (eval/queries.yaml; see docs/search.md).
pub const LEXICAL_WEIGHT: f32 = 0.3;

/// Whether `word` (lowercase) is matched by a document word: the same
/// word, or one sharing a stem — a common prefix of at least four letters
/// and of all but two letters of the shorter word (`expire` / `expiring`,
/// `user` / `users`, `rotate` / `rotation`), roughly what the FTS5 porter
/// stemmer matches. Numbers match only exactly.
pub(crate) fn word_matches(word: &str, doc_words: &[String]) -> bool {
    let numeric = word.chars().any(|c| c.is_ascii_digit());
    doc_words.iter().any(|w| {
        if w == word {
            return true;
        }
        if numeric {
            return false;
        }
        let common = w
            .chars()
            .zip(word.chars())
            .take_while(|(a, b)| a == b)
            .count();
        let shorter = w.chars().count().min(word.chars().count());
        common >= 4 && common >= shorter.saturating_sub(2)
    })
}

/// Share of the question's content words (not stop words, unless it has
/// only those) that `text` contains.
pub(crate) fn coverage(terms: &[String], text: &str) -> f32 {
    let content: Vec<&String> = terms
        .iter()
        .filter(|t| !super::fts5::STOP_WORDS.contains(&t.as_str()))
        .collect();
    if content.is_empty() {
        share(terms.iter(), text)
    } else {
        share(content.into_iter(), text)
    }
}

/// Share of `terms` that `text` contains, by stem; 0 when there are none.
pub(crate) fn share<'a>(terms: impl ExactSizeIterator<Item = &'a String>, text: &str) -> f32 {
    let n = terms.len();
    if n == 0 {
        return 0.0;
    }
    let doc_words = super::query_terms_unbounded(text);
    let hit = terms.filter(|w| word_matches(w, &doc_words)).count();
    hit as f32 / n as f32
}

struct Candidate {
    hit: SearchHit,
    lexical: Option<f32>,
    semantic: bool,
    score: f32,
}

pub(crate) fn search(kb: &Kb, q: &Query) -> Result<Vec<SearchHit>> {
    let wide = Query {
        limit: CANDIDATES.max(q.limit),
        ..*q
    };
    let lexical = if q.terms.is_empty() {
        Vec::new()
    } else {
        super::fts5::fts_search(kb, &wide)?
    };
    let (vector, semantic) = semantic::nearest(kb, q, wide.limit)?;
    let mut by_key: HashMap<(DocKind, String), usize> = HashMap::new();
    let mut cands: Vec<Candidate> = Vec::new();
    for hit in lexical {
        let text = super::fts5::with_index(kb, |idx| idx.text_of(hit.kind.as_str(), &hit.id))?
            .unwrap_or_default();
        let cov = coverage(q.terms, &text);
        by_key.insert((hit.kind, hit.id.clone()), cands.len());
        cands.push(Candidate {
            hit,
            lexical: Some(cov),
            semantic: false,
            score: 0.0,
        });
    }
    for (kind, id, status, _) in &semantic {
        if let Some(&i) = by_key.get(&(*kind, id.clone())) {
            cands[i].semantic = true;
            continue;
        }
        by_key.insert((*kind, id.clone()), cands.len());
        cands.push(Candidate {
            hit: SearchHit {
                kind: *kind,
                id: id.clone(),
                snippet: if q.snippets == Snippets::Yes {
                    semantic::excerpt(kb, kind.as_str(), id)
                } else {
                    String::new()
                },
                highlights: Vec::new(),
                score: 0.0,
                backend: String::new(),
                status: status.clone(),
                confidence: semantic::confidence(kb, kind.as_str(), id),
                meta: Default::default(),
            },
            lexical: None,
            semantic: true,
            score: 0.0,
        });
    }
    {
        let guard = kb.index_state.read_vectors();
        for c in cands.iter_mut() {
            let cosine = guard
                .as_ref()
                .and_then(|v| v.similarity(c.hit.kind.as_str(), &c.hit.id, &vector))
                .unwrap_or(0.0);
            let bonus = c.lexical.map_or(0.0, |cov| LEXICAL_WEIGHT * cov * cov);
            c.score = cosine + bonus;
            c.hit.backend = match (c.lexical.is_some(), c.semantic) {
                (true, true) => "hybrid",
                (true, false) => "fts5",
                _ => "embedding",
            }
            .into();
            c.hit.score = ((c.score as f64) * 10_000.0).round() / 10_000.0;
        }
    }
    // Each side's best, before ranking reorders them.
    let top_semantic = semantic.first().map(|(k, i, _, _)| (*k, i.clone()));
    let top_lexical = cands
        .first()
        .filter(|c| c.lexical == Some(1.0))
        .map(|c| (c.hit.kind, c.hit.id.clone()));
    cands.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.hit.kind.as_str().cmp(b.hit.kind.as_str()))
            .then_with(|| a.hit.id.cmp(&b.hit.id))
    });
    let mut out: Vec<SearchHit> = cands.into_iter().map(|c| c.hit).collect();
    // Each side's best stays in: any that ranked below the cut takes one of
    // the last places, in order, displacing the weakest hits.
    let mut keep: Vec<(DocKind, String)> = Vec::new();
    for k in [top_lexical, top_semantic].into_iter().flatten() {
        if !keep.contains(&k) {
            keep.push(k);
        }
    }
    let below: Vec<(DocKind, String)> = keep
        .into_iter()
        .filter(|k| {
            out.iter()
                .position(|h| (&h.kind, &h.id) == (&k.0, &k.1))
                .is_some_and(|pos| pos >= q.limit)
        })
        .collect();
    if !below.is_empty() && q.limit > below.len() {
        let mut moved = Vec::new();
        for k in &below {
            if let Some(pos) = out.iter().position(|h| (&h.kind, &h.id) == (&k.0, &k.1)) {
                moved.push(out.remove(pos));
            }
        }
        let at = q.limit - moved.len();
        for (n, hit) in moved.into_iter().enumerate() {
            out.insert(at + n, hit);
        }
    }
    out.truncate(q.limit);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::coverage;

    fn terms(q: &str) -> Vec<String> {
        crate::retrieval::query_terms(q)
    }

    #[test]
    fn coverage_counts_content_words_by_stem() {
        let t = terms("how do we authenticate users");
        assert_eq!(coverage(&t, "Authentication of a user is by cookie"), 1.0);
        assert_eq!(coverage(&t, "users sign in"), 0.5);
        assert_eq!(coverage(&t, "the login flow"), 0.0);
        // Only stop words: they count.
        assert_eq!(coverage(&terms("what is it"), "it is"), 2.0 / 3.0);
    }
}
