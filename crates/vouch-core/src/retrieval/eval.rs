//! `kb.eval`: retrieval quality against a labelled query set (queries →
//! the claim ids a good search returns). Prints the standard measures so a
//! change to ranking can be judged by numbers, not by feel.

use crate::error::{Error, Result};
use crate::kb::Kb;
use crate::retrieval::{self, SearchParams};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Params of `kb.eval`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalParams {
    /// The labelled queries.
    pub queries: Vec<LabelledQuery>,
    /// Cut-off rank for recall and nDCG (default 10, 1..=100).
    #[serde(default)]
    pub k: Option<i64>,
    /// The backend to measure (as `kb.search`; default the configured one).
    #[serde(default)]
    pub backend: Option<String>,
}

/// A query and the claims a good search returns for it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LabelledQuery {
    /// The query, run as `kb.search` over claims.
    pub query: String,
    /// Claim ids a good answer contains (at least one).
    pub expected: Vec<String>,
    /// Free text, e.g. `paraphrase`; reported back as given.
    #[serde(default)]
    pub note: Option<String>,
}

/// What `kb.eval` returns: the measures over all queries, by note and per
/// query.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct EvalReport {
    /// The cut-off rank used (default 10).
    pub k: usize,
    /// How many queries were run.
    pub queries: usize,
    /// Mean over queries of |expected ∩ top k| / |expected|.
    pub recall_at_k: f64,
    /// Mean reciprocal rank of the first expected claim (0 when none in top k).
    pub mrr: f64,
    /// Mean nDCG@k with binary relevance.
    pub ndcg_at_k: f64,
    /// The backend measured: the one asked for, else the one in use
    /// (`substring` when a locked index answered fts5's searches by it).
    pub backend: String,
    /// The same measures for each `note` class (keyword, paraphrase, ...).
    pub by_note: Vec<NoteReport>,
    /// Each query's measures, in the order given.
    pub per_query: Vec<QueryReport>,
}

/// The mean measures of the queries sharing one `note`.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct NoteReport {
    /// The `note` they share.
    pub note: String,
    /// How many queries have it.
    pub queries: usize,
    /// Their mean recall@k.
    pub recall_at_k: f64,
    /// Their mean reciprocal rank.
    pub mrr: f64,
}

/// How one labelled query did.
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct QueryReport {
    /// The query, as given.
    pub query: String,
    /// Its `note`, as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// 1-based rank of each expected claim within the top k, or null.
    pub ranks: Vec<Option<usize>>,
    /// The claim ids expected, as given.
    pub expected: Vec<String>,
    /// Share of `expected` in the top k, 0 to 1.
    pub recall: f64,
    /// 1 / rank of the first expected claim in the top k; 0 when none is.
    pub reciprocal_rank: f64,
    /// nDCG@k with binary relevance, 0 to 1.
    pub ndcg: f64,
}

/// Recall, reciprocal rank and nDCG of one ranked list against `expected`.
pub fn score(
    ranked: &[String],
    expected: &[String],
    k: usize,
) -> (Vec<Option<usize>>, f64, f64, f64) {
    let top = &ranked[..ranked.len().min(k)];
    let ranks: Vec<Option<usize>> = expected
        .iter()
        .map(|e| top.iter().position(|r| r == e).map(|i| i + 1))
        .collect();
    let found: Vec<usize> = ranks.iter().flatten().copied().collect();
    let recall = found.len() as f64 / expected.len() as f64;
    let rr = found.iter().min().map_or(0.0, |r| 1.0 / *r as f64);
    let gain = |rank: usize| 1.0 / ((rank + 1) as f64).log2();
    // `+ 0.0`: an empty float sum is -0.0, which would print as "-0.00".
    let dcg: f64 = found.iter().map(|r| gain(*r)).sum::<f64>() + 0.0;
    let idcg: f64 = (1..=expected.len().min(k)).map(gain).sum();
    (ranks, recall, rr, dcg / idcg)
}

fn round(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// `kb.eval`: run each labelled query through `kb.search` over claims and
/// measure the ranking.
pub fn eval(kb: &Kb, p: EvalParams) -> Result<EvalReport> {
    let k = match p.k {
        None => 10,
        Some(k) if (1..=100).contains(&k) => k as usize,
        Some(k) => {
            return Err(Error::invalid(format!(
                "k: {k} is not allowed; use 1..=100"
            )));
        }
    };
    if p.queries.is_empty() {
        return Err(Error::invalid("queries: give at least one labelled query"));
    }
    let mut per_query = Vec::with_capacity(p.queries.len());
    let p_backend = p.backend.clone();
    let mut backend = String::new();
    for (i, q) in p.queries.into_iter().enumerate() {
        if q.expected.is_empty() {
            return Err(Error::invalid(format!(
                "queries[{i}] ({:?}): expected must name at least one claim id",
                q.query
            )));
        }
        let hits = retrieval::search(
            kb,
            SearchParams {
                query: q.query.clone(),
                limit: Some(k as i64),
                kinds: Some(vec!["claim".into()]),
                backend: p.backend.clone(),
            },
        )
        .map_err(|e| Error::new(e.kind, format!("queries[{i}]: {}", e.message)))?;
        if let Some(h) = hits.first() {
            backend = h.backend.clone();
        }
        let ranked: Vec<String> = hits.into_iter().map(|h| h.id).collect();
        let (ranks, recall, rr, ndcg) = score(&ranked, &q.expected, k);
        per_query.push(QueryReport {
            query: q.query,
            note: q.note,
            ranks,
            expected: q.expected,
            recall: round(recall),
            reciprocal_rank: round(rr),
            ndcg: round(ndcg),
        });
    }
    let n = per_query.len() as f64;
    let mean = |f: fn(&QueryReport) -> f64| round(per_query.iter().map(f).sum::<f64>() / n);
    let mut notes: Vec<String> = per_query.iter().filter_map(|q| q.note.clone()).collect();
    notes.sort();
    notes.dedup();
    let by_note = notes
        .into_iter()
        .map(|note| {
            let class: Vec<&QueryReport> = per_query
                .iter()
                .filter(|q| q.note.as_deref() == Some(note.as_str()))
                .collect();
            let m = class.len() as f64;
            NoteReport {
                queries: class.len(),
                recall_at_k: round(class.iter().map(|q| q.recall).sum::<f64>() / m),
                mrr: round(class.iter().map(|q| q.reciprocal_rank).sum::<f64>() / m),
                note,
            }
        })
        .collect();
    Ok(EvalReport {
        k,
        queries: per_query.len(),
        recall_at_k: mean(|q| q.recall),
        mrr: mean(|q| q.reciprocal_rank),
        ndcg_at_k: mean(|q| q.ndcg),
        // The backend asked for; else the one that answered (a locked
        // index answers from the substring backend).
        backend: match (&p_backend, backend.as_str()) {
            (Some(b), _) => b.clone(),
            (None, "fts5" | "substring") => backend,
            (None, _) => super::retriever(kb).name().to_string(),
        },
        by_note,
        per_query,
    })
}

#[cfg(test)]
mod tests {
    use super::score;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn metrics_match_hand_computation() {
        // Expected a (rank 2) and b (rank 4) of three retrieved... in top 5.
        let ranked = ids(&["x", "a", "y", "b", "z"]);
        let (ranks, recall, rr, ndcg) = score(&ranked, &ids(&["a", "b"]), 5);
        assert_eq!(ranks, [Some(2), Some(4)]);
        assert_eq!(recall, 1.0);
        assert_eq!(rr, 0.5);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg - dcg / idcg).abs() < 1e-12);

        // Cut-off: b at rank 4 is outside k = 3.
        let (ranks, recall, _, _) = score(&ranked, &ids(&["a", "b"]), 3);
        assert_eq!(ranks, [Some(2), None]);
        assert_eq!(recall, 0.5);

        let (_, recall, rr, ndcg) = score(&ranked, &ids(&["q"]), 5);
        assert_eq!((recall, rr, ndcg), (0.0, 0.0, 0.0));
        let (_, _, rr, ndcg) = score(&ranked, &ids(&["x"]), 5);
        assert_eq!((rr, ndcg), (1.0, 1.0));
    }
}
